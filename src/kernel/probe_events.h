/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the parts of okprobe_events share: an event (its okprobe or
 * okretprobe, its trace_event_call, the instances it is enabled in), its
 * ring buffer entry's head, and the functions one part calls in another.
 * probe_events.c is the tracefs files and the list of events; it makes and
 * removes events with probe_events_call.c (an event's probe and trace
 * event, the tracing core's callbacks), whose probes' handlers are in
 * probe_events_hit.c (a hit into a ring buffer entry); refused lines go to
 * error_log through probe_events_log.c. Each function says which of
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
	/*
	 * What makes the event a tracepoint to perf and BPF (call.tp, with
	 * TRACE_EVENT_FL_TRACEPOINT): only its name is read; nothing is
	 * registered on it (okp_event_add_call()).
	 */
	struct tracepoint tp;
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

/* probe_events_hit.c: the probes' handlers (notrace, NOKPROBE). */
int okp_event_pre_handler(struct okprobe *probe, struct pt_regs *regs);
int okp_event_return_handler(struct okretprobe_instance *ri,
			     struct pt_regs *regs);

/* probe_events_call.c: making an event, under okp_events_mutex. */
int okp_event_register_probe(struct okp_trace_event *event,
			     const struct okp_event_summary *line);
int okp_event_add_call(struct okp_trace_event *event);
void okp_event_free(struct okp_trace_event *event);
/* Taking events out: under event_mutex, then okp_events_destroy() without. */
bool okp_event_busy(struct okp_trace_event *event);
int okp_event_unlink(struct okp_trace_event *event, struct list_head *gone);
void okp_events_reset_buffers(void);
void okp_events_destroy(struct list_head *gone);

/* probe_events_log.c: a refused line's entry in error_log. */
void okp_event_log(const char *line, unsigned int index, unsigned int column);

#endif /* OKPROBE_PROBE_EVENTS_H */
