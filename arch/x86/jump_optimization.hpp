// SPDX-License-Identifier: GPL-2.0
// Where a probe's breakpoint may become a 5-byte "jmp rel32" into a detour
// buffer (x86-64): the safety rules of the kernel's optprobes, decided on
// decoded bytes, with the relocations okprobe adds beyond them.
//
// The jump replaces the detoured code region (DCR): the whole instructions
// from the probed address that cover at least 5 bytes. It is safe when
//  - the DCR lies inside the probed function;
//  - nothing can land inside the jump: no direct jmp/jcc/call/loop of the
//    function or of its .cold/.part pieces targets addr+1 ... addr+4 (the
//    only instruction boundaries the jump covers besides addr), and neither
//    the function nor a piece jumps indirectly (a jump table could);
//  - no instruction of the function has an exception-table entry (a fixup
//    could resume inside the jump);
//  - every DCR instruction can run in the detour: copied, RIP-relative
//    rebased, or re-encoded (jmp and jcc with rel32 targets, call rel32, the
//    return thunk jump). A jmp or ret in the DCR ends the copy.
// Neighbouring probes, ftrace sites, jump labels, static calls and
// alternatives inside the DCR are the caller's to check (they are kernel
// facts, not bytes).
//
// Pure C++: the module decides with it, the host tests run it over every
// instruction of Debian's vmlinux.
#pragma once

#include "core/code_graph.hpp"
#include "core/code_range.hpp"
#include "core/owned.hpp"
#include "x86/instruction_analysis.hpp"
#include "x86/instruction_decoder.hpp"

namespace okp::x86 {

constexpr size_t jump_size = 5;

enum class OptimizationRefusal : uint8_t {
	none,
	function_undecodable,	// the function or a piece does not decode to its end
	region_past_function,	// the function ends before 5 bytes of whole instructions
	region_not_relocatable, // a DCR instruction cannot run in a detour
	indirect_jump,		// the function or a piece jumps through a register or memory
	jump_into_region,	// a direct branch targets addr+1 ... addr+4
	unanalysable_branch,	// an ip-relative instruction with a target not known (xbegin)
	exception_entry,	// an instruction of the function has an exception-table entry
	out_of_memory,
};

struct RegionInstruction {
	uint8_t offset = 0; // from the probed address
	Analysis analysis;
};

struct OptimizationPlan {
	OptimizationRefusal refusal = OptimizationRefusal::none;
	uint64_t refusal_address = 0; // the instruction that decided it (jump_into_region: the target)
	uint8_t region_length = 0;    // the DCR: bytes of whole instructions, >= jump_size
	uint8_t copied_length = 0;    // of those, the bytes the detour runs
	uint8_t count = 0;	      // instructions copied
	RegionInstruction instructions[jump_size];
	bool ends_in_transfer = false; // the copy ends in jmp/ret: no jump back
};

// Whether the instruction at address has an exception-table entry.
using ExceptionEntryQuery = bool (*)(uint64_t address, void *context);

// What decoding a function once tells every question asked of it: where
// its instructions start (the breakpoint's boundary proof), where its direct
// jumps and calls go, and of its .cold/.part pieces', its jumps out (the
// pieces to read), and what refuses a jump anywhere in it. The writer keeps
// the last one (arch/x86/breakpoints.cpp) for the next registration in the
// same function; the census decodes each of Debian's functions once.
class FunctionMap {
public:
	FunctionMap() = default;
	FunctionMap(const FunctionMap &) = delete;
	FunctionMap &operator=(const FunctionMap &) = delete;

	// Decodes function linearly from its first byte, once. False only
	// when out of memory.
	bool decode(const CodeRange &function, const Thunks &thunks);
	// Adds a piece's direct branch targets and refusals. False only when
	// out of memory.
	bool add_piece(const CodeRange &piece, const Thunks &thunks);
	// An instruction of the function has an exception-table entry: a
	// fixup could resume inside any jump.
	void add_exception_entry(uint64_t address) { refuse(OptimizationRefusal::exception_entry, address); }
	// Orders the branch targets; after the last add_piece.
	void finish();

