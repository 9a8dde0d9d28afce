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
 * Locks, outermost first: okp_events_mutex (this file's list and every
 * write), the tracing core's event_mutex (its callbacks here run under
 * it), okprobe's return and probe mutexes (okprobe_register and friends).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kallsyms.h>
#include <linux/kmemleak.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/trace_events.h>
#include <linux/tracefs.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <okprobe.h>

#include "core/core_api.h"
#include "glue.h"
#include "resolved_calls.h"

/* The most a write may hold: whole lines, many at once. */
#define OKP_EVENTS_WRITE_MAX (1024 * 1024)
/* The longest line okprobe_events reads back, with its newline. */
#define OKP_EVENT_LINE_MAX 8192

/* An instance (trace_array) the event is enabled in. */
struct okp_event_link {
	struct list_head list;
	struct trace_event_file *file;
};

struct okp_trace_event {
	struct list_head list;		/* okp_events, okp_events_mutex */
	struct trace_event_class class;
	struct trace_event_call call;
	int is_return;
	struct okprobe probe;
	struct okretprobe rp;
	/* The instances it is enabled in: RCU, written under event_mutex. */
	struct list_head links;
	/* Users of its probe: instances' links and perf. */
	unsigned int enabled;
	/* perf's tracepoint PMU has it (its call.perf_events are there). */
	int perf;
	unsigned int arg_count;
	unsigned int record_size;	/* bytes of the fixed fields */
	/* Per CPU, as the kernel's nhit: a hit never shares a cache line. */
	unsigned long __percpu *hits;
	char *symbol;			/* probe.symbol_name's storage */
	char (*field_types)[32];	/* trace_define_field keeps the pointers */
	struct okp_event_definition *definition;
	char group[64];
	char name[64];
};

/* A p event's ring buffer entry starts so: where the probe hit. */
struct okp_event_entry {
	struct trace_entry ent;
	unsigned long ip;
};

/* An r event's, as the kernel's kretprobe events': function, return. */
struct okp_return_entry {
	struct trace_entry ent;
	unsigned long func;
	unsigned long ret_ip;
};

/* The bytes before the fields. */
static unsigned long okp_event_header(const struct okp_trace_event *event)
{
	return event->is_return ? sizeof(struct okp_return_entry) :
				  sizeof(struct okp_event_entry);
}

static LIST_HEAD(okp_events);
static DEFINE_MUTEX(okp_events_mutex);
/* Parsing room (a Definition is 40 KB), under okp_events_mutex. */
static struct okp_event_definition *okp_parsed;
static char *okp_event_line;
static struct dentry *okp_events_dentry, *okp_profile_dentry;

/* The tracing core's event_mutex: neither exported nor declared to modules. */
static struct mutex *okp_event_mutex(void)
{
	return (struct mutex *)okp_ksyms.event_mutex;
}

/* ---- The hit: fetch programs into a ring buffer entry ---------------- */

/*
 * The core's memory reads at a hit (glue_services.h). The words above a
 * stack pointer as regs_get_kernel_stack_nth() reads them, which riscv
 * does not export: 0 past the task's stack or on a fault.
 */
unsigned long notrace okp_glue_event_stack_word(unsigned long sp,
						unsigned int n)
{
	unsigned long address = sp + n * sizeof(unsigned long), value;

	if ((address & ~(THREAD_SIZE - 1)) != (sp & ~(THREAD_SIZE - 1)) ||
	    copy_from_kernel_nofault(&value, (void *)address, sizeof(value)))
		return 0;
	return value;
}
NOKPROBE_SYMBOL(okp_glue_event_stack_word);

int notrace okp_glue_event_read(unsigned long address, void *to,
				unsigned long size, int user)
{
	if (user)
		return !copy_from_user_nofault(to, (const void __user *)address,
					       size);
	return !copy_from_kernel_nofault(to, (const void *)address, size);
}
NOKPROBE_SYMBOL(okp_glue_event_read);

/*
 * The string at address into to (size bytes at most, the last one then
 * made the NUL), or only its length with size 0: its length with the NUL,
 * 0 on a fault. The length byte by byte, as the kernel's
 * fetch_store_strlen(); the copy with strncpy_from_*_nofault() where they
 * resolved (6.1 exports neither), else byte by byte too.
 */
