/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The riscv64 targets of okprobe_bench.ko: long okp_bench_target(long value)
 * and long okp_bench_target_c(long value) return value + 1. Every
 * configuration probes +0: a 4-byte addi in the first, a compressed c.mv in
 * the second, instructions that the kernel's kprobes single-step out of line
 * and okprobe copies (neither simulates them). At least 8 bytes follow
 * each before its ret, so an optimized probe's window covers straight-line
 * code only: 8 bytes (auipc + jalr) in the first, 6 (auipc + c.jr) in the
 * second. No ftrace site: this is assembly.
 *
 * No ".option norvc": each change of the assembler's ISA options emits a
 * mapping symbol ($x...) at the next instruction, and 6.1's module
 * kallsyms prints a mapping symbol at a function's address instead of the
 * function (in okprobe/list, okprobe/jumps and kprobes/list). The 4-byte
 * instructions below have no compressed form (rd != rs1), so they stay
 * 4 bytes under RVC.
 */
#include <linux/linkage.h>
#include <asm/asm.h>

	.text
	/*
	 * The section's own mapping symbol sits at its first byte: an
	 * instruction never executed keeps it off okp_bench_target.
	 */
	unimp

SYM_FUNC_START(okp_bench_target)
	addi	t0, a0, 2		/* +0: probed, 4 bytes */
	addi	a0, t0, -1		/* +4 */
	ret				/* +8 */
SYM_FUNC_END(okp_bench_target)

SYM_FUNC_START(okp_bench_target_c)
	c.mv	t0, a0			/* +0: probed, 2 bytes */
	c.addi	t0, 2			/* +2 */
	c.addi	t0, -1			/* +4 */
	c.mv	a0, t0			/* +6 */
	ret				/* +8 */
SYM_FUNC_END(okp_bench_target_c)
