// SPDX-License-Identifier: GPL-2.0
/*
 * okprobe_events: probes defined from the shell whose hits are trace events.
 *
 * /sys/kernel/tracing/okprobe_events takes the kernel's kprobe_events
 * grammar (parsed by the C++ core, src/core/probe_events.cpp). Each "p" or
 * "r" line registers an okprobe (or okretprobe), disabled, and, unless a
 * line of its name came first (then the probe joins that event, by the
 * kernel's rules for appending), a trace
 * event events/GROUP/EVENT/ made the way the kernel makes its kprobe and
 * synthetic events: a trace_event_call of okprobe's whose class registers
 * it with the tracing core (trace_add_event_call) and whose reg callback
 * arms the probe when the event is enabled in any trace instance. A hit
 * runs the arguments' fetch programs into a ring buffer entry
 * (trace_event_buffer_reserve/commit), so filters, triggers, hist triggers
 * and trace-cmd see an ordinary event, and into perf's buffer when perf's
 * tracepoint PMU has the event (perf record -e GROUP:EVENT).
 * "-:[GROUP/]EVENT" removes its lines (the last one EBUSY while the event
 * is enabled, as the kernel's); a
 * write opened with O_TRUNC (">") removes them all first. A refused line
 * fails the write with its errno and puts an entry into the kernel's own
 * /sys/kernel/tracing/error_log, caret and all.
 * /sys/kernel/tracing/okprobe_profile counts hits and misses per event, as
 * kprobe_profile does.
 *
 * This file is the two tracefs files, the lists of events and lines and
 * what a line does to them; the running kernel's grammar and what its
 * symbols say of a line's place are probe_events_grammar.c's; an
 * event's probes and trace event are made and taken out in
 * probe_events_call.c, its hits recorded in probe_events_hit.c, lines on
 * modules that come and go followed by probe_events_modules.c, refusals
 * logged by probe_events_log.c (probe_events.h says what they share).
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

LIST_HEAD(okp_events);
LIST_HEAD(okp_event_probes);
DEFINE_MUTEX(okp_events_mutex);
/* Parsing room (a Definition is 40 KB), under okp_events_mutex. */
static struct okp_event_definition *okp_parsed;
static char *okp_event_line;
static struct dentry *okp_events_dentry, *okp_profile_dentry;
static bool okp_modules_watched;

/* ---- Lines: make and remove events (okp_events_mutex held) ------------- */

