// SPDX-License-Identifier: GPL-2.0
// Which functions a piece of kernel code can reach: a walk over the direct
// references (calls, jumps, taken code addresses) that each architecture's
// decoder finds in a function's bytes.
//
// Used to refuse probes on what runs where a breakpoint cannot be taken
// (riscv's trap exit after sscratch is set): every function reached from
// that code is refused. Indirect calls through data (notifier chains,
// tracepoint probes) are not followed; the walk is a lower bound on what
// runs there, and Documentation/design.md says which holes remain.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "code_range.hpp"
#include "range_list.hpp"

namespace okp {

struct CodeGraphFacts {
	// The function containing address (text only): start and size.
	bool (*function_of)(uint64_t address, uint64_t *start, uint64_t *size, void *context);
	size_t (*read_text)(uint64_t address, uint8_t *buffer, size_t size, void *context);
	// nullptr, or why the walk goes no further than the function starting
	// at function: it is reached (and so refused), what it calls is not
	// followed.
	const char *(*stops_at)(uint64_t function, void *context);
	// Whether the walk leaves the function starting at function out
	// altogether: neither reached nor followed (may be nullptr).
	bool (*skips)(uint64_t function, void *context);
	// Where else than at its start execution may enter code in range:
	// the targets of its jump labels (a nop now, a jump once the key
	// flips) and its exception fixups. How many, at most capacity
	// written; -1 when they cannot be known. May be nullptr (unknown).
	long (*hidden_targets)(const CodeRange &range, uint64_t *targets, size_t capacity, void *context);
	void *context;
};

// The hidden entries of the function being scanned (hidden_targets'),
// inside or outside it; known false when they could not be had, and an
// arch's scanner then reads the function's every byte as code.
struct HiddenEntries {
	const uint64_t *addresses = nullptr;
	size_t count = 0;
	bool known = false;
};
constexpr size_t max_hidden_entries = 64;

// What an arch's code_references collects (a mask).
namespace references {
constexpr unsigned jumps = 1;	      // unconditional and conditional jumps (tail calls, .cold pieces)
constexpr unsigned calls = 2;	      // direct calls
constexpr unsigned taken_address = 4; // code addresses the code computes (callbacks)
// The code right after a function that is all straight-line code falling
// through its end: what padding before a function runs into (x86's
// __pfx_ nops, or call depth tracking's accounting, which the boot aims
// calls at).
constexpr unsigned falls_through = 8;
} // namespace references

// What each arch's code_references fills: the distinct addresses outside
// function, in order of appearance, at most capacity of them written;
// count goes on past capacity so that the caller sees it.
struct ExternalReferences {
	const CodeRange &function;
	uint64_t *targets;
	size_t capacity;
	size_t count = 0;

	void add(uint64_t target)
	{
		if (target >= function.address && target < function.address + function.size)
			return;
		for (size_t i = 0; i < count && i < capacity; ++i)
			if (targets[i] == target)
				return;
		if (count < capacity)
			targets[count] = target;
		++count;
	}
};

// The architecture's scanner: the distinct addresses outside function that
// its code refers to (may exceed capacity: the count is returned). entries:
// where else the function may be entered (a scanner that follows its
// control flow starts there too).
using ReferenceScanner = size_t (*)(const CodeRange &function, const HiddenEntries &entries, uint64_t *targets,
				    size_t capacity);

struct CodeGraphLimits {
	size_t max_functions = 4096;
	size_t max_function_size = 256 * 1024;
	size_t max_references = 512; // of one function
};

struct ReachResult {
	int error = 0;	      // 0, ENOMEM, E2BIG (a limit) or EIO (unreadable text)
	uint64_t culprit = 0; // the function that hit the limit or the failure
};

// Fills reached (empty at the start, owned by the walk until it returns)
// with every function reachable from roots (function addresses or any
// address inside one), one range per function with why. A root
// outside any function is an error (EINVAL): the caller's roots come from
// real code. Allocates; process context.
ReachResult reach_functions(const uint64_t *roots, size_t root_count, const CodeGraphFacts &facts,
			    ReferenceScanner scan, RangeList &reached, const char *why,
			    const CodeGraphLimits &limits = CodeGraphLimits{});

// Where every arch's walk of a trap path stops. The scheduler's entries
// are reached (interrupts are off all through a trap path, so they return
// at once): refused, not followed. The bug reporters (die is an oops) run
// on a trap path only once the kernel is failing: left out, neither
// refused nor followed, or printk's consoles, the scheduler and do_exit
// would take in half the kernel. UBSAN's handlers (Debian's 7.x kernels
// check array bounds and shifts) are such reporters: called only when a
// check fails.
inline constexpr const char *common_stops[] = {"preempt_schedule", "preempt_schedule_notrace"};
inline constexpr const char *common_skips[] = {
	"_printk",
	"_printk_deferred",
	"vprintk",
	"vprintk_emit",
	"__warn_printk",
	"report_bug",
	"panic",
	"dump_stack",
	"dump_stack_lvl",
	"die",
	"__ubsan_handle_out_of_bounds",
	"__ubsan_handle_shift_out_of_bounds",
};

struct TrapPath {
	const char *why = nullptr; // nullptr, or why the walk failed
	ReachResult walk;
};

// Names of functions, for reach_trap_path.
struct NameList {
	const char *const *names = nullptr;
	size_t count = 0;
};

// What an arch adds to the common stops and skips.
struct TrapPathStops {
	NameList stops, skips;
};

// reach_functions from roots, stopping at common_stops and extra.stops,
// leaving out common_skips and extra.skips (names resolved with lookup;
// facts.stops_at and facts.skips are this function's own).
TrapPath reach_trap_path(const uint64_t *roots, size_t root_count, const TrapPathStops &extra,
			 uint64_t (*lookup)(const char *name, void *context), const CodeGraphFacts &facts,
			 ReferenceScanner scan, RangeList &reached, const char *why);

} // namespace okp
