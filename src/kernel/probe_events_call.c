// SPDX-License-Identifier: GPL-2.0
/*
 * An okprobe_events event's probe and trace event, made the way the kernel
 * makes its kprobe and synthetic events: an okprobe (or okretprobe),
 * registered disabled, and a trace_event_call of okprobe's whose class
 * registers it with the tracing core (trace_add_event_call) and whose reg
 * callback arms the probe when the event is enabled in any trace instance
 * or by perf; its fields and how its entries print; and taking events out
 * again (trace_remove_event_call, the ring buffers emptied, the probes
 * unregistered in batches). probe_events.c calls these for its lines
 * under okp_events_mutex; the tracing core calls the callbacks under its
 * event_mutex, and they never take okp_events_mutex.
 */
#include <linux/bug.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/trace_events.h>
#include <linux/vmalloc.h>

#include "probe_events.h"
#include "resolved_calls.h"

/* ---- The tracing core's callbacks (event_mutex held) ------------------ */

/*
 * A probe of the event on or off; one not registered (its module is not
 * loaded) or gone (unloaded) is passed by, as the kernel's
 * __enable_trace_kprobe() passes it.
 */
static int okp_event_probe_switch(struct okp_event_probe *ep, bool on)
{
	if (!ep->registered || ep->gone)
		return 0;
	if (ep->event->is_return)
		return on ? okretprobe_enable(&ep->rp) :
			    okretprobe_disable(&ep->rp);
	return on ? okprobe_enable(okp_event_probe_kp(ep)) :
		    okprobe_disable(okp_event_probe_kp(ep));
}

/* One more user of the event's probes: enabled with the first, all or none. */
static int okp_event_arm(struct okp_trace_event *event)
{
	struct okp_event_probe *ep;
	int ret = 0;

	if (event->enabled++)
		return 0;
	list_for_each_entry(ep, &event->probes, sibling) {
		ret = okp_event_probe_switch(ep, true);
		if (ret)
			break;
	}
	if (ret) {
		list_for_each_entry_continue_reverse(ep, &event->probes, sibling)
			okp_event_probe_switch(ep, false);
		event->enabled--;
	}
	return ret;
}

