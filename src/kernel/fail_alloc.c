// SPDX-License-Identifier: GPL-2.0
/*
 * okprobe's own fault-injection point, the kernel's way (as
 * fail_make_request or mmc's fail_request do it): on kernels with
 * CONFIG_FAULT_INJECTION_DEBUG_FS, /sys/kernel/debug/okprobe/fail_alloc/
 * holds a fault_attr (probability, interval, times, space, task-filter,
 * verbose: the kernel's Documentation/fault-injection/) that the
 * allocations okprobe makes for itself ask before allocating: the C++
 * core's (operator new, okp_glue_alloc) and the executable pages of slots
 * and detours. Each asks with size 1, so "space" counts allocations: with
 * space N, times 1 and probability 100 the Nth allocation fails.
 *
 * It is how the suite fails each allocation of the jump optimizer, which
 * runs in a kworker that no task's fail-nth reaches. In a task's own calls
 * (registration, events, unregistration) the suite uses the task's
 * fail-nth with failslab instead, which counts these points too and also
 * every kmalloc of the C glue and of the kernel functions okprobe calls.
 */
#include <linux/debugfs.h>
#include <linux/fault-inject.h>

#include "glue.h"

#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS

static DECLARE_FAULT_ATTR(okp_fail_alloc_attr);

bool okp_fail_alloc(void)
{
	return should_fail(&okp_fail_alloc_attr, 1);
}

void okp_fail_alloc_init(struct dentry *okprobe_dir)
{
	/* Quiet by default: a sweep fails hundreds of allocations. */
	okp_fail_alloc_attr.verbose = 0;
	fault_create_debugfs_attr("fail_alloc", okprobe_dir,
				  &okp_fail_alloc_attr);
}

#else

bool okp_fail_alloc(void)
{
	return false;
}

void okp_fail_alloc_init(struct dentry *okprobe_dir)
{
}

#endif
