/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What okprobe_bench_main.c's assembly defines for its C: the addresses of
 * the instructions make bench's BPF rows probe inside okp_bench_mid (see
 * there), in a table the assembly lays down beside the instructions.
 */
#ifndef OKPROBE_BENCH_H
#define OKPROBE_BENCH_H

#ifdef CONFIG_RISCV
#define OKP_BENCH_PLACES 1
#else
#define OKP_BENCH_PLACES 2
#endif

extern const unsigned long okp_bench_mid_places[OKP_BENCH_PLACES];

#endif
