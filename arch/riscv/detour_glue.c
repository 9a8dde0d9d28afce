// SPDX-License-Identifier: GPL-2.0
/*
 * riscv64's detours, the kernel side: what a detour calls (the full
 * detour's okp_glue_optimized_entry, an argument-only one's
 * okp_glue_args_entry or, where the detour does the glue's part itself,
 * what it needs to: okp_glue_detour_task and the preemption point) and a
 * counting detour's per-CPU cells. The detours themselves are built by
 * arch/riscv/detour.cpp and args_detour.cpp.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/kernel.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <asm/csr.h>

#include <okprobe.h>

#include "core/core_api.h"
#include "glue_services.h"
#include "kernel/glue.h"
#include "arch_glue.h"

/*
 * The status a breakpoint trap would save: the previous privilege is the
 * kernel's, SPIE says whether interrupts were on at the probe, and SIE is
 * off (the handler runs with them as they are, but reports like a trap).
 */
void notrace okp_glue_optimized_entry(void *site, void *raw_regs)
{
	struct pt_regs *regs = raw_regs;
	unsigned long status = csr_read(CSR_STATUS);

	regs->status = (status & ~(SR_SIE | SR_SPIE)) | SR_SPP |
		       ((status & SR_SIE) ? SR_SPIE : 0);
	regs->badaddr = 0;
	regs->cause = EXC_BREAKPOINT;
	regs->orig_a0 = regs->a0;
	preempt_disable_notrace();
	okp_core_optimized_hit(site, regs, this_cpu_ptr(&okp_cpu_states));
	preempt_enable_notrace();
}
NOKPROBE_SYMBOL(okp_glue_optimized_entry);

void notrace okp_glue_args_entry(void *site, void *record)
{
	preempt_disable_notrace();
	okp_core_args_hit(site, record, this_cpu_ptr(&okp_cpu_states));
	preempt_enable_notrace();
}
NOKPROBE_SYMBOL(okp_glue_args_entry);

void notrace okp_glue_preemption_point(void)
{
	preempt_disable_notrace();
	preempt_enable_notrace();
}
NOKPROBE_SYMBOL(okp_glue_preemption_point);

/*
 * The detour reads the preempt count and the CPU number where the
 * generic code does (asm-generic/preempt.h: current_thread_info(), which
 * is tp on riscv), and this CPU's offset from __per_cpu_offset[] as
 * this_cpu_ptr() does. Checked here against the kernel's own accessors
 * before a detour relies on them.
 */
void okp_glue_detour_task(struct okp_riscv_detour_task *task)
{
	const unsigned long info = (unsigned long)current_thread_info();
	const unsigned long count_at =
		offsetof(struct task_struct, thread_info.preempt_count);
	const unsigned long cpu_at = offsetof(struct task_struct, thread_info.cpu);
	bool same __maybe_unused;

	memset(task, 0, sizeof(*task));
	task->preempt_count = -1;
	/* Always: the counting detour reads it where the rest is not known. */
	task->cpu = cpu_at;
	if (info != (unsigned long)current)
		return;
#ifdef CONFIG_SMP
	preempt_disable_notrace();
	same = (unsigned long)this_cpu_ptr(&okp_cpu_states) ==
	       __per_cpu_offset[*(u32 *)(info + cpu_at)] +
	       (unsigned long)&okp_cpu_states &&
	       *(u32 *)(info + cpu_at) == smp_processor_id();
	if (IS_ENABLED(CONFIG_PREEMPT_COUNT))
		same = same && *(int *)(info + count_at) == preempt_count() &&
		       preempt_count() > 0;
	preempt_enable_notrace();
	if (!same)
		return;
	task->per_cpu_offsets = (unsigned long)&__per_cpu_offset[0];
#endif
	task->cpu_states = (unsigned long)&okp_cpu_states;
	task->flags = offsetof(struct task_struct, thread_info.flags);
	task->need_resched_bit = TIF_NEED_RESCHED;
	if (IS_ENABLED(CONFIG_PREEMPT_COUNT))
		task->preempt_count = count_at;
	if (IS_ENABLED(CONFIG_PREEMPTION))
		task->preemption_point = (unsigned long)okp_glue_preemption_point;
}

/*
 * A counting site's cells: one u64 per CPU, OKP_COUNTER_CELL_STRIDE bytes
 * apart (a cache line each), which riscv's counting detour addresses from
 * the running task's thread_info.cpu and adds to with amoadd.d.
 */
unsigned long okp_glue_counter_cells_alloc(void)
{
	return (unsigned long)kzalloc(nr_cpu_ids * OKP_COUNTER_CELL_STRIDE,
				      GFP_KERNEL);
}

void okp_glue_counter_cells_free(unsigned long cells)
{
	kfree((void *)cells);
}

unsigned long long okp_glue_counter_cells_sum(unsigned long cells)
{
	unsigned long long sum = 0;
	unsigned int cpu;

	for (cpu = 0; cpu < nr_cpu_ids; cpu++)
		sum += READ_ONCE(*(u64 *)(cells + cpu * OKP_COUNTER_CELL_STRIDE));
	return sum;
}
