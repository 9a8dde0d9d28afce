// SPDX-License-Identifier: GPL-2.0
/*
 * The probe API's kernel side, for every architecture: the exported
 * okprobe_* functions, the probe mutex, the optimizer's work, the module
 * notifier, debugfs list and enabled. The kernel services the C++ probe
 * table asks for are in kernel_services.c; the architecture's breakpoint
 * trap and text patching in arch/<arch>/probes_glue.c.
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
	okp_glue_synchronize(OKP_GRACE_RCU | OKP_GRACE_TASKS);
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

/*
 * ftrace refused an entry of an arm batch, and the batch cannot say whose:
 * out with the batch (one grace period), then one probe at a time.
 */
static void okp_register_each_again(struct okprobe **probes, int count,
				    int *errors, const char **whys)
{
	struct okprobe **registered;
	int i, n = 0;

	registered = kvmalloc_array(count, sizeof(*registered), GFP_KERNEL);
	for (i = 0; i < count; i++) {
		if (errors[i])
			continue;
		if (registered)
			registered[n++] = probes[i];
		else
			okp_core_unregister_many(&probes[i], 1);
	}
	if (n)
		okp_core_unregister_many(registered, n);
	kvfree(registered);
	for (i = 0; i < count; i++) {
		if (errors[i])
			continue;
		whys[i] = "";
		errors[i] = okp_core_register(probes[i], NULL, &whys[i]);
	}
}

void okp_probes_register_each(struct okprobe **probes, int count,
			      int *errors, const char **whys)
{
	const char *where = NULL, *why = NULL;
	int i, refused;

	mutex_lock(&okp_probe_mutex);
	okp_core_begin_arm_batch();
	for (i = 0; i < count; i++) {
		whys[i] = "";
		errors[i] = okp_core_register(probes[i], NULL, &whys[i]);
	}
	refused = okp_core_end_arm_batch(&where, &why);
	if (refused)
		okp_register_each_again(probes, count, errors, whys);
	mutex_unlock(&okp_probe_mutex);
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

	/* A return probe's misses are its entry's and its instances'. */
	seq_printf(m, "0x%016lx  %s  hits=%lu missed=%lu%s%s%s%s%s%s%s%s%s%s\n",
		   line->address, line->description, line->hits, line->missed,
		   line->return_entry ? " [RETURN]" : "",
		   line->return_exit ? " [EXIT]" : "",
		   line->flags & OKPROBE_FLAG_COUNTER ? " [COUNTER]" : "",
		   line->probe->args_handler ? " [ARGS]" : "",
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
		seq_printf(m, " detour=%u%s", line->detour_size,
			   line->args_detour ? " args" : "");
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
