// SPDX-License-Identifier: GPL-2.0
// The probe lifecycle (src/core/probe_table.cpp) against a fake kernel: a
// text buffer the fake arch writes breakpoints into, and counters for the
// grace periods the table waits for.
#include "core/core_api.h"
#include "core/event_fetch.hpp"
#include "core/errno.hpp"
#include "core/probe_table.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

// What the core told the return-probe glue of exits' probes: the probe, and
// -1 (a missed hit) or its OKPROBE_FLAG_OPTIMIZED (0, 1).
std::vector<std::pair<const okprobe *, int>> exit_calls;

namespace {

constexpr uint64_t text_start = 0x10000, text_size = 0x100;
constexpr uint8_t original_byte = 0x90, breakpoint = 0xcc;

constexpr uint8_t jump_opcode = 0xe9, jump_operand = 0x11;
constexpr uint8_t fake_region = 5;

struct FakeKernel {
	uint8_t text[text_size];
	int rcu = 0, rcu_tasks = 0, retired = 0, created = 0;
	int optimizer_scheduled = 0, detours_created = 0, detours_freed = 0;
	// Counter cells handed out and not freed, each one CPU's count.
	std::map<unsigned long, unsigned long long> counter_cells;
	int unoptimize_calls = 0;			 // riscv waits a grace period in each
	std::map<uint64_t, okp::DirectHit> direct_hits;	 // what each site's last detour was asked
	bool args_detours = true;			 // arch::has_args_detour()
	std::map<uint64_t, bool> args_records;		 // each site's last detour: argument-only?
	std::map<uint64_t, int> published_at_unoptimize; // probes a site had when its jump went
	int text_writes = 0, text_batches = 0;		 // synchronizing writes, single and batched
	std::map<uint64_t, int> arms;			 // times each address was armed
	std::map<uint64_t, const char *> unplannable;	 // plan_jump refuses these
	std::map<uint64_t, int> claims;			 // okprobe's claims on each function
	bool kernel_kprobe_in_function = false;		 // the glue refuses every claim
	uint64_t breakpoint_on_claim = 0;		 // someone's int3 appears there as okprobe claims
	std::map<uint64_t, int> lost;			 // times each address was reported lost
	int pins = 0;					 // okprobe.ko's pins for lost text
	std::set<uint64_t> emulated;			 // sites emulated instead of copied
	std::set<uint64_t> unboostable;			 // sites whose copy cannot jump back
	int emulations = 0;
	okp_cpu_state cpu; // the hit path's per-CPU state
	// ftrace: a one-byte call site at this address (0: none), what arming
	// it returns, and the sites each of okprobe's two ftrace_ops filters
	// ([0] the plain one, [1] the one that may change the ip).
	uint64_t ftrace_site = 0;
	int ftrace_arm_error = 0;
	std::map<uint64_t, int> ftrace_armed[2];
	std::set<uint64_t> more_ftrace_sites;		     // call sites too
	std::set<uint64_t> ftrace_refused;		     // owned by another ipmodify user (EBUSY)
	int ftrace_arm_passes = 0, ftrace_disarm_passes = 0; // of ftrace's records
	std::map<uint64_t, int> entries_unarmed;	     // reported: probes that do not run
} kernel;

constexpr uint64_t fake_copy_distance = 0x20;
// Slots the fake arch handed out, by site address (the newest site's):
// each site its own, as the real pools do.
std::map<uint64_t, uint64_t> fake_slots;
uint64_t fake_slots_taken = 0;

uint64_t take_fake_slot(uint64_t address)
{
	return fake_slots[address] = 0x700000 + fake_slots_taken++ * 2 * fake_copy_distance;
}

uint64_t fake_slot_of(uint64_t address)
{
	return fake_slots[address];
}

uint8_t &text_at(uint64_t address)
{
	return kernel.text[address - text_start];
}

// Every byte is a one-byte instruction, but a breakpoint is refused.
okp::InstructionVerdict one_byte_rules(const uint8_t *function, size_t, size_t offset, uint64_t)
{
	okp::InstructionVerdict verdict;
	if (function[offset] == breakpoint) {
		verdict.error = 16;
		verdict.why = "someone else's breakpoint";
	}
	verdict.length = 1;
	return verdict;
}

int pre_handler(okprobe *, pt_regs *)
{
	return 0;
}

void post_handler(okprobe *, pt_regs *, unsigned long) {}

class ProbeTableTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		std::memset(kernel.text, original_byte, sizeof(kernel.text));
		kernel.rcu = kernel.rcu_tasks = kernel.retired = kernel.created = 0;
		kernel.text_writes = kernel.text_batches = 0;
		kernel.optimizer_scheduled = kernel.detours_created = kernel.detours_freed = 0;
		kernel.counter_cells.clear();
		kernel.direct_hits.clear();
		kernel.args_detours = true;
		kernel.args_records.clear();
		kernel.published_at_unoptimize.clear();
		kernel.arms.clear();
		kernel.unplannable.clear();
		kernel.claims.clear();
		kernel.kernel_kprobe_in_function = false;
		kernel.breakpoint_on_claim = 0;
		kernel.lost.clear();
		kernel.pins = 0;
		kernel.emulated.clear();
		kernel.unboostable.clear();
		kernel.emulations = 0;
		kernel.cpu = okp_cpu_state{};
		kernel.ftrace_site = 0;
		kernel.ftrace_arm_error = 0;
		kernel.ftrace_armed[0].clear();
		kernel.ftrace_armed[1].clear();
		kernel.more_ftrace_sites.clear();
		kernel.ftrace_refused.clear();
		kernel.ftrace_arm_passes = kernel.ftrace_disarm_passes = 0;
		kernel.entries_unarmed.clear();
		okp_core_set_optimization(1);
	}
	void TearDown() override
	{
		table.clear();
		for (const auto &ops : kernel.ftrace_armed)
			for (const auto &[address, armed] : ops)
				EXPECT_EQ(armed, 0) << "an ftrace call site stays armed";
		EXPECT_EQ(kernel.pins, 0) << "okprobe.ko stays pinned";
		EXPECT_TRUE(table.staging_lists_consistent()) << "a staging list lost step with the sites";
		EXPECT_EQ(kernel.created, kernel.retired) << "a site leaked";
		EXPECT_EQ(kernel.detours_created, kernel.detours_freed) << "a detour leaked";
		EXPECT_TRUE(kernel.counter_cells.empty()) << "counter cells leaked";
		for (const auto &[function, users] : kernel.claims)
			EXPECT_EQ(users, 0) << "a claim on 0x" << std::hex << function << " leaked";
		okp_core_set_optimization(1);
	}

	// One run of the optimizer's work, grace period included.
	void run_optimizer()
	{
		const uint64_t generation = table.optimizer_begin();
		if (!generation)
			return;
		okp_glue_synchronize(OKP_GRACE_RCU | OKP_GRACE_TASKS);
		table.optimizer_finish(generation);
	}

	okp::JumpState jump_state(uint64_t offset)
	{
		okp::JumpState state = okp::JumpState::breakpoint;
		table.for_each_jump([&](const okp::JumpLine &line) {
			if (line.address == text_start + offset)
				state = line.state;
		});
		return state;
	}

	bool listed_lost(uint64_t offset)
	{
		bool lost = false;
		table.for_each_jump([&](const okp::JumpLine &line) {
			if (line.address == text_start + offset)
				lost = line.lost;
		});
		return lost;
	}

	std::string why_not(uint64_t offset)
	{
		std::string why;
		table.for_each_jump([&](const okp::JumpLine &line) {
			if (line.address == text_start + offset)
				why = line.why ? line.why : "";
		});
		return why;
	}

	// A fresh probe owned by the fixture, so it outlives the test body
	// (TearDown unregisters whatever is left).
	okprobe &probe_at(uint64_t offset)
	{
		okprobe &probe = probes_[used_++];
		probe = okprobe{};
		probe.symbol_name = "fake_function";
		probe.offset = offset;
		probe.pre_handler = pre_handler;
		return probe;
	}

	// 0 or a negative errno, as okprobe_register() returns.
	int add(okprobe &probe)
	{
		const okp::Status registered = table.register_probe(&probe, probe.symbol_name, one_byte_rules);
		if (!registered) {
			EXPECT_STRNE(registered.why(), "") << "a refusal without a reason";
		}
		return -registered.error();
	}

	void reset_counters() { kernel.rcu = kernel.rcu_tasks = 0; }

	// end_arm_batch: 0 or the errno ftrace refused an entry with.
	int end_batch(std::string *where = nullptr, std::string *why = nullptr)
	{
		const char *refused_where = nullptr, *refused_why = nullptr;
		const int refused = table.end_arm_batch(&refused_where, &refused_why);
		if (where)
			*where = refused_where ? refused_where : "";
		if (why)
			*why = refused_why ? refused_why : "";
		return refused;
	}

	// The hit path finds sites in the module's table.
	okp::ProbeTable &table = okp::registered_probes;

private:
	okprobe probes_[16];
	int used_ = 0;
};

TEST_F(ProbeTableTest, RegisterArmsUnregisterRestoresAndRetiresAfterGracePeriods)
{
	okprobe &probe = probe_at(4);
	ASSERT_EQ(add(probe), 0);
	EXPECT_EQ(probe.addr, reinterpret_cast<void *>(text_start + 4));
	EXPECT_EQ(text_at(text_start + 4), breakpoint);
	EXPECT_NE(table.lookup(text_start + 4), nullptr);
	reset_counters();
	okprobe *batch[] = {&probe};
	table.unregister_probes(batch, 1);
	EXPECT_EQ(text_at(text_start + 4), original_byte);
	EXPECT_EQ(table.lookup(text_start + 4), nullptr);
	EXPECT_EQ(probe.okp_site, nullptr);
	EXPECT_EQ(kernel.rcu, 1);
	EXPECT_EQ(kernel.rcu_tasks, 1);
	EXPECT_EQ(kernel.retired, 1);
}

TEST_F(ProbeTableTest, UnregisteringABatchWaitsOneGracePeriod)
{
	okprobe *batch[10];
	for (int i = 0; i < 10; ++i) {
		batch[i] = &probe_at(8 * i);
		ASSERT_EQ(add(*batch[i]), 0);
	}
	reset_counters();
	kernel.text_writes = kernel.text_batches = 0;
	table.unregister_probes(batch, 10);
	EXPECT_EQ(kernel.rcu, 1);
	EXPECT_EQ(kernel.rcu_tasks, 1);
	EXPECT_EQ(kernel.retired, 10);
	EXPECT_EQ(kernel.text_batches, 1) << "the breakpoints come out in one synchronized write";
	EXPECT_EQ(kernel.text_writes, 0) << "no breakpoint comes out on its own";
	for (int i = 0; i < 10; ++i)
		EXPECT_EQ(text_at(text_start + 8 * i), original_byte);
}

TEST_F(ProbeTableTest, RegisteringABatchArmsEveryBreakpointWithOneWrite)
{
	kernel.text_writes = kernel.text_batches = 0;
	table.begin_arm_batch();
	okprobe *batch[10];
	for (int i = 0; i < 10; ++i) {
		batch[i] = &probe_at(8 * i);
		ASSERT_EQ(add(*batch[i]), 0);
		EXPECT_EQ(text_at(text_start + 8 * i), original_byte) << "armed before the batch ends";
	}
	okprobe &again = probe_at(8);
	ASSERT_EQ(add(again), 0) << "a second probe at a pending site";
	EXPECT_EQ(again.okp_site, batch[1]->okp_site);
	EXPECT_EQ(kernel.text_writes, 0);
	end_batch();
	EXPECT_EQ(kernel.text_writes, 0) << "no breakpoint goes in on its own";
	EXPECT_EQ(kernel.text_batches, 1) << "every breakpoint in one synchronized write";
	for (int i = 0; i < 10; ++i)
		EXPECT_EQ(text_at(text_start + 8 * i), breakpoint);
	// Outside a batch, a registration arms at once.
	okprobe &single = probe_at(0x60);
	ASSERT_EQ(add(single), 0);
	EXPECT_EQ(text_at(text_start + 0x60), breakpoint);
	EXPECT_EQ(kernel.text_writes, 1);
}

TEST_F(ProbeTableTest, ARollbackInsideAnArmBatchSeesNoLostText)
{
	// register_many's rollback: the probes registered so far come out
	// while their breakpoints may still be pending.
	table.begin_arm_batch();
	okprobe *batch[3];
	for (int i = 0; i < 3; ++i) {
		batch[i] = &probe_at(0x10 * (i + 1));
		ASSERT_EQ(add(*batch[i]), 0);
	}
	table.unregister_probes(batch, 2);
	end_batch();
	EXPECT_TRUE(kernel.lost.empty()) << "a pending breakpoint was taken for someone else's change";
	EXPECT_EQ(text_at(text_start + 0x10), original_byte);
	EXPECT_EQ(text_at(text_start + 0x20), original_byte);
	EXPECT_EQ(text_at(text_start + 0x30), breakpoint);
	EXPECT_FALSE(batch[2]->flags & OKPROBE_FLAG_LOST);
}

TEST_F(ProbeTableTest, TextChangedBeforeAPendingArmIsWrittenIsLeftAloneAndLost)
{
	table.begin_arm_batch();
	okprobe &probe = probe_at(0x30);
	ASSERT_EQ(add(probe), 0);
	text_at(text_start + 0x30) = 0x55; // someone else's write meanwhile
	end_batch();
	EXPECT_EQ(text_at(text_start + 0x30), 0x55) << "okprobe wrote over someone else's byte";
	EXPECT_TRUE(probe.flags & OKPROBE_FLAG_LOST);
	EXPECT_EQ(kernel.lost[text_start + 0x30], 1);
	// Once the text is the original again, the site can go.
	text_at(text_start + 0x30) = original_byte;
	okprobe *batch[] = {&probe};
	table.unregister_probes(batch, 1);
	EXPECT_EQ(table.lookup(text_start + 0x30), nullptr);
	EXPECT_EQ(kernel.pins, 0);
}

