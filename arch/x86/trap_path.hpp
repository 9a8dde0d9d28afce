// SPDX-License-Identifier: GPL-2.0
// Where x86's int3 trap cannot take a breakpoint.
//
// exc_int3 runs poke_int3_handler, kprobe_int3_handler, then the die
// notifiers (okprobe's among them, inside atomic_notifier_call_chain's
// rcu_read_lock()) and irqentry_nmi_exit. A breakpoint anywhere there
// re-enters exc_int3 before okprobe's handler runs, and again, forever: on
// a PREEMPT_RCU kernel (Debian's) a probe on __rcu_read_lock would. The
// kernel's own kprobes are handled before the notifiers, so its blacklist
// does not cover what only the notifier path calls.
//
// The other die notifiers are called through data the walk cannot follow:
// okprobe's goes first in the chain (arch/x86/probes_glue.c), so none of
// them runs before okprobe's handler on an int3 of okprobe's.
#pragma once

#include "core/code_graph.hpp"

namespace okp::x86 {

inline constexpr const char *int3_path_why = "on x86's int3 path before okprobe's handler";

// Fills reached with every function reachable from exc_int3 (calls, jumps,
// taken addresses), stopping at common_stops and at x86's own: the
// user-mode branch and what defers its work with interrupts off.
TrapPath int3_path_functions(const CodeGraphFacts &facts, uint64_t (*lookup)(const char *name, void *context),
			     RangeList &reached);

} // namespace okp::x86
