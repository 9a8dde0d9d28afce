// SPDX-License-Identifier: GPL-2.0
// riscv64 breakpoint probe rules: boundaries, refusals with their errnos,
// and which instructions are simulated rather than run out of line.
#include "riscv/probe_rules.hpp"

#include "riscv_code.hpp"

#include <gtest/gtest.h>

namespace {

using namespace okp::riscv;
using namespace okp::riscv::test;

constexpr int eperm = 1, ebusy = 16, eilseq = 84;

TEST(RiscvProbeRules, BoundariesFromTheFunctionStart)
{
	// addi a0, a1, -5; c.li a2, 5; c.jr ra
	const std::vector<uint8_t> f = assemble({i(0xffb58513), c(0x4615), c(0x8082)});
	EXPECT_EQ(probe_rules(f.data(), f.size(), 0, 0x1000).error, 0);
	EXPECT_EQ(probe_rules(f.data(), f.size(), 0, 0x1000).length, 4);
	EXPECT_EQ(probe_rules(f.data(), f.size(), 4, 0x1000).length, 2);
	EXPECT_EQ(probe_rules(f.data(), f.size(), 2, 0x1000).error, eilseq); // inside the addi
	EXPECT_EQ(probe_rules(f.data(), f.size(), 3, 0x1000).error, eilseq); // odd
	EXPECT_EQ(probe_rules(f.data(), f.size(), 8, 0x1000).error, eilseq); // past the end
	EXPECT_EQ(probe_rules(f.data(), f.size(), 0, 0x1001).error, eilseq); // odd function
	// Undecodable bytes before the address.
	const std::vector<uint8_t> bad = assemble({c(0x0000), c(0x8082)});
	EXPECT_EQ(probe_rules(bad.data(), bad.size(), 2, 0x1000).error, eilseq);
}

TEST(RiscvProbeRules, SystemInstructionsAndFenceIAreRefused)
{
	struct {
		Encoding encoding;
		int error;
	} const cases[] = {
		{i(0x00000073), eperm}, // ecall
		{i(0x10200073), eperm}, // sret
		{i(0x10500073), eperm}, // wfi
		{i(0x12b50073), eperm}, // sfence.vma
		{i(0x1005a573), eperm}, // csrrs
		{i(0x0000100f), eperm}, // fence.i
		{i(0x00100073), ebusy}, // ebreak: BUG(), WARN() or another probe
		{c(0x9002), ebusy},	// c.ebreak
		{i(0x0330000f), 0},	// fence only orders memory: out of line
	};
	for (const auto &expected : cases) {
		const std::vector<uint8_t> f = assemble({c(0x4615), expected.encoding, c(0x8082)});
		const BreakpointPlan plan = plan_breakpoint(f.data(), f.size(), 2);
		EXPECT_EQ(plan.verdict.error, expected.error) << std::hex << expected.encoding.value;
		EXPECT_EQ(plan.execution, expected.error ? Execution::refuse : Execution::out_of_line);
		if (expected.error)
			EXPECT_STRNE(plan.verdict.why, "");
	}
}

TEST(RiscvProbeRules, ControlFlowAndAuipcAreSimulatedIncludingRvc)
{
	const Encoding simulated[] = {i(0x00001317), i(0x001000ef), i(0x00008067), i(0x00050567),
				      i(0x00b50863), c(0xa801),	    c(0xdd65),	   c(0xec99),
				      c(0x8082),     c(0x8782),	    c(0x9782)};
	for (const Encoding &e : simulated) {
		const std::vector<uint8_t> f = assemble({e, c(0x8082)});
		const BreakpointPlan plan = plan_breakpoint(f.data(), f.size(), 0);
		EXPECT_EQ(plan.verdict.error, 0) << std::hex << e.value;
		EXPECT_EQ(plan.execution, Execution::simulate) << std::hex << e.value;
	}
	// c.mv and c.add look like c.jr/c.jalr to a sloppy mask: run out of line.
	for (const Encoding &e : {c(0x853e), c(0x952e), i(0x01013503), c(0x6690), c(0xe022), i(0x0108b7af)}) {
		const std::vector<uint8_t> f = assemble({e, c(0x8082)});
		EXPECT_EQ(plan_breakpoint(f.data(), f.size(), 0).execution, Execution::out_of_line)
			<< std::hex << e.value;
	}
}

TEST(RiscvProbeRules, BreakpointMatchesTheInstructionLength)
{
	const std::vector<uint8_t> f = assemble({i(0xffb58513), c(0x4615), c(0x8082)});
	EXPECT_EQ(plan_breakpoint(f.data(), f.size(), 0).breakpoint, ebreak_encoding);
	EXPECT_EQ(plan_breakpoint(f.data(), f.size(), 4).breakpoint, c_ebreak_encoding);
}

TEST(RiscvProbeRules, NothingInsideAnLrScSequence)
{
	// 0: lr.w a0, (a1); 4: bne a0, a2, +12; 8: sc.w a3, a4, (a1);
	// c: bnez a3, -12; 10: addi a0, a0, 1; 14: c.jr ra
	const std::vector<uint8_t> f =
		assemble({i(0x1005a52f), i(0x00c51663), i(0x18e5a6af), i(0xfe069ae3), i(0x00150513), c(0x8082)});
	for (size_t offset : {0, 4, 8})
		EXPECT_EQ(plan_breakpoint(f.data(), f.size(), offset).verdict.error, eperm) << offset;
	for (size_t offset : {0xc, 0x10, 0x14})
		EXPECT_EQ(plan_breakpoint(f.data(), f.size(), offset).verdict.error, 0) << offset;
	// What make bench's sampler tags "lr-sc" (the kernel's kprobes take them).
	for (size_t offset : {0, 4, 8})
		EXPECT_TRUE(in_lr_sc_sequence(f.data(), f.size(), offset)) << offset;
	for (size_t offset : {2, 0xc, 0x10, 0x14, 0x16})
		EXPECT_FALSE(in_lr_sc_sequence(f.data(), f.size(), offset)) << offset;
}

} // namespace
