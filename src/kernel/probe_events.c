// SPDX-License-Identifier: GPL-2.0
/*
 * okprobe_events: probes defined from the shell whose hits are trace events.
 *
 * /sys/kernel/tracing/okprobe_events takes the kernel's kprobe_events
 * grammar (parsed by the C++ core, src/core/probe_events.cpp). Each "p" or
 * "r" line registers an okprobe (or okretprobe), disabled, and a trace
 * event events/GROUP/EVENT/ made the way the kernel makes its kprobe and
 * synthetic events: a trace_event_call of okprobe's whose class registers
 * it with the tracing core (trace_add_event_call) and whose reg callback
 * arms the probe when the event is enabled in any trace instance. A hit
 * runs the arguments' fetch programs into a ring buffer entry
 * (trace_event_buffer_reserve/commit), so filters, triggers, hist triggers
 * and trace-cmd see an ordinary event, and into perf's buffer when perf's
 * tracepoint PMU has the event (perf record -e GROUP:EVENT).
 * "-:[GROUP/]EVENT" removes one (EBUSY while enabled, as the kernel's); a
 * write opened with O_TRUNC (">") removes them all first. A refused line
 * fails the write with its errno and puts an entry into the kernel's own
 * /sys/kernel/tracing/error_log, caret and all.
 * /sys/kernel/tracing/okprobe_profile counts hits and misses per event, as
 * kprobe_profile does.
 *
 * This file is the two tracefs files, the list of events and what a line
 * does to it (with the symbols it names checked); an event's probe and
 * trace event are made and taken out in probe_events_call.c, its hits
 * recorded in probe_events_hit.c, refusals logged by probe_events_log.c
 * (probe_events.h says what they share).
 *
 * Locks, outermost first: okp_events_mutex (this file's list and every
 * write), the tracing core's event_mutex (its callbacks in
 * probe_events_call.c run under it), okprobe's return and probe mutexes
 * (okprobe_register and friends).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kallsyms.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/trace_events.h>
#include <linux/tracefs.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "glue.h"
#include "probe_events.h"
#include "resolved_calls.h"

/* The most a write may hold: whole lines, many at once. */
#define OKP_EVENTS_WRITE_MAX (1024 * 1024)
/* The longest line okprobe_events reads back, with its newline. */
#define OKP_EVENT_LINE_MAX 8192

static LIST_HEAD(okp_events);
static DEFINE_MUTEX(okp_events_mutex);
/* Parsing room (a Definition is 40 KB), under okp_events_mutex. */
static struct okp_event_definition *okp_parsed;
static char *okp_event_line;
static struct dentry *okp_events_dentry, *okp_profile_dentry;

/* ---- Lines: make and remove events (okp_events_mutex held) ------------- */

/*
 * The symbols named name, in vmlinux and in every module, as kprobe_events
 * counts them (number_of_same_symbols()).
 */
struct okp_symbol_count {
	unsigned int count;
	const char *name;
};

static int okp_count_symbol(void *data, unsigned long unused)
{
	((struct okp_symbol_count *)data)->count++;
	return 0;
}

#ifdef OKP_HAVE_MODULE_SYMBOLS_BY_NAME
static int okp_count_module_symbol(void *data, const char *name,
				   unsigned long unused)
#else
static int okp_count_module_symbol(void *data, const char *name,
				   struct module *module, unsigned long unused)
#endif
{
	struct okp_symbol_count *count = data;

	if (!strcmp(name, count->name))
		count->count++;
	return 0;
}

/* How many symbols are named name; -1 when this kernel cannot tell. */
static int okp_symbols_named(const char *name)
{
	struct okp_symbol_count count = { .name = name };

	if (!okp_resolved(kallsyms_on_each_match_symbol) ||
	    !okp_resolved(module_kallsyms_on_each_symbol))
		return -1;
	okp_call(kallsyms_on_each_match_symbol)(okp_count_symbol, name, &count);
#ifdef OKP_HAVE_MODULE_SYMBOLS_BY_NAME
	okp_call(module_kallsyms_on_each_symbol)(NULL, okp_count_module_symbol,
						 &count);
#else
	okp_call(module_kallsyms_on_each_symbol)(okp_count_module_symbol,
						 &count);
#endif
	return count.count;
}