unsigned long notrace __kprobes okp_glue_event_read_string(unsigned long address,
							   char *to,
							   unsigned long size,
							   int user)
{
	unsigned long length = 0, limit = size ? size : PATH_MAX;
	long copied = -EFAULT;
	char c;

	if (size && user && okp_resolved(strncpy_from_user_nofault))
		copied = okp_call(strncpy_from_user_nofault)(to,
				(const void __user *)address, size);
	else if (size && !user && okp_resolved(strncpy_from_kernel_nofault))
		copied = okp_call(strncpy_from_kernel_nofault)(to,
				(const void *)address, size);
	else
		goto bytes;
	/* Its length with the NUL (size when cut, the last byte the NUL). */
	return copied < 0 ? 0 : copied;

bytes:
	do {
		if (okp_glue_event_read(address + length, &c, 1, user) != 1)
			return 0;
		if (size)
			to[length] = length + 1 < size ? c : '\0';
		length++;
	} while (c && length < limit);
	return length;
}

/* "symbol+0x1/0x20 [module]", sized exactly as fetch_store_symstrlen(). */
unsigned long notrace __kprobes okp_glue_event_symbol_string(unsigned long address,
							     char *to,
							     unsigned long size)
{
	char name[KSYM_SYMBOL_LEN];
	unsigned long length = sprint_symbol(name, address) + 1;

	if (!size)
		return length;
	length = min(length, size);
	memcpy(to, name, length - 1);
	to[length - 1] = '\0';
	return length;
}

/*
 * The entry's head after the trace_entry: where the probe hit (ip), or for
 * an r event the function and where it returned to.
 */
static void notrace okp_event_fill_head(struct okp_trace_event *event,
					u8 *entry, unsigned long ip,
					unsigned long ret_ip)
{
	if (event->is_return) {
		((struct okp_return_entry *)entry)->func = ip;
		((struct okp_return_entry *)entry)->ret_ip = ret_ip;
	} else {
		((struct okp_event_entry *)entry)->ip = ip;
	}
}
NOKPROBE_SYMBOL(okp_event_fill_head);

static void notrace okp_event_trace(struct okp_trace_event *event,
				    struct trace_event_file *file,
				    const struct okp_event_environment *env,
				    struct pt_regs *regs, unsigned long ip,
				    unsigned long ret_ip)
{
	unsigned long dynamic, header = okp_event_header(event);
	struct trace_event_buffer buffer;
	u8 *entry;

	if (trace_trigger_soft_disabled(file))
		return;
	dynamic = okp_core_event_dynamic_size(event->definition, env);
	entry = trace_event_buffer_reserve(&buffer, file,
					   header + event->record_size + dynamic);
	if (!entry)
		return;
	buffer.regs = regs;
	okp_event_fill_head(event, entry, ip, ret_ip);
	okp_core_event_store(event->definition, env, entry, entry + header,
			     dynamic);
	trace_event_buffer_commit(&buffer);
}
NOKPROBE_SYMBOL(okp_event_trace);

#ifdef CONFIG_PERF_EVENTS
/*
 * The event for perf's tracepoint PMU (perf record -e GROUP:EVENT, and
 * perf_event_open()'s PERF_TYPE_TRACEPOINT): the same record, in perf's
 * buffer for this CPU, as the kernel's kprobe_perf_func() writes it.
 */
static void notrace okp_event_perf(struct okp_trace_event *event,
				   const struct okp_event_environment *env,
				   struct pt_regs *regs, unsigned long ip,
				   unsigned long ret_ip)
{
	unsigned long dynamic, header = okp_event_header(event);
	struct hlist_head *head = this_cpu_ptr(event->call.perf_events);
	int size, rctx;
	u8 *entry;

	if (hlist_empty(head))
		return;
	dynamic = okp_core_event_dynamic_size(event->definition, env);
	/* perf puts a u32 size before the record, and wants u64 alignment. */
	size = ALIGN(header + event->record_size + dynamic + sizeof(u32),
		     sizeof(u64)) - sizeof(u32);
	/* perf_trace_buf_alloc() would WARN: such a record is not sent. */
	if (size > PERF_MAX_TRACE_SIZE)
		return;
	entry = perf_trace_buf_alloc(size, NULL, &rctx);
	if (!entry)
		return;
	okp_event_fill_head(event, entry, ip, ret_ip);
	memset(entry + header, 0, size - header);
	okp_core_event_store(event->definition, env, entry, entry + header,
			     dynamic);
	perf_trace_buf_submit(entry, size, rctx, event->call.event.type, 1,
			      regs, head, NULL);
}
NOKPROBE_SYMBOL(okp_event_perf);
#endif

