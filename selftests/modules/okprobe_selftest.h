/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Probe targets of okprobe_selftest.ko (okprobe_selftest_targets.S), written
 * in assembly so the instruction at each probed offset is known. Each is
 * long name(long a, long b); the probed offsets are noted.
 */
#ifndef OKPROBE_SELFTEST_H
#define OKPROBE_SELFTEST_H

long okp_target_add(long a, long b);		/* +0 mov, +3 add (copied) */
/* a + b, or a + 1 when b == 0 in its .cold piece */
long okp_target_split(long a, long b);
extern char okp_target_split_cold[] asm("okp_target_split.cold");
long okp_target_rip(long a, long b);		/* +0 rip-relative load */
long okp_target_jcc(long a, long b);		/* +4 je (emulated) */
long okp_target_call(long a, long b);		/* +0 call rel32 (emulated) */
long okp_target_ret(long a, long b);		/* +3 jmp __x86_return_thunk */
long okp_target_push_pop(long a, long b);	/* +0 push, +1 pop */
long okp_target_pushf(long a, long b);		/* +0 pushf (emulated) */
long okp_target_lea_imm(long a, long b);	/* +0 lea disp, +4 imul imm */
long okp_helper_double(long a);
/* a + b + 0xe9cc: immediates that decode as int3/jmp from mid-instruction */
long okp_target_coexist(long a, long b);	/* +0 mov, +3 add imm32, +12 sub */
long okp_target_extable(long *pointer);	/* +0 has an extable entry */
long okp_target_overlay(long a, long b);	/* +0 mov $0xe8, +5 add */
long okp_target_rip_store(long a, long b);	/* +0 rip store, +7 rip+imm */
long okp_target_jmp(long a, long b);		/* +3 jmp rel8, +11 jmp rel32 */
long okp_target_popf(long a, long b);		/* +1 popf (emulated) */
long okp_target_string(long a, long b);	/* +10 movsq; returns 2a */
long okp_target_imm_disp(long a, long b);	/* +5 imm32 and disp8 */
long okp_target_refused(long a, long b);	/* +5 ud2, +12 int3 */
long okp_target_indirect(long a, long b);	/* jmp *%rcx at +13 */
long okp_target_static_jump(long a, long b);	/* a jump label targets +3 */
/* buf (b, 16-byte aligned)[0] += a by cmpxchg16b at +20: 1, or 0 */
long okp_target_cx16(long a, long b);		/* +1 mov, +26 after jne */

/* What okp_target_rip loads. */
extern long okp_target_data;

#endif /* OKPROBE_SELFTEST_H */
