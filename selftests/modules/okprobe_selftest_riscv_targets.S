/* SPDX-License-Identifier: GPL-2.0 */
/*
 * riscv64 probe targets for okprobe_selftest.ko: see
 * okprobe_selftest_riscv.h. Each is long name(long a, long b) (a in a0, b
 * in a1). RVI targets are assembled with .option norvc, so every
 * instruction is 4 bytes; RVC targets spell every compressed instruction
 * (c.*), so the probed offsets are exact.
 */
#include <linux/linkage.h>
#include <asm/asm.h>
#include <asm/asm-extable.h>

	.text
	.option push
	.option norvc

SYM_FUNC_START(okp_rv_add)
	add	a0, a0, a1		/* +0 */
	addi	a0, a0, 0		/* +4 */
	ret				/* +8: jalr x0, 0(ra) */
SYM_FUNC_END(okp_rv_add)

/*
 * a + b + 0x9003, for the coexistence matrix: the lui's immediate holds
 * c.ebreak's encoding (0x9002) for a decode that starts mid-instruction.
 */
SYM_FUNC_START(okp_rv_coexist)
	add	a0, a0, a1		/* +0 */
	lui	t0, 0x9			/* +4: t0 = 0x9000 */
	addi	t0, t0, 3		/* +8 */
	add	a0, a0, t0		/* +12 */
	ret				/* +16 */
SYM_FUNC_END(okp_rv_coexist)

SYM_FUNC_START(okp_rv_load_store)
	addi	sp, sp, -16		/* +0 */
	sd	a0, 8(sp)		/* +4 */
	ld	t0, 8(sp)		/* +8 */
	add	a0, t0, a1		/* +12 */
	addi	sp, sp, 16		/* +16 */
	ret				/* +20 */
SYM_FUNC_END(okp_rv_load_store)

/* a + b + 4: the two auipc differ by their distance. */
SYM_FUNC_START(okp_rv_auipc)
	auipc	t0, 1			/* +0 */
	auipc	t1, 1			/* +4 */
	sub	t1, t1, t0		/* +8 */
	add	a0, a0, t1		/* +12 */
	add	a0, a0, a1		/* +16 */
	ret				/* +20 */
SYM_FUNC_END(okp_rv_auipc)

/* b < a ? a + b : a + b + 100 */
SYM_FUNC_START(okp_rv_blt)
	blt	a1, a0, 1f		/* +0 */
	addi	a0, a0, 100		/* +4 */
1:	add	a0, a0, a1		/* +8 */
	ret				/* +12 */
SYM_FUNC_END(okp_rv_blt)

/* a + b */
SYM_FUNC_START(okp_rv_j)
	j	1f			/* +0: jal x0 */
	addi	a0, a0, 100		/* +4 */
1:	add	a0, a0, a1		/* +8 */
	ret				/* +12 */
SYM_FUNC_END(okp_rv_j)

SYM_FUNC_START(okp_rv_helper_double)
	add	a0, a0, a0
	ret
SYM_FUNC_END(okp_rv_helper_double)

/* Returns through t0: for jalr t0, 0(t0). */
SYM_FUNC_START(okp_rv_helper_double_t0)
	add	a0, a0, a0
	jr	t0
SYM_FUNC_END(okp_rv_helper_double_t0)

/* 2a + b */
SYM_FUNC_START(okp_rv_jal)
	addi	sp, sp, -16		/* +0 */
	sd	ra, 8(sp)		/* +4 */
	jal	ra, okp_rv_helper_double /* +8 */
	add	a0, a0, a1		/* +12 */
	ld	ra, 8(sp)		/* +16 */
	addi	sp, sp, 16		/* +20 */
	ret				/* +24 */
SYM_FUNC_END(okp_rv_jal)

/* 2a + b */
SYM_FUNC_START(okp_rv_jalr)
	addi	sp, sp, -16		/* +0 */
	sd	ra, 8(sp)		/* +4 */
	lla	t0, okp_rv_helper_double /* +8: auipc + addi */
	jalr	ra, 0(t0)		/* +16 */
	add	a0, a0, a1		/* +20 */
	ld	ra, 8(sp)		/* +24 */
	addi	sp, sp, 16		/* +28 */
	ret				/* +32 */
SYM_FUNC_END(okp_rv_jalr)

