// SPDX-License-Identifier: GPL-2.0
// Variable-size detour code in 16-byte granules of executable pages, for
// every architecture's jump optimization. Pages come from the glue
// (okp_glue_exec_page_alloc: within jump reach of kernel and module text,
// read-only and executable, written only through the text-patching glue).
//
// Owned by the arch's probe state and changed only by the probe table's
// writer (under the glue's probe mutex); code is given back only after the
// grace periods that make it unreachable.
#pragma once

#include "core/assert.hpp"
#include "core/core_api.h"

#include <stddef.h>
#include <stdint.h>

namespace okp {

struct DetourPool {
	// 8 MiB at most, allocated a page at a time: room for about 26,000
	// optimized probes (x86: 146 bytes each, 304 where the detour calls
	// its probe directly; riscv: about 330).
	static constexpr int max_pages = 2048;
	static constexpr unsigned long granule = 16;
	static constexpr unsigned long page_size = 4096;
	static constexpr unsigned long granules = page_size / granule;
	static constexpr int words = granules / 64;
	uint8_t *pages[max_pages] = {};
	uint64_t used[max_pages][words] = {};
	// Taken granules per page: a full page is passed over without a scan,
	// so a take costs the same with 10 or 10,000 detours placed.
	uint16_t taken_count[max_pages] = {};
	// Pages allocated: pages[0] to pages[allocated - 1], in that order.
	int allocated = 0;

	static unsigned long granules_for(size_t bytes) { return (bytes + granule - 1) / granule; }
	bool taken(int page, unsigned long index) const { return used[page][index / 64] & (1ull << (index % 64)); }
	bool room(int page, unsigned long need) const { return granules - taken_count[page] >= need; }
	void mark(int page, unsigned long first, unsigned long count, bool take)
	{
		for (unsigned long i = first; i < first + count; ++i) {
			if (taken(page, i) == take)
				continue;
			if (take) {
				used[page][i / 64] |= 1ull << (i % 64);
				++taken_count[page];
			} else {
				used[page][i / 64] &= ~(1ull << (i % 64));
				--taken_count[page];
			}
		}
	}

	// Page p, allocated on first use; nullptr when the glue has no more.
	uint8_t *page(int p)
	{
		if (!pages[p])
			pages[p] = static_cast<uint8_t *>(okp_glue_exec_page_alloc());
		if (pages[p] && p >= allocated)
			allocated = p + 1;
		return pages[p];
	}

	// The first run of need free granules of page p whose start satisfies
	// fits(start granule); -1 when there is none.
	template <typename Fits> long find_run(int p, unsigned long need, Fits fits) const
	{
		unsigned long run = 0;
		for (unsigned long i = 0; i < granules; ++i) {
			run = taken(p, i) ? 0 : run + 1;
			if (run >= need && fits(i + 1 - need))
				return long(i + 1 - need);
		}
		return -1;
	}

	uint64_t take(size_t bytes)
	{
		OKP_ASSERT(bytes > 0 && bytes <= page_size); // else no page has room
		const unsigned long need = granules_for(bytes);
		for (int p = 0; p < max_pages; ++p) {
			if (!page(p))
				return 0;
			if (!room(p, need))
				continue;
			const long first = find_run(p, need, [](unsigned long) { return true; });
			if (first >= 0) {
				mark(p, first, need, true);
				return reinterpret_cast<uint64_t>(pages[p] + first * granule);
			}
		}
		return 0;
	}

	// Room for code of at most max_size bytes, built where it will run:
	// build(address, bytes) writes it to bytes and returns its length, 0
	// when it cannot run there (out of reach). Keeps the granules it
	// fills, gives the rest back, writes the code through the
	// code-writing glue; returns its address and *length, or 0.
	template <size_t max_size, typename Build> uint64_t place(Build build, size_t *length)
	{
		const uint64_t code = take(max_size);
		if (!code)
			return 0;
		uint8_t bytes[max_size];
		*length = build(code, bytes);
		if (!*length) {
			give_back(code, max_size);
			return 0;
		}
		const size_t kept = granules_for(*length) * granule;
		if (kept < max_size)
			give_back(code + kept, max_size - kept);
		const okp_text_patch patch = {code, bytes, *length};
		okp_glue_code_write_batch(&patch, 1);
		return code;
	}