static enum okp_event_place okp_event_place(const struct okp_event_place_query *query)
{
	char name[KSYM_NAME_LEN];

	if (query->symbol_length >= sizeof(name))
		return OKP_EVENT_UNKNOWN_SYMBOL;
	memcpy(name, query->symbol, query->symbol_length);
	name[query->symbol_length] = '\0';
	/* A module's symbol: its module may come later; registration says. */
	if (!strchr(name, ':')) {
		if (!okp_ksyms_lookup(name))
			return OKP_EVENT_UNKNOWN_SYMBOL;
		/* kprobe_events refuses a name that means several functions. */
		if (okp_symbols_named(name) > 1)
			return OKP_EVENT_NOT_UNIQUE;
	}
	return query->offset ? OKP_EVENT_INSIDE_FUNCTION :
			       OKP_EVENT_FUNCTION_ENTRY;
}

/* Resolves the arguments' @SYM; 0, or -ENOENT with the log entry made. */
static int okp_event_resolve_symbols(struct okp_trace_event *event,
				     const char *line)
{
	char name[KSYM_NAME_LEN];
	unsigned long length, address;
	struct okp_event_summary copy;
	const char *symbol;

	/* Its @SYM point into the event's copy of the line. */
	okp_core_event_summary(event->definition, &copy);
	while (okp_core_event_symbol(event->definition, 0, &symbol, &length)) {
		address = 0;
		if (length < sizeof(name)) {
			memcpy(name, symbol, length);
			name[length] = '\0';
			address = okp_ksyms_lookup(name);
		}
		if (!address) {
			okp_event_log(line, okp_core_event_glue_error(OKP_EVENT_ERROR_BAD_MEMORY),
				      symbol - copy.line);
			return -ENOENT;
		}
		okp_core_event_set_symbol(event->definition, 0, address);
	}
	return 0;
}

static struct okp_trace_event *okp_event_find(const char *group,
					      const char *name)
{
	struct okp_trace_event *event;

	list_for_each_entry(event, &okp_events, list)
		if (!strcmp(event->group, group) && !strcmp(event->name, name))
			return event;
	return NULL;
}

static int okp_event_create(const struct okp_event_summary *line)
{
	unsigned long size = okp_core_event_compact_size(okp_parsed);
	struct okp_trace_event *event;
	int ret;

	if (okp_event_find(line->group, line->event)) {
		okp_event_log(line->line,
			      okp_core_event_glue_error(OKP_EVENT_ERROR_EXISTS), 0);
		return -EEXIST;
	}
	event = kzalloc(sizeof(*event), GFP_KERNEL);
	if (!event)
		return -ENOMEM;
	INIT_LIST_HEAD(&event->links);
	event->is_return = line->is_return;
	event->arg_count = line->arg_count;
	event->record_size = line->record_size;
	strscpy(event->group, line->group, sizeof(event->group));
	strscpy(event->name, line->event, sizeof(event->name));
	event->definition = kvmalloc(size, GFP_KERNEL);
	event->field_types = kcalloc(max(line->arg_count, 1U),
				     sizeof(*event->field_types), GFP_KERNEL);
	event->hits = alloc_percpu(unsigned long);
	ret = -ENOMEM;
	if (!event->definition || !event->field_types || !event->hits)
		goto free;
	memcpy(event->definition, okp_parsed, size);
	ret = okp_event_resolve_symbols(event, line->line);
	if (ret)
		goto free;
	/* Until its events are removed, okprobe stays (the calls are ours). */
	ret = -ENODEV;
	if (!try_module_get(THIS_MODULE))
		goto free;
	ret = okp_event_register_probe(event, line);
	if (ret)
		goto put;
	ret = okp_event_add_call(event);
	if (ret) {
		okp_event_log(line->line,
			      okp_core_event_glue_error(ret == -EEXIST ?
							OKP_EVENT_ERROR_EXISTS :
							OKP_EVENT_ERROR_REGISTRATION),
			      0);
		goto unregister;
	}
	list_add_tail(&event->list, &okp_events);
	return 0;

unregister:
	if (event->is_return)
		okretprobe_unregister(&event->rp);
	else
		okprobe_unregister(&event->probe);
put:
	module_put(THIS_MODULE);
free:
	okp_event_free(event);
	return ret;
}

