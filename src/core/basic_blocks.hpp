// SPDX-License-Identifier: GPL-2.0
// Where a function's basic blocks start, from its bytes: the leaders of
// the classic construction, on the control flow each architecture's
// decoder reports instruction by instruction (x86: Zydis; riscv: okprobe's
// RV64GC decoder). okprobe-cover puts a counting probe on each.
//
// A leader is the function's first byte, the target of a direct branch
// or jump of the function that lands on one of its instruction boundaries,
// or the instruction after a conditional branch. Code reached only through
// a jump table or another indirect jump starts no block of its own (its
// instructions count with the block before them, if any runs into them);
// a call does not end a block (the callee returns). Pure C++.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/code_range.hpp"

namespace okp {

enum class FlowKind : uint8_t {
	next,	     // execution goes on to the next instruction (calls too)
	branch,	     // conditional: to target when taken, else the next one
	jump,	     // unconditional, to target (0: a target the decoder cannot see)
	stop,	     // no next instruction: return, trap, indirect jump
	undecodable, // not an instruction: the walk stops
};

struct FlowStep {
	uint8_t length = 0;
	FlowKind kind = FlowKind::undecodable;
	uint64_t target = 0; // branch and jump: where (0 when not direct)
};

// The arch's decoder: the instruction at function.bytes + offset.
using FlowDecoder = void (*)(const CodeRange &function, size_t offset, FlowStep &step);

// The offsets of function's block leaders, in increasing order: the count
// of them, of which at most capacity are written. 0 when the first
// instruction does not decode. Takes a byte per byte of the function from
// the heap: -1 when memory is short.
long block_starts(const CodeRange &function, FlowDecoder decode, uint32_t *offsets, size_t capacity);

} // namespace okp
