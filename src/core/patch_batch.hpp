// SPDX-License-Identifier: GPL-2.0
// PatchBatch: text patches gathered for one okp_glue_text_write_batch(),
// whose CPU synchronization (x86) or stop_machine() (riscv) is then paid
// once for the whole batch, not once per site. Each patch remembers the
// site it is for, so the caller can tell which writes happened.
//
// Room for a whole batch is allocated; when memory is short a batch of
// small_batch patches on the stack is used and the caller writes it each
// time it is full(). Writer only (probe mutex held).
#pragma once

#include "core/assert.hpp"
#include "core/core_api.h"
#include "core/owned.hpp"

#include <stddef.h>
#include <stdint.h>

namespace okp {

struct Site;

class PatchBatch {
public:
	static constexpr size_t small_batch = 8;
	static constexpr size_t max_patch_bytes = 16;

	explicit PatchBatch(size_t capacity)
	    : patches_(OwnedArray<okp_text_patch>::make(capacity)), sites_(OwnedArray<Site *>::make(capacity)),
	      bytes_(OwnedArray<uint8_t>::make(capacity * max_patch_bytes))
	{
		if (patches_ && sites_ && bytes_)
			capacity_ = capacity;
	}
	PatchBatch(const PatchBatch &) = delete;
	PatchBatch &operator=(const PatchBatch &) = delete;

	bool full() const { return count_ == capacity_; }
	size_t size() const { return count_; }
	Site &site(size_t i) const
	{
		OKP_ASSERT(i < count_);
		return *site_array()[i];
	}

	// Adds length bytes (at most max_patch_bytes) for address, for site.
	// The caller checks full() first.
	void add(uint64_t address, const uint8_t *bytes, size_t length, Site &site)
	{
		OKP_ASSERT(!full() && length <= max_patch_bytes);
		uint8_t *copy = byte_array() + count_ * max_patch_bytes;
		__builtin_memcpy(copy, bytes, length);
		patch_array()[count_] = {address, copy, length};
		site_array()[count_] = &site;
		++count_;
	}

	// Writes every patch, one synchronization for all; the batch stays
	// readable (size, site) until clear().
	void write() const
	{
		if (count_)
			okp_glue_text_write_batch(patch_array(), count_);
	}
	void clear() { count_ = 0; }

private:
	okp_text_patch *patch_array() const { return capacity_ > small_batch ? patches_.get() : small_.patches; }
	Site **site_array() const { return capacity_ > small_batch ? sites_.get() : small_.sites; }
	uint8_t *byte_array() const { return capacity_ > small_batch ? bytes_.get() : small_.bytes; }

	OwnedArray<okp_text_patch> patches_;
	OwnedArray<Site *> sites_;
	OwnedArray<uint8_t> bytes_;
	size_t capacity_ = small_batch;
	size_t count_ = 0;
	mutable struct {
		okp_text_patch patches[small_batch];
		Site *sites[small_batch];
		uint8_t bytes[small_batch * max_patch_bytes];
	} small_;
};

} // namespace okp
