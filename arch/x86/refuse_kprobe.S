/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where okprobe's guard on arch_prepare_kprobe() sends a kernel kprobe that
 * would land in a function okprobe has claimed (src/kernel/kernel_kprobes.c):
 * reached with the stack as at the function's entry, it returns -EBUSY to
 * arch_prepare_kprobe()'s caller, as the kernel's error injection returns
 * through just_return_func.
 */
#include <linux/linkage.h>
#include <linux/objtool.h>
#include <asm/asm.h>

	.text
SYM_FUNC_START(okp_refuse_kprobe)
	/* Entered by the guard's regs->ip and an iret, never called. */
	ANNOTATE_NOENDBR
	mov	$-16, %eax		/* -EBUSY */
	RET
SYM_FUNC_END(okp_refuse_kprobe)
