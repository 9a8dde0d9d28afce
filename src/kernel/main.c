// SPDX-License-Identifier: GPL-2.0
/*
 * okprobe.ko: module entry and exit.
 *
 * Start-up order: resolve kernel symbols (nothing runs before every required
 * one is validated), start the C++ core, fill the blacklist, then publish the
 * operator surfaces (sysctl, debugfs). Exit undoes it in reverse.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bug.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

#include <okprobe.h>

#include "core/core_api.h"
#include "glue.h"

static unsigned long kallsyms_lookup_name_address;
module_param_named(kallsyms_lookup_name, kallsyms_lookup_name_address, ulong,
		   0400);
MODULE_PARM_DESC(kallsyms_lookup_name,
		 "Address of kallsyms_lookup_name from /proc/kallsyms, for kernels without CONFIG_KPROBES (set by tools/okprobe-load)");

static char *require_symbol;
module_param(require_symbol, charp, 0400);
MODULE_PARM_DESC(require_symbol,
		 "One more kernel symbol to require at load (tests the resolver's failure path)");

int okprobe_api_version(void)
{
	return OKPROBE_API_VERSION;
}
EXPORT_SYMBOL_GPL(okprobe_api_version);

static void okp_check_leaks(void)
{
	long live = okp_cxx_live_allocations();

	WARN(live, "okprobe: leak: %ld C++ allocations live at unload\n", live);
}

static int __init okp_init(void)
{
	int ret;

	ret = okp_ksyms_resolve(kallsyms_lookup_name_address, require_symbol);
	if (ret)
		return ret;
	ret = okp_core_init();
	if (ret)
		return ret;
	/*
	 * The kernel's jump labels and exception table, indexed before the
	 * blacklist's walk of the trap path, which starts at their targets
	 * too: code that runs only when a key flips or an access faults.
	 */
	okp_jump_labels_init();
	okp_exception_table_init();
	ret = okp_blacklist_init();
	if (ret)
		goto fail_core;
	ret = okp_kernel_kprobes_init();
	if (ret)
		goto fail_core;
	ret = okp_sysctl_init();
	if (ret)
		goto fail_kernel_kprobes;
	ret = okp_probes_init();
	if (ret)
		goto fail_sysctl;
	ret = okp_return_probes_init();
	if (ret)
		goto fail_probes;
	ret = okp_debugfs_init();
	if (ret)
		goto fail_return_probes;
	ret = okp_probe_events_init();
	if (ret)
		goto fail_debugfs;
	pr_info("loaded: %lu blacklisted ranges, %ld core exception entries, optimization %s\n",
		okp_core_blacklist_count(), okp_exception_table_entries(),
		okp_core_optimization_enabled() ? "on" : "off");
	return 0;

fail_debugfs:
	okp_debugfs_exit();
fail_return_probes:
	okp_return_probes_exit();
fail_probes:
	okp_probes_exit();
fail_sysctl:
	okp_sysctl_exit();
fail_kernel_kprobes:
	okp_kernel_kprobes_exit();
fail_core:
	okp_jump_labels_exit();
	okp_core_exit();
	okp_check_leaks();
	return ret;
}

static void __exit okp_exit(void)
{
	okp_probe_events_exit();
	okp_debugfs_exit();
	okp_cover_exit();
	okp_return_probes_exit();
	okp_probes_exit();
	okp_sysctl_exit();
	okp_kernel_kprobes_exit();
	okp_jump_labels_exit();
	okp_core_exit();
	okp_check_leaks();
	pr_info("unloaded\n");
}

module_init(okp_init);
module_exit(okp_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("okprobe: fast, safe dynamic kernel probes");
