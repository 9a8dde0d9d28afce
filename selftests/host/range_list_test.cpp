// SPDX-License-Identifier: GPL-2.0
#include "range_list.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace {

using okp::AddressRange;
using okp::RangeList;

struct Owned : RangeList {
	~Owned() { clear(); }
};

TEST(RangeList, FindsContainingRange)
{
	Owned list;
	ASSERT_TRUE(list.add(0x2000, 0x3000, "b"));
	ASSERT_TRUE(list.add(0x1000, 0x1800, "a"));
	EXPECT_EQ(list.size(), 2u);
	EXPECT_EQ(list[0].start, 0x1000u); // kept in start order
	EXPECT_STREQ(list.find(0x1000)->why, "a");
	EXPECT_STREQ(list.find(0x17ff)->why, "a");
	EXPECT_EQ(list.find(0x1800), nullptr); // end is exclusive
	EXPECT_EQ(list.find(0xfff), nullptr);
	EXPECT_STREQ(list.find(0x2fff)->why, "b");
	EXPECT_EQ(list.find(0x3000), nullptr);
}

TEST(RangeList, RefusesEmptyRanges)
{
	Owned list;
	EXPECT_FALSE(list.add(0x1000, 0x1000, "empty"));
	EXPECT_FALSE(list.add(0x2000, 0x1000, "reversed"));
	EXPECT_EQ(list.size(), 0u);
}

TEST(RangeList, LongRangeCoversLaterStarts)
{
	// A long range starting before many short ones must still be found.
	Owned list;
	ASSERT_TRUE(list.add(0, 0x100000, "long"));
	for (uint64_t s = 0x1000; s < 0x80000; s += 0x1000)
		ASSERT_TRUE(list.add(s, s + 0x10, "short"));
	EXPECT_STREQ(list.find(0x1800)->why, "long");
	EXPECT_STREQ(list.find(0x1008)->why, "long"); // first by start wins
	EXPECT_STREQ(list.find(0xfffff)->why, "long");
	EXPECT_EQ(list.find(0x100000), nullptr);
}

TEST(RangeList, Overlaps)
{
	Owned list;
	ASSERT_TRUE(list.add(0x1000, 0x2000, "a"));
	EXPECT_TRUE(list.overlaps(0xff0, 0x1001));
	EXPECT_TRUE(list.overlaps(0x1fff, 0x3000));
	EXPECT_FALSE(list.overlaps(0x2000, 0x3000));
	EXPECT_FALSE(list.overlaps(0x0, 0x1000));
}

TEST(RangeList, MatchesALinearScanOnRandomRanges)
{
	std::mt19937_64 random(42);
	Owned list;
	std::vector<AddressRange> reference;
	for (int i = 0; i < 300; ++i) {
		uint64_t start = random() % 100000, length = 1 + random() % (i % 10 == 0 ? 5000 : 50);
		ASSERT_TRUE(list.add(start, start + length, "r"));
		reference.push_back({start, start + length, "r"});
	}
	for (uint64_t address = 0; address < 106000; address += 7) {
		bool expected = false;
		for (const AddressRange &r : reference)
			expected |= r.contains(address);
		EXPECT_EQ(list.find(address) != nullptr, expected) << address;
	}
}

TEST(RangeList, ClearMakesItReusable)
{
	Owned list;
	ASSERT_TRUE(list.add(1, 2, "x"));
	list.clear();
	EXPECT_EQ(list.size(), 0u);
	EXPECT_EQ(list.find(1), nullptr);
	ASSERT_TRUE(list.add(5, 6, "y"));
	EXPECT_STREQ(list.find(5)->why, "y");
}

} // namespace