/* A hit of the event's probe: an entry in every instance it is on in. */
static void notrace okp_event_hit(struct okp_trace_event *event,
				  struct pt_regs *regs, unsigned long ip,
				  unsigned long ret_ip)
{
	const struct okp_event_environment env = {
		.regs = regs,
		.comm = current->comm,
	};
	struct okp_event_link *link;

	raw_cpu_inc(*event->hits);
	/* Handlers run with preemption off: an RCU-sched reader. */
	list_for_each_entry_rcu(link, &event->links, list)
		okp_event_trace(event, link->file, &env, regs, ip, ret_ip);
#ifdef CONFIG_PERF_EVENTS
	/* Acquire: perf's core made call.perf_events before the release. */
	if (smp_load_acquire(&event->perf))
		okp_event_perf(event, &env, regs, ip, ret_ip);
#endif
}
NOKPROBE_SYMBOL(okp_event_hit);

static int notrace okp_event_pre_handler(struct okprobe *probe,
					 struct pt_regs *regs)
{
	struct okp_trace_event *event =
		container_of(probe, struct okp_trace_event, probe);

	okp_event_hit(event, regs, (unsigned long)probe->addr, 0);
	return 0;
}
NOKPROBE_SYMBOL(okp_event_pre_handler);

/* An r event: the function's address, and where it returned to. */
static int notrace okp_event_return_handler(struct okretprobe_instance *ri,
					    struct pt_regs *regs)
{
	struct okp_trace_event *event =
		container_of(ri->rp, struct okp_trace_event, rp);

	okp_event_hit(event, regs, (unsigned long)ri->rp->kp.addr,
		      ri->ret_addr);
	return 0;
}
NOKPROBE_SYMBOL(okp_event_return_handler);

/* ---- The tracing core's callbacks (event_mutex held) ------------------ */

/* One more user of the event's probe: enabled with the first. */
static int okp_event_arm(struct okp_trace_event *event)
{
	int ret = 0;

	if (event->enabled++ == 0)
		ret = event->is_return ? okretprobe_enable(&event->rp) :
					 okprobe_enable(&event->probe);
	if (ret)
		event->enabled--;
	return ret;
}

/* One user fewer: disabled with the last. */
static void okp_event_disarm(struct okp_trace_event *event)
{
	if (--event->enabled)
		return;
	if (event->is_return)
		okretprobe_disable(&event->rp);
	else
		okprobe_disable(&event->probe);
}

static int okp_event_enable(struct okp_trace_event *event,
			    struct trace_event_file *file)
{
	struct okp_event_link *link = kmalloc(sizeof(*link), GFP_KERNEL);
	int ret;

	if (!link)
		return -ENOMEM;
	link->file = file;
	list_add_tail_rcu(&link->list, &event->links);
	ret = okp_event_arm(event);
	if (ret) {
		list_del_rcu(&link->list);
		synchronize_rcu();
		kfree(link);
	}
	return ret;
}

static void okp_event_disable(struct okp_trace_event *event,
			      struct trace_event_file *file)
{
	struct okp_event_link *link, *found = NULL;

	list_for_each_entry(link, &event->links, list)
		if (link->file == file)
			found = link;
	if (WARN_ON_ONCE(!found))
		return;
	list_del_rcu(&found->list);
	okp_event_disarm(event);
	/* No hit still writes to the file's buffer once this returns. */
	synchronize_rcu();
	kfree(found);
}

static int okp_event_reg(struct trace_event_call *call, enum trace_reg type,
			 void *data)
{
	struct okp_trace_event *event = call->data;
	int __maybe_unused ret; /* without CONFIG_PERF_EVENTS */

	switch (type) {
	case TRACE_REG_REGISTER:
		return okp_event_enable(event, data);
	case TRACE_REG_UNREGISTER:
		okp_event_disable(event, data);
		return 0;
#ifdef CONFIG_PERF_EVENTS
	/*
	 * perf's core made call->perf_events before this and frees them
	 * after a grace period past the unregistration (as for kprobe
	 * events): hits test event->perf first.
	 */
	case TRACE_REG_PERF_REGISTER:
		ret = okp_event_arm(event);
		if (ret)
			return ret;
		/* Pairs with okp_event_hit()'s acquire: perf_events first. */
		smp_store_release(&event->perf, 1);
		return 0;
	case TRACE_REG_PERF_UNREGISTER:
		WRITE_ONCE(event->perf, 0);
		okp_event_disarm(event);
		return 0;
#endif
	default:
		return 0;
	}
}

