// SPDX-License-Identifier: GPL-2.0
// riscv64's register names for probe event fetch arguments (%a0, %sp, ...):
// the kernel's regoffset_table (arch/riscv/kernel/ptrace.c), each with its
// byte offset in struct pt_regs (probes_glue.c asserts the layout).
#pragma once

#include "core/event_fetch.hpp"
#include "core/probe_events.hpp"

namespace okp::riscv {

inline constexpr events::RegisterName event_registers[] = {
	{"epc", 0},  {"ra", 8},	  {"sp", 16},	   {"gp", 24},	     {"tp", 32},     {"t0", 40},
	{"t1", 48},  {"t2", 56},  {"s0", 64},	   {"s1", 72},	     {"a0", 80},     {"a1", 88},
	{"a2", 96},  {"a3", 104}, {"a4", 112},	   {"a5", 120},	     {"a6", 128},    {"a7", 136},
	{"s2", 144}, {"s3", 152}, {"s4", 160},	   {"s5", 168},	     {"s6", 176},    {"s7", 184},
	{"s8", 192}, {"s9", 200}, {"s10", 208},	   {"s11", 216},     {"t3", 224},    {"t4", 232},
	{"t5", 240}, {"t6", 248}, {"status", 256}, {"badaddr", 264}, {"cause", 272}, {"orig_a0", 280},
};

// regs_get_kernel_argument(): a0-a7, and 0 past them; sp; a0 returns.
inline constexpr events::RegisterLayout event_register_layout{
	{80, 88, 96, 104, 112, 120, 128, 136}, 8, false, 16, 80,
};

} // namespace okp::riscv
