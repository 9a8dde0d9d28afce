// SPDX-License-Identifier: GPL-2.0
// OKP_ASSERT (core/assert.hpp) with the host tests' glue
// (assert_glue.cpp): a condition that holds does nothing, one that does not
// prints the expression and where, and aborts; the condition is evaluated
// once either way.
#include "core/assert.hpp"

#include <gtest/gtest.h>

#include <cstdio>

namespace {

int evaluations = 0;

// The condition's value, each evaluation numbered on stderr.
bool counted(bool value)
{
	std::fprintf(stderr, "evaluation %d\n", ++evaluations);
	return value;
}

// Named *DeathTest: GoogleTest runs these first, before any thread starts.
TEST(AssertDeathTest, AFailedConditionPrintsItAndAborts)
{
	EXPECT_DEATH(OKP_ASSERT(counted(false)), "okprobe: assertion failed: counted\\(false\\) at "
						 ".*assert_test\\.cpp:[0-9]+");
}

TEST(AssertDeathTest, AFailedConditionIsEvaluatedOnce)
{
	evaluations = 0;
	// A second evaluation would print "evaluation 2" before the report.
	EXPECT_DEATH(OKP_ASSERT(counted(false)), "evaluation 1\nokprobe: assertion failed");
}

TEST(Assert, AConditionThatHoldsDoesNothing)
{
	int evaluated = 0;
	OKP_ASSERT(++evaluated == 1);
	EXPECT_EQ(evaluated, 1);
	for (int i = 0; i < 3; ++i)
		OKP_ASSERT(++evaluated > 1);
	EXPECT_EQ(evaluated, 4);
}

TEST(Assert, IsOneStatement)
{
	// An if without braces takes it whole; the else is still the if's.
	bool reached_else = false;
	if (evaluations < 0)
		OKP_ASSERT(false);
	else
		reached_else = true;
	EXPECT_TRUE(reached_else);
}

} // namespace
