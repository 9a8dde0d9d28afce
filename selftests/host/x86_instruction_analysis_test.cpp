// SPDX-License-Identifier: GPL-2.0
// What the breakpoint probe does with each class of x86-64 instruction the
// 6.1 kernel contains: copy, copy with a rebased displacement, emulate, or
// refuse with a reason.
#include "x86/instruction_analysis.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace okp::x86;

constexpr uint64_t at = 0xffffffff81000000;
constexpr uint64_t return_thunk = 0xffffffff82000000;
constexpr uint64_t thunk_base = 0xffffffff82000100;

Thunks kernel_thunks()
{
	Thunks thunks;
	thunks.return_thunk = return_thunk;
	for (int reg = 0; reg < 16; ++reg)
		if (reg != 4) // there is no thunk for rsp
			thunks.indirect_thunk[reg] = thunk_base + 0x20 * reg;
	return thunks;
}

Analysis analyze(std::vector<uint8_t> bytes, uint64_t address = at)
{
	return analyze_instruction(bytes.data(), bytes.size(), address, kernel_thunks());
}

// rel32 from the end of an instruction of length at `at` to target.
std::vector<uint8_t> rel32_insn(std::vector<uint8_t> opcode, uint64_t target)
{
	const uint64_t next = at + opcode.size() + 4;
	const uint32_t rel = static_cast<uint32_t>(target - next);
	for (int i = 0; i < 4; ++i)
		opcode.push_back(static_cast<uint8_t>(rel >> (8 * i)));
	return opcode;
}

TEST(X86Analysis, PlainInstructionsAreCopied)
{
	const std::vector<std::vector<uint8_t>> plain = {
		{0x48, 0x89, 0xf8},			       // mov %rdi,%rax
		{0x55},					       // push %rbp
		{0x5d},					       // pop %rbp
		{0x48, 0x83, 0xec, 0x10},		       // sub $0x10,%rsp
		{0xf3, 0xa4},				       // rep movsb
		{0xf0, 0x0f, 0xb1, 0x17},		       // lock cmpxchg %edx,(%rdi)
		{0x65, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0}, // mov %gs:0x28,%rax
		{0x48, 0xc7, 0x44, 0x24, 0x08, 0x01, 0, 0, 0}, // movq $1,0x8(%rsp) (imm + disp)
		{0x0f, 0x1f, 0x44, 0x00, 0x00},		       // nop5
		{0xc9},					       // leave
	};
	for (const auto &bytes : plain) {
		const Analysis a = analyze(bytes);
		EXPECT_EQ(a.execution, Execution::copy) << "first byte " << int(bytes[0]);
		EXPECT_EQ(a.refusal, Refusal::none);
		EXPECT_EQ(a.length, bytes.size());
	}
}

// As kprobes' can_probe(), okprobe refuses an emulate-prefixed instruction
// (the hypervisor's #UD handler emulates it from where it stands).
TEST(X86Analysis, AnEmulatePrefixedInstructionIsRefused)
{
	const Analysis a = analyze({0x0f, 0x0b, 'x', 'e', 'n', 0x0f, 0xa2});
	EXPECT_EQ(a.execution, Execution::refuse);
	EXPECT_EQ(a.refusal, Refusal::emulate_prefix);
	EXPECT_EQ(a.length, 7);
}

TEST(X86Analysis, RipRelativeOperandsAreRebased)
{
	const Analysis lea = analyze({0x48, 0x8d, 0x05, 0x10, 0x00, 0x00, 0x00}); // lea 0x10(%rip),%rax
	EXPECT_EQ(lea.execution, Execution::copy_rip_relative);
	EXPECT_EQ(lea.disp_offset, 3);
	EXPECT_EQ(lea.target, at + 7 + 0x10);

	// cmpl $0x5,-0x10(%rip): a displacement and an immediate
	const Analysis cmp = analyze({0x83, 0x3d, 0xf0, 0xff, 0xff, 0xff, 0x05});
	EXPECT_EQ(cmp.execution, Execution::copy_rip_relative);
	EXPECT_EQ(cmp.disp_offset, 2);
	EXPECT_EQ(cmp.target, at + 7 - 0x10);

	// vmovdqu 0x40(%rip),%ymm0 (VEX)
	const Analysis vex = analyze({0xc5, 0xfe, 0x6f, 0x05, 0x40, 0, 0, 0});
	EXPECT_EQ(vex.execution, Execution::copy_rip_relative);
	EXPECT_EQ(vex.disp_offset, 4);

	// (%rbp) with mod=01 and SIB forms are not rip-relative
	EXPECT_EQ(analyze({0x48, 0x8b, 0x45, 0x08}).execution, Execution::copy);
	EXPECT_EQ(analyze({0x48, 0x8b, 0x04, 0x25, 0x00, 0x10, 0, 0}).execution, Execution::copy);
}

