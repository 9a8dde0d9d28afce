/* SPDX-License-Identifier: GPL-2.0 */
/*
 * riscv's kernel services for the core: okp_glue_* functions implemented in
 * arch/riscv/probes_glue.c.
 *
 * Only plain C types cross the boundary between okprobe's C glue (which
 * includes <linux/...> headers) and its freestanding C++ core (which never
 * does): integers, pointers, and the structs below.
 */
#ifndef OKPROBE_RISCV_GLUE_SERVICES_H
#define OKPROBE_RISCV_GLUE_SERVICES_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * riscv: the call of every detour. Does what the kernel's optprobe
 * callback does around okp_core_optimized_hit(): fills the rest of the
 * saved struct pt_regs (status as a breakpoint trap would have it),
 * disables preemption and passes this CPU's handler state.
 */
void okp_glue_optimized_entry(void *site, void *regs);
/*
 * riscv: the call of an argument-only detour: okp_core_args_hit() on the
 * struct okprobe_args it pushed, preemption disabled around it.
 */
void okp_glue_args_entry(void *site, void *record);
/*
 * riscv: what an argument-only detour needs to do itself, from tp (the
 * running task, its thread_info first), what preempt_disable_notrace(),
 * this_cpu_ptr(&okp_cpu_states) and preempt_enable_notrace() do around
 * okp_core_args_hit(). per_cpu_offsets is 0 where the glue could not
 * check that this kernel works so; the detour then calls
 * okp_glue_args_entry().
 */
struct okp_riscv_detour_task {
	unsigned long per_cpu_offsets;	/* &__per_cpu_offset[0] */
	unsigned long cpu_states;	/* &okp_cpu_states (a per-CPU pointer) */
	long cpu;			/* of thread_info.cpu (a u32) from tp: always */
	long preempt_count;		/* of thread_info.preempt_count; -1: none */
	long flags;			/* of thread_info.flags */
	long need_resched_bit;		/* TIF_NEED_RESCHED */
	unsigned long preemption_point;	/* okp_glue_preemption_point; 0: none */
};
void okp_glue_detour_task(struct okp_riscv_detour_task *task);
/*
 * riscv: called by an argument-only detour where its preempt count came
 * back to 0 with need_resched set (CONFIG_PREEMPTION only): the
 * preemption point preempt_enable_notrace() would have been.
 */
void okp_glue_preemption_point(void);
/*
 * riscv: where a fault of the instruction at address resumes (its
 * exception-table entry's fixup), or 0 when it has no entry.
 */
unsigned long okp_glue_exception_fixup(unsigned long address);

/*
 * riscv: the breakpoint trap's read of the text it trapped on (address
 * 2-byte aligned, size even): like okp_glue_read_text, without calling out
 * of okprobe (copy_from_kernel_nofault may be traced or probed). Returns
 * the bytes read.
 */
unsigned long okp_glue_read_trap_text(unsigned long address, void *buffer,
				      unsigned long size);
/* riscv: the bytes between two CPUs' counter cells (a cache line). */
#define OKP_COUNTER_CELL_STRIDE 64
/* riscv: okprobe.ko's psabi_liveness parameter (1: psABI, 0: strict). */
int okp_glue_psabi_liveness(void);
/*
 * riscv: copies size bytes of read-only data at address (the core
 * kernel's .rodata outside __ro_after_init, or a module's read-only
 * data: where GCC puts switch tables) and returns size; 0 when the range
 * is anything else or unreadable.
 */
unsigned long okp_glue_read_rodata(unsigned long address, void *buffer,
				   unsigned long size);

#ifdef __cplusplus
}
#endif

#endif /* OKPROBE_RISCV_GLUE_SERVICES_H */
