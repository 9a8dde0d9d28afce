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
#include <linux/mm.h>
#include <linux/sort.h>

#include "core/core_api.h"
#include "arch_glue.h"
#include "glue.h"
#include "resolved_calls.h"

/*
 * The core kernel's jump table: nearly every entry's code must be core
 * kernel text (the others are in init and exit text, which have no symbol
 * of their own to check against). NULL when that fails.
 */
static struct jump_entry *okp_core_jump_table, *okp_core_jump_table_end;

/*
 * The core table's entries, sorted by code and by target (NULL when out
 * of memory: the table is walked then). The kernel sorts its table by key,
 * and 6.1's jump_label_text_reserved() walks all of it, decoding each
 * entry's instruction on x86: over a millisecond per question under QEMU,
 * asked three times per registration. The core table never changes after
 * boot (init entries are only marked), so the order holds.
 */
static struct jump_entry **okp_core_by_code, **okp_core_by_target;
static unsigned long okp_core_jump_count;

static int okp_by_code(const void *a, const void *b)
{
	unsigned long x = jump_entry_code(*(struct jump_entry **)a);
	unsigned long y = jump_entry_code(*(struct jump_entry **)b);

	return x < y ? -1 : x > y;
}

static int okp_by_target(const void *a, const void *b)
{
	unsigned long x = jump_entry_target(*(struct jump_entry **)a);
	unsigned long y = jump_entry_target(*(struct jump_entry **)b);

	return x < y ? -1 : x > y;
}

static void okp_index_core_jump_table(void)
{
	unsigned long count = okp_core_jump_table_end - okp_core_jump_table;
	unsigned long i;

	okp_core_by_code = kvmalloc_array(count, sizeof(void *), GFP_KERNEL);
	okp_core_by_target = kvmalloc_array(count, sizeof(void *), GFP_KERNEL);
	if (!okp_core_by_code || !okp_core_by_target) {
		okp_jump_labels_exit();
		return;
	}
	for (i = 0; i < count; i++)
		okp_core_by_code[i] = okp_core_by_target[i] =
			&okp_core_jump_table[i];
	sort(okp_core_by_code, count, sizeof(void *), okp_by_code, NULL);
	sort(okp_core_by_target, count, sizeof(void *), okp_by_target, NULL);
	okp_core_jump_count = count;
}

void okp_jump_labels_exit(void)
{
	kvfree(okp_core_by_code);
	kvfree(okp_core_by_target);
	okp_core_by_code = okp_core_by_target = NULL;
	okp_core_jump_count = 0;
}

/* The first index of sorted whose code (or target) is >= address. */
static unsigned long okp_first_at_or_after(struct jump_entry **sorted,
					   bool by_target,
					   unsigned long address)
{
	unsigned long low = 0, high = okp_core_jump_count;

	while (low < high) {
		unsigned long middle = low + (high - low) / 2;
		struct jump_entry *entry = sorted[middle];
		unsigned long at = by_target ? jump_entry_target(entry) :
					       jump_entry_code(entry);

		if (at < address)
			low = middle + 1;
		else
			high = middle;
	}
	return low;
}

void okp_jump_labels_init(void)
{
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
		in_text += okp_call(core_kernel_text)(jump_entry_code(entry));
	if (in_text * 10 < entries * 9) {
		pr_warn("the core jump table has only %lu of %lu entries in kernel text: core functions with jump labels stay breakpoints\n",
			in_text, entries);
		return;
	}
	okp_core_jump_table = (void *)start;
	okp_core_jump_table_end = (void *)stop;
	okp_index_core_jump_table();
}

/* What to collect from one jump table. */
struct okp_jump_label_query {
	unsigned long start, stop;	/* the range asked about */
	bool by_target;			/* match targets, else code */
	struct okp_jump_label *found;	/* NULL: count only */
	unsigned long capacity, count;
};

static void okp_collect_jump_label(struct jump_entry *entry,
				   struct okp_jump_label_query *query)
{
	if (query->found && query->count < query->capacity) {
		query->found[query->count].code = jump_entry_code(entry);
		query->found[query->count].target = jump_entry_target(entry);
	}
	query->count++;
}

static void okp_scan_jump_table(struct jump_entry *entry,
				struct jump_entry *end,
				struct okp_jump_label_query *query)
{
	unsigned long match;

