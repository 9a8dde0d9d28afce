// SPDX-License-Identifier: GPL-2.0
// The riscv64 detour, decoded back instruction by instruction (riscv code
// cannot run on the host): every register but sp saved at its struct
// pt_regs slot and restored from it, regs->sp the probed code's, the entry
// called with the site and the registers, then the relocated window, and
// the site's address in the literal the call loads.
#include "riscv/detour.hpp"

#include "riscv_code.hpp"
#include "riscv_detour_sample.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace {

using namespace okp::riscv;
using namespace okp::riscv::test;

Instruction at(const uint8_t *bytes, size_t offset)
{
	return decode_instruction(bytes + offset, 4);
}

TEST(RiscvDetour, SavesCallsRestoresThenRunsTheWindow)
{
	const OptimizationPlan plan = sample_plan();
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none);
	uint8_t out[max_detour_size];
	const size_t length = build_detour(plan, base + 2, detour, entry, site, out, sizeof(out));
	ASSERT_GT(length, detour_frame_size);
	ASSERT_LE(length, max_detour_size);

	size_t pc = 0;
	Instruction insn = at(out, pc);
	EXPECT_EQ(insn.operation, Operation::addi);
	EXPECT_EQ(insn.rd, reg::sp);
	EXPECT_EQ(insn.immediate, -int64_t(pt_regs_size));
	pc += 4;
	// sd xN, N*8(sp) for every N but sp: struct pt_regs's layout.
	for (unsigned n = 1; n < 32; ++n) {
		if (n == reg::sp)
			continue;
		insn = at(out, pc);
		EXPECT_EQ(insn.kind, InstructionClass::store) << "x" << n;
		EXPECT_EQ(insn.rs1, reg::sp);
		EXPECT_EQ(insn.rs2, n);
		EXPECT_EQ(insn.immediate, int64_t(n * 8));
		pc += 4;
	}
	// regs->sp = sp + 288
	insn = at(out, pc);
	EXPECT_EQ(insn.operation, Operation::addi);
	EXPECT_EQ(insn.rs1, reg::sp);
	EXPECT_EQ(insn.immediate, int64_t(pt_regs_size));
	const unsigned scratch = insn.rd;
	insn = at(out, pc + 4);
	EXPECT_EQ(insn.kind, InstructionClass::store);
	EXPECT_EQ(insn.rs2, scratch);
	EXPECT_EQ(insn.immediate, 16);
	pc += 8;
	// a0 = the literal: auipc a0, 0; ld a0, off(a0)
	const Instruction auipc = at(out, pc), load = at(out, pc + 4);
	EXPECT_EQ(auipc.operation, Operation::auipc);
	EXPECT_EQ(auipc.rd, reg::a0);
	EXPECT_EQ(load.kind, InstructionClass::load);
	EXPECT_EQ(load.rd, reg::a0);
	EXPECT_EQ(load.rs1, reg::a0);
	const size_t literal = pc + auipc.immediate + load.immediate;
	EXPECT_EQ(literal % 8, 0u);
	EXPECT_EQ(literal + 8, length);
	uint64_t value = 0;
	for (int b = 7; b >= 0; --b)
		value = value << 8 | out[literal + b];
	EXPECT_EQ(value, site);
	pc += 8;
	// a1 = sp
	insn = at(out, pc);
	EXPECT_EQ(insn.operation, Operation::addi);
	EXPECT_EQ(insn.rd, reg::a0 + 1);
	EXPECT_EQ(insn.rs1, reg::sp);
	EXPECT_EQ(insn.immediate, 0);
	pc += 4;
	// auipc ra, hi; jalr ra, lo(ra) to the entry
	const Instruction call_high = at(out, pc), call = at(out, pc + 4);
	EXPECT_EQ(call_high.operation, Operation::auipc);
	EXPECT_EQ(call_high.rd, reg::ra);
	EXPECT_EQ(call.operation, Operation::jalr);
	EXPECT_EQ(call.rd, reg::ra);
	EXPECT_EQ(call.rs1, reg::ra);
	EXPECT_EQ(detour + pc + call_high.immediate + call.immediate, entry);
	pc += 8;
	// ld xN, N*8(sp), then sp back
	for (unsigned n = 1; n < 32; ++n) {
		if (n == reg::sp)
			continue;
		insn = at(out, pc);
		EXPECT_EQ(insn.kind, InstructionClass::load) << "x" << n;
		EXPECT_EQ(insn.rd, n);
		EXPECT_EQ(insn.rs1, reg::sp);
		EXPECT_EQ(insn.immediate, int64_t(n * 8));
		pc += 4;
	}
	insn = at(out, pc);
	EXPECT_EQ(insn.operation, Operation::addi);
	EXPECT_EQ(insn.rd, reg::sp);
	EXPECT_EQ(insn.immediate, int64_t(pt_regs_size));
	pc += 4;
	ASSERT_EQ(pc, detour_frame_size);

	// The window's copy, exactly as relocate_window writes it there.
	uint8_t copy[max_relocated_window];
	const size_t copy_length = relocate_window(plan, base + 2, detour + detour_frame_size, copy, sizeof(copy));
	ASSERT_GT(copy_length, 0u);
	EXPECT_EQ(0, memcmp(out + detour_frame_size, copy, copy_length));
	EXPECT_LE(detour_frame_size + copy_length, literal);
}

