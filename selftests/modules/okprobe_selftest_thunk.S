/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Targets objtool must not touch. The first, okp_target_ret, is one whose
 * return stays "jmp __x86_return_thunk" at run time.
 *
 * Elsewhere objtool lists every such jump in .return_sites and the module
 * loader rewrites it to a plain "ret" on CPUs without a return-thunk
 * mitigation (QEMU TCG's among them). Kbuild skips objtool for this file
 * (OBJECT_FILES_NON_STANDARD), so the jump is left as written and the test
 * probes the thunk form okprobe must emulate as a return.
 */
#include <linux/linkage.h>

	.text
SYM_FUNC_START(okp_target_ret)
	mov	%rsi, %rax		/* +0 */
	jmp	__x86_return_thunk	/* +3: e9 rel32 */
SYM_FUNC_END(okp_target_ret)

/*
 * An indirect jump inside the function (objtool would want it annotated):
 * a jump table could land anywhere in it, so a probe here must stay a
 * breakpoint.
 */
SYM_FUNC_START(okp_target_indirect)
	mov	%rdi, %rax		/* +0 */
	add	%rsi, %rax		/* +3 */
	lea	1f(%rip), %rcx		/* +6 */
	jmp	*%rcx			/* +13 */
1:	jmp	__x86_return_thunk
SYM_FUNC_END(okp_target_indirect)

/*
 * A disabled jump label whose target, once enabled, is +3: inside the
 * 5-byte jump a probe at +0 would take. The text holds a nop there, so only
 * the jump table says so. (Never enabled: it would loop.)
 */
SYM_FUNC_START(okp_target_static_jump)
	mov	%rdi, %rax		/* +0 */
2:	add	%rsi, %rax		/* +3: the jump label's target */
1:	.byte	0x0f, 0x1f, 0x44, 0x00, 0x00	/* +6: nop5, the jump label */
	jmp	__x86_return_thunk
	.pushsection __jump_table, "aw"
	.balign	8
	.long	1b - ., 2b - .
	.quad	okp_target_jump_key - .
	.popsection
SYM_FUNC_END(okp_target_static_jump)