TEST_F(ProbeTableTest, TheWriterClockTimesEveryStepOfARegistration)
{
	using okp::WriterStep;
	const okp::WriterClock before = table.writer_clock();
	auto times = [&](WriterStep step) {
		return table.writer_clock().times[size_t(step)] - before.times[size_t(step)];
	};
	auto ns = [&](WriterStep step) { return table.writer_clock().ns[size_t(step)] - before.ns[size_t(step)]; };
	okprobe &first = probe_at(0x10), &second = probe_at(0x10);
	ASSERT_EQ(add(first), 0);
	ASSERT_EQ(add(second), 0);
	EXPECT_EQ(times(WriterStep::register_probe), 2u);
	EXPECT_EQ(times(WriterStep::proof), 2u) << "every registration is proven";
	EXPECT_EQ(times(WriterStep::claim), 1u) << "only a new site claims its function";
	EXPECT_EQ(times(WriterStep::recheck), 1u);
	EXPECT_EQ(times(WriterStep::plan), 1u);
	EXPECT_EQ(times(WriterStep::arm), 1u);
	for (WriterStep step : {WriterStep::register_probe, WriterStep::proof, WriterStep::plan, WriterStep::arm})
		EXPECT_GT(ns(step), 0u) << okp::writer_step_name(step);
	EXPECT_GE(ns(WriterStep::register_probe),
		  ns(WriterStep::proof) + ns(WriterStep::claim) + ns(WriterStep::recheck) + ns(WriterStep::plan))
		<< "the steps lie within the registration";
	okprobe *batch[] = {&first, &second};
	table.unregister_probes(batch, 2);
	EXPECT_EQ(times(WriterStep::unregister), 1u);
}

// make bench times one optimizer pass after each scale pass: both halves of
// the pass are steps of their own, the jump writes within the second.
TEST_F(ProbeTableTest, TheWriterClockTimesBothHalvesOfAnOptimizerPass)
{
	using okp::WriterStep;
	const okp::WriterClock before = table.writer_clock();
	auto times = [&](WriterStep step) {
		return table.writer_clock().times[size_t(step)] - before.times[size_t(step)];
	};
	auto ns = [&](WriterStep step) { return table.writer_clock().ns[size_t(step)] - before.ns[size_t(step)]; };
	okprobe &probe = probe_at(0x10);
	ASSERT_EQ(add(probe), 0);
	EXPECT_EQ(times(WriterStep::optimizer_begin), 0u) << "a registration is not the optimizer's";
	run_optimizer();
	ASSERT_EQ(jump_state(0x10), okp::JumpState::optimized);
	EXPECT_EQ(times(WriterStep::optimizer_begin), 1u);
	EXPECT_EQ(times(WriterStep::optimizer_finish), 1u);
	EXPECT_EQ(times(WriterStep::optimize), 1u);
	EXPECT_GT(ns(WriterStep::optimizer_finish), 0u);
	EXPECT_GE(ns(WriterStep::optimizer_finish), ns(WriterStep::optimize))
		<< "the jump writes lie within the finish";
	EXPECT_EQ(okp::writer_step_name(WriterStep::optimizer_finish), std::string("optimizer_finish"));
	EXPECT_EQ(table.optimizer_begin(), 0u) << "nothing staged, no pass";
	EXPECT_EQ(times(WriterStep::optimizer_begin), 2u) << "an empty begin is timed too";
	okprobe *batch[] = {&probe};
	table.unregister_probes(batch, 1);
}

TEST_F(ProbeTableTest, TheSecondProbeAtAnAddressSharesTheSiteAndOutlivesTheFirst)
{
	okprobe &first = probe_at(2), &second = probe_at(2);
	ASSERT_EQ(add(first), 0);
	ASSERT_EQ(add(second), 0) << "the int3 must read as the original byte";
	EXPECT_EQ(first.okp_site, second.okp_site);
	EXPECT_EQ(kernel.created, 1);
	reset_counters();
	okprobe *batch[] = {&first};
	table.unregister_probes(batch, 1);
	EXPECT_EQ(kernel.rcu, 1);
	EXPECT_EQ(kernel.rcu_tasks, 0) << "no site died";
	EXPECT_EQ(text_at(text_start + 2), breakpoint);
}

TEST_F(ProbeTableTest, SomeoneElsesBreakpointIsRefused)
{
	text_at(text_start + 6) = breakpoint; // someone else's
	okprobe &theirs = probe_at(6);
	EXPECT_EQ(add(theirs), -16);
	EXPECT_EQ(theirs.okp_site, nullptr);
}

TEST_F(ProbeTableTest, AFunctionHoldingAKernelKprobeIsRefusedAndNothingIsCreated)
{
	kernel.kernel_kprobe_in_function = true;
	okprobe &probe = probe_at(6);
	EXPECT_EQ(add(probe), -16);
	EXPECT_TRUE(kernel.entries_unarmed.empty()) << "the registration says why itself";
	EXPECT_EQ(probe.okp_site, nullptr);
	EXPECT_EQ(kernel.created, 0);
	EXPECT_EQ(text_at(text_start + 6), original_byte);
	EXPECT_EQ(table.lookup(text_start + 6), nullptr);
}

TEST_F(ProbeTableTest, TheProofIsMadeAgainOnceTheFunctionIsClaimed)
{
	// Someone's breakpoint lands at the address between the first proof
	// and the claim: the second proof sees it, the claim is given back.
	kernel.breakpoint_on_claim = text_start + 6;
	okprobe &probe = probe_at(6);
	EXPECT_EQ(add(probe), -16);
	EXPECT_EQ(kernel.created, 0);
	EXPECT_EQ(kernel.claims[text_start], 0) << "the claim was not given back";
	text_at(text_start + 6) = original_byte;
}

TEST_F(ProbeTableTest, ASiteInAFunctionOkprobeHoldsIsNotProvenTwice)
{
	using okp::WriterStep;
	const okp::WriterClock before = table.writer_clock();
	auto times = [&](WriterStep step) {
		return table.writer_clock().times[size_t(step)] - before.times[size_t(step)];
	};
	okprobe &first = probe_at(2), &second = probe_at(0x30), &third = probe_at(0x90);
	ASSERT_EQ(add(first), 0);
	ASSERT_EQ(add(second), 0);
	ASSERT_EQ(add(third), 0);
	EXPECT_EQ(times(WriterStep::proof), 3u);
	EXPECT_EQ(times(WriterStep::claim), 3u);
	EXPECT_EQ(times(WriterStep::recheck), 1u) << "the first claim shut the kernel's kprobes out for the others";
	EXPECT_EQ(kernel.claims[text_start], 3);
	// Once its sites are gone, a new one claims and proves again.
	okprobe *all[] = {&first, &second, &third};
	table.unregister_probes(all, 3);
	okprobe &again = probe_at(0x30);
	ASSERT_EQ(add(again), 0);
	EXPECT_EQ(times(WriterStep::recheck), 2u);
	okprobe *last[] = {&again};
	table.unregister_probes(last, 1);
}

TEST_F(ProbeTableTest, EverySiteClaimsItsFunctionUntilItsBytesAreGone)
{
	okprobe &a = probe_at(2), &b = probe_at(2), &c = probe_at(0x30), &d = probe_at(0x90);
	ASSERT_EQ(add(a), 0);
	ASSERT_EQ(add(b), 0);
	EXPECT_EQ(kernel.claims[text_start], 1) << "one claim per site, not per probe";
	ASSERT_EQ(add(c), 0);
	ASSERT_EQ(add(d), 0);
	EXPECT_EQ(kernel.claims[text_start], 3);
	okprobe *first[] = {&a};
	table.unregister_probes(first, 1);
	EXPECT_EQ(kernel.claims[text_start], 3) << "b still holds the site";
	okprobe *second[] = {&b};
	table.unregister_probes(second, 1);
	EXPECT_EQ(kernel.claims[text_start], 2);
	EXPECT_EQ(text_at(text_start + 2), original_byte);
	// Gone text gives its claim back at once; the probe stays listed.
	table.text_gone(text_start + 0x80, text_start + 0xa0);
	EXPECT_EQ(kernel.claims[text_start], 1);
	okprobe *rest[] = {&c, &d};
	table.unregister_probes(rest, 2);
	EXPECT_EQ(kernel.claims[text_start], 0) << "a gone site is not released twice";
}

TEST_F(ProbeTableTest, DisablingTheLastEnabledProbeDisarmsTheSite)
{
	okprobe &a = probe_at(3), &b = probe_at(3);
	b.flags = OKPROBE_FLAG_DISABLED;
	ASSERT_EQ(add(b), 0);
	EXPECT_EQ(text_at(text_start + 3), original_byte) << "registered disabled";
	ASSERT_EQ(add(a), 0);
	EXPECT_EQ(text_at(text_start + 3), breakpoint);
	EXPECT_EQ(table.set_probe_enabled(&a, false), 0);
	EXPECT_EQ(text_at(text_start + 3), original_byte);
	EXPECT_NE(table.lookup(text_start + 3), nullptr) << "a disabled site stays registered";
	EXPECT_EQ(table.set_probe_enabled(&b, true), 0);
	EXPECT_EQ(text_at(text_start + 3), breakpoint);
	EXPECT_FALSE(b.flags & OKPROBE_FLAG_DISABLED);
	okprobe &stranger = probe_at(3);
	EXPECT_EQ(table.set_probe_enabled(&stranger, true), -22);
}

TEST_F(ProbeTableTest, TheGlobalSwitchDisarmsEverythingAndKeepsEachProbesState)
{
	okprobe &on = probe_at(1), &off = probe_at(9);
	ASSERT_EQ(add(on), 0);
	ASSERT_EQ(add(off), 0);
	ASSERT_EQ(table.set_probe_enabled(&off, false), 0);
	table.set_all_enabled(false);
	EXPECT_EQ(text_at(text_start + 1), original_byte);
	EXPECT_EQ(text_at(text_start + 9), original_byte);
	okprobe &late = probe_at(20);
	ASSERT_EQ(add(late), 0);
	EXPECT_EQ(text_at(text_start + 20), original_byte) << "registered while switched off";
	table.set_all_enabled(true);
	EXPECT_EQ(text_at(text_start + 1), breakpoint);
	EXPECT_EQ(text_at(text_start + 9), original_byte) << "still disabled on its own";
	EXPECT_EQ(text_at(text_start + 20), breakpoint);
}

TEST_F(ProbeTableTest, GoneTextDisarmsLeavesTheLookupAndStaysListed)
{
	okprobe &inside = probe_at(0x40), &outside = probe_at(0x80);
	ASSERT_EQ(add(inside), 0);
	ASSERT_EQ(add(outside), 0);
	reset_counters();
	table.text_gone(text_start + 0x40, text_start + 0x80);
	EXPECT_EQ(kernel.rcu, 1) << "handlers must be finished when text_gone returns";
	EXPECT_TRUE(inside.flags & OKPROBE_FLAG_GONE);
	EXPECT_FALSE(outside.flags & OKPROBE_FLAG_GONE);
	EXPECT_EQ(text_at(text_start + 0x40), original_byte);
	EXPECT_EQ(table.lookup(text_start + 0x40), nullptr);
	EXPECT_EQ(table.set_probe_enabled(&inside, true), -22);
	std::string listed;
	table.for_each_line([&](const okp::ListLine &line) {
		listed += std::to_string(line.address - text_start) + (line.flags & OKPROBE_FLAG_GONE ? "G " : " ");
	});
	EXPECT_EQ(listed, std::to_string(0x40) + "G " + std::to_string(0x80) + " ");
	// A new module at the same address gets a fresh site.
	okprobe &again = probe_at(0x40);
	ASSERT_EQ(add(again), 0);
	EXPECT_NE(again.okp_site, inside.okp_site);
}

TEST_F(ProbeTableTest, AHitRunsTheProbesActiveWhenItTrapped)
{
	okprobe &a = probe_at(5), &b = probe_at(5);
	b.post_handler = post_handler;
	ASSERT_EQ(add(a), 0);
	ASSERT_EQ(add(b), 0);
	okp::Site *site = table.lookup(text_start + 5);
	ASSERT_NE(site, nullptr);
	okp::ProbeTable::HitProbes hit;
	okp::ProbeTable::start_hit(*site, hit);
	EXPECT_EQ(hit.count, 2);
	EXPECT_TRUE(okp::ProbeTable::wants_post_handlers(hit));
	ASSERT_EQ(table.set_probe_enabled(&b, false), 0);
	okp::ProbeTable::start_hit(*site, hit);
	EXPECT_EQ(hit.count, 1);
	EXPECT_FALSE(okp::ProbeTable::wants_post_handlers(hit));
	unsigned long hits[2] = {};
	int line = 0;
	table.for_each_line([&](const okp::ListLine &l) { hits[line++] = l.hits; });
	EXPECT_EQ(hits[0], 2u);
	EXPECT_EQ(hits[1], 1u);
}

int redirecting_pre_handler(okprobe *, pt_regs *)
{
	return 1; // "I moved ip": ignored on the optimized path
}

TEST_F(ProbeTableTest, AnOptimizedHitRunsEveryActivePreHandlerWhateverTheyReturn)
{
	okprobe &first = probe_at(5), &second = probe_at(5), &off = probe_at(5);
	first.pre_handler = redirecting_pre_handler;
	off.flags = OKPROBE_FLAG_DISABLED;
	ASSERT_EQ(add(first), 0);
	ASSERT_EQ(add(second), 0);
	ASSERT_EQ(add(off), 0);
	okp::Site *site = table.lookup(text_start + 5);
	ASSERT_NE(site, nullptr);
	okp::ProbeTable::run_optimized_hit(*site, nullptr);
	okp::ProbeTable::run_optimized_hit(*site, nullptr);
	unsigned long hits[3] = {};
	int line = 0;
	table.for_each_line([&](const okp::ListLine &l) { hits[line++] = l.hits; });
	EXPECT_EQ(hits[0], 2u);
	EXPECT_EQ(hits[1], 2u) << "the second runs although the first returned nonzero";
	EXPECT_EQ(hits[2], 0u) << "disabled";
	// The last slot leaves: the others still run; a new probe takes the
	// free slot and runs too.
	okprobe *batch[] = {&off};
	table.unregister_probes(batch, 1);
	okprobe &late = probe_at(5);
	ASSERT_EQ(add(late), 0);
	okp::ProbeTable::run_optimized_hit(*site, nullptr);
	line = 0;
	table.for_each_line([&](const okp::ListLine &l) { hits[line++] = l.hits; });
	EXPECT_EQ(hits[0], 3u);
	EXPECT_EQ(hits[2], 1u) << "the late probe";
}

