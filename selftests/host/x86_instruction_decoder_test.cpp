// SPDX-License-Identifier: GPL-2.0
// Instruction lengths and boundary proofs on byte sequences as the 6.1 x86
// kernel emits them (fentry call, retpoline and return-thunk jumps, gs-based
// stack protector loads, RIP-relative accesses, padding).
#include "x86/instruction_decoder.hpp"
#include "x86/jump_optimization.hpp"

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

// Xen's cpuid as 6.1's xen_cpuid has it: ud2 "xen" cpuid is one
// instruction to the kernel's insn decoder and kprobes (found by the
// differential test against insn.c), and the code goes on after it.
TEST(X86Decoder, AnEmulatePrefixAndItsInstructionAreOne)
{
	// push %rbp; ud2; .ascii "xen"; cpuid; pop %rbp
	const uint8_t function[] = {0x55, 0x0f, 0x0b, 'x', 'e', 'n', 0x0f, 0xa2, 0x5d};
	EXPECT_TRUE(okp::x86::has_emulate_prefix(function + 1, sizeof(function) - 1));
	EXPECT_EQ(instruction_length(function + 1, sizeof(function) - 1), 7u);
	EXPECT_TRUE(okp::x86::falls_through(function + 1, 7));
	for (size_t offset = 0; offset < sizeof(function); ++offset)
		EXPECT_EQ(check_instruction_boundary(function, sizeof(function), offset),
			  offset == 0 || offset == 1 || offset == 8 ? Boundary::instruction_start
								    : Boundary::inside_instruction)
			<< "offset " << offset;
	const uint8_t kvm[] = {0x0f, 0x0b, 'k', 'v', 'm', 0x0f, 0xa2};
	EXPECT_EQ(instruction_length(kvm, sizeof(kvm)), 7u);
	// A plain ud2 (BUG()) stays two bytes and stops.
	const uint8_t bug[] = {0x0f, 0x0b, 'x', 'e', 'N', 0x0f, 0xa2};
	EXPECT_EQ(instruction_length(bug, sizeof(bug)), 2u);
	EXPECT_FALSE(okp::x86::falls_through(bug, 2));
}

} // namespace

TEST(X86Boundary, AnInt3WhereTheCodeFallsThroughIsSomeoneElsesBreakpoint)
{
	// mov %rdi,%rax; add %rsi,%rax with its first byte under an int3
	// (48 01 f0 -> cc 01 f0: the decode goes on from "01 f0 ..."); ret
	const uint8_t foreign[] = {0x48, 0x89, 0xf8, 0xcc, 0x01, 0xf0, 0xc3};
	EXPECT_EQ(okp::x86::check_instruction_boundary(foreign, sizeof(foreign), 3),
		  okp::x86::Boundary::instruction_start)
		<< "the int3 itself is refused by the instruction rules";
	EXPECT_EQ(okp::x86::check_instruction_boundary(foreign, sizeof(foreign), 6),
		  okp::x86::Boundary::foreign_breakpoint);
	// int3 after ret, jmp, call and an indirect jmp is padding or an SLS
	// stop: the decode goes on.
	const uint8_t padding[] = {
		0xc3, 0xcc,			    // ret; int3
		0xe9, 0x00, 0x00, 0x00, 0x00, 0xcc, // jmp rel32; int3
		0xe8, 0x00, 0x00, 0x00, 0x00, 0xcc, // call rel32 (noreturn); int3
		0xff, 0xe0, 0xcc,		    // jmp *%rax; int3
		0x2e, 0xc3, 0xcc,		    // cs ret; int3
		0x90,				    // nop
	};
	EXPECT_EQ(okp::x86::check_instruction_boundary(padding, sizeof(padding), sizeof(padding) - 1),
		  okp::x86::Boundary::instruction_start);
	// call *%rax falls through to its return address... but a call may
	// be noreturn: after "ff d0" an int3 is accepted too.
	const uint8_t indirect_call[] = {0xff, 0xd0, 0xcc, 0x90};
	EXPECT_EQ(okp::x86::check_instruction_boundary(indirect_call, sizeof(indirect_call), 3),
		  okp::x86::Boundary::instruction_start);
	// A conditional jump falls through.
	const uint8_t after_jcc[] = {0x74, 0x02, 0xcc, 0x90, 0x90};
	EXPECT_EQ(okp::x86::check_instruction_boundary(after_jcc, sizeof(after_jcc), 3),
		  okp::x86::Boundary::foreign_breakpoint);
}

// The writer's one decode (FunctionMap) proves what the walk proves.
TEST(X86Boundary, TheFunctionMapAnswersAsTheWalk)
{
	const uint8_t cases[][24] = {
		{0xe8, 0,    0,	   0, 0, 0x55, 0x48, 0x89, 0xe5, 0x65, 0x48, 0x8b,
		 0x04, 0x25, 0x28, 0, 0, 0,    0xe9, 0,	   0,	 0,    0},
		{0x55, 0x0f, 0xff, 0x90},			  // undecodable after the push
		{0x48, 0x89, 0xf8, 0xcc, 0x01, 0xf0, 0xc3},	  // a foreign int3
		{0xc3, 0xcc, 0xe9, 0, 0, 0, 0, 0xcc, 0x90},	  // padding after ret and jmp
		{0x74, 0x02, 0xcc, 0x90, 0x90},			  // int3 after a jcc
		{0x48, 0x89, 0xf8, 0xcc, 0x0f, 0xff, 0x90, 0x90}, // an int3, then undecodable
	};
	const size_t sizes[] = {23, 4, 7, 9, 5, 8};
	for (size_t c = 0; c < sizeof(sizes) / sizeof(sizes[0]); ++c) {
		okp::x86::FunctionMap map;
		ASSERT_TRUE(map.decode({cases[c], 0xffffffff81000000ull, sizes[c]}, {}));
		for (size_t offset = 0; offset <= sizes[c] + 1; ++offset)
			EXPECT_EQ(map.boundary(offset),
				  okp::x86::check_instruction_boundary(cases[c], sizes[c], offset))
				<< "case " << c << " offset " << offset;
	}
}
