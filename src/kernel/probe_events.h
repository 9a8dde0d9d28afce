/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the parts of okprobe_events share: an event (its trace_event_call,
 * the instances it is enabled in, its probes: a line each, with its okprobe
 * or okretprobe), its ring buffer entry's head, and the functions one part
 * calls in another.
 * probe_events.c is the tracefs files and the list of events; it makes and
 * removes events with probe_events_call.c (an event's probe and trace
 * event, the tracing core's callbacks), whose probes' handlers are in
 * probe_events_hit.c (a hit into a ring buffer entry); the kernel's grammar
 * and places are asked by probe_events_grammar.c; lines on modules
 * that come and go are followed by probe_events_modules.c; refused lines
 * go to error_log through probe_events_log.c. Each function says which of
 * okp_events_mutex and the tracing core's event_mutex it runs under.
 */
#ifndef OKPROBE_PROBE_EVENTS_H
#define OKPROBE_PROBE_EVENTS_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/trace_events.h>
#include <linux/tracepoint.h>
#include <linux/types.h>
#include <okprobe.h>

#include "core/core_api.h"
#include "glue.h"

/* An instance (trace_array) the event is enabled in. */
struct okp_event_link {
	struct list_head list;
	struct trace_event_file *file;
};

/*
 * An event: its trace_event_call and the instances it is enabled in, and
 * its probes, one for each line that defined it (a line for an event that
 * exists appends a probe to it, by the kernel's rules).
 */
struct okp_trace_event {
	struct list_head list;		/* okp_events, okp_events_mutex */
	/* Its probes, first line first: both mutexes to change, either to read. */
	struct list_head probes;
	struct trace_event_class class;
	struct trace_event_call call;
	int is_return;
	/* The instances it is enabled in: RCU, written under event_mutex. */
	struct list_head links;
	/* Users of its probes: instances' links and perf. */
	unsigned int enabled;
	/* perf's tracepoint PMU has it (its call.perf_events are there). */
	int perf;
	/*
	 * perf or a BPF program has it (event_mutex): its probes hand them
	 * pt_regs, so no line takes the argument-only path.
	 */
	bool wants_regs;
	unsigned int arg_count;
	unsigned int record_size;	/* bytes of the fixed fields */
	char (*field_types)[32];	/* trace_define_field keeps the pointers */
	/* Its first line's: the fields, alike in every probe's. */
	struct okp_event_definition *definition;
	char group[64];
	char name[64];
	/*
	 * What makes the event a tracepoint to perf and BPF (call.tp, with
	 * TRACE_EVENT_FL_TRACEPOINT): only its name is read; nothing is
	 * registered on it (okp_event_add_call()).
	 */
	struct tracepoint tp;
};

/*
 * One line of okprobe_events: a probe of an event, its own fetch programs
 * (each line's arguments fetch their own way into the same fields). Its
 * okprobe or okretprobe is registered, except while the module a MOD:SYM
 * names is not loaded (registered when it comes, again on every reload, as
 * the kernel's trace_kprobe_module_callback()); gone once its text went
 * away (module unload), when enabling the event passes it by.
 */
struct okp_event_probe {
	struct list_head list;		/* okp_event_probes: every line, in order */
	struct list_head sibling;	/* its event's probes */
	struct okp_trace_event *event;
	/*
	 * A p line's probe: probe (its handler gets pt_regs), or args_probe
	 * where the line's fetch programs read only what an argument-only
	 * record holds and the event does not want pt_regs. active is the
	 * one registered, whose hits record (both are, for a moment, while
	 * okp_event_reroute() moves the line from one to the other);
	 * written under event_mutex, read by the handlers.
	 */
	struct okprobe probe;
	struct okprobe args_probe;
	struct okprobe *active;
	/* The missed hits of probes the line moved away from. */
	unsigned long nmissed_before;
	struct okretprobe rp;
	bool registered;		/* event_mutex */
	bool gone;			/* event_mutex */
	/* Per CPU, as the kernel's nhit: a hit never shares a cache line. */
	unsigned long __percpu *hits;
	char *symbol;			/* [MOD:]SYM; NULL: address */
	unsigned long address;
	unsigned int offset;
	unsigned int maxactive;
	/* An r line's: the arguments its entry saves for the return. */
	unsigned int entry_arguments;
	struct okp_event_definition *definition;
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

/* The okprobe a line uses: its active one, or its okretprobe's. */
static inline struct okprobe *okp_event_probe_kp(struct okp_event_probe *ep)
{
	if (ep->event->is_return)
		return &ep->rp.kp;
	struct okprobe *active = READ_ONCE(ep->active);

	return active ? active : &ep->probe;
}

/* The bytes before the fields. */
static inline unsigned long okp_event_header(const struct okp_trace_event *event)
{
	return event->is_return ? sizeof(struct okp_return_entry) :
				  sizeof(struct okp_event_entry);
}

/* The tracing core's event_mutex: neither exported nor declared to modules. */
static inline struct mutex *okp_event_mutex(void)
{
	return (struct mutex *)okp_ksyms.event_mutex;
}

/* probe_events.c: every event and every line, under okp_events_mutex. */
extern struct mutex okp_events_mutex;
extern struct list_head okp_events, okp_event_probes;

/* probe_events_hit.c: the probes' handlers (notrace, NOKPROBE). */
int okp_event_pre_handler(struct okprobe *probe, struct pt_regs *regs);
void okp_event_args_handler(struct okprobe *probe, struct okprobe_args *args);
int okp_event_return_handler(struct okretprobe_instance *ri,
			     struct pt_regs *regs);
int okp_event_entry_handler(struct okretprobe_instance *ri,
			    struct pt_regs *regs);

/* probe_events_call.c: making an event, under okp_events_mutex. */
int okp_event_add_call(struct okp_trace_event *event);
void okp_event_free(struct okp_trace_event *event);
void okp_event_probe_free(struct okp_event_probe *ep);
/*
 * A probe's okprobe or okretprobe, filled afresh from the line and
 * registered, enabled when its event is; and taken out again. Under
 * event_mutex once the event is in the tracing core.
 */
int okp_event_probe_register(struct okp_event_probe *ep);
void okp_event_probe_unregister(struct okp_event_probe *ep);
/*
 * Moves every p line of the event to the argument-only path where it can
 * take it (args), or to pt_regs; event_mutex held.
 */
int okp_event_reroute(struct okp_trace_event *event, bool args);
/*
 * Taking lines out: under event_mutex, then okp_events_destroy() without
 * it, with the probes and events taken out.
 */
bool okp_event_busy(struct okp_trace_event *event);
int okp_event_probe_unlink(struct okp_event_probe *ep,
			   struct list_head *gone_probes,
			   struct list_head *gone_events);
void okp_events_reset_buffers(void);
void okp_events_destroy(struct list_head *gone_probes,
			struct list_head *gone_events);

/*
 * probe_events_grammar.c: the running kernel's kprobe_events grammar, told
 * to the core at load; what its symbols say of a line's place.
 */
void okp_events_grammar(void);
enum okp_event_place okp_event_place(const struct okp_event_place_query *query);

/* probe_events_modules.c: lines on modules that come and go. */
bool okp_event_module_missing(const char *symbol);
int okp_events_modules_init(void);
void okp_events_modules_exit(void);

/* probe_events_log.c: a refused line's entry in error_log. */
void okp_event_log(const char *line, unsigned int index, unsigned int column);

#endif /* OKPROBE_PROBE_EVENTS_H */