// An end-anchored window at a return (+0xa): 6: c.ldsp ra, 8(sp);
// 8: c.addi16sp sp, 16; a: c.jr ra.
TEST(RiscvDetour, AnEndAnchoredWindowRunsItsEpilogueBeforeTheFrame)
{
	const std::vector<uint8_t> bytes = assemble({c(0x717d), c(0xe406), c(0x4501), c(0x60a2), c(0x6141), c(0x8082)});
	FunctionAnalysis analysis;
	ASSERT_TRUE(analysis.build({bytes.data(), base, bytes.size()}, nullptr, 0, nullptr, 0));
	const OptimizationPlan plan = plan_jump_optimization(analysis, base + 0xa);
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
	ASSERT_EQ(plan.behind, 4);
	uint8_t out[max_detour_size];
	size_t copy_offset = 0;
	const size_t length = build_detour(plan, base + 6, detour, entry, site, out, sizeof(out), &copy_offset);
	ASSERT_GT(length, 0u);
	ASSERT_LE(length, max_detour_size);
	// The epilogue first, as it was: the frame sees ra and sp as the
	// return will.
	EXPECT_EQ(out[0] | out[1] << 8, 0x60a2);
	EXPECT_EQ(out[2] | out[3] << 8, 0x6141);
	// Then the frame, whole, where build_detour of a plain window puts it
	// at the detour's start.
	EXPECT_EQ(copy_offset, 4 + detour_frame_size);
	Instruction insn = at(out, 4);
	EXPECT_EQ(insn.operation, Operation::addi);
	EXPECT_EQ(insn.rd, reg::sp);
	EXPECT_EQ(insn.immediate, -int64_t(pt_regs_size));
	// The site's literal, 8-byte aligned in memory, loaded by the frame.
	size_t pc = 4 + 4 + 30 * 4 + 8;
	const Instruction auipc = at(out, pc), load = at(out, pc + 4);
	ASSERT_EQ(auipc.operation, Operation::auipc);
	ASSERT_EQ(load.kind, InstructionClass::load);
	const size_t literal = pc + auipc.immediate + load.immediate;
	EXPECT_EQ((detour + literal) % 8, 0u);
	EXPECT_EQ(literal + 8, length);
	uint64_t value = 0;
	for (int b = 7; b >= 0; --b)
		value = value << 8 | out[literal + b];
	EXPECT_EQ(value, site);
	// The entry's call, then the restore, then the return's copy.
	pc += 8 + 4;
	const Instruction call_high = at(out, pc), call = at(out, pc + 4);
	EXPECT_EQ(detour + pc + call_high.immediate + call.immediate, entry);
	insn = at(out, copy_offset - 4);
	EXPECT_EQ(insn.operation, Operation::addi);
	EXPECT_EQ(insn.rd, reg::sp);
	EXPECT_EQ(insn.immediate, int64_t(pt_regs_size));
	EXPECT_EQ(out[copy_offset] | out[copy_offset + 1] << 8, 0x8082);
	EXPECT_LE(copy_offset + 2, literal);

	// A counting detour needs the jump's arrival: none for such a window.
	CounterCall counter;
	counter.cells = 0xffffaf8001230000;
	counter.cpu_offset = 32;
	size_t prologue = 0;
	EXPECT_EQ(build_counting_detour(plan, base + 6, detour, counter, out, sizeof(out), &prologue), 0u);
}

