/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe target of okprobe_test_target.ko on riscv64: no ftrace site, so
 * +0 is an ordinary instruction (a 4-byte addi: ebreak when probed).
 */
#include <linux/linkage.h>
#include <asm/asm.h>

	.text
	/*
	 * All 4-byte instructions: the jump's 8-byte window is the two
	 * addi, and the ret after it is where the detour returns (what
	 * okptest's psabi_liveness test needs).
	 */
	.option norvc
	/*
	 * The assembler's mapping symbol ($x...) at the section's first byte
	 * would name okp_gone_target in 6.1's module kallsyms: an
	 * instruction never executed keeps it off.
	 */
	unimp

SYM_FUNC_START(okp_gone_target)
	addi	t0, a0, 1		/* +0 */
	mv	a0, t0			/* +4 */
	ret
SYM_FUNC_END(okp_gone_target)

	/*
	 * okprobe-cover's target: five basic blocks, driven by a0.
	 *   entry: a0 < 1 goes to "small"
	 *   +8:    a0 > 10 goes to "big"
	 *   +16:   returns a0 + 1
	 *   big:   returns a0 + 2
	 *   small: returns 0
	 */
SYM_FUNC_START(okp_cover_target)
	li	t0, 1			/* +0 */
	blt	a0, t0, 2f		/* +4 */
	li	t0, 10			/* +8 */
	blt	t0, a0, 1f		/* +12 */
	addi	a0, a0, 1		/* +16 */
	ret
1:	addi	a0, a0, 2		/* big */
	ret
2:	li	a0, 0			/* small */
	ret
SYM_FUNC_END(okp_cover_target)
