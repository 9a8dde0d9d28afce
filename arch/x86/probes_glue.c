// SPDX-License-Identifier: GPL-2.0
/*
 * x86-64 breakpoint probes, the kernel side: the int3 die notifier, the
 * exported okprobe_register()/okprobe_unregister(), and the kernel services
 * the C++ core (arch/x86/breakpoint_probes.cpp) asks for.
 *
 * Lock order: okp_probe_mutex, then text_mutex. text_mutex is held only
 * around one text_poke() and its sync, never across a grace period.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

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

static DEFINE_MUTEX(okp_probe_mutex);
static DEFINE_PER_CPU(struct okp_cpu_state, okp_cpu_states);

/* The core works on pt_regs as okp::x86::Registers: same layout. */
static_assert(sizeof(struct pt_regs) == 21 * 8);
static_assert(offsetof(struct pt_regs, r15) == 0);
static_assert(offsetof(struct pt_regs, ax) == 10 * 8);
static_assert(offsetof(struct pt_regs, cx) == 11 * 8);
static_assert(offsetof(struct pt_regs, ip) == 16 * 8);
static_assert(offsetof(struct pt_regs, flags) == 18 * 8);
static_assert(offsetof(struct pt_regs, sp) == 19 * 8);

struct okp_cpu_state *okp_glue_cpu_state(void)
{
	return this_cpu_ptr(&okp_cpu_states);
}

unsigned long okp_glue_lookup_symbol(const char *name)
{
	return okp_ksyms_lookup(name);
}

int okp_glue_function_of(unsigned long address, unsigned long *start,
			 unsigned long *size)
{
	int (*size_offset)(unsigned long address, unsigned long *size,
			   unsigned long *offset) =
		(void *)okp_ksyms.kallsyms_lookup_size_offset;
	unsigned long offset;

	if (!size_offset(address, size, &offset))
		return 0;
	*start = address - offset;
	return 1;
}

enum okp_text_kind okp_glue_text_kind(unsigned long address)
{
	bool (*core_text)(unsigned long address) =
		(void *)okp_ksyms.core_kernel_text;
	struct module *(*module_text)(unsigned long address) =
		(void *)okp_ksyms.__module_text_address;
	bool in_module;

	if (core_text(address))
		return OKP_TEXT_CORE;
	preempt_disable();
	in_module = module_text(address);
	preempt_enable();
	if (in_module)
		return OKP_TEXT_MODULE;
	if (address >= okp_ksyms._sinittext && address < okp_ksyms._einittext)
		return OKP_TEXT_INIT_AFTER_BOOT;
	return OKP_TEXT_NONE;
}

const char *okp_glue_reserved(unsigned long address, unsigned long length)
{
	unsigned long (*ftrace_location)(unsigned long ip) =
		(void *)okp_ksyms.ftrace_location;
	int (*jump_label)(void *start, void *end) =
		(void *)okp_ksyms.jump_label_text_reserved;
	int (*static_call_reserved)(void *start, void *end) =
		(void *)okp_ksyms.static_call_text_reserved;
	int (*alternatives)(void *start, void *end) =
		(void *)okp_ksyms.alternatives_text_reserved;
	void *start = (void *)address, *end = (void *)(address + length - 1);
	unsigned long i;
	int reserved;

	for (i = 0; ftrace_location && i < length; i++)
		if (ftrace_location(address + i))
			return "the address is an ftrace call site";
	if (jump_label && jump_label(start, end))
		return "the address is a jump label site";
	if (static_call_reserved && static_call_reserved(start, end))
		return "the address is a static call site";
	/* alternatives_text_reserved() asserts text_mutex is held. */
	mutex_lock((struct mutex *)okp_ksyms.text_mutex);
	reserved = alternatives(start, end);
	mutex_unlock((struct mutex *)okp_ksyms.text_mutex);
	return reserved ? "the address is patched by alternatives" : NULL;
}

int okp_glue_has_exception_entry(unsigned long address)
{
	const void *(*search)(unsigned long address) =
		(void *)okp_ksyms.search_exception_tables;

	return search(address) != NULL;
}

unsigned long okp_glue_read_text(unsigned long address, void *buffer,
				 unsigned long size)
{
	unsigned long done = 0, chunk;

	while (done < size) {
		chunk = min(size - done, 64UL);
		if (copy_from_kernel_nofault(buffer + done,
					     (void *)(address + done), chunk))
			break;
		done += chunk;
	}
	return done;
}

void *okp_glue_exec_page_alloc(void)
{
	void *(*alloc)(unsigned long size) = (void *)okp_ksyms.module_alloc;
	int (*set_ro)(unsigned long address, int pages) =
		(void *)okp_ksyms.set_memory_ro;
	int (*set_x)(unsigned long address, int pages) =
		(void *)okp_ksyms.set_memory_x;
	void *page = alloc(PAGE_SIZE);

	if (!page)
		return NULL;
	memset(page, 0xcc, PAGE_SIZE);
	if (set_ro((unsigned long)page, 1) || set_x((unsigned long)page, 1)) {
		vfree(page);
		return NULL;
	}
	return page;
}

void okp_glue_exec_page_free(void *page)
{
	/* module_alloc() memory is VM_FLUSH_RESET_PERMS: vfree resets it. */
	vfree(page);
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

void okp_glue_synchronize_rcu(void)
{
	synchronize_rcu();
}

void okp_glue_synchronize_rcu_tasks(void)
{
	synchronize_rcu_tasks();
}

static int okp_die_notify(struct notifier_block *block, unsigned long event,
			  void *data)
{
	struct die_args *args = data;

	if (event != DIE_INT3 || user_mode(args->regs))
		return NOTIFY_DONE;
	return okp_core_breakpoint(args->regs) ? NOTIFY_STOP : NOTIFY_DONE;
}
NOKPROBE_SYMBOL(okp_die_notify);

static struct notifier_block okp_die_block = {
	.notifier_call = okp_die_notify,
};

int okprobe_register(struct okprobe *probe)
{
	const char *why = "";
	int ret;

	mutex_lock(&okp_probe_mutex);
	ret = okp_core_register(probe, &why);
	mutex_unlock(&okp_probe_mutex);
	if (ret)
		pr_err("cannot probe %s+0x%lx (addr %pS): %s (%d)\n",
		       probe->symbol_name ?: "", probe->offset, probe->addr,
		       why, ret);
	return ret;
}
EXPORT_SYMBOL_GPL(okprobe_register);

void okprobe_unregister(struct okprobe *probe)
{
	mutex_lock(&okp_probe_mutex);
	okp_core_unregister(probe);
	mutex_unlock(&okp_probe_mutex);
}
EXPORT_SYMBOL_GPL(okprobe_unregister);

void okp_probes_show(struct seq_file *m)
{
	unsigned long index, address, hits, missed;
	unsigned int flags;

	mutex_lock(&okp_probe_mutex);
	for (index = 0; okp_core_list_entry(index, &address, &hits, &missed,
					    &flags); index++)
		seq_printf(m, "0x%016lx  %pS  hits=%lu missed=%lu\n", address,
			   (void *)address, hits, missed);
	mutex_unlock(&okp_probe_mutex);
}

int okp_probes_init(void)
{
	return register_die_notifier(&okp_die_block);
}

void okp_probes_exit(void)
{
	mutex_lock(&okp_probe_mutex);
	okp_core_probes_exit();
	mutex_unlock(&okp_probe_mutex);
	unregister_die_notifier(&okp_die_block);
}
