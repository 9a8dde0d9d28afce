// SPDX-License-Identifier: GPL-2.0
// The jump optimizer's safety rules (arch/x86/jump_optimization.cpp) on
// crafted functions; tools/check's x86 stage also runs them over every
// instruction of Debian's kernel (x86_kernel_bytes_test.cpp).
#include "x86/jump_optimization.hpp"

#include "code_page.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

using namespace okp::x86;
using okp::CodeRange;

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
	// An endbr64 inside the region: an indirect branch may land there.
	const Function with_endbr = {{0x48, 0x89, 0xf8, 0xf3, 0x0f, 0x1e, 0xfa, 0xc3}};
	EXPECT_EQ(plan(with_endbr, 0).refusal, OptimizationRefusal::region_not_relocatable);
	// Also past a ret that ends the copy: ret, then endbr64 inside the 5 bytes.
	const Function ret_then_endbr = {{0x48, 0x89, 0xf8, 0xc3, 0xf3, 0x0f, 0x1e, 0xfa, 0xc3}};
	EXPECT_EQ(plan(ret_then_endbr, 0).refusal, OptimizationRefusal::region_not_relocatable);
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

TEST(X86JumpOptimization, ExternalJumpTargetsAreTheJumpsOutOfTheFunctionOnce)
{
	Thunks thunks;
	thunks.return_thunk = base + 0x9000;
	// 0: je +0x100 (out); 6: jmp 0 (in); 8: jne +0x100 again (out, same
	// target); 14: call +0x200 (a call, not a jump); 19: jmp thunk
	std::vector<uint8_t> bytes = {0x0f, 0x84};
	auto rel32 = [&](int64_t target, size_t end) {
		const uint32_t v = static_cast<uint32_t>(target - static_cast<int64_t>(end));
		bytes.insert(bytes.end(), {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)});
	};
	rel32(0x100, 6);
	bytes.insert(bytes.end(), {0xeb, 0xf8});
	bytes.insert(bytes.end(), {0x0f, 0x85});
	rel32(0x100, 14);
	bytes.push_back(0xe8);
	rel32(0x200, 19);
	bytes.push_back(0xe9);
	rel32(0x9000, 24);
	const CodeRange range{bytes.data(), base, bytes.size()};
	uint64_t targets[4] = {};
	ASSERT_EQ(external_jump_targets(range, thunks, targets, 4), 1u);
	EXPECT_EQ(targets[0], base + 0x100);
	EXPECT_GT(external_jump_targets(range, thunks, targets, 0), 0u) << "more than the capacity: the caller sees it";
	// The writer's one decode finds the same.
	FunctionMap map;
	ASSERT_TRUE(map.decode(range, thunks));
	uint64_t mapped[4] = {};
	ASSERT_EQ(map.external_jump_targets(mapped, 4), 1u);
	EXPECT_EQ(mapped[0], base + 0x100);
}

// ---- Relocated regions run on the CPU ---------------------------------------

