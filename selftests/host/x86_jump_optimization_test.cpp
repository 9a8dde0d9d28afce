// SPDX-License-Identifier: GPL-2.0
// The jump optimizer's safety rules (arch/x86/jump_optimization.cpp) on
// crafted functions; tools/check's x86 stage also runs them over every
// instruction of Debian's kernel (x86_kernel_bytes_test.cpp).
#include "x86/jump_optimization.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace okp::x86;

constexpr uint64_t base = 0xffffffff81000000ull;

struct Function {
	std::vector<uint8_t> bytes;
	CodeRange range(uint64_t address = base) const { return CodeRange{bytes.data(), address, bytes.size()}; }
};

OptimizationPlan plan(const Function &f, uint64_t offset, const Thunks &thunks = {},
		      ExceptionEntryQuery exceptions = nullptr, const Function *piece = nullptr,
		      uint64_t piece_address = 0)
{
	CodeRange pieces[1];
	if (piece)
		pieces[0] = piece->range(piece_address);
	return plan_jump_optimization(f.range(), pieces, piece ? 1 : 0, base + offset, thunks, exceptions, nullptr);
}

// mov %rdi,%rax; add %rsi,%rax; test %rax,%rax; ret
const Function straight = {{0x48, 0x89, 0xf8, 0x48, 0x01, 0xf0, 0x48, 0x85, 0xc0, 0xc3}};

TEST(X86JumpOptimization, StraightCodeCoversWholeInstructions)
{
	const OptimizationPlan p = plan(straight, 0);
	ASSERT_EQ(p.refusal, OptimizationRefusal::none) << optimization_refusal_text(p.refusal);
	EXPECT_EQ(p.region_length, 6);
	EXPECT_EQ(p.copied_length, 6);
	EXPECT_EQ(p.count, 2);
	EXPECT_EQ(p.instructions[1].offset, 3);
	EXPECT_FALSE(p.ends_in_transfer);
}

TEST(X86JumpOptimization, TheRegionMustEndInsideTheFunction)
{
	EXPECT_EQ(plan(straight, 6).refusal, OptimizationRefusal::region_past_function);
	// A ret ends the copy, but the jump still needs 5 bytes of function.
	EXPECT_EQ(plan(straight, 9).refusal, OptimizationRefusal::region_past_function);
	EXPECT_EQ(plan(straight, 3).refusal, OptimizationRefusal::none);
}

TEST(X86JumpOptimization, ABranchIntoTheJumpIsRefusedOneToTheProbeIsNot)
{
	// 0: mov; 3: add; 6: test; 9: jne 3; 11: ret
	const Function loop = {{0x48, 0x89, 0xf8, 0x48, 0x01, 0xf0, 0x48, 0x85, 0xc0, 0x75, 0xf8, 0xc3}};
	const OptimizationPlan at_start = plan(loop, 0);
	EXPECT_EQ(at_start.refusal, OptimizationRefusal::jump_into_region);
	EXPECT_EQ(at_start.refusal_address, base + 3) << "the targeted address";
	EXPECT_EQ(plan(loop, 3).refusal, OptimizationRefusal::none) << "the branch targets the probe itself";
}

TEST(X86JumpOptimization, AnIndirectJumpAnywhereInTheFunctionIsRefused)
{
	// mov; add; test; jmp *%rax; ret
	const Function table = {{0x48, 0x89, 0xf8, 0x48, 0x01, 0xf0, 0x48, 0x85, 0xc0, 0xff, 0xe0, 0xc3}};
	EXPECT_EQ(plan(table, 0).refusal, OptimizationRefusal::indirect_jump);
	// The same through a retpoline thunk: jmp __x86_indirect_thunk_rax.
	Thunks thunks;
	thunks.indirect_thunk[0] = base + 0x1000;
	Function thunked = {{0x48, 0x89, 0xf8, 0x48, 0x01, 0xf0, 0xe9, 0, 0, 0, 0, 0xc3}};
	const int32_t rel = static_cast<int32_t>(0x1000 - 11);
	memcpy(&thunked.bytes[7], &rel, 4);
	EXPECT_EQ(plan(thunked, 0, thunks).refusal, OptimizationRefusal::indirect_jump);
	// A call through memory is not a jump: it returns where it was.
	const Function call_memory = {{0x48, 0x89, 0xf8, 0x48, 0x01, 0xf0, 0xff, 0x10, 0xc3}};
	EXPECT_EQ(plan(call_memory, 0).refusal, OptimizationRefusal::none);
}

