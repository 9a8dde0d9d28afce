// SPDX-License-Identifier: GPL-2.0
#include "x86/trap_path.hpp"

#include "x86/jump_optimization.hpp"

namespace okp::x86 {
namespace {

// Thunks{}: a jump to the return thunk or a call of an indirect thunk is an
// edge like any other, so the thunks themselves are reached and refused
// (the handler returns through them). Under call depth tracking the boot
// aims every call at the callee's padding (its accounting thunk), which
// falls through into the callee: followed.
size_t calls_jumps_and_callbacks(const CodeRange &function, const HiddenEntries &, uint64_t *targets, size_t capacity)
{
	return code_references(function, Thunks{},
			       references::jumps | references::calls | references::taken_address |
				       references::falls_through,
			       targets, capacity);
}

} // namespace

TrapPath int3_path_functions(const CodeGraphFacts &facts, uint64_t (*lookup)(const char *name, void *context),
			     RangeList &reached)
{
	// Reached with interrupts off on the path, where it only defers its
	// work: refused, not followed.
	static constexpr const char *x86_stops[] = {"rcu_read_unlock_special"};
	static constexpr const char *x86_skips[] = {
		// Called by ct_nmi_enter() only outside NMI context; int3 enters
		// as an NMI (irqentry_nmi_enter raises the NMI count first).
		"__rcu_irq_enter_check_tick",
		// An int3 from user mode: what follows runs in process context.
		"do_trap",
		"irqentry_enter_from_user_mode",
		"irqentry_exit_to_user_mode",
		// The same where exc_int3 has them inlined (7.x): the user-mode
		// entry's and exit's work (context tracking, deferred RCU and
		// hrtimer wakeups, the exit-to-user work loop, signals, the I/O
		// bitmap and FPU state the exit restores), which the walk,
		// blind to which branch a call sits on, would otherwise follow
		// from exc_int3 into the scheduler and the allocators. By the
		// functions they call: arch_exit_to_user_mode_prepare() is a
		// static inline, out of line in many copies of one name.
		"do_int3_user",
		"__ct_user_enter",
		"__ct_user_exit",
		"rcu_nocb_flush_deferred_wakeup",
		"__hrtimer_rearm_deferred",
		"exit_to_user_mode_loop",
		"native_tss_update_io_bitmap",
		"switch_fpu_return",
		// SRSO's alias thunks, reached from the return thunk's
		// alternatives in vmlinux's bytes (on TCG the loader patches
		// them out of the running text). They sit at fixed alignments
		// far from the next symbol, so kallsyms gives them a size up to
		// _etext, past the walk's limits: not followed here; the glue
		// refuses every return thunk by name (okp_arch_blacklist).
		"srso_alias_untrain_ret",
		"srso_alias_return_thunk",
		"srso_alias_safe_ret",
	};
	const TrapPathStops extra = {{x86_stops, sizeof(x86_stops) / sizeof(x86_stops[0])},
				     {x86_skips, sizeof(x86_skips) / sizeof(x86_skips[0])}};
	const uint64_t root = lookup("exc_int3", facts.context);
	if (!root) {
		TrapPath result;
		result.why = "no exc_int3 in this kernel";
		return result;
	}
	return reach_trap_path(&root, 1, extra, lookup, facts, calls_jumps_and_callbacks, reached, int3_path_why);
}

} // namespace okp::x86
