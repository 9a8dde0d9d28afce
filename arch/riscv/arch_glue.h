/* SPDX-License-Identifier: GPL-2.0 */
/*
 * riscv's part of the C glue's shared declarations (src/kernel/glue.h).
 */
#ifndef OKPROBE_ARCH_GLUE_H
#define OKPROBE_ARCH_GLUE_H

#include <linux/compiler.h>
#include <linux/linkage.h>
#include <linux/ptrace.h>

/* Unexported kernel data riscv's glue reads (ksyms.c): X(name, required). */
struct okp_arch_symbols {
	unsigned long excp_vect_table;
};

#define OKP_ARCH_DATA_SYMBOLS(X) X(excp_vect_table, 1)

extern struct okp_arch_symbols okp_arch_ksyms;

/* Executable pages start as zeros: an illegal instruction if run. */
#define OKP_EXEC_PAGE_FILL 0

/* Every ebreak trap, from trap_break.S: 1 to return straight to it. */
asmlinkage int okp_do_trap_break(struct pt_regs *regs);

/* The longest jump label instruction (jump_labels.c's index search). */
#define OKP_MAX_JUMP_LABEL_SIZE 4

/*
 * A return probe's exit (src/kernel/return_exit_probes.c), about to return:
 * regs shown as after the return (the pc where ra points; a return leaves
 * sp as it is), and the return address; and put back.
 */
static __always_inline unsigned long okp_arch_present_return(struct pt_regs *regs)
{
	regs->epc = regs->ra;
	return regs->ra;
}

/*
 * At a tail call (a jump at the function's exit) ra holds the return
 * address, as at entry.
 */
static __always_inline unsigned long okp_arch_return_address(struct pt_regs *regs)
{
	return regs->ra;
}

/* The bytes okp_arch_call_ends_here() reads before a return address. */
#define OKP_ARCH_CALL_MAX 4

/*
 * Whether the OKP_ARCH_CALL_MAX bytes before a return address end in a
 * call: jal or jalr linking ra, or c.jalr.
 */
static __always_inline bool okp_arch_call_ends_here(const u8 *before)
{
	u32 insn = before[0] | before[1] << 8 | before[2] << 16 |
		   (u32)before[3] << 24;
	u16 compressed = before[2] | before[3] << 8;

	if (((insn & 0x7f) == 0x6f || (insn & 0x707f) == 0x67) &&
	    ((insn >> 7) & 0x1f) == 1)
		return true;
	return (compressed & 0xf07f) == 0x9002 && (compressed & 0x0f80);
}

/* rethook's frame of a return address hooked in ra (arch_rethook_prepare). */
static __always_inline unsigned long okp_arch_rethook_frame(struct pt_regs *regs,
							    unsigned long sp)
{
	return regs->s0;
}

static __always_inline void okp_arch_undo_present_return(struct pt_regs *regs,
							 unsigned long ip,
							 unsigned long sp)
{
	regs->epc = ip;
	regs->sp = sp;
}

#endif
