// SPDX-License-Identifier: GPL-2.0
// Basic-block leaders (core/basic_blocks.hpp) on each architecture's
// decoder: the same function shape as okprobe_test_target.ko's
// okp_cover_target, whose blocks the guest test counts.
#include "core/basic_blocks.hpp"
#include "riscv/instruction_decoder.hpp"
#include "riscv/jump_optimization.hpp"
#include "x86/instruction_decoder.hpp"

#include "riscv_code.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using okp::CodeRange;

std::vector<uint32_t> leaders(const std::vector<uint8_t> &bytes, uint64_t address, okp::FlowDecoder decode)
{
	uint32_t offsets[16] = {};
	const long count = okp::block_starts(CodeRange{bytes.data(), address, bytes.size()}, decode, offsets, 16);
	EXPECT_GE(count, 0);
	return std::vector<uint32_t>(offsets, offsets + (count > 16 ? 16 : count));
}

// 0: cmp $1,%rdi; 4: jl 25; 6: mov %rdi,%rax; 9: cmp $10,%rdi; 13: jg 20;
// 15: add $1,%rax; 19: ret; 20: add $2,%rax; 24: ret; 25: xor %eax,%eax;
// 27: ret
const std::vector<uint8_t> x86_function = {0x48, 0x83, 0xff, 0x01, 0x7c, 0x13, 0x48, 0x89, 0xf8, 0x48,
					   0x83, 0xff, 0x0a, 0x7f, 0x05, 0x48, 0x83, 0xc0, 0x01, 0xc3,
					   0x48, 0x83, 0xc0, 0x02, 0xc3, 0x31, 0xc0, 0xc3};

TEST(BasicBlocks, X86LeadersAreTheEntryBranchTargetsAndFallThroughs)
{
	EXPECT_EQ(leaders(x86_function, 0xffffffff81000000, okp::x86::flow_step),
		  (std::vector<uint32_t>{0, 6, 15, 20, 25}));
}

TEST(BasicBlocks, X86CallsGoOnAndIndirectJumpsStop)
{
	// 0: call +0; 5: jmp *%rax; 7: nop; 8: ret
	const std::vector<uint8_t> code = {0xe8, 0, 0, 0, 0, 0xff, 0xe0, 0x90, 0xc3};
	EXPECT_EQ(leaders(code, 0xffffffff81000000, okp::x86::flow_step), (std::vector<uint32_t>{0}))
		<< "nothing branches to 7: it starts no block";
}

okp::FlowKind x86_kind(const std::vector<uint8_t> &code)
{
	okp::FlowStep step;
	okp::x86::flow_step(CodeRange{code.data(), 0x1000, code.size()}, 0, step);
	EXPECT_EQ(step.length, code.size());
	return step.kind;
}

okp::FlowKind riscv_kind(uint32_t word, uint64_t *target = nullptr)
{
	const uint8_t bytes[4] = {uint8_t(word), uint8_t(word >> 8), uint8_t(word >> 16), uint8_t(word >> 24)};
	okp::FlowStep step;
	okp::riscv::flow_step(CodeRange{bytes, 0x1000, (word & 3) == 3 ? 4u : 2u}, 0, step);
	if (target)
		*target = step.target;
	return step.kind;
}

TEST(BasicBlocks, EachInstructionsFlowOnX86)
{
	using okp::FlowKind;
	EXPECT_EQ(x86_kind({0xe8, 0, 0, 0, 0}), FlowKind::next) << "call rel32";
	EXPECT_EQ(x86_kind({0xff, 0xd0}), FlowKind::next) << "call *%rax";
	EXPECT_EQ(x86_kind({0xff, 0xe0}), FlowKind::stop) << "jmp *%rax";
	EXPECT_EQ(x86_kind({0xc3}), FlowKind::stop) << "ret";
	EXPECT_EQ(x86_kind({0x0f, 0x0b}), FlowKind::stop) << "ud2";
	EXPECT_EQ(x86_kind({0xcc}), FlowKind::stop) << "int3";
	EXPECT_EQ(x86_kind({0xeb, 0x10}), FlowKind::jump) << "jmp rel8";
	EXPECT_EQ(x86_kind({0x0f, 0x84, 0, 1, 0, 0}), FlowKind::branch) << "je rel32";
	EXPECT_EQ(x86_kind({0xe2, 0xfe}), FlowKind::branch) << "loop";
	EXPECT_EQ(x86_kind({0xe3, 0x00}), FlowKind::branch) << "jrcxz";
	EXPECT_EQ(x86_kind({0x48, 0x01, 0xf0}), FlowKind::next) << "add";
	okp::FlowStep step;
	const std::vector<uint8_t> jcc = {0x74, 0x10};
	okp::x86::flow_step(CodeRange{jcc.data(), 0x1000, jcc.size()}, 0, step);
	EXPECT_EQ(step.target, 0x1012u);
}

