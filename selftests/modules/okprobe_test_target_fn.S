/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe target of okprobe_test_target.ko: no __fentry__ call, so +0 is
 * an ordinary instruction.
 */
#include <linux/linkage.h>
#include <asm/asm.h>

	.text
SYM_FUNC_START(okp_gone_target)
	mov	%rdi, %rax		/* +0 */
	add	$1, %rax		/* +3 */
	RET
SYM_FUNC_END(okp_gone_target)