/* Whether the event's canonical line, after its name, starts with rest. */
static bool okp_event_matches(struct okp_trace_event *event, const char *rest,
			      unsigned long length)
{
	const char *tail;
	unsigned long used;

	if (!length)
		return true;
	okp_core_event_format(event->definition, okp_event_line,
			      OKP_EVENT_LINE_MAX);
	tail = strchr(okp_event_line, ' ');
	if (!tail)
		return false;
	tail++;
	used = strlen(tail);
	return used >= length && !memcmp(tail, rest, length) &&
	       (tail[length] == ' ' || tail[length] == '\0');
}

/* -:[GROUP/][EVENT] [SYM [ARGS]]: every event it names. */
static int okp_event_remove_named(const struct okp_event_summary *line)
{
	struct okp_trace_event *event, *next;
	int found = 0, ret = 0;
	LIST_HEAD(gone);

	mutex_lock(okp_event_mutex());
	list_for_each_entry_safe(event, next, &okp_events, list) {
		if ((line->group[0] && strcmp(event->group, line->group)) ||
		    (line->event[0] && strcmp(event->name, line->event)) ||
		    !okp_event_matches(event, line->rest, line->rest_length))
			continue;
		found++;
		ret = okp_event_unlink(event, &gone);
		if (ret)
			break;
	}
	if (!list_empty(&gone))
		okp_events_reset_buffers();
	mutex_unlock(okp_event_mutex());
	okp_events_destroy(&gone);
	return found ? ret : -ENOENT;
}

static int okp_event_run_line(const char *text, unsigned long length)
{
	struct okp_event_summary line;
	struct okp_event_error error;
	int ret;

	ret = okp_core_event_parse(okp_parsed, text, length, okp_event_place,
				   &error);
	okp_core_event_summary(okp_parsed, &line);
	if (ret) {
		okp_event_log(line.line, error.index, error.column);
		return ret;
	}
	switch (line.command) {
	case OKP_EVENT_PROBE:
		return okp_event_create(&line);
	case OKP_EVENT_REMOVE:
		return okp_event_remove_named(&line);
	default:
		return 0;
	}
}

/* Removes every event, or none when one is busy (the kernel's rule). */
static int okp_events_release_all(void)
{
	struct okp_trace_event *event, *next;
	int ret = 0;
	LIST_HEAD(gone);

	mutex_lock(okp_event_mutex());
	list_for_each_entry(event, &okp_events, list)
		if (okp_event_busy(event))
			ret = -EBUSY;
	list_for_each_entry_safe(event, next, &okp_events, list) {
		if (ret)
			break;
		ret = okp_event_unlink(event, &gone);
	}
	if (!list_empty(&gone))
		okp_events_reset_buffers();
	mutex_unlock(okp_event_mutex());
	okp_events_destroy(&gone);
	return ret;
}

/* ---- tracefs: okprobe_events and okprobe_profile ---------------------- */

static void *okp_events_start(struct seq_file *m, loff_t *pos)
{
	mutex_lock(&okp_events_mutex);
	return seq_list_start(&okp_events, *pos);
}

static void *okp_events_next(struct seq_file *m, void *v, loff_t *pos)
{
	return seq_list_next(v, &okp_events, pos);
}

static void okp_events_stop(struct seq_file *m, void *v)
{
	mutex_unlock(&okp_events_mutex);
}

static int okp_events_show(struct seq_file *m, void *v)
{
	struct okp_trace_event *event =
		list_entry(v, struct okp_trace_event, list);

	okp_core_event_format(event->definition, okp_event_line,
			      OKP_EVENT_LINE_MAX);
	seq_printf(m, "%s\n", okp_event_line);
	return 0;
}

static const struct seq_operations okp_events_seq_ops = {
	.start = okp_events_start,
	.next = okp_events_next,
	.stop = okp_events_stop,
	.show = okp_events_show,
};

static int okp_events_open(struct inode *inode, struct file *file)
{
	int ret;

	if ((file->f_mode & FMODE_WRITE) && (file->f_flags & O_TRUNC)) {
		mutex_lock(&okp_events_mutex);
		ret = okp_events_release_all();
		mutex_unlock(&okp_events_mutex);
		if (ret)
			return ret;
	}
	return seq_open(file, &okp_events_seq_ops);
}