static int okp_event_define_fields(struct trace_event_call *call)
{
	struct okp_trace_event *event = call->data;
	struct okp_event_field field;
	unsigned int i;
	int ret;

	if (event->is_return) {
		ret = trace_define_field(call, "unsigned long", "__probe_func",
					 offsetof(struct okp_return_entry, func),
					 sizeof(unsigned long), 0, FILTER_OTHER);
		if (!ret)
			ret = trace_define_field(call, "unsigned long",
						 "__probe_ret_ip",
						 offsetof(struct okp_return_entry,
							  ret_ip),
						 sizeof(unsigned long), 0,
						 FILTER_OTHER);
	} else {
		ret = trace_define_field(call, "unsigned long", "__probe_ip",
					 offsetof(struct okp_event_entry, ip),
					 sizeof(unsigned long), 0, FILTER_OTHER);
	}
	for (i = 0; !ret && i < event->arg_count; i++) {
		okp_core_event_field(event->definition, i, &field);
		strscpy(event->field_types[i], field.type,
			sizeof(event->field_types[i]));
		ret = trace_define_field(call, event->field_types[i],
					 field.name,
					 okp_event_header(event) + field.offset,
					 field.size, field.is_signed,
					 FILTER_OTHER);
	}
	return ret;
}

static struct trace_event_fields okp_event_fields_array[] = {
	{ .type = TRACE_FUNCTION_TYPE,
	  .define_fields = okp_event_define_fields },
	{}
};

/* One element of a field, as the kernel's kprobe events print it. */
static void okp_event_print_element(struct trace_seq *s,
				    const struct okp_event_entry *entry,
				    unsigned long entry_size, const u8 *at,
				    const struct okp_event_field *field)
{
	unsigned long offset, length;
	u64 value = 0;
	u32 location;

	if (field->kind == OKP_FIELD_STRING) {
		memcpy(&location, at, sizeof(location));
		offset = location & 0xffff;
		length = location >> 16;
		/* Never past the record, whatever its bytes say. */
		if (!length || offset + length > entry_size ||
		    ((const char *)entry)[offset + length - 1])
			trace_seq_puts(s, "(fault)");
		else
			trace_seq_printf(s, "\"%s\"",
					 (const char *)entry + offset);
		return;
	}
	memcpy(&value, at, field->element_size);
	switch (field->kind) {
	case OKP_FIELD_UNSIGNED:
		trace_seq_printf(s, "%llu", value);
		break;
	case OKP_FIELD_SIGNED: {
		int shift = 64 - 8 * field->element_size;

		trace_seq_printf(s, "%lld", (s64)(value << shift) >> shift);
		break;
	}
	case OKP_FIELD_SYMBOL:
		trace_seq_printf(s, "%pS", (void *)(unsigned long)value);
		break;
	default:
		trace_seq_printf(s, "0x%llx", value);
		break;
	}
}

static enum print_line_t okp_event_print(struct trace_iterator *iter,
					 int flags,
					 struct trace_event *trace_event)
{
	struct okp_trace_event *event =
		container_of(trace_event, struct okp_trace_event, call.event);
	const struct okp_event_entry *entry = (void *)iter->ent;
	const struct okp_return_entry *returned = (void *)iter->ent;
	const u8 *fields = (const u8 *)entry + okp_event_header(event);
	struct trace_seq *s = &iter->seq;
	struct okp_event_field field;
	unsigned int i, e, elements;

