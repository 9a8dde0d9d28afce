// SPDX-License-Identifier: GPL-2.0
// x86-64's register names for probe event fetch arguments (%ax, %di, ...):
// the kernel's regoffset_table (arch/x86/kernel/ptrace.c), each with its
// byte offset in struct pt_regs (probes_glue.c asserts the layout).
#pragma once

#include "core/event_fetch.hpp"
#include "core/probe_events.hpp"

namespace okp::x86 {

inline constexpr events::RegisterName event_registers[] = {
	{"r15", 0},  {"r14", 8},       {"r13", 16}, {"r12", 24}, {"bp", 32},	 {"bx", 40},  {"r11", 48},
	{"r10", 56}, {"r9", 64},       {"r8", 72},  {"ax", 80},	 {"cx", 88},	 {"dx", 96},  {"si", 104},
	{"di", 112}, {"orig_ax", 120}, {"ip", 128}, {"cs", 136}, {"flags", 144}, {"sp", 152}, {"ss", 160},
};

// regs_get_kernel_argument(): di, si, dx, cx, r8, r9, then the stack;
// kernel_stack_pointer() is sp, regs_return_value() ax.
inline constexpr events::RegisterLayout event_register_layout{
	{112, 104, 96, 88, 72, 64}, 6, true, 152, 80,
};

} // namespace okp::x86
