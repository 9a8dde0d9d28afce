// SPDX-License-Identifier: GPL-2.0
// The plain-instruction lengths (arch/x86/plain_instructions.hpp) on
// hand-picked encodings: each form's length, the prefixes and opcodes that
// are left to Zydis, and bytes that end early; the plain branches' kinds
// and displacements. The kernel-bytes tests compare them with Zydis over a
// whole kernel.
#include "x86/plain_instructions.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using okp::x86::plain_instruction_length;
using okp::x86::plain_relative_branch;
using okp::x86::PlainBranch;

unsigned length_of(std::vector<uint8_t> bytes)
{
	return plain_instruction_length(bytes.data(), bytes.size());
}

TEST(PlainInstructions, EachFormHasItsLength)
{
	EXPECT_EQ(length_of({0x55}), 1u);				 // push %rbp
	EXPECT_EQ(length_of({0x41, 0x57}), 2u);				 // push %r15
	EXPECT_EQ(length_of({0x48, 0x89, 0xe5}), 3u);			 // mov %rsp,%rbp
	EXPECT_EQ(length_of({0x48, 0x8b, 0x47, 0x08}), 4u);		 // mov 0x8(%rdi),%rax
	EXPECT_EQ(length_of({0x48, 0x8b, 0x87, 0, 1, 0, 0}), 7u);	 // mov 0x100(%rdi),%rax
	EXPECT_EQ(length_of({0x48, 0x8b, 0x04, 0x24}), 4u);		 // mov (%rsp),%rax
	EXPECT_EQ(length_of({0x48, 0x8b, 0x44, 0x24, 0x10}), 5u);	 // mov 0x10(%rsp),%rax
	EXPECT_EQ(length_of({0x48, 0x8b, 0x04, 0x25, 0, 0, 0, 0}), 8u);	 // mov 0x0,%rax (SIB, no base)
	EXPECT_EQ(length_of({0x48, 0x8b, 0x05, 1, 2, 3, 4}), 7u);	 // mov x(%rip),%rax
	EXPECT_EQ(length_of({0x48, 0x83, 0xec, 0x10}), 4u);		 // sub $0x10,%rsp
	EXPECT_EQ(length_of({0x48, 0x81, 0xec, 0, 1, 0, 0}), 7u);	 // sub $0x100,%rsp
	EXPECT_EQ(length_of({0x3c, 0x2f}), 2u);				 // cmp $0x2f,%al
	EXPECT_EQ(length_of({0x3d, 0, 1, 0, 0}), 5u);			 // cmp $0x100,%eax
	EXPECT_EQ(length_of({0xb8, 1, 0, 0, 0}), 5u);			 // mov $1,%eax
	EXPECT_EQ(length_of({0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}), 10u); // movabs
	EXPECT_EQ(length_of({0xf6, 0x47, 0x10, 0x01}), 4u);		 // testb $1,0x10(%rdi)
	EXPECT_EQ(length_of({0xf7, 0xd8}), 2u);				 // neg %eax
	EXPECT_EQ(length_of({0xf7, 0xc7, 1, 0, 0, 0}), 6u);		 // test $1,%edi
	EXPECT_EQ(length_of({0xc7, 0x07, 1, 0, 0, 0}), 6u);		 // movl $1,(%rdi)
	EXPECT_EQ(length_of({0xc6, 0x07, 1}), 3u);			 // movb $1,(%rdi)
	EXPECT_EQ(length_of({0x48, 0x8d, 0x7c, 0x24, 0x08}), 5u);	 // lea 0x8(%rsp),%rdi
	EXPECT_EQ(length_of({0x0f, 0x1f, 0x44, 0x00, 0x00}), 5u);	 // nopl 0x0(%rax,%rax,1)
	EXPECT_EQ(length_of({0x0f, 0xb6, 0x47, 0x01}), 4u);		 // movzbl 0x1(%rdi),%eax
	EXPECT_EQ(length_of({0x0f, 0x94, 0xc0}), 3u);			 // sete %al
	EXPECT_EQ(length_of({0x0f, 0xba, 0xe0, 0x03}), 4u);		 // bt $3,%eax
	EXPECT_EQ(length_of({0x0f, 0xc8}), 2u);				 // bswap %eax
	EXPECT_EQ(length_of({0xc1, 0xe0, 0x04}), 3u);			 // shl $4,%eax
	EXPECT_EQ(length_of({0x9c}), 1u);				 // pushf
}

