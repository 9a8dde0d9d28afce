// SPDX-License-Identifier: GPL-2.0
/*
 * The address ranges okprobe refuses to probe, shown in debugfs
 * okprobe/blacklist: okprobe's own module, and the kernel text sections the
 * kernel's kprobes refuse as a whole (entry, noinstr, kprobes, irqentry).
 * Their bounds are linker markers, not exported: resolved like every other
 * unexported symbol, and left out when this kernel has no such section.
 * Then the kernel's NOKPROBE_SYMBOL() list as it stands at load; functions
 * added to it later (modules loaded after okprobe) are refused all the same
 * at registration, through within_kprobe_blacklist().
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>

#include "core/core_api.h"
#include "compat.h"
#include "glue.h"

struct okp_section {
	const char *start_symbol;
	const char *end_symbol;
	const char *why;
};

static const struct okp_section okp_refused_sections[] = {
	{ "__entry_text_start", "__entry_text_end", "entry text" },
	{ "__noinstr_text_start", "__noinstr_text_end", "noinstr text" },
	{ "__kprobes_text_start", "__kprobes_text_end", "kprobes text" },
	{ "__irqentry_text_start", "__irqentry_text_end", "irqentry text" },
	{ "__softirqentry_text_start", "__softirqentry_text_end",
	  "softirqentry text" },
};

static int okp_blacklist_own_module(void)
{
	struct okp_range text = okp_module_text(THIS_MODULE);

	return okp_core_blacklist_add(text.start, text.end, "okprobe itself");
}

static int okp_blacklist_section(const struct okp_section *section)
{
	unsigned long start = okp_ksyms_resolve_optional(section->start_symbol);
	unsigned long end = okp_ksyms_resolve_optional(section->end_symbol);

	if (!start || !end || end <= start) {
		pr_debug("no %s section in this kernel\n", section->why);
		return 0;
	}
	return okp_core_blacklist_add(start, end, section->why);
}

#ifdef CONFIG_KPROBES
/*
 * A copy of kernel/kprobes.c's kprobe_blacklist, walked under its
 * kprobe_mutex (both static: resolved, and skipped when absent).
 */
static int okp_blacklist_nokprobe_symbols(void)
{
	struct list_head *list =
		(void *)okp_ksyms_resolve_optional("kprobe_blacklist");
	struct mutex *lock = (void *)okp_ksyms_resolve_optional("kprobe_mutex");
	struct kprobe_blacklist_entry *entry;
	int ret = 0;

	if (!list || !lock) {
		pr_info("the kernel's kprobe blacklist is not listed: kprobe_blacklist or kprobe_mutex not found\n");
		return 0;
	}
	mutex_lock(lock);
	list_for_each_entry(entry, list, list) {
		if (entry->end_addr <= entry->start_addr)
			continue;
		ret = okp_core_blacklist_add(entry->start_addr, entry->end_addr,
					     "NOKPROBE_SYMBOL");
		if (ret)
			break;
	}
	mutex_unlock(lock);
	return ret;
}
#else
static int okp_blacklist_nokprobe_symbols(void)
{
	return 0;
}
#endif

/*
 * What the arch's trap path reaches, where a breakpoint would re-enter the
 * trap before okprobe's handler or land on a frame that is not the
 * kernel's: found by walking the kernel's own code (okp::arch::trap_path_functions).
 */
static int okp_blacklist_trap_path(void)
{
	unsigned long culprit;
	const char *why;
	long refused = okp_core_refuse_trap_path(&why, &culprit);

	if (refused < 0) {
		pr_err("cannot tell what the breakpoint trap path reaches: %s (%pS)\n",
		       why, (void *)culprit);
		return refused;
	}
	pr_info("refusing %ld functions on the breakpoint trap path\n", refused);
	return 0;
}

int okp_blacklist_init(void)
{
	int i, ret;

	if (okp_blacklist_own_module())
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(okp_refused_sections); i++)
		if (okp_blacklist_section(&okp_refused_sections[i]))
			return -ENOMEM;
	if (okp_blacklist_nokprobe_symbols())
		return -ENOMEM;
	ret = okp_arch_blacklist();
	return ret ? ret : okp_blacklist_trap_path();
}