// The function at page offset 0 runs as written and through the detour's
// copy of its region (on the next page, jumping back into the function):
// both must return the same.
class Relocation : public ::testing::Test {
protected:
	void expect_both_return(std::vector<uint8_t> function, uint64_t expected, const Thunks &thunks = {})
	{
		ASSERT_TRUE(page.ok());
		page.put(0, function);
		const CodeRange range{page.at(0), page.address(0), function.size()};
		const OptimizationPlan p =
			plan_jump_optimization(range, nullptr, 0, page.address(0), thunks, nullptr, nullptr);
		ASSERT_EQ(p.refusal, OptimizationRefusal::none) << optimization_refusal_text(p.refusal);
		uint8_t copy[max_relocated_region];
		const size_t length =
			relocate_region(p, page.at(0), page.address(0), thunks, page.address(4096), copy, sizeof(copy));
		ASSERT_GT(length, 0u);
		memcpy(page.at(4096), copy, length);
		EXPECT_EQ(page.call(0), expected) << "the original";
		EXPECT_EQ(page.call(4096), expected) << "the relocated region";
	}
	static std::vector<uint8_t> rel32(int64_t value)
	{
		const uint32_t v = static_cast<uint32_t>(value);
		return {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
	}
	CodePage page;
};

TEST_F(Relocation, CopiedInstructionsJumpBack)
{
	// mov $7,%eax; add $5,%eax; ret
	expect_both_return({0xb8, 7, 0, 0, 0, 0x83, 0xc0, 5, 0xc3}, 12);
}

TEST_F(Relocation, TakenJccGoesToTheOriginalTarget)
{
	// 0: xor %eax,%eax; 2: test; 4: je 12; 6: mov $1,%eax; 11: ret; 12: mov $2,%eax; 17: ret
	expect_both_return({0x31, 0xc0, 0x85, 0xc0, 0x74, 0x06, 0xb8, 1, 0, 0, 0, 0xc3, 0xb8, 2, 0, 0, 0, 0xc3}, 2);
}

TEST_F(Relocation, NotTakenJccFallsThroughToTheJumpBack)
{
	// 0: or $1,%eax; 3: je 11; 5: mov $1,%eax; 10: ret; 11: mov $2,%eax; 16: ret
	expect_both_return({0x83, 0xc8, 1, 0x74, 0x06, 0xb8, 1, 0, 0, 0, 0xc3, 0xb8, 2, 0, 0, 0, 0xc3}, 1);
}

TEST_F(Relocation, AJmpEndsTheCopy)
{
	// 0: xor %eax,%eax; 2: jmp 5; 4: nop; 5: add $9,%eax; 8: ret
	expect_both_return({0x31, 0xc0, 0xeb, 0x01, 0x90, 0x83, 0xc0, 9, 0xc3}, 9);
}

TEST_F(Relocation, CallReturnsToTheOriginalText)
{
	page.put(0x400, {0xb8, 41, 0, 0, 0, 0xc3}); // helper: mov $41,%eax; ret
	std::vector<uint8_t> f = {0xe8};
	const std::vector<uint8_t> call = rel32(0x400 - 5);
	f.insert(f.end(), call.begin(), call.end());
	f.insert(f.end(), {0x83, 0xc0, 1, 0xc3}); // add $1,%eax; ret
	expect_both_return(f, 42);
}

TEST_F(Relocation, TheCalleeSeesTheOriginalReturnAddress)
{
	// A task asleep in the callee must not hold a detour address.
	page.put(0x400, {0x48, 0x8b, 0x04, 0x24, 0xc3}); // helper: mov (%rsp),%rax; ret
	// 0: push %rbx; 1: call helper; 6: pop %rbx; 7: ret
	std::vector<uint8_t> f = {0x53, 0xe8};
	const std::vector<uint8_t> call = rel32(0x400 - 6);
	f.insert(f.end(), call.begin(), call.end());
	f.insert(f.end(), {0x5b, 0xc3});
	expect_both_return(f, page.address(6));
}

TEST(RelocationCall, AReturnAddressPastImm32IsStoredWhole)
{
	// mov %rdi,%rax; call +0x100: at an address push imm32 cannot reach.
	const uint64_t high = 0x00007f0000001000;
	const uint8_t bytes[] = {0x48, 0x89, 0xf8, 0xe8, 0, 1, 0, 0, 0xc3};
	const CodeRange range{bytes, high, sizeof(bytes)};
	const OptimizationPlan p = plan_jump_optimization(range, nullptr, 0, high, {}, nullptr, nullptr);
	ASSERT_EQ(p.refusal, OptimizationRefusal::none);
	uint8_t copy[max_relocated_region];
	const size_t length = relocate_region(p, bytes, high, {}, high + 0x1000, copy, sizeof(copy));
	ASSERT_EQ(length, 3u + 20u + 5u) << "mov, lea+movl+movl, jmp; no jump back";
	EXPECT_EQ(copy[3], 0x48) << "lea -8(%rsp),%rsp";
	uint32_t low, upper;
	memcpy(&low, copy + 3 + 5 + 3, 4);
	memcpy(&upper, copy + 3 + 12 + 4, 4);
	EXPECT_EQ((uint64_t(upper) << 32) | low, high + 8);
}

TEST_F(Relocation, RipRelativeLoadIsRebased)
{
	const uint32_t value = 0x12345678;
	memcpy(page.at(0x800), &value, 4);
	std::vector<uint8_t> f = {0x8b, 0x05}; // mov disp(%rip),%eax
	const std::vector<uint8_t> disp = rel32(0x800 - 6);
	f.insert(f.end(), disp.begin(), disp.end());
	f.push_back(0xc3);
	expect_both_return(f, value);
}

TEST_F(Relocation, ReturnThunkJumpIsReEncoded)
{
	Thunks thunks;
	thunks.return_thunk = page.address(0x400);
	page.put(0x400, {0xc3});
	// 0: xor %eax,%eax; 2: add $5,%al; 4: jmp __x86_return_thunk
	std::vector<uint8_t> f = {0x31, 0xc0, 0x04, 0x05, 0xe9};
	const std::vector<uint8_t> to_thunk = rel32(0x400 - 9);
	f.insert(f.end(), to_thunk.begin(), to_thunk.end());
	expect_both_return(f, 5, thunks);
}

// GCC's retpoline kernels call through the thunks with a cs prefix
// (-mindirect-branch-cs-prefix): "2e e8 rel32". Copied as bytes, the call
// went rel32 off from the detour (an Oops in module space when
// class_for_each_device+0xe6 was optimized under make bench).
TEST_F(Relocation, APrefixedThunkCallIsReEncoded)
{
	Thunks thunks;
	thunks.indirect_thunk[11] = page.address(0x400);
	page.put(0x400, {0x41, 0xff, 0xe3});	    // the thunk: jmp *%r11
	page.put(0x500, {0xb8, 41, 0, 0, 0, 0xc3}); // the callee: mov $41,%eax; ret
	// 0: movabs $callee,%r11; 10: cs call __x86_indirect_thunk_r11; 16: add $1,%eax; 19: ret
	std::vector<uint8_t> f = {0x49, 0xbb};
	const uint64_t callee = page.address(0x500);
	for (int i = 0; i < 8; ++i)
		f.push_back(uint8_t(callee >> (8 * i)));
	f.insert(f.end(), {0x2e, 0xe8});
	const std::vector<uint8_t> call = rel32(0x400 - 16);
	f.insert(f.end(), call.begin(), call.end());
	f.insert(f.end(), {0x83, 0xc0, 1, 0xc3});
	page.put(0, f);
	ASSERT_EQ(page.call(0), 42u) << "the original";
	// Optimized at the call: its region is the call alone.
	const CodeRange range{page.at(0), page.address(0), f.size()};
	const OptimizationPlan p =
		plan_jump_optimization(range, nullptr, 0, page.address(10), thunks, nullptr, nullptr);
	ASSERT_EQ(p.refusal, OptimizationRefusal::none) << optimization_refusal_text(p.refusal);
	ASSERT_EQ(p.region_length, 6);
	uint8_t copy[max_relocated_region];
	const size_t length =
		relocate_region(p, page.at(10), page.address(10), thunks, page.address(4096), copy, sizeof(copy));
	ASSERT_GT(length, 0u);
	memcpy(page.at(4096), copy, length);
	page.put(10, {0xe9});
	page.put(11, rel32(4096 - 15));
	EXPECT_EQ(page.call(0), 42u) << "through the relocated call";
}

TEST_F(Relocation, APrefixedDirectCallIsReEncoded)
{
	page.put(0x400, {0xb8, 41, 0, 0, 0, 0xc3}); // helper: mov $41,%eax; ret
	// 0: cs call helper; 6: add $1,%eax; 9: ret
	std::vector<uint8_t> f = {0x2e, 0xe8};
	const std::vector<uint8_t> call = rel32(0x400 - 6);
	f.insert(f.end(), call.begin(), call.end());
	f.insert(f.end(), {0x83, 0xc0, 1, 0xc3});
	expect_both_return(f, 42);
}

TEST(RelocationReach, ATargetOutOfRel32ReachFails)
{
	const Function f = {{0x31, 0xc0, 0x85, 0xc0, 0x74, 0x06, 0xb8, 1, 0, 0, 0, 0xc3, 0xb8, 2, 0, 0, 0, 0xc3}};
	const OptimizationPlan p = plan(f, 0);
	ASSERT_EQ(p.refusal, OptimizationRefusal::none);
	uint8_t copy[max_relocated_region];
	EXPECT_EQ(relocate_region(p, f.bytes.data(), base, {}, base - (3ull << 30), copy, sizeof(copy)), 0u);
	EXPECT_GT(relocate_region(p, f.bytes.data(), base, {}, base + 0x1000, copy, sizeof(copy)), 0u);
	EXPECT_EQ(relocate_region(p, f.bytes.data(), base, {}, base + 0x1000, copy, 6), 0u) << "no room";
}

} // namespace
