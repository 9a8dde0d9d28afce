// SPDX-License-Identifier: GPL-2.0
/*
 * Jump labels, as the jump planners need them: a disabled jump label is a
 * nop in the text, so decoding a function cannot see where it would jump
 * once its key flips. The jump tables can: the core kernel's (its bounds
 * are linker symbols, resolved by name and validated by content at load)
 * and each module's jump_entries.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jump_label.h>
#include <linux/kernel.h>
#include <linux/module.h>

#include "core/core_api.h"
#include "glue.h"

/*
 * The core kernel's jump table: nearly every entry's code must be core
 * kernel text (the others are in init and exit text, which have no symbol
 * of their own to check against). NULL when that fails.
 */
static struct jump_entry *okp_core_jump_table, *okp_core_jump_table_end;

void okp_jump_labels_init(void)
{
	bool (*core_text)(unsigned long address) =
		(void *)okp_ksyms.core_kernel_text;
	unsigned long start = okp_ksyms_lookup("__start___jump_table");
	unsigned long stop = okp_ksyms_lookup("__stop___jump_table");
	unsigned long entries, in_text = 0;
	struct jump_entry *entry;

	if (!IS_ENABLED(CONFIG_JUMP_LABEL))
		return;
	if (!start || stop <= start ||
	    (stop - start) % sizeof(struct jump_entry)) {
		pr_warn("no core jump table found: core functions with jump labels stay breakpoints\n");
		return;
	}
	entries = (stop - start) / sizeof(struct jump_entry);
	for (entry = (void *)start; entry < (struct jump_entry *)stop; entry++)
		in_text += core_text(jump_entry_code(entry));
	if (in_text * 10 < entries * 9) {
		pr_warn("the core jump table has only %lu of %lu entries in kernel text: core functions with jump labels stay breakpoints\n",
			in_text, entries);
		return;
	}
	okp_core_jump_table = (void *)start;
	okp_core_jump_table_end = (void *)stop;
}

/* What to collect from one jump table. */
struct okp_jump_label_query {
	unsigned long start, stop;	/* the range asked about */
	bool by_target;			/* match targets, else code */
	struct okp_jump_label *found;	/* NULL: count only */
	unsigned long capacity, count;
};

static void okp_scan_jump_table(struct jump_entry *entry,
				struct jump_entry *end,
				struct okp_jump_label_query *query)
{
	unsigned long code, target, match;

	for (; entry < end; entry++) {
		code = jump_entry_code(entry);
		target = jump_entry_target(entry);
		match = query->by_target ? target : code;
		if (match < query->start || match >= query->stop)
			continue;
		if (query->found && query->count < query->capacity) {
			query->found[query->count].code = code;
			query->found[query->count].target = target;
		}
		query->count++;
	}
}

/*
 * Runs query over the jump table of the object (core kernel or module)
 * holding query->start. 0, or -1 when the core table is unknown and
 * [function, function_end) has jump labels.
 */
static int okp_query_jump_labels(struct okp_jump_label_query *query,
				 unsigned long function,
				 unsigned long function_end)
{
	struct module *(*module_text)(unsigned long address) =
		(void *)okp_ksyms.__module_text_address;
	bool (*core_text)(unsigned long address) =
		(void *)okp_ksyms.core_kernel_text;
	int (*reserved)(void *start, void *end) =
		(void *)okp_ksyms.jump_label_text_reserved;
	struct module *mod;

	if (!IS_ENABLED(CONFIG_JUMP_LABEL))
		return 0;
	if (core_text(query->start)) {
		if (!okp_core_jump_table)
			return reserved((void *)function,
					(void *)(function_end - 1)) ? -1 : 0;
		okp_scan_jump_table(okp_core_jump_table,
				    okp_core_jump_table_end, query);
		return 0;
	}
#ifdef CONFIG_JUMP_LABEL
	/* The module cannot finish going: its notifier waits for our mutex. */
	preempt_disable();
	mod = module_text(query->start);
	if (mod)
		okp_scan_jump_table(mod->jump_entries,
				    mod->jump_entries + mod->num_jump_entries,
				    query);
	preempt_enable();
#endif
	return 0;
}

int okp_glue_jump_label_target_within(unsigned long start, unsigned long stop,
				      unsigned long function,
				      unsigned long function_end)
{
	struct okp_jump_label_query query = {
		.start = start, .stop = stop, .by_target = true,
	};

	if (okp_query_jump_labels(&query, function, function_end))
		return -1;
	return query.count != 0;
}

long okp_glue_jump_labels_within(unsigned long start, unsigned long end,
				 struct okp_jump_label *found,
				 unsigned long capacity)
{
	struct okp_jump_label_query query = {
		.start = start, .stop = end, .found = found,
		.capacity = capacity,
	};

	if (okp_query_jump_labels(&query, start, end))
		return -1;
	return query.count;
}

const char *okp_text_sites_reserved(unsigned long address,
				    unsigned long length, unsigned long step,
				    const char *(*more)(void *start, void *end))
{
	unsigned long (*ftrace_location)(unsigned long ip) =
		(void *)okp_ksyms.ftrace_location;
	int (*jump_label)(void *start, void *end) =
		(void *)okp_ksyms.jump_label_text_reserved;
	void (*jump_label_lock)(void) = (void *)okp_ksyms.jump_label_lock;
	void (*jump_label_unlock)(void) = (void *)okp_ksyms.jump_label_unlock;
	void *start = (void *)address, *end = (void *)(address + length - 1);
	const char *why = NULL;
	unsigned long i;

	for (i = 0; ftrace_location && i < length; i += step)
		if (ftrace_location(address + i))
			return "the address is an ftrace call site";
	/*
	 * As check_kprobe_address_safe(): jump_label_lock keeps a module's
	 * jump entries (and static call sites) from changing under the check.
	 */
	if (jump_label_lock)
		jump_label_lock();
	if (jump_label && jump_label(start, end))
		why = "the address is a jump label site";
	else if (more)
		why = more(start, end);
	if (jump_label_unlock)
		jump_label_unlock();
	return why;
}
