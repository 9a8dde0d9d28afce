/* SPDX-License-Identifier: GPL-2.0 */
/*
 * x86's part of the C glue's shared declarations (src/kernel/glue.h).
 */
#ifndef OKPROBE_ARCH_GLUE_H
#define OKPROBE_ARCH_GLUE_H

#include <linux/compiler.h>
#include <linux/ptrace.h>

/* Unexported kernel data x86's glue reads (ksyms.c): X(name, required). */
struct okp_arch_symbols {
	unsigned long die_chain;	/* kernel/notifier.c's, static */
};

#define OKP_ARCH_DATA_SYMBOLS(X) X(die_chain, 1)

extern struct okp_arch_symbols okp_arch_ksyms;

/*
 * The core kernel's static call sites, indexed at load
 * (arch/x86/static_call_sites.c): why [start, end] holds a static call
 * site, or NULL. Called under jump_label_lock.
 */
void okp_static_call_sites_init(void);
void okp_static_call_sites_exit(void);
const char *okp_static_call_reserved(void *start, void *end);

/* Executable pages start as int3: a stray jump into one traps. */
#define OKP_EXEC_PAGE_FILL 0xcc

/* The longest jump label instruction (jump_labels.c's index search). */
#define OKP_MAX_JUMP_LABEL_SIZE 5

/*
 * A return probe's exit (src/kernel/return_exit_probes.c), about to return:
 * regs shown as after the return (ret pops the return address into ip),
 * and the return address; and put back. regs are a probe hit's, whose sp
 * is the stack pointer at the exit.
 */
static __always_inline unsigned long okp_arch_present_return(struct pt_regs *regs)
{
	unsigned long ret = *(unsigned long *)regs->sp;

	regs->ip = ret;
	regs->sp += sizeof(long);
	return ret;
}

/*
 * At a tail call (a jmp at the function's exit) the stack is as at entry:
 * its top is the return address. What regs say is there.
 */
static __always_inline unsigned long okp_arch_return_address(struct pt_regs *regs)
{
	return *(unsigned long *)regs->sp;
}

/* The bytes okp_arch_call_ends_here() reads before a return address. */
#define OKP_ARCH_CALL_MAX 7

/*
 * Whether the OKP_ARCH_CALL_MAX bytes before a return address end in a
 * call: call rel32 (e8), or call through a register or memory (ff /2,
 * 2 to 7 bytes with its REX, ModRM, SIB and displacement).
 */
static __always_inline bool okp_arch_call_ends_here(const u8 *before)
{
	int length;

	if (before[OKP_ARCH_CALL_MAX - 5] == 0xe8)
		return true;
	for (length = 2; length <= OKP_ARCH_CALL_MAX; length++) {
		const u8 *insn = before + OKP_ARCH_CALL_MAX - length;
		int at = insn[0] >= 0x40 && insn[0] <= 0x4f ? 1 : 0;

		if (insn[at] == 0xff && ((insn[at + 1] >> 3) & 7) == 2)
			return true;
	}
	return false;
}

/* rethook's frame of a return address hooked at sp (arch_rethook_prepare). */
static __always_inline unsigned long okp_arch_rethook_frame(struct pt_regs *regs,
							    unsigned long sp)
{
	return sp;
}

static __always_inline void okp_arch_undo_present_return(struct pt_regs *regs,
							 unsigned long ip,
							 unsigned long sp)
{
	regs->ip = ip;
	regs->sp = sp;
}

#endif
