// SPDX-License-Identifier: GPL-2.0
/*
 * x86-64 breakpoint probes, the kernel side: the int3 die notifier, text
 * patching, executable slot pages and the x86 reserved-text checks. The
 * arch-neutral half (API, mutex, module notifier) is src/kernel/probes.c.
 *
 * text_mutex is taken after okp_probe_mutex, only around one text_poke()
 * and its sync, never across a grace period.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jump_label.h>
#include <linux/kdebug.h>
#include <linux/kprobes.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/percpu.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include <okprobe.h>

#include "core/core_api.h"
#include "kernel/glue.h"

/* The core works on pt_regs as okp::x86::Registers: same layout. */
static_assert(sizeof(struct pt_regs) == 21 * 8);
static_assert(offsetof(struct pt_regs, r15) == 0);
static_assert(offsetof(struct pt_regs, ax) == 10 * 8);
static_assert(offsetof(struct pt_regs, cx) == 11 * 8);
static_assert(offsetof(struct pt_regs, ip) == 16 * 8);
static_assert(offsetof(struct pt_regs, flags) == 18 * 8);
static_assert(offsetof(struct pt_regs, sp) == 19 * 8);

const char *okp_glue_reserved(unsigned long address, unsigned long length)
{
	unsigned long (*ftrace_location)(unsigned long ip) =
		(void *)okp_ksyms.ftrace_location;
	int (*jump_label)(void *start, void *end) =
		(void *)okp_ksyms.jump_label_text_reserved;
	void (*jump_label_lock)(void) = (void *)okp_ksyms.jump_label_lock;
	void (*jump_label_unlock)(void) = (void *)okp_ksyms.jump_label_unlock;
	int (*static_call_reserved)(void *start, void *end) =
		(void *)okp_ksyms.static_call_text_reserved;
	int (*alternatives)(void *start, void *end) =
		(void *)okp_ksyms.alternatives_text_reserved;
	void *start = (void *)address, *end = (void *)(address + length - 1);
	const char *why = NULL;
	unsigned long i;
	int reserved;

	for (i = 0; ftrace_location && i < length; i++)
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
	else if (static_call_reserved && static_call_reserved(start, end))
		why = "the address is a static call site";
	if (jump_label_unlock)
		jump_label_unlock();
	if (why)
		return why;
	/* alternatives_text_reserved() asserts text_mutex is held. */
	mutex_lock((struct mutex *)okp_ksyms.text_mutex);
	reserved = alternatives(start, end);
	mutex_unlock((struct mutex *)okp_ksyms.text_mutex);
	return reserved ? "the address is patched by alternatives" : NULL;
}

void okp_glue_text_write(unsigned long address, const void *bytes,
			 unsigned long length)
{
	struct mutex *text_mutex = (void *)okp_ksyms.text_mutex;
	void *(*poke)(void *address, const void *bytes, size_t length) =
		(void *)okp_ksyms.text_poke;
	void (*sync)(void) = (void *)okp_ksyms.text_poke_sync;

	mutex_lock(text_mutex);
	poke((void *)address, bytes, length);
	sync();
	mutex_unlock(text_mutex);
}

void okp_glue_text_write_batch(const struct okp_text_patch *patches,
			       unsigned long count)
{
	struct mutex *text_mutex = (void *)okp_ksyms.text_mutex;
	void *(*poke)(void *address, const void *bytes, size_t length) =
		(void *)okp_ksyms.text_poke;
	void (*sync)(void) = (void *)okp_ksyms.text_poke_sync;
	unsigned long i;

	if (!count)
		return;
	mutex_lock(text_mutex);
	for (i = 0; i < count; i++)
		poke((void *)patches[i].address, patches[i].bytes,
		     patches[i].length);
	sync();
	mutex_unlock(text_mutex);
}

static int notrace okp_die_notify(struct notifier_block *block,
				  unsigned long event, void *data)
{
	struct die_args *args = data;

	if (event != DIE_INT3 || user_mode(args->regs))
		return NOTIFY_DONE;
	return okp_core_breakpoint(args->regs) ? NOTIFY_STOP : NOTIFY_DONE;
}
NOKPROBE_SYMBOL(okp_die_notify);

/* First in the die chain: every okprobe hit passes through it. */
static struct notifier_block okp_die_block = {
	.notifier_call = okp_die_notify,
	.priority = INT_MAX,
};

/* ---- Jump labels that could jump into a jump's region ----------------- */

/*
 * The core kernel's jump table. Its bounds are linker symbols, resolved
 * with a plain lookup and validated by content: nearly every entry's code
 * must be core kernel text (the others are in init and exit text, which
 * have no symbol of their own to check against). NULL when that fails.
 */
static struct jump_entry *okp_core_jump_table, *okp_core_jump_table_end;

static void okp_find_core_jump_table(void)
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

static int okp_jump_targets_within(struct jump_entry *entry,
				   struct jump_entry *end, unsigned long start,
				   unsigned long stop)
{
	unsigned long target;

	for (; entry < end; entry++) {
		target = jump_entry_target(entry);
		if (target >= start && target < stop)
			return 1;
	}
	return 0;
}

/*
 * A disabled jump label is a nop in the text: decoding the function cannot
 * see where it would jump once enabled. Its entry can: 1 when a jump label
 * of the object (core kernel or module) holding start targets
 * [start, stop), 0 when none does, -1 when the core table is unknown and
 * the function [function, function_end) has jump labels.
 */
int okp_glue_jump_label_target_within(unsigned long start, unsigned long stop,
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
	int found = 0;

	if (!IS_ENABLED(CONFIG_JUMP_LABEL))
		return 0;
	if (core_text(start)) {
		if (!okp_core_jump_table)
			return reserved((void *)function,
					(void *)(function_end - 1)) ? -1 : 0;
		return okp_jump_targets_within(okp_core_jump_table,
					       okp_core_jump_table_end, start,
					       stop);
	}
#ifdef CONFIG_JUMP_LABEL
	/* The module cannot finish going: its notifier waits for our mutex. */
	preempt_disable();
	mod = module_text(start);
	if (mod)
		found = okp_jump_targets_within(mod->jump_entries,
						mod->jump_entries +
						mod->num_jump_entries,
						start, stop);
	preempt_enable();
#endif
	return found;
}

int okp_arch_probes_init(void)
{
	okp_find_core_jump_table();
	return register_die_notifier(&okp_die_block);
}

void okp_arch_probes_exit(void)
{
	unregister_die_notifier(&okp_die_block);
}