TEST(X86Analysis, DirectBranchesAreEmulated)
{
	const Analysis jmp8 = analyze({0xeb, 0x10});
	EXPECT_EQ(jmp8.execution, Execution::emulate);
	EXPECT_EQ(jmp8.transfer, Transfer::jump);
	EXPECT_EQ(jmp8.condition, Condition::always);
	EXPECT_EQ(jmp8.target, at + 2 + 0x10);

	const Analysis jmp32 = analyze(rel32_insn({0xe9}, at - 0x1000));
	EXPECT_EQ(jmp32.transfer, Transfer::jump);
	EXPECT_EQ(jmp32.target, at - 0x1000);

	const Analysis call = analyze(rel32_insn({0xe8}, at + 0x12345));
	EXPECT_EQ(call.transfer, Transfer::call);
	EXPECT_EQ(call.target, at + 0x12345);

	const Analysis jne8 = analyze({0x75, 0xfe});
	EXPECT_EQ(jne8.transfer, Transfer::jump);
	EXPECT_EQ(jne8.condition, Condition::flags);
	EXPECT_EQ(jne8.condition_code, 5);
	EXPECT_EQ(jne8.target, at);

	const Analysis je32 = analyze(rel32_insn({0x0f, 0x84}, at + 0x40));
	EXPECT_EQ(je32.condition_code, 4);
	EXPECT_EQ(je32.target, at + 0x40);
	EXPECT_EQ(je32.length, 6);
}

TEST(X86Analysis, ThunkJumpsAreReturnsAndIndirectBranches)
{
	const Analysis rethunk = analyze(rel32_insn({0xe9}, return_thunk)); // jmp __x86_return_thunk
	EXPECT_EQ(rethunk.execution, Execution::emulate);
	EXPECT_EQ(rethunk.transfer, Transfer::ret);

	const Analysis cond_ret = analyze(rel32_insn({0x0f, 0x85}, return_thunk)); // jne __x86_return_thunk
	EXPECT_EQ(cond_ret.transfer, Transfer::ret);
	EXPECT_EQ(cond_ret.condition, Condition::flags);

	// cs call __x86_indirect_thunk_r11 (-mindirect-branch-cs-prefix)
	const Analysis call_r11 = analyze(rel32_insn({0x2e, 0xe8}, thunk_base + 0x20 * 11));
	EXPECT_EQ(call_r11.transfer, Transfer::call_register);
	EXPECT_EQ(call_r11.reg, 11);
	EXPECT_EQ(call_r11.length, 6);

	const Analysis jmp_rax = analyze(rel32_insn({0xe9}, thunk_base)); // jmp __x86_indirect_thunk_rax
	EXPECT_EQ(jmp_rax.transfer, Transfer::jump_register);
	EXPECT_EQ(jmp_rax.reg, 0);
}

// bound_thunks only lets the lookups skip targets no thunk can be at: every
// answer stays as without bounds, at the thunks, beside them and far away.
TEST(X86Analysis, BoundedThunksGiveTheSameAnswers)
{
	Thunks bounded = kernel_thunks();
	bound_thunks(bounded);
	EXPECT_EQ(bounded.lowest, return_thunk);
	EXPECT_EQ(bounded.highest, thunk_base + 0x20 * 15);
	const std::vector<uint64_t> targets = {
		return_thunk - 1,	    return_thunk, thunk_base, thunk_base + 0x20 * 3, thunk_base + 0x20 * 15,
		thunk_base + 0x20 * 15 + 1, at + 0x40,	  at - 0x1000};
	for (const uint64_t target : targets)
		for (const std::vector<uint8_t> &opcode :
		     std::vector<std::vector<uint8_t>>{{0xe9}, {0xe8}, {0x0f, 0x85}, {0x2e, 0xe8}}) {
			const std::vector<uint8_t> bytes = rel32_insn(opcode, target);
			const Analysis plain = analyze(bytes);
			const Analysis fast = analyze_instruction(bytes.data(), bytes.size(), at, bounded);
			EXPECT_EQ(fast.transfer, plain.transfer) << std::hex << target;
			EXPECT_EQ(fast.reg, plain.reg) << std::hex << target;
			EXPECT_EQ(fast.target, plain.target) << std::hex << target;
		}
	// No thunks at all: nothing is one.
	Thunks none;
	bound_thunks(none);
	const std::vector<uint8_t> jump = rel32_insn({0xe9}, at + 0x40);
	EXPECT_EQ(analyze_instruction(jump.data(), jump.size(), at, none).transfer, Transfer::jump);
}