/* Resolves the arguments' @SYM; 0, or -ENOENT with the log entry made. */
static int okp_event_resolve_symbols(struct okp_event_definition *definition,
				     const char *line)
{
	char name[KSYM_NAME_LEN];
	unsigned long length, address;
	struct okp_event_summary copy;
	const char *symbol;

	/* Its @SYM point into the event's copy of the line. */
	okp_core_event_summary(definition, &copy);
	while (okp_core_event_symbol(definition, 0, &symbol, &length)) {
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
		okp_core_event_set_symbol(definition, 0, address);
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

/* A copy of the parsed line, as a probe of no event yet. */
static struct okp_event_probe *okp_event_probe_new(const struct okp_event_summary *line)
{
	unsigned long size = okp_core_event_compact_size(okp_parsed);
	struct okp_event_probe *ep = kzalloc(sizeof(*ep), GFP_KERNEL);

	if (!ep)
		return NULL;
	INIT_LIST_HEAD(&ep->list);
	INIT_LIST_HEAD(&ep->sibling);
	ep->definition = kvmalloc(size, GFP_KERNEL);
	ep->hits = alloc_percpu(unsigned long);
	if (!line->has_address)
		ep->symbol = kmemdup_nul(line->symbol, line->symbol_length,
					 GFP_KERNEL);
	if (!ep->definition || !ep->hits ||
	    (!line->has_address && !ep->symbol)) {
		okp_event_probe_free(ep);
		return NULL;
	}
	memcpy(ep->definition, okp_parsed, size);
	ep->address = line->address;
	ep->offset = line->offset;
	ep->maxactive = line->maxactive;
	ep->entry_arguments = line->entry_arguments;
	return ep;
}

/*
 * Registers the line's probe: 0, also when its MOD:SYM's module is not
 * loaded (registered when it comes, as kprobe_events takes such a line),
 * or the errno with the log entry made.
 */
static int okp_event_probe_start(struct okp_event_probe *ep,
				 const struct okp_event_summary *line)
{
	enum okp_event_glue_error why;
	int ret = okp_event_probe_register(ep);

	if (ret == -ENOENT && ep->symbol && okp_event_module_missing(ep->symbol)) {
		pr_warn("okprobe_events: %s/%s: the module of %s is not loaded: registered when it is\n",
			ep->event->group, ep->event->name, ep->symbol);
		return 0;
	}
	if (!ret)
		return 0;
	why = ret == -EILSEQ ? OKP_EVENT_ERROR_INSTRUCTION_BOUNDARY :
	      ret == -ENOENT ? OKP_EVENT_ERROR_BAD_PLACE :
			       OKP_EVENT_ERROR_REGISTRATION;
	okp_event_log(line->line, okp_core_event_glue_error(why),
		      line->symbol - line->line);
	return ret;
}

static struct okp_trace_event *okp_event_new(const struct okp_event_summary *line)
{
	unsigned long size = okp_core_event_compact_size(okp_parsed);
	struct okp_trace_event *event = kzalloc(sizeof(*event), GFP_KERNEL);

	if (!event)
		return NULL;
	INIT_LIST_HEAD(&event->list);
	INIT_LIST_HEAD(&event->links);
	INIT_LIST_HEAD(&event->probes);
	event->is_return = line->is_return;
	event->arg_count = line->arg_count;
	event->record_size = line->record_size;
	strscpy(event->group, line->group, sizeof(event->group));
	strscpy(event->name, line->event, sizeof(event->name));
	event->definition = kvmalloc(size, GFP_KERNEL);
	event->field_types = kcalloc(max(line->arg_count, 1U),
				     sizeof(*event->field_types), GFP_KERNEL);
	if (!event->definition || !event->field_types) {
		okp_event_free(event);
		return NULL;
	}
	memcpy(event->definition, okp_parsed, size);
	return event;
}

/*
 * Whether a line for an event that exists may join it, by the kernel's
 * rules: the same kind, the same arguments, not the same probe twice.
 * 0, or -EEXIST with the log entry made.
 */
static int okp_event_check_join(struct okp_trace_event *event,
				struct okp_event_probe *ep,
				const struct okp_event_summary *line)
{
	struct okp_event_error error;
	struct okp_event_probe *sibling;
	int ret;

	ret = okp_core_event_check_join(event->definition, ep->definition,
					&error);
	if (ret) {
		okp_event_log(line->line, error.index, error.column);
		return ret;
	}
	list_for_each_entry(sibling, &event->probes, sibling) {
		if (okp_core_event_same_probe(sibling->definition,
					      ep->definition)) {
			okp_event_log(line->line,
				      okp_core_event_glue_error(OKP_EVENT_ERROR_SAME_PROBE),
				      0);
			return -EEXIST;
		}
	}
	return 0;
}

/* The line's probe joins the event, enabled when the event is. */
static int okp_event_append(struct okp_trace_event *event,
			    struct okp_event_probe *ep,
			    const struct okp_event_summary *line)
{
	int ret;

	ep->event = event;
	mutex_lock(okp_event_mutex());
	ret = okp_event_probe_start(ep, line);
	if (!ret)
		list_add_tail(&ep->sibling, &event->probes);
	mutex_unlock(okp_event_mutex());
	return ret;
}

/* A line for a new event: its probe, then its trace event. */
static int okp_event_create(struct okp_event_probe *ep,
			    const struct okp_event_summary *line)
{
	struct okp_trace_event *event = okp_event_new(line);
	int ret;

	if (!event)
		return -ENOMEM;
	ep->event = event;
	list_add_tail(&ep->sibling, &event->probes);
	ret = okp_event_probe_start(ep, line);
	if (ret)
		goto free;
	ret = okp_event_add_call(event);
	if (ret) {
		okp_event_log(line->line,
			      okp_core_event_glue_error(ret == -EEXIST ?
							OKP_EVENT_ERROR_EXISTS :
							OKP_EVENT_ERROR_REGISTRATION),
			      0);
		okp_event_probe_unregister(ep);
		goto free;
	}
	list_add_tail(&event->list, &okp_events);
	return 0;

free:
	list_del_init(&ep->sibling);
	okp_event_free(event);
	return ret;
}

static int okp_event_define(const struct okp_event_summary *line)
{
	struct okp_trace_event *event = okp_event_find(line->group, line->event);
	struct okp_event_probe *ep;
	int ret;

	ep = okp_event_probe_new(line);
	if (!ep)
		return -ENOMEM;
	ret = event ? okp_event_check_join(event, ep, line) : 0;
	if (!ret)
		ret = okp_event_resolve_symbols(ep->definition, line->line);
	if (ret)
		goto free;
	/* Until its lines are removed, okprobe stays (the calls are ours). */
	ret = -ENODEV;
	if (!try_module_get(THIS_MODULE))
		goto free;
	ret = event ? okp_event_append(event, ep, line) :
		      okp_event_create(ep, line);
	if (ret)
		goto put;
	list_add_tail(&ep->list, &okp_event_probes);
	return 0;

put:
	module_put(THIS_MODULE);
free:
	okp_event_probe_free(ep);
	return ret;
}

/* Whether the line's canonical form, after its name, starts with rest. */
static bool okp_event_matches(struct okp_event_probe *ep, const char *rest,
			      unsigned long length)
{
	const char *tail;
	unsigned long used;

	if (!length)
		return true;
	okp_core_event_format(ep->definition, okp_event_line,
			      OKP_EVENT_LINE_MAX);
	tail = strchr(okp_event_line, ' ');
	if (!tail)
		return false;
	tail++;
	used = strlen(tail);
	return used >= length && !memcmp(tail, rest, length) &&
	       (tail[length] == ' ' || tail[length] == '\0');
}

/*
 * -:[GROUP/][EVENT] [SYM [ARGS]]: every line it names, first defined
 * first, as the kernel's dyn_event_release(): a line of an event with
 * others goes alone, the last with its event (EBUSY while enabled).
 */
static int okp_event_remove_named(const struct okp_event_summary *line)
{
	struct okp_event_probe *ep, *next;
	LIST_HEAD(gone_probes);
	LIST_HEAD(gone_events);
	int found = 0, ret = 0;

	mutex_lock(okp_event_mutex());
	list_for_each_entry_safe(ep, next, &okp_event_probes, list) {
		if ((line->group[0] && strcmp(ep->event->group, line->group)) ||
		    (line->event[0] && strcmp(ep->event->name, line->event)) ||
		    !okp_event_matches(ep, line->rest, line->rest_length))
			continue;
		found++;
		ret = okp_event_probe_unlink(ep, &gone_probes, &gone_events);
		if (ret)
			break;
	}
	if (!list_empty(&gone_probes))
		okp_events_reset_buffers();
	mutex_unlock(okp_event_mutex());
	okp_events_destroy(&gone_probes, &gone_events);
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
		return okp_event_define(&line);
	case OKP_EVENT_REMOVE:
		return okp_event_remove_named(&line);
	default:
		return 0;
	}
}

/* Removes every event, or none when one is busy (the kernel's rule). */
static int okp_events_release_all(void)
{
	struct okp_event_probe *ep, *next;
	struct okp_trace_event *event;
	LIST_HEAD(gone_probes);
	LIST_HEAD(gone_events);
	int ret = 0;

	mutex_lock(okp_event_mutex());
	list_for_each_entry(event, &okp_events, list)
		if (okp_event_busy(event))
			ret = -EBUSY;
	list_for_each_entry_safe(ep, next, &okp_event_probes, list) {
		if (ret)
			break;
		ret = okp_event_probe_unlink(ep, &gone_probes, &gone_events);
	}
	if (!list_empty(&gone_probes))
		okp_events_reset_buffers();
	mutex_unlock(okp_event_mutex());
	okp_events_destroy(&gone_probes, &gone_events);
	return ret;
}

/* ---- tracefs: okprobe_events and okprobe_profile ---------------------- */

static void *okp_events_start(struct seq_file *m, loff_t *pos)
{
	mutex_lock(&okp_events_mutex);
	return seq_list_start(&okp_event_probes, *pos);
}

static void *okp_events_next(struct seq_file *m, void *v, loff_t *pos)
{
	return seq_list_next(v, &okp_event_probes, pos);
}

static void okp_events_stop(struct seq_file *m, void *v)
{
	mutex_unlock(&okp_events_mutex);
}

static int okp_events_show(struct seq_file *m, void *v)
{
	struct okp_event_probe *ep = list_entry(v, struct okp_event_probe, list);

	okp_core_event_format(ep->definition, okp_event_line,
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

/* A line each, as kprobe_profile has one for each probe. */
static int okp_profile_show(struct seq_file *m, void *v)
{
	struct okp_event_probe *ep = list_entry(v, struct okp_event_probe, list);
	unsigned long missed = ep->event->is_return ?
		ep->rp.nmissed + ep->rp.kp.nmissed :
		READ_ONCE(ep->nmissed_before) + okp_event_probe_kp(ep)->nmissed;
	unsigned long hits = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		hits += *per_cpu_ptr(ep->hits, cpu);
	seq_printf(m, "  %-44s %15lu %15lu\n", ep->event->name, hits, missed);
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
		return 0;
	}
	if (okp_events_modules_init()) {
		okp_probe_events_exit();
		return -ENOMEM;
	}
	okp_modules_watched = true;
	okp_events_grammar();
	return 0;

nomem:
	okp_probe_events_exit();
	return -ENOMEM;
}

/* Every event holds a module reference: none is left at module exit. */
void okp_probe_events_exit(void)
{
	if (okp_modules_watched)
		okp_events_modules_exit();
	okp_modules_watched = false;
	if (!IS_ERR_OR_NULL(okp_profile_dentry))
		okp_call(tracefs_remove)(okp_profile_dentry);
	if (!IS_ERR_OR_NULL(okp_events_dentry))
		okp_call(tracefs_remove)(okp_events_dentry);
	okp_profile_dentry = NULL;
	okp_events_dentry = NULL;
	WARN_ON(!list_empty(&okp_events));
	okp_core_event_grammar_exit();
	kfree(okp_event_line);
	kvfree(okp_parsed);
	okp_event_line = NULL;
	okp_parsed = NULL;
}
