// SPDX-License-Identifier: GPL-2.0
// The host tests' okp_glue_assert_failed (core/assert.hpp): where the
// kernel warns and goes on, a test fails loudly, with the same line.
#include "core/glue_services.h"

#include <cstdio>
#include <cstdlib>

extern "C" void okp_glue_assert_failed(const char *expression, const char *file, int line)
{
	std::fprintf(stderr, "okprobe: assertion failed: %s at %s:%d\n", expression, file, line);
	std::fflush(stderr);
	std::abort();
}
