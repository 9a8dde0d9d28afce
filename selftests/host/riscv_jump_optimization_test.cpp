// SPDX-License-Identifier: GPL-2.0
// The riscv64 jump optimizer on crafted functions: the window, the rules
// that refuse it, the registers it picks, and the encodings of the patched
// jump and of the relocated window (checked by decoding them back: running
// riscv code is not possible on the host).
#include "riscv/jump_optimization.hpp"

#include "riscv_code.hpp"

#include <gtest/gtest.h>

namespace {

using namespace okp::riscv;
using namespace okp::riscv::test;

constexpr uint64_t base = 0xffffffff80100000;
// The lowest module address of the test kernels: ~2 GiB below the text.
constexpr uint64_t detour = 0xffffffff017a4000;
constexpr unsigned ra = 1, t0 = 5, t1 = 6, a0 = 10, a1 = 11, a5 = 15;

struct Built {
	std::vector<uint8_t> bytes;
	FunctionAnalysis analysis;
	explicit Built(std::initializer_list<Encoding> code, const std::vector<ExtraEdge> &edges = {})
	    : bytes(assemble(code))
	{
		EXPECT_TRUE(analysis.build({bytes.data(), base, bytes.size()}, nullptr, 0, edges.data(), edges.size()));
	}
	OptimizationPlan plan(uint64_t offset, bool relocate = true) const
	{
		PlanOptions options;
		options.relocate = relocate;
		return plan_jump_optimization(analysis, base + offset, options);
	}
};

Instruction decode_at(const uint8_t *bytes)
{
	return decode_instruction(bytes, 4);
}

// "auipc rX, hi; jalr x0, lo(rX)" at pc: its target, and rX.
uint64_t far_jump_target(const uint8_t *bytes, uint64_t pc, unsigned *reg)
{
	const Instruction auipc = decode_at(bytes), jalr = decode_at(bytes + 4);
	EXPECT_EQ(auipc.operation, Operation::auipc);
	EXPECT_EQ(jalr.operation, Operation::jalr);
	EXPECT_EQ(jalr.rd, 0);
	EXPECT_EQ(jalr.rs1, auipc.rd);
	*reg = auipc.rd;
	return pc + auipc.immediate + jalr.immediate;
}

// "auipc rX, hi; c.jr rX" at pc: its target, and rX.
uint64_t short_jump_target(const uint8_t *bytes, uint64_t pc, unsigned *reg)
{
	const Instruction auipc = decode_at(bytes), jr = decode_instruction(bytes + 4, 2);
	EXPECT_EQ(auipc.operation, Operation::auipc);
	EXPECT_EQ(jr.operation, Operation::c_jr);
	EXPECT_EQ(jr.length, 2);
	EXPECT_EQ(jr.rs1, auipc.rd);
	*reg = auipc.rd;
	return pc + auipc.immediate;
}

// "lui rd, hi; addi rd, rd, lo": the value, and rd.
uint64_t materialised_value(const uint8_t *bytes, unsigned *reg)
{
	const Instruction lui = decode_at(bytes), addi = decode_at(bytes + 4);
	EXPECT_EQ(lui.operation, Operation::lui);
	EXPECT_EQ(addi.operation, Operation::addi);
	EXPECT_EQ(addi.rd, lui.rd);
	EXPECT_EQ(addi.rs1, lui.rd);
	*reg = lui.rd;
	return uint64_t(lui.immediate + addi.immediate);
}

TEST(RiscvJumpOptimization, WindowOfTwoRviInstructionsAndOneRegisterForBoth)
{
	// 0: c.li t0, 1; 2: addi a0, a1, -5; 6: addi a0, a0, 1; a: c.li t1, 0;
	// c: c.li t0, 0; e: jal t0, +0x100 (linking through t0, millicode:
	// reads everything)
	Built f({c(0x4285), i(0xffb58513), i(0x00150513), c(0x4301), c(0x4281), i(0x100002ef)});
	const OptimizationPlan plan = f.plan(2);
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
	EXPECT_EQ(plan.window_length, 8);
	EXPECT_EQ(plan.count, 2);
	EXPECT_FALSE(plan.needs_landing()); // auipc + jalr, at a 2-byte boundary
	EXPECT_FALSE(plan.relocates);
	// t0 and t1 are written later, a0 by the probed addi itself.
	EXPECT_EQ(plan.entry_candidates, register_bit(t0) | register_bit(t1) | register_bit(a0));
	EXPECT_EQ(plan.return_candidates, register_bit(t0) | register_bit(t1));
	EXPECT_EQ(plan.entry_register, t1);
	EXPECT_EQ(plan.return_register, t1);

	uint8_t patch[max_window_size];
	ASSERT_EQ(encode_window_jump(plan, base + 2, detour, patch), 8u);
	unsigned reg;
	EXPECT_EQ(far_jump_target(patch, base + 2, &reg), detour);
	EXPECT_EQ(reg, t1);

	uint8_t copy[max_relocated_window];
	ASSERT_EQ(relocate_window(plan, base + 2, detour, copy, sizeof(copy)), 16u);
	EXPECT_EQ(word_at(copy), 0xffb58513u); // copied as they are
	EXPECT_EQ(word_at(copy + 4), 0x00150513u);
	EXPECT_EQ(far_jump_target(copy + 8, detour + 8, &reg), base + 10); // back after the window
	EXPECT_EQ(reg, t1);
}

TEST(RiscvJumpOptimization, SixByteWindowIsAuipcAndCJrToTheProbesPageOffset)
{
	// 0: c.li t0, 1; 2: addi a0, a1, -5; 6: addi a0, a0, 1; a: c.li t1, 0;
	// c: c.li t0, 0; e: c.jr ra
	Built f({c(0x4285), i(0xffb58513), i(0x00150513), c(0x4301), c(0x4281), c(0x8082)});
	const OptimizationPlan plan = f.plan(0);
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
	EXPECT_EQ(plan.window_length, 6); // 2 + 4: the 8-byte jump would take 10
	EXPECT_EQ(plan.count, 2);
	EXPECT_TRUE(plan.needs_landing());
	EXPECT_EQ(plan.entry_register, t1);
	uint8_t patch[max_window_size];
	// c.jr has no offset: only a landing on the probe's page offset.
	const uint64_t landing = detour + 0x3000 + (base % landing_alignment);
	ASSERT_EQ(encode_window_jump(plan, base, landing, patch), 6u);
	unsigned reg;
	EXPECT_EQ(short_jump_target(patch, base, &reg), landing);
	EXPECT_EQ(reg, t1);
	EXPECT_EQ(encode_window_jump(plan, base, landing + 16, patch), 0u);
	EXPECT_EQ(encode_window_jump(plan, base, landing + 2, patch), 0u);

	// The same from a page's last 6 bytes.
	const uint64_t odd = base + 0xffa;
	ASSERT_EQ(encode_window_jump(plan, odd, detour + 0xffa, patch), 6u);
	EXPECT_EQ(short_jump_target(patch, odd, &reg), detour + 0xffa);

	// The copy runs both instructions and jumps back to the window's end.
	uint8_t copy[max_relocated_window];
	ASSERT_EQ(relocate_window(plan, base, detour, copy, sizeof(copy)), 2u + 4 + 8);
	EXPECT_EQ(far_jump_target(copy + 6, detour + 6, &reg), base + 6);
}

TEST(RiscvJumpOptimization, AuipcAndBranchAreRelocated)
{
	// 0: auipc a5, 0x10; 4: c.bnez a0, +6 (-> a); 6: c.li t0, 1;
	// 8: c.li t1, 0; a: c.li t1, 0; c: c.li t2, 0; e: c.mv a0, t0;
	// 10: c.jr ra
	Built f({i(0x00010797), c(0xe119), c(0x4285), c(0x4301), c(0x4301), c(0x4381), c(0x8516), c(0x8082)});
	const OptimizationPlan plan = f.plan(0);
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
	EXPECT_TRUE(plan.relocates);
	EXPECT_EQ(plan.count, 2); // auipc, c.bnez: 6 bytes
	EXPECT_TRUE(plan.needs_landing());
	EXPECT_TRUE(plan.entry_candidates & register_bit(a5)); // auipc writes it first
	EXPECT_EQ(plan.entry_register, t1);
	EXPECT_EQ(plan.return_register, t1); // dead at the branch target and at the end

	uint8_t copy[max_relocated_window];
	const size_t length = relocate_window(plan, base, detour, copy, sizeof(copy));
	ASSERT_EQ(length, 28u);
	unsigned reg;
	EXPECT_EQ(materialised_value(copy, &reg), base + 0x10000); // the auipc's value, absolute
	EXPECT_EQ(reg, a5);
	const Instruction skip = decode_at(copy + 8); // c.bnez a0 -> beq a0, x0, over the far jump
	EXPECT_EQ(skip.operation, Operation::beq);
	EXPECT_EQ(skip.rs1, a0);
	EXPECT_EQ(skip.rs2, 0);
	EXPECT_EQ(skip.immediate, 12);
	EXPECT_EQ(far_jump_target(copy + 12, detour + 12, &reg), base + 0xa); // taken
	EXPECT_EQ(reg, t1);
	EXPECT_EQ(far_jump_target(copy + 20, detour + 20, &reg), base + 6); // not taken, at the end

	// Without relocation the same window is refused.
	EXPECT_EQ(f.plan(0, false).refusal, OptimizationRefusal::pc_relative_in_window);
	EXPECT_EQ(f.plan(4, false).refusal, OptimizationRefusal::control_flow_in_window);
}

TEST(RiscvJumpOptimization, StrictLivenessRefusesACallThatNeedsATemporary)
{
	// 0: c.li a0, 1; 2: c.li a1, 2; 4: jal ra, +0x100; 8: li t0, 0;
	// c: c.jr ra. Strict: the callee may read t0, which the relocated
	// call would jump through.
	const std::vector<uint8_t> bytes = assemble({c(0x4505), c(0x4589), i(0x100000ef), i(0x00000293), c(0x8082)});
	FunctionAnalysis strict;
	strict.set_psabi(false);
	ASSERT_TRUE(strict.build({bytes.data(), base, bytes.size()}, nullptr, 0, nullptr, 0));
	const OptimizationPlan plan = plan_jump_optimization(strict, base);
	EXPECT_EQ(plan.refusal, OptimizationRefusal::window_not_relocatable) << optimization_refusal_text(plan.refusal);
	EXPECT_EQ(plan.refusal_address, base + 4);
}

TEST(RiscvJumpOptimization, CallAtTheWindowEndReturnsToTheOriginalText)
{
	// 0: c.li a0, 1; 2: c.li a1, 2; 4: jal ra, +0x100; 8: c.jr ra
	Built f({c(0x4505), c(0x4589), i(0x100000ef), c(0x8082)});
	const OptimizationPlan plan = f.plan(0);
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
	EXPECT_TRUE(plan.ends_in_transfer);
	EXPECT_EQ(plan.return_register, 0); // the callee returns by itself
	EXPECT_EQ(plan.call_register, t1);
	EXPECT_EQ(plan.entry_register, t1); // a callee may clobber t1: nobody reads it after

	uint8_t copy[max_relocated_window];
	ASSERT_EQ(relocate_window(plan, base, detour, copy, sizeof(copy)), 20u);
	EXPECT_EQ(copy[0] | copy[1] << 8, 0x4505);
	EXPECT_EQ(copy[2] | copy[3] << 8, 0x4589);
	unsigned reg;
	EXPECT_EQ(materialised_value(copy + 4, &reg), base + 8);
	EXPECT_EQ(reg, ra);
	EXPECT_EQ(far_jump_target(copy + 12, detour + 12, &reg), base + 4 + 0x100);
	EXPECT_EQ(reg, t1);
}

TEST(RiscvJumpOptimization, IndirectCallThroughRaComputesTheTargetFirst)
{
	// 0: c.li t0, 0; 2: c.li t1, 0; 4: c.li t2, 0; 6: c.jalr ra; 8: c.jr ra
	Built f({c(0x4281), c(0x4301), c(0x4381), c(0x9082), c(0x8082)});
	const OptimizationPlan plan = f.plan(2);
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
	EXPECT_EQ(plan.call_register, t1);
	uint8_t copy[max_relocated_window];
	ASSERT_EQ(relocate_window(plan, base + 2, detour, copy, sizeof(copy)), 4u + 4 + 8 + 4);
	EXPECT_EQ(word_at(copy + 4), encode::addi(t1, ra, 0)); // t1 = ra, the target
	unsigned reg;
	EXPECT_EQ(materialised_value(copy + 8, &reg), base + 8); // ra = the return address
	EXPECT_EQ(reg, ra);
	EXPECT_EQ(word_at(copy + 16), encode::jalr(0, t1, 0));
}

TEST(RiscvJumpOptimization, CallBeforeTheWindowEndIsRefused)
{
	// 0: jal ra, +0x100; 4: c.li a0, 1; 6: c.li a1, 2; 8: c.jr ra
	Built f({i(0x100000ef), c(0x4505), c(0x4589), c(0x8082)});
	EXPECT_EQ(f.plan(0).refusal, OptimizationRefusal::call_inside_window);
	// 2 bytes earlier the call ends a 6-byte window.
	Built g({c(0x4505), i(0x100000ef), c(0x4589), c(0x8082)});
	const OptimizationPlan plan = g.plan(0);
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
	EXPECT_EQ(plan.window_length, 6);
	EXPECT_TRUE(plan.ends_in_transfer);
}

TEST(RiscvJumpOptimization, JumpIntoTheInteriorIsRefusedButToTheStartIsFine)
{
	// 0: c.li t0, 1; 2: c.li t1, 2; 4: c.beqz a0, -2 (-> 2); 6: c.jr ra
	Built f({c(0x4285), c(0x4309), c(0xdd7d), c(0x8082)});
	const OptimizationPlan inside = f.plan(0);
	EXPECT_EQ(inside.refusal, OptimizationRefusal::jump_into_window);
	EXPECT_EQ(inside.refusal_address, base + 2);

	const OptimizationPlan start = f.plan(2);
	ASSERT_EQ(start.refusal, OptimizationRefusal::none) << optimization_refusal_text(start.refusal);
	EXPECT_TRUE(start.ends_in_transfer);  // the return ends the copy
	EXPECT_EQ(start.return_register, t1); // dead at the branch target: nothing reads it
	uint8_t copy[max_relocated_window];
	const size_t length = relocate_window(start, base + 2, detour, copy, sizeof(copy));
	ASSERT_EQ(length, 2u + 4 + 8 + 2);
	unsigned reg;
	EXPECT_EQ(far_jump_target(copy + 6, detour + 6, &reg), base + 2); // the loop re-enters the jump
	EXPECT_EQ(reg, t1);
	EXPECT_EQ(copy[length - 2] | copy[length - 1] << 8, 0x8082); // c.jr ra copied
}

TEST(RiscvJumpOptimization, RegistersMustBeDeadAtBothEnds)
{
	// Everything is live before a call linking through t0 (millicode).
	Built nops({c(0x0001), c(0x0001), c(0x0001), c(0x0001), i(0x100002ef)});
	EXPECT_EQ(nops.plan(0).refusal, OptimizationRefusal::no_entry_register);
	// 0: c.li t0, 1; 2: c.li t1, 2; 4: c.li t2, 3; 6: c.li t3, 4; 8: jal t0
	Built writes({c(0x4285), c(0x4309), c(0x438d), c(0x4e11), i(0x100002ef)});
	EXPECT_EQ(writes.plan(2).refusal, OptimizationRefusal::no_return_register);
	// Forbidden registers are never offered.
	PlanOptions options;
	options.forbidden |= register_bit(t0) | register_bit(t1);
	Built f({c(0x4285), i(0xffb58513), i(0x00150513), c(0x4301), c(0x4281), i(0x100002ef)});
	EXPECT_EQ(plan_jump_optimization(f.analysis, base + 2, options).refusal,
		  OptimizationRefusal::no_return_register); // a0 is free only at the probe
	options.forbidden |= register_bit(a0);
	EXPECT_EQ(plan_jump_optimization(f.analysis, base + 2, options).refusal,
		  OptimizationRefusal::no_entry_register);
}

TEST(RiscvJumpOptimization, AtAReturnThePsAbiFreesTheTemporariesAndArguments)
{
	// 0-6: c.nop; 8: c.jr ra. Before the psABI rule nothing was dead.
	Built nops({c(0x0001), c(0x0001), c(0x0001), c(0x0001), c(0x8082)});
	const OptimizationPlan plan = nops.plan(0);
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
	EXPECT_EQ(plan.entry_candidates, all_registers & ~read_at_return & ~never_free);
	EXPECT_EQ(plan.return_candidates, plan.entry_candidates);
	EXPECT_EQ(plan.entry_register, t1);
	// The return values and the callee-saved registers are never taken.
	EXPECT_FALSE(plan.entry_candidates &
		     (register_bit(a0) | register_bit(a1) | register_bit(8) | register_bit(9) | register_bit(ra)));
}

TEST(RiscvJumpOptimization, ATailCallInTheWindowReturnsThroughATemporary)
{
	// 0: c.li a2, 1; 2: c.li a3, 2; 4: c.li t0, 0; 6: c.j +0x400 (out)
	Built f({c(0x4605), c(0x4689), c(0x4281), c(0xa101)});
	const OptimizationPlan plan = f.plan(2);
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
	EXPECT_TRUE(plan.ends_in_transfer);
	// a2 and a3 are written in the window but the callee reads them:
	// only temporaries may carry the jump.
	EXPECT_EQ(plan.return_candidates, all_registers & ~read_at_tail_call & ~never_free);
	EXPECT_FALSE(plan.return_candidates & register_bit(12));
	EXPECT_EQ(plan.return_register, t1);
	uint8_t copy[max_relocated_window];
	ASSERT_EQ(relocate_window(plan, base + 2, detour, copy, sizeof(copy)), 4u + 8);
	unsigned reg;
	EXPECT_EQ(far_jump_target(copy + 4, detour + 4, &reg), base + 6 + 0x400);
	EXPECT_EQ(reg, t1);
}

TEST(RiscvJumpOptimization, FunctionAndWindowRefusals)
{
	Built short_function({c(0x4285), c(0x8082)});
	EXPECT_EQ(short_function.plan(0).refusal, OptimizationRefusal::window_past_function);
	EXPECT_EQ(short_function.plan(1).refusal, OptimizationRefusal::not_an_instruction);

	Built table({c(0x4281), c(0x4301), c(0x4381), c(0x4e11), c(0x8782)}); // ... c.jr a5
	EXPECT_EQ(table.plan(0).refusal, OptimizationRefusal::indirect_jump);

	Built ecall({c(0x4281), i(0x00000073), c(0x4301), c(0x8082)});
	EXPECT_EQ(ecall.plan(0).refusal, OptimizationRefusal::window_not_relocatable);

	Built lr_sc({i(0x1005a52f), i(0x00c51663), i(0x18e5a6af), i(0xfe069ae3), i(0x00150513), c(0x4281), c(0x4281),
		     c(0x4281), c(0x8082)});
	EXPECT_EQ(lr_sc.plan(4).refusal, OptimizationRefusal::lr_sc_sequence);

	Built fixup({c(0x4281), i(0x01013503), c(0x4301), c(0x4281), c(0x8082)},
		    {{base + 2, base + 8, ExtraEdge::Kind::exception_fixup}});
	EXPECT_EQ(fixup.plan(0).refusal, OptimizationRefusal::exception_entry);
	EXPECT_EQ(fixup.analysis.target_within(base + 3, base + 10), base + 8); // the fixup is a target
}

// 0: c.addi16sp sp, -16; 2: c.sdsp ra, 8(sp); 4: c.li a0, 0;
// 6: c.ldsp ra, 8(sp); 8: c.addi16sp sp, 16; a: c.jr ra
std::initializer_list<Encoding> epilogue_function()
{
	static const std::initializer_list<Encoding> code = {c(0x717d), c(0xe406), c(0x4501),
							     c(0x60a2), c(0x6141), c(0x8082)};
	return code;
}

TEST(RiscvJumpOptimization, AtAReturnTheWindowEndsThereOverTheEpilogue)
{
	Built f(epilogue_function());
	const OptimizationPlan plan = f.plan(0xa);
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
	EXPECT_EQ(plan.behind, 4);
	EXPECT_EQ(plan.window_length, 6);
	EXPECT_TRUE(plan.needs_landing()); // auipc + c.jr from base + 6
	ASSERT_EQ(plan.count, 3);
	EXPECT_EQ(plan.copied, 3);
	EXPECT_EQ(plan.before_frame(), 2);
	EXPECT_EQ(plan.instructions[0].offset, 0);
	EXPECT_EQ(plan.instructions[1].offset, 2);
	EXPECT_EQ(plan.instructions[2].offset, 4);
	EXPECT_EQ(plan.instructions[2].instruction.operation, Operation::c_jr);
	EXPECT_TRUE(plan.ends_in_transfer);
	EXPECT_FALSE(plan.relocates);
	// Dead at the window's start: not a0 (returned), nor s0 (the
	// caller's); ra is (the epilogue loads it before the return reads
	// it), and the temporaries, taken first.
	EXPECT_FALSE(plan.entry_candidates & (register_bit(a0) | register_bit(8)));
	EXPECT_TRUE(plan.entry_candidates & register_bit(ra));
	EXPECT_EQ(plan.entry_register, t1);
	EXPECT_EQ(plan.return_register, 0);

	// The jump goes at the window's start; the copies run from there.
	uint8_t jump[max_window_size];
	const uint64_t landing = detour + ((base + 6) % landing_alignment);
	ASSERT_EQ(encode_window_jump(plan, base + 6, landing, jump), 6u);
	unsigned reg;
	EXPECT_EQ(short_jump_target(jump, base + 6, &reg), landing);
	EXPECT_EQ(reg, t1);
	uint8_t copy[max_relocated_window];
	ASSERT_EQ(relocate_instructions(plan, base + 6, 0, plan.before_frame(), false, detour, copy, sizeof(copy)), 4u);
	EXPECT_EQ(copy[0] | copy[1] << 8, 0x60a2);
	EXPECT_EQ(copy[2] | copy[3] << 8, 0x6141);
	ASSERT_EQ(relocate_instructions(plan, base + 6, plan.before_frame(), plan.copied, false, detour, copy,
					sizeof(copy)),
		  2u);
	EXPECT_EQ(copy[0] | copy[1] << 8, 0x8082);

	// Off: the window would run past the function, as before.
	PlanOptions options;
	options.end_anchored = false;
	EXPECT_EQ(plan_jump_optimization(f.analysis, base + 0xa, options).refusal,
		  OptimizationRefusal::window_past_function);
	// Only a transfer's window may end there: not a plain instruction's.
	EXPECT_EQ(f.plan(8).refusal, OptimizationRefusal::window_past_function);
}

TEST(RiscvJumpOptimization, AnEndAnchoredWindowTakesNoTargetButAtItsStart)
{
	// A jump to the epilogue's start (6) is fine: the window starts there.
	Built to_start(epilogue_function(), {{base + 2, base + 6, ExtraEdge::Kind::jump_label}});
	EXPECT_EQ(to_start.plan(0xa).refusal, OptimizationRefusal::none);
	// One into it (8) or at the return itself is refused.
	Built inside(epilogue_function(), {{base + 2, base + 8, ExtraEdge::Kind::jump_label}});
	EXPECT_EQ(inside.plan(0xa).refusal, OptimizationRefusal::jump_into_window);
	EXPECT_EQ(inside.plan(0xa).refusal_address, base + 8);
	Built at_return(epilogue_function(), {{base + 2, base + 0xa, ExtraEdge::Kind::jump_label}});
	EXPECT_EQ(at_return.plan(0xa).refusal, OptimizationRefusal::jump_into_window);
}

TEST(RiscvJumpOptimization, AnEndAnchoredWindowHoldsStraightLineCodeOnly)
{
	// 0: c.beqz a0, +6 (-> 6); 2: c.li a0, 1; 4: c.jr ra; 6: c.li a0, 2;
	// 8: c.jr ra. The second return's window would start on the first.
	Built branches({c(0xc119), c(0x4505), c(0x8082), c(0x4509), c(0x8082)});
	EXPECT_EQ(branches.plan(8).refusal, OptimizationRefusal::control_flow_in_window);
	EXPECT_EQ(branches.plan(8).refusal_address, base + 4);
	// The first return's would start on the branch.
	EXPECT_EQ(branches.plan(4).refusal, OptimizationRefusal::control_flow_in_window);
	EXPECT_EQ(branches.plan(4).refusal_address, base);
	// Nothing before: 0: c.li a0, 0; 2: c.jr ra.
	Built tiny({c(0x4501), c(0x8082)});
	EXPECT_EQ(tiny.plan(2).refusal, OptimizationRefusal::window_before_function);
	// A system instruction cannot be copied: 0: ecall; 4: c.jr ra.
	Built ecall({i(0x00000073), c(0x8082)});
	EXPECT_EQ(ecall.plan(4).refusal, OptimizationRefusal::window_not_relocatable);
	// Strict liveness: the return reads every register; only ra, which
	// the epilogue loads, is dead at its start.
	FunctionAnalysis strict;
	const std::vector<uint8_t> bytes = assemble(epilogue_function());
	strict.set_psabi(false);
	ASSERT_TRUE(strict.build({bytes.data(), base, bytes.size()}, nullptr, 0, nullptr, 0));
	const OptimizationPlan plan = plan_jump_optimization(strict, base + 0xa);
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
	EXPECT_EQ(plan.entry_candidates, register_bit(ra));
	EXPECT_EQ(plan.entry_register, ra);
	// Without that load, nothing is.
	const std::vector<uint8_t> no_load = assemble({c(0x0001), c(0x0001), c(0x0001), c(0x8082)});
	FunctionAnalysis strict_no_load;
	strict_no_load.set_psabi(false);
	ASSERT_TRUE(strict_no_load.build({no_load.data(), base, no_load.size()}, nullptr, 0, nullptr, 0));
	EXPECT_EQ(plan_jump_optimization(strict_no_load, base + 6).refusal, OptimizationRefusal::no_entry_register);
}

TEST(RiscvJumpOptimization, AnEndAnchoredWindowEndsInAFarTailCall)
{
	// 0: c.li a0, 0; 2: addi a0, a1, 3; 6: auipc t1, 0x12;
	// a: jalr x0, 0x34(t1): a far tail call. Its window starts at the
	// auipc (6), which is relocated: the value it computed, rebuilt.
	Built f({c(0x4501), i(0x00358513), i(0x00012317), i(0x03430067)});
	const OptimizationPlan plan = f.plan(0xa);
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
	EXPECT_EQ(plan.behind, 4);
	EXPECT_EQ(plan.window_length, 8);
	EXPECT_FALSE(plan.needs_landing());
	EXPECT_TRUE(plan.relocates);
	// t1 is written by the window's auipc before anything reads it.
	EXPECT_TRUE(plan.entry_candidates & register_bit(t1));
	uint8_t copy[max_relocated_window];
	ASSERT_EQ(relocate_instructions(plan, base + 6, 0, plan.before_frame(), false, detour, copy, sizeof(copy)), 8u);
	unsigned reg;
	EXPECT_EQ(materialised_value(copy, &reg), base + 6 + 0x12000);
	EXPECT_EQ(reg, t1);
	ASSERT_EQ(relocate_instructions(plan, base + 6, plan.before_frame(), plan.copied, false, detour, copy,
					sizeof(copy)),
		  4u);
	EXPECT_EQ(decode_at(copy).raw, 0x03430067u); // the jump through t1, as it was
}

TEST(RiscvJumpOptimization, AnEndAnchoredWindowEndsInADirectTailCall)
{
	// 0: c.li t0, 1; 2: addi a0, a1, 3; 6: jal x0, +0x400: the tail call
	// is relocated as a far jump through a register its callee does not
	// read (not an argument).
	Built f({c(0x4285), i(0x00358513), i(0x4000006f)});
	const OptimizationPlan plan = f.plan(6);
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
	EXPECT_EQ(plan.behind, 4);
	EXPECT_EQ(plan.window_length, 8);
	EXPECT_EQ(plan.return_candidates, all_registers & ~read_at_tail_call & ~never_free);
	EXPECT_EQ(plan.return_register, t1);
	uint8_t copy[max_relocated_window];
	ASSERT_EQ(relocate_instructions(plan, base + 2, plan.before_frame(), plan.copied, false, detour, copy,
					sizeof(copy)),
		  8u);
	unsigned reg;
	EXPECT_EQ(far_jump_target(copy, detour, &reg), base + 6 + 0x400);
	EXPECT_EQ(reg, t1);
}

TEST(RiscvJumpOptimization, FarReachAndEncoders)
{
	EXPECT_TRUE(within_far_reach((int64_t(1) << 31) - 2049));
	EXPECT_FALSE(within_far_reach((int64_t(1) << 31) - 2048));
	EXPECT_TRUE(within_far_reach(-(int64_t(1) << 31) - 2048));
	EXPECT_FALSE(within_far_reach(-(int64_t(1) << 31) - 2049));
	for (int64_t displacement : {int64_t(0), int64_t(2047), int64_t(2048), int64_t(-2048), int64_t(-2049),
				     int64_t(0x7ffff7ff), int64_t(-0x80000800)}) {
		EXPECT_EQ((int64_t(encode::high_part(displacement)) << 12) + encode::low_part(displacement),
			  displacement);
		EXPECT_GE(encode::low_part(displacement), -2048);
		EXPECT_LE(encode::low_part(displacement), 2047);
	}
	EXPECT_EQ(encode::jal(ra, 0x100), 0x100000efu);
	EXPECT_EQ(encode::branch(0, a0, 11, 12), 0x00b50663u); // beq a0, a1, +12
	EXPECT_EQ(encode::auipc(a5, 0x10), 0x00010797u);
	EXPECT_EQ(encode::jalr(0, ra, 0), 0x00008067u);
	EXPECT_EQ(encode::c_jr(ra), 0x8082u);
	for (int32_t offset : {-2048, -1000, -2, 2, 6, 0x2aa, 0x554, 2046}) {
		uint8_t bytes[2] = {uint8_t(encode::c_j(offset)), uint8_t(encode::c_j(offset) >> 8)};
		const Instruction j = decode_instruction(bytes, 2);
		EXPECT_EQ(j.operation, Operation::c_j);
		EXPECT_EQ(j.immediate, offset);
	}

	// A detour out of reach of the branch target: no copy.
	Built f({i(0x00010797), c(0xe119), c(0x4285), c(0x4301), c(0x4301), c(0x4381), c(0x8082)});
	const OptimizationPlan plan = f.plan(0);
	uint8_t copy[max_relocated_window];
	EXPECT_EQ(relocate_window(plan, base, 0x0000001000000000, copy, sizeof(copy)), 0u);
	EXPECT_EQ(relocate_window(plan, base, detour, copy, 12), 0u); // too small
	uint8_t patch[max_window_size];
	EXPECT_EQ(encode_window_jump(plan, base, 0x0000001000000000, patch), 0u);
}

} // namespace