	for (; entry < end; entry++) {
		match = query->by_target ? jump_entry_target(entry) :
					   jump_entry_code(entry);
		if (match >= query->start && match < query->stop)
			okp_collect_jump_label(entry, query);
	}
}

/* okp_scan_jump_table() over the core table, through its index. */
static void okp_search_core_jump_table(struct okp_jump_label_query *query)
{
	struct jump_entry **sorted = query->by_target ? okp_core_by_target :
							okp_core_by_code;
	unsigned long i = okp_first_at_or_after(sorted, query->by_target,
						query->start);

	for (; i < okp_core_jump_count; i++) {
		struct jump_entry *entry = sorted[i];
		unsigned long at = query->by_target ? jump_entry_target(entry) :
						      jump_entry_code(entry);

		if (at >= query->stop)
			break;
		okp_collect_jump_label(entry, query);
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
	struct module *mod;

	if (!IS_ENABLED(CONFIG_JUMP_LABEL))
		return 0;
	if (okp_call(core_kernel_text)(query->start)) {
		if (!okp_core_jump_table)
			return okp_call(jump_label_text_reserved)(
				       (void *)function,
				       (void *)(function_end - 1)) ? -1 : 0;
		if (okp_core_jump_count)
			okp_search_core_jump_table(query);
		else
			okp_scan_jump_table(okp_core_jump_table,
					    okp_core_jump_table_end, query);
		return 0;
	}
#ifdef CONFIG_JUMP_LABEL
	/* The module cannot finish going: its notifier waits for our mutex. */
	preempt_disable();
	mod = okp_call(__module_text_address)(query->start);
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

/*
 * jump_label_text_reserved() for [address, address + length): whether a
 * jump label's instruction overlaps it. Core text is answered from the
 * index; module text from the module's own table; without an index, the
 * kernel's function (jump_label_lock held).
 */
static bool okp_jump_label_sites_within(unsigned long address,
					unsigned long length)
{
	struct okp_jump_label_query query = {
		.start = address > OKP_MAX_JUMP_LABEL_SIZE ?
				 address - OKP_MAX_JUMP_LABEL_SIZE + 1 : 0,
		.stop = address + length,
	};
	struct jump_label_site_found {
		struct okp_jump_label labels[8];
	} found;
	unsigned long i;
	bool core;

	if (!IS_ENABLED(CONFIG_JUMP_LABEL))
		return false;
	core = okp_call(core_kernel_text)(address);
	if (core && !okp_core_jump_count)
		return okp_resolved(jump_label_text_reserved) &&
		       okp_call(jump_label_text_reserved)((void *)address,
				(void *)(address + length - 1));
	query.found = found.labels;
	query.capacity = ARRAY_SIZE(found.labels);
	if (okp_query_jump_labels(&query, address, address + length))
		return true;
	/* More than fit: some overlap for sure, as nearly all start inside. */
	if (query.count > query.capacity)
		return true;
	for (i = 0; i < query.count; i++)
		if (found.labels[i].code +
		    okp_arch_jump_label_size(found.labels[i].code) > address)
			return true;
	return false;
}

const char *okp_text_sites_reserved(unsigned long address,
				    unsigned long length,
				    const char *(*more)(void *start, void *end))
{
	void *start = (void *)address, *end = (void *)(address + length - 1);
	const char *why = NULL;

	/*
	 * ftrace_location() also maps a function's first byte to its
	 * __fentry__ site (sym+0 is ftrace's, as for kprobes); one binary
	 * search by overlap answers the other bytes. Asking
	 * ftrace_location() byte by byte cost a kallsyms lookup per byte.
	 */
	if (okp_resolved(ftrace_location) &&
	    (okp_call(ftrace_location)(address) ||
	     okp_call(ftrace_location_range)(address, address + length - 1)))
		return "the address is an ftrace call site";
	/*
	 * As check_kprobe_address_safe(): jump_label_lock keeps a module's
	 * jump entries (and static call sites) from changing under the check.
	 */
	if (okp_resolved(jump_label_lock))
		okp_call(jump_label_lock)();
	if (okp_jump_label_sites_within(address, length))
		why = "the address is a jump label site";
	else if (more)
		why = more(start, end);
	if (okp_resolved(jump_label_unlock))
		okp_call(jump_label_unlock)();
	return why;
}