TEST(RiscvDetour, RefusesAnEntryOutOfReachAndAMisalignedDetour)
{
	const OptimizationPlan plan = sample_plan();
	uint8_t out[max_detour_size];
	EXPECT_EQ(build_detour(plan, base + 2, detour, detour + (uint64_t(1) << 32), site, out, sizeof(out)), 0u);
	EXPECT_EQ(build_detour(plan, base + 2, detour + 2, entry, site, out, sizeof(out)), 0u);
	EXPECT_EQ(build_detour(plan, base + 2, detour, entry, site, out, detour_frame_size), 0u);
}

// The 8 literal bytes at offset of out.
uint64_t literal_at(const uint8_t *out, size_t offset)
{
	uint64_t value = 0;
	for (int b = 0; b < 8; ++b)
		value |= uint64_t(out[offset + b]) << (8 * b);
	return value;
}

// The counting detour: the CPU's cell from tp's thread_info.cpu, an
// amoadd.d of 1 through the entry's register and a second dead one, then
// the window and the cells in the literal. Here the entry's register is
// unknown on arrival: an auipc of the detour's own finds the literal.
TEST(RiscvDetour, ACountingDetourAddsOneToTheCpusCellThenRunsTheWindow)
{
	const OptimizationPlan plan = sample_plan();
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none);
	const unsigned second = counting_second_register(plan);
	ASSERT_NE(second, 0u) << "t1 and t0 are dead at +2";
	ASSERT_NE(second, plan.entry_register);
	CounterCall counter;
	counter.cells = site;
	counter.cpu_offset = 0x20;
	uint8_t out[max_counting_detour_size];
	size_t prologue = 0;
	const size_t length = build_counting_detour(plan, base + 2, detour, counter, out, sizeof(out), &prologue);
	ASSERT_EQ(prologue, counting_prologue_size);
	ASSERT_GT(length, prologue);
	const unsigned e = plan.entry_register;

	Instruction insn = at(out, 0);
	EXPECT_EQ(insn.operation, Operation::lw);
	EXPECT_EQ(insn.rd, second);
	EXPECT_EQ(insn.rs1, reg::tp);
	EXPECT_EQ(insn.immediate, 0x20);
	insn = at(out, 4);
	EXPECT_EQ(insn.operation, Operation::slli);
	EXPECT_EQ(insn.immediate, 6);
	insn = at(out, 8);
	EXPECT_EQ(insn.operation, Operation::auipc);
	EXPECT_EQ(insn.rd, e);
	insn = at(out, 12);
	EXPECT_EQ(insn.operation, Operation::ld);
	const size_t literal = 8 + size_t(insn.immediate);
	ASSERT_EQ(literal % 8, 0u);
	ASSERT_LE(literal + 8, length);
	EXPECT_EQ(literal_at(out, literal), site);
	insn = at(out, 16);
	EXPECT_EQ(insn.operation, Operation::add);
	EXPECT_EQ(insn.rd, e);
	EXPECT_EQ(insn.rs2, second);
	insn = at(out, 20);
	EXPECT_EQ(insn.operation, Operation::addi);
	EXPECT_EQ(insn.rd, second);
	EXPECT_EQ(insn.immediate, 1);
	insn = at(out, 24);
	EXPECT_EQ(insn.operation, Operation::amoadd);
	EXPECT_EQ(insn.rs1, e);
	EXPECT_EQ(insn.rs2, second);
	EXPECT_EQ(insn.rd, reg::zero);
	// Then the window: addi a0, a1, -5 first.
	insn = at(out, counting_prologue_size);
	EXPECT_EQ(insn.operation, Operation::addi);
	EXPECT_EQ(insn.rd, reg::a0);
	EXPECT_EQ(insn.immediate, -5);
	// No second dead register, no counting detour.
	OptimizationPlan lone = plan;
	lone.entry_candidates = register_bit(lone.entry_register);
	EXPECT_EQ(counting_second_register(lone), 0u);
	EXPECT_EQ(build_counting_detour(lone, base + 2, detour, counter, out, sizeof(out), &prologue), 0u);
}