TEST_F(ProbeTableTest, AStructTheTableDoesNotHoldIsNeverTrusted)
{
	okprobe &real = probe_at(5);
	ASSERT_EQ(add(real), 0);
	// A copy of a registered struct, a stranger with a garbage okp_site
	// (a pointer nothing could read), and the same probe twice in a batch.
	okprobe copy = real;
	void *const copied_site = copy.okp_site;
	okprobe &stranger = probe_at(5);
	stranger.okp_site = reinterpret_cast<void *>(0xdead000000000000ull);
	stranger.addr = real.addr;
	EXPECT_EQ(table.set_probe_enabled(&copy, false), -22);
	EXPECT_EQ(table.set_probe_enabled(&stranger, false), -22);
	EXPECT_EQ(text_at(text_start + 5), breakpoint) << "the real probe is untouched";
	okprobe *batch[] = {&copy, &stranger, nullptr, &real, &real};
	EXPECT_EQ(table.unregister_probes(batch, 5), 4u) << "all but the first &real are unknown";
	EXPECT_EQ(text_at(text_start + 5), original_byte);
	EXPECT_EQ(kernel.retired, 1);
	EXPECT_EQ(copy.okp_site, copied_site) << "a struct the table does not hold is never written";
	EXPECT_EQ(real.okp_site, nullptr);
	okprobe *again[] = {&real};
	EXPECT_EQ(table.unregister_probes(again, 1), 1u) << "unregistering twice is ignored";
	// A garbage okp_site refuses registration: the struct was not zeroed.
	okprobe &dirty = probe_at(9);
	dirty.okp_site = reinterpret_cast<void *>(0x1);
	EXPECT_EQ(add(dirty), -22);
	EXPECT_EQ(text_at(text_start + 9), original_byte);
}

TEST_F(ProbeTableTest, RegisteringTwiceOrWithForeignFlagsIsRefused)
{
	okprobe &probe = probe_at(7);
	ASSERT_EQ(add(probe), 0);
	EXPECT_EQ(add(probe), -22);
	okprobe &gone_flag = probe_at(8);
	gone_flag.flags = OKPROBE_FLAG_GONE;
	EXPECT_EQ(add(gone_flag), -22);
}

TEST_F(ProbeTableTest, ACountingProbeHasNoHandlersAndItsAddressToItself)
{
	okprobe &with_handler = probe_at(0x10);
	with_handler.flags = OKPROBE_FLAG_COUNTER;
	EXPECT_EQ(add(with_handler), -22) << "a counting probe has no handlers";
	EXPECT_TRUE(kernel.counter_cells.empty());

	okprobe &counter = probe_at(0x10);
	counter.flags = OKPROBE_FLAG_COUNTER;
	counter.pre_handler = nullptr;
	ASSERT_EQ(add(counter), 0);
	EXPECT_EQ(kernel.counter_cells.size(), 1u);
	okprobe &beside = probe_at(0x10);
	EXPECT_EQ(add(beside), -16) << "no probe joins a counting probe";
	okprobe &second = probe_at(0x10);
	second.flags = OKPROBE_FLAG_COUNTER;
	second.pre_handler = nullptr;
	EXPECT_EQ(add(second), -16) << "nor another counting probe";

	okprobe &plain = probe_at(0x40);
	ASSERT_EQ(add(plain), 0);
	okprobe &late_counter = probe_at(0x40);
	late_counter.flags = OKPROBE_FLAG_COUNTER;
	late_counter.pre_handler = nullptr;
	EXPECT_EQ(add(late_counter), -16) << "a counting probe joins no other probe";
	EXPECT_EQ(kernel.counter_cells.size(), 1u) << "a refused counting probe keeps no cells";
}

TEST_F(ProbeTableTest, ACountingProbesCountIsItsBreakpointHitsPlusItsCells)
{
	okprobe &counter = probe_at(0x10);
	counter.flags = OKPROBE_FLAG_COUNTER;
	counter.pre_handler = nullptr;
	ASSERT_EQ(add(counter), 0);
	okp::Site *site = table.lookup(text_start + 0x10);
	ASSERT_NE(site, nullptr);
	EXPECT_TRUE(site->counting());
	site->hits[0].store(3, okp::Order::relaxed);	   // the breakpoint path's
	kernel.counter_cells.at(site->counter_cells) = 40; // the detour's
	unsigned long long count = 0;
	EXPECT_EQ(table.read_count(&counter, &count), 0);
	EXPECT_EQ(count, 43u);
	// A hit inside another probe's handler: counted, not missed.
	okp::ProbeTable::count_missed(*site);
	EXPECT_EQ(table.read_count(&counter, &count), 0);
	EXPECT_EQ(count, 44u);
	EXPECT_EQ(counter.nmissed, 0u);
	unsigned long listed = 0;
	table.for_each_line([&](const okp::ListLine &line) { listed = line.hits; });
	EXPECT_EQ(listed, 44u) << "okprobe/list shows the same count";
	okprobe *one[] = {&counter};
	table.unregister_probes(one, 1);
	EXPECT_TRUE(kernel.counter_cells.empty()) << "the cells go with the site";
	EXPECT_EQ(table.read_count(&counter, &count), -22) << "not registered any more";
}

TEST_F(ProbeTableTest, ProbesWithinAModulesMemoryAreFound)
{
	okprobe *probes[3] = {&probe_at(1), &probe_at(2), &probe_at(3)};
	for (okprobe *probe : probes)
		ASSERT_EQ(add(*probe), 0);
	okprobe *found[4] = {};
	const uint64_t start = reinterpret_cast<uint64_t>(probes[1]);
	EXPECT_EQ(table.probes_within(start, start + sizeof(okprobe), found, 4), 1u);
	EXPECT_EQ(found[0], probes[1]);
}

// ---- Jump optimization -------------------------------------------------------

TEST_F(ProbeTableTest, AnArmedProbeWaitsThenTheOptimizerPutsTheJumpIn)
{
	okprobe &probe = probe_at(0x10);
	ASSERT_EQ(add(probe), 0);
	EXPECT_EQ(jump_state(0x10), okp::JumpState::waiting);
	EXPECT_EQ(text_at(text_start + 0x10), breakpoint) << "the breakpoint first";
	EXPECT_GT(kernel.optimizer_scheduled, 0);
	okp::Site *site = table.lookup(text_start + 0x10);
	ASSERT_NE(site, nullptr);
	EXPECT_NE(site->current_detour(), nullptr) << "published: hits continue in its copy";
	reset_counters();
	run_optimizer();
	EXPECT_EQ(kernel.rcu_tasks, 1);
	EXPECT_EQ(jump_state(0x10), okp::JumpState::optimized);
	EXPECT_EQ(text_at(text_start + 0x10), jump_opcode);
	EXPECT_EQ(why_not(0x10), "");
	bool listed_optimized = false;
	table.for_each_line([&](const okp::ListLine &line) { listed_optimized = line.optimized; });
	EXPECT_TRUE(listed_optimized);
}

// An okretprobe at the exits is OKPROBE_FLAG_OPTIMIZED when all its exits'
// probes are: the glue hears of each one's flag as it changes.
TEST_F(ProbeTableTest, AReturnProbesExitTellsTheGlueOfItsJump)
{
	okprobe &exit = probe_at(0x10), &plain = probe_at(0x20);
	exit.pre_handler = okp_glue_return_exit_hit;
	ASSERT_EQ(add(exit), 0);
	ASSERT_EQ(add(plain), 0);
	exit_calls.clear();
	run_optimizer();
	ASSERT_EQ(jump_state(0x10), okp::JumpState::optimized);
	ASSERT_EQ(exit_calls.size(), 1u) << "the plain probe's jump is not told";
	EXPECT_EQ(exit_calls[0], std::make_pair(static_cast<const okprobe *>(&exit), 1));
	table.unregister_probes(std::array<okprobe *, 1>{&exit}.data(), 1);
	ASSERT_EQ(exit_calls.size(), 2u);
	EXPECT_EQ(exit_calls[1], std::make_pair(static_cast<const okprobe *>(&exit), 0));
}

// The detour runs the pre_handler itself only where one active probe with
// just a pre_handler is all the site has when the detour is built
// (core/direct_hit.hpp); the offsets it is given are the site's and the
// probe's own fields.
TEST_F(ProbeTableTest, TheDetourCallsASoleProbesPreHandlerDirectly)
{
	okprobe &sole = probe_at(0x10);
	ASSERT_EQ(add(sole), 0);
	okp::Site *site = table.lookup(text_start + 0x10);
	ASSERT_NE(site, nullptr);
	const okp::DirectHit direct = kernel.direct_hits[site->address];
	ASSERT_TRUE(direct.wanted());
	EXPECT_EQ(direct.site, reinterpret_cast<uint64_t>(site));
	EXPECT_EQ(direct.probe, reinterpret_cast<uint64_t>(&sole));
	EXPECT_EQ(direct.handler, reinterpret_cast<uint64_t>(sole.pre_handler));
	const auto *base = reinterpret_cast<const uint8_t *>(site);
	EXPECT_EQ(base + direct.direct_probe, reinterpret_cast<const uint8_t *>(&site->direct_probe));
	EXPECT_EQ(base + direct.first_hits, reinterpret_cast<const uint8_t *>(&site->hits[0]));
	EXPECT_EQ(reinterpret_cast<const uint8_t *>(&sole) + direct.probe_handler,
		  reinterpret_cast<const uint8_t *>(&sole.pre_handler));
	EXPECT_EQ(site->direct_probe.load(okp::Order::relaxed), &sole) << "the gate open for it";

	okprobe &with_post = probe_at(0x20);
	with_post.post_handler = post_handler;
	ASSERT_EQ(add(with_post), 0);
	EXPECT_EQ(kernel.direct_hits.count(text_start + 0x20), 0u) << "a post_handler: no jump at all";

	okprobe &first = probe_at(0x30), &second = probe_at(0x30);
	first.flags = OKPROBE_FLAG_DISABLED;
	ASSERT_EQ(add(first), 0);
	EXPECT_EQ(kernel.direct_hits.count(text_start + 0x30), 0u) << "disabled: no detour";
	ASSERT_TRUE(table.lookup(text_start + 0x30));
	ASSERT_EQ(add(second), 0);
	EXPECT_FALSE(kernel.direct_hits[text_start + 0x30].wanted()) << "two probes: the core runs both";
}

// The gate a direct detour checks (Site::direct_probe) is open, for
// probes[0], exactly while the detour may call it by itself: closed by a
// second probe, a post_handler, disabling, lost text, everything
// disarmed, and before the probe leaves (so that its grace period covers
// the direct calls too).
TEST_F(ProbeTableTest, TheDirectGateFollowsEverythingTheDetourNoLongerChecks)
{
	okprobe &sole = probe_at(0x10);
	ASSERT_EQ(add(sole), 0);
	okp::Site *site = table.lookup(text_start + 0x10);
	ASSERT_NE(site, nullptr);
	auto gate = [&] { return site->direct_probe.load(okp::Order::relaxed); };
	EXPECT_EQ(gate(), &sole);

	okprobe &second = probe_at(0x10);
	ASSERT_EQ(add(second), 0);
	EXPECT_EQ(gate(), nullptr) << "two probes";
	okprobe *leaving[] = {&second};
	table.unregister_probes(leaving, 1);
	EXPECT_EQ(gate(), &sole) << "alone again";

	ASSERT_EQ(table.set_probe_enabled(&sole, false), 0);
	EXPECT_EQ(gate(), nullptr) << "disabled";
	ASSERT_EQ(table.set_probe_enabled(&sole, true), 0);
	EXPECT_EQ(gate(), &sole);

	okprobe *all[] = {&sole};
	ASSERT_EQ(table.disable_probes(all, 1), 0);
	EXPECT_EQ(gate(), nullptr) << "disabled in a batch";
	ASSERT_EQ(table.set_probe_enabled(&sole, true), 0);

	table.set_all_enabled(false);
	EXPECT_EQ(gate(), nullptr) << "everything disarmed";
	table.set_all_enabled(true);
	EXPECT_EQ(gate(), &sole);

	okprobe &with_post = probe_at(0x20);
	with_post.post_handler = post_handler;
	ASSERT_EQ(add(with_post), 0);
	EXPECT_EQ(table.lookup(text_start + 0x20)->direct_probe.load(okp::Order::relaxed), nullptr) << "a post_handler";

	// The arch marks the text lost the moment it finds it changed; the
	// lost-text tests follow the site from there.
	okp::mark_lost(*site, "changed");
	EXPECT_EQ(gate(), nullptr) << "lost text";
	site->lost.store(nullptr, okp::Order::relaxed);
}

TEST_F(ProbeTableTest, ASitePublishedDuringTheGracePeriodWaitsForTheNextOne)
{
	okprobe &early = probe_at(0x10), &late = probe_at(0x40);
	ASSERT_EQ(add(early), 0);
	const uint64_t generation = table.optimizer_begin();
	ASSERT_NE(generation, 0u);
	ASSERT_EQ(add(late), 0); // while the grace period runs
	table.optimizer_finish(generation);
	EXPECT_EQ(jump_state(0x10), okp::JumpState::optimized);
	EXPECT_EQ(jump_state(0x40), okp::JumpState::waiting) << "its grace period has not started yet";
	run_optimizer();
	EXPECT_EQ(jump_state(0x40), okp::JumpState::optimized);
}

TEST_F(ProbeTableTest, DisablingAnOptimizedProbeRestoresTheTextAndFreesTheDetourAfterAGracePeriod)
{
	okprobe &probe = probe_at(0x10);
	ASSERT_EQ(add(probe), 0);
	run_optimizer();
	ASSERT_EQ(jump_state(0x10), okp::JumpState::optimized);
	ASSERT_EQ(table.set_probe_enabled(&probe, false), 0);
	for (uint64_t i = 0; i < fake_region; ++i)
		EXPECT_EQ(text_at(text_start + 0x10 + i), original_byte);
	EXPECT_EQ(jump_state(0x10), okp::JumpState::breakpoint);
	EXPECT_EQ(kernel.detours_freed, 0) << "a task may still be inside it";
	reset_counters();
	run_optimizer();
	EXPECT_EQ(kernel.rcu_tasks, 1);
	EXPECT_EQ(kernel.detours_freed, 1);
	ASSERT_EQ(table.set_probe_enabled(&probe, true), 0);
	EXPECT_EQ(jump_state(0x10), okp::JumpState::waiting);
	run_optimizer();
	EXPECT_EQ(text_at(text_start + 0x10), jump_opcode);
}

