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

#include "core/core_api.h"

#include <stddef.h>
#include <stdint.h>

namespace okp {

struct DetourPool {
	static constexpr int max_pages = 256;
	static constexpr unsigned long granule = 16;
	static constexpr unsigned long page_size = 4096;
	static constexpr unsigned long granules = page_size / granule;
	static constexpr int words = granules / 64;
	uint8_t *pages[max_pages] = {};
	uint64_t used[max_pages][words] = {};

	static unsigned long granules_for(size_t bytes) { return (bytes + granule - 1) / granule; }
	bool taken(int page, unsigned long index) const { return used[page][index / 64] & (1ull << (index % 64)); }
	void mark(int page, unsigned long first, unsigned long count, bool take)
	{
		for (unsigned long i = first; i < first + count; ++i) {
			if (take)
				used[page][i / 64] |= 1ull << (i % 64);
			else
				used[page][i / 64] &= ~(1ull << (i % 64));
		}
	}

	uint64_t take(size_t bytes)
	{
		const unsigned long need = granules_for(bytes);
		for (int p = 0; p < max_pages; ++p) {
			if (!pages[p]) {
				pages[p] = static_cast<uint8_t *>(okp_glue_exec_page_alloc());
				if (!pages[p])
					return 0;
			}
			unsigned long run = 0;
			for (unsigned long i = 0; i < granules; ++i) {
				run = taken(p, i) ? 0 : run + 1;
				if (run == need) {
					mark(p, i + 1 - need, need, true);
					return reinterpret_cast<uint64_t>(pages[p] + (i + 1 - need) * granule);
				}
			}
		}
		return 0;
	}

	// Room for code of at most max_size bytes, built where it will run:
	// build(address, bytes) writes it to bytes and returns its length, 0
	// when it cannot run there (out of reach). Keeps the granules it
	// fills, gives the rest back, writes the code through the
	// text-patching glue; returns its address and *length, or 0.
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
		okp_glue_text_write(code, bytes, *length);
		return code;
	}

	void give_back(uint64_t at, size_t bytes)
	{
		for (int p = 0; p < max_pages; ++p) {
			const uint64_t base = reinterpret_cast<uint64_t>(pages[p]);
			if (pages[p] && at >= base && at < base + page_size)
				mark(p, (at - base) / granule, granules_for(bytes), false);
		}
	}

	void release_all()
	{
		for (int p = 0; p < max_pages; ++p) {
			if (pages[p])
				okp_glue_exec_page_free(pages[p]);
			pages[p] = nullptr;
			for (uint64_t &word : used[p])
				word = 0;
		}
	}
};

} // namespace okp