/* 2a + b: jalr with rd == rs1 jumps to the old t0 (the 6.1.0 bug). */
SYM_FUNC_START(okp_rv_jalr_same)
	lla	t0, okp_rv_helper_double_t0 /* +0 */
	jalr	t0, 0(t0)		/* +8 */
	add	a0, a0, a1		/* +12 */
	ret				/* +16 */
SYM_FUNC_END(okp_rv_jalr_same)

/* Refused instructions, after the ret: never executed. */
SYM_FUNC_START(okp_rv_refused)
	ret				/* +0 */
	ebreak				/* +4 */
	csrr	t0, sstatus		/* +8 */
	fence.i				/* +12 */
	lr.d	t0, (a0)		/* +16 */
	sc.d	t1, t0, (a0)		/* +20 */
	ret				/* +24 */
SYM_FUNC_END(okp_rv_refused)

/* *a, or 0 if it faults: the load has an exception-table entry. */
SYM_FUNC_START(okp_rv_extable)
1:	ld	a0, 0(a0)		/* +0 */
2:	ret				/* +4 */
	_asm_extable	1b, 2b
SYM_FUNC_END(okp_rv_extable)

/*
 * Jump-optimization targets: the probe at "X" gets a window of whole
 * instructions, 8 bytes (auipc + jalr) for the okp_rvj_* targets, 6
 * (auipc + c.jr) for most okp_rvcj_* ones. "li t6, 0" after a window
 * makes t6 provably dead there even where a return is taken to read
 * every register; where a window ends in a return (okp_rvcj_jr) the
 * entry register is dead by the psABI (the default psabi_liveness=1).
 */

	.data
	.balign 8
SYM_DATA(okp_rvj_word, .dword 1000)
	.text

/* a + b + 1: arithmetic. X = +0 */
SYM_FUNC_START(okp_rvj_arith)
	add	a0, a0, a1		/* +0 */
	addi	a0, a0, 1		/* +4 */
	li	t6, 0			/* +8 */
	ret
SYM_FUNC_END(okp_rvj_arith)

/*
 * a + b, or a + 1 when b == 0, its unlikely path split off into
 * okp_rv_split.cold as GCC splits functions: the jump planner reads the
 * piece too (a kernel kprobe there keeps okprobe's jump out). X = +0
 */
SYM_FUNC_START(okp_rv_split)
	add	a0, a0, a1		/* +0 */
	addi	a0, a0, 0		/* +4 */
	li	t6, 0			/* +8 */
	beqz	a1, okp_rv_split.cold	/* +12 */
.Lokp_rv_split_back:
	ret
SYM_FUNC_END(okp_rv_split)

SYM_FUNC_START(okp_rv_split.cold)
	addi	a0, a0, 1		/* +0 */
	addi	a0, a0, 0		/* +4 */
	j	.Lokp_rv_split_back
SYM_FUNC_END(okp_rv_split.cold)

/* a + b: a store and a load. X = +4 */
SYM_FUNC_START(okp_rvj_load_store)
	addi	sp, sp, -16		/* +0 */
	sd	a0, 8(sp)		/* +4 */
	ld	a2, 8(sp)		/* +8 */
	add	a0, a2, a1		/* +12 */
	addi	sp, sp, 16		/* +16 */
	li	t6, 0			/* +20 */
	ret
SYM_FUNC_END(okp_rvj_load_store)

/* a + 1000 + b: auipc + addi (lla), relocated. X = +0 */
SYM_FUNC_START(okp_rvj_auipc)
	lla	t0, okp_rvj_word	/* +0: auipc, +4: addi */
	ld	t0, 0(t0)		/* +8 */
	add	a0, a0, t0		/* +12 */
	add	a0, a0, a1		/* +16 */
	li	t6, 0			/* +20 */
	ret
SYM_FUNC_END(okp_rvj_auipc)

/* b < a ? a + b : a + b + 100: blt taken and not taken. X = +0 */
SYM_FUNC_START(okp_rvj_blt)
	blt	a1, a0, 1f		/* +0 */
	addi	a0, a0, 100		/* +4 */
1:	add	a0, a0, a1		/* +8 */
	li	t6, 0			/* +12 */
	ret
SYM_FUNC_END(okp_rvj_blt)

/* a + b: j (jal x0) ends the copy. X = +0 */
SYM_FUNC_START(okp_rvj_j)
	j	1f			/* +0 */
	addi	a0, a0, 100		/* +4 */
