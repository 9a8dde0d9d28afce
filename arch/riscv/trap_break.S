/* SPDX-License-Identifier: GPL-2.0 */
/*
 * okprobe's entry in the kernel's excp_vect_table[EXC_BREAKPOINT]: reached
 * from the trap entry by "jr" with a0 = sp = the trap's pt_regs and
 * ra = ret_from_exception, interrupts off.
 *
 * When a breakpoint, okprobe's or one the kernel handled (a kernel kprobe
 * stepping its slot), returns into a kernel context with interrupts off (a
 * trapping out-of-line copy, or code that had them off: okp_do_trap_break()
 * returns 1), this returns straight there instead of through
 * ret_from_exception. riscv 6.1's exit would otherwise preempt (resume_kernel
 * calls preempt_schedule_irq() whenever preempt_count is 0 and a reschedule
 * is pending, whatever the trapped context's interrupt state): in the middle
 * of irq_enter() before HARDIRQ_OFFSET is added, say, which leaves context
 * tracking's nesting wrong for the next task, or between a hit and its post
 * trap. It would also call __trace_hardirqs_off() into lockdep, where a
 * probe nests inside the hit. Returning with interrupts off, as the trap
 * entered, leaves lockdep's view (off, since the entry) right. A context
 * with interrupts on goes the kernel's way, preemption included, as after
 * an interrupt.
 */
#include <linux/linkage.h>
#include <asm/asm.h>
#include <asm/asm-offsets.h>
#include <asm/csr.h>

	.section .kprobes.text, "ax"
SYM_CODE_START(okp_trap_break_entry)
	addi	sp, sp, -16
	REG_S	ra, 8(sp)
	call	okp_do_trap_break
	REG_L	ra, 8(sp)
	addi	sp, sp, 16
	bnez	a0, 1f
	ret
1:
	/* sp is the pt_regs again: restore as restore_all does, and sret. */
	REG_L	a0, PT_STATUS(sp)
	REG_L	a2, PT_EPC(sp)
	/* Drop a load reservation the trap may have left (see entry.S). */
	REG_SC	x0, a2, PT_EPC(sp)
	csrw	CSR_STATUS, a0
	csrw	CSR_EPC, a2
	REG_L	x1,  PT_RA(sp)
	REG_L	x3,  PT_GP(sp)
	REG_L	x4,  PT_TP(sp)
	REG_L	x5,  PT_T0(sp)
	REG_L	x6,  PT_T1(sp)
	REG_L	x7,  PT_T2(sp)
	REG_L	x8,  PT_S0(sp)
	REG_L	x9,  PT_S1(sp)
	REG_L	x10, PT_A0(sp)
	REG_L	x11, PT_A1(sp)
	REG_L	x12, PT_A2(sp)
	REG_L	x13, PT_A3(sp)
	REG_L	x14, PT_A4(sp)
	REG_L	x15, PT_A5(sp)
	REG_L	x16, PT_A6(sp)
	REG_L	x17, PT_A7(sp)
	REG_L	x18, PT_S2(sp)
	REG_L	x19, PT_S3(sp)
	REG_L	x20, PT_S4(sp)
	REG_L	x21, PT_S5(sp)
	REG_L	x22, PT_S6(sp)
	REG_L	x23, PT_S7(sp)
	REG_L	x24, PT_S8(sp)
	REG_L	x25, PT_S9(sp)
	REG_L	x26, PT_S10(sp)
	REG_L	x27, PT_S11(sp)
	REG_L	x28, PT_T3(sp)
	REG_L	x29, PT_T4(sp)
	REG_L	x30, PT_T5(sp)
	REG_L	x31, PT_T6(sp)
	REG_L	x2,  PT_SP(sp)
	sret
SYM_CODE_END(okp_trap_break_entry)