TEST(X86Analysis, ReturnsAndRegisterIndirectBranches)
{
	EXPECT_EQ(analyze({0xc3}).transfer, Transfer::ret);
	const Analysis ret_imm = analyze({0xc2, 0x08, 0x00});
	EXPECT_EQ(ret_imm.transfer, Transfer::ret);
	EXPECT_EQ(ret_imm.ret_pop, 8);

	const Analysis call_rax = analyze({0xff, 0xd0});
	EXPECT_EQ(call_rax.transfer, Transfer::call_register);
	EXPECT_EQ(call_rax.reg, 0);
	const Analysis call_r11 = analyze({0x41, 0xff, 0xd3});
	EXPECT_EQ(call_r11.transfer, Transfer::call_register);
	EXPECT_EQ(call_r11.reg, 11);
	const Analysis jmp_rcx = analyze({0xff, 0xe1});
	EXPECT_EQ(jmp_rcx.transfer, Transfer::jump_register);
	EXPECT_EQ(jmp_rcx.reg, 1);
}

TEST(X86Analysis, LoopsAndFlagInstructions)
{
	const Analysis loop = analyze({0xe2, 0xfe});
	EXPECT_EQ(loop.condition, Condition::loop);
	EXPECT_EQ(loop.target, at);
	EXPECT_EQ(analyze({0xe1, 0x00}).condition, Condition::loope);
	EXPECT_EQ(analyze({0xe0, 0x00}).condition, Condition::loopne);
	EXPECT_EQ(analyze({0xe3, 0x00}).condition, Condition::jrcxz);
	EXPECT_EQ(analyze({0x67, 0xe3, 0x00}).refusal, Refusal::unsupported_prefix); // jecxz

	EXPECT_EQ(analyze({0x9c}).flag_operation, FlagOperation::pushf);
	EXPECT_EQ(analyze({0x9d}).flag_operation, FlagOperation::popf);
	EXPECT_EQ(analyze({0xfa}).flag_operation, FlagOperation::cli);
	EXPECT_EQ(analyze({0xfb}).flag_operation, FlagOperation::sti);
	EXPECT_EQ(analyze({0xfb}).execution, Execution::emulate);
}

TEST(X86Analysis, RefusalsCarryTheirReason)
{
	struct Case {
		std::vector<uint8_t> bytes;
		Refusal refusal;
	};
	const Case cases[] = {
		{{0xcc}, Refusal::breakpoint},
		{{0xcd, 0x80}, Refusal::interrupt},
		{{0xf1}, Refusal::interrupt},
		{{0x0f, 0x0b}, Refusal::undefined_opcode},
		{{0x0f, 0xb9, 0xc0}, Refusal::undefined_opcode},
		{{0xf4}, Refusal::privileged_flow},
		{{0x48, 0xcf}, Refusal::privileged_flow},
		{{0x0f, 0x05}, Refusal::privileged_flow},
		{{0x48, 0x0f, 0x07}, Refusal::privileged_flow},
		{{0xcb}, Refusal::far_transfer},
		{{0xff, 0x28}, Refusal::far_transfer},
		{{0xff, 0x18}, Refusal::far_transfer},
		{{0xff, 0x10}, Refusal::indirect_through_memory},
		{{0xff, 0x25, 0, 0, 0, 0}, Refusal::indirect_through_memory},
		{{0x8e, 0xd0}, Refusal::interrupt_shadow},
		{{0x66, 0x9c}, Refusal::unsupported_prefix}, // pushfw
		{{0xc7, 0xf8, 0, 0, 0, 0}, Refusal::unsupported_relative},
		{{0xf3, 0x0f, 0x1e, 0xfa}, Refusal::landing_pad}, // endbr64
		{{0xf3, 0x0f, 0x1e, 0xfb}, Refusal::landing_pad}, // endbr32
		{{0x0f, 0xff}, Refusal::undecodable},
		{{0xe8, 0x00}, Refusal::undecodable},
	};
	for (const Case &c : cases) {
		const Analysis a = analyze(c.bytes);
		EXPECT_EQ(a.execution, Execution::refuse) << "first byte " << int(c.bytes[0]);
		EXPECT_EQ(a.refusal, c.refusal) << "first byte " << int(c.bytes[0]) << ": " << refusal_text(a.refusal);
		EXPECT_STRNE(refusal_text(a.refusal), "unknown refusal");
	}
}

} // namespace
