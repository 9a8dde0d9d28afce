// SPDX-License-Identifier: GPL-2.0
/*
 * x86: one kernel kprobe of okprobe's own, on arch_prepare_kprobe(), refuses
 * (EBUSY) a register_kprobe() that had already passed the kernel's
 * blacklist check when okprobe claimed the function
 * (src/kernel/kernel_kprobes.c keeps the claims).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kprobes.h>
#include <linux/kernel.h>
#include <linux/ptrace.h>

#include "kernel/glue.h"

#ifdef CONFIG_KPROBES

/* arch/x86/refuse_kprobe.S: returns -EBUSY to arch_prepare_kprobe's caller. */
void okp_refuse_kprobe(void);

static int notrace okp_guard_pre(struct kprobe *guard, struct pt_regs *regs)
{
	struct kprobe *theirs = (struct kprobe *)regs->di;

	if (!okp_kernel_kprobes_claimed((unsigned long)theirs->addr))
		return 0;
	/* As the kernel's error injection does: return from the function. */
	regs->ip = (unsigned long)okp_refuse_kprobe;
	return 1;
}
NOKPROBE_SYMBOL(okp_guard_pre);

/*
 * A post_handler, as kernel/fail_function.c has: it keeps the guard from
 * being optimized (an optimized kprobe ignores a changed ip) and, on
 * ftrace, selects the kernel's IPMODIFY ftrace_ops, which is what changing
 * ip is.
 */
static void notrace okp_guard_post(struct kprobe *guard, struct pt_regs *regs,
				   unsigned long flags)
{
}
NOKPROBE_SYMBOL(okp_guard_post);

static struct kprobe okp_guard = {
	.symbol_name = "arch_prepare_kprobe",
	.pre_handler = okp_guard_pre,
	.post_handler = okp_guard_post,
};
static bool okp_guard_registered;

void okp_arch_guard_init(void)
{
	int ret = register_kprobe(&okp_guard);

	if (ret) {
		pr_info("no guard on arch_prepare_kprobe (%d): the kernel's kprobe blacklist alone keeps kprobes out of okprobe's functions\n",
			ret);
		return;
	}
	okp_guard_registered = true;
}

void okp_arch_guard_exit(void)
{
	if (okp_guard_registered)
		unregister_kprobe(&okp_guard);
	okp_guard_registered = false;
}

#else

void okp_arch_guard_init(void)
{
}

void okp_arch_guard_exit(void)
{
}

#endif
