// SPDX-License-Identifier: GPL-2.0
/*
 * okprobe_events at a hit: an event's probe handler runs the arguments'
 * fetch programs (the C++ core's, src/core/event_fetch.cpp) into a ring
 * buffer entry in every trace instance the event is enabled in
 * (trace_event_buffer_reserve/commit), and into perf's buffer when perf's
 * tracepoint PMU has the event. Here too are the memory reads and the
 * per-cpu addresses the core's fetch programs ask for (okp_glue_event_*,
 * glue_services.h). All of it runs in the handler, with preemption off:
 * notrace, and NOKPROBE or __kprobes (tools/check-handler-paths checks what it calls). It takes no
 * lock: the instances' links are read under RCU-sched, and written by
 * probe_events_call.c under the tracing core's event_mutex.
 */
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/perf_event.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/trace_events.h>
#include <linux/uaccess.h>

#include "probe_events.h"
#include "resolved_calls.h"

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

/* this_cpu_ptr(FETCHARG): handlers run with preemption off. */
unsigned long notrace okp_glue_event_cpu_pointer(unsigned long address)
{
	return (unsigned long)this_cpu_ptr((void __percpu *)address);
}
NOKPROBE_SYMBOL(okp_glue_event_cpu_pointer);

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

static void notrace okp_event_trace(struct okp_event_probe *ep,
				    struct trace_event_file *file,
				    const struct okp_event_environment *env,
				    struct pt_regs *regs, unsigned long ip,
				    unsigned long ret_ip)
{
	struct okp_trace_event *event = ep->event;
	unsigned long dynamic, header = okp_event_header(event);
	struct trace_event_buffer buffer;
	u8 *entry;

	if (trace_trigger_soft_disabled(file))
		return;
	dynamic = okp_core_event_dynamic_size(ep->definition, env);
	entry = trace_event_buffer_reserve(&buffer, file,
					   header + event->record_size + dynamic);
	if (!entry)
		return;
	buffer.regs = regs;
	okp_event_fill_head(event, entry, ip, ret_ip);
	okp_core_event_store(ep->definition, env, entry, entry + header,
			     dynamic);
	trace_event_buffer_commit(&buffer);
}
NOKPROBE_SYMBOL(okp_event_trace);

#ifdef CONFIG_PERF_EVENTS
/*
 * The event for perf's tracepoint PMU (perf record -e GROUP:EVENT, and
 * perf_event_open()'s PERF_TYPE_TRACEPOINT): the same record, in perf's
 * buffer for this CPU, as the kernel's kprobe_perf_func() writes it. The
 * BPF programs attached to the event run first, on the record
 * (perf_trace_run_bpf_submit(), as for the kernel's tracepoints): on every
 * CPU, also where no perf event of it is open (libbpf opens one on CPU 0);
 * a program's 0 drops the sample.
 */
static void notrace okp_event_perf(struct okp_event_probe *ep,
				   const struct okp_event_environment *env,
				   struct pt_regs *regs, unsigned long ip,
				   unsigned long ret_ip)
{
	struct okp_trace_event *event = ep->event;
	unsigned long dynamic, header = okp_event_header(event);
	struct hlist_head *head = this_cpu_ptr(event->call.perf_events);
	int size, rctx;
	u8 *entry;

	if (hlist_empty(head) && !bpf_prog_array_valid(&event->call))
		return;
	dynamic = okp_core_event_dynamic_size(ep->definition, env);
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
	okp_core_event_store(ep->definition, env, entry, entry + header,
			     dynamic);
	perf_trace_run_bpf_submit(entry, size, rctx, &event->call, 1, regs,
				  head, NULL);
}
NOKPROBE_SYMBOL(okp_event_perf);
#endif

/*
 * A hit of one of the event's probes: an entry in every instance it is on
 * in, and perf's. Its registers are regs, or (an argument-only hit, regs
 * NULL) the record args, which perf never gets: while perf has the event
 * its lines hand pt_regs (okp_event_reroute()).
 */
static void notrace okp_event_hit(struct okp_event_probe *ep,
				  struct pt_regs *regs,
				  const struct okprobe_args *args,
				  unsigned long ip, unsigned long ret_ip,
				  const unsigned long *entry_arguments)
{
	struct okp_trace_event *event = ep->event;
	const struct okp_event_environment env = {
		.regs = args ? (const void *)args : regs,
		.args_record = args != NULL,
		.comm = current->comm,
		.task = current,
		.entry_arguments = entry_arguments,
	};
	struct okp_event_link *link;

	raw_cpu_inc(*ep->hits);
	/* Handlers run with preemption off: an RCU-sched reader. */
	list_for_each_entry_rcu(link, &event->links, list)
		okp_event_trace(ep, link->file, &env, regs, ip, ret_ip);
#ifdef CONFIG_PERF_EVENTS
	/* Acquire: perf's core made call.perf_events before the release. */
	if (regs && smp_load_acquire(&event->perf))
		okp_event_perf(ep, &env, regs, ip, ret_ip);
#endif
}
NOKPROBE_SYMBOL(okp_event_hit);

int notrace okp_event_pre_handler(struct okprobe *probe, struct pt_regs *regs)
{
	struct okp_event_probe *ep =
		container_of(probe, struct okp_event_probe, probe);

	/* While the line moves to the other kind, only the active records. */
	if (READ_ONCE(ep->active) == probe)
		okp_event_hit(ep, regs, NULL, (unsigned long)probe->addr, 0,
			      NULL);
	return 0;
}
NOKPROBE_SYMBOL(okp_event_pre_handler);

/*
 * A hit of a line on the argument-only path (its fetch programs read only
 * the record, and neither perf nor BPF has the event): entries in the
 * instances it is on in, fetched from the record. Without pt_regs, as the
 * kernel's fprobe events without full registers: options/stacktrace
 * starts the stack at the handler.
 */
void notrace okp_event_args_handler(struct okprobe *probe,
				    struct okprobe_args *args)
{
	struct okp_event_probe *ep =
		container_of(probe, struct okp_event_probe, args_probe);

	if (READ_ONCE(ep->active) == probe)
		okp_event_hit(ep, NULL, args, args->ip, 0, NULL);
}
NOKPROBE_SYMBOL(okp_event_args_handler);

/* An r event: the function's address, and where it returned to. */
int notrace okp_event_return_handler(struct okretprobe_instance *ri,
				     struct pt_regs *regs)
{
	struct okp_event_probe *ep =
		container_of(ri->rp, struct okp_event_probe, rp);

	okp_event_hit(ep, regs, NULL, (unsigned long)ri->rp->kp.addr,
		      ri->ret_addr,
		      ep->entry_arguments ? (const unsigned long *)ri->data :
					    NULL);
	return 0;
}
NOKPROBE_SYMBOL(okp_event_return_handler);

/* An r event's entry: the arguments its return will fetch, into ri's data. */
int notrace okp_event_entry_handler(struct okretprobe_instance *ri,
				    struct pt_regs *regs)
{
	struct okp_event_probe *ep =
		container_of(ri->rp, struct okp_event_probe, rp);
	const struct okp_event_environment env = {
		.regs = regs,
		.comm = current->comm,
		.task = current,
	};

	okp_core_event_save_entry(ep->definition, &env,
				  (unsigned long *)ri->data);
	return 0;
}
NOKPROBE_SYMBOL(okp_event_entry_handler);