TEST_F(ProbeTableTest, APostHandlerTakesTheSiteBackToABreakpointBeforeItIsPublished)
{
	okprobe &plain = probe_at(0x20), &with_post = probe_at(0x20);
	with_post.post_handler = post_handler;
	ASSERT_EQ(add(plain), 0);
	run_optimizer();
	ASSERT_EQ(jump_state(0x20), okp::JumpState::optimized);
	ASSERT_EQ(add(with_post), 0);
	EXPECT_EQ(jump_state(0x20), okp::JumpState::breakpoint);
	EXPECT_EQ(text_at(text_start + 0x20), breakpoint);
	EXPECT_EQ(text_at(text_start + 0x21), original_byte);
	EXPECT_EQ(why_not(0x20), "a probe at the address has a post_handler");
	run_optimizer();
	EXPECT_EQ(jump_state(0x20), okp::JumpState::breakpoint) << "never optimized while it has a post_handler";
	okprobe *batch[] = {&with_post};
	table.unregister_probes(batch, 1);
	EXPECT_EQ(jump_state(0x20), okp::JumpState::waiting);
}

TEST_F(ProbeTableTest, ABreakpointFlagKeepsTheSiteABreakpoint)
{
	okprobe &one_shot = probe_at(0x20);
	one_shot.flags = OKPROBE_FLAG_BREAKPOINT;
	ASSERT_EQ(add(one_shot), 0);
	run_optimizer();
	EXPECT_EQ(jump_state(0x20), okp::JumpState::breakpoint) << "never optimized";
	EXPECT_EQ(text_at(text_start + 0x20), breakpoint);
	EXPECT_EQ(why_not(0x20), "a probe at the address keeps its breakpoint (OKPROBE_FLAG_BREAKPOINT)");
	// A plain probe at an optimized site: the flag's probe takes it back.
	okprobe &plain = probe_at(0x40), &late = probe_at(0x40);
	late.flags = OKPROBE_FLAG_BREAKPOINT | OKPROBE_FLAG_DISABLED;
	ASSERT_EQ(add(plain), 0);
	ASSERT_EQ(add(late), 0);
	run_optimizer();
	ASSERT_EQ(jump_state(0x40), okp::JumpState::optimized) << "disabled, it asks for nothing";
	ASSERT_EQ(table.set_probe_enabled(&late, true), 0);
	EXPECT_EQ(text_at(text_start + 0x40), breakpoint);
	run_optimizer();
	EXPECT_EQ(jump_state(0x40), okp::JumpState::breakpoint);
}

TEST_F(ProbeTableTest, DisablingABatchTakesItsBreakpointsOutInOneWrite)
{
	okprobe *batch[10];
	for (int i = 0; i < 10; ++i) {
		batch[i] = &probe_at(8 * i);
		batch[i]->flags = OKPROBE_FLAG_BREAKPOINT;
		ASSERT_EQ(add(*batch[i]), 0);
	}
	// A second probe at the sixth site stays enabled: its breakpoint stays.
	okprobe &stays = probe_at(40);
	ASSERT_EQ(add(stays), 0);
	kernel.text_writes = kernel.text_batches = 0;
	okprobe *with_twice[11];
	for (int i = 0; i < 10; ++i)
		with_twice[i] = batch[i];
	with_twice[10] = batch[3]; // a probe twice: its site once
	EXPECT_EQ(table.disable_probes(with_twice, 11), 0);
	EXPECT_EQ(kernel.text_batches, 1) << "the breakpoints come out in one synchronized write";
	EXPECT_EQ(kernel.text_writes, 0) << "no breakpoint comes out on its own";
	for (int i = 0; i < 10; ++i)
		EXPECT_EQ(text_at(text_start + 8 * i), i == 5 ? breakpoint : original_byte) << i;
	// Enabled again, each is armed again; unregistered, the text is whole.
	ASSERT_EQ(table.set_probe_enabled(batch[2], true), 0);
	EXPECT_EQ(text_at(text_start + 16), breakpoint);
	table.unregister_probes(batch, 10);
	okprobe *last[] = {&stays};
	table.unregister_probes(last, 1);
	for (int i = 0; i < 10; ++i)
		EXPECT_EQ(text_at(text_start + 8 * i), original_byte) << i;
}

TEST_F(ProbeTableTest, AProbeInsideTheJumpsRegionUnoptimizesItFirst)
{
	okprobe &outer = probe_at(0x30), &inner = probe_at(0x32);
	ASSERT_EQ(add(outer), 0);
	run_optimizer();
	ASSERT_EQ(jump_state(0x30), okp::JumpState::optimized);
	ASSERT_EQ(add(inner), 0) << "checked against the original text, not the jump";
	EXPECT_EQ(text_at(text_start + 0x30), breakpoint);
	EXPECT_EQ(text_at(text_start + 0x31), original_byte);
	EXPECT_EQ(text_at(text_start + 0x32), breakpoint) << "the inner probe's own breakpoint";
	EXPECT_EQ(jump_state(0x30), okp::JumpState::breakpoint);
	EXPECT_EQ(why_not(0x30), "another probe lies inside the jump's region");
	okprobe *batch[] = {&inner};
	table.unregister_probes(batch, 1);
	EXPECT_EQ(jump_state(0x30), okp::JumpState::waiting) << "free to jump again";
}

TEST_F(ProbeTableTest, TheSysctlUnoptimizesEverythingAndBack)
{
	okprobe &a = probe_at(0x10), &b = probe_at(0x40);
	ASSERT_EQ(add(a), 0);
	ASSERT_EQ(add(b), 0);
	run_optimizer();
	okp_core_set_optimization(0);
	table.optimization_changed();
	EXPECT_EQ(text_at(text_start + 0x10), breakpoint);
	EXPECT_EQ(text_at(text_start + 0x40), breakpoint);
	EXPECT_EQ(jump_state(0x10), okp::JumpState::breakpoint);
	EXPECT_EQ(why_not(0x40), "optimization is off (debug.kprobes_optimization=0)");
	okprobe &c = probe_at(0x60);
	ASSERT_EQ(add(c), 0);
	EXPECT_EQ(jump_state(0x60), okp::JumpState::breakpoint) << "new probes stay breakpoints";
	okp_core_set_optimization(1);
	table.optimization_changed();
	run_optimizer();
	EXPECT_EQ(text_at(text_start + 0x10), jump_opcode);
	EXPECT_EQ(text_at(text_start + 0x60), jump_opcode);
}

TEST_F(ProbeTableTest, TurningOptimizationOnOnlyQueuesTheDetoursForTheOptimizer)
{
	okp_core_set_optimization(0);
	okprobe &a = probe_at(0x10), &b = probe_at(0x30);
	ASSERT_EQ(add(a), 0);
	ASSERT_EQ(add(b), 0);
	EXPECT_EQ(kernel.detours_created, 0);
	okp_core_set_optimization(1);
	kernel.optimizer_scheduled = 0;
	table.optimization_changed();
	EXPECT_EQ(kernel.detours_created, 0) << "the sysctl write built a detour";
	EXPECT_EQ(kernel.optimizer_scheduled, 1) << "the optimizer is scheduled once, not once a site";
	EXPECT_EQ(jump_state(0x10), okp::JumpState::waiting) << "listed as waiting for the optimizer";
	EXPECT_EQ(text_at(text_start + 0x10), breakpoint);
	run_optimizer();
	EXPECT_EQ(kernel.detours_created, 2);
	EXPECT_EQ(jump_state(0x10), okp::JumpState::optimized);
	EXPECT_EQ(jump_state(0x30), okp::JumpState::optimized);
	// Off again: the jumps are out when the write returns, as the
	// kernel's sysctl does.
	okp_core_set_optimization(0);
	table.optimization_changed();
	EXPECT_EQ(text_at(text_start + 0x10), breakpoint);
	EXPECT_EQ(jump_state(0x10), okp::JumpState::breakpoint);
}

// The optimizer's passes walk its staging lists, as the kernel's optimizer
// walks its optimizing_list: a site joins when it waits and leaves once its
// jump is in, so a pass after one more registration meets that one site,
// however many are optimized already.
TEST_F(ProbeTableTest, AnOptimizerPassMeetsOnlyTheSitesWaitingForIt)
{
	const uint64_t offsets[] = {0x10, 0x30, 0x50};
	for (uint64_t offset : offsets)
		ASSERT_EQ(add(probe_at(offset)), 0);
	EXPECT_EQ(table.waiting_sites(), 3u);
	EXPECT_TRUE(table.staging_lists_consistent());
	run_optimizer();
	EXPECT_EQ(table.waiting_sites(), 0u) << "an optimized site left the list";
	for (uint64_t offset : offsets)
		EXPECT_EQ(jump_state(offset), okp::JumpState::optimized);
	EXPECT_EQ(table.optimizer_begin(), 0u) << "nothing staged, no pass";
	ASSERT_EQ(add(probe_at(0x70)), 0);
	EXPECT_EQ(table.waiting_sites(), 1u);
	// The sysctl off and on: every site queued for a detour, once.
	okp_core_set_optimization(0);
	table.optimization_changed();
	EXPECT_EQ(table.waiting_sites(), 0u);
	okp_core_set_optimization(1);
	table.optimization_changed();
	EXPECT_EQ(table.queued_sites(), 4u);
	EXPECT_TRUE(table.staging_lists_consistent());
	run_optimizer();
	EXPECT_EQ(table.queued_sites(), 0u);
	EXPECT_EQ(table.waiting_sites(), 0u);
	EXPECT_EQ(jump_state(0x70), okp::JumpState::optimized);
}

// What a return probe at the exits asks before it puts probes there: the
// refusal a site at the address has or would get, with no site made.
TEST_F(ProbeTableTest, APlannedJumpRefusalIsWhatASiteThereWouldSay)
{
	kernel.unplannable[text_start + 0x50] = "the function jumps indirectly";
	EXPECT_EQ(table.planned_jump_refusal(text_start + 0x40), nullptr);
	EXPECT_STREQ(table.planned_jump_refusal(text_start + 0x50), "the function jumps indirectly");
	EXPECT_EQ(table.lookup(text_start + 0x40), nullptr) << "no site is left behind";
	okprobe &inside = probe_at(0x42);
	ASSERT_EQ(add(inside), 0);
	EXPECT_STREQ(table.planned_jump_refusal(text_start + 0x40), "another probe lies inside the jump's region");
	okprobe &refused = probe_at(0x50);
	ASSERT_EQ(add(refused), 0);
	EXPECT_STREQ(table.planned_jump_refusal(text_start + 0x50), "the function jumps indirectly")
		<< "an existing site's own plan";
}

TEST_F(ProbeTableTest, AnUnplannableSiteStaysABreakpointAndSaysWhy)
{
	kernel.unplannable[text_start + 0x50] = "the function jumps indirectly";
	okprobe &probe = probe_at(0x50);
	ASSERT_EQ(add(probe), 0);
	run_optimizer();
	EXPECT_EQ(jump_state(0x50), okp::JumpState::breakpoint);
	EXPECT_EQ(why_not(0x50), "the function jumps indirectly");
	EXPECT_EQ(text_at(text_start + 0x50), breakpoint);
}

TEST_F(ProbeTableTest, UnregisteringAnOptimizedProbeWaitsForRcuTasksBeforeFreeingItsDetour)
{
	okprobe &probe = probe_at(0x10);
	ASSERT_EQ(add(probe), 0);
	run_optimizer();
	reset_counters();
	okprobe *batch[] = {&probe};
	table.unregister_probes(batch, 1);
	EXPECT_EQ(text_at(text_start + 0x10), original_byte);
	EXPECT_EQ(kernel.rcu_tasks, 1);
	EXPECT_EQ(kernel.detours_freed, 1);
}

TEST_F(ProbeTableTest, UnregisteringABatchOfOptimizedProbesTakesTheirJumpsOutInOnePass)
{
	okprobe *batch[4];
	for (int i = 0; i < 3; ++i) {
		batch[i] = &probe_at(0x10 * (i + 1));
		ASSERT_EQ(add(*batch[i]), 0);
	}
	// A second probe on the first site: it goes too.
	batch[3] = &probe_at(0x10);
	ASSERT_EQ(add(*batch[3]), 0);
	run_optimizer();
	for (int i = 0; i < 3; ++i)
		ASSERT_EQ(jump_state(0x10 * (i + 1)), okp::JumpState::optimized);
	kernel.unoptimize_calls = 0;
	table.unregister_probes(batch, 4);
	EXPECT_EQ(kernel.unoptimize_calls, 1);
	for (int i = 0; i < 3; ++i)
		EXPECT_EQ(text_at(text_start + 0x10 * (i + 1)), original_byte);
	EXPECT_EQ(kernel.detours_freed, 3);
}

TEST_F(ProbeTableTest, DisablingABatchTakesTheirJumpsOutInOnePassAllOrNone)
{
	okprobe *batch[3];
	for (int i = 0; i < 3; ++i) {
		batch[i] = &probe_at(0x10 * (i + 1));
		ASSERT_EQ(add(*batch[i]), 0);
	}
	// Another probe on the third site stays enabled: its jump stays.
	okprobe &stays = probe_at(0x30);
	ASSERT_EQ(add(stays), 0);
	run_optimizer();
	for (int i = 0; i < 3; ++i)
		ASSERT_EQ(jump_state(0x10 * (i + 1)), okp::JumpState::optimized);
	// One not registered: nothing changes.
	okprobe &stranger = probe_at(0x40);
	okprobe *with_stranger[] = {batch[0], &stranger};
	kernel.unoptimize_calls = 0;
	EXPECT_EQ(table.disable_probes(with_stranger, 2), -okp::error::einval);
	EXPECT_FALSE(batch[0]->flags & OKPROBE_FLAG_DISABLED);
	EXPECT_EQ(kernel.unoptimize_calls, 0);
	EXPECT_EQ(table.disable_probes(batch, 3), 0);
	EXPECT_EQ(kernel.unoptimize_calls, 1);
	for (int i = 0; i < 3; ++i)
		EXPECT_TRUE(batch[i]->flags & OKPROBE_FLAG_DISABLED);
	EXPECT_EQ(text_at(text_start + 0x10), original_byte);
	EXPECT_EQ(text_at(text_start + 0x20), original_byte);
	EXPECT_EQ(jump_state(0x30), okp::JumpState::optimized);
	EXPECT_EQ(text_at(text_start + 0x30), jump_opcode);
	// Enabled again one by one, they jump again.
	for (int i = 0; i < 2; ++i)
		ASSERT_EQ(table.set_probe_enabled(batch[i], true), 0);
	run_optimizer();
	EXPECT_EQ(jump_state(0x10), okp::JumpState::optimized);
	EXPECT_EQ(jump_state(0x20), okp::JumpState::optimized);
}

