/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Probe targets for okprobe_selftest.ko: see okprobe_selftest.h. RET is the
 * kernel's return (jmp __x86_return_thunk under RETHUNK).
 */
#include <linux/linkage.h>
#include <asm/asm.h>

	.data
SYM_DATA(okp_target_data, .quad 0x5a5a1234)

	.text
SYM_FUNC_START(okp_target_add)
	mov	%rdi, %rax		/* +0 */
	add	%rsi, %rax		/* +3 */
	RET				/* +6 */
SYM_FUNC_END(okp_target_add)

SYM_FUNC_START(okp_target_rip)
	mov	okp_target_data(%rip), %rax	/* +0 */
	add	%rdi, %rax
	RET
SYM_FUNC_END(okp_target_rip)

SYM_FUNC_START(okp_target_jcc)
	cmp	$0x0, %rdi		/* +0: 48 83 ff 00 */
	je	1f			/* +4 */
	mov	$1, %eax
	RET
1:	mov	$2, %eax
	RET
SYM_FUNC_END(okp_target_jcc)

SYM_FUNC_START(okp_helper_double)
	lea	(%rdi,%rdi,1), %rax
	RET
SYM_FUNC_END(okp_helper_double)

SYM_FUNC_START(okp_target_call)
	call	okp_helper_double	/* +0 */
	add	%rsi, %rax
	RET
SYM_FUNC_END(okp_target_call)

SYM_FUNC_START(okp_target_ret)
	mov	%rsi, %rax		/* +0 */
	RET				/* +3 */
SYM_FUNC_END(okp_target_ret)

SYM_FUNC_START(okp_target_push_pop)
	push	%rdi			/* +0 */
	pop	%rax			/* +1 */
	sub	%rsi, %rax
	RET
SYM_FUNC_END(okp_target_push_pop)

SYM_FUNC_START(okp_target_pushf)
	pushf				/* +0 */
	pop	%rax			/* +1 */
	RET
SYM_FUNC_END(okp_target_pushf)

SYM_FUNC_START(okp_target_lea_imm)
	lea	0x10(%rdi), %rax	/* +0: 48 8d 47 10 */
	imul	$0x3, %rsi, %rsi	/* +4 */
	add	%rsi, %rax
	RET
SYM_FUNC_END(okp_target_lea_imm)

SYM_FUNC_START(okp_target_extable)
1:	mov	(%rdi), %rax		/* +0: may fault, fixed up at 2 */
2:	RET
	_ASM_EXTABLE(1b, 2b)
SYM_FUNC_END(okp_target_extable)

/*
 * With an int3 on +0, the bytes after it decode as a 5-byte call that runs
 * past +5: the boundary walk must see the original instruction.
 */
SYM_FUNC_START(okp_target_overlay)
	mov	$0xe8, %eax		/* +0: b8 e8 00 00 00 */
	add	%esi, %eax		/* +5 */
	RET
SYM_FUNC_END(okp_target_overlay)
