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