TEST(BasicBlocks, EachInstructionsFlowOnRiscv)
{
	using okp::FlowKind;
	using namespace okp::riscv;
	uint64_t target = 0;
	EXPECT_EQ(riscv_kind(encode::jal(reg::ra, 0x40)), FlowKind::next) << "jal ra: a call";
	EXPECT_EQ(riscv_kind(encode::jal(reg::zero, 0x40), &target), FlowKind::jump) << "j";
	EXPECT_EQ(target, 0x1040u);
	EXPECT_EQ(riscv_kind(encode::jalr(reg::ra, reg::t0, 0)), FlowKind::next) << "jalr ra: a call";
	EXPECT_EQ(riscv_kind(encode::jalr(reg::zero, reg::ra, 0)), FlowKind::stop) << "ret";
	EXPECT_EQ(riscv_kind(0x9282), FlowKind::next) << "c.jalr t0: a call";
	EXPECT_EQ(riscv_kind(0x8082), FlowKind::stop) << "c.jr ra";
	EXPECT_EQ(riscv_kind(encode::branch(0, reg::a0, reg::a1, -8), &target), FlowKind::branch) << "beq";
	EXPECT_EQ(target, 0x1000u - 8);
	EXPECT_EQ(riscv_kind(0x00100073), FlowKind::stop) << "ebreak";
	EXPECT_EQ(riscv_kind(0x9002), FlowKind::stop) << "c.ebreak";
	EXPECT_EQ(riscv_kind(0x00000000), FlowKind::undecodable) << "illegal";
}

TEST(BasicBlocks, ATargetInsideAnInstructionLeadsNothing)
{
	// 0: jmp 2 (into the mov's middle); 2..: mov $0x90c3,%eax (b8 c3 90 00 00); ret
	const std::vector<uint8_t> code = {0xeb, 0x01, 0xb8, 0xc3, 0x90, 0x00, 0x00, 0xc3};
	EXPECT_EQ(leaders(code, 0xffffffff81000000, okp::x86::flow_step), (std::vector<uint32_t>{0}));
}

TEST(BasicBlocks, RiscvLeadersAreTheEntryBranchTargetsAndFallThroughs)
{
	using namespace okp::riscv;
	using namespace okp::riscv::test;
	// 0: c.li t0,1; 2: blt a0,t0,20; 6: c.li t0,10; 8: blt t0,a0,16;
	// 12: c.addi a0,1; 14: ret; 16: c.addi a0,2; 18: ret; 20: c.li a0,0; 22: ret
	const std::vector<uint8_t> code = assemble({c(0x4285), i(encode::branch(4, reg::a0, reg::t0, 18)), c(0x42a9),
						    i(encode::branch(4, reg::t0, reg::a0, 8)), c(0x0505), c(0x8082),
						    c(0x0509), c(0x8082), c(0x4501), c(0x8082)});
	EXPECT_EQ(leaders(code, 0xffffffff80100000, okp::riscv::flow_step), (std::vector<uint32_t>{0, 6, 12, 16, 20}));
}

TEST(BasicBlocks, MoreLeadersThanRoomAreCounted)
{
	uint32_t one[1] = {};
	EXPECT_EQ(okp::block_starts(CodeRange{x86_function.data(), 0x1000, x86_function.size()}, okp::x86::flow_step,
				    one, 1),
		  5);
	EXPECT_EQ(one[0], 0u);
}

} // namespace
