// SPDX-License-Identifier: GPL-2.0
// The detour buffer an optimized probe's "jmp rel32" leads to (x86-64):
// save the registers as a struct pt_regs on the stack, call the probe
// entry, restore them (with whatever the handlers changed, except ip), run
// the relocated region, jump back.
//
//   push $__KERNEL_DS; push %rsp; pushfq; addq $8,8(%rsp)  ss, sp, flags
//   sub $24,%rsp                                           cs, ip, orig_ax
//   push %rdi ... %r15                                     the rest of pt_regs
//   mov %rsp,%rsi; movabs $context,%rdi; call entry        entry(context, regs, cpu)
//   pop %r15 ... %rdi; add $24,%rsp; popfq
//   lea 16(%rsp),%rsp                                      (keeps the flags)
//   <relocated region>; jmp back
//
// The entry sees regs->sp as the stack pointer at the probe, and fills
// regs->ip, cs and orig_ax itself.
//
// A direct hit (core/direct_hit.hpp) pushes cs, ip and orig_ax instead of
// leaving room for them, checks with the per-CPU state in %rdx, and calls
// the probe's pre_handler itself; a failed check jumps past the region to
// the entry's call, which comes back to the common tail:
//   ... push $__KERNEL_CS; push $ip; push $-1; push %rdi ... %r15
//   incl %gs:preempt_count; %rdx = this CPU's state
//   movabs $site,%rax; movabs $probe,%rdi
//   cmpq $0,(%rdx); jne 2f; cmp %rdi,direct_probe(%rax); jne 2f
//   cmpq $handler,handler(%rdi); jne 2f
//   mov %rax,(%rdx); mov %rdx,%rbx; lock incq hits(%rax)
//   mov %rsp,%rsi; call handler; movq $0,(%rbx)
//   1: decl %gs:preempt_count; ...; pop ...; <relocated region>; jmp back
//   2: mov %rsp,%rsi; movabs $context,%rdi; call entry; jmp 1b
// %rbx is the probed code's again once popped (the handler preserves it,
// and the frame holds the probed code's value).
//
// Pure C++: the bytes are built here and run on the host CPU by the tests.
#pragma once

#include "core/direct_hit.hpp"
#include "x86/jump_optimization.hpp"

namespace okp::x86 {

// What the detour calls, and how. entry(context, regs, cpu) is called with
// the registers saved as pt_regs. In the module the detour also does what
// preempt_disable_notrace()/preempt_enable_notrace() and this_cpu_ptr()
// would do around it, with %gs-relative instructions, so that the core's
// entry is called directly (one call fewer than a C wrapper):
//   movabs $cpu_states,%rdx; add %gs:this_cpu_off,%rdx    cpu
//   incl %gs:preempt_count
//   call entry
//   decl %gs:preempt_count; jnz 1f; call preempt_schedule; 1:
// Host tests leave preempt_count 0: then cpu is 0 and no %gs is touched.
struct DetourCall {
	uint64_t entry = 0;
	uint64_t context = 0;
	uint64_t cpu_states = 0;       // the per-CPU pointer of the CPU states
	int32_t this_cpu_off = 0;      // %gs offset of this_cpu_off
	int32_t preempt_count = 0;     // %gs offset of __preempt_count; 0: none
	uint64_t preempt_schedule = 0; // called when the count drops to 0; 0: none
	DirectHit direct;	       // with preempt_count only
};

// The most the save/call/restore part takes before the region, and the
// entry's call after it (a direct hit's).
constexpr size_t max_detour_frame_size = 272;
constexpr size_t max_detour_general_size = 32;
constexpr size_t max_detour_size = max_detour_frame_size + max_relocated_region + max_detour_general_size;
// Where regs->ss, the first value pushed, lands: the detour's pt_regs sits
// exactly below the stack pointer of the probed code.
constexpr size_t pt_regs_size = 21 * 8;

// Builds the detour for plan's region (the original bytes at address) to
// run at detour_address; *copy_at (if given) is where the region's copy
// starts in it. Returns its length, or 0 when something is out of rel32
// reach or capacity is too small.
size_t build_detour(const OptimizationPlan &plan, const uint8_t *region, uint64_t address, const Thunks &thunks,
		    uint64_t detour_address, const DetourCall &call, uint8_t *out, size_t capacity,
		    size_t *copy_at = nullptr);

// An argument-only probe's detour (okprobe.args_handler): the record
// (struct okprobe_args: di si dx cx r8 r9, ax, ip, sp) pushed where it
// lies, the other registers the call may clobber saved below it, and
// entry(context, record, cpu) called:
//   push %rsp; push $ip; push %rax; push %r9 ... %rdi    the record
//   [pushfq]; push %r10; push %r11                       unless flags dead
//   <per-CPU enter as above>; lea N(%rsp),%rsi; movabs $context,%rdi
//   call entry; <per-CPU leave>
//   pop %r11; pop %r10; [popfq]; pop %rdi ... %r9; pop %rax
//   lea 16(%rsp),%rsp                                      ip, sp dropped
//   <relocated region>; jmp back
// push %rsp pushes the value before the push: the probed code's sp. What
// the entry writes to arg[] and ax is popped back; ip and sp are not.
// With DetourCall.direct (its handler an args_handler) the detour also
// saves %rbx below the rest and calls the handler itself as a full
// detour's direct hit does, handler(probe, record); a failed check calls
// the entry.
struct ArgsCall {
	DetourCall call;
	bool flags_dead = false; // status_flags_dead(..., ClobberedFlags::call) at the probe
};
size_t build_args_detour(const OptimizationPlan &plan, const uint8_t *region, uint64_t address, const Thunks &thunks,
			 uint64_t detour_address, const ArgsCall &args, uint8_t *out, size_t capacity,
			 size_t *copy_at = nullptr);

// A counting probe's detour (OKPROBE_FLAG_COUNTER): one added to this
// CPU's counter cell, then the region, then the jump back; no register
// save, no call:
//   [pushfq]                               unless the flags are dead
//   incq %gs:cell                          cell fits a sign-extended disp32
//   push %rax; movabs $cell,%rax; incq %gs:(%rax); pop %rax     otherwise
//   [popfq]
//   <relocated region>; jmp back
// One incq is atomic against interrupts and preemption on its CPU
// (this_cpu_inc's guarantee), so no count is lost whatever the hits
// interleave with; the stack below the probed code's sp is free (the
// kernel has no red zone).
struct CounterCall {
	uint64_t cell = 0;	 // the per-CPU pointer (alloc_percpu) of the counter
	bool flags_dead = false; // status_flags_dead() at the probe
};

size_t counting_prologue_size(const CounterCall &counter);

// As build_detour, for a counting probe.
size_t build_counting_detour(const OptimizationPlan &plan, const uint8_t *region, uint64_t address,
			     const Thunks &thunks, uint64_t detour_address, const CounterCall &counter, uint8_t *out,
			     size_t capacity);

// The 5 bytes that replace the region's start: jmp rel32 to the detour.
// False when the detour is out of reach.
bool build_jump(uint64_t address, uint64_t detour_address, uint8_t (&jump)[jump_size]);

} // namespace okp::x86
