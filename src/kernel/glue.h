/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Declarations shared by okprobe's C glue files (never seen by the C++ core).
 */
#ifndef OKPROBE_GLUE_H
#define OKPROBE_GLUE_H

#include <linux/percpu.h>
#include <linux/types.h>

#include "core/core_api.h"

/*
 * Kernel functions and data that 6.1 does not export to modules, resolved
 * once at load (ksyms.c) and validated. A field is 0 only for a symbol the
 * running kernel's configuration does not have.
 */
/*
 * Unexported kernel data okprobe reads, resolved at load (ksyms.c). The
 * unexported functions it calls are static calls: resolved_calls.h.
 */
struct okp_kernel_symbols {
	unsigned long _sinittext;
	unsigned long _einittext;
	unsigned long text_mutex;
	/* The tracing core's; okprobe_events needs them, nothing else does. */
	unsigned long event_mutex;
	unsigned long ftrace_events;	/* every trace event's call */
};

extern struct okp_kernel_symbols okp_ksyms;

int okp_ksyms_resolve(unsigned long kallsyms_lookup_name_address,
		      const char *extra_required_symbol);
/* Looks a symbol up with the resolved kallsyms_lookup_name. */
unsigned long okp_ksyms_lookup(const char *name);
/* Resolves and validates one more symbol; 0 when it is missing or invalid. */
unsigned long okp_ksyms_resolve_optional(const char *name);

/*
 * src/kernel/kernel_services.c: what the name of the symbol holding an
 * address says. padding: a __pfx_ or __cfi_ symbol, not code. dotted_base
 * (looked up only when with_base is asked for): for foo.cold or
 * foo.isra.0, foo's address (the kernel blacklist's rule), else 0. False
 * when out of memory.
 */
struct okp_symbol_facts {
	bool padding;
	bool has_base; /* dotted_base is known */
	unsigned long dotted_base;
};

bool okp_symbol_facts(unsigned long address, bool with_base,
		      struct okp_symbol_facts *facts);

int okp_blacklist_init(void);
/* The arch's own refused ranges (arch/<arch>/probes_glue.c). */
int okp_arch_blacklist(void);

/*
 * src/kernel/kernel_kprobes.c: okprobe's text and claimed functions in the
 * kernel's kprobe blacklist, and the guard that keeps kernel kprobes out.
 */
int okp_kernel_kprobes_init(void);
void okp_kernel_kprobes_exit(void);
/* Whether address lies in a function okprobe has claimed (RCU reader). */
bool okp_kernel_kprobes_claimed(unsigned long address);
/*
 * The arch's guard against kernel kprobes registered while okprobe claims
 * their function (x86: arch/x86/kprobe_guard.c; nothing elsewhere).
 */
void okp_arch_guard_init(void);
void okp_arch_guard_exit(void);

/*
 * src/kernel/probes.c: copies a client's string of at most size bytes,
 * fault-tolerant; its length, -EFAULT, or size when it has no NUL.
 */
long okp_copy_name(char *to, const char *from, long size);

/* src/kernel/return_probes.c */
int okp_return_probes_init(void);
void okp_return_probes_exit(void);
/*
 * The exits of the function an okretprobe's kp names
 * (okp_core_function_exits), under okp_probe_mutex; and the exits' probes
 * registered in one batch, all or nothing, the refusal in *why rather than
 * the log (src/kernel/probes.c).
 */
struct okp_function_exit;
long okp_probes_function_exits(struct okprobe *kp,
			       struct okp_function_exit *exits,
			       unsigned long capacity, unsigned long *entry,
			       const char **why, unsigned long *where);
int okp_probes_register_many_quietly(struct okprobe **probes, int count,
				     const char **why);
int okp_probes_disable_many(struct okprobe **probes, int count);

/* src/kernel/probe_events.c: /sys/kernel/tracing/okprobe_events. */
int okp_probe_events_init(void);
void okp_probe_events_exit(void);

