// SPDX-License-Identifier: GPL-2.0
/*
 * The probe API's kernel side, for every architecture: the exported
 * okprobe_* functions, the probe mutex, the module notifier, debugfs list
 * and enabled, and the kernel services the C++ probe table asks for. The
 * architecture's breakpoint trap and text patching are in
 * arch/<arch>/probes_glue.c.
 *
 * Lock order (Documentation/design.md): okp_probe_mutex, then text_mutex
 * (taken by the arch around one text patch, never across a grace period).
 * okp_probe_mutex is held across synchronize_rcu()/synchronize_rcu_tasks():
 * no other subsystem takes it, and nothing that waits for a grace period
 * ends up waiting for it.
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

static DEFINE_MUTEX(okp_probe_mutex);
DEFINE_PER_CPU(struct okp_cpu_state, okp_cpu_states);

/* ---- The optimizer ------------------------------------------------------- */

/* The batching window, as the kernel's OPTIMIZE_DELAY. */
#define OKP_OPTIMIZE_DELAY 5

static void okp_optimizer(struct work_struct *work);
static DECLARE_DELAYED_WORK(okp_optimizer_work, okp_optimizer);
/* Set under okp_probe_mutex at module exit: no more scheduling. */
static bool okp_optimizer_stopped;

void okp_glue_schedule_optimizer(void)
{
	lockdep_assert_held(&okp_probe_mutex);
	if (!okp_optimizer_stopped)
		schedule_delayed_work(&okp_optimizer_work, OKP_OPTIMIZE_DELAY);
}

/*
 * Probes waiting for their jump and withdrawn detours wait for a grace
 * period that starts after okp_core_optimizer_begin(): RCU for handlers,
 * rcu-tasks for tasks preempted inside a region or a detour. The probe
 * mutex is not held across it, so registrations go on meanwhile; what they
 * publish belongs to the next generation.
 */
static void okp_optimizer(struct work_struct *work)
{
	unsigned long generation;

	mutex_lock(&okp_probe_mutex);
	generation = okp_optimizer_stopped ? 0 : okp_core_optimizer_begin();
	mutex_unlock(&okp_probe_mutex);
	if (!generation)
		return;
	synchronize_rcu();
	synchronize_rcu_tasks();
	mutex_lock(&okp_probe_mutex);
	if (!okp_optimizer_stopped)
		okp_core_optimizer_finish(generation);
	mutex_unlock(&okp_probe_mutex);
}

void okp_probes_optimization_changed(void)
{
	mutex_lock(&okp_probe_mutex);
	okp_core_optimization_changed();
	mutex_unlock(&okp_probe_mutex);
}

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

