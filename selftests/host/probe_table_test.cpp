// SPDX-License-Identifier: GPL-2.0
// The probe lifecycle (src/core/probe_table.cpp) against a fake kernel: a
// text buffer the fake arch writes breakpoints into, and counters for the
// grace periods the table waits for.
#include "core/core_api.h"
#include "core/probe_table.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>

namespace {

constexpr uint64_t text_start = 0x10000, text_size = 0x100;
constexpr uint8_t original_byte = 0x90, breakpoint = 0xcc;

struct FakeKernel {
	uint8_t text[text_size];
	int rcu = 0, rcu_tasks = 0, retired = 0, created = 0;
	std::map<uint64_t, int> arms; // times each address was armed
} kernel;

uint8_t &text_at(uint64_t address)
{
	return kernel.text[address - text_start];
}

okp::KernelFacts fake_facts()
{
	okp::KernelFacts facts{};
	facts.lookup_symbol = [](const char *name, void *) -> uint64_t {
		return std::strcmp(name, "fake_function") == 0 ? text_start : 0;
	};
	facts.function_of = [](uint64_t address, uint64_t *start, uint64_t *size, void *) {
		*start = text_start;
		*size = text_size;
		return address >= text_start && address < text_start + text_size;
	};
	facts.text_kind = [](uint64_t, void *) { return okp::TextKind::core_kernel; };
	facts.blacklisted = [](uint64_t, void *) -> const char * { return nullptr; };
	facts.reserved = [](uint64_t, size_t, void *) -> const char * { return nullptr; };
	facts.has_exception_entry = [](uint64_t, void *) { return false; };
	facts.read_text = [](uint64_t address, uint8_t *buffer, size_t size, void *) -> size_t {
		size_t n = 0;
		for (; n < size && address + n < text_start + text_size; ++n)
			buffer[n] = text_at(address + n);
		return n;
	};
	return facts;
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
		kernel.arms.clear();
	}
	void TearDown() override
	{
		table.clear();
		EXPECT_EQ(kernel.created, kernel.retired) << "a site leaked";
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

	int add(okprobe &probe)
	{
		const char *why = "";
		return table.register_probe(&probe, fake_facts(), one_byte_rules, &why);
	}

	void reset_counters() { kernel.rcu = kernel.rcu_tasks = 0; }

	okp::ProbeTable table;

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
	table.unregister_probes(batch, 10);
	EXPECT_EQ(kernel.rcu, 1);
	EXPECT_EQ(kernel.rcu_tasks, 1);
	EXPECT_EQ(kernel.retired, 10);
	for (int i = 0; i < 10; ++i)
		EXPECT_EQ(text_at(text_start + 8 * i), original_byte);
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

TEST_F(ProbeTableTest, RegisteringTwiceOrWithForeignFlagsIsRefused)
{
	okprobe &probe = probe_at(7);
	ASSERT_EQ(add(probe), 0);
	EXPECT_EQ(add(probe), -22);
	okprobe &gone_flag = probe_at(8);
	gone_flag.flags = OKPROBE_FLAG_GONE;
	EXPECT_EQ(add(gone_flag), -22);
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

} // namespace

// ---- The fake arch and glue ---------------------------------------------------

namespace okp::arch {

Site *create_site(uint64_t address, const uint8_t (&)[max_original_bytes], const char **)
{
	++kernel.created;
	Site *site = new Site;
	site->address = address;
	return site;
}

void arm(Site &site)
{
	text_at(site.address) = breakpoint;
	site.patched_bytes = 1;
	++kernel.arms[site.address];
}

void disarm(Site &site)
{
	text_at(site.address) = site.original[0];
	site.patched_bytes = 0;
}

void retire_site(Site *site)
{
	++kernel.retired;
	delete site;
}

InstructionVerdict probe_rules(const uint8_t *function, size_t size, size_t offset, uint64_t address)
{
	return one_byte_rules(function, size, offset, address);
}

void release_resources() {}

} // namespace okp::arch

extern "C" void okp_glue_synchronize_rcu(void)
{
	++kernel.rcu;
}

extern "C" void okp_glue_synchronize_rcu_tasks(void)
{
	++kernel.rcu_tasks;
}

extern "C" void okp_glue_describe(unsigned long address, char *buffer, unsigned long size)
{
	std::snprintf(buffer, size, "fake_function+0x%lx/0x%lx", address - text_start,
		      static_cast<unsigned long>(text_size));
}
