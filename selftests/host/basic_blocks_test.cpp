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