	/* As the kernel's kprobe and kretprobe events print theirs. */
	if (event->is_return)
		trace_seq_printf(s, "%s: (%pS <- %pS)", event->name,
				 (void *)returned->ret_ip,
				 (void *)returned->func);
	else
		trace_seq_printf(s, "%s: (%pS)", event->name,
				 (void *)entry->ip);
	for (i = 0; i < event->arg_count; i++) {
		okp_core_event_field(event->definition, i, &field);
		trace_seq_printf(s, " %s=", field.name);
		elements = field.count ? field.count : 1;
		if (field.count)
			trace_seq_putc(s, '{');
		for (e = 0; e < elements; e++) {
			if (e)
				trace_seq_putc(s, ',');
			okp_event_print_element(s, entry, iter->ent_size,
						fields + field.offset +
							e * field.element_size,
						&field);
		}
		if (field.count)
			trace_seq_putc(s, '}');
	}
	trace_seq_putc(s, '\n');
	return trace_handle_return(s);
}

static struct trace_event_functions okp_event_functions = {
	.trace = okp_event_print,
};

/* ---- Lines: make and remove events (okp_events_mutex held) ------------- */

/*
 * error_log's entries keep the text table they were given and read it
 * whenever error_log is read, also after okprobe.ko is gone; the kernel
 * has no way to take an entry back. The table and its texts are copied
 * once per load, at the first error, into memory never freed (about
 * 3 KB), and told to kmemleak: once error_log has let go of the entries
 * and okprobe.ko its pointer, nothing refers to them, by design.
 */
static const char **okp_lasting_error_texts(void)
{
	static const char **texts;
	const char **ours = okp_core_event_error_texts();
	unsigned long count = 0, i;

	if (texts)
		return texts;
	while (ours[count])
		count++;
	texts = kcalloc(count + 1, sizeof(*texts), GFP_KERNEL);
	for (i = 0; texts && i < count; i++) {
		texts[i] = kstrdup(ours[i], GFP_KERNEL);
		if (texts[i])
			continue;
		/* Nothing of okprobe.ko's own may outlive it: no table. */
		while (i--)
			kfree(texts[i]);
		kfree(texts);
		texts = NULL;
	}
	if (!texts)
		return NULL;
	kmemleak_not_leak(texts);
	for (i = 0; i < count; i++)
		kmemleak_not_leak(texts[i]);
	return texts;
}

static void okp_event_log(const char *line, unsigned int index,
			  unsigned int column)
{
	const char **texts = okp_lasting_error_texts();

	if (okp_resolved(tracing_log_err) && texts)
		okp_call(tracing_log_err)(NULL, "okprobe_events", line, texts,
					  index, column);
	else
		pr_info_ratelimited("okprobe_events: %s: %s\n", line,
				    okp_core_event_error_texts()[index]);
}

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

