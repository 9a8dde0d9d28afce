/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe target of okprobe_test_target.ko: no __fentry__ call, so +0 is
 * an ordinary instruction.
 */
#include <linux/linkage.h>
#include <asm/asm.h>
#include <asm/ibt.h>

/*
 * A function as the kernel's C functions start, whatever its linkage.h:
 * with endbr64 where IBT is built in (6.1 to 6.12's SYM_FUNC_START added
 * it; 7.x's adds it only to SYM_TYPED_FUNC_START), so that symbol+0
 * probes past it here as in every C function okptest probes.
 */
#define OKP_FUNC_START(name)	SYM_START(name, SYM_L_GLOBAL, SYM_A_ALIGN) ENDBR

	.text
OKP_FUNC_START(okp_gone_target)
	mov	%rdi, %rax		/* +0 */
	add	$1, %rax		/* +3 */
	RET
SYM_FUNC_END(okp_gone_target)

/*
 * okprobe-cover's target: five basic blocks, driven by a.
 *   entry: a < 1 goes to "small"
 *   +6:    a > 10 goes to "big"
 *   +15:   returns a + 1
 *   big:   returns a + 2
 *   small: returns 0
 */
OKP_FUNC_START(okp_cover_target)
	cmp	$1, %rdi		/* +0 */
	jl	2f			/* +4 */
	mov	%rdi, %rax		/* +6 */
	cmp	$10, %rdi
	jg	1f
	add	$1, %rax		/* +15 */
	RET
1:	add	$2, %rax		/* big */
	RET
2:	xor	%eax, %eax		/* small */
	RET
SYM_FUNC_END(okp_cover_target)