	// All three steps, asking has_exception_entry (when given) for every
	// instruction of the function.
	bool build(const CodeRange &function, const CodeRange *pieces, size_t piece_count, const Thunks &thunks,
		   ExceptionEntryQuery has_exception_entry, void *context);

	// check_instruction_boundary()'s answer for offset, from the decode.
	Boundary boundary(size_t offset) const;
	// Whether an instruction starts at offset.
	bool starts_at(size_t offset) const { return offset < size_ && (starts_[offset / 8] >> (offset % 8)) & 1; }
	size_t size() const { return size_; }
	// external_jump_targets()'s answer, from the decode.
	size_t external_jump_targets(uint64_t *targets, size_t capacity) const;
	// A refusal that holds for every address of the function, or none.
	OptimizationRefusal function_refusal() const { return refusal_; }
	uint64_t function_refusal_address() const { return refusal_address_; }
	// The first direct branch target in [start, end), or 0.
	uint64_t target_within(uint64_t start, uint64_t end) const;

private:
	bool scan(const CodeRange &code, const Thunks &thunks, bool function);
	void refuse(OptimizationRefusal refusal, uint64_t address);

	static constexpr size_t none = ~size_t(0);
	OwnedArray<uint8_t> starts_; // a bit per byte of the function
	size_t size_ = 0;
	size_t undecodable_at_ = none;	      // where the decode stopped short
	size_t foreign_breakpoint_at_ = none; // the first int3 after code that falls through
	uint64_t address_ = 0;
	GrowingArray<uint64_t> targets_;  // sorted by finish()
	GrowingArray<uint64_t> external_; // the function's jumps out, each once
	OptimizationRefusal refusal_ = OptimizationRefusal::none;
	uint64_t refusal_address_ = 0;
};

// The plan for a jump at address in function, given its map.
OptimizationPlan plan_jump_optimization(const CodeRange &function, const FunctionMap &map, uint64_t address,
					const Thunks &thunks);

// Both steps, for a single address.
OptimizationPlan plan_jump_optimization(const CodeRange &function, const CodeRange *pieces, size_t piece_count,
					uint64_t address, const Thunks &thunks, ExceptionEntryQuery has_exception_entry,
					void *context);

const char *optimization_refusal_text(OptimizationRefusal refusal);

// The targets outside function of its direct jumps and jccs (tail calls,
// and the jumps into its .cold piece), each once, in order of appearance;
// the thunks are left out. Returns how many there are; more than capacity
// means some were not stored (and the count is then only a lower bound).
size_t external_jump_targets(const CodeRange &function, const Thunks &thunks, uint64_t *targets, size_t capacity);
// The distinct addresses outside function that its code refers to, of the
// kinds asked (a mask of okp::references::*): relative jumps and calls,
// and rip-relative operands (a taken function address among them; data
// addresses are for the caller to drop). Returns the count, which may
// exceed capacity.
size_t code_references(const CodeRange &function, const Thunks &thunks, unsigned kinds, uint64_t *targets,
		       size_t capacity);

// The most a relocated region takes: a call (always the region's last
// instruction) becomes up to 25 bytes (push of a 64-bit return address,
// jmp rel32), every other instruction at most 15, and the jump back.
constexpr size_t max_relocated_call = 25;
constexpr size_t max_relocated_region = (jump_size - 1) * max_instruction_length + max_relocated_call + jump_size;

// Writes the detour's copy of plan's region (region: the original bytes
// at address) for execution at copy_address: copies, RIP-relative
// displacements rebased, jmp/jcc rel32 and the return-thunk jump
// re-encoded with rel32 targets, a call as a push of its original return
// address and a jmp, then a jmp back to the first instruction after the
// region unless the copy ends in a jmp, ret or call. Returns its length,
// or 0 when a target is out of rel32 reach or capacity is too small.
size_t relocate_region(const OptimizationPlan &plan, const uint8_t *region, uint64_t address, const Thunks &thunks,
		       uint64_t copy_address, uint8_t *out, size_t capacity);

// Whether an instruction can run in a detour (copied or re-encoded).
bool relocatable_in_detour(const Analysis &analysis);

} // namespace okp::x86