1:	add	a0, a0, a1		/* +8 */
	li	t6, 0			/* +12 */
	ret
SYM_FUNC_END(okp_rvj_j)

/* 2a + 2 + b: jal ra (a call) at the window's end. X = +8 */
SYM_FUNC_START(okp_rvj_jal)
	addi	sp, sp, -16		/* +0 */
	sd	ra, 8(sp)		/* +4 */
	addi	a0, a0, 1		/* +8 */
	jal	ra, okp_rv_helper_double /* +12 */
	add	a0, a0, a1		/* +16 */
	ld	ra, 8(sp)		/* +20 */
	addi	sp, sp, 16		/* +24 */
	li	t6, 0			/* +28 */
	ret
SYM_FUNC_END(okp_rvj_jal)

/* 2a + b: jalr ra, 0(t0) at the window's end. X = +12 (lla's addi) */
SYM_FUNC_START(okp_rvj_jalr)
	addi	sp, sp, -16		/* +0 */
	sd	ra, 8(sp)		/* +4 */
	lla	t0, okp_rv_helper_double /* +8: auipc, +12: addi */
	jalr	ra, 0(t0)		/* +16 */
	add	a0, a0, a1		/* +20 */
	ld	ra, 8(sp)		/* +24 */
	addi	sp, sp, 16		/* +28 */
	li	t6, 0			/* +32 */
	ret
SYM_FUNC_END(okp_rvj_jalr)

/*
 * a + b + 1, returning after an epilogue: the window of a probe on the ret
 * (X = +24) ends there, over "addi sp, sp, 16".
 */
SYM_FUNC_START(okp_rvj_epilogue)
	addi	sp, sp, -16		/* +0 */
	sd	ra, 8(sp)		/* +4 */
	add	a0, a0, a1		/* +8 */
	addi	a0, a0, 1		/* +12 */
	ld	ra, 8(sp)		/* +16 */
	addi	sp, sp, 16		/* +20 */
	ret				/* +24 */
SYM_FUNC_END(okp_rvj_epilogue)

/*
 * a + b, but every register a jump could use is read after the window
 * (added and subtracted again): no register is dead at X = +0.
 */
SYM_FUNC_START(okp_rvj_no_register)
	add	a0, a0, a1		/* +0 */
	addi	a0, a0, 0		/* +4 */
	.irp	r, ra, t0, t1, t2, s0, s1, a1, a2, a3, a4, a5, a6, a7, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, t3, t4, t5, t6
	add	a0, a0, \r
	sub	a0, a0, \r
	.endr
	ret
SYM_FUNC_END(okp_rvj_no_register)

	.option pop

	.option push
	.option rvc

/* a + b through the stack, every instruction compressed. */
SYM_FUNC_START(okp_rvc_stack)
	c.addi16sp	sp, -16		/* +0 */
	c.sdsp	a0, 8(sp)		/* +2 */
	c.ldsp	t0, 8(sp)		/* +4 */
	c.add	t0, a1			/* +6 */
	c.mv	a0, t0			/* +8 */
	c.addi16sp	sp, 16		/* +10 */
	c.jr	ra			/* +12 */
SYM_FUNC_END(okp_rvc_stack)

/* a == 0 ? b : a + 1 + b */
SYM_FUNC_START(okp_rvc_beqz)
	c.beqz	a0, 1f			/* +0 */
	c.addi	a0, 1			/* +2 */
1:	c.add	a0, a1			/* +4 */
	c.jr	ra			/* +6 */
SYM_FUNC_END(okp_rvc_beqz)

/* a != 0 ? a + b : 7 + b */
SYM_FUNC_START(okp_rvc_bnez)
	c.bnez	a0, 1f			/* +0 */
	c.li	a0, 7			/* +2 */
1:	c.add	a0, a1			/* +4 */
	c.jr	ra			/* +6 */
SYM_FUNC_END(okp_rvc_bnez)

/* a + b */
SYM_FUNC_START(okp_rvc_j)
	c.j	1f			/* +0 */
	c.addi	a0, 1			/* +2 */
1:	c.add	a0, a1			/* +4 */
	c.jr	ra			/* +6 */
SYM_FUNC_END(okp_rvc_j)