TEST(PlainInstructions, PrefixesAndControlFlowAreLeftToZydis)
{
	EXPECT_EQ(length_of({0x66, 0x89, 0x07}), 0u);			      // operand size
	EXPECT_EQ(length_of({0xf0, 0x0f, 0xb1, 0x17}), 0u);		      // lock cmpxchg
	EXPECT_EQ(length_of({0x65, 0x48, 0x8b, 0x04, 0x25, 0, 0, 0, 0}), 0u); // %gs:
	EXPECT_EQ(length_of({0xf3, 0x0f, 0x1e, 0xfa}), 0u);		      // endbr64
	EXPECT_EQ(length_of({0xf3, 0x90}), 0u);				      // pause
	EXPECT_EQ(length_of({0x40, 0x40, 0x89, 0xc0}), 0u);		      // two REX
	for (std::vector<uint8_t> flow : std::vector<std::vector<uint8_t>>{{0xc3},
									   {0xcc},
									   {0xe8, 0, 0, 0, 0},
									   {0xe9, 0, 0, 0, 0},
									   {0xeb, 0},
									   {0x74, 0},
									   {0x0f, 0x84, 0, 0, 0, 0},
									   {0xff, 0xd0},
									   {0xff, 0xe0},
									   {0x0f, 0x0b},
									   {0xc2, 0, 0},
									   {0x0f, 0x05},
									   {0x0f, 0x01, 0xca}})
		EXPECT_EQ(length_of(flow), 0u) << int(flow[0]);
	EXPECT_EQ(length_of({0xc7, 0xf8, 0, 0, 0, 0}), 0u);		// xbegin
	EXPECT_EQ(length_of({0xc6, 0xf8, 0}), 0u);			// xabort
	EXPECT_EQ(length_of({0x8d, 0xc0}), 0u);				// lea without memory
	EXPECT_EQ(length_of({0xfe, 0xd0}), 0u);				// fe /2
	EXPECT_EQ(length_of({0xc5, 0xf8, 0x77}), 0u);			// vzeroupper (VEX)
	EXPECT_EQ(length_of({0x62, 0xf1, 0x7c, 0x48, 0x28, 0xc1}), 0u); // EVEX
}

TEST(PlainInstructions, BytesThatEndEarlyAreNotAnInstruction)
{
	EXPECT_EQ(length_of({}), 0u);
	EXPECT_EQ(length_of({0x48}), 0u);
	EXPECT_EQ(length_of({0x48, 0x8b}), 0u);
	EXPECT_EQ(length_of({0x48, 0x8b, 0x44, 0x24}), 0u);
	EXPECT_EQ(length_of({0x48, 0x8b, 0x05, 1, 2, 3}), 0u);
	EXPECT_EQ(length_of({0xb8, 1, 0, 0}), 0u);
	EXPECT_EQ(length_of({0x48, 0xb8, 1, 2, 3, 4}), 0u);
	EXPECT_EQ(length_of({0x0f}), 0u);
	EXPECT_EQ(length_of({0x83, 0xc0}), 0u);
}

PlainBranch branch_of(std::vector<uint8_t> bytes)
{
	return plain_relative_branch(bytes.data(), bytes.size());
}

TEST(PlainInstructions, RelativeBranchesHaveKindLengthAndDisplacement)
{
	using Kind = PlainBranch::Kind;
	PlainBranch b = branch_of({0x74, 0x10}); // je .+0x12
	EXPECT_EQ(b.kind, Kind::conditional_jump);
	EXPECT_EQ(b.length, 2u);
	EXPECT_EQ(b.condition_code, 4u);
	EXPECT_EQ(b.displacement, 0x10);
	b = branch_of({0x7f, 0xfe}); // jg . (back to itself)
	EXPECT_EQ(b.kind, Kind::conditional_jump);
	EXPECT_EQ(b.condition_code, 0xfu);
	EXPECT_EQ(b.displacement, -2);
	b = branch_of({0x0f, 0x85, 0x00, 0x01, 0x00, 0x00}); // jne rel32
	EXPECT_EQ(b.kind, Kind::conditional_jump);
	EXPECT_EQ(b.length, 6u);
	EXPECT_EQ(b.condition_code, 5u);
	EXPECT_EQ(b.displacement, 0x100);
	b = branch_of({0xeb, 0x80}); // jmp rel8, the farthest back
	EXPECT_EQ(b.kind, Kind::jump);
	EXPECT_EQ(b.length, 2u);
	EXPECT_EQ(b.displacement, -128);
	b = branch_of({0xe9, 0xfb, 0xff, 0xff, 0xff}); // jmp rel32 to itself
	EXPECT_EQ(b.kind, Kind::jump);
	EXPECT_EQ(b.length, 5u);
	EXPECT_EQ(b.displacement, -5);
	b = branch_of({0xe8, 0x00, 0x00, 0x00, 0x80}); // call, the farthest back
	EXPECT_EQ(b.kind, Kind::call);
	EXPECT_EQ(b.displacement, INT32_MIN);
}

TEST(PlainInstructions, PrefixedOrShortBranchesAreLeftToZydis)
{
	using Kind = PlainBranch::Kind;
	for (std::vector<uint8_t> other :
	     std::vector<std::vector<uint8_t>>{{0x66, 0xe9, 0, 0},	 // jmp rel16 (operand size)
					       {0x48, 0xe8, 0, 0, 0, 0}, // REX.W call
					       {0x2e, 0x74, 0},		 // branch hint
					       {0xf2, 0xe9, 0, 0, 0, 0}, // bnd jmp
					       {0xe3, 0},		 // jrcxz
					       {0xe2, 0},		 // loop
					       {0xc3},			 // ret
					       {0xff, 0xe0},		 // jmp *%rax
					       {0x0f, 0x1f, 0x44, 0, 0}, // nopl
					       {0x0f, 0x90, 0xc0},	 // seto
					       {0xc7, 0xf8, 0, 0, 0, 0}, // xbegin
					       {0x74},			 // je, its displacement missing
					       {0xe9, 0, 0, 0},		 // jmp rel32, a byte short
					       {0x0f, 0x84, 0, 0, 0},	 // je rel32, a byte short
					       {0x0f},
					       {}})
		EXPECT_EQ(branch_of(other).kind, Kind::none) << other.size();
}

} // namespace
