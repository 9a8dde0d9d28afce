/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The target of okprobe_bench.ko: long okp_bench_target(long value) returns
 * value + 1. Every configuration probes +0, a mov that kprobes and okprobe
 * both copy out of line. No __fentry__ call: kprobes does not go through
 * ftrace here.
 *
 * It ends in a tail jump, not in RET, so that the kernel can optimize a
 * kprobe on it whatever the CPU: 6.1's can_optimize() takes a jump into
 * [__indirect_thunk_start, __indirect_thunk_end) for an indirect jump, and
 * 6.1.y links the return thunks inside that range. Where RET sites are
 * patched to jump to a return thunk (retbleed, SRSO or ITS mitigations),
 * no kprobe in a function with a RET is optimized: checked in this guest
 * with indirect_target_selection=force.
 */
#include <linux/linkage.h>
#include <asm/asm.h>

	.text
SYM_FUNC_START(okp_bench_return)
	RET
SYM_FUNC_END(okp_bench_return)

SYM_FUNC_START(okp_bench_target)
	mov	%rdi, %rax		/* +0: probed, 48 89 f8 */
	add	$1, %rax		/* +3: 48 83 c0 01 */
	jmp	okp_bench_return	/* +7 */
SYM_FUNC_END(okp_bench_target)