/* 2a + b through c.jalr t0 */
SYM_FUNC_START(okp_rvc_jalr)
	c.addi16sp	sp, -16		/* +0 */
	c.sdsp	ra, 8(sp)		/* +2 */
	.option push
	.option norvc
	lla	t0, okp_rv_helper_double /* +4 */
	.option pop
	c.jalr	t0			/* +12 */
	c.add	a0, a1			/* +14 */
	c.ldsp	ra, 8(sp)		/* +16 */
	c.addi16sp	sp, 16		/* +18 */
	c.jr	ra			/* +20 */
SYM_FUNC_END(okp_rvc_jalr)

/* 2a + b through c.jalr ra: the jump reads ra before linking it. */
SYM_FUNC_START(okp_rvc_jalr_ra)
	c.addi16sp	sp, -16		/* +0 */
	c.sdsp	ra, 8(sp)		/* +2 */
	.option push
	.option norvc
	lla	ra, okp_rv_helper_double /* +4 */
	.option pop
	c.jalr	ra			/* +12 */
	c.add	a0, a1			/* +14 */
	c.ldsp	ra, 8(sp)		/* +16 */
	c.addi16sp	sp, 16		/* +18 */
	c.jr	ra			/* +20 */
SYM_FUNC_END(okp_rvc_jalr_ra)

/* a + b: a 4-byte add at a 2-byte-aligned address. */
SYM_FUNC_START(okp_rvc_mixed)
	c.mv	t1, a0			/* +0 */
	.option push
	.option norvc
	add	a0, t1, a1		/* +2 */
	.option pop
	c.jr	ra			/* +6 */
SYM_FUNC_END(okp_rvc_mixed)

/* a + b: compressed stack ops. X = +0 */
SYM_FUNC_START(okp_rvcj_stack)
	c.addi16sp	sp, -16		/* +0 */
	c.sdsp	a0, 8(sp)		/* +2 */
	c.ldsp	a2, 8(sp)		/* +4 */
	c.add	a2, a1			/* +6 */
	c.mv	a0, a2			/* +8 */
	c.addi16sp	sp, 16		/* +10 */
	c.li	t6, 0			/* +12 */
	c.jr	ra			/* +14 */
SYM_FUNC_END(okp_rvcj_stack)

/* a + b: c.j ends the copy. X = +0 */
SYM_FUNC_START(okp_rvcj_j)
	c.j	1f			/* +0 */
	c.addi	a0, 1			/* +2 */
	c.addi	a0, 1			/* +4 */
	c.addi	a0, 1			/* +6 */
1:	c.add	a0, a1			/* +8 */
	c.li	t6, 0			/* +10 */
	c.jr	ra			/* +12 */
SYM_FUNC_END(okp_rvcj_j)

/* a == 0 ? b : a + 3 + b: c.beqz. X = +0 */
SYM_FUNC_START(okp_rvcj_beqz)
	c.beqz	a0, 1f			/* +0 */
	c.addi	a0, 1			/* +2 */
	c.addi	a0, 1			/* +4 */
	c.addi	a0, 1			/* +6 */
1:	c.add	a0, a1			/* +8 */
	c.li	t6, 0			/* +10 */
	c.jr	ra			/* +12 */
SYM_FUNC_END(okp_rvcj_beqz)

/* a != 0 ? a + b : 9 + b: c.bnez. X = +0 */
SYM_FUNC_START(okp_rvcj_bnez)
	c.bnez	a0, 1f			/* +0 */
	c.li	a0, 7			/* +2 */
	c.addi	a0, 1			/* +4 */
	c.addi	a0, 1			/* +6 */
1:	c.add	a0, a1			/* +8 */
	c.li	t6, 0			/* +10 */
	c.jr	ra			/* +12 */
SYM_FUNC_END(okp_rvcj_bnez)

/*
 * a + b, returning after its epilogue: the window of a probe on c.jr ra
 * (X = +10) ends there, over c.ldsp ra and c.addi16sp (the detour reloads
 * ra before the hit).
 */
SYM_FUNC_START(okp_rvcj_epilogue)
	c.addi16sp	sp, -16		/* +0 */
	c.sdsp	ra, 8(sp)		/* +2 */
	c.add	a0, a1			/* +4 */
	c.ldsp	ra, 8(sp)		/* +6 */
	c.addi16sp	sp, 16		/* +8 */
	c.jr	ra			/* +10 */
SYM_FUNC_END(okp_rvcj_epilogue)

