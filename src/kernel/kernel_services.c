// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel services the C++ core asks for (the okp_glue_* functions of
 * core/glue_services.h that are not the arch's): the per-CPU hit state,
 * executable pages for copies and detours, symbols and the function
 * around an address, what kind of text an address is, reading text,
 * the log lines for lost and unarmed sites, descriptions, grace periods
 * and the clock. The probe API and its mutex are in probes.c; the text
 * writing is the arch's (arch/<arch>/probes_glue.c). None of these takes
 * okp_probe_mutex: their callers hold it, or the breakpoint handler calls
 * them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/rcupdate_wait.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include <okprobe.h>
#include "core/core_api.h"
#include "compat.h"
#include "glue.h"
#include "resolved_calls.h"
#include "arch_glue.h"

DEFINE_PER_CPU(struct okp_cpu_state, okp_cpu_states);

/* Called on every breakpoint hit: no ftrace call, no kprobe. */
struct okp_cpu_state *notrace okp_glue_cpu_state(void)
{
	return this_cpu_ptr(&okp_cpu_states);
}
NOKPROBE_SYMBOL(okp_glue_cpu_state);

/*
 * A page of module space (within rel32 / auipc+jalr reach of kernel and
 * module text), read-only and executable, written only through the arch's
 * text patching. It starts as traps (x86 int3; riscv zeros, c.unimp): a
 * stray jump into an unused part faults loudly.
 */
void *okp_glue_exec_page_alloc(void)
{
	void *page;

	if (okp_fail_alloc())
		return NULL;
	page = okp_exec_alloc(PAGE_SIZE);
	if (!page)
		return NULL;
	memset(page, OKP_EXEC_PAGE_FILL, PAGE_SIZE);
	if (okp_call(set_memory_ro)((unsigned long)page, 1) ||
	    okp_call(set_memory_x)((unsigned long)page, 1)) {
		okp_glue_exec_page_free(page);
		return NULL;
	}
	return page;
}

void okp_glue_exec_page_free(void *page)
{
	/*
	 * module_alloc() and execmem_alloc() memory is VM_FLUSH_RESET_PERMS:
	 * freeing it resets its permissions.
	 */
	okp_call(exec_free)(page);
}

unsigned long okp_glue_lookup_symbol(const char *name)
{
	return okp_ksyms_lookup(name);
}

/*
 * The function holding a module address, from the module's own ELF
 * symbols: the STT_FUNC symbol whose [st_value, st_value + st_size) holds
 * it. Not kallsyms: riscv assemblers (binutils 2.40 on) emit mapping
 * symbols ("$xrv64i2p1_...") where the ISA changes, which 6.1's module
 * kallsyms does not skip, so its answer may name one and cut a function
 * in two there. Copies the name into name (when not NULL). The module
 * cannot go away meanwhile: its notifier waits for okp_probe_mutex, or
 * the caller holds a reference.
 */
static bool okp_module_function(unsigned long address, unsigned long *start,
				unsigned long *size, char *name,
				unsigned long name_size, char *module,
				unsigned long module_size)
{
	struct mod_kallsyms *symbols;
	const Elf_Sym *sym;
	struct module *mod;
	bool found = false;
	unsigned int i;

	preempt_disable();
	mod = okp_call(__module_text_address)(address);
	symbols = mod ? rcu_dereference_sched(mod->kallsyms) : NULL;
	for (i = 1; symbols && i < symbols->num_symtab && !found; i++) {
		sym = &symbols->symtab[i];
		if (ELF_ST_TYPE(sym->st_info) != STT_FUNC || !sym->st_size ||
		    sym->st_shndx == SHN_UNDEF || address < sym->st_value ||
		    address - sym->st_value >= sym->st_size)
			continue;
		*start = sym->st_value;
		*size = sym->st_size;
		if (name)
			strscpy(name, symbols->strtab + sym->st_name,
				name_size);
		if (module)
			strscpy(module, mod->name, module_size);
		found = true;
	}
	preempt_enable();
	return found;
}

/*
 * With DYNAMIC_FTRACE_WITH_CALL_OPS (riscv from 6.16) every traced
 * function has a pointer to its ftrace_ops in the 8 bytes before its
 * entry, where ftrace writes it: data, after the previous function's
 * code. kallsyms sizes a function up to the next symbol, literal included;
 * a module's ELF sizes are exact.
 */
static unsigned long okp_next_call_ops_literal(unsigned long end)
{
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS
	if (okp_resolved(ftrace_location) && okp_call(ftrace_location)(end))
		return sizeof(void *);
#endif
	return 0;
}

int okp_glue_function_of(unsigned long address, unsigned long *start,
			 unsigned long *size)
{
	unsigned long offset, literal;

	if (okp_module_function(address, start, size, NULL, 0, NULL, 0))
		return 1;
	if (!okp_call(kallsyms_lookup_size_offset)(address, size, &offset))
		return 0;
	*start = address - offset;
	literal = okp_next_call_ops_literal(*start + *size);
	if (literal && *size > literal) {
		if (offset >= *size - literal)
			return 0; /* the literal itself: no function's code */
		*size -= literal;
	}
	return 1;
}

