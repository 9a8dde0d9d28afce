// SPDX-License-Identifier: GPL-2.0
// A sorted list of half-open address ranges [start, end), each with a reason.
//
// Owned by one writer at a time (the caller serialises changes); lookups are
// binary searches. Storage comes from operator new[], which the module routes
// to kmalloc: grow only from process context.
//
// Trivially destructible on purpose: it lives in module globals, and a global
// with a destructor needs an atexit registration that a module never runs
// (and that would put a constructor into .init_array). The owner calls clear().
#pragma once

#include "core/assert.hpp"

#include <stddef.h>
#include <stdint.h>

namespace okp {

struct AddressRange {
	uint64_t start = 0;
	uint64_t end = 0; // exclusive
	const char *why = nullptr;

	constexpr bool contains(uint64_t address) const { return start <= address && address < end; }
};

class RangeList {
public:
	constexpr RangeList() = default;
	RangeList(const RangeList &) = delete;
	RangeList &operator=(const RangeList &) = delete;

	// Inserts in start order; overlapping ranges are allowed (each keeps its
	// reason). Returns false for an empty range or when allocation fails.
	bool add(uint64_t start, uint64_t end, const char *why);
	// The first range (by start) containing address, or nullptr.
	const AddressRange *find(uint64_t address) const;
	// True when some range intersects [start, end).
	bool overlaps(uint64_t start, uint64_t end) const;
	size_t size() const { return size_; }
	const AddressRange &operator[](size_t index) const
	{
		OKP_ASSERT(index < size_);
		return ranges_[index];
	}
	// Frees the storage; the list is empty and reusable afterwards.
	void clear();

private:
	bool grow();

	AddressRange *ranges_ = nullptr;
	size_t size_ = 0;
	size_t capacity_ = 0;
	// The longest range seen: a lookup only needs to look back that far.
	uint64_t longest_ = 0;
};

} // namespace okp