TEST_F(ProbeTableTest, UnregisteringOneOfTwoProbesKeepsTheSitesJump)
{
	okprobe &first = probe_at(0x10), &second = probe_at(0x10);
	ASSERT_EQ(add(first), 0);
	ASSERT_EQ(add(second), 0);
	run_optimizer();
	ASSERT_EQ(jump_state(0x10), okp::JumpState::optimized);
	kernel.unoptimize_calls = 0;
	okprobe *batch[] = {&first};
	table.unregister_probes(batch, 1);
	EXPECT_EQ(kernel.unoptimize_calls, 0);
	EXPECT_EQ(jump_state(0x10), okp::JumpState::optimized);
	EXPECT_EQ(text_at(text_start + 0x10), jump_opcode);
}

TEST_F(ProbeTableTest, GoneTextLeavesItsJump)
{
	okprobe &probe = probe_at(0x10);
	ASSERT_EQ(add(probe), 0);
	run_optimizer();
	table.text_gone(text_start, text_start + 0x20);
	EXPECT_EQ(text_at(text_start + 0x10), original_byte);
	EXPECT_EQ(jump_state(0x10), okp::JumpState::breakpoint);
	run_optimizer();
	EXPECT_EQ(kernel.detours_freed, 1);
}

} // namespace

// ---- The fake arch and glue ---------------------------------------------------

namespace okp::arch {

// Sites get a fake slot (its two copies 0x20 apart) unless the test asks
// for an emulated instruction.
const char *prepare_site(Site &site, const uint8_t (&)[max_original_bytes])
{
	++kernel.created;
	if (!kernel.emulated.count(site.address))
		site.arch.slot = take_fake_slot(site.address);
	site.arch.boosted = !kernel.unboostable.count(site.address);
	return nullptr;
}

void release_site(Site &)
{
	++kernel.retired;
}

// One-byte instructions, one-byte breakpoints.
const uint8_t *breakpoint_bytes(const Site &, size_t *length)
{
	*length = 1;
	return &breakpoint;
}

size_t instruction_length(const Site &)
{
	return 1;
}

InstructionVerdict probe_rules(const uint8_t *function, size_t size, size_t offset, uint64_t address)
{
	return one_byte_rules(function, size, offset, address);
}

void release_resources() {}

const char *plan_jump(Site &site, const OriginalText &)
{
	const auto refused = kernel.unplannable.find(site.address);
	if (refused != kernel.unplannable.end())
		return refused->second;
	site.jump_region_length = fake_region;
	return nullptr;
}

const char *build_detour(Site &site, const DirectHit &direct, Detour &detour)
{
	++kernel.detours_created;
	kernel.direct_hits[site.address] = direct;
	EXPECT_TRUE(kernel.args_detours || !detour.args_record) << "an argument-only detour the arch cannot build";
	kernel.args_records[site.address] = detour.args_record;
	detour.code = 0x900000 + site.address;
	detour.copy = detour.code + 0x40;
	detour.size = 0x50;
	return nullptr;
}

bool has_args_detour()
{
	return kernel.args_detours;
}

void release_detour(const Detour &)
{
	++kernel.detours_freed;
}

void optimize(Site *const *sites, size_t count)
{
	for (size_t i = 0; i < count; ++i) {
		Site &site = *sites[i];
		if (text_at(site.address) != breakpoint) {
			mark_lost(site, "changed under the breakpoint");
			continue;
		}
		for (uint64_t b = 1; b < fake_region; ++b)
			text_at(site.address + b) = jump_operand;
		text_at(site.address) = jump_opcode;
		site.patched_bytes = fake_region;
	}
}

void unoptimize(Site *const *sites, size_t count)
{
	++kernel.unoptimize_calls;
	for (size_t i = 0; i < count; ++i) {
		Site &site = *sites[i];
		if (text_at(site.address) != jump_opcode) {
			mark_lost(site, "changed the jump");
			continue;
		}
		int published = 0;
		for (int slot = 0; slot < okp::max_probes_per_site; ++slot)
			published += site.probes[slot].load(okp::Order::relaxed) != nullptr;
		kernel.published_at_unoptimize[site.address] = published;
		text_at(site.address) = breakpoint;
		for (uint64_t b = 1; b < fake_region; ++b)
			text_at(site.address + b) = site.original[b];
		site.patched_bytes = 1;
	}
}

// The hit path's port: the trap reports the breakpoint's own address (as
// riscv does), an emulated instruction moves the pc on by one.
uint64_t trapped_address(const Registers &regs)
{
	return regs.pc;
}

void continue_at(Registers &regs, uint64_t address)
{
	regs.pc = address;
}

bool emulated(const Site &site)
{
	return site.arch.slot == 0;
}

void emulate(const Site &site, Registers &regs)
{
	++kernel.emulations;
	regs.pc = site.address + 1;
}

uint64_t boosted_copy(const Site &site)
{
	return site.arch.boosted ? site.arch.slot : 0;
}

uint64_t trapping_copy(const Site &site)
{
	return site.arch.slot ? site.arch.slot + fake_copy_distance : 0;
}

uint64_t next_instruction(const Site &site)
{
	return site.address + 1;
}

unsigned long block_interrupts(Registers &regs)
{
	const unsigned long saved = regs.interrupts;
	regs.interrupts = 0;
	return saved;
}

void restore_interrupts(Registers &regs, unsigned long saved)
{
	regs.interrupts |= saved;
}

bool breakpoint_in_text(uint64_t address)
{
	return text_at(address) == breakpoint;
}

void present_optimized_hit(const Site &site, Registers &regs)
{
	regs.pc = site.address;
}

uint64_t program_counter(const Registers &regs)
{
	return regs.pc;
}

// Where the fake registers hold the arguments (eight, as riscv), the stack
// pointer and the return value.
const events::RegisterLayout &event_register_layout()
{
	static constexpr events::RegisterLayout layout = [] {
		events::RegisterLayout fake;
		for (uint16_t i = 0; i < 8; ++i)
			fake.arguments[i] = offsetof(Registers, arguments) + 8 * i;
		fake.argument_count = 8;
		fake.stack_pointer = offsetof(Registers, stack_pointer);
		fake.return_value = offsetof(Registers, return_value);
		return fake;
	}();
	return layout;
}

void present_hit_at(Registers &regs, uint64_t address)
{
	regs.pc = address;
}

} // namespace okp::arch

constinit okp::ProbeTable okp::registered_probes;

extern "C" okp_cpu_state *okp_glue_cpu_state(void)
{
	return &kernel.cpu;
}

extern "C" int okp_glue_claim_function(unsigned long start, unsigned long size, const char **why)
{
	EXPECT_EQ(start, text_start);
	EXPECT_EQ(size, text_size);
	if (kernel.kernel_kprobe_in_function) {
		*why = "a kernel kprobe is in the function";
		return -16;
	}
	++kernel.claims[start];
	if (kernel.breakpoint_on_claim)
		text_at(kernel.breakpoint_on_claim) = breakpoint;
	return 0;
}

extern "C" void okp_glue_release_function(unsigned long start)
{
	EXPECT_GT(kernel.claims[start], 0) << "released more often than claimed";
	--kernel.claims[start];
}

// Registration's kernel facts: one function over the fake text, core
// kernel text, nothing blacklisted or reserved.
// The return-probe glue: the core knows an exit's probe by this
// pre_handler, and tells the glue of its misses and its jump.

extern "C" int okp_glue_return_exit_hit(okprobe *, pt_regs *)
{
	return 0;
}

extern "C" void okp_glue_return_exit_missed(okprobe *probe)
{
	exit_calls.emplace_back(probe, -1);
}

extern "C" void okp_glue_return_exit_optimized(okprobe *probe, int optimized)
{
	exit_calls.emplace_back(probe, optimized);
}

extern "C" unsigned long okp_glue_lookup_symbol(const char *name)
{
	return std::strcmp(name, "fake_function") == 0 ? text_start : 0;
}

extern "C" int okp_glue_function_of(unsigned long address, unsigned long *start, unsigned long *size)
{
	*start = text_start;
	*size = text_size;
	return address >= text_start && address < text_start + text_size;
}

extern "C" okp_text_kind okp_glue_text_kind(unsigned long)
{
	return OKP_TEXT_CORE;
}

extern "C" const char *okp_glue_kernel_blacklisted(unsigned long)
{
	return nullptr;
}

extern "C" const char *okp_glue_padding_symbol(unsigned long)
{
	return nullptr;
}

extern "C" const char *okp_glue_foreign_probe(unsigned long, unsigned long)
{
	return nullptr;
}

extern "C" const char *okp_glue_reserved(unsigned long, unsigned long)
{
	return nullptr;
}

extern "C" int okp_glue_has_exception_entry(unsigned long)
{
	return 0;
}

extern "C" unsigned long okp_glue_ftrace_site(unsigned long address, unsigned long *length)
{
	*length = 0;
	if ((!kernel.ftrace_site || address != kernel.ftrace_site) && !kernel.more_ftrace_sites.count(address))
		return 0;
	*length = 1;
	return address;
}

extern "C" int okp_glue_ftrace_supported(void)
{
	return 1;
}

extern "C" int okp_glue_ftrace_arm_many(const unsigned long *addresses, unsigned int count, int ipmodify)
{
	++kernel.ftrace_arm_passes;
	if (kernel.ftrace_arm_error)
		return kernel.ftrace_arm_error;
	for (unsigned int i = 0; ipmodify && i < count; ++i)
		if (kernel.ftrace_refused.count(addresses[i]))
			return -16; // all or nothing, as ftrace_set_filter_ips()
	for (unsigned int i = 0; i < count; ++i) {
		EXPECT_EQ(kernel.ftrace_armed[0][addresses[i]] + kernel.ftrace_armed[1][addresses[i]], 0)
			<< "armed twice";
		++kernel.ftrace_armed[ipmodify ? 1 : 0][addresses[i]];
	}
	return 0;
}

extern "C" void okp_glue_entry_unarmed(unsigned long address, const char *, const char *)
{
	++kernel.entries_unarmed[address];
}

extern "C" void okp_glue_ftrace_disarm_many(const unsigned long *addresses, unsigned int count, int ipmodify)
{
	++kernel.ftrace_disarm_passes;
	for (unsigned int i = 0; i < count; ++i) {
		EXPECT_EQ(kernel.ftrace_armed[ipmodify ? 1 : 0][addresses[i]], 1) << "disarmed through the other ops";
		--kernel.ftrace_armed[ipmodify ? 1 : 0][addresses[i]];
	}
}

// A clock that moves 100 ns each time it is read.
extern "C" unsigned long okp_glue_now_ns(void)
{
	static unsigned long now;
	return now += 100;
}

// The kernel's copy_from_kernel_nofault: the fake text, or (the table
// reading a client's struct) host memory.
extern "C" unsigned long okp_glue_read_text(unsigned long address, void *buffer, unsigned long size)
{
	if (address >= text_start && address < text_start + text_size) {
		unsigned long n = 0;
		for (; n < size && address + n < text_start + text_size; ++n)
			static_cast<uint8_t *>(buffer)[n] = text_at(address + n);
		return n;
	}
	std::memcpy(buffer, reinterpret_cast<const void *>(address), size);
	return size;
}

// The breakpoint writes of the generic arm/disarm, into the fake text.
extern "C" void okp_glue_text_write(unsigned long address, const void *bytes, unsigned long length)
{
	for (unsigned long i = 0; i < length; ++i)
		text_at(address + i) = static_cast<const uint8_t *>(bytes)[i];
	if (length == 1 && text_at(address) == breakpoint)
		++kernel.arms[address];
	++kernel.text_writes;
}

// One synchronization of every CPU for the batch.
extern "C" void okp_glue_text_write_batch(const okp_text_patch *patches, unsigned long count)
{
	for (unsigned long i = 0; i < count; ++i)
		for (unsigned long b = 0; b < patches[i].length; ++b)
			text_at(patches[i].address + b) = static_cast<const uint8_t *>(patches[i].bytes)[b];
	++kernel.text_batches;
}

extern "C" void okp_glue_schedule_optimizer(void)
{
	++kernel.optimizer_scheduled;
}

extern "C" unsigned long okp_glue_counter_cells_alloc(void)
{
	static unsigned long next = 0x1000;
	next += 8;
	kernel.counter_cells[next] = 0;
	return next;
}

extern "C" void okp_glue_counter_cells_free(unsigned long cells)
{
	EXPECT_EQ(kernel.counter_cells.erase(cells), 1u) << "freed cells never handed out, or twice";
}

extern "C" unsigned long long okp_glue_counter_cells_sum(unsigned long cells)
{
	return kernel.counter_cells.at(cells);
}

// Both grace periods at once count as one of each.
extern "C" void okp_glue_synchronize(unsigned int graces)
{
	EXPECT_NE(graces & (OKP_GRACE_RCU | OKP_GRACE_TASKS), 0u) << "a wait for no grace period";
	EXPECT_EQ(graces & ~static_cast<unsigned int>(OKP_GRACE_RCU | OKP_GRACE_TASKS), 0u)
		<< "an unknown grace period";
	kernel.rcu += (graces & OKP_GRACE_RCU) != 0;
	kernel.rcu_tasks += (graces & OKP_GRACE_TASKS) != 0;
}

extern "C" void okp_glue_text_lost(unsigned long address, const char *, const char *)
{
	++kernel.lost[address];
	++kernel.pins;
}

extern "C" void okp_glue_lost_text_released(unsigned long, const char *)
{
	--kernel.pins;
}

extern "C" void okp_glue_describe(unsigned long address, char *buffer, unsigned long size)
{
	std::snprintf(buffer, size, "fake_function+0x%lx/0x%lx", address - text_start,
		      static_cast<unsigned long>(text_size));
}

TEST_F(ProbeTableTest, TextChangedUnderTheBreakpointIsLeftAloneAndReportedOnce)
{
	okprobe &probe = probe_at(0x30);
	ASSERT_EQ(add(probe), 0);
	text_at(text_start + 0x30) = 0x55; // someone else's byte over the int3
	ASSERT_EQ(table.set_probe_enabled(&probe, false), 0);
	EXPECT_EQ(text_at(text_start + 0x30), 0x55) << "okprobe wrote over someone else's byte";
	EXPECT_TRUE(probe.flags & OKPROBE_FLAG_LOST);
	EXPECT_TRUE(listed_lost(0x30));
	EXPECT_EQ(kernel.lost[text_start + 0x30], 1);
	EXPECT_EQ(kernel.pins, 1);
	ASSERT_EQ(table.set_probe_enabled(&probe, true), 0);
	EXPECT_EQ(text_at(text_start + 0x30), 0x55) << "no write once lost";
	EXPECT_EQ(kernel.lost[text_start + 0x30], 1) << "one log line";
	// Nor may anyone prove anything in the function any more.
	okprobe &neighbour = probe_at(0x40);
	EXPECT_EQ(add(neighbour), -16);

	// Unregistered while the text is someone else's: the site stays (the
	// handler may still meet okprobe's breakpoint), the module pinned.
	okprobe *batch[] = {&probe};
	table.unregister_probes(batch, 1);
	EXPECT_EQ(text_at(text_start + 0x30), 0x55);
	EXPECT_NE(table.lookup(text_start + 0x30), nullptr);
	EXPECT_EQ(kernel.retired, 0);
	EXPECT_EQ(kernel.pins, 1);
	EXPECT_TRUE(listed_lost(0x30));
	// Once it is the original again, the next unregistration (or a write
	// of debugfs enabled) lets it go.
	table.unregister_probes(nullptr, 0);
	EXPECT_EQ(kernel.pins, 1) << "still someone else's";
	text_at(text_start + 0x30) = original_byte;
	table.set_all_enabled(true);
	EXPECT_EQ(table.lookup(text_start + 0x30), nullptr);
	EXPECT_EQ(kernel.retired, 1);
	EXPECT_EQ(kernel.pins, 0);
}

