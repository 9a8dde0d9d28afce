// SPDX-License-Identifier: GPL-2.0
/*
 * riscv64 breakpoint probes are not implemented yet (issue 5): the API is
 * exported so that client modules load on every architecture, and a
 * registration fails with EOPNOTSUPP and a log line saying so.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/errno.h>
#include <linux/module.h>

#include <okprobe.h>

int okprobe_register(struct okprobe *probe)
{
	pr_err("cannot probe %s+0x%lx: breakpoint probes are not implemented on riscv yet\n",
	       probe->symbol_name ?: "", probe->offset);
	return -EOPNOTSUPP;
}
EXPORT_SYMBOL_GPL(okprobe_register);

void okprobe_unregister(struct okprobe *probe)
{
}
EXPORT_SYMBOL_GPL(okprobe_unregister);
