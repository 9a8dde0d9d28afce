// SPDX-License-Identifier: GPL-2.0
// Where riscv's trap exit cannot take a breakpoint.
//
// On the way back to user mode the exit code writes the task pointer into
// sscratch ("csrw sscratch, tp") and only then restores the registers and
// runs sret. A trap taken in between finds sscratch nonzero, believes it
// came from user mode and builds its frame at the top of the kernel stack:
// over the very pt_regs the exit is restoring. On kernels with
// CONFIG_TRACE_IRQFLAGS that window calls __trace_hardirqs_on/off (and on
// 6.12 with CONFIG_RISCV_ISA_V_PREEMPTIVE, riscv_v_context_nesting_end), so
// a probe on anything they reach brings the kernel down, as the kernel's own
// kprobes do there. okprobe refuses those functions (code_graph.hpp).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/code_graph.hpp"
#include "core/code_range.hpp"

namespace okp::riscv {

struct TrapWindowCalls {
	const char *why = nullptr; // nullptr, or why the exit code was not understood
	size_t count = 0;	   // calls found (may exceed capacity)
};

// exit_code: the kernel's ret_from_exception and what follows it, at least
// up to its sret. Collects the targets of the direct calls between the
// first "csrw sscratch, tp" and the sret after it.
TrapWindowCalls sscratch_window_calls(const CodeRange &exit_code, uint64_t *calls, size_t capacity);

inline constexpr const char *trap_window_why = "called by riscv's trap exit after it sets sscratch";

// Fills reached with every function reachable (code_references: calls,
// jumps, taken addresses) from the calls the exit makes in the window,
// stopping at common_stops (resolved with lookup). facts.stops_at is the
// function's own.
TrapPath sscratch_window_functions(const CodeRange &exit_code, uint64_t (*lookup)(const char *name, void *context),
				   const CodeGraphFacts &facts, RangeList &reached);

} // namespace okp::riscv
