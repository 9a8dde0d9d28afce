// SPDX-License-Identifier: GPL-2.0
// The owners of src/core/owned.hpp: GrowingArray's room (reserve,
// capacity), its undo of pushes (truncate) and its release of storage
// (reset).
#include "owned.hpp"

#include <gtest/gtest.h>

#include <stdint.h>

namespace {

using okp::GrowingArray;

TEST(GrowingArray, PushGrowsFromSixteenByDoubling)
{
	GrowingArray<uint32_t> array;
	EXPECT_EQ(array.capacity(), 0u);
	for (uint32_t i = 0; i < 17; ++i)
		ASSERT_TRUE(array.push(i));
	EXPECT_EQ(array.size(), 17u);
	EXPECT_EQ(array.capacity(), 32u);
	for (uint32_t i = 0; i < 17; ++i)
		EXPECT_EQ(array[i], i);
}

TEST(GrowingArray, ReserveMakesRoomOnceAndKeepsItems)
{
	GrowingArray<uint64_t> array;
	ASSERT_TRUE(array.push(7));
	ASSERT_TRUE(array.reserve(100));
	EXPECT_EQ(array.capacity(), 100u);
	EXPECT_EQ(array.size(), 1u);
	EXPECT_EQ(array[0], 7u);
	const uint64_t *items = array.get();
	for (uint64_t i = 1; i < 100; ++i)
		ASSERT_TRUE(array.push(i));
	EXPECT_EQ(array.get(), items); // no reallocation within the room
	// Less room than there is changes nothing; a push past it doubles.
	ASSERT_TRUE(array.reserve(10));
	EXPECT_EQ(array.capacity(), 100u);
	ASSERT_TRUE(array.push(100));
	EXPECT_EQ(array.capacity(), 200u);
	EXPECT_EQ(array[0], 7u);
	EXPECT_EQ(array[100], 100u);
}

TEST(GrowingArray, ReserveOfNothingAllocatesNothing)
{
	GrowingArray<uint64_t> array;
	ASSERT_TRUE(array.reserve(0));
	EXPECT_EQ(array.get(), nullptr);
	EXPECT_EQ(array.capacity(), 0u);
}

TEST(GrowingArray, TruncateDropsTheLastItemsOnly)
{
	GrowingArray<uint32_t> array;
	for (uint32_t i = 0; i < 5; ++i)
		ASSERT_TRUE(array.push(i));
	array.truncate(2);
	EXPECT_EQ(array.size(), 2u);
	EXPECT_EQ(array.capacity(), 16u); // the storage stays
	array.truncate(4);		  // never longer
	EXPECT_EQ(array.size(), 2u);
	ASSERT_TRUE(array.push(9));
	EXPECT_EQ(array[1], 1u);
	EXPECT_EQ(array[2], 9u);
}

TEST(GrowingArray, ResetFreesTheStorage)
{
	GrowingArray<uint32_t> array;
	ASSERT_TRUE(array.push(1));
	array.clear();
	EXPECT_EQ(array.size(), 0u);
	EXPECT_NE(array.get(), nullptr); // clear keeps the storage
	array.reset();
	EXPECT_EQ(array.size(), 0u);
	EXPECT_EQ(array.capacity(), 0u);
	EXPECT_EQ(array.get(), nullptr);
	ASSERT_TRUE(array.push(2)); // and the array is usable again
	EXPECT_EQ(array[0], 2u);
}

} // namespace
