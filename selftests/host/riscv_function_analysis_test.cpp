// SPDX-License-Identifier: GPL-2.0
// Liveness over crafted riscv64 functions: both branch edges, loops, calls
// under the psABI, returns and jumps through registers.
#include "riscv/function_analysis.hpp"

#include "riscv_code.hpp"

#include <gtest/gtest.h>

namespace {

using namespace okp::riscv;
using namespace okp::riscv::test;

constexpr uint64_t base = 0xffffffff80100000;
constexpr unsigned ra = 1, sp = 2, t0 = 5, t1 = 6, t2 = 7, t3 = 28, t6 = 31, s0 = 8, s1 = 9, a0 = 10, a1 = 11, a2 = 12,
		   a5 = 15, a7 = 17, s11 = 27;

bool live(const FunctionAnalysis &f, uint64_t offset, unsigned reg)
{
	return f.live_at(base + offset) & register_bit(reg);
}

struct Built {
	std::vector<uint8_t> bytes;
	FunctionAnalysis analysis;
	explicit Built(std::initializer_list<Encoding> code, const std::vector<ExtraEdge> &edges = {},
		       const std::vector<okp::CodeRange> &pieces = {}, bool psabi = true)
	    : bytes(assemble(code))
	{
		analysis.set_psabi(psabi);
		EXPECT_TRUE(analysis.build({bytes.data(), base, bytes.size()}, pieces.data(), pieces.size(),
					   edges.data(), edges.size()));
	}
};

TEST(RiscvLiveness, BothBranchEdges)
{
	// 0: c.beqz a0, 6; 2: c.li t1, 1; 4: c.j a; 6: c.mv a0, t1; 8: c.nop;
	// a: c.li t1, 0; c: c.li t2, 0; e: c.jr ra
	Built f({c(0xc119), c(0x4305), c(0xa019), c(0x851a), c(0x0001), c(0x4301), c(0x4381), c(0x8082)});
	EXPECT_EQ(f.analysis.problem(), FunctionProblem::none);
	EXPECT_EQ(f.analysis.count(), 8u);
	// t1 is read on the taken path before any write: live at the branch.
	EXPECT_TRUE(live(f.analysis, 0, t1));
	// On the fall-through path t1 is written first: dead there.
	EXPECT_FALSE(live(f.analysis, 2, t1));
	// t2 is written at c on both paths before any read.
	EXPECT_FALSE(live(f.analysis, 0, t2));
	EXPECT_FALSE(live(f.analysis, 6, t2));
	// The branch reads a0; the join writes t1, t2; the return reads what
	// the psABI lets the caller read.
	EXPECT_TRUE(live(f.analysis, 0, a0));
	EXPECT_FALSE(live(f.analysis, 0xe, t1));
	EXPECT_EQ(f.analysis.live_at(base + 0xe), read_at_return);
	// Outside the function and inside an instruction: everything.
	EXPECT_EQ(f.analysis.live_at(base + 0x10), all_registers);
	EXPECT_EQ(f.analysis.live_at(base + 1), all_registers);
	EXPECT_EQ(f.analysis.target_within(base + 1, base + 0x10), base + 6);
	EXPECT_EQ(f.analysis.target_within(base + 7, base + 0x10), base + 0xa);
	EXPECT_EQ(f.analysis.target_within(base + 0xb, base + 0x10), 0u);
}

TEST(RiscvLiveness, CallsReadArgumentsAndClobberCallerSaved)
{
	// 0: c.li a0, 1; 2: jal ra, +0x1000 (outside); 6: c.mv s1, a0; 8: c.jr ra
	Built f({c(0x4505), i(0x000010ef), c(0x84aa), c(0x8082)});
	// At the call: every argument register is read, s1 passes through
	// (callee-saved, and written only after), temporaries and ra are
	// defined by the call and not read by it.
	const RegisterSet at_call = f.analysis.live_at(base + 2);
	EXPECT_EQ(at_call & argument_registers, argument_registers);
	EXPECT_FALSE(at_call & register_bit(t0));
	EXPECT_FALSE(at_call & register_bit(t3));
	EXPECT_FALSE(at_call & register_bit(ra));
	EXPECT_TRUE(at_call & register_bit(s0));
	EXPECT_FALSE(at_call & register_bit(s1)); // c.mv s1 after the call writes it first
	// Before c.li a0, a0 is dead (written first), a1 still an argument.
	EXPECT_FALSE(live(f.analysis, 0, a0));
	EXPECT_TRUE(live(f.analysis, 0, a1));
}

TEST(RiscvLiveness, StrictLivenessTrustsNoCallOrReturn)
{
	// 0: c.li a0, 1; 2: jal ra, +0x1000 (outside); 6: c.mv s1, a0; 8: c.jr ra
	Built f({c(0x4505), i(0x000010ef), c(0x84aa), c(0x8082)}, {}, {}, false);
	EXPECT_FALSE(f.analysis.psabi());
	// Every register is live at the call and at the return; before the
	// call, only what is written first (a0) is dead.
	EXPECT_EQ(f.analysis.live_at(base + 2), all_registers);
	EXPECT_EQ(f.analysis.live_at(base + 8), all_registers);
	EXPECT_EQ(f.analysis.live_at(base), all_registers & ~register_bit(a0));
}

TEST(RiscvLiveness, ACallerKeepingATemporaryAcrossACallIsAnalysedStrictly)
{
	// 0: c.li t0, 1; 2: jal ra, +0x1000; 6: c.beqz a0, +4; 8: c.mv a0, t0;
	// a: c.jr ra: on one path the caller reads t0 after the call, as if
	// the callee kept it (interprocedural register allocation).
	Built f({c(0x4285), i(0x000010ef), c(0xc111), c(0x8516), c(0x8082)});
	EXPECT_EQ(f.analysis.temporary_kept_across_call(), 1);
	EXPECT_FALSE(f.analysis.psabi());
	// Strict: t0 is live at the call, so no detour may use it there.
	EXPECT_TRUE(live(f.analysis, 2, t0));
	EXPECT_EQ(f.analysis.live_at(base + 2), all_registers);

	// The same object built again over psABI code answers by the psABI:
	// 0: c.li t0, 1; 2: jal ra, +0x1000; 6: c.li t0, 2; 8: c.mv a0, t0;
	// a: c.jr ra
	const std::vector<uint8_t> written = assemble({c(0x4285), i(0x000010ef), c(0x4289), c(0x8516), c(0x8082)});
	ASSERT_TRUE(f.analysis.build({written.data(), base, written.size()}, nullptr, 0, nullptr, 0));
	EXPECT_EQ(f.analysis.temporary_kept_across_call(), -1);
	EXPECT_TRUE(f.analysis.psabi());
	EXPECT_FALSE(live(f.analysis, 2, t0));
}

TEST(RiscvLiveness, ATemporaryReadOnlyPastAnEbreakKeepsThePsAbi)
{
	// 0: jal ra, +0x1000; 4: c.ebreak (BUG(): never returns); 6: c.mv a0, t0;
	// 8: c.jr ra. Nothing reaches 6 but the ebreak's fall-through.
	Built f({i(0x000010ef), c(0x9002), c(0x8516), c(0x8082)});
	EXPECT_EQ(f.analysis.temporary_kept_across_call(), -1);
	EXPECT_TRUE(f.analysis.psabi());
	EXPECT_FALSE(live(f.analysis, 0, t0));
}

TEST(RiscvLiveness, TheAbiSetsAreWhatThePsAbiSays)
{
	// Callee-saved: sp, s0-s11 (and gp, tp, never allocated); a return
	// adds ra and the return values a0, a1; a tail call every argument.
	for (unsigned n : {ra, sp, 3u, 4u, s0, s1, 18u, s11, a0, a1})
		EXPECT_TRUE(read_at_return & register_bit(n)) << n;
	for (unsigned n : {t0, t1, t2, t3, t6, a2, a7})
		EXPECT_FALSE(read_at_return & register_bit(n)) << n;
	EXPECT_EQ(read_at_tail_call, read_at_return | argument_registers);
	EXPECT_EQ(read_at_return & caller_saved_registers, register_bit(ra) | register_bit(a0) | register_bit(a1));
}

TEST(RiscvLiveness, AReturnReadsWhatTheCallerMayRead)
{
	// 0: c.nop; 2: c.jr ra
	Built f({c(0x0001), c(0x8082)});
	EXPECT_EQ(f.analysis.live_at(base), read_at_return);
	EXPECT_EQ(f.analysis.live_at(base + 2), read_at_return);
}

TEST(RiscvLiveness, ARegisterReadOnAPathThatDoesNotReturnStaysLive)
{
	// 0: c.beqz a0, +6 (-> 6); 2: c.jr ra; 4: c.nop; 6: c.mv a1, t0;
	// 8: c.j -8 (-> 0): the loop reads t0 forever, whatever the return
	// on the other path lets go.
	Built loop({c(0xc119), c(0x8082), c(0x0001), c(0x8596), c(0xbfe5)});
	EXPECT_TRUE(live(loop.analysis, 0, t0));
	EXPECT_TRUE(live(loop.analysis, 6, t0));
	EXPECT_FALSE(live(loop.analysis, 2, t0));
	// 0: c.beqz a0, +4 (-> 4); 2: c.jr ra; 4: c.mv a1, t0, then the end
	// of the bytes: falling off reads everything.
	Built falls({c(0xc111), c(0x8082), c(0x8596)});
	EXPECT_EQ(falls.analysis.live_at(base), all_registers);
	EXPECT_EQ(falls.analysis.live_at(base + 4), all_registers & ~register_bit(a1));
	// 0: c.mv a1, t0; 2: jal t0, +0x100: a call linking through another
	// register than ra (millicode) reads everything.
	Built millicode({c(0x8596), i(0x100002ef)});
	EXPECT_EQ(millicode.analysis.live_at(base + 2), all_registers);
}

TEST(RiscvLiveness, ATailCallReadsTheArgumentsAndWhatTheCallerReads)
{
	// 0: c.li a2, 1; 2: c.li a3, 2; 4: c.j +0x400, out of the function
	Built f({c(0x4605), c(0x4689), c(0xa101)});
	EXPECT_EQ(f.analysis.live_at(base + 4), read_at_tail_call);
	EXPECT_EQ(f.analysis.live_at_jump_target(base + 0x404), read_at_tail_call);
	EXPECT_FALSE(live(f.analysis, 0, a2));
	EXPECT_TRUE(live(f.analysis, 0, a7)); // an argument of the callee
	EXPECT_TRUE(live(f.analysis, 0, s1)); // our caller's
	EXPECT_FALSE(live(f.analysis, 0, t0));
	// The same jump into a piece of the function (its .cold part)
	// continues the function: everything may be read there.
	const uint8_t cold[2] = {0x82, 0x80};
	Built g({c(0x4605), c(0x4689), c(0xa101)}, {}, {{cold, base + 0x404, sizeof(cold)}});
	EXPECT_EQ(g.analysis.live_at(base + 4), all_registers);
	EXPECT_EQ(g.analysis.live_at_jump_target(base + 0x404), all_registers);
	EXPECT_EQ(g.analysis.live_at_jump_target(base + 0x406), read_at_tail_call);
	// Inside the function a jump target is what is live there.
	EXPECT_EQ(f.analysis.live_at_jump_target(base + 2), f.analysis.live_at(base + 2));
}

TEST(RiscvLiveness, LoopsConverge)
{
	// 0: c.li s0, 10; 2: c.addi s0, -1; 4: c.bnez s0, 2; 6: c.jr ra
	Built f({c(0x4429), c(0x147d), c(0xfc7d), c(0x8082)});
	EXPECT_FALSE(live(f.analysis, 0, s0));
	EXPECT_TRUE(live(f.analysis, 2, s0)); // the loop body reads it every round
	EXPECT_TRUE(live(f.analysis, 4, s0));
	EXPECT_GE(f.analysis.sweeps(), 2u);
	EXPECT_LE(f.analysis.sweeps(), 4u);
}

TEST(RiscvLiveness, JumpThroughARegisterIsAProblemForTheWholeFunction)
{
	// 0: c.li t0, 0; 2: c.jr a5
	Built f({c(0x4281), c(0x8782)});
	EXPECT_EQ(f.analysis.problem(), FunctionProblem::indirect_jump);
	EXPECT_EQ(f.analysis.problem_address(), base + 2);
	EXPECT_EQ(f.analysis.live_at(base + 2), all_registers);
	EXPECT_FALSE(live(f.analysis, 0, t0));
	EXPECT_TRUE(live(f.analysis, 0, a5));
}

TEST(RiscvLiveness, AuipcJalrPairIsADirectTailCall)
{
	// 0: c.li t0, 0; 2: auipc t1, 0x100; 6: jalr zero, 16(t1)
	Built f({c(0x4281), i(0x00100317), i(0x01030067)});
	EXPECT_EQ(f.analysis.problem(), FunctionProblem::none);
	// It leaves the function: the callee's arguments, what our caller
	// reads after it, and the jump's own register.
	EXPECT_EQ(f.analysis.live_at(base + 6), read_at_tail_call | register_bit(t1));
	EXPECT_FALSE(live(f.analysis, 2, t1));
	EXPECT_TRUE(live(f.analysis, 2, a7));
	EXPECT_FALSE(live(f.analysis, 0, t0));
	// A jump to the jalr alone breaks the pair: then it is a jump through t1.
	Built g({c(0x4281), i(0x00100317), i(0x01030067)}, {{base, base + 6, ExtraEdge::Kind::jump_label}});
	EXPECT_EQ(g.analysis.problem(), FunctionProblem::indirect_jump);
}

TEST(RiscvLiveness, ExtraEdgesAddSuccessorsAndMarkInstructions)
{
	// 0: nop (a jump label to 8); 4: c.li t0, 1; 6: c.jr ra; 8: c.mv a0, t0; a: c.jr ra
	Built f({i(0x00000013), c(0x4285), c(0x8082), c(0x8516), c(0x8082)});
	EXPECT_FALSE(live(f.analysis, 0, t0)); // without the edge, c.li t0 comes first
	Built g({i(0x00000013), c(0x4285), c(0x8082), c(0x8516), c(0x8082)},
		{{base, base + 8, ExtraEdge::Kind::jump_label},
		 {base + 4, base + 6, ExtraEdge::Kind::exception_fixup}});
	EXPECT_TRUE(live(g.analysis, 0, t0)); // the jump label's target reads t0
	EXPECT_TRUE(g.analysis.is_jump_label_site(0));
	EXPECT_TRUE(g.analysis.has_exception_entry(1));
	EXPECT_FALSE(g.analysis.has_exception_entry(0));
	EXPECT_EQ(g.analysis.target_within(base + 1, base + 9), base + 6);
}

TEST(RiscvLiveness, LrScSequencesAreMarked)
{
	Built f({i(0x1005a52f), i(0x00c51663), i(0x18e5a6af), i(0xfe069ae3), i(0x00150513), c(0x8082)});
	for (size_t n = 0; n < 3; ++n)
		EXPECT_TRUE(f.analysis.in_lr_sc_sequence(n)) << n;
	for (size_t n = 3; n < 6; ++n)
		EXPECT_FALSE(f.analysis.in_lr_sc_sequence(n)) << n;
}

TEST(RiscvLiveness, UndecodableBytesAndPadding)
{
	// Zero padding after the return is fine; other garbage is not.
	Built padded({c(0x4281), c(0x8082), c(0x0000), c(0x0000)});
	EXPECT_EQ(padded.analysis.problem(), FunctionProblem::none);
	EXPECT_EQ(padded.analysis.decoded_size(), 4u);
	Built garbage({c(0x4281), i(0x0000007f), c(0x8082)});
	EXPECT_EQ(garbage.analysis.problem(), FunctionProblem::undecodable);
	EXPECT_EQ(garbage.analysis.problem_address(), base + 2);
}

} // namespace
