// SPDX-License-Identifier: GPL-2.0
// Where a riscv64 probe's breakpoint may become a jump into a detour, and
// how the detour runs the instructions it replaces.
//
// The jump replaces the window, the whole instructions from the probed
// address covering at least 6 bytes. Windows are 6 or 8 bytes long:
//  - 8 bytes (two RVI instructions, or 2 + 2 + 4): "auipc tmp, hi;
//    jalr x0, lo(tmp)" straight to the detour;
//  - 6 bytes (4 + 2, 2 + 4 or 2 + 2 + 2): "auipc tmp, hi; c.jr tmp". c.jr
//    has no offset, so it lands exactly at address + (hi << 12): on the
//    probed address's offset within a 4 KiB page. The detour's landing, a
//    c.j into the detour, sits at that offset of a detour page. Such a
//    window holds a compressed instruction, so the hart runs c.jr too.
// The shorter window is the point: fewer jumps land inside it, fewer calls
// return inside it, fewer functions end inside it.
// Where the probed instruction ends the function's straight line (a
// return, a jump, a tail call: nothing follows it for a jump to cover),
// the window may end there instead: it starts `behind` bytes before the
// probed address, over the straight-line instructions that lead to it
// (an epilogue: "ld ra; addi sp; ret"). The detour then runs their copy
// first, then the probe's frame (the hit is at the probed address, with
// the registers as they are there), then the probed instruction's copy.
// Those instructions must be plain ones: no branch, jump or call, and
// nothing but the window's first byte may be a target. A breakpoint at the
// window's start (the site's guard, src/core/probe_table.hpp) keeps tasks
// out of the window while the jump goes in or out.
// It is safe when
//  - the window lies inside the decoded function;
//  - nothing lands inside it: no branch or jump of the function or its
//    .cold pieces, no jump label and no exception fixup targets
//    address+2 ... end-2, and the function jumps through no register
//    other than a return, a far jump or a recovered jump table (an
//    unknown jump could land anywhere);
//  - no window instruction traps on purpose (system, fence.i), sits in
//    an LR/SC sequence, or has an exception-table entry;
//  - a register is dead at the probe (the entry's tmp), and one is dead at
//    every place the detour leaves for (the return's register): the
//    window's end, and the targets of its branches and jumps.
// Beyond the stalled mainline series, PC-relative and control-flow window
// instructions are relocated rather than refused: auipc becomes its value
// rebuilt in the detour (lui + addi), a branch an inverted branch around
// a far jump, j/c.j a far jump, a call at the end of the window a call that
// returns to the original text, and a return is copied.
//
// Kernel facts over the window (ftrace sites, jump label sites, other
// probes) are the caller's to check.
#pragma once

#include "riscv/function_analysis.hpp"

