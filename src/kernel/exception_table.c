// SPDX-License-Identifier: GPL-2.0
/*
 * Exception-table entries by range, as the jump planners ask: "which
 * instructions of this function have a fixup?". The kernel only answers
 * one address at a time (search_exception_tables(), a binary search of the
 * core table, then of the module's, then BPF's): asked for every
 * instruction of a function, that was a few hundred searches per
 * registration under QEMU. The tables are sorted by instruction address
 * (the core one at build time or at boot, a module's when it loads), so
 * one binary search finds the first entry of a range and the rest follow.
 *
 * The core table's bounds are linker symbols, resolved by name and
 * validated by content at load; without them, or without relative
 * entries, okp_glue_exception_entries_within() answers -1 and the callers
 * ask address by address.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/extable.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <asm/extable.h>

#include "core/core_api.h"
#include "glue.h"
#include "resolved_calls.h"

/*
 * <asm/extable.h> defines it where entries are offsets (x86, riscv);
 * <linux/extable.h> does not include it.
 */
#ifdef ARCH_HAS_RELATIVE_EXTABLE

static const struct exception_table_entry *okp_core_extable,
	*okp_core_extable_end;
static long okp_core_extable_entries = -1;

static unsigned long okp_entry_insn(const struct exception_table_entry *entry)
{
	return (unsigned long)&entry->insn + entry->insn;
}

static unsigned long okp_entry_fixup(const struct exception_table_entry *entry)
{
	return (unsigned long)&entry->fixup + entry->fixup;
}

/*
 * The core table: sorted, and each entry the one the kernel's own search
 * finds for its instruction (so the bounds are the table the kernel uses).
 */
void okp_exception_table_init(void)
{
	unsigned long start = okp_ksyms_lookup("__start___ex_table");
	unsigned long stop = okp_ksyms_lookup("__stop___ex_table");
	const struct exception_table_entry *table = (void *)start;
	unsigned long count, i;

	if (!start || stop <= start ||
	    (stop - start) % sizeof(struct exception_table_entry)) {
		pr_info("no core exception table found: functions are checked instruction by instruction\n");
		return;
	}
	count = (stop - start) / sizeof(struct exception_table_entry);
	for (i = 0; i < count; i++) {
		if ((i && okp_entry_insn(&table[i]) < okp_entry_insn(&table[i - 1])) ||
		    okp_call(search_exception_tables)(
			    okp_entry_insn(&table[i])) != &table[i]) {
			pr_warn("the core exception table at __start___ex_table is not the kernel's sorted table (entry %lu): functions are checked instruction by instruction\n",
				i);
			return;
		}
	}
	okp_core_extable = table;
	okp_core_extable_end = table + count;
	okp_core_extable_entries = count;
}

long okp_exception_table_entries(void)
{
	return okp_core_extable_entries;
}

/* Collects the entries of the sorted table [table, end) in [start, stop). */
static unsigned long okp_entries_within(const struct exception_table_entry *table,
					const struct exception_table_entry *end,
					unsigned long start, unsigned long stop,
					struct okp_exception_entry *found,
					unsigned long capacity)
{
	unsigned long low = 0, high = end - table, count = 0;

	while (low < high) {
		unsigned long middle = low + (high - low) / 2;

		if (okp_entry_insn(&table[middle]) < start)
			low = middle + 1;
		else
			high = middle;
	}
	for (; table + low < end; low++) {
		unsigned long insn = okp_entry_insn(&table[low]);

		if (insn >= stop)
			break;
		if (count < capacity) {
			found[count].insn = insn;
			found[count].fixup = okp_entry_fixup(&table[low]);
		}
		count++;
	}
	return count;
}

long okp_glue_exception_entries_within(unsigned long start, unsigned long end,
				       struct okp_exception_entry *found,
				       unsigned long capacity)
{
	struct module *mod;
	long count = 0;

	if (okp_call(core_kernel_text)(start)) {
		if (!okp_core_extable)
			return -1;
		return okp_entries_within(okp_core_extable,
					  okp_core_extable_end, start, end,
					  found, capacity);
	}
	/* The module cannot finish going: its notifier waits for our mutex. */
	preempt_disable();
	mod = okp_call(__module_text_address)(start);
	if (mod)
		count = okp_entries_within(mod->extable,
					   mod->extable + mod->num_exentries,
					   start, end, found, capacity);
	preempt_enable();
	return count;
}

#else /* !ARCH_HAS_RELATIVE_EXTABLE */

void okp_exception_table_init(void)
{
}

long okp_exception_table_entries(void)
{
	return -1;
}

long okp_glue_exception_entries_within(unsigned long start, unsigned long end,
				       struct okp_exception_entry *found,
				       unsigned long capacity)
{
	return -1;
}

#endif
