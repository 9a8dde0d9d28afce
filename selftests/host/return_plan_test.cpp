// SPDX-License-Identifier: GPL-2.0
// The return-probe planner: every refusal okretprobe_register() logs, with
// its errno and line, in the order the checks run; which requests go to
// the exits and which to the entry; the .cold naming rule; and the C entry
// the glue calls.
#include "core/core_api.h"
#include "core/return_plan.hpp"

#include <okprobe.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

namespace {

using okp::plan_return;
using okp::ReturnRequest;
using okp::ReturnStrategy;
using okp::Text;

// A request every check accepts: registered by address, at an entry.
ReturnRequest good()
{
	ReturnRequest request;
	request.has_rethook = true;
	request.name = Text::of("vfs_read");
	return request;
}

void expect_refused(const ReturnRequest &request, int error, const char *why)
{
	const auto planned = plan_return(request);
	ASSERT_FALSE(planned);
	EXPECT_EQ(planned.error(), error);
	EXPECT_STREQ(planned.why(), why);
}

TEST(ReturnPlan, RefusesARegisteredProbe)
{
	ReturnRequest request = good();
	request.registered = true;
	expect_refused(request, EINVAL, "the probe is already registered (or okp_private is not zero)");
}

TEST(ReturnPlan, RefusesWithoutRethook)
{
	ReturnRequest request = good();
	request.has_rethook = false;
	expect_refused(request, EOPNOTSUPP,
		       "this kernel has no rethook (CONFIG_RETHOOK), which okprobe's return probes use");
}

TEST(ReturnPlan, RefusesMoreDataThan4096)
{
	ReturnRequest request = good();
	request.data_size = 4097;
	expect_refused(request, EINVAL, "data_size is more than 4096");
	request.data_size = 4096;
	EXPECT_TRUE(plan_return(request));
}

TEST(ReturnPlan, RefusesAnOffset)
{
	ReturnRequest request = good();
	request.offset = 4;
	expect_refused(request, EINVAL, "a return probe goes at a function's entry (offset 0)");
	// With a symbol name too: an offset is never an entry.
	request.has_symbol_name = true;
	expect_refused(request, EINVAL, "a return probe goes at a function's entry (offset 0)");
}

TEST(ReturnPlan, RefusesAnAddressInsideAFunction)
{
	ReturnRequest request = good();
	request.at_function_start = false;
	expect_refused(request, EINVAL, "a return probe goes at a function's entry (offset 0)");
	// A symbol name is its function's start: the address is not asked.
	request.has_symbol_name = true;
	EXPECT_TRUE(plan_return(request));
}

TEST(ReturnPlan, RefusesAColdPiece)
{
	ReturnRequest request = good();
	for (const char *name : {"vfs_read.cold", "vfs_read.cold.3", "vfs_read.part.0.cold", "vfs_read.cold [ext4]"}) {
		request.name = Text::of(name);
		expect_refused(request, EINVAL, "a function's split-off piece (.cold) has no entry of its own");
	}
	request.name = Text::of("cold_start");
	EXPECT_TRUE(plan_return(request));
	request.name = Text::of("vfs_read.part.0");
	EXPECT_TRUE(plan_return(request));
	// A name that could not be read: kp's registration says why.
	request.name = Text();
	EXPECT_TRUE(plan_return(request));
}

TEST(ReturnPlan, ChecksInTheOrderTheLogShows)
{
	ReturnRequest request = good();
	request.registered = true;
	request.has_rethook = false;
	request.data_size = 5000;
	request.offset = 1;
	request.name = Text::of("f.cold");
	expect_refused(request, EINVAL, okp::return_refusal::registered);
	request.registered = false;
	expect_refused(request, EOPNOTSUPP, okp::return_refusal::no_rethook);
	request.has_rethook = true;
	expect_refused(request, EINVAL, okp::return_refusal::data_size);
	request.data_size = 0;
	expect_refused(request, EINVAL, okp::return_refusal::not_entry);
	request.offset = 0;
	expect_refused(request, EINVAL, okp::return_refusal::cold_piece);
}

TEST(ReturnPlan, NothingToCarryGoesToTheExits)
{
	ReturnRequest request = good();
	EXPECT_EQ(plan_return(request).value(), ReturnStrategy::at_exits);
	request.flags = OKPROBE_FLAG_DISABLED;
	EXPECT_EQ(plan_return(request).value(), ReturnStrategy::at_exits);
}

TEST(ReturnPlan, AnEntryHandlerDataOrRethookFlagGoesToTheEntry)
{
	ReturnRequest request = good();
	request.has_entry_handler = true;
	EXPECT_EQ(plan_return(request).value(), ReturnStrategy::at_entry);
	request = good();
	request.data_size = 8;
	EXPECT_EQ(plan_return(request).value(), ReturnStrategy::at_entry);
	request = good();
	request.flags = OKPROBE_FLAG_RETURN_RETHOOK;
	EXPECT_EQ(plan_return(request).value(), ReturnStrategy::at_entry);
	request.flags = OKPROBE_FLAG_RETURN_RETHOOK | OKPROBE_FLAG_DISABLED;
	EXPECT_EQ(plan_return(request).value(), ReturnStrategy::at_entry);
	// Flags kp's registration refuses: at the entry, where it does.
	request.flags = OKPROBE_FLAG_COUNTER;
	EXPECT_EQ(plan_return(request).value(), ReturnStrategy::at_entry);
}

TEST(ReturnPlan, ColdPieceOfItsFunctionOnly)
{
	const Text function = Text::of("vfs_read");
	EXPECT_TRUE(okp::cold_piece_of(function, Text::of("vfs_read.cold")));
	EXPECT_TRUE(okp::cold_piece_of(function, Text::of("vfs_read.cold.2")));
	EXPECT_FALSE(okp::cold_piece_of(function, Text::of("vfs_read")));
	EXPECT_FALSE(okp::cold_piece_of(function, Text::of("vfs_read.coldx")));
	EXPECT_FALSE(okp::cold_piece_of(function, Text::of("vfs_readv.cold")));
	EXPECT_FALSE(okp::cold_piece_of(function, Text::of("vfs_read.part.0.cold")));
	EXPECT_TRUE(okp::names_cold_piece(Text::of("vfs_read.cold")));
	EXPECT_FALSE(okp::names_cold_piece(Text::of("vfs_read")));
	EXPECT_FALSE(okp::names_cold_piece(Text::of(".col")));
}

TEST(ReturnPlanEntry, RefusesNoProbe)
{
	okp_return_strategy strategy = OKP_RETURN_AT_ENTRY;
	const char *why = nullptr;
	EXPECT_EQ(okp_core_plan_return(nullptr, &strategy, &why), -EINVAL);
	EXPECT_STREQ(why, "the probe is NULL");
}

TEST(ReturnPlanEntry, CarriesTheFactsAcross)
{
	okp_return_request request = {};
	request.has_rethook = 1;
	request.has_symbol_name = 1;
	request.name = "vfs_read";
	okp_return_strategy strategy = OKP_RETURN_AT_ENTRY;
	const char *why = nullptr;
	EXPECT_EQ(okp_core_plan_return(&request, &strategy, &why), 0);
	EXPECT_EQ(strategy, OKP_RETURN_AT_EXITS);
	request.has_entry_handler = 1;
	EXPECT_EQ(okp_core_plan_return(&request, &strategy, &why), 0);
	EXPECT_EQ(strategy, OKP_RETURN_AT_ENTRY);
	request.name = "vfs_read.cold";
	EXPECT_EQ(okp_core_plan_return(&request, &strategy, &why), -EINVAL);
	EXPECT_STREQ(why, okp::return_refusal::cold_piece);
	request.name = nullptr;
	request.has_symbol_name = 0;
	request.at_function_start = 0;
	EXPECT_EQ(okp_core_plan_return(&request, &strategy, &why), -EINVAL);
	EXPECT_STREQ(why, okp::return_refusal::not_entry);
	request.has_rethook = 0;
	EXPECT_EQ(okp_core_plan_return(&request, &strategy, &why), -EOPNOTSUPP);
	request.registered = 1;
	request.data_size = 1;
	EXPECT_EQ(okp_core_plan_return(&request, &strategy, &why), -EINVAL);
	EXPECT_STREQ(why, okp::return_refusal::registered);
}

} // namespace