// What the window's jump leaves in its register: auipc's sum for
// "auipc; jalr", the target for "auipc; c.jr".
TEST(RiscvDetour, TheEntryRegisterHoldsTheAuipcsSumOnArrival)
{
	const OptimizationPlan plan = sample_plan();
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none);
	ASSERT_FALSE(plan.needs_landing());
	for (const uint64_t target : {detour, detour + 0x7f8, detour + 0x800, detour + 0xff8, detour - 0x808}) {
		uint8_t jump[max_window_size];
		ASSERT_EQ(encode_window_jump(plan, base + 2, target, jump), size_t(long_jump_size));
		const Instruction auipc = at(jump, 0), jalr = at(jump, 4);
		ASSERT_EQ(auipc.operation, Operation::auipc);
		const uint64_t sum = base + 2 + uint64_t(auipc.immediate);
		EXPECT_EQ(window_jump_register_value(plan, base + 2, target), sum);
		EXPECT_EQ(sum + uint64_t(jalr.immediate), target);
	}
	// "auipc; c.jr" lands at the probe's page offset, E the landing.
	OptimizationPlan short_plan = plan;
	short_plan.window_length = short_jump_size;
	const uint64_t landing = (detour & ~uint64_t(0xfff)) + ((base + 2) & 0xfff);
	uint8_t jump[max_window_size];
	ASSERT_EQ(encode_window_jump(short_plan, base + 2, landing, jump), size_t(short_jump_size));
	const Instruction auipc = at(jump, 0);
	ASSERT_EQ(auipc.operation, Operation::auipc);
	EXPECT_EQ(base + 2 + uint64_t(auipc.immediate), landing) << "c.jr jumps to E itself";
	EXPECT_EQ(window_jump_register_value(short_plan, base + 2, landing), landing);
}

