// SPDX-License-Identifier: GPL-2.0
// OKP_ASSERT(condition): a precondition of okprobe's own code, checked.
//
// Why: a broken precondition is a bug in okprobe (its glue or its core
// called the core wrongly), never a client's mistake: a client's bad input
// gets an errno and a reason (Documentation/api.md), not an assertion. In
// the kernel such a bug must not take the machine down with it: BUG() kills
// the task holding okprobe's mutex (or the kernel, with panic_on_oops) for a
// check the code after it may well survive. So okprobe warns as WARN_ONCE()
// does, with the expression, file and line, once per call site, and carries
// on (okp_glue_assert_failed, src/kernel/cxx_runtime.c). The host tests link
// their own okp_glue_assert_failed (selftests/host/assert_glue.cpp), which
// prints the same line and aborts: a broken precondition fails the test that
// broke it, loudly.
//
// condition is evaluated exactly once; when it holds, the cost is that
// test, predicted true. Not for the hit path (OKP_HANDLER_PATH functions
// and what they call): the glue's warning is neither notrace nor NOKPROBE,
// and tools/check-handler-paths refuses a module whose handlers reach it.
#pragma once

#include "core/glue_services.h"

#define OKP_ASSERT(condition)                                                                                          \
	do {                                                                                                           \
		if (__builtin_expect(!(condition), 0)) {                                                               \
			static bool okp_assert_reported;                                                               \
			if (!okp_assert_reported) {                                                                    \
				okp_assert_reported = true;                                                            \
				okp_glue_assert_failed(#condition, __FILE__, __LINE__);                                \
			}                                                                                              \
		}                                                                                                      \
	} while (0)
