/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What riscv's kernels okprobe builds for differ in, for riscv's own glue
 * (src/kernel/compat.h includes it, after what every arch shares): nothing
 * yet but the one answer every arch gives.
 */
#ifndef OKPROBE_ARCH_COMPAT_H
#define OKPROBE_ARCH_COMPAT_H

/*
 * Where a kprobe registered on a symbol shows the symbol to start: at the
 * symbol (riscv has no landing instruction a kprobe steps over).
 */
static inline unsigned long okp_kprobe_symbol_start(unsigned long address)
{
	return address;
}

#endif /* OKPROBE_ARCH_COMPAT_H */
