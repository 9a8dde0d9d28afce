// SPDX-License-Identifier: GPL-2.0
// The operator switches and the blacklist as the C glue (and the core's
// registration checks) see them.
#include "core_api.h"
#include "kernel_facts.hpp"

#include <gtest/gtest.h>

namespace {

class CoreState : public ::testing::Test {
protected:
	void SetUp() override { ASSERT_EQ(okp_core_init(), 0); }
	void TearDown() override { okp_core_exit(); }
};

TEST_F(CoreState, SwitchesStartOnAndFollowWrites)
{
	okp_core_set_optimization(0);
	okp_core_exit();
	ASSERT_EQ(okp_core_init(), 0); // a reload starts from the defaults
	EXPECT_EQ(okp_core_optimization_enabled(), 1);
	okp_core_set_optimization(0);
	EXPECT_EQ(okp_core_optimization_enabled(), 0);
	okp_core_set_optimization(7); // any nonzero is on
	EXPECT_EQ(okp_core_optimization_enabled(), 1);
}

TEST_F(CoreState, BlacklistEntriesAndLookups)
{
	ASSERT_EQ(okp_core_blacklist_add(0x2000, 0x3000, "entry text"), 0);
	ASSERT_EQ(okp_core_blacklist_add(0x1000, 0x1100, "okprobe itself"), 0);
	EXPECT_EQ(okp_core_blacklist_add(0x5000, 0x5000, "empty"), -1);
	EXPECT_EQ(okp_core_blacklist_count(), 2u);
	EXPECT_STREQ(okp::own_blacklist_find(0x2abc), "entry text");
	EXPECT_EQ(okp::own_blacklist_find(0x1100), nullptr);

	unsigned long start = 0, end = 0;
	const char *why = nullptr;
	ASSERT_EQ(okp_core_blacklist_entry(0, &start, &end, &why), 1);
	EXPECT_EQ(start, 0x1000u);
	EXPECT_EQ(end, 0x1100u);
	EXPECT_STREQ(why, "okprobe itself");
	EXPECT_EQ(okp_core_blacklist_entry(2, &start, &end, &why), 0);
}

TEST_F(CoreState, ExitEmptiesTheBlacklist)
{
	ASSERT_EQ(okp_core_blacklist_add(0x2000, 0x3000, "x"), 0);
	okp_core_exit();
	EXPECT_EQ(okp_core_blacklist_count(), 0u);
}

} // namespace
