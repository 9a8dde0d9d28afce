// SPDX-License-Identifier: GPL-2.0
// The detour pool over fake executable pages: code is placed in granules,
// given back, and a landing (riscv's auipc + c.jr target) sits at the
// asked page offset of the code's own page, within reach of the code, with
// its granule kept from other code until the detour is released.
#include "core/detour_pool.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

std::vector<void *> allocated_pages;
int pages_left = 1000;

} // namespace

extern "C" void *okp_glue_exec_page_alloc(void)
{
	if (pages_left-- <= 0)
		return nullptr;
	void *page = std::aligned_alloc(okp::DetourPool::page_size, okp::DetourPool::page_size);
	std::memset(page, 0xcc, okp::DetourPool::page_size);
	allocated_pages.push_back(page);
	return page;
}

extern "C" void okp_glue_exec_page_free(void *page)
{
	std::free(page);
}

extern "C" void okp_glue_text_write(unsigned long address, const void *bytes, unsigned long length)
{
	std::memcpy(reinterpret_cast<void *>(address), bytes, length);
}

static int batch_writes = 0;

extern "C" void okp_glue_code_write_batch(const struct okp_text_patch *patches, unsigned long count)
{
	++batch_writes;
	for (unsigned long i = 0; i < count; ++i)
		okp_glue_text_write(patches[i].address, patches[i].bytes, patches[i].length);
}

namespace {

using okp::DetourPool;

constexpr size_t code_size = 300;
constexpr unsigned long reach = 2046;

struct Placed {
	uint64_t code = 0, landing = 0;
	uint64_t landing_told = 0; // the landing build() was given
	size_t length = 0;
};

Placed place(DetourPool &pool, unsigned long offset, size_t length = code_size)
{
	Placed placed;
	placed.code = pool.place_with_landing<code_size, 2>(
		offset, reach,
		[&](uint64_t, uint64_t landing, uint8_t *bytes) {
			placed.landing_told = landing;
			std::memset(bytes, 0x11, length);
			return length;
		},
		[&](uint64_t at, uint64_t code, uint8_t *bytes) -> size_t {
			const long distance = long(code) - long(at);
			if (distance > long(reach) || -distance > long(reach))
				return 0;
			bytes[0] = 0x22;
			bytes[1] = 0x33;
			return 2;
		},
		&placed.length, &placed.landing);
	return placed;
}

TEST(DetourPool, LandingSitsAtThePageOffsetOfTheCodesPage)
{
	DetourPool pool;
	for (unsigned long offset : {0ul, 2ul, 0x7eul, 0x800ul, 0xffeul}) {
		const Placed placed = place(pool, offset);
		ASSERT_NE(placed.code, 0u) << offset;
		EXPECT_EQ(placed.landing % DetourPool::page_size, offset);
		EXPECT_EQ(placed.landing_told, placed.landing) << "the code is built knowing its landing";
		EXPECT_EQ(placed.landing / DetourPool::page_size, placed.code / DetourPool::page_size);
		EXPECT_LE(placed.code > placed.landing ? placed.code - placed.landing : placed.landing - placed.code,
			  reach);
		// Code and landing written, and apart.
		const uint8_t *landing = reinterpret_cast<const uint8_t *>(placed.landing);
		EXPECT_EQ(landing[0], 0x22);
		EXPECT_EQ(landing[1], 0x33);
		EXPECT_TRUE(placed.landing + 2 <= placed.code || placed.landing >= placed.code + placed.length);
		EXPECT_EQ(reinterpret_cast<const uint8_t *>(placed.code)[placed.length - 1], 0x11);
	}
	pool.release_all();
}

TEST(DetourPool, LandingsOnOneGranuleTakeOtherPagesUntilReleased)
{
	DetourPool pool;
	const Placed first = place(pool, 0x104);
	const Placed second = place(pool, 0x108); // the same 16-byte granule
	ASSERT_NE(first.code, 0u);
	ASSERT_NE(second.code, 0u);
	EXPECT_NE(first.landing / DetourPool::page_size, second.landing / DetourPool::page_size);
	// Released, the first page's landing granule is free again.
	static constexpr uint8_t fill[2] = {0x02, 0x90};
	const int writes = batch_writes;
	pool.release<code_size>(first.code, first.length, fill, first.landing, 2);
	EXPECT_EQ(batch_writes, writes + 1); // code and landing in one write
	EXPECT_EQ(reinterpret_cast<const uint8_t *>(first.landing)[0], 0x02);
	EXPECT_EQ(reinterpret_cast<const uint8_t *>(first.code)[first.length - 1], 0x90);
	const Placed third = place(pool, 0x10c);
	EXPECT_EQ(third.landing, first.landing + 8);
	pool.release_all();
}

TEST(DetourPool, CodeKeepsOnlyTheGranulesItFills)
{
	DetourPool pool;
	const Placed small = place(pool, 0x400, 40);
	ASSERT_NE(small.code, 0u);
	// The next detour starts right after the 48 bytes the first one kept
	// (or in a free run before it).
	const uint64_t next = pool.take(16);
	EXPECT_TRUE(next + 16 <= small.code || next >= small.code + 48);
	EXPECT_TRUE(next < small.code + 48 + 16 * 20);
	pool.release_all();
}

TEST(DetourPool, FailedBuildsGiveEverythingBack)
{
	DetourPool pool;
	size_t length = 0;
	uint64_t landing = 0;
	const uint64_t code = pool.place_with_landing<code_size, 2>(
		0x200, reach, [](uint64_t, uint64_t, uint8_t *) -> size_t { return 0; },
		[](uint64_t, uint64_t, uint8_t *) -> size_t { return 2; }, &length, &landing);
	EXPECT_EQ(code, 0u);
	for (int p = 0; p < DetourPool::max_pages; ++p)
		for (uint64_t word : pool.used[p])
			EXPECT_EQ(word, 0u);
	// A landing across a granule boundary is refused.
	EXPECT_EQ((pool.place_with_landing<code_size, 4>(
			  0x20e, reach, [](uint64_t, uint64_t, uint8_t *) -> size_t { return 8; },
			  [](uint64_t, uint64_t, uint8_t *) -> size_t { return 4; }, &length, &landing)),
		  0u);
	pool.release_all();
}

} // namespace
