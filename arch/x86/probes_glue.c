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

static const char *okp_static_call_reserved(void *start, void *end)
{
	int (*reserved)(void *start, void *end) =
		(void *)okp_ksyms.static_call_text_reserved;

	return reserved && reserved(start, end) ?
		"the address is a static call site" : NULL;
}

const char *okp_glue_reserved(unsigned long address, unsigned long length)
{
	int (*alternatives)(void *start, void *end) =
		(void *)okp_ksyms.alternatives_text_reserved;
	const char *why = okp_text_sites_reserved(address, length, 1,
						  okp_static_call_reserved);
	int reserved;

	if (why)
		return why;
	/* alternatives_text_reserved() asserts text_mutex is held. */
	mutex_lock((struct mutex *)okp_ksyms.text_mutex);
	reserved = alternatives((void *)address,
				(void *)(address + length - 1));
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

int okp_arch_probes_init(void)
{
	return register_die_notifier(&okp_die_block);
}

void okp_arch_probes_exit(void)
{
	unregister_die_notifier(&okp_die_block);
}