static void okp_event_free(struct okp_trace_event *event)
{
	kfree(event->call.print_fmt);
	free_percpu(event->hits);
	kvfree(event->definition);
	kfree(event->field_types);
	kfree(event->symbol);
	kfree(event);
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

static int okp_event_register_probe(struct okp_trace_event *event,
				    const struct okp_event_summary *line)
{
	struct okprobe *probe = event->is_return ? &event->rp.kp : &event->probe;
	int ret;

	if (line->has_address) {
		probe->addr = (void *)line->address;
	} else {
		event->symbol = kmemdup_nul(line->symbol, line->symbol_length,
					    GFP_KERNEL);
		if (!event->symbol)
			return -ENOMEM;
		probe->symbol_name = event->symbol;
		probe->offset = line->offset;
	}
	probe->flags = OKPROBE_FLAG_DISABLED;
	if (event->is_return) {
		event->rp.handler = okp_event_return_handler;
		event->rp.maxactive = line->maxactive;
		ret = okretprobe_register(&event->rp);
	} else {
		probe->pre_handler = okp_event_pre_handler;
		ret = okprobe_register(probe);
	}
	if (ret) {
		enum okp_event_glue_error why =
			ret == -EILSEQ ? OKP_EVENT_ERROR_INSTRUCTION_BOUNDARY :
			ret == -ENOENT ? OKP_EVENT_ERROR_BAD_PLACE :
					 OKP_EVENT_ERROR_REGISTRATION;

		okp_event_log(line->line, okp_core_event_glue_error(why),
			      line->symbol - line->line);
	}
	return ret;
}

/*
 * Whether any trace event (the kernel's, kprobe_events', synthetic, a
 * module's) is group/name already, as trace_probe_register_event_call()
 * asks before adding one. event_mutex held.
 */
static bool okp_trace_event_exists(const char *group, const char *name)
{
	struct list_head *events = (struct list_head *)okp_ksyms.ftrace_events;
	struct trace_event_call *call;

	if (!events)
		return false;
	list_for_each_entry(call, events, list)
		if (call->class && call->class->system &&
		    !strcmp(call->class->system, group) &&
		    !strcmp(trace_event_name(call), name))
			return true;
	return false;
}

static int okp_event_add_call(struct okp_trace_event *event)
{
	struct trace_event_call *call = &event->call;
	unsigned long length;
	int ret;

	length = okp_core_event_print_fmt(event->definition, NULL, 0) + 1;
	call->print_fmt = kmalloc(length, GFP_KERNEL);
	if (!call->print_fmt)
		return -ENOMEM;
	okp_core_event_print_fmt(event->definition, call->print_fmt, length);
	event->class.system = event->group;
	event->class.fields_array = okp_event_fields_array;
	event->class.reg = okp_event_reg;
	INIT_LIST_HEAD(&event->class.fields);
	call->class = &event->class;
	call->name = event->name;
	call->event.funcs = &okp_event_functions;
	call->flags = TRACE_EVENT_FL_DYNAMIC;
	call->data = event;
	if (!register_trace_event(&call->event))
		return -ENODEV;
	/* trace_add_event_call() wants the tracing core's event_mutex. */
	mutex_lock(okp_event_mutex());
	ret = okp_trace_event_exists(event->group, event->name) ? -EEXIST :
		trace_add_event_call(call);
	mutex_unlock(okp_event_mutex());
	if (ret)
		unregister_trace_event(&call->event);
	return ret;
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

/*
 * Enabled, or an event file of it open (trace_event_dyn_busy()); asked
 * under event_mutex, which also holds off a new reference.
 */
static bool okp_event_busy(struct okp_trace_event *event)
{
	return event->enabled || atomic_read(&event->call.refcnt);
}

/*
 * Takes an event out of the tracing core unless it is busy, onto gone;
 * 0, EBUSY or the tracing core's errno. event_mutex held, as the kernel's
 * dynamic events do. The caller then empties the ring buffers, once for
 * all it took (okp_events_reset_buffers()).
 */
static int okp_event_unlink(struct okp_trace_event *event,
			    struct list_head *gone)
{
	int ret;

	lockdep_assert_held(okp_event_mutex());
	if (okp_event_busy(event))
		return -EBUSY;
	ret = trace_remove_event_call(&event->call);
	if (ret)
		return ret;
	list_move_tail(&event->list, gone);
	return 0;
}

/*
 * Removed events' entries go from the ring buffers with them (a new event
 * may take a type id and would misread them), as dyn_events_release_all()
 * and trace_kprobe's removal do. event_mutex held.
 */
static void okp_events_reset_buffers(void)
{
	lockdep_assert_held(okp_event_mutex());
	if (okp_resolved(tracing_reset_all_online_cpus))
		okp_call(tracing_reset_all_online_cpus)();
}

/* Then, without event_mutex: the probes, grace periods, the memory. */
static void okp_events_destroy(struct list_head *gone)
{
	struct okp_trace_event *event, *next;
	struct okretprobe **rps = NULL;
	struct okprobe **probes = NULL;
	int count = 0, returns = 0, entries = 0;

	/*
	 * In two batches, one grace period each (removing a storm's events
	 * one by one waited for hundreds); one by one without the memory.
	 */
	list_for_each_entry(event, gone, list)
		count++;
	if (count > 1) {
		probes = kvmalloc_array(count, sizeof(*probes), GFP_KERNEL);
		rps = kvmalloc_array(count, sizeof(*rps), GFP_KERNEL);
	}
	if (probes && rps) {
		list_for_each_entry(event, gone, list) {
			if (event->is_return)
				rps[returns++] = &event->rp;
			else
				probes[entries++] = &event->probe;
		}
		if (returns)
			okretprobe_unregister_many(rps, returns);
		if (entries)
			okprobe_unregister_many(probes, entries);
	}
	list_for_each_entry_safe(event, next, gone, list) {
		list_del(&event->list);
		if (!probes || !rps) {
			if (event->is_return)
				okretprobe_unregister(&event->rp);
			else
				okprobe_unregister(&event->probe);
		}
		okp_event_free(event);
		module_put(THIS_MODULE);
	}
	kvfree(probes);
	kvfree(rps);
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
