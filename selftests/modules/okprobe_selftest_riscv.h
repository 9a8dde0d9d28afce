/* SPDX-License-Identifier: GPL-2.0 */
/*
 * riscv64 probe targets of okprobe_selftest.ko
 * (okprobe_selftest_riscv_targets.S). Each is long name(long a, long b);
 * the probed offsets are noted there.
 */
#ifndef OKPROBE_SELFTEST_RISCV_H
#define OKPROBE_SELFTEST_RISCV_H

long okp_rv_add(long a, long b);
/* a + b + 0x9003, for the coexistence matrix: +0 add, +4 lui, +8 addi, +12 add */
long okp_rv_coexist(long a, long b);
long okp_rv_load_store(long a, long b);
long okp_rv_auipc(long a, long b);
long okp_rv_blt(long a, long b);
long okp_rv_j(long a, long b);
long okp_rv_helper_double(long a, long b);
long okp_rv_helper_double_t0(long a, long b);
long okp_rv_jal(long a, long b);
long okp_rv_jalr(long a, long b);
long okp_rv_jalr_same(long a, long b);
long okp_rv_refused(long a, long b);
long okp_rv_extable(long a, long b);
long okp_rvc_stack(long a, long b);
long okp_rvc_beqz(long a, long b);
long okp_rvc_bnez(long a, long b);
long okp_rvc_j(long a, long b);
long okp_rvc_jalr(long a, long b);
long okp_rvc_jalr_ra(long a, long b);
long okp_rvc_mixed(long a, long b);

/* Jump-optimization targets. */
long okp_rvj_arith(long a, long b);
/* a + b, or a + 1 when b == 0 in its .cold piece */
long okp_rv_split(long a, long b);
extern char okp_rv_split_cold[] asm("okp_rv_split.cold");
long okp_rvj_load_store(long a, long b);
long okp_rvj_auipc(long a, long b);
long okp_rvj_blt(long a, long b);
long okp_rvj_j(long a, long b);
long okp_rvj_jal(long a, long b);
long okp_rvj_jalr(long a, long b);
long okp_rvj_no_register(long a, long b);
long okp_rvcj_stack(long a, long b);
long okp_rvcj_j(long a, long b);
long okp_rvcj_beqz(long a, long b);
long okp_rvcj_bnez(long a, long b);
long okp_rvcj_jr(long a, long b);
long okp_rvcj_jalr(long a, long b);
long okp_rvcj_mixed(long a, long b);
/* a + b + 1 and a + b, each returning after its epilogue. */
long okp_rvj_epilogue(long a, long b);
long okp_rvcj_epilogue(long a, long b);
/* a + b + 2, each at the start of a page: their landings share an offset. */
long okp_rvcj_page_a(long a, long b);
long okp_rvcj_page_b(long a, long b);

#endif /* OKPROBE_SELFTEST_RISCV_H */