namespace okp::riscv {

constexpr size_t long_jump_size = 8;  // auipc + jalr
constexpr size_t short_jump_size = 6; // auipc + c.jr
constexpr size_t max_window_size = long_jump_size;
constexpr size_t max_window_instructions = 3;
// c.jr lands at the probed address's offset within a page of this size.
constexpr uint64_t landing_alignment = 4096;
// The farthest a landing's c.j reaches, either way.
constexpr unsigned long c_j_reach = 2046;

enum class OptimizationRefusal : uint8_t {
	none,
	not_an_instruction,	// the address is not an instruction boundary of the function
	function_undecodable,	// the function does not decode to its end
	indirect_jump,		// the function jumps through a register (not a return, far jump or known table)
	window_past_function,	// the function ends before 6 bytes of whole instructions
	window_not_relocatable, // a system, fence.i or illegal instruction in the window
	lr_sc_sequence,		// the window is inside an LR/SC sequence
	exception_entry,	// a window instruction has an exception-table entry
	call_inside_window,	// a call before the window's last instruction (it returns inside)
	pc_relative_in_window,	// auipc in the window (when not relocating)
	control_flow_in_window, // branch, jump, call or return in the window (when not relocating)
	jump_into_window,	// a jump, jump label or fixup targets the window's interior
	no_entry_register,	// no register is dead at the probe
	no_return_register,	// no register is dead where the detour returns
	out_of_memory,
	window_before_function, // an exit's window would start before the function
};

const char *optimization_refusal_text(OptimizationRefusal refusal);

struct WindowInstruction {
	uint8_t offset = 0; // from the window's start
	Instruction instruction;
};

struct PlanOptions {
	bool relocate = true;		    // relocate PC-relative and control-flow instructions
	RegisterSet forbidden = never_free; // never offered as tmp (add s0 under frame pointers)
	bool end_anchored = true;	    // at a function's end, a window ending with the probe
};

struct OptimizationPlan {
	OptimizationRefusal refusal = OptimizationRefusal::none;
	uint64_t refusal_address = 0; // the instruction or target that decided it
	uint8_t window_length = 0;    // 6 (auipc + c.jr) or 8 (auipc + jalr)
	// An end-anchored window starts this many bytes before the probed
	// address, whose instruction is its last (0: the window starts at
	// the probed address). The window's address is address - behind.
	uint8_t behind = 0;
	uint8_t count = 0;  // window instructions
	uint8_t copied = 0; // of those, what the detour runs (a jump or return ends it)
	WindowInstruction instructions[max_window_instructions];
	bool ends_in_transfer = false; // the copy ends in a jump, return or call: no jump back
	bool relocates = false;	       // some copied instruction is re-encoded
	uint8_t entry_register = 0;    // tmp of the patched auipc/jalr
	uint8_t return_register = 0;   // tmp of the detour's far jumps (0: none needed)
	uint8_t call_register = 0;     // tmp of a relocated call's jump (a t register)
	// What the choice was made from.
	RegisterSet entry_candidates = 0, return_candidates = 0;
	// The jump is auipc + c.jr: the detour is entered through a landing
	// at the probed address's page offset.
	bool needs_landing() const { return window_length == short_jump_size; }
	// The instructions the detour runs before the probe's frame: an
	// end-anchored window's, up to the probed one.
	uint8_t before_frame() const { return behind ? uint8_t(count - 1) : 0; }
};

// The register to take of candidates (dead ones): temporaries first, then
// arguments, callee-saved last (jump_optimization.cpp says why); 0 when
// there is none.
uint8_t pick_dead_register(RegisterSet candidates);

// The plan for a jump at address, from the function's analysis.
OptimizationPlan plan_jump_optimization(const FunctionAnalysis &function, uint64_t address,
					const PlanOptions &options = PlanOptions{});

// Whether a displacement is within auipc+jalr reach: [-2^31 - 2^11, 2^31 - 2^11).
bool within_far_reach(int64_t displacement);

// In the functions below, address is the window's (the probed address
// less plan.behind).

// The bytes patched over the window at address: "auipc tmp, hi;
// jalr x0, lo(tmp)" to target for an 8-byte window, "auipc tmp, hi;
// c.jr tmp" for a 6-byte one (target then shares address's page offset).
// Returns the length written (plan.window_length), or 0 when target is out
// of reach or, for c.jr, on another page offset.
size_t encode_window_jump(const OptimizationPlan &plan, uint64_t address, uint64_t target,
			  uint8_t out[max_window_size]);

// What plan.entry_register holds when that jump arrives at target: the
// auipc's sum, target less the jalr's offset; for c.jr, target itself.
// Meaningful only where encode_window_jump succeeds for the same target.
uint64_t window_jump_register_value(const OptimizationPlan &plan, uint64_t address, uint64_t target);

// The most a relocated window takes: a branch becomes 12 bytes, the jump
// back 8 (a call becomes 16, but ends the copy: no jump back).
constexpr size_t max_relocated_window = max_window_instructions * 12 + long_jump_size;

// Writes the detour's copy of plan's window (probed at address) for
// execution at copy_address, then the jump back to the window's end unless
// the copy ends in a transfer. Returns its length, or 0 when a target is
// out of auipc+jalr reach or capacity is too small.
size_t relocate_window(const OptimizationPlan &plan, uint64_t address, uint64_t copy_address, uint8_t *out,
		       size_t capacity);

// The same for the window's instructions [first, end) alone, with the
// jump back to the window's end when jump_back (the detour of an
// end-anchored window copies the instructions before the probed one ahead
// of its frame, and the probed one after it).
size_t relocate_instructions(const OptimizationPlan &plan, uint64_t address, uint8_t first, uint8_t end, bool jump_back,
			     uint64_t copy_address, uint8_t *out, size_t capacity);

// Encoders, for the detour and the tests.
namespace encode {
uint32_t auipc(unsigned rd, int32_t upper20);
uint32_t lui(unsigned rd, int32_t upper20);
uint32_t addi(unsigned rd, unsigned rs1, int32_t imm12);
uint32_t jalr(unsigned rd, unsigned rs1, int32_t imm12);
uint32_t jal(unsigned rd, int32_t offset);
uint32_t branch(unsigned funct3, unsigned rs1, unsigned rs2, int32_t offset);
uint32_t sd(unsigned source, unsigned base, int32_t offset);
uint32_t ld(unsigned destination, unsigned base, int32_t offset);
uint32_t lw(unsigned destination, unsigned base, int32_t offset);
uint32_t sw(unsigned source, unsigned base, int32_t offset);
uint32_t slli(unsigned rd, unsigned rs1, unsigned shift);
uint32_t srli(unsigned rd, unsigned rs1, unsigned shift);
uint32_t andi(unsigned rd, unsigned rs1, int32_t imm12);
uint32_t add(unsigned rd, unsigned rs1, unsigned rs2);
uint32_t amoadd_d(unsigned rd, unsigned rs2, unsigned rs1); // amoadd.d rd, rs2, (rs1)
uint16_t c_jr(unsigned rs1);
uint16_t c_j(int32_t offset); // offset within c_j_reach
constexpr uint16_t c_nop = 0x0001;
constexpr uint32_t fence_r_rw = 0x0230000f; // fence r, rw: an acquire after a load
// The hi/lo split of a displacement for auipc + (addi|jalr|load).
int32_t high_part(int64_t displacement);
int32_t low_part(int64_t displacement);
} // namespace encode

} // namespace okp::riscv