TEST(X86JumpOptimization, APieceJumpingBackIntoTheJumpIsRefused)
{
	// foo.cold at base + 0x100: jmp base + 3 (inside a jump at base).
	Function cold = {{0xe9, 0, 0, 0, 0}};
	const int32_t rel = static_cast<int32_t>(3 - (0x100 + 5));
	memcpy(&cold.bytes[1], &rel, 4);
	EXPECT_EQ(plan(straight, 0, {}, nullptr, &cold, base + 0x100).refusal, OptimizationRefusal::jump_into_region);
	EXPECT_EQ(plan(straight, 3, {}, nullptr, &cold, base + 0x100).refusal, OptimizationRefusal::none);
}

TEST(X86JumpOptimization, AnExceptionEntryAnywhereInTheFunctionIsRefused)
{
	const ExceptionEntryQuery at_test = [](uint64_t address, void *) { return address == base + 6; };
	const OptimizationPlan p = plan(straight, 0, {}, at_test);
	EXPECT_EQ(p.refusal, OptimizationRefusal::exception_entry);
	EXPECT_EQ(p.refusal_address, base + 6);
}

TEST(X86JumpOptimization, InstructionsThatCannotRunInADetourAreRefused)
{
	// loop (rel8 only), then mov
	const Function with_loop = {{0xe2, 0xfe, 0x48, 0x89, 0xf8, 0xc3}};
	EXPECT_EQ(plan(with_loop, 0).refusal, OptimizationRefusal::region_not_relocatable);
	// ud2 inside the region
	const Function with_ud2 = {{0x48, 0x89, 0xf8, 0x0f, 0x0b, 0xc3}};
	EXPECT_EQ(plan(with_ud2, 0).refusal, OptimizationRefusal::region_not_relocatable);
}

TEST(X86JumpOptimization, BranchesAreRelocatedAndAJumpEndsTheCopy)
{
	// 0: je +3 (to 5); 2: jmp +4 (to 8); 4: nop; 5: mov; 8: ret
	const Function branches = {{0x74, 0x03, 0xeb, 0x04, 0x90, 0x48, 0x89, 0xf8, 0xc3}};
	const OptimizationPlan p = plan(branches, 0);
	ASSERT_EQ(p.refusal, OptimizationRefusal::none) << optimization_refusal_text(p.refusal);
	EXPECT_EQ(p.count, 2) << "je, then jmp ends the copy";
	EXPECT_EQ(p.copied_length, 4);
	EXPECT_EQ(p.region_length, 5);
	EXPECT_TRUE(p.ends_in_transfer);
	EXPECT_EQ(p.instructions[0].analysis.condition, Condition::flags);
	EXPECT_EQ(p.instructions[1].analysis.target, base + 8);
}

TEST(X86JumpOptimization, TheReturnThunkJumpIsAReturnThatEndsTheCopy)
{
	Thunks thunks;
	thunks.return_thunk = base + 0x2000;
	Function f = {{0x48, 0x89, 0xf8, 0xe9, 0, 0, 0, 0}};
	const int32_t rel = static_cast<int32_t>(0x2000 - 8);
	memcpy(&f.bytes[4], &rel, 4);
	const OptimizationPlan p = plan(f, 0, thunks);
	ASSERT_EQ(p.refusal, OptimizationRefusal::none) << optimization_refusal_text(p.refusal);
	EXPECT_EQ(p.count, 2);
	EXPECT_EQ(p.instructions[1].analysis.transfer, Transfer::ret);
	EXPECT_TRUE(p.ends_in_transfer);
}

} // namespace
