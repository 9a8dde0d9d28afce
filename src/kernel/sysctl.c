// SPDX-License-Identifier: GPL-2.0
/*
 * sysctl debug.kprobes_optimization (/proc/sys/debug/kprobes_optimization):
 * 1 lets okprobe optimize probes into jumps, 0 keeps (and turns) every probe
 * into a breakpoint, as the kernel's debug.kprobes-optimization does for
 * kprobes. Values other than 0 and 1 are refused with EINVAL.
 */
#include <linux/sysctl.h>

#include "core/core_api.h"
#include "compat.h"
#include "glue.h"

static int okp_sysctl_optimization(OKP_CTL_TABLE *table, int write,
				   void *buffer, size_t *length, loff_t *position)
{
	int value = okp_core_optimization_enabled();
	struct ctl_table view = *table;
	int ret;

	view.data = &value;
	ret = proc_dointvec_minmax(&view, write, buffer, length, position);
	if (!ret && write) {
		okp_core_set_optimization(value);
		okp_probes_optimization_changed();
	}
	return ret;
}

static struct ctl_table okp_sysctl_table[] = {
	{
		.procname = "kprobes_optimization",
		.maxlen = sizeof(int),
		.mode = 0644,
		.proc_handler = okp_sysctl_optimization,
		.extra1 = SYSCTL_ZERO,
		.extra2 = SYSCTL_ONE,
	},
	OKP_CTL_TABLE_END
};

static struct ctl_table_header *okp_sysctl_header;

int okp_sysctl_init(void)
{
	okp_sysctl_header = register_sysctl("debug", okp_sysctl_table);
	return okp_sysctl_header ? 0 : -ENOMEM;
}

void okp_sysctl_exit(void)
{
	unregister_sysctl_table(okp_sysctl_header);
	okp_sysctl_header = NULL;
}
