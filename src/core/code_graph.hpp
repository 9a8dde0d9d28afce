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
	void *context;
};

// The architecture's scanner: the distinct addresses outside function that
// its code refers to (may exceed capacity: the count is returned).
using ReferenceScanner = size_t (*)(const CodeRange &function, uint64_t *targets, size_t capacity);

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

} // namespace okp
