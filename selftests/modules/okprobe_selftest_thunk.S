/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A target whose return stays "jmp __x86_return_thunk" at run time.
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