/*
 * A registration asks for a symbol's facts four times of the same address:
 * padding and the kernel blacklist, in its proof and again in its recheck.
 * Each answer is a kallsyms name lookup (12 us under QEMU). The last answer
 * for core kernel text is kept: its symbols never change after boot (a
 * module's may go with it). okp_symbol_facts_mutex is a leaf: only kallsyms
 * runs under it.
 */
static DEFINE_MUTEX(okp_symbol_facts_mutex);
static unsigned long okp_last_facts_address;
static struct okp_symbol_facts okp_last_facts;

static bool okp_read_symbol_facts(unsigned long address, bool with_base,
				  struct okp_symbol_facts *facts)
{
	char *name = kmalloc(KSYM_SYMBOL_LEN, GFP_KERNEL);
	char *cut;

	if (!name)
		return false;
	sprint_symbol_no_offset(name, address);
	facts->padding = str_has_prefix(name, "__pfx_") ||
			 str_has_prefix(name, "__cfi_");
	facts->dotted_base = 0;
	cut = strpbrk(name, ". ");
	/* Most names have no '.': their base (none) is known at once. */
	facts->has_base = with_base || !cut || *cut != '.';
	if (with_base && cut && *cut == '.') {
		*cut = '\0';
		facts->dotted_base = okp_ksyms_lookup(name);
	}
	kfree(name);
	return true;
}

bool okp_symbol_facts(unsigned long address, bool with_base,
		      struct okp_symbol_facts *facts)
{
	bool core = okp_call(core_kernel_text)(address);
	bool read = true;

	mutex_lock(&okp_symbol_facts_mutex);
	if (core && address && address == okp_last_facts_address &&
	    (okp_last_facts.has_base || !with_base)) {
		*facts = okp_last_facts;
	} else {
		read = okp_read_symbol_facts(address, with_base, facts);
		if (read && core) {
			okp_last_facts_address = address;
			okp_last_facts = *facts;
		}
	}
	mutex_unlock(&okp_symbol_facts_mutex);
	return read;
}

const char *okp_glue_padding_symbol(unsigned long address)
{
	static const char *const why =
		"the address is padding before a function (a __pfx_ or __cfi_ symbol), not its code";
	struct okp_symbol_facts facts;

	if (!okp_symbol_facts(address, false, &facts))
		return NULL;
	return facts.padding ? why : NULL;
}

enum okp_text_kind okp_glue_text_kind(unsigned long address)
{
	struct module *module;
	bool in_module;

	if (okp_call(core_kernel_text)(address))
		return OKP_TEXT_CORE;
	/*
	 * A module going away is not text to probe (kprobes' try_module_get()
	 * refuses it too): okprobe's GOING notifier, which takes the probe
	 * mutex the caller holds, has run or will find nothing.
	 */
	preempt_disable();
	module = okp_call(__module_text_address)(address);
	in_module = module && module->state != MODULE_STATE_GOING;
	preempt_enable();
	if (in_module)
		return OKP_TEXT_MODULE;
	if (address >= okp_ksyms._sinittext && address < okp_ksyms._einittext)
		return OKP_TEXT_INIT_AFTER_BOOT;
	return OKP_TEXT_NONE;
}

int okp_glue_has_exception_entry(unsigned long address)
{
	return okp_call(search_exception_tables)(address) != NULL;
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

void okp_glue_text_lost(unsigned long address, const char *description,
			const char *why)
{
	__module_get(THIS_MODULE);
	pr_err("lost %s (0x%lx): %s; okprobe leaves the text as it is and stays loaded\n",
	       description, address, why);
}

void okp_glue_entry_unarmed(unsigned long address, const char *description,
			    const char *why)
{
	pr_warn("%s (0x%lx): %s; its probes do not run until it is enabled again\n",
		description, address, why);
}

void okp_glue_lost_text_released(unsigned long address,
				 const char *description)
{
	pr_info("%s (0x%lx) is no longer okprobe's: its text is the original again\n",
		description, address);
	module_put(THIS_MODULE);
}

void okp_glue_describe(unsigned long address, char *buffer,
		       unsigned long size)
{
	char line[KSYM_SYMBOL_LEN], module[MODULE_NAME_LEN];
	unsigned long start, length;

	if (okp_module_function(address, &start, &length, line, sizeof(line),
				module, sizeof(module))) {
		snprintf(buffer, size, "%s+0x%lx/0x%lx [%s]", line,
			 address - start, length, module);
		return;
	}
	sprint_symbol(line, address);
	strscpy(buffer, line, size);
}

unsigned long okp_glue_now_ns(void)
{
	return ktime_get_ns();
}

/*
 * One grace period, or both at once, not one after the other: each
 * call_rcu*() starts its own and the wait ends when both have. Where the
 * kernel has no rcu-tasks (riscv64's Debian 6.12: PREEMPT_VOLUNTARY),
 * call_rcu_tasks is call_rcu and that is one RCU grace period. Any other
 * value of graces waits for both: the safe answer.
 */
void okp_glue_synchronize(unsigned int graces)
{
	if (graces == OKP_GRACE_RCU)
		synchronize_rcu();
	else if (graces == OKP_GRACE_TASKS)
		synchronize_rcu_tasks();
	else
		synchronize_rcu_mult(call_rcu, call_rcu_tasks);
}