static ssize_t okp_events_write(struct file *file, const char __user *from,
				size_t count, loff_t *ppos)
{
	char *text, *line, *end;
	int ret = 0;

	if (count > OKP_EVENTS_WRITE_MAX)
		return -E2BIG;
	text = vmemdup_user(from, count);
	if (IS_ERR(text))
		return PTR_ERR(text);
	mutex_lock(&okp_events_mutex);
	for (line = text; !ret && line < text + count; line = end + 1) {
		end = memchr(line, '\n', text + count - line);
		if (!end)
			end = text + count;
		ret = okp_event_run_line(line, end - line);
	}
	mutex_unlock(&okp_events_mutex);
	kvfree(text);
	return ret ? ret : count;
}

static const struct file_operations okp_events_fops = {
	.owner = THIS_MODULE,
	.open = okp_events_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = seq_release,
	.write = okp_events_write,
};

static int okp_profile_show(struct seq_file *m, void *v)
{
	struct okp_trace_event *event =
		list_entry(v, struct okp_trace_event, list);
	unsigned long missed = event->is_return ?
		event->rp.nmissed + event->rp.kp.nmissed : event->probe.nmissed;
	unsigned long hits = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		hits += *per_cpu_ptr(event->hits, cpu);
	seq_printf(m, "  %-44s %15lu %15lu\n", event->name, hits, missed);
	return 0;
}

static const struct seq_operations okp_profile_seq_ops = {
	.start = okp_events_start,
	.next = okp_events_next,
	.stop = okp_events_stop,
	.show = okp_profile_show,
};

static int okp_profile_open(struct inode *inode, struct file *file)
{
	return seq_open(file, &okp_profile_seq_ops);
}

static const struct file_operations okp_profile_fops = {
	.owner = THIS_MODULE,
	.open = okp_profile_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = seq_release,
};

int okp_probe_events_init(void)
{
	/* Open event files hold dynamic events, which removal must respect. */
	if (!IS_ENABLED(CONFIG_DYNAMIC_EVENTS)) {
		pr_info("no CONFIG_DYNAMIC_EVENTS: /sys/kernel/tracing/okprobe_events is not there\n");
		return 0;
	}
	okp_parsed = kvmalloc(okp_core_event_size(), GFP_KERNEL);
	okp_event_line = kmalloc(OKP_EVENT_LINE_MAX, GFP_KERNEL);
	if (!okp_parsed || !okp_event_line)
		goto nomem;
	if (!okp_resolved(tracefs_create_file) || !okp_resolved(tracefs_remove) ||
	    !okp_ksyms.event_mutex) {
		pr_warn("no tracefs_create_file or event_mutex: /sys/kernel/tracing/okprobe_events is not there\n");
		okp_probe_events_exit();
		return 0;
	}
	okp_events_dentry = okp_call(tracefs_create_file)("okprobe_events", 0644,
							  NULL, NULL,
							  &okp_events_fops);
	okp_profile_dentry = okp_call(tracefs_create_file)("okprobe_profile",
							   0444, NULL, NULL,
							   &okp_profile_fops);
	if (IS_ERR_OR_NULL(okp_events_dentry) ||
	    IS_ERR_OR_NULL(okp_profile_dentry)) {
		/* No tracefs: okprobe works, without its shell interface. */
		pr_warn("no tracefs: /sys/kernel/tracing/okprobe_events is not there\n");
		okp_probe_events_exit();
	}
	return 0;

nomem:
	okp_probe_events_exit();
	return -ENOMEM;
}

/* Every event holds a module reference: none is left at module exit. */
void okp_probe_events_exit(void)
{
	if (!IS_ERR_OR_NULL(okp_profile_dentry))
		okp_call(tracefs_remove)(okp_profile_dentry);
	if (!IS_ERR_OR_NULL(okp_events_dentry))
		okp_call(tracefs_remove)(okp_events_dentry);
	okp_profile_dentry = NULL;
	okp_events_dentry = NULL;
	WARN_ON(!list_empty(&okp_events));
	kfree(okp_event_line);
	kvfree(okp_parsed);
	okp_event_line = NULL;
	okp_parsed = NULL;
}