const char *okp_glue_padding_symbol(unsigned long address)
{
	static const char *const why =
		"the address is padding before a function (a __pfx_ or __cfi_ symbol), not its code";
	char *name = kmalloc(KSYM_SYMBOL_LEN, GFP_KERNEL);
	bool padding;

	if (!name)
		return NULL;
	sprint_symbol_no_offset(name, address);
	padding = str_has_prefix(name, "__pfx_") ||
		  str_has_prefix(name, "__cfi_");
	kfree(name);
	return padding ? why : NULL;
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

void okp_glue_synchronize_rcu(void)
{
	synchronize_rcu();
}

unsigned long okp_glue_now_ns(void)
{
	return ktime_get_ns();
}

void okp_glue_synchronize_rcu_tasks(void)
{
	synchronize_rcu_tasks();
}

/* ---- The exported API ---------------------------------------------------- */

/*
 * Nothing a client passes may oops the kernel or leave okp_probe_mutex held:
 * NULL pointers are refused before the mutex is taken, probes are looked up
 * in the table (never through their okp_site), and symbol_name is read with
 * a bounded, fault-tolerant copy into okp_symbol_name (under the mutex),
 * which is all that is read of it afterwards, the log line included.
 */
static char okp_symbol_name[KSYM_NAME_LEN];

static void okp_log_refusal(const struct okprobe *probe, const char *name,
			    const char *why, int ret)
{
	if (name)
		pr_err("cannot probe %s+0x%lx: %s (%d)\n", name, probe->offset,
		       why, ret);
	else {
		char where[KSYM_SYMBOL_LEN];

		okp_glue_describe((unsigned long)probe->addr + probe->offset,
				  where, sizeof(where));
		pr_err("cannot probe %s: %s (%d)\n", where, why, ret);
	}
}

/*
 * strncpy_from_kernel_nofault() is not exported in 6.1: the same, a byte
 * at a time. The length without the NUL, or -EFAULT, or size when there
 * is no NUL within size bytes.
 */
long okp_copy_name(char *to, const char *from, long size)
{
	long i;

	for (i = 0; i < size; i++) {
		if (copy_from_kernel_nofault(&to[i], &from[i], 1))
			return -EFAULT;
		if (!to[i])
			return i;
	}
	to[size - 1] = '\0';
	return size;
}

/*
 * probe's symbol_name, copied into okp_symbol_name (okp_probe_mutex held):
 * NULL and *name (NULL when it has none), or why it cannot be.
 */
static const char *okp_copy_symbol_name(const struct okprobe *probe,
					const char **name)
{
	long copied;

	lockdep_assert_held(&okp_probe_mutex);
	*name = NULL;
	if (!probe->symbol_name)
		return NULL;
	copied = okp_copy_name(okp_symbol_name, probe->symbol_name,
			       sizeof(okp_symbol_name));
	if (copied < 0)
		return "symbol_name cannot be read";
	if (copied >= sizeof(okp_symbol_name))
		return "symbol_name is too long";
	*name = okp_symbol_name;
	return NULL;
}

/* Registers one probe, okp_probe_mutex held; logs a refusal. */
static int okp_register_locked(struct okprobe *probe)
{
	const char *name, *why = okp_copy_symbol_name(probe, &name);
	int ret;

	if (why) {
		pr_err("cannot probe %p: %s (%d)\n", probe, why, -EINVAL);
		return -EINVAL;
	}
	ret = okp_core_register(probe, name, &why);
	if (ret)
		okp_log_refusal(probe, name, why, ret);
	return ret;
}

int okp_probes_register_quietly(struct okprobe *probe, const char **why)
{
	int ret;

	mutex_lock(&okp_probe_mutex);
	ret = okp_core_register(probe, NULL, why);
	mutex_unlock(&okp_probe_mutex);
	return ret;
}

long okp_probes_block_starts(unsigned long address, unsigned long *start,
			     unsigned long *size, unsigned int *offsets,
			     unsigned long capacity)
{
	long ret;

	mutex_lock(&okp_probe_mutex);
	ret = okp_core_block_starts(address, start, size, offsets, capacity);
	mutex_unlock(&okp_probe_mutex);
	return ret;
}

/* Why the caller must not sleep, as far as this kernel can tell; or NULL. */
static const char *okp_atomic_reason(void)
{
	bool in_handler;

	/* This CPU's, read where no migration can make it another's. */
	preempt_disable();
	in_handler = this_cpu_read(okp_cpu_states.active_site);
	preempt_enable();
	if (in_handler)
		return "inside an okprobe handler";
	if (!in_task())
		return "in interrupt context";
	if (irqs_disabled())
		return "interrupts off";
	/*
	 * A spinlock or preempt_disable() shows in the preempt count only
	 * with CONFIG_PREEMPT_COUNT (Debian's amd64 kernels have it); without
	 * it nothing here can see them.
	 */
	if (IS_ENABLED(CONFIG_PREEMPT_COUNT) && !preemptible())
		return "preemption off";
#ifdef CONFIG_PREEMPT_RCU
	if (rcu_preempt_depth())
		return "inside rcu_read_lock()";
#endif
	return NULL;
}

/*
 * The kernel's might_sleep() reports a caller that must not sleep only on
 * DEBUG_ATOMIC_SLEEP kernels, and only once it has slept: "scheduling
 * while atomic", and a crashed process. okprobe refuses such a call first
 * (Documentation/api.md, "Calling context"); the log is rate-limited, as
 * a client in a loop would flood it.
 */
bool okp_api_caller_atomic(const char *call, unsigned long caller)
{
	const char *why = okp_atomic_reason();

	if (!why)
		return false;
	pr_err_ratelimited("%s from atomic context (%s), called by %pS: refused, nothing changed (%d)\n",
			   call, why, (void *)caller, -EINVAL);
	return true;
}

int okprobe_register(struct okprobe *probe)
{
	int ret;

	if (okp_api_caller_atomic(__func__, _RET_IP_))
		return -EINVAL;
	might_sleep();
	if (!probe) {
		pr_err("%s: the probe is NULL (%d)\n", __func__, -EINVAL);
		return -EINVAL;
	}
	mutex_lock(&okp_probe_mutex);
	ret = okp_register_locked(probe);
	mutex_unlock(&okp_probe_mutex);
	return ret;
}
EXPORT_SYMBOL_GPL(okprobe_register);

/*
 * Registers count probes in one arm batch, okp_probe_mutex held: all or
 * nothing. Logs the refusal unless *why is wanted (not NULL), where it
 * goes instead.
 */
static int okp_register_many_locked(struct okprobe **probes, int count,
				    const char **quiet_why)
{
	const char *where = NULL, *why = NULL;
	int i, ret = 0, refused;

	lockdep_assert_held(&okp_probe_mutex);
	/*
	 * Every breakpoint of the batch in one text write, one CPU sync;
	 * every entry through ftrace in one pass of ftrace.
	 */
	okp_core_begin_arm_batch();
	for (i = 0; i < count; i++) {
		if (quiet_why)
			ret = okp_core_register(probes[i], NULL, quiet_why);
		else
			ret = okp_register_locked(probes[i]);
		if (ret)
			break;
	}
	refused = okp_core_end_arm_batch(&where, &why);
	if (refused && !ret) {
		if (quiet_why)
			*quiet_why = why;
		else
			pr_err("cannot probe %s: %s (%d)\n", where, why, refused);
		ret = refused;
	}
	/* All or nothing, like register_kprobes(). */
	if (ret)
		okp_core_unregister_many(probes, i);
	return ret;
}

long okp_probes_function_exits(struct okprobe *kp,
			       struct okp_function_exit *exits,
			       unsigned long capacity, unsigned long *entry,
			       const char **why, unsigned long *where)
{
	const char *name;
	long ret = -EINVAL;

	mutex_lock(&okp_probe_mutex);
	*why = okp_copy_symbol_name(kp, &name);
	if (!*why)
		ret = okp_core_function_exits(kp, name, entry, exits, capacity,
					      why, where);
	mutex_unlock(&okp_probe_mutex);
	return ret;
}

int okp_probes_register_many_quietly(struct okprobe **probes, int count,
				     const char **why)
{
	int ret;

	mutex_lock(&okp_probe_mutex);
	ret = okp_register_many_locked(probes, count, why);
	mutex_unlock(&okp_probe_mutex);
	return ret;
}

/* A return probe's exits, disabled at once (their jumps out in one pass). */
int okp_probes_disable_many(struct okprobe **probes, int count)
{
	int ret;

	mutex_lock(&okp_probe_mutex);
	ret = okp_core_disable_probes(probes, count);
	mutex_unlock(&okp_probe_mutex);
	return ret;
}

int okprobe_register_many(struct okprobe **probes, int count)
{
	int i, ret;

	if (okp_api_caller_atomic(__func__, _RET_IP_))
		return -EINVAL;
	might_sleep();
	if (!probes || count <= 0) {
		pr_err("%s: %s (%d)\n", __func__,
		       probes ? "count <= 0" : "the array is NULL", -EINVAL);
		return -EINVAL;
	}
	for (i = 0; i < count; i++) {
		if (!probes[i]) {
			pr_err("%s: probe %d of %d is NULL (%d)\n", __func__,
			       i, count, -EINVAL);
			return -EINVAL;
		}
	}
	mutex_lock(&okp_probe_mutex);
	ret = okp_register_many_locked(probes, count, NULL);
	mutex_unlock(&okp_probe_mutex);
	return ret;
}
EXPORT_SYMBOL_GPL(okprobe_register_many);

void okprobe_unregister(struct okprobe *probe)
{
	/* The probe stays registered: its owner must not free it. */
	if (okp_api_caller_atomic(__func__, _RET_IP_))
		return;
	okprobe_unregister_many(&probe, 1);
}
EXPORT_SYMBOL_GPL(okprobe_unregister);

void okprobe_unregister_many(struct okprobe **probes, int count)
{
	unsigned long unknown;

	if (okp_api_caller_atomic(__func__, _RET_IP_))
		return;
	might_sleep();
	if (!probes || count <= 0) {
		pr_err("%s: %s: ignored\n", __func__,
		       probes ? "count <= 0" : "the array is NULL");
		return;
	}
	mutex_lock(&okp_probe_mutex);
	unknown = okp_core_unregister_many(probes, count);
	mutex_unlock(&okp_probe_mutex);
	/* NULL, never registered, unregistered already, or a copy. */
	if (unknown)
		pr_err("%s: %lu of %d probes not registered (first %p): ignored\n",
		       __func__, unknown, count, probes[0]);
}
EXPORT_SYMBOL_GPL(okprobe_unregister_many);

static int okp_set_probe_enabled(struct okprobe *probe, int enabled)
{
	int ret;

	might_sleep();
	if (!probe)
		return -EINVAL;
	mutex_lock(&okp_probe_mutex);
	ret = okp_core_set_probe_enabled(probe, enabled);
	mutex_unlock(&okp_probe_mutex);
	return ret;
}

int okprobe_enable(struct okprobe *probe)
{
	if (okp_api_caller_atomic(__func__, _RET_IP_))
		return -EINVAL;
	return okp_set_probe_enabled(probe, 1);
}
EXPORT_SYMBOL_GPL(okprobe_enable);

int okprobe_disable(struct okprobe *probe)
{
	if (okp_api_caller_atomic(__func__, _RET_IP_))
		return -EINVAL;
	return okp_set_probe_enabled(probe, 0);
}
EXPORT_SYMBOL_GPL(okprobe_disable);

int okprobe_read_count(struct okprobe *probe, unsigned long long *count)
{
	int ret;

	if (okp_api_caller_atomic(__func__, _RET_IP_))
		return -EINVAL;
	might_sleep();
	if (!probe || !count)
		return -EINVAL;
	mutex_lock(&okp_probe_mutex);
	ret = okp_core_read_count(probe, count);
	mutex_unlock(&okp_probe_mutex);
	return ret;
}
EXPORT_SYMBOL_GPL(okprobe_read_count);

/* ---- debugfs ------------------------------------------------------------- */

static void okp_show_line(const struct okp_list_line *line, void *context)
{
	struct seq_file *m = context;
	bool return_probe = okp_return_probe_of(line->probe);
	unsigned long missed = line->missed;

	/* A return probe's misses: its entry's and its instances'. */
	if (return_probe)
		missed += okp_return_missed_of(line->probe);
	seq_printf(m, "0x%016lx  %s  hits=%lu missed=%lu%s%s%s%s%s%s%s%s%s\n",
		   line->address, line->description, line->hits, missed,
		   return_probe ? " [RETURN]" : "",
		   okp_return_exit_of(line->probe) ? " [EXIT]" : "",
		   line->flags & OKPROBE_FLAG_COUNTER ? " [COUNTER]" : "",
		   line->optimized ? " [OPTIMIZED]" : "",
		   line->flags & OKPROBE_FLAG_FTRACE ? " [FTRACE]" : "",
		   line->past_ftrace ? " [AFTER FTRACE]" : "",
		   line->flags & OKPROBE_FLAG_DISABLED ? " [DISABLED]" : "",
		   line->flags & OKPROBE_FLAG_GONE ? " [GONE]" : "",
		   line->flags & OKPROBE_FLAG_LOST ? " [LOST]" : "");
}

void okp_probes_show(struct seq_file *m)
{
	mutex_lock(&okp_probe_mutex);
	okp_core_list(okp_show_line, m);
	mutex_unlock(&okp_probe_mutex);
}

static void okp_show_jump(const struct okp_jump_line *line, void *context)
{
	struct seq_file *m = context;

	seq_printf(m, "0x%016lx  %s  %s", line->address, line->description,
		   line->state);
	if (line->region_length)
		seq_printf(m, " region=%u", line->region_length);
	if (line->region_behind)
		seq_printf(m, " from=-%u", line->region_behind);
	if (line->detour_size)
		seq_printf(m, " detour=%u", line->detour_size);
	if (line->why)
		seq_printf(m, ": %s", line->why);
	seq_putc(m, '\n');
}

void okp_probes_show_jumps(struct seq_file *m)
{
	mutex_lock(&okp_probe_mutex);
	okp_core_jumps(okp_show_jump, m);
	mutex_unlock(&okp_probe_mutex);
}

static void okp_show_writer_step(const char *step, unsigned long times,
				 unsigned long ns, void *context)
{
	seq_printf(context, "%-10s %10lu %14lu\n", step, times, ns);
}

void okp_probes_show_writer_steps(struct seq_file *m)
{
	seq_printf(m, "%-10s %10s %14s\n", "step", "times", "ns");
	mutex_lock(&okp_probe_mutex);
	okp_core_writer_steps(okp_show_writer_step, m);
	mutex_unlock(&okp_probe_mutex);
}

int okp_probes_enabled(void)
{
	return okp_core_probes_enabled();
}

void okp_probes_set_enabled(int enabled)
{
	mutex_lock(&okp_probe_mutex);
	okp_core_set_probes_enabled(enabled);
	mutex_unlock(&okp_probe_mutex);
}

/* ---- Modules ------------------------------------------------------------- */

/* Probes a client left registered when its module went away. */
static void okp_drop_orphans(struct module *mod)
{
	struct okp_range core[OKP_MODULE_CORE_RANGES];
	struct okprobe *orphans[16];
	unsigned long count, i;
	int range, ranges = okp_module_core(mod, core);

	for (range = 0; range < ranges; range++) {
		while ((count = okp_core_probes_within(core[range].start,
						       core[range].end, orphans,
						       ARRAY_SIZE(orphans)))) {
			for (i = 0; i < count; i++)
				pr_err("module %s unloaded without unregistering its probe at %pS: unregistered it\n",
				       mod->name, orphans[i]->addr);
			okp_core_unregister_many(orphans, count);
		}
	}
}

static int okp_module_notify(struct notifier_block *block,
			     unsigned long state, void *data)
{
	struct module *mod = data;
	struct okp_range text = okp_module_text(mod);
	struct okp_range init = okp_module_init_text(mod);

	mutex_lock(&okp_probe_mutex);
	if (state == MODULE_STATE_LIVE || state == MODULE_STATE_GOING)
		/* The init text is freed once the module is live. */
		okp_core_text_gone(init.start, init.end);
	if (state == MODULE_STATE_GOING) {
		okp_drop_orphans(mod);
		okp_core_text_gone(text.start, text.end);
	}
	mutex_unlock(&okp_probe_mutex);
	return NOTIFY_DONE;
}

static struct notifier_block okp_module_block = {
	.notifier_call = okp_module_notify,
};

int okp_probes_init(void)
{
	int ret;

	ret = okp_arch_probes_init();
	if (ret)
		return ret;
	ret = register_module_notifier(&okp_module_block);
	if (ret)
		okp_arch_probes_exit();
	return ret;
}

void okp_probes_exit(void)
{
	unregister_module_notifier(&okp_module_block);
	mutex_lock(&okp_probe_mutex);
	okp_optimizer_stopped = true;
	mutex_unlock(&okp_probe_mutex);
	cancel_delayed_work_sync(&okp_optimizer_work);
	mutex_lock(&okp_probe_mutex);
	okp_core_probes_exit();
	mutex_unlock(&okp_probe_mutex);
	okp_arch_probes_exit();
}