TEST_F(ProbeTableTest, ALostSiteIsReleasedWhenItsTextIsTheOriginalAgain)
{
	okprobe &probe = probe_at(0x30);
	ASSERT_EQ(add(probe), 0);
	text_at(text_start + 0x30) = original_byte; // someone "restored" it
	ASSERT_EQ(table.set_probe_enabled(&probe, false), 0);
	EXPECT_TRUE(probe.flags & OKPROBE_FLAG_LOST);
	EXPECT_EQ(kernel.pins, 1);
	okprobe *batch[] = {&probe};
	table.unregister_probes(batch, 1);
	EXPECT_EQ(table.lookup(text_start + 0x30), nullptr);
	EXPECT_EQ(kernel.retired, 1);
	EXPECT_EQ(kernel.pins, 0);
	okprobe &again = probe_at(0x30);
	EXPECT_EQ(add(again), 0) << "the function is okprobe's to prove again";
}

TEST_F(ProbeTableTest, AChangedJumpIsLeftAloneItsDetourKeptAndNeverShownOptimized)
{
	okprobe &probe = probe_at(0x50);
	ASSERT_EQ(add(probe), 0);
	run_optimizer();
	ASSERT_EQ(jump_state(0x50), okp::JumpState::optimized);
	ASSERT_TRUE(probe.flags & OKPROBE_FLAG_OPTIMIZED);
	for (uint64_t i = 0; i < fake_region; ++i) // someone put the original back
		text_at(text_start + 0x50 + i) = original_byte;
	okp_core_set_optimization(0);
	table.optimization_changed();
	EXPECT_TRUE(probe.flags & OKPROBE_FLAG_LOST);
	EXPECT_FALSE(probe.flags & OKPROBE_FLAG_OPTIMIZED);
	EXPECT_TRUE(listed_lost(0x50));
	bool shown_optimized = true;
	table.for_each_line([&](const okp::ListLine &line) { shown_optimized = line.optimized; });
	EXPECT_FALSE(shown_optimized);
	run_optimizer();
	EXPECT_EQ(kernel.detours_freed, 0) << "the text may still lead into it";
	okp_core_set_optimization(1);
	table.optimization_changed();
	run_optimizer();
	for (uint64_t i = 0; i < fake_region; ++i)
		EXPECT_EQ(text_at(text_start + 0x50 + i), original_byte) << "no jump over someone else's text";
	okprobe *batch[] = {&probe};
	table.unregister_probes(batch, 1);
	EXPECT_EQ(kernel.detours_freed, 1) << "released with its site";
	EXPECT_EQ(kernel.pins, 0);
}

// ---- The hit path (src/core/hit_path.cpp) over the fake arch's port ----------

namespace {

struct HitLog {
	int pre = 0, post = 0;
	uint64_t pre_pc = 0, post_pc = 0;
	uint64_t interrupts_in_post = 0;
	// A pre_handler that hits this breakpoint itself (as a handler calling
	// a probed function does), or 0.
	uint64_t nested_hit = 0;
	okp::arch::Registers nested_regs = {};
	int nested_result = -1;
} hit_log;

okp::arch::Registers &registers_of(pt_regs *regs)
{
	return *reinterpret_cast<okp::arch::Registers *>(regs);
}

int logging_pre_handler(okprobe *, pt_regs *regs)
{
	++hit_log.pre;
	hit_log.pre_pc = registers_of(regs).pc;
	if (hit_log.nested_hit) {
		hit_log.nested_regs = {hit_log.nested_hit, 1};
		hit_log.nested_hit = 0;
		hit_log.nested_result = okp_core_breakpoint(&hit_log.nested_regs);
	}
	return 0;
}

void logging_post_handler(okprobe *, pt_regs *regs, unsigned long)
{
	++hit_log.post;
	hit_log.post_pc = registers_of(regs).pc;
	hit_log.interrupts_in_post = registers_of(regs).interrupts;
}

// A breakpoint trap at address, interrupts on in the interrupted context.
int trap_at(uint64_t address, okp::arch::Registers &regs)
{
	regs = {address, 1};
	return okp_core_breakpoint(&regs);
}

} // namespace

class HitPathTest : public ProbeTableTest {
protected:
	void SetUp() override
	{
		ProbeTableTest::SetUp();
		hit_log = HitLog{};
		// Breakpoints only, but where a test publishes a detour itself.
		okp_core_set_optimization(0);
	}

	okprobe &logged_probe(uint64_t offset, bool post)
	{
		okprobe &probe = probe_at(offset);
		probe.pre_handler = logging_pre_handler;
		if (post)
			probe.post_handler = logging_post_handler;
		return probe;
	}
};

TEST_F(HitPathTest, AHitWithoutPostHandlersRunsThePreHandlerAndLeavesThroughTheBoostedCopy)
{
	ASSERT_EQ(add(logged_probe(5, false)), 0);
	okp::arch::Registers regs;
	EXPECT_EQ(trap_at(text_start + 5, regs), 1);
	EXPECT_EQ(hit_log.pre, 1);
	EXPECT_EQ(hit_log.pre_pc, text_start + 5) << "the handler sees the probed address";
	EXPECT_EQ(regs.pc, fake_slot_of(text_start + 5));
	EXPECT_EQ(regs.interrupts, 1u);
	EXPECT_EQ(kernel.cpu.active_site, nullptr);
}

TEST_F(HitPathTest, APostHandlerRunsAfterTheTrappingCopyWithInterruptsBlockedUntilThen)
{
	ASSERT_EQ(add(logged_probe(5, true)), 0);
	okp::arch::Registers regs;
	EXPECT_EQ(trap_at(text_start + 5, regs), 1);
	const uint64_t copy = fake_slot_of(text_start + 5) + fake_copy_distance;
	EXPECT_EQ(regs.pc, copy);
	EXPECT_EQ(regs.interrupts, 0u) << "no interrupt while the copy runs";
	EXPECT_EQ(hit_log.post, 0);
	EXPECT_NE(kernel.cpu.active_site, nullptr);
	// The copy ran: its trailing breakpoint traps.
	okp::arch::Registers after = {copy + 1, regs.interrupts};
	EXPECT_EQ(okp_core_breakpoint(&after), 1);
	EXPECT_EQ(hit_log.post, 1);
	EXPECT_EQ(hit_log.post_pc, text_start + 6) << "the post_handler sees the next instruction";
	EXPECT_EQ(hit_log.interrupts_in_post, 1u);
	EXPECT_EQ(after.pc, text_start + 6);
	EXPECT_EQ(kernel.cpu.active_site, nullptr);
}

// A sole pre_handler-only probe skips the snapshot (hit_path.cpp): its
// trapping copy's post trap must not run what an earlier hit's snapshot
// on this CPU held.
TEST_F(HitPathTest, ASoleProbesTrappingCopyRunsNoEarlierHitsPostHandler)
{
	ASSERT_EQ(add(logged_probe(5, true)), 0);
	kernel.unboostable.insert(text_start + 9);
	okprobe &sole = logged_probe(9, false);
	ASSERT_EQ(add(sole), 0);
	okp::arch::Registers regs;
	ASSERT_EQ(trap_at(text_start + 5, regs), 1);
	okp::arch::Registers after = {regs.pc + 1, regs.interrupts};
	ASSERT_EQ(okp_core_breakpoint(&after), 1);
	ASSERT_EQ(hit_log.post, 1);
	EXPECT_EQ(trap_at(text_start + 9, regs), 1);
	EXPECT_EQ(hit_log.pre, 2);
	const uint64_t copy = fake_slot_of(text_start + 9) + fake_copy_distance;
	EXPECT_EQ(regs.pc, copy) << "the trapping copy";
	EXPECT_EQ(regs.interrupts, 0u);
	after = {copy + 1, regs.interrupts};
	EXPECT_EQ(okp_core_breakpoint(&after), 1);
	EXPECT_EQ(hit_log.post, 1) << "the earlier hit's post_handler ran again";
	EXPECT_EQ(after.pc, text_start + 10);
	EXPECT_EQ(after.interrupts, 1u);
	EXPECT_EQ(kernel.cpu.active_site, nullptr);
	const okp::Site *site = table.lookup(text_start + 9);
	ASSERT_NE(site, nullptr);
	EXPECT_EQ(site->hits[0].load(okp::Order::relaxed), 1u);
}

TEST_F(HitPathTest, AnEmulatedInstructionRunsBothHandlersInOneTrap)
{
	kernel.emulated.insert(text_start + 7);
	ASSERT_EQ(add(logged_probe(7, true)), 0);
	okp::arch::Registers regs;
	EXPECT_EQ(trap_at(text_start + 7, regs), 1);
	EXPECT_EQ(kernel.emulations, 1);
	EXPECT_EQ(hit_log.pre, 1);
	EXPECT_EQ(hit_log.post, 1);
	EXPECT_EQ(regs.pc, text_start + 8);
	EXPECT_EQ(kernel.cpu.active_site, nullptr);
}

TEST_F(HitPathTest, AProbeHitInsideAHandlerIsOnlyCountedAsMissed)
{
	okprobe &outer = logged_probe(5, false), &inner = logged_probe(9, false);
	ASSERT_EQ(add(outer), 0);
	ASSERT_EQ(add(inner), 0);
	hit_log.nested_hit = text_start + 9;
	okp::arch::Registers regs;
	EXPECT_EQ(trap_at(text_start + 5, regs), 1);
	EXPECT_EQ(hit_log.nested_result, 1);
	EXPECT_EQ(hit_log.pre, 1) << "the inner pre_handler must not run";
	EXPECT_EQ(inner.nmissed, 1u);
	EXPECT_EQ(outer.nmissed, 0u);
	EXPECT_EQ(hit_log.nested_regs.pc, fake_slot_of(text_start + 9)) << "its instruction still runs";
}

// A return probe at the exits counts the returns its exits' probes miss
// (okretprobe.nmissed): the core tells the glue, and only for those.
TEST_F(HitPathTest, AMissedHitOfAReturnProbesExitIsToldToTheGlue)
{
	okprobe &outer = logged_probe(5, false), &exit = probe_at(9), &plain = probe_at(12);
	exit.pre_handler = okp_glue_return_exit_hit;
	ASSERT_EQ(add(outer), 0);
	ASSERT_EQ(add(exit), 0);
	ASSERT_EQ(add(plain), 0);
	exit_calls.clear();
	okp::arch::Registers regs;
	hit_log.nested_hit = text_start + 9;
	EXPECT_EQ(trap_at(text_start + 5, regs), 1);
	hit_log.nested_hit = text_start + 12;
	EXPECT_EQ(trap_at(text_start + 5, regs), 1);
	EXPECT_EQ(exit.nmissed, 1u);
	EXPECT_EQ(plain.nmissed, 1u);
	ASSERT_EQ(exit_calls.size(), 1u) << "only the exit's miss is told";
	EXPECT_EQ(exit_calls[0], std::make_pair(static_cast<const okprobe *>(&exit), -1));
}

TEST_F(HitPathTest, AHandlerHittingItsOwnUnboostableSiteGetsThePostTrapsInOrder)
{
	// As riscv's sites whose copy has no way back: the nested hit runs the
	// same trapping copy, and its post trap comes before the outer one's.
	kernel.unboostable.insert(text_start + 5);
	okprobe &probe = logged_probe(5, true);
	ASSERT_EQ(add(probe), 0);
	hit_log.nested_hit = text_start + 5;
	okp::arch::Registers regs;
	EXPECT_EQ(trap_at(text_start + 5, regs), 1);
	const uint64_t post_trap = fake_slot_of(text_start + 5) + fake_copy_distance + 1;
	EXPECT_EQ(hit_log.nested_regs.pc, post_trap - 1);
	EXPECT_EQ(kernel.cpu.nested_copies, 1u);
	EXPECT_EQ(probe.nmissed, 1u);
	okp::arch::Registers nested = {post_trap, 1};
	EXPECT_EQ(okp_core_breakpoint(&nested), 1);
	EXPECT_EQ(hit_log.post, 0) << "the nested copy's post trap runs no handler";
	EXPECT_EQ(nested.pc, text_start + 6);
	okp::arch::Registers outer = {post_trap, 0};
	EXPECT_EQ(okp_core_breakpoint(&outer), 1);
	EXPECT_EQ(hit_log.post, 1);
	EXPECT_EQ(outer.interrupts, 1u);
	EXPECT_EQ(kernel.cpu.active_site, nullptr);
}

TEST_F(HitPathTest, ALostSiteRunsItsInstructionAndNoHandler)
{
	ASSERT_EQ(add(logged_probe(5, true)), 0);
	okp::Site *site = table.lookup(text_start + 5);
	ASSERT_NE(site, nullptr);
	okp::mark_lost(*site, "changed by the test");
	okp::arch::Registers regs;
	EXPECT_EQ(trap_at(text_start + 5, regs), 1);
	EXPECT_EQ(hit_log.pre, 0);
	EXPECT_EQ(regs.pc, fake_slot_of(text_start + 5));
	text_at(text_start + 5) = original_byte; // put back: the site may go
}

TEST_F(HitPathTest, AWaitingSitesHitContinuesInTheDetoursCopy)
{
	okp_core_set_optimization(1);
	ASSERT_EQ(add(logged_probe(5, false)), 0);
	ASSERT_EQ(jump_state(5), okp::JumpState::waiting);
	okp::arch::Registers regs;
	EXPECT_EQ(trap_at(text_start + 5, regs), 1);
	EXPECT_EQ(hit_log.pre, 1);
	EXPECT_EQ(regs.pc, 0x900000 + text_start + 5 + 0x40) << "the fake detour's copy";
}