/* One user fewer: disabled with the last. */
static void okp_event_disarm(struct okp_trace_event *event)
{
	struct okp_event_probe *ep;

	if (--event->enabled)
		return;
	list_for_each_entry(ep, &event->probes, sibling)
		okp_event_probe_switch(ep, false);
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
		/*
		 * perf samples pt_regs and BPF programs read them: lines on
		 * the argument-only path move to probes that have them,
		 * before the first hit for perf.
		 */
		event->wants_regs = true;
		ret = okp_event_reroute(event, false);
		if (ret) {
			event->wants_regs = false;
			okp_event_reroute(event, true);
			okp_event_disarm(event);
			return ret;
		}
		/* Pairs with okp_event_hit()'s acquire: perf_events first. */
		smp_store_release(&event->perf, 1);
		return 0;
	case TRACE_REG_PERF_UNREGISTER:
		WRITE_ONCE(event->perf, 0);
		/* Back where they can; one that cannot keeps pt_regs. */
		event->wants_regs = false;
		okp_event_reroute(event, true);
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
	case OKP_FIELD_CHAR:
		trace_seq_printf(s, "'%c'", (int)(u8)value);
		break;
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

/* ---- Making an event (okp_events_mutex held) -------------------------- */

void okp_event_free(struct okp_trace_event *event)
{
	kfree(event->call.print_fmt);
	kvfree(event->definition);
	kfree(event->field_types);
	kfree(event);
}

void okp_event_probe_free(struct okp_event_probe *ep)
{
	free_percpu(ep->hits);
	kvfree(ep->definition);
	kfree(ep->symbol);
	kfree(ep);
}

/* Whether the p line takes the argument-only path now. */
static bool okp_event_probe_on_args(const struct okp_event_probe *ep)
{
	return !ep->event->is_return && !ep->event->wants_regs &&
	       okp_core_event_reads_only_args(ep->definition);
}

/* A p line's probe of the kind its fetch programs and its event allow. */
static struct okprobe *okp_event_probe_fill(struct okp_event_probe *ep,
					    bool args)
{
	struct okprobe *kp = args ? &ep->args_probe : &ep->probe;

	memset(kp, 0, sizeof(*kp));
	if (args)
		kp->args_handler = okp_event_args_handler;
	else
		kp->pre_handler = okp_event_pre_handler;
	kp->flags = ep->event->enabled ? 0 : OKPROBE_FLAG_DISABLED;
	return kp;
}

int okp_event_probe_register(struct okp_event_probe *ep)
{
	struct okp_trace_event *event = ep->event;
	struct okprobe *kp;
	int ret;

	/* Afresh: a probe unregistered (its module went) comes back so. */
	memset(&ep->rp, 0, sizeof(ep->rp));
	kp = event->is_return ? &ep->rp.kp :
				okp_event_probe_fill(ep, okp_event_probe_on_args(ep));
	WRITE_ONCE(ep->active, event->is_return ? NULL : kp);
	ep->registered = false;
	ep->gone = false;
	if (ep->symbol && event->is_return && ep->offset) {
		/*
		 * An r line's SYM+OFFS is a function's entry (the parser
		 * asked): okretprobe_register() takes an entry by address.
		 */
		kp->addr = (void *)okp_ksyms_lookup(ep->symbol);
		if (!kp->addr)
			return -ENOENT;
		kp->addr += ep->offset;
	} else if (ep->symbol) {
		kp->symbol_name = ep->symbol;
		kp->offset = ep->offset;
	} else {
		kp->addr = (void *)ep->address;
	}
	if (event->is_return) {
		kp->flags = event->enabled ? 0 : OKPROBE_FLAG_DISABLED;
		ep->rp.handler = okp_event_return_handler;
		ep->rp.maxactive = ep->maxactive;
		/* The arguments the return fetches, saved at each entry. */
		if (ep->entry_arguments) {
			ep->rp.entry_handler = okp_event_entry_handler;
			ep->rp.data_size = ep->entry_arguments *
					   sizeof(unsigned long);
		}
		ret = okretprobe_register(&ep->rp);
	} else {
		ret = okprobe_register(kp);
	}
	ep->registered = !ret;
	/* The kernel's register_kretprobe() default, read back as it is. */
	if (!ret && event->is_return && !ep->maxactive)
		okp_core_event_set_maxactive(ep->definition,
					     max(10U, 2 * num_possible_cpus()));
	return ret;
}

void okp_event_probe_unregister(struct okp_event_probe *ep)
{
	if (!ep->registered)
		return;
	if (ep->event->is_return)
		okretprobe_unregister(&ep->rp);
	else
		okprobe_unregister(okp_event_probe_kp(ep));
	ep->registered = false;
}

/*
 * A p line onto the argument-only path (args) or onto pt_regs: the other
 * kind of probe registered at the same address first, enabled as the
 * event is, made the active one, and only then the old one taken out.
 * No hit goes unrecorded; one in the instant active changes may be
 * recorded by both or by neither. A line whose new probe fails to
 * register stays where it is.
 */
static int okp_event_probe_reroute(struct okp_event_probe *ep, bool args)
{
	struct okprobe *from = ep->active, *to;
	int ret;

	if (!ep->registered || ep->gone || ep->event->is_return || !from ||
	    from == (args ? &ep->args_probe : &ep->probe))
		return 0;
	to = okp_event_probe_fill(ep, args);
	to->addr = from->addr;
	ret = okprobe_register(to);
	if (ret)
		return ret;
	WRITE_ONCE(ep->active, to);
	okprobe_unregister(from);
	WRITE_ONCE(ep->nmissed_before, ep->nmissed_before + from->nmissed);
	return 0;
}

int okp_event_reroute(struct okp_trace_event *event, bool args)
{
	struct okp_event_probe *ep;
	int ret, first = 0;

	list_for_each_entry(ep, &event->probes, sibling) {
		ret = okp_event_probe_reroute(ep, args &&
					      okp_event_probe_on_args(ep));
		if (ret && !first)
			first = ret;
	}
	return first;
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

int okp_event_add_call(struct okp_trace_event *event)
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
	/*
	 * BPF takes a TRACEPOINT program on an event flagged
	 * TRACE_EVENT_FL_TRACEPOINT (PERF_EVENT_IOC_SET_BPF, BPF links;
	 * EINVAL on one with no such flag), and then reads call->tp->name
	 * and nothing else of it; as does the tracing core, whose
	 * trace_event_reg() is not this event's reg. Synthetic and user
	 * events are made so too. The kprobe flag would have BPF and perf
	 * read the call as a struct trace_kprobe.
	 */
	event->tp.name = event->name;
	call->tp = &event->tp;
	call->event.funcs = &okp_event_functions;
	call->flags = TRACE_EVENT_FL_DYNAMIC | TRACE_EVENT_FL_TRACEPOINT;
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

/* ---- Taking events out ------------------------------------------------ */

/*
 * Enabled, or an event file of it open (trace_event_dyn_busy()); asked
 * under event_mutex, which also holds off a new reference.
 */
bool okp_event_busy(struct okp_trace_event *event)
{
	return event->enabled || atomic_read(&event->call.refcnt);
}

/*
 * Takes a line out (event_mutex held): its probe alone when the event has
 * others, even while enabled, as the kernel's unregister_trace_kprobe();
 * the last one with its event, out of the tracing core, unless the event
 * is busy. 0, EBUSY or the tracing core's errno. The probe goes onto
 * gone_probes, an event onto gone_events; the caller then empties the ring
 * buffers, once for all it took (okp_events_reset_buffers()).
 */
int okp_event_probe_unlink(struct okp_event_probe *ep,
			   struct list_head *gone_probes,
			   struct list_head *gone_events)
{
	struct okp_trace_event *event = ep->event;
	int ret;

	lockdep_assert_held(okp_event_mutex());
	if (list_is_singular(&event->probes)) {
		if (okp_event_busy(event))
			return -EBUSY;
		ret = trace_remove_event_call(&event->call);
		if (ret)
			return ret;
		list_move_tail(&event->list, gone_events);
	}
	list_del(&ep->sibling);
	list_move_tail(&ep->list, gone_probes);
	return 0;
}

/*
 * Removed events' entries go from the ring buffers with them (a new event
 * may take a type id and would misread them), as dyn_events_release_all()
 * and trace_kprobe's removal do. event_mutex held.
 */
void okp_events_reset_buffers(void)
{
	lockdep_assert_held(okp_event_mutex());
	if (okp_resolved(tracing_reset_all_online_cpus))
		okp_call(tracing_reset_all_online_cpus)();
}

/*
 * Then, without event_mutex: the probes, grace periods, the memory; an
 * event after its probes, whose handlers use it.
 */
void okp_events_destroy(struct list_head *gone_probes,
			struct list_head *gone_events)
{
	struct okp_trace_event *event, *next_event;
	struct okp_event_probe *ep, *next;
	struct okretprobe **rps = NULL;
	struct okprobe **probes = NULL;
	int count = 0, returns = 0, entries = 0;

	/*
	 * In two batches, one grace period each (removing a storm's events
	 * one by one waited for hundreds); one by one without the memory.
	 */
	list_for_each_entry(ep, gone_probes, list)
		count++;
	if (count > 1) {
		probes = kvmalloc_array(count, sizeof(*probes), GFP_KERNEL);
		rps = kvmalloc_array(count, sizeof(*rps), GFP_KERNEL);
	}
	if (probes && rps) {
		list_for_each_entry(ep, gone_probes, list) {
			if (!ep->registered)
				continue;
			if (ep->event->is_return)
				rps[returns++] = &ep->rp;
			else
				probes[entries++] = okp_event_probe_kp(ep);
			ep->registered = false;
		}
		if (returns)
			okretprobe_unregister_many(rps, returns);
		if (entries)
			okprobe_unregister_many(probes, entries);
	}
	list_for_each_entry_safe(ep, next, gone_probes, list) {
		list_del(&ep->list);
		okp_event_probe_unregister(ep);
		okp_event_probe_free(ep);
		module_put(THIS_MODULE);
	}
	list_for_each_entry_safe(event, next_event, gone_events, list) {
		list_del(&event->list);
		okp_event_free(event);
	}
	kvfree(probes);
	kvfree(rps);
}
