/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What x86's kernels okprobe builds for differ in, for x86's own glue
 * (src/kernel/compat.h includes it, after what every arch shares): found
 * by looking (the OKP_HAVE_* of Kbuild's probes), never by version number.
 */
#ifndef OKPROBE_ARCH_COMPAT_H
#define OKPROBE_ARCH_COMPAT_H

/*
 * x86's wait until every CPU has left the text just poked (a serializing
 * IPI): text_poke_sync() until 6.16 renamed the text-poke family
 * smp_text_poke_*(). Resolved at load (arch_resolved_functions.h).
 */
#ifdef OKP_HAVE_SMP_TEXT_POKE
#define OKP_TEXT_POKE_SYNC_FUNCTION smp_text_poke_sync_each_cpu
#else
#define OKP_TEXT_POKE_SYNC_FUNCTION text_poke_sync
#endif

/*
 * Where a kprobe registered on a symbol shows the symbol to start: with
 * x86's IBT, kprobes probe sym+4, past the endbr64 (arch_adjust_kprobe_addr).
 */
#ifdef CONFIG_X86_KERNEL_IBT
#include <linux/uaccess.h>
#include <asm/ibt.h>
/*
 * An endbr64 (or its poison) by value: is_endbr(u32) until 6.16 made
 * is_endbr() read through a pointer, out of line and unexported, and kept
 * the value test as __is_endbr().
 */
#ifdef OKP_HAVE___IS_ENDBR
#define OKP_IS_ENDBR(insn) __is_endbr(insn)
#else
#define OKP_IS_ENDBR(insn) is_endbr(insn)
#endif
static inline unsigned long okp_kprobe_symbol_start(unsigned long address)
{
	u32 insn;

	if (!copy_from_kernel_nofault(&insn, (void *)(address - ENDBR_INSN_SIZE),
				      sizeof(insn)) && OKP_IS_ENDBR(insn))
		return address - ENDBR_INSN_SIZE;
	return address;
}
#else
static inline unsigned long okp_kprobe_symbol_start(unsigned long address)
{
	return address;
}
#endif /* CONFIG_X86_KERNEL_IBT */

/* x86-64's per-CPU preemption count: in pcpu_hot from 6.2. */
#ifdef OKP_HAVE_PCPU_HOT_PREEMPT_COUNT
#define OKP_PREEMPT_COUNT pcpu_hot.preempt_count
#else
#define OKP_PREEMPT_COUNT __preempt_count
#endif

#endif /* OKPROBE_ARCH_COMPAT_H */
