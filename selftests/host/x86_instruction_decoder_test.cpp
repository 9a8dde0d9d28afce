// SPDX-License-Identifier: GPL-2.0
// Instruction lengths and boundary proofs on byte sequences as the 6.1 x86
// kernel emits them (fentry call, retpoline and return-thunk jumps, gs-based
// stack protector loads, RIP-relative accesses, padding).
#include "x86/instruction_decoder.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using okp::x86::Boundary;
using okp::x86::check_instruction_boundary;
using okp::x86::instruction_length;

struct Case {
	std::vector<uint8_t> bytes;
	unsigned length;
};

TEST(X86Decoder, KernelInstructionLengths)
{
	const Case cases[] = {
		{{0xe8, 0x00, 0x00, 0x00, 0x00}, 5},			   // call __fentry__
		{{0x0f, 0x1f, 0x44, 0x00, 0x00}, 5},			   // nop5 (patched fentry)
		{{0x55}, 1},						   // push %rbp
		{{0x48, 0x89, 0xe5}, 3},				   // mov %rsp,%rbp
		{{0x65, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0}, 9},	   // mov %gs:0x28,%rax
		{{0x48, 0x8d, 0x3d, 0x10, 0x20, 0x30, 0x40}, 7},	   // lea 0x..(%rip),%rdi
		{{0xe9, 0x00, 0x00, 0x00, 0x00}, 5},			   // jmp __x86_return_thunk
		{{0x2e, 0xe8, 0x00, 0x00, 0x00, 0x00}, 6},		   // cs call __x86_indirect_thunk_rax
		{{0xc3}, 1},						   // ret
		{{0xcc}, 1},						   // int3
		{{0x0f, 0x0b}, 2},					   // ud2 (BUG/WARN)
		{{0x74, 0x05}, 2},					   // je rel8
		{{0x0f, 0x85, 0x10, 0x00, 0x00, 0x00}, 6},		   // jne rel32
		{{0x48, 0xc7, 0x44, 0x24, 0x08, 0x01, 0, 0, 0}, 9},	   // movq $1,0x8(%rsp)
		{{0xf3, 0x48, 0xa5}, 3},				   // rep movsq
		{{0xf0, 0x0f, 0xb1, 0x17}, 4},				   // lock cmpxchg %edx,(%rdi)
		{{0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0}, 11}, // padding nop
	};
	for (const Case &c : cases)
		EXPECT_EQ(instruction_length(c.bytes.data(), c.bytes.size()), c.length)
			<< "first byte " << std::hex << unsigned(c.bytes[0]);
}

TEST(X86Decoder, RefusesTruncatedAndInvalidBytes)
{
	const uint8_t truncated[] = {0xe8, 0x00, 0x00};
	EXPECT_EQ(instruction_length(truncated, sizeof(truncated)), 0u);
	const uint8_t invalid[] = {0x0f, 0xff}; // ud0 needs a ModRM
	EXPECT_EQ(instruction_length(invalid, sizeof(invalid)), 0u);
	const uint8_t too_many_prefixes[16] = {0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
					       0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90};
	EXPECT_EQ(instruction_length(too_many_prefixes, sizeof(too_many_prefixes)), 0u);
}

TEST(X86Decoder, InstructionBoundaries)
{
	// call __fentry__; push %rbp; mov %rsp,%rbp; mov %gs:0x28,%rax; jmp thunk
	const uint8_t function[] = {0xe8, 0,	0,    0, 0, 0x55, 0x48, 0x89, 0xe5, 0x65, 0x48, 0x8b,
				    0x04, 0x25, 0x28, 0, 0, 0,	  0xe9, 0,    0,    0,	  0};
	const size_t starts[] = {0, 5, 6, 9, 18};
	for (size_t offset = 0; offset < sizeof(function); ++offset) {
		bool is_start = false;
		for (size_t s : starts)
			is_start |= s == offset;
		EXPECT_EQ(check_instruction_boundary(function, sizeof(function), offset),
			  is_start ? Boundary::instruction_start : Boundary::inside_instruction)
			<< "offset " << offset;
	}
	EXPECT_EQ(check_instruction_boundary(function, sizeof(function), sizeof(function)), Boundary::past_end);
	const uint8_t broken[] = {0x55, 0x0f, 0xff, 0x90};
	EXPECT_EQ(check_instruction_boundary(broken, sizeof(broken), 3), Boundary::undecodable);
}

} // namespace
