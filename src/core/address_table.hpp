// SPDX-License-Identifier: GPL-2.0
// A map from kernel address to entry that breakpoint handlers can read
// without any lock, from any context (NMI included).
//
// Readers: lookup() only loads with acquire ordering; it never allocates,
// spins or takes a lock, so it is safe in the int3/ebreak handler.
// Writer: one at a time (the caller serialises insert/remove, e.g. with the
// probe registration mutex). Open addressing with linear probing; a removed
// entry leaves its key behind with a null value (a tombstone) so probe chains
// stay intact for concurrent readers.
//
// Memory reclamation is the caller's: after remove(), a reader may still hold
// the entry until a grace period has passed; after a grow, a reader may
// still walk the old storage, which insert() hands to the caller's retire
// callback to free after a grace period.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace okp {

template <typename Entry> class AddressTable {
public:
	struct Slot {
		uint64_t key; // 0: never used
		Entry *value; // nullptr: removed (or not yet published)
	};
	struct Storage {
		size_t capacity; // a power of two
		Slot *slots;
	};
	// Receives storage that readers may still walk; free it (Storage and
	// slots, with delete[]/delete) after a grace period.
	using Retire = void (*)(Storage *old, void *context);

	constexpr AddressTable() = default;
	AddressTable(const AddressTable &) = delete;
	AddressTable &operator=(const AddressTable &) = delete;

	// Lock-free; returns nullptr when address has no entry.
	Entry *lookup(uint64_t address) const
	{
		const Storage *storage = __atomic_load_n(&storage_, __ATOMIC_ACQUIRE);
		if (!storage || address == 0)
			return nullptr;
		const size_t mask = storage->capacity - 1;
		for (size_t i = hash(address) & mask, probes = 0; probes < storage->capacity;
		     i = (i + 1) & mask, ++probes) {
			const uint64_t key = __atomic_load_n(&storage->slots[i].key, __ATOMIC_ACQUIRE);
			if (key == 0)
				return nullptr;
			if (key == address)
				return __atomic_load_n(&storage->slots[i].value, __ATOMIC_ACQUIRE);
		}
		return nullptr;
	}

	// Writer only. Returns false when address is 0 or already present, or
	// when growing failed (out of memory).
	bool insert(uint64_t address, Entry *entry, Retire retire, void *context)
	{
		if (address == 0 || !entry || lookup(address))
			return false;
		if ((used_ + 1) * 4 > capacity() * 3 && !rebuild(retire, context))
			return false;
		Slot *slot = find_slot(storage_, address);
		// Value before key: a reader that sees the key sees the entry.
		__atomic_store_n(&slot->value, entry, __ATOMIC_RELEASE);
		if (slot->key == 0) {
			__atomic_store_n(&slot->key, address, __ATOMIC_RELEASE);
			++used_;
		}
		++live_;
		return true;
	}

	// Writer only. Returns the removed entry (nullptr if absent); readers may
	// still use it until a grace period has passed.
	Entry *remove(uint64_t address)
	{
		if (!storage_ || address == 0)
			return nullptr;
		Slot *slot = find_slot(storage_, address);
		if (slot->key != address || !slot->value)
			return nullptr;
		Entry *entry = slot->value;
		__atomic_store_n(&slot->value, static_cast<Entry *>(nullptr), __ATOMIC_RELEASE);
		--live_;
		return entry;
	}

	size_t size() const { return live_; }
	size_t capacity() const { return storage_ ? storage_->capacity : 0; }

	// Calls visit(entry) for every live entry (writer side).
	template <typename Visit> void for_each(Visit visit) const
	{
		for (size_t i = 0; storage_ && i < storage_->capacity; ++i)
			if (storage_->slots[i].value)
				visit(storage_->slots[i].value);
	}

	// Writer only, when no reader can run any more (module exit after the
	// last grace period): frees the storage. Entries are the caller's.
	void destroy()
	{
		if (storage_)
			free_storage(storage_);
		storage_ = nullptr;
		used_ = live_ = 0;
	}

	static void free_storage(Storage *storage)
	{
		delete[] storage->slots;
		delete storage;
	}

private:
	static constexpr size_t initial_capacity = 64;

	static size_t hash(uint64_t address)
	{
		// Fibonacci hashing: instruction addresses differ in low bits.
		return static_cast<size_t>((address * 0x9e3779b97f4a7c15ull) >> 32);
	}

	// The slot holding address, or the empty slot where it would go.
	static Slot *find_slot(Storage *storage, uint64_t address)
	{
		const size_t mask = storage->capacity - 1;
		size_t i = hash(address) & mask;
		while (storage->slots[i].key != 0 && storage->slots[i].key != address)
			i = (i + 1) & mask;
		return &storage->slots[i];
	}

	// Builds fresh storage sized for the live entries (dropping
	// tombstones) and publishes it; the old one goes to retire.
	bool rebuild(Retire retire, void *context)
	{
		size_t capacity = initial_capacity;
		while ((live_ + 1) * 2 > capacity)
			capacity *= 2;
		Storage *fresh = new Storage;
		if (!fresh)
			return false;
		fresh->capacity = capacity;
		fresh->slots = new Slot[capacity];
		if (!fresh->slots) {
			delete fresh;
			return false;
		}
		for (size_t i = 0; i < capacity; ++i)
			fresh->slots[i] = Slot{0, nullptr};
		size_t used = 0;
		for (size_t i = 0; storage_ && i < storage_->capacity; ++i) {
			const Slot &old = storage_->slots[i];
			if (old.value) {
				*find_slot(fresh, old.key) = old;
				++used;
			}
		}
		Storage *old = storage_;
		__atomic_store_n(&storage_, fresh, __ATOMIC_RELEASE);
		used_ = used;
		if (old)
			retire(old, context);
		return true;
	}

	Storage *storage_ = nullptr;
	size_t used_ = 0; // slots with a key (live entries and tombstones)
	size_t live_ = 0;
};

} // namespace okp