TEST_F(HitPathTest, ABreakpointGoneUnderATrapRestartsAndSomeoneElsesIsNotClaimed)
{
	okprobe &probe = logged_probe(5, false);
	ASSERT_EQ(add(probe), 0);
	okprobe *batch[] = {&probe};
	table.unregister_probes(batch, 1);
	okp::arch::Registers regs;
	EXPECT_EQ(trap_at(text_start + 5, regs), 1) << "the original byte is back: run it";
	EXPECT_EQ(regs.pc, text_start + 5);
	text_at(text_start + 0x20) = breakpoint;
	EXPECT_EQ(trap_at(text_start + 0x20, regs), 0) << "not okprobe's breakpoint";
	text_at(text_start + 0x20) = original_byte;
	EXPECT_EQ(hit_log.pre, 0);
}

TEST_F(HitPathTest, AnOptimizedHitPresentsTheBreakpointsRegistersAndCountsNestedHitsAsMissed)
{
	okprobe &probe = logged_probe(5, false);
	ASSERT_EQ(add(probe), 0);
	okp::Site *site = table.lookup(text_start + 5);
	ASSERT_NE(site, nullptr);
	okp::arch::Registers regs = {0x900000, 1}; // the detour's saved registers
	okp_core_optimized_hit(site, &regs, &kernel.cpu);
	EXPECT_EQ(hit_log.pre, 1);
	EXPECT_EQ(hit_log.pre_pc, text_start + 5);
	EXPECT_EQ(kernel.cpu.active_site, nullptr);
	kernel.cpu.active_site = site; // as inside another handler
	okp_core_optimized_hit(site, &regs, &kernel.cpu);
	EXPECT_EQ(hit_log.pre, 1);
	EXPECT_EQ(probe.nmissed, 1u);
	kernel.cpu.active_site = nullptr;
}

TEST_F(HitPathTest, AHitRacingWithDisarmingEverythingRunsNoHandler)
{
	ASSERT_EQ(add(logged_probe(5, false)), 0);
	okp::Site *site = table.lookup(text_start + 5);
	ASSERT_NE(site, nullptr);
	table.set_all_enabled(false);
	okp::arch::Registers regs = {text_start + 5, 1};
	// The CPU trapped before the breakpoint was taken out.
	EXPECT_EQ(okp_core_breakpoint(&regs), 1);
	EXPECT_EQ(regs.pc, fake_slot_of(text_start + 5)) << "the instruction runs from its copy";
	okp_core_optimized_hit(site, &regs, &kernel.cpu);
	EXPECT_EQ(hit_log.pre, 0);
}

// ---- A function's entry through ftrace ---------------------------------------

TEST_F(ProbeTableTest, AnEntryProbeGoesThroughFtraceAndWritesNoText)
{
	kernel.ftrace_site = text_start;
	okprobe &probe = probe_at(0);
	ASSERT_EQ(add(probe), 0);
	EXPECT_EQ(probe.addr, reinterpret_cast<void *>(text_start));
	EXPECT_TRUE(probe.flags & OKPROBE_FLAG_FTRACE);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 1) << "armed through the ops that keep the ip";
	EXPECT_EQ(kernel.text_writes + kernel.text_batches, 0);
	EXPECT_EQ(text_at(text_start), original_byte);
	EXPECT_EQ(kernel.claims[text_start], 0) << "okprobe writes no byte of the function: nothing claimed";
	int lines = 0;
	table.for_each_line([&](const okp::ListLine &line) {
		++lines;
		EXPECT_TRUE(line.ftrace);
		EXPECT_FALSE(line.optimized);
	});
	EXPECT_EQ(lines, 1);
	run_optimizer();
	EXPECT_EQ(jump_state(0), okp::JumpState::breakpoint);
	EXPECT_NE(why_not(0).find("ftrace"), std::string::npos) << why_not(0);
	bool jumps_say_ftrace = false;
	table.for_each_jump([&](const okp::JumpLine &line) { jumps_say_ftrace = line.ftrace && !line.lost; });
	EXPECT_TRUE(jumps_say_ftrace);

	ASSERT_EQ(table.set_probe_enabled(&probe, false), 0);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 0);
	ASSERT_EQ(table.set_probe_enabled(&probe, true), 0);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 1);
	table.set_all_enabled(false);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 0);
	table.set_all_enabled(true);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 1);

	reset_counters();
	okprobe *one[] = {&probe};
	table.unregister_probes(one, 1);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 0);
	EXPECT_GE(kernel.rcu, 1) << "a grace period before the site is freed";
	EXPECT_FALSE(probe.flags & OKPROBE_FLAG_FTRACE) << "registrable again";
	probe.addr = nullptr; // an output of the registration
	EXPECT_EQ(add(probe), 0);
}

TEST_F(ProbeTableTest, APostHandlerMovesAnEntrySiteToTheOpsThatMayChangeTheIp)
{
	kernel.ftrace_site = text_start;
	okprobe &plain = probe_at(0);
	ASSERT_EQ(add(plain), 0);
	okprobe &with_post = probe_at(0);
	with_post.post_handler = post_handler;
	ASSERT_EQ(add(with_post), 0);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 0);
	EXPECT_EQ(kernel.ftrace_armed[1][text_start], 1);
	okprobe *one[] = {&with_post};
	table.unregister_probes(one, 1);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 1) << "back to the ops that leave the ip to others";
	EXPECT_EQ(kernel.ftrace_armed[1][text_start], 0);
}

TEST_F(ProbeTableTest, FtraceRefusingTheEntryRefusesTheRegistrationWithItsErrno)
{
	kernel.ftrace_site = text_start;
	kernel.ftrace_arm_error = -16; // EBUSY: livepatch owns the function's ip
	okprobe &probe = probe_at(0);
	EXPECT_EQ(add(probe), -16);
	EXPECT_TRUE(kernel.entries_unarmed.empty()) << "the registration says why itself";
	EXPECT_EQ(probe.okp_site, nullptr);
	EXPECT_EQ(table.site_of(&probe), nullptr);
	EXPECT_EQ(table.lookup(text_start), nullptr);
	int lines = 0;
	table.for_each_line([&](const okp::ListLine &) { ++lines; });
	EXPECT_EQ(lines, 0);
	// Registered disabled, nothing is asked of ftrace until it is enabled.
	kernel.ftrace_arm_error = 0;
	okprobe &disabled = probe_at(0);
	disabled.flags = OKPROBE_FLAG_DISABLED;
	ASSERT_EQ(add(disabled), 0);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 0);
	// Enabling it asks ftrace: refused, it stays disabled and says so.
	kernel.ftrace_arm_error = -16;
	EXPECT_EQ(table.set_probe_enabled(&disabled, true), -16);
	EXPECT_TRUE(disabled.flags & OKPROBE_FLAG_DISABLED);
	kernel.ftrace_arm_error = 0;
	EXPECT_EQ(table.set_probe_enabled(&disabled, true), 0);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 1);
}

// okprobe_register_many of entry probes: one pass of ftrace over its
// records arms them all, and one unregister_many disarms them with one.
TEST_F(ProbeTableTest, ABatchOfEntriesGoesIntoFtraceInOnePass)
{
	okprobe *batch[8];
	for (int i = 0; i < 8; ++i)
		kernel.more_ftrace_sites.insert(text_start + 0x10 * i);
	table.begin_arm_batch();
	for (int i = 0; i < 8; ++i) {
		batch[i] = &probe_at(0x10 * i);
		ASSERT_EQ(add(*batch[i]), 0);
		EXPECT_TRUE(batch[i]->flags & OKPROBE_FLAG_FTRACE);
	}
	EXPECT_EQ(kernel.ftrace_arm_passes, 0) << "ftrace asked before the batch ends";
	EXPECT_EQ(end_batch(), 0);
	EXPECT_EQ(kernel.ftrace_arm_passes, 1) << "one pass for the batch";
	for (int i = 0; i < 8; ++i)
		EXPECT_EQ(kernel.ftrace_armed[0][text_start + 0x10 * i], 1);
	EXPECT_EQ(kernel.text_writes + kernel.text_batches, 0);
	table.unregister_probes(batch, 8);
	EXPECT_EQ(kernel.ftrace_disarm_passes, 1) << "one pass to take them all out";
	for (int i = 0; i < 8; ++i)
		EXPECT_EQ(kernel.ftrace_armed[0][text_start + 0x10 * i], 0);
}

// A second probe with a post_handler on an entry of the batch moves it to
// the other ops: the batch so far goes in first, then that entry again.
TEST_F(ProbeTableTest, APostHandlerInABatchMovesItsEntryToTheOtherOps)
{
	for (int i = 0; i < 3; ++i)
		kernel.more_ftrace_sites.insert(text_start + 0x10 * i);
	table.begin_arm_batch();
	okprobe *batch[4];
	for (int i = 0; i < 3; ++i) {
		batch[i] = &probe_at(0x10 * i);
		ASSERT_EQ(add(*batch[i]), 0);
	}
	batch[3] = &probe_at(0x10);
	batch[3]->post_handler = post_handler;
	ASSERT_EQ(add(*batch[3]), 0);
	EXPECT_EQ(kernel.ftrace_arm_passes + kernel.ftrace_disarm_passes, 0)
		<< "the pending entry changed ops without asking ftrace";
	EXPECT_EQ(end_batch(), 0);
	EXPECT_EQ(kernel.ftrace_arm_passes, 2) << "one pass per ops";
	EXPECT_EQ(kernel.ftrace_disarm_passes, 0);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 1);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start + 0x10], 0);
	EXPECT_EQ(kernel.ftrace_armed[1][text_start + 0x10], 1) << "the entry with a post_handler";
	EXPECT_EQ(kernel.ftrace_armed[0][text_start + 0x20], 1);
	table.unregister_probes(batch, 4);
}

// ftrace refuses one entry of the batch (another user that changes the
// ip owns it): the halves are tried again until only it is left out, the
// rest stay armed, and the batch's end says which and why
// (register_many then unregisters them all).
TEST_F(ProbeTableTest, AnEntryFtraceRefusesInABatchIsNamedAndTheRestStayArmed)
{
	for (int i = 0; i < 8; ++i)
		kernel.more_ftrace_sites.insert(text_start + 0x10 * i);
	kernel.ftrace_refused.insert(text_start + 0x50);
	table.begin_arm_batch();
	okprobe *batch[8];
	for (int i = 0; i < 8; ++i) {
		batch[i] = &probe_at(0x10 * i);
		batch[i]->post_handler = post_handler;
		ASSERT_EQ(add(*batch[i]), 0);
	}
	std::string where, why;
	EXPECT_EQ(end_batch(&where, &why), 16);
	EXPECT_EQ(where, "fake_function+0x50/0x100") << where;
	EXPECT_NE(why.find("ftrace"), std::string::npos) << why;
	EXPECT_EQ(kernel.ftrace_arm_passes, 1 + 2 * 3) << "the batch, then halves down to the one refused";
	for (int i = 0; i < 8; ++i)
		EXPECT_EQ(kernel.ftrace_armed[1][text_start + 0x10 * i], i == 5 ? 0 : 1) << i;
	EXPECT_TRUE(kernel.entries_unarmed.empty()) << "register_many's refusal says why, once";
	table.unregister_probes(batch, 8);
	for (int i = 0; i < 8; ++i)
		EXPECT_EQ(kernel.ftrace_armed[1][text_start + 0x10 * i], 0);
}

// An entry outside the batch that ftrace refuses, re-armed as the batch
// registers a probe just past it, is reported as before, not blamed on
// the batch.
TEST_F(ProbeTableTest, AnOutsideEntryFtraceRefusesDoesNotFailTheBatch)
{
	kernel.ftrace_site = text_start;
	okprobe &outside = probe_at(0);
	outside.post_handler = post_handler;
	ASSERT_EQ(add(outside), 0);
	table.set_all_enabled(false);
	kernel.ftrace_refused.insert(text_start);
	table.set_all_enabled(true);
	ASSERT_EQ(kernel.entries_unarmed[text_start], 1);
	table.begin_arm_batch();
	okprobe &inside = probe_at(0x10);
	ASSERT_EQ(add(inside), 0);
	EXPECT_EQ(end_batch(), 0) << "the batch failed for an entry it did not register";
	EXPECT_EQ(text_at(text_start + 0x10), breakpoint);
	okprobe *both[] = {&outside, &inside};
	table.unregister_probes(both, 2);
}

TEST_F(ProbeTableTest, ADisabledPostHandlerLeavesTheEntryInItsOpsAndARefusedReArmIsReported)
{
	kernel.ftrace_site = text_start;
	okprobe &plain = probe_at(0);
	ASSERT_EQ(add(plain), 0);
	okprobe &post = probe_at(0);
	post.post_handler = post_handler;
	post.flags = OKPROBE_FLAG_DISABLED;
	ASSERT_EQ(add(post), 0);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 1) << "a disabled post_handler asks nothing of ftrace";
	ASSERT_EQ(table.set_probe_enabled(&post, true), 0);
	EXPECT_EQ(kernel.ftrace_armed[1][text_start], 1);
	ASSERT_EQ(table.set_probe_enabled(&post, false), 0);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 1);
	EXPECT_TRUE(kernel.entries_unarmed.empty()) << "nothing refused yet";
	// Everything off, and ftrace refuses the entry when it comes back:
	// the probes stay registered, and that they do not run is said once.
	table.set_all_enabled(false);
	kernel.ftrace_arm_error = -16;
	table.set_all_enabled(true);
	EXPECT_EQ(kernel.entries_unarmed[text_start], 1);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 0);
	kernel.ftrace_arm_error = 0;
	table.set_all_enabled(false);
	table.set_all_enabled(true);
	EXPECT_EQ(kernel.ftrace_armed[0][text_start], 1);
}

TEST_F(HitPathTest, ABreakpointAtAnFtraceSiteIsSomeoneElses)
{
	kernel.ftrace_site = text_start;
	ASSERT_EQ(add(logged_probe(0, false)), 0);
	text_at(text_start) = breakpoint; // kgdb's, say
	okp::arch::Registers regs;
	EXPECT_EQ(trap_at(text_start, regs), 0) << "not okprobe's to handle";
	EXPECT_EQ(hit_log.pre, 0);
	text_at(text_start) = original_byte;
}