// Where the window's jump arrives with the literal within ld's reach of
// its register, the prologue loads the cells through it: six instructions.
TEST(RiscvDetour, ACountingDetourLoadsItsCellsThroughTheArrivingRegister)
{
	const OptimizationPlan plan = sample_plan();
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none);
	const unsigned e = plan.entry_register, second = counting_second_register(plan);
	CounterCall counter;
	counter.cells = site;
	counter.cpu_offset = 0x20;
	uint8_t out[max_counting_detour_size];
	size_t prologue = 0;
	// Detours at both ends of jalr's offset, and in between.
	for (const uint64_t at_detour : {detour, detour + 0x7f8, detour + 0x800, detour + 0xff8}) {
		counter.arrival = window_jump_register_value(plan, base + 2, at_detour);
		const size_t length =
			build_counting_detour(plan, base + 2, at_detour, counter, out, sizeof(out), &prologue);
		ASSERT_GT(length, prologue);
		const Instruction load = at(out, 8);
		// The short prologue's literal: 24 + the window's 8 + the jump
		// back's 8, at 40. Out of ld's reach from the arrival, the auipc.
		const bool reaches = int64_t(at_detour + 40 - counter.arrival) <= 2047;
		if (!reaches) {
			EXPECT_EQ(prologue, counting_prologue_size) << std::hex << at_detour;
			EXPECT_EQ(load.operation, Operation::auipc);
			continue;
		}
		ASSERT_EQ(prologue, short_counting_prologue_size) << std::hex << at_detour;
		EXPECT_EQ(at(out, 0).operation, Operation::lw);
		EXPECT_EQ(at(out, 4).operation, Operation::slli);
		EXPECT_EQ(load.operation, Operation::ld);
		EXPECT_EQ(load.rd, e);
		EXPECT_EQ(load.rs1, e);
		const uint64_t literal = counter.arrival + uint64_t(load.immediate);
		ASSERT_GE(literal, at_detour);
		ASSERT_LE(literal + 8, at_detour + length);
		EXPECT_EQ(literal % 8, 0u);
		EXPECT_EQ(literal_at(out, literal - at_detour), site);
		EXPECT_EQ(at(out, 12).operation, Operation::add);
		EXPECT_EQ(at(out, 16).operation, Operation::addi);
		EXPECT_EQ(at(out, 16).rd, second);
		EXPECT_EQ(at(out, 20).operation, Operation::amoadd);
		// Then the window.
		EXPECT_EQ(at(out, prologue).operation, Operation::addi);
		EXPECT_EQ(at(out, prologue).immediate, -5);
	}
	// Both kinds came out above: at detour and detour + 0xff8 the short
	// one, at 0x7f8 and 0x800 (jalr's offsets near +2047) the auipc.
	counter.arrival = window_jump_register_value(plan, base + 2, detour);
	build_counting_detour(plan, base + 2, detour, counter, out, sizeof(out), &prologue);
	EXPECT_EQ(prologue, short_counting_prologue_size);
	counter.arrival = window_jump_register_value(plan, base + 2, detour + 0x800);
	build_counting_detour(plan, base + 2, detour + 0x800, counter, out, sizeof(out), &prologue);
	EXPECT_EQ(prologue, counting_prologue_size);
	// One far from its literal gets the auipc.
	counter.arrival = detour - 0x1000;
	build_counting_detour(plan, base + 2, detour, counter, out, sizeof(out), &prologue);
	EXPECT_EQ(prologue, counting_prologue_size);
	EXPECT_EQ(at(out, 8).operation, Operation::auipc);
}

TEST(RiscvDetour, TheJumpBackIsOneJalWhereItReaches)
{
	const OptimizationPlan plan = sample_plan();
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none);
	CounterCall counter;
	counter.cells = site;
	uint8_t out[max_counting_detour_size];
	const uint64_t near = base + 0x80000; // 512 KiB past the function
	size_t prologue = 0;
	const size_t length = build_counting_detour(plan, base + 2, near, counter, out, sizeof(out), &prologue);
	ASSERT_EQ(prologue, counting_prologue_size) << "no arrival given";
	ASSERT_GT(length, counting_prologue_size);
	// The window (two 4-byte addi), then jal zero back to base + 10.
	const size_t back = counting_prologue_size + 8;
	const Instruction jal = at(out, back);
	EXPECT_EQ(jal.operation, Operation::jal);
	EXPECT_EQ(jal.rd, reg::zero);
	EXPECT_EQ(near + back + uint64_t(jal.immediate), base + 10);
	// Far away, auipc + jalr through the return register.
	build_counting_detour(plan, base + 2, detour, counter, out, sizeof(out), &prologue);
	EXPECT_EQ(at(out, back).operation, Operation::auipc);
}

} // namespace
