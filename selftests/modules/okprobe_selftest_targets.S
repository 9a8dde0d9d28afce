/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Probe targets for okprobe_selftest.ko: see okprobe_selftest.h. RET is the
 * kernel's return (jmp __x86_return_thunk under RETHUNK).
 */
#include <linux/linkage.h>
#include <asm/asm.h>

	.data
SYM_DATA(okp_target_data, .quad 0x5a5a1234)
SYM_DATA(okp_target_store, .quad 0)

	.text
SYM_FUNC_START(okp_target_add)
	mov	%rdi, %rax		/* +0 */
	add	%rsi, %rax		/* +3 */
	RET				/* +6 */
SYM_FUNC_END(okp_target_add)

SYM_FUNC_START(okp_target_rip)
	mov	okp_target_data(%rip), %rax	/* +0 */
	add	%rdi, %rax
	RET
SYM_FUNC_END(okp_target_rip)

SYM_FUNC_START(okp_target_jcc)
	cmp	$0x0, %rdi		/* +0: 48 83 ff 00 */
	je	1f			/* +4 */
	mov	$1, %eax
	RET
1:	mov	$2, %eax
	RET
SYM_FUNC_END(okp_target_jcc)

/*
 * a + b + 0xe9cc, for the coexistence matrix: a decode that starts inside an
 * instruction (someone else's bytes at +0) reads cc (int3) and e9 (jmp).
 */
SYM_FUNC_START(okp_target_coexist)
	mov	%rdi, %rax		/* +0: 48 89 f8 */
	add	$0xe9cc, %rax		/* +3: 48 05 cc e9 00 00 */
	add	%rsi, %rax		/* +9: 48 01 f0 */
	sub	$0xcc, %rax		/* +12: 48 2d cc 00 00 00 */
	add	$0xcc, %rax		/* +18: 48 05 cc 00 00 00 */
	RET				/* +24 */
SYM_FUNC_END(okp_target_coexist)

SYM_FUNC_START(okp_helper_double)
	lea	(%rdi,%rdi,1), %rax
	RET
SYM_FUNC_END(okp_helper_double)

SYM_FUNC_START(okp_target_call)
	call	okp_helper_double	/* +0 */
	add	%rsi, %rax
	RET
SYM_FUNC_END(okp_target_call)

SYM_FUNC_START(okp_target_push_pop)
	push	%rdi			/* +0 */
	pop	%rax			/* +1 */
	sub	%rsi, %rax
	RET
SYM_FUNC_END(okp_target_push_pop)

SYM_FUNC_START(okp_target_pushf)
	pushf				/* +0 */
	pop	%rax			/* +1 */
	RET
SYM_FUNC_END(okp_target_pushf)

SYM_FUNC_START(okp_target_lea_imm)
	lea	0x10(%rdi), %rax	/* +0: 48 8d 47 10 */
	imul	$0x3, %rsi, %rsi	/* +4 */
	add	%rsi, %rax
	RET
SYM_FUNC_END(okp_target_lea_imm)

SYM_FUNC_START(okp_target_extable)
1:	mov	(%rdi), %rax		/* +0: may fault, fixed up at 2 */
2:	RET
	_ASM_EXTABLE(1b, 2b)
SYM_FUNC_END(okp_target_extable)

/*
 * With an int3 on +0, the bytes after it decode as a 5-byte call that runs
 * past +5: the boundary walk must see the original instruction.
 */
SYM_FUNC_START(okp_target_overlay)
	mov	$0xe8, %eax		/* +0: b8 e8 00 00 00 */
	add	%esi, %eax		/* +5 */
	RET
SYM_FUNC_END(okp_target_overlay)

SYM_FUNC_START(okp_target_rip_store)
	mov	%rdi, okp_target_store(%rip)	/* +0: 48 89 3d rel32 */
	addq	$0x10, okp_target_store(%rip)	/* +7: 48 83 05 rel32 10 */
	mov	okp_target_store(%rip), %rax	/* +15 */
	add	%rsi, %rax
	RET
SYM_FUNC_END(okp_target_rip_store)

SYM_FUNC_START(okp_target_jmp)
	mov	%rdi, %rax		/* +0 */
	jmp	1f			/* +3: eb 06 (rel8) */
4:	add	$100, %rax		/* +5: skipped */
	jmp	2f			/* +9 */
1:	.byte	0xe9			/* +11: jmp rel32 */
	.long	2f - 3f
3:	add	$100, %rax		/* +16: skipped */
2:	test	%rsi, %rsi		/* b >= 0: the skipped code stays */
	js	4b			/* skipped, yet reachable for objtool */
	js	3b
	add	%rsi, %rax
	RET
SYM_FUNC_END(okp_target_jmp)

SYM_FUNC_START(okp_target_popf)
	pushf				/* +0 */
	popf				/* +1 */
	mov	%rdi, %rax
	add	%rsi, %rax
	RET
