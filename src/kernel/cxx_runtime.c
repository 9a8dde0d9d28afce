// SPDX-License-Identifier: GPL-2.0
/*
 * What the C++ core's runtime (src/core/runtime.cpp) needs from the kernel:
 * allocation for operator new/delete, a way to die loudly, and a way to
 * warn of a broken precondition (core/assert.hpp) without dying.
 *
 * Live allocations are counted so that module exit can report a leak with a
 * WARN, which the test harness treats as a failure.
 */
#include <linux/atomic.h>
#include <linux/bug.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "core/core_api.h"
#include "glue.h"

static atomic_long_t okp_live_allocations = ATOMIC_LONG_INIT(0);

/*
 * kvmalloc: a batch's arrays (10,000 probes' patches) may be larger than
 * kmalloc serves without warning; only the writer allocates (may sleep).
 */
void *okp_glue_alloc(unsigned long size)
{
	void *pointer;

	if (okp_fail_alloc())
		return NULL;
	pointer = kvmalloc(size, GFP_KERNEL);

	if (pointer)
		atomic_long_inc(&okp_live_allocations);
	return pointer;
}

void okp_glue_free(void *pointer)
{
	if (!pointer)
		return;
	atomic_long_dec(&okp_live_allocations);
	kvfree(pointer);
}

void okp_glue_fatal(const char *message)
{
	panic("okprobe: %s\n", message);
}

/*
 * A bug in okprobe, not the client's: warned with a backtrace (which the
 * test harness counts as a failure), and okprobe carries on. The core's
 * OKP_ASSERT calls this once per call site, so no _ONCE here.
 */
void okp_glue_assert_failed(const char *expression, const char *file, int line)
{
	WARN(1, "okprobe: assertion failed: %s at %s:%d\n", expression, file,
	     line);
}

long okp_cxx_live_allocations(void)
{
	return atomic_long_read(&okp_live_allocations);
}
