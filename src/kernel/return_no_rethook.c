// SPDX-License-Identifier: GPL-2.0
/*
 * Return probes on a kernel without rethook (CONFIG_RETHOOK unset: riscv64
 * 6.1), built instead of return_rethook.c and return_exit_probes.c.
 * okretprobe_register() refuses every probe there with EOPNOTSUPP
 * (src/core/return_plan.cpp), so nothing below ever runs: these are the
 * names the core and return_probes.c link against.
 */
#include <linux/kprobes.h>
#include <linux/ptrace.h>

#include <okprobe.h>

#include "core/core_api.h"
#include "return_probes.h"

struct okp_return_probe *okp_return_create(struct okretprobe *rp)
{
	return NULL;
}

void okp_return_stop(struct okp_return_probe *state)
{
}

void okp_return_destroy(struct okp_return_probe *state)
{
}

int okp_return_register_exits(struct okp_return_probe *state)
{
	return -EOPNOTSUPP;
}

void okp_return_exits_init(void)
{
}

/* The core knows return probes by these handlers: never registered here. */
int notrace okp_glue_return_entry_hit(struct okprobe *probe,
				      struct pt_regs *regs)
{
	return 0;
}
NOKPROBE_SYMBOL(okp_glue_return_entry_hit);

int notrace okp_glue_return_exit_hit(struct okprobe *probe,
				     struct pt_regs *regs)
{
	return 0;
}
NOKPROBE_SYMBOL(okp_glue_return_exit_hit);

void notrace okp_glue_return_exit_missed(struct okprobe *probe)
{
}
NOKPROBE_SYMBOL(okp_glue_return_exit_missed);

void okp_glue_return_exit_optimized(struct okprobe *probe, int optimized)
{
}
