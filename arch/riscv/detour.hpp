// SPDX-License-Identifier: GPL-2.0
// The detour buffer an optimized riscv64 probe's jump leads to ("auipc
// tmp; jalr x0, lo(tmp)", or "auipc tmp; c.jr tmp" by way of a c.j
// landing): save the registers as a struct pt_regs on the stack,
// call the probe entry, restore them (with whatever the handlers changed,
// except pc and sp), run the relocated window, jump back.
//
//   addi sp, sp, -288                 the pt_regs frame (16-byte aligned)
//   sd x1, 8(sp); sd x3..x31, n*8(sp) every register but sp, at its slot
//   addi t0, sp, 288; sd t0, 16(sp)   regs->sp: the stack pointer at the probe
//   auipc a0, 0; ld a0, literal(a0)   the entry's context (the site)
//   mv a1, sp                         the registers
//   auipc ra, hi; jalr ra, lo(ra)     entry(context, regs)
//   ld x1, 8(sp); ld x3..x31, n*8(sp)
//   addi sp, sp, 288
//   <relocated window>                detour + copy_offset: waiting hits go here
//   .align 3; .dword context          the literal
//
// The entry (the glue's okp_glue_optimized_entry) fills regs->epc, status
// and the rest itself: they cost nothing to leave to C. The entry register
// of the patched jump is dead at the probe, so its saved value means
// nothing; every other register is the probed code's. Pure C++: the host
// tests decode the bytes.
#pragma once

#include "core/direct_hit.hpp"
#include "riscv/jump_optimization.hpp"

namespace okp::riscv {

// sizeof(struct pt_regs) on riscv64: epc, x1-x31, status, badaddr, cause,
// orig_a0.
constexpr size_t pt_regs_size = 36 * 8;

// The save/call/restore part: the copy starts here.
constexpr size_t detour_frame_size = 4 + 30 * 4 + 8 + 8 + 4 + 8 + 30 * 4 + 4;

// Builds the detour of plan's window (at address) to run at
// detour_address: it calls entry(context, regs). Returns its length, or 0
// when entry or a window target is out of auipc+jalr reach or capacity is
// too small. *copy_offset gets where the copy a trapping hit continues in
// starts. An end-anchored window's detour (plan.behind) begins with the
// copy of its instructions before the probed one, then the frame, then
// the probed instruction's copy:
//   <the window's instructions before the probed one, relocated>
//   <the frame above>
//   <the probed instruction, relocated>  detour + *copy_offset
//   .align 3; .dword context
// Entered by the window's jump, or at its first byte from the guard
// breakpoint at the window's start: it reads no register the jump set.
size_t build_detour(const OptimizationPlan &plan, uint64_t address, uint64_t detour_address, uint64_t entry,
		    uint64_t context, uint8_t *out, size_t capacity, size_t *copy_offset = nullptr);

// An argument-only probe's detour (okprobe.args_handler, args_detour.cpp):
// struct okprobe_args (a0-a7, ip, sp) at the stack pointer, the rest of
// what a call clobbers (ra, t0-t6) above it, and the probes run:
//   addi sp, sp, -frame
//   sd a0..a7, 0..56(sp)              record.arg[]
//   sd ra, 80(sp); sd t0..t6, 88..136(sp)
//   addi t0, sp, frame; sd t0, 72(sp) record.sp: the stack pointer at the probe
//   auipc t6, 0; ld t0, ip(t6); sd t0, 64(sp)
//   <the call>
//   ld a0..a7; ld ra; ld t0..t6       what the handlers wrote to arg[] too
//   addi sp, sp, frame
//   <relocated window>                detour + copy_offset
//   [tail]
//   .align 3; .dword context, ip, ... the literals
// The call, without a DetourTask: the glue's entry(context, record),
// which disables preemption and finds this CPU's state (43 instructions
// of frame). With one, the detour does that itself from tp, the running
// task, as preempt_disable_notrace(), this_cpu_ptr() and
// preempt_enable_notrace() would:
//   lw t0, preempt_count(tp); addi t0, t0, 1; sw t0, preempt_count(tp)
//   lw t1, cpu(tp); slli t1, t1, 3; ld t2, offsets(t6); add t2, t2, t1
//   ld t2, 0(t2); ld t3, cpu_states(t6); add t3, t3, t2   t3: this CPU's state
//   ld t5, context(t6)
//   mv a0, t5; mv a1, sp; mv a2, t3; call core_entry    (site, record, cpu)
//   1: lw t0, preempt_count(tp); addi t0, t0, -1; sw t0, preempt_count(tp)
//   bnez t0, 2f; ld t1, flags(tp); srli, andi: need_resched; beqz t1, 2f
//   call preemption_point
//   2:
// and with a DirectHit (core/direct_hit.hpp) the core's call becomes the
// direct hit, its core call moved to the tail for the failed checks:
//   ld t0, 0(t3); bnez t0, tail               this CPU in another hit
//   ld a0, probe(t6); ld t0, direct_probe(t5); fence r, rw
//   bne t0, a0, tail
//   ld t4, handler(t6); ld t0, handler_field(a0); bne t0, t4, tail
//   sd t5, 0(t3); sd t3, cpu_slot(sp)         active_site = site
//   addi t0, t5, hits; li t1, 1; amoadd.d zero, t1, (t0)
//   mv a1, sp; jalr ra, 0(t4)                 handler(probe, record)
//   ld t3, cpu_slot(sp); sd zero, 0(t3)       active_site = 0
//   1: ...
//   tail: mv a0, t5; mv a1, sp; mv a2, t3; call core_entry; j 1b
// An end-anchored window's instructions before the probed one come first,
// as in build_detour.
constexpr size_t args_record_size = 10 * 8;
// What the detour does the glue's part of a hit with, from tp (the
// running task, whose thread_info is at its start).
struct DetourTask {
	uint64_t per_cpu_offsets = 0;  // &__per_cpu_offset[0]; 0: unknown
	uint64_t cpu_states = 0;       // the per-CPU pointer of the CPU states
	int32_t cpu = 0;	       // of thread_info.cpu (a u32) from tp
	int32_t preempt_count = -1;    // of thread_info.preempt_count (an int); -1: none kept
	int32_t flags = 0;	       // of thread_info.flags
	uint8_t need_resched_bit = 0;  // TIF_NEED_RESCHED
	uint64_t preemption_point = 0; // called at count 0 and need_resched; 0: none

