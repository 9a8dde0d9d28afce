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

#include "core/atomic.hpp"

namespace okp {

template <typename Entry> class AddressTable {
public:
	struct Slot {
		Atomic<uint64_t> key;  // 0: never used
		Atomic<Entry *> value; // nullptr: removed (or not yet published)
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
		const Storage *storage = storage_.load(Order::acquire);
		if (!storage || address == 0)
			return nullptr;
		// A published storage keeps its capacity and slots pointer
		// (only the slots' contents change): both are read once, and
		// a match is tested first (the home slot's, the usual case at
		// a breakpoint). address != 0, so a never-used slot (key 0)
		// cannot match.
		const size_t mask = storage->capacity - 1;
		const Slot *slots = storage->slots;
		size_t i = hash(address) & mask;
		for (size_t probes = 0; probes <= mask; ++probes, i = (i + 1) & mask) {
			const uint64_t key = slots[i].key.load(Order::acquire);
			if (key == address)
				return slots[i].value.load(Order::acquire);
			if (key == 0)
				return nullptr;
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
		Slot *slot = find_slot(storage(), address);
		// Value before key: a reader that sees the key sees the entry.
		slot->value.store(entry, Order::release);
		if (slot->key.load(Order::relaxed) == 0) {
			slot->key.store(address, Order::release);
			++used_;
		}
		++live_;
		return true;
	}

	// Writer only. Returns the removed entry (nullptr if absent); readers may
	// still use it until a grace period has passed.
	Entry *remove(uint64_t address)
	{
		if (!storage() || address == 0)
			return nullptr;
		Slot *slot = find_slot(storage(), address);
		Entry *entry = slot->value.load(Order::relaxed);
		if (slot->key.load(Order::relaxed) != address || !entry)
			return nullptr;
		slot->value.store(nullptr, Order::release);
		--live_;
		return entry;
	}

	size_t size() const { return live_; }
	size_t capacity() const { return storage() ? storage()->capacity : 0; }

	// Calls visit(entry) for every live entry (writer side).
	template <typename Visit> void for_each(Visit visit) const
	{
		Storage *storage = this->storage();
		for (size_t i = 0; storage && i < storage->capacity; ++i)
			if (Entry *entry = storage->slots[i].value.load(Order::relaxed))
				visit(entry);
	}

	// Writer only, when no reader can run any more (module exit after the
	// last grace period): frees the storage. Entries are the caller's.
	void destroy()
	{
		if (Storage *storage = this->storage())
			free_storage(storage);
		storage_.store(nullptr, Order::relaxed);
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

	// The storage, as its writer reads it.
	Storage *storage() const { return storage_.load(Order::relaxed); }

	// The slot holding address, or the empty slot where it would go.
	static Slot *find_slot(Storage *storage, uint64_t address)
	{
		const size_t mask = storage->capacity - 1;
		size_t i = hash(address) & mask;
		for (uint64_t key; (key = storage->slots[i].key.load(Order::relaxed)) != 0 && key != address;)
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
		// Every slot starts empty (Atomic's value-initialized words).
		fresh->slots = new Slot[capacity];
		if (!fresh->slots) {
			delete fresh;
			return false;
		}
		Storage *old = storage();
		size_t used = 0;
		for (size_t i = 0; old && i < old->capacity; ++i) {
			const Slot &from = old->slots[i];
			if (Entry *entry = from.value.load(Order::relaxed)) {
				const uint64_t key = from.key.load(Order::relaxed);
				Slot *to = find_slot(fresh, key);
				// Nobody reads fresh until it is published below.
				to->key.store(key, Order::relaxed);
				to->value.store(entry, Order::relaxed);
				++used;
			}
		}
		storage_.store(fresh, Order::release);
		used_ = used;
		if (old)
			retire(old, context);
		return true;
	}

	Atomic<Storage *> storage_;
	size_t used_ = 0; // slots with a key (live entries and tombstones)
	size_t live_ = 0;
};

} // namespace okp