TEST_F(HitPathTest, AnFtraceHitShowsTheBreakpointsPcAndGivesFtraceItsOwnBack)
{
	kernel.ftrace_site = text_start;
	ASSERT_EQ(add(logged_probe(0, true)), 0);
	okp::arch::Registers regs = {text_start + 0x40, 1}; // ftrace's saved pc
	okp_core_ftrace_hit(text_start, &regs, &kernel.cpu);
	EXPECT_EQ(hit_log.pre, 1);
	EXPECT_EQ(hit_log.pre_pc, text_start) << "as a breakpoint at the call site";
	EXPECT_EQ(hit_log.post, 1);
	EXPECT_EQ(hit_log.post_pc, text_start + 1) << "past the call site";
	EXPECT_EQ(regs.pc, text_start + 0x40) << "ftrace resumes where it would have";
	EXPECT_EQ(kernel.cpu.active_site, nullptr);
}

namespace {

// Makes the function return at once: the pc moves to its "caller".
int overriding_pre_handler(okprobe *, pt_regs *regs)
{
	++hit_log.pre;
	registers_of(regs).pc = 0xcafe;
	return 1;
}

} // namespace

TEST_F(HitPathTest, AnFtracePreHandlerThatMovesThePcDecidesWhereTheFunctionResumes)
{
	kernel.ftrace_site = text_start;
	okprobe &probe = logged_probe(0, true);
	probe.pre_handler = overriding_pre_handler;
	ASSERT_EQ(add(probe), 0);
	okp::arch::Registers regs = {text_start + 0x40, 1};
	okp_core_ftrace_hit(text_start, &regs, &kernel.cpu);
	EXPECT_EQ(hit_log.pre, 1);
	EXPECT_EQ(hit_log.post, 0) << "the probed call is skipped, and its post_handler";
	EXPECT_EQ(regs.pc, 0xcafeu);
}

TEST_F(HitPathTest, AnFtraceHitItCannotHandleIsCountedAsMissed)
{
	kernel.ftrace_site = text_start;
	okprobe &probe = logged_probe(0, false);
	ASSERT_EQ(add(probe), 0);
	// No registers (an ftrace without them): counted, no handler.
	okp_core_ftrace_hit(text_start, nullptr, &kernel.cpu);
	EXPECT_EQ(probe.nmissed, 1u);
	// Inside another hit's handlers on this CPU.
	okp::arch::Registers regs = {text_start + 0x40, 1};
	kernel.cpu.active_site = &regs; // any site
	okp_core_ftrace_hit(text_start, &regs, &kernel.cpu);
	kernel.cpu.active_site = nullptr;
	EXPECT_EQ(probe.nmissed, 2u);
	EXPECT_EQ(hit_log.pre, 0);
	// An address okprobe has no site at (disarmed under the call).
	okp_core_ftrace_hit(text_start + 3, &regs, &kernel.cpu);
	EXPECT_EQ(hit_log.pre, 0);
	EXPECT_EQ(regs.pc, text_start + 0x40);
}

// ---- Argument-only probes (okprobe.args_handler) -----------------------------

namespace {

struct ArgsLog {
	int calls = 0;
	okprobe_args seen = {};
	// What the handler writes back, when set.
	bool change = false;
} args_log;

void logging_args_handler(okprobe *, okprobe_args *args)
{
	++args_log.calls;
	args_log.seen = *args;
	if (!args_log.change)
		return;
	args->arg[1] = 0x1111;
	okprobe_args_return_value(args) = 0x2222;
	args->ip = 0xbad; // read-only: changes nothing
	args->sp = 0xbad;
}

// Registers as the probed code had them: every word different.
okp::arch::Registers registers_at(uint64_t pc)
{
	okp::arch::Registers regs = {pc, 1, {}, 0x7000, 0x5a5a};
	for (int i = 0; i < 8; ++i)
		regs.arguments[i] = 0xa0 + i;
	return regs;
}

void expect_record_of(const okp::arch::Registers &regs, uint64_t address)
{
	for (int i = 0; i < OKPROBE_ARG_REGS; ++i)
		EXPECT_EQ(args_log.seen.arg[i], regs.arguments[i]) << "argument " << i;
	EXPECT_EQ(okprobe_args_return_value(&args_log.seen),
		  OKPROBE_ARG_REGS == 8 ? regs.arguments[0] : regs.return_value);
	EXPECT_EQ(args_log.seen.ip, address) << "the probed address, not the trap's pc";
	EXPECT_EQ(args_log.seen.sp, regs.stack_pointer);
}

} // namespace

class ArgsProbeTest : public HitPathTest {
protected:
	void SetUp() override
	{
		HitPathTest::SetUp();
		args_log = ArgsLog{};
	}

	okprobe &args_probe(uint64_t offset)
	{
		okprobe &probe = probe_at(offset);
		probe.pre_handler = nullptr;
		probe.args_handler = logging_args_handler;
		return probe;
	}
};

TEST_F(ArgsProbeTest, AnArgsHandlerComesAloneAndNeverWithACounter)
{
	okprobe &with_pre = args_probe(5);
	with_pre.pre_handler = pre_handler;
	EXPECT_EQ(add(with_pre), -EINVAL);
	okprobe &with_post = args_probe(5);
	with_post.post_handler = logging_post_handler;
	EXPECT_EQ(add(with_post), -EINVAL);
	okprobe &counting = args_probe(5);
	counting.flags = OKPROBE_FLAG_COUNTER;
	EXPECT_EQ(add(counting), -EINVAL);
	EXPECT_EQ(table.lookup(text_start + 5), nullptr) << "nothing registered";
	EXPECT_EQ(add(args_probe(5)), 0);
}

TEST_F(ArgsProbeTest, ABreakpointHitGivesTheRecordAndTakesBackWhatTheHandlerMayChange)
{
	ASSERT_EQ(add(args_probe(5)), 0);
	okp::arch::Registers regs = registers_at(text_start + 5);
	const okp::arch::Registers before = regs;
	args_log.change = true;
	EXPECT_EQ(okp_core_breakpoint(&regs), 1);
	EXPECT_EQ(args_log.calls, 1);
	expect_record_of(before, text_start + 5);
	EXPECT_EQ(regs.arguments[1], 0x1111u) << "an argument written back";
	EXPECT_EQ(OKPROBE_ARG_REGS == 8 ? regs.arguments[0] : regs.return_value, 0x2222u);
	EXPECT_EQ(regs.stack_pointer, before.stack_pointer) << "sp is read-only";
	for (int i = 2; i < 8; ++i)
		EXPECT_EQ(regs.arguments[i], before.arguments[i]);
	EXPECT_EQ(regs.pc, fake_slot_of(text_start + 5)) << "the instruction runs from its copy";
	EXPECT_EQ(kernel.cpu.active_site, nullptr);
}

TEST_F(ArgsProbeTest, AFullDetoursHitAndAnEntryThroughFtraceGiveTheSameRecord)
{
	okprobe &probe = args_probe(5);
	ASSERT_EQ(add(probe), 0);
	okp::Site *site = table.lookup(text_start + 5);
	ASSERT_NE(site, nullptr);
	okp::arch::Registers regs = registers_at(0x900000); // the detour's save
	okp_core_optimized_hit(site, &regs, &kernel.cpu);
	EXPECT_EQ(args_log.calls, 1);
	expect_record_of(registers_at(0), text_start + 5);
	okprobe *batch[] = {&probe};
	table.unregister_probes(batch, 1);

	kernel.ftrace_site = text_start;
	ASSERT_EQ(add(args_probe(0)), 0);
	regs = registers_at(text_start + 0x40); // ftrace's saved pc
	okp_core_ftrace_hit(text_start, &regs, &kernel.cpu);
	EXPECT_EQ(args_log.calls, 2);
	expect_record_of(registers_at(0), text_start);
	EXPECT_EQ(regs.pc, text_start + 0x40) << "ftrace resumes where it would have";
}

TEST_F(ArgsProbeTest, BesideAPreHandlerBothRunAndANestedHitIsMissed)
{
	okprobe &args = args_probe(5);
	ASSERT_EQ(add(args), 0);
	ASSERT_EQ(add(logged_probe(5, false)), 0);
	okp::arch::Registers regs = registers_at(text_start + 5);
	EXPECT_EQ(okp_core_breakpoint(&regs), 1);
	EXPECT_EQ(args_log.calls, 1);
	EXPECT_EQ(hit_log.pre, 1);
	okp::Site *site = table.lookup(text_start + 5);
	kernel.cpu.active_site = site; // as inside another handler
	regs = registers_at(text_start + 5);
	EXPECT_EQ(okp_core_breakpoint(&regs), 1);
	kernel.cpu.active_site = nullptr;
	EXPECT_EQ(args_log.calls, 1);
	EXPECT_EQ(args.nmissed, 1u);
}

// Where every probe of a site is argument-only, its detour is: it pushes
// struct okprobe_args and calls the args_handler itself, or the core's
// okp_core_args_hit, which runs the args_handlers on the record in place.
TEST_F(ArgsProbeTest, AnArgsOnlySiteGetsAnArgsDetourThatCallsItsHandlerDirectly)
{
	okp_core_set_optimization(1);
	okprobe &probe = args_probe(5);
	ASSERT_EQ(add(probe), 0);
	okp::Site *site = table.lookup(text_start + 5);
	ASSERT_NE(site, nullptr);
	EXPECT_TRUE(kernel.args_records[site->address]);
	const okp::DirectHit direct = kernel.direct_hits[site->address];
	ASSERT_TRUE(direct.wanted());
	EXPECT_EQ(direct.handler, reinterpret_cast<uint64_t>(probe.args_handler));
	EXPECT_EQ(reinterpret_cast<const uint8_t *>(&probe) + direct.probe_handler,
		  reinterpret_cast<const uint8_t *>(&probe.args_handler));
	EXPECT_EQ(site->direct_probe.load(okp::Order::relaxed), &probe);
	run_optimizer();
	EXPECT_EQ(jump_state(5), okp::JumpState::optimized);

	okprobe_args record = {};
	for (int i = 0; i < OKPROBE_ARG_REGS; ++i)
		record.arg[i] = 0xa0 + i;
	record.ip = text_start + 5;
	record.sp = 0x7000;
	args_log.change = true;
	okp_core_args_hit(site, &record, &kernel.cpu);
	EXPECT_EQ(args_log.calls, 1);
	EXPECT_EQ(args_log.seen.arg[2], 0xa2u);
	EXPECT_EQ(args_log.seen.ip, text_start + 5);
	EXPECT_EQ(record.arg[1], 0x1111u) << "written in the record the detour pops back";
	EXPECT_EQ(kernel.cpu.active_site, nullptr);
	unsigned long hits = 0;
	table.for_each_line([&](const okp::ListLine &line) { hits = line.hits; });
	EXPECT_EQ(hits, 1u);

	kernel.cpu.active_site = site; // as inside another handler
	okp_core_args_hit(site, &record, &kernel.cpu);
	kernel.cpu.active_site = nullptr;
	EXPECT_EQ(args_log.calls, 1);
	EXPECT_EQ(probe.nmissed, 1u);

	ASSERT_EQ(table.set_probe_enabled(&probe, false), 0);
	okp_core_args_hit(site, &record, &kernel.cpu); // a CPU still on its way
	EXPECT_EQ(args_log.calls, 1) << "a disabled probe's handler ran";
}

// A probe of pt_regs never sees an argument-only detour: its registration
// takes the jump out before the probe is published, and the site gets a
// full detour; when it leaves, the argument-only detour comes back. A
// disabled one counts: enabling it must not need another detour.
TEST_F(ArgsProbeTest, APtRegsProbeTakesTheArgsDetourOutAndItsLeavingBringsItBack)
{
	okp_core_set_optimization(1);
	okprobe &args = args_probe(5);
	ASSERT_EQ(add(args), 0);
	run_optimizer();
	ASSERT_EQ(jump_state(5), okp::JumpState::optimized);
	okp::Site *site = table.lookup(text_start + 5);
	const int created = kernel.detours_created;

	okprobe &full = logged_probe(5, false);
	full.flags = OKPROBE_FLAG_DISABLED;
	ASSERT_EQ(add(full), 0);
	EXPECT_EQ(kernel.detours_created, created + 1);
	EXPECT_FALSE(kernel.args_records[site->address]) << "a full detour for the disabled probe too";
	EXPECT_EQ(jump_state(5), okp::JumpState::waiting);
	EXPECT_EQ(kernel.published_at_unoptimize[site->address], 1) << "the jump went after the probe came in";
	ASSERT_EQ(table.set_probe_enabled(&full, true), 0);
	EXPECT_EQ(kernel.detours_created, created + 1) << "enabling it built no other detour";

	// A CPU that entered the argument-only detour before it went runs
	// the args_handlers only.
	okprobe_args record = {};
	okp_core_args_hit(site, &record, &kernel.cpu);
	EXPECT_EQ(args_log.calls, 1);
	EXPECT_EQ(hit_log.pre, 0) << "a pre_handler called without pt_regs";
	run_optimizer();
	ASSERT_EQ(jump_state(5), okp::JumpState::optimized);
	okp::arch::Registers regs = registers_at(0x900000);
	okp_core_optimized_hit(site, &regs, &kernel.cpu);
	EXPECT_EQ(args_log.calls, 2);
	EXPECT_EQ(hit_log.pre, 1);

	okprobe *leaving[] = {&full};
	table.unregister_probes(leaving, 1);
	EXPECT_EQ(kernel.detours_created, created + 2);
	EXPECT_TRUE(kernel.args_records[site->address]) << "argument-only again";
	run_optimizer();
	EXPECT_EQ(jump_state(5), okp::JumpState::optimized);
}

// An arch without argument-only detours gives args probes the full one,
// and the site is never rebuilt for it.
TEST_F(ArgsProbeTest, WithoutArgsDetoursTheFullDetourServesAndStays)
{
	okp_core_set_optimization(1);
	kernel.args_detours = false;
	okprobe &probe = args_probe(5);
	ASSERT_EQ(add(probe), 0);
	run_optimizer();
	ASSERT_EQ(jump_state(5), okp::JumpState::optimized);
	EXPECT_FALSE(kernel.args_records[text_start + 5]);
	EXPECT_FALSE(kernel.direct_hits[text_start + 5].wanted()) << "no direct pre_handler call";
	const int created = kernel.detours_created;
	ASSERT_EQ(table.set_probe_enabled(&probe, false), 0);
	ASSERT_EQ(table.set_probe_enabled(&probe, true), 0);
	run_optimizer();
	EXPECT_EQ(jump_state(5), okp::JumpState::optimized);
	EXPECT_LE(kernel.detours_created, created + 1) << "rebuilt over and over";
}
