// SPDX-License-Identifier: GPL-2.0
// The lengths of x86-64's plain instructions, read from their opcode and
// ModRM bytes without Zydis: the fast path of the walks that decode a
// whole function (FunctionMap, the instruction-boundary walk).
//
// A registration decodes its whole function (the boundary proof, then the
// jump plan's branch targets), about 300 instructions on average over
// make bench's sample, and under QEMU that decode was most of what
// registering 10,000 probes cost. Most of a function is moves, arithmetic,
// compares, pushes and pops: for them the walks need only the length, and
// the length follows from a few opcode tables (three in four of Debian
// 6.12's instructions). Most of the rest (four in five) are relative jumps,
// conditional jumps and calls without a prefix, whose length, kind and
// displacement follow from the opcode alone (plain_relative_branch; the
// thunk rules then read their targets, instruction_analysis.cpp). Anything
// else (a legacy prefix, ret, int3, ud2, an opcode outside the tables, or
// bytes that end early) is not plain: the walk asks Zydis, as before.
//
// selftests/host's kernel-bytes test checks the tables against Zydis at
// every byte offset of a Debian kernel's text: wherever this says plain,
// Zydis decodes the same length, an instruction that transfers no control,
// and for a plain branch the same analysis.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace okp::x86 {

// The length of the plain instruction at bytes (within available bytes),
// or 0 when it is not one of the plain instructions above.
unsigned plain_instruction_length(const uint8_t *bytes, size_t available);

// A relative branch with no prefix: jcc rel8 (70-7f), jcc rel32 (0f 80-8f),
// jmp rel8 (eb), jmp rel32 (e9), call rel32 (e8).
struct PlainBranch {
	enum class Kind : uint8_t { none, jump, conditional_jump, call };
	Kind kind = Kind::none;
	uint8_t length = 0;
	uint8_t condition_code = 0; // conditional_jump: the opcode's low nibble
	int32_t displacement = 0;   // from the next instruction
};

// The plain branch at bytes (within available bytes); Kind::none when it
// is not one (also when its bytes end early).
PlainBranch plain_relative_branch(const uint8_t *bytes, size_t available);

} // namespace okp::x86
