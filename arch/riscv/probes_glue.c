// SPDX-License-Identifier: GPL-2.0
/*
 * riscv64 breakpoint probes are not implemented yet (issue 5): the API is
 * exported so that client modules load on every architecture, and a
 * registration fails with EOPNOTSUPP and a log line saying so. debugfs
 * okprobe/enabled keeps its switch, with no probe to arm.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/errno.h>
#include <linux/module.h>

#include <okprobe.h>

#include "kernel/glue.h"

static int okp_riscv_probes_enabled = 1;

int okp_probes_enabled(void)
{
	return READ_ONCE(okp_riscv_probes_enabled);
}

void okp_probes_set_enabled(int enabled)
{
	WRITE_ONCE(okp_riscv_probes_enabled, !!enabled);
}

int okprobe_register(struct okprobe *probe)
{
	pr_err("cannot probe %s+0x%lx: breakpoint probes are not implemented on riscv yet\n",
	       probe->symbol_name ?: "", probe->offset);
	return -EOPNOTSUPP;
}
EXPORT_SYMBOL_GPL(okprobe_register);

int okprobe_register_many(struct okprobe **probes, int count)
{
	return count > 0 ? okprobe_register(probes[0]) : -EINVAL;
}
EXPORT_SYMBOL_GPL(okprobe_register_many);

void okprobe_unregister(struct okprobe *probe)
{
}
EXPORT_SYMBOL_GPL(okprobe_unregister);

void okprobe_unregister_many(struct okprobe **probes, int count)
{
}
EXPORT_SYMBOL_GPL(okprobe_unregister_many);

int okprobe_enable(struct okprobe *probe)
{
	return -EINVAL;
}
EXPORT_SYMBOL_GPL(okprobe_enable);

int okprobe_disable(struct okprobe *probe)
{
	return -EINVAL;
}
EXPORT_SYMBOL_GPL(okprobe_disable);
