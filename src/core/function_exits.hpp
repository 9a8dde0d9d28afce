// SPDX-License-Identifier: GPL-2.0
// Every way out of a function, proven from its bytes: where a return probe
// may run its handler at the function's exits instead of replacing the
// return address (src/kernel/return_exit_probes.c).
//
// The function and its ".cold" pieces are decoded linearly, every byte of
// them: an exit the compiler placed anywhere (an early return, a return in
// a jump label's out-of-line block, in the cold piece) is found whether or
// not a path to it is known. The census accepts a function only when each
// way out is one of
//  - a return (x86: ret, or a jump to the return thunk the boot chose;
//    riscv: a jump through ra);
//  - a tail call: an unconditional direct jump to another function's first
//    byte (the stack is as at entry there, so the return address can still
//    be hooked: the caller's to do), also a riscv far one (auipc t; jr t,
//    the pair whole: the auipc right before the jump, nothing landing on
//    the jump);
//  - a call or a trap as the last instruction of a range (a noreturn call,
//    BUG()): no way out at all;
// and every jump, branch and hidden edge (a jump label's target, which a
// nop hides from the decoder) lands in the function or one of its pieces,
// or is a tail call, and lands where a decoded instruction starts. It
// refuses a function that jumps through a register
// (a tail call whose target is unknown, or a jump table), branches
// conditionally out of itself (a conditional tail call or return: the exit
// would have to evaluate the condition), jumps into the middle of another
// function, or runs off the end of a range into what follows (an inner
// label of hand-written code: calls entered there would pass the exits but
// not the entry).
//
// Pure C++: the module asks it at registration, the host tests run it over
// every function of Debian's kernels.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/code_range.hpp"

namespace okp {

// What one instruction does to the census's walk (each arch's exit_step).
enum class ExitFlow : uint8_t {
	next,	       // goes on to the next instruction
	call,	       // a call: goes on, unless the callee does not return
	trap,	       // a deliberate trap (BUG, WARN): may or may not go on
	padding,       // a nop or int3: goes on, and may end a range as padding
	returns,       // a return
	jump,	       // an unconditional direct jump to target
	branch,	       // a conditional direct branch to target, or the next one
	indirect_jump, // a jump through a register or memory
	undecodable,
};

struct ExitStep {
	uint8_t length = 0;
	ExitFlow flow = ExitFlow::undecodable;
	uint64_t target = 0; // jump and branch
	// A jump whose target the instruction of this many bytes right before
	// it computed (riscv's auipc of auipc + jr): target holds only if an
	// instruction starts there and nothing lands on the jump, which the
	// census checks (else it is a jump through a register).
	uint8_t computed_by = 0;
};

// The arch's decoder: the instruction at code.bytes + offset.
using ExitDecoder = void (*)(const CodeRange &code, size_t offset, ExitStep &step);

enum class ExitKind : uint8_t {
	returns,   // the function returns here
	tail_call, // the function jumps to target, which returns for it
};

struct FunctionExit {
	uint64_t address = 0;
	uint64_t target = 0; // tail_call
	ExitKind kind = ExitKind::returns;
};

enum class ExitRefusal : uint8_t {
	none,
	undecodable,	       // a range does not decode to its end
	indirect_jump,	       // a jump through a register or memory
	conditional_exit,      // a conditional branch out of the function
	jump_elsewhere,	       // a jump into the middle of another function
	mid_instruction,       // an edge lands inside an instruction the decode saw
	hidden_edge_elsewhere, // a jump label leaves the function
	falls_off_end,	       // a range's last instruction runs into what follows
	too_many_pieces,
	too_many_exits,
	no_exit, // the function never returns
	out_of_memory,
	unreadable, // the caller could not read a piece or the hidden edges
};

const char *exit_refusal_text(ExitRefusal refusal);

// Where an address outside the ranges decoded so far is.
enum class ExitPlace : uint8_t {
	piece,		// a ".cold" piece of the function: decode it too
	function_start, // another function's first byte: a tail call's target
	elsewhere,
};

// What the census asks the kernel (or a host test's image).
struct ExitFacts {
	// Where target is; for a piece, its first byte and its bytes (which
	// stay valid until the census returns) in *piece.
	ExitPlace (*place)(uint64_t target, CodeRange *piece, void *context);
	// The targets of the hidden edges (jump labels) whose site lies in
	// range: how many, at most capacity written; -1 when they cannot be
	// known.
	long (*hidden_targets)(const CodeRange &range, uint64_t *targets, size_t capacity, void *context);
	void *context;
};

constexpr size_t max_exit_pieces = 4;
constexpr size_t max_hidden_edges = 32;

// The running kernel's hidden edges out of range, for ExitFacts and
// CodeGraphFacts: its jump labels' targets and exception fixups (from the
// glue's tables; return_exits.cpp); -1 when they cannot be known or are
// more than capacity (or max_hidden_edges of a kind).
long kernel_hidden_targets(const CodeRange &range, uint64_t *targets, size_t capacity, void *context);
// The most exits a return probe puts probes on.
constexpr size_t max_function_exits = 64;

struct ExitCensus {
	ExitRefusal refusal = ExitRefusal::none;
	uint64_t at = 0;   // the instruction (or target) that decided a refusal
	size_t count = 0;  // exits found (all written when refusal is none)
	size_t pieces = 0; // .cold pieces decoded besides the function
};

// The exits of function (its bytes as before any probe), at most capacity
// of them written to exits in address order of each range, the function's
// first. A refusal says why the function's exits cannot be proven;
// too_many_exits when there are more than capacity.
ExitCensus census_exits(const CodeRange &function, ExitDecoder decode, const ExitFacts &facts, FunctionExit *exits,
			size_t capacity);

} // namespace okp
