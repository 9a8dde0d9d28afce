// SPDX-License-Identifier: GPL-2.0
// Fixed-size slots of executable memory, a page at a time, for every
// architecture's out-of-line copies. Pages come from the glue
// (okp_glue_exec_page_alloc: within branch reach of kernel and module text,
// read-only and executable, written only through the text-patching glue).
//
// Owned by the arch's probe state and changed only by the probe table's
// writer (under the glue's probe mutex); a slot is given back only after
// the grace periods that make it unreachable.
#pragma once

#include "core/assert.hpp"
#include "core/core_api.h"

#include <stddef.h>
#include <stdint.h>

namespace okp {

template <size_t slot_bytes, int max_pages> class SlotPool {
public:
	static constexpr unsigned long page_size = 4096;
	static constexpr unsigned long slots_per_page = page_size / slot_bytes;
	static_assert(slots_per_page > 0 && page_size % slot_bytes == 0);

	constexpr SlotPool() = default;
	SlotPool(const SlotPool &) = delete;
	SlotPool &operator=(const SlotPool &) = delete;

	// The address of a free slot, or 0 when no page can be had.
	uint64_t take()
	{
		for (int p = 0; p < max_pages; ++p) {
			if (!pages_[p]) {
				pages_[p] = static_cast<uint8_t *>(okp_glue_exec_page_alloc());
				if (!pages_[p])
					return 0;
			}
			// A word at a time: full pages cost one comparison each.
			for (int w = 0; w < words; ++w) {
				uint64_t &word = used_[p][w];
				const unsigned long i = w * 64ul + (word == ~0ull ? 64 : __builtin_ctzll(~word));
				if (word == ~0ull || i >= slots_per_page)
					continue;
				word |= 1ull << (i % 64);
				return reinterpret_cast<uint64_t>(pages_[p] + i * slot_bytes);
			}
		}
		return 0;
	}

	// A slot take() gave, once. Its page is the only one holding it: the
	// walk ends there (a clear of 50,000 probes gives back 50,000 slots).
	void give_back(uint64_t slot)
	{
		for (int p = 0; p < max_pages && pages_[p]; ++p) {
			const uint64_t base = reinterpret_cast<uint64_t>(pages_[p]);
			if (slot >= base && slot < base + page_size) {
				const unsigned long i = (slot - base) / slot_bytes;
				OKP_ASSERT((slot - base) % slot_bytes == 0 && (used_[p][i / 64] & (1ull << (i % 64))));
				used_[p][i / 64] &= ~(1ull << (i % 64));
				return;
			}
		}
		const bool slot_was_taken_from_this_pool = false;
		OKP_ASSERT(slot_was_taken_from_this_pool);
	}

	// Module exit, once no slot can be reached any more.
	void release_all()
	{
		for (int p = 0; p < max_pages; ++p) {
			if (pages_[p])
				okp_glue_exec_page_free(pages_[p]);
			pages_[p] = nullptr;
			for (uint64_t &word : used_[p])
				word = 0;
		}
	}

private:
	static constexpr int words = (slots_per_page + 63) / 64;
	// Non-null pages are a prefix (take() fills in order, release_all() empties all): give_back stops at a null.
	uint8_t *pages_[max_pages] = {};
	uint64_t used_[max_pages][words] = {}; // bit i: slot i of the page is taken
};

} // namespace okp