SYM_FUNC_END(okp_target_popf)

SYM_FUNC_START(okp_target_string)
	push	%rsi			/* +0 */
	push	%rdi			/* +1 */
	mov	%rsp, %rsi		/* +2: source: a */
	lea	8(%rsp), %rdi		/* +5: destination: b's slot */
	movsq				/* +10: 48 a5 */
	pop	%rax
	pop	%rdx
	add	%rdx, %rax		/* a + a */
	RET
SYM_FUNC_END(okp_target_string)

SYM_FUNC_START(okp_target_imm_disp)
	push	%rdi			/* +0 */
	sub	$8, %rsp		/* +1 */
	addq	$0x1234, 0x8(%rsp)	/* +5: 48 81 44 24 08 imm32 */
	add	$8, %rsp
	pop	%rax
	add	%rsi, %rax
	RET
SYM_FUNC_END(okp_target_imm_disp)

/*
 * An unlocked cmpxchg16b between two probed instructions, as SLUB's fast
 * path has it from 6.2 on (this_cpu_try_cmpxchg128(): its jne right after
 * it). a is added to buf[0] of the 16-byte aligned buf (b); returns 1 when
 * the exchange succeeded. The add makes a the flags' source QEMU 7.2's TCG
 * reads back as RFLAGS after a breakpoint at +1 (see okprobe_selftest_x86.c).
 */
SYM_FUNC_START(okp_target_cx16)
	push	%rbx			/* +0 */
	mov	%rdi, %r8		/* +1: 49 89 f8, probed */
	mov	(%rsi), %rax		/* +4 */
	mov	8(%rsi), %rdx		/* +7 */
	mov	%rax, %rbx		/* +11 */
	mov	%rdx, %rcx		/* +14 */
	add	%r8, %rbx		/* +17 */
	cmpxchg16b (%rsi)		/* +20: 48 0f c7 0e */
	jne	1f			/* +24 */
	mov	$1, %eax		/* +26: probed */
	pop	%rbx
	RET
1:	xor	%eax, %eax
	pop	%rbx
	RET
SYM_FUNC_END(okp_target_cx16)

/* Never called: instructions okprobe must refuse to probe. */
SYM_FUNC_START(okp_target_refused)
	test	%rdi, %rdi		/* +0 */
	jnz	1f			/* +3 */
	ud2				/* +5: a BUG() site */
1:	test	%rsi, %rsi		/* +7 */
	jnz	2f			/* +10 */
	int3				/* +12: someone else's breakpoint */
2:	RET				/* +13 */
SYM_FUNC_END(okp_target_refused)

/*
 * a + b, or a + 1 when b == 0, its unlikely path split off into
 * okp_target_split.cold as GCC splits functions: the jump planner reads
 * the piece too (a kernel kprobe there keeps okprobe's jump out). X = +0
 */
SYM_FUNC_START(okp_target_split)
	mov	%rdi, %rax		/* +0 */
	add	%rsi, %rax		/* +3 */
	test	%rsi, %rsi		/* +6 */
	jz	okp_target_split.cold	/* +9 */
.Lokp_target_split_back:
	RET
SYM_FUNC_END(okp_target_split)

SYM_FUNC_START(okp_target_split.cold)
	add	$1, %rax		/* +0 */
	add	$0, %rax		/* +4 */
	jmp	.Lokp_target_split_back
SYM_FUNC_END(okp_target_split.cold)

/*
 * Return probe targets (okprobe_selftest_return.c), no ftrace call site:
 * okp_ret_branches returns from three places, okp_ret_tail leaves through
 * a tail call, okp_ret_recurse calls itself a times.
 */
SYM_FUNC_START(okp_ret_branches)	/* a < 0: 1; a == 0: 2; else 2a + b */
	test	%rdi, %rdi
	js	1f
	jz	2f
	lea	(%rsi,%rdi,2), %rax
	RET
1:	mov	$1, %eax
	RET
2:	mov	$2, %eax
	RET
SYM_FUNC_END(okp_ret_branches)

SYM_FUNC_START(okp_ret_tail)		/* okp_ret_branches(a + 1, b) */
	add	$1, %rdi
	/*
	 * A jmp rel32, as tail calls between functions further apart are
	 * (the assembler would make this one a jmp rel8, which no jump can
	 * replace at a function's end: its return probe would stay at the
	 * entry).
	 */
	{disp32} jmp	okp_ret_branches
SYM_FUNC_END(okp_ret_tail)

SYM_FUNC_START(okp_ret_recurse)	/* a == 0: b; else okp_ret_recurse(a - 1, b) + 1 */
	test	%rdi, %rdi
	jnz	1f
	mov	%rsi, %rax
	RET
1:	sub	$8, %rsp
	sub	$1, %rdi
	call	okp_ret_recurse
	add	$1, %rax
	add	$8, %rsp
	RET
SYM_FUNC_END(okp_ret_recurse)