	// Like place, with a landing: landing_size bytes (within one granule)
	// at page offset landing_offset of the code's own page, no farther
	// than reach bytes before or after the code's start, built by
	// landing(at, code, bytes) (0 when it cannot lead there); the code by
	// build(address, landing's address, bytes). For a jump that can only
	// land at a fixed page offset (riscv's auipc + c.jr).
	// Returns the code's address, *length and *landing_address, or 0.
	template <size_t max_size, size_t landing_size, typename Build, typename Landing>
	uint64_t place_with_landing(unsigned long landing_offset, unsigned long reach, Build build, Landing landing,
				    size_t *length, uint64_t *landing_address)
	{
		const unsigned long landing_granule = landing_offset / granule;
		if (landing_offset % granule + landing_size > granule)
			return 0;
		const unsigned long need = granules_for(max_size);
		const auto within_reach = [&](unsigned long start) {
			const long distance = long(start * granule) - long(landing_offset);
			return distance <= long(reach) && -distance <= long(reach);
		};
		for (int p = 0; p < max_pages; ++p) {
			if (!page(p))
				return 0;
			if (!room(p, need + 1) || taken(p, landing_granule))
				continue;
			mark(p, landing_granule, 1, true);
			const long first = find_run(p, need, within_reach);
			if (first < 0) {
				mark(p, landing_granule, 1, false);
				continue;
			}
			mark(p, first, need, true);
			const uint64_t code = reinterpret_cast<uint64_t>(pages[p] + first * granule);
			const uint64_t at = reinterpret_cast<uint64_t>(pages[p] + landing_offset);
			uint8_t bytes[max_size], landing_bytes[landing_size];
			*length = build(code, at, bytes);
			if (!*length || landing(at, code, landing_bytes) != landing_size) {
				mark(p, first, need, false);
				mark(p, landing_granule, 1, false);
				return 0;
			}
			const unsigned long kept = granules_for(*length);
			mark(p, first + kept, need - kept, false);
			const okp_text_patch patches[2] = {{code, bytes, *length}, {at, landing_bytes, landing_size}};
			okp_glue_code_write_batch(patches, 2);
			*landing_address = at;
			return code;
		}
		return 0;
	}

	// Code take() gave (or its tail), or a landing: within one page.
	// Searched from the last page allocated down: a tail just taken is
	// nearly always there, so placing 10,000 detours does not walk
	// every page for each.
	void give_back(uint64_t at, size_t bytes)
	{
		for (int p = allocated - 1; p >= 0; --p) {
			const uint64_t base = reinterpret_cast<uint64_t>(pages[p]);
			if (pages[p] && at >= base && at < base + page_size) {
				OKP_ASSERT(at - base + bytes <= page_size);
				mark(p, (at - base) / granule, granules_for(bytes), false);
				return;
			}
		}
		OKP_ASSERT(false); // no page holds it
	}

	// Gives bytes (at most max_size) of code at at back, and
	// landing_bytes at landing when there is one, overwritten first with
	// copies of pattern (a trap, so that a stale jump into them traps
	// loudly), in one text write.
	template <size_t max_size, size_t pattern_size>
	void release(uint64_t at, size_t bytes, const uint8_t (&pattern)[pattern_size], uint64_t landing = 0,
		     size_t landing_bytes = 0)
	{
		uint8_t fill[max_size];
		OKP_ASSERT(bytes <= max_size && landing_bytes <= max_size);
		if (bytes > max_size || landing_bytes > max_size)
			return;
		for (size_t i = 0; i < max_size; ++i)
			fill[i] = pattern[i % pattern_size];
		const okp_text_patch patches[2] = {{at, fill, bytes}, {landing, fill, landing_bytes}};
		okp_glue_code_write_batch(patches, landing ? 2 : 1);
		give_back(at, bytes);
		if (landing)
			give_back(landing, landing_bytes);
	}

	void release_all()
	{
		for (int p = 0; p < max_pages; ++p) {
			if (pages[p])
				okp_glue_exec_page_free(pages[p]);
			pages[p] = nullptr;
			for (uint64_t &word : used[p])
				word = 0;
			taken_count[p] = 0;
		}
		allocated = 0;
	}
};

} // namespace okp