	bool known() const { return per_cpu_offsets != 0 && cpu_states != 0; }
};
struct ArgsCall {
	uint64_t entry = 0;   // the glue's entry(context, record): without a task
	uint64_t context = 0; // the site
	uint64_t probed = 0;  // the record's ip: the probe's address
	DetourTask task;
	uint64_t core_entry = 0; // okp_core_args_hit(site, record, cpu): with a task
	DirectHit direct;	 // with a task
};
// The longest argument-only detour's frame and tail, and its literals.
constexpr size_t max_args_frame_size = 96 * 4;
constexpr size_t max_args_tail_size = 6 * 4;
constexpr size_t args_literals = 6;
size_t build_args_detour(const OptimizationPlan &plan, uint64_t address, uint64_t detour_address, const ArgsCall &call,
			 uint8_t *out, size_t capacity, size_t *copy_offset);

// The longest detour: the longer frame (with its tail and literals), the
// longest copy (an end-anchored window's split around the frame is no
// longer), alignment.
constexpr size_t max_detour_size = (max_args_frame_size + max_args_tail_size + args_literals * 8 > detour_frame_size + 8
					    ? max_args_frame_size + max_args_tail_size + args_literals * 8
					    : detour_frame_size + 8) +
				   max_relocated_window + 6;

// A counting probe's detour (OKPROBE_FLAG_COUNTER): one added to the
// running CPU's cell, then the window's copy and the jump back; no
// register save, no call. E is the patched jump's register, S another
// register dead at the probe (both are clobbered before the window runs,
// which reads neither before writing it):
//   lw   S, cpu_offset(tp)      the task's thread_info.cpu
//   slli S, S, log2(stride)
//   ld   E, literal-arrival(E)  the cells: E still holds what the jump
//                                put there (arrival)
//   add  E, E, S
//   addi S, zero, 1
//   amoadd.d zero, S, (E)
//   <relocated window>           detour + the prologue's length
//   .align 3; .dword cells
// Where the literal is beyond ld's 12-bit reach of arrival (or arrival is
// unknown), "auipc E, 0; ld E, literal(E)" finds it instead, one
// instruction more.
// amoadd.d, not a load/add/store: the task may be preempted or migrate
// between reading cpu and adding, and then still adds to the right cell
// (the one it read) without losing another task's count.
struct CounterCall {
	uint64_t cells = 0;	   // cell of CPU n at cells + n * stride
	int32_t cpu_offset = 0;	   // of thread_info.cpu in task_struct (tp)
	unsigned stride_shift = 6; // log2 of the stride
	uint64_t arrival = 0;	   // E on arrival (window_jump_register_value), or 0
};

constexpr size_t short_counting_prologue_size = 6 * 4;
constexpr size_t counting_prologue_size = 7 * 4; // the longest
constexpr size_t max_counting_detour_size = counting_prologue_size + max_relocated_window + 4 + 8;

// The counting detour's second register (temporaries first), or 0 when
// only the entry's register is dead at the probe.
unsigned counting_second_register(const OptimizationPlan &plan);

// Builds the counting detour of plan's window, or returns 0 when no
// second register is dead at the probe (the caller then builds the full
// detour), or something is out of reach or capacity. *prologue gets the
// length of the code before the window's copy.
size_t build_counting_detour(const OptimizationPlan &plan, uint64_t address, uint64_t detour_address,
			     const CounterCall &counter, uint8_t *out, size_t capacity, size_t *prologue);

} // namespace okp::riscv