/* a + b + 2: the window ends in c.jr ra (a return is copied). X = +0 */
SYM_FUNC_START(okp_rvcj_jr)
	c.add	a0, a1			/* +0 */
	c.addi	a0, 2			/* +2 */
	c.jr	ra			/* +4 */
SYM_FUNC_END(okp_rvcj_jr)

/* 2a + 2 + b: c.jalr t0 at the window's end. X = +12 */
SYM_FUNC_START(okp_rvcj_jalr)
	c.addi16sp	sp, -16		/* +0 */
	c.sdsp	ra, 8(sp)		/* +2 */
	.option push
	.option norvc
	lla	t0, okp_rv_helper_double /* +4 */
	.option pop
	c.addi	a0, 2			/* +12 */
	c.addi	a0, -1			/* +14 */
	c.jalr	t0			/* +16 */
	c.add	a0, a1			/* +18 */
	c.ldsp	ra, 8(sp)		/* +20 */
	c.addi16sp	sp, 16		/* +22 */
	c.li	t6, 0			/* +24 */
	c.jr	ra			/* +26 */
SYM_FUNC_END(okp_rvcj_jalr)

/*
 * a + 2 + b: mixed windows. X = +0: 2 + 2 + 2 (auipc + c.jr); X = +2:
 * 2 + 2 + 4 (auipc + jalr from a 2-byte boundary); X = +4: 2 + 4; X = +6:
 * 4 + 2.
 */
SYM_FUNC_START(okp_rvcj_mixed)
	c.mv	t1, a0			/* +0 */
	c.addi	t1, 1			/* +2 */
	c.addi	t1, 1			/* +4 */
	.option push
	.option norvc
	add	a0, t1, a1		/* +6 */
	.option pop
	c.li	t6, 0			/* +10 */
	c.jr	ra			/* +12 */
SYM_FUNC_END(okp_rvcj_mixed)

/*
 * a + b + 2, twice, each at the start of a page: two 6-byte windows whose
 * landings want the same page offset (0), so they need two detour pages.
 * X = +0.
 */
	.balign	4096
SYM_FUNC_START(okp_rvcj_page_a)
	c.add	a0, a1			/* +0 */
	c.addi	a0, 2			/* +2 */
	c.jr	ra			/* +4 */
SYM_FUNC_END(okp_rvcj_page_a)

	.balign	4096
SYM_FUNC_START(okp_rvcj_page_b)
	c.add	a0, a1			/* +0 */
	c.addi	a0, 2			/* +2 */
	c.jr	ra			/* +4 */
SYM_FUNC_END(okp_rvcj_page_b)


/*
 * Return probe targets (okprobe_selftest_return.c), no ftrace call site:
 * okp_ret_branches returns from three places, okp_ret_tail leaves through
 * a tail call, okp_ret_recurse calls itself a times. RVI: each exit has 4
 * bytes of straight-line code before it, so a return probe without
 * entry_handler goes at the exits, each an 8-byte jump ending there.
 */
	.option push
	.option norvc
SYM_FUNC_START(okp_ret_branches)	/* a < 0: 1; a == 0: 2; else 2a + b */
	bltz	a0, 1f
	beqz	a0, 2f
	slli	a0, a0, 1
	add	a0, a0, a1
	ret
1:	li	a0, 1
	ret
2:	li	a0, 2
	ret
SYM_FUNC_END(okp_ret_branches)

/*
 * A far tail call, as a module's "tail" stays (auipc t1 + jr t1): the
 * census takes the pair whole, and the exit's window ends at the jr, over
 * the auipc (relocated).
 */
SYM_FUNC_START(okp_ret_tail)		/* okp_ret_branches(a + 1, b) */
	addi	a0, a0, 1
	tail	okp_ret_branches
SYM_FUNC_END(okp_ret_tail)

SYM_FUNC_START(okp_ret_recurse)	/* a == 0: b; else okp_ret_recurse(a - 1, b) + 1 */
	bnez	a0, 1f
	mv	a0, a1
	ret
1:	addi	sp, sp, -16
	sd	ra, 8(sp)
	addi	a0, a0, -1
	call	okp_ret_recurse
	addi	a0, a0, 1
	ld	ra, 8(sp)
	addi	sp, sp, 16
	ret
SYM_FUNC_END(okp_ret_recurse)
	.option pop

	.option pop