int okp_sysctl_init(void);
void okp_sysctl_exit(void);

struct seq_file;

/* src/kernel/probes.c */
/* Each CPU's handler state (the detours and trap handlers read it). */
DECLARE_PER_CPU(struct okp_cpu_state, okp_cpu_states);
/*
 * Whether an API call's caller is where it must not sleep (an okprobe
 * handler, interrupt context, interrupts or preemption off, a preemptible
 * RCU read-side section): then the call is refused before anything
 * sleeps, and one line names call and caller. Every API call takes
 * okp_probe_mutex, and most wait for grace periods.
 */
bool okp_api_caller_atomic(const char *call, unsigned long caller);

int okp_probes_init(void);
void okp_probes_exit(void);
/* Writes debugfs okprobe/list. */
void okp_probes_show(struct seq_file *m);
/* debugfs okprobe/enabled: arms or disarms every probe. */
void okp_probes_set_enabled(int enabled);
int okp_probes_enabled(void);
/* Writes debugfs okprobe/jumps. */
void okp_probes_show_jumps(struct seq_file *m);
/*
 * For okprobe-cover: okprobe_register() without the log line, *why set
 * to the reason of a refusal; and okp_core_block_starts() under the probe
 * mutex.
 */
int okp_probes_register_quietly(struct okprobe *probe, const char **why);
/*
 * okprobe-cover's thousands: registers each probe, not all or nothing:
 * errors[i] is 0 or probe i's refusal, whys[i] its reason. The
 * breakpoints go into the text in one write (one arm batch).
 */
void okp_probes_register_each(struct okprobe **probes, int count,
			      int *errors, const char **whys);
long okp_probes_block_starts(unsigned long address, unsigned long *start,
			     unsigned long *size, unsigned int *offsets,
			     unsigned long capacity);

/* src/kernel/cover.c: debugfs okprobe/cover. */
extern const struct file_operations okp_cover_fops;
/* Unregisters every cover probe (module exit, before okp_probes_exit). */
void okp_cover_exit(void);
/* Writes debugfs okprobe/writer_steps. */
void okp_probes_show_writer_steps(struct seq_file *m);
/* sysctl debug.kprobes_optimization changed. */
void okp_probes_optimization_changed(void);
/* arch/<arch>/probes_glue.c: the breakpoint trap. */
int okp_arch_probes_init(void);
void okp_arch_probes_exit(void);

/* Finds and indexes the core kernel's jump table (src/kernel/jump_labels.c). */
void okp_jump_labels_init(void);
void okp_jump_labels_exit(void);
/* src/kernel/exception_table.c: finds the core exception table. */
void okp_exception_table_init(void);
/* Entries of the core exception table answered by range, or -1. */
long okp_exception_table_entries(void);
/* The length of the jump label instruction at code (arch/<arch>/probes_glue.c). */
unsigned long okp_arch_jump_label_size(unsigned long code);

/*
 * Why [address, address + length) overlaps an ftrace call site or a jump
 * label site, or NULL. more, if not NULL, is asked under jump_label_lock
 * as well, for the arch's own sites (x86's static calls). Every arch's
 * okp_glue_reserved() starts here (src/kernel/jump_labels.c).
 */
const char *okp_text_sites_reserved(unsigned long address,
				    unsigned long length,
				    const char *(*more)(void *start,
							void *end));

int okp_debugfs_init(void);
void okp_debugfs_exit(void);

/*
 * okprobe's fault-injection point (fail_alloc.c): true when the
 * allocation about to be made should fail. Always false on kernels
 * without CONFIG_FAULT_INJECTION_DEBUG_FS.
 */
struct dentry;
bool okp_fail_alloc(void);
void okp_fail_alloc_init(struct dentry *okprobe_dir);

/* Number of live C++ allocations; nonzero at unload is a leak. */
long okp_cxx_live_allocations(void);

#endif /* OKPROBE_GLUE_H */
