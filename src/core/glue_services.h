/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel services the core calls: okp_glue_* functions, grouped by the
 * file that defines them, one section each: the arch-neutral C glue
 * (src/kernel/), then what every arch's probes_glue.c supplies (text
 * writes, counter cells). Services only one arch has are in
 * arch/<arch>/glue_services.h.
 *
 * Only plain C types cross the boundary between okprobe's C glue (which
 * includes <linux/...> headers) and its freestanding C++ core (which never
 * does): integers, pointers, and the structs below.
 */
#ifndef OKPROBE_GLUE_SERVICES_H
#define OKPROBE_GLUE_SERVICES_H

#include "core/core_entry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- src/kernel/cxx_runtime.c: the C++ runtime -------------------------- */

/* Process-context allocation for C++ operator new (may sleep). */
void *okp_glue_alloc(unsigned long size);
void okp_glue_free(void *pointer);
/* Called for conditions the core cannot survive (pure virtual call). */
void okp_glue_fatal(const char *message);
/*
 * A precondition of okprobe's own code that did not hold (OKP_ASSERT,
 * core/assert.hpp), once per call site: a warning with the expression and
 * where, never a BUG(). Not for the hit path.
 */
void okp_glue_assert_failed(const char *expression, const char *file,
			    int line);

/* ---- src/kernel/kernel_services.c: kernel facts, services --------------- */

/* Kernel facts for registration checks (see registration.hpp). */
enum okp_text_kind {
	OKP_TEXT_NONE, OKP_TEXT_CORE, OKP_TEXT_MODULE, OKP_TEXT_INIT_AFTER_BOOT
};
unsigned long okp_glue_lookup_symbol(const char *name);
int okp_glue_function_of(unsigned long address, unsigned long *start,
			 unsigned long *size);
enum okp_text_kind okp_glue_text_kind(unsigned long address);
int okp_glue_has_exception_entry(unsigned long address);
/*
 * Why address is padding before a function rather than code of one: a
 * __pfx_ or __cfi_ symbol (x86's call padding, 6.2 and later), as kprobes
 * refuse them; or 0.
 */
const char *okp_glue_padding_symbol(unsigned long address);
unsigned long okp_glue_read_text(unsigned long address, void *buffer,
				 unsigned long size);
/* "symbol+0xoff/0xsize [module]" for address (sprint_symbol), or "". */
void okp_glue_describe(unsigned long address, char *buffer,
		       unsigned long size);
/*
 * A page of executable memory within rel32 reach of kernel text, filled
 * with breakpoints, read-only; written only through okp_glue_text_write.
 */
void *okp_glue_exec_page_alloc(void);
void okp_glue_exec_page_free(void *page);
/*
 * Someone else changed the text okprobe wrote at address (description:
 * "symbol+0xoff/0xsize"): logs one line saying why okprobe leaves it, and
 * pins okprobe.ko while the text may still lead into it. Released when the
 * text is the original again (or gone) and its probes are unregistered.
 */
void okp_glue_text_lost(unsigned long address, const char *description,
			const char *why);
void okp_glue_lost_text_released(unsigned long address,
				 const char *description);
/* An entry ftrace refused: its probes do not run until it is armed. */
void okp_glue_entry_unarmed(unsigned long address, const char *description,
			    const char *why);
/* The grace periods okprobe waits for before it frees or reuses memory. */
enum okp_grace {
	/* No CPU is still in a handler or reading what was unpublished. */
	OKP_GRACE_RCU = 1,
	/* No task is still preempted inside okprobe's code (rcu-tasks). */
	OKP_GRACE_TASKS = 2,
};
/* Waits for the grace periods graces names (OKP_GRACE_*), run at once. */
void okp_glue_synchronize(unsigned int graces);
/* ktime_get_ns(): for the writer's step times (writer_clock.hpp). */
unsigned long okp_glue_now_ns(void);
struct okp_cpu_state *okp_glue_cpu_state(void);

/* ---- src/kernel/exception_table.c --------------------------------------- */

/* An exception-table entry: the instruction that may fault, its fixup. */
struct okp_exception_entry {
	unsigned long insn;
	unsigned long fixup;
};
/*
 * The exception-table entries whose instruction lies in [start, end), from
 * the table of the object holding start, in address order: their number
 * (only the first capacity are written to found), or -1 when okprobe
 * cannot tell (no core table found: ask okp_glue_has_exception_entry()
 * address by address).
 */
long okp_glue_exception_entries_within(unsigned long start, unsigned long end,
				       struct okp_exception_entry *found,
				       unsigned long capacity);

/* ---- src/kernel/kernel_kprobes.c: the kernel's kprobes ------------------ */

/*
 * Claims the function [start, start + size) for okprobe's bytes: 0, or
 * -EBUSY (a kernel kprobe is in it) / -ENOMEM and *why. While claimed, the
 * kernel refuses kprobes in it. Claims are counted; release each one once
 * okprobe's bytes have left the function.
 */
int okp_glue_claim_function(unsigned long start, unsigned long size,
			    const char **why);
void okp_glue_release_function(unsigned long start);
/*
 * Why someone else's probe owns bytes of the function [start, start + size)
 * (a kernel kprobe: its int3 or its optprobe jump), or 0.
 */
const char *okp_glue_foreign_probe(unsigned long start, unsigned long size);
/*
 * Why the kernel's own kprobe blacklist refuses address (okprobe's own
 * entries on it left out), or 0.
 */
const char *okp_glue_kernel_blacklisted(unsigned long address);

/* ---- src/kernel/ftrace_entry.c: entries through ftrace ------------------ */

/*
 * Kprobes on ftrace's way: the ftrace call site address is or leads to (ftrace maps
 * a function's first byte to its site, past an IBT landing pad) and its
 * length, or 0.
 */
unsigned long okp_glue_ftrace_site(unsigned long address,
				   unsigned long *length);
/*
 * Whether this kernel's ftrace saves the registers a probe's handlers see
 * (CONFIG_DYNAMIC_FTRACE_WITH_REGS): okprobe then enters the function
 * through ftrace; else an entry probe goes past the call site.
 */
int okp_glue_ftrace_supported(void);
/*
 * Calls okp_core_ftrace_hit() at count call sites from now on / no
 * longer, one pass of ftrace for all (ftrace_set_filter_ips), through
 * okprobe's ftrace_ops that may change the ip (ipmodify:
 * FTRACE_OPS_FL_IPMODIFY, as kprobes uses for a probe with a
 * post_handler) or the one that does not. Arm: 0 or a negative errno
 * (-EBUSY: another ftrace user that changes the ip owns the function),
 * all or nothing: on an error none of them is armed. May sleep.
 */
int okp_glue_ftrace_arm_many(const unsigned long *addresses,
			     unsigned int count, int ipmodify);
void okp_glue_ftrace_disarm_many(const unsigned long *addresses,
				 unsigned int count, int ipmodify);

/* ---- src/kernel/jump_labels.c ------------------------------------------- */

/*
 * x86: 1 when a jump label (enabled or not) of the object holding start
 * jumps into [start, stop), 0 when none does, -1 when okprobe cannot tell
 * (the kernel's jump table is unknown and the function [function,
 * function_end) has jump labels).
 */
int okp_glue_jump_label_target_within(unsigned long start, unsigned long stop,
				      unsigned long function,
				      unsigned long function_end);
/* A jump label site: its code (a nop or a jump) and where it jumps. */
struct okp_jump_label {
	unsigned long code;
	unsigned long target;
};
/*
 * The jump labels whose code lies in [start, end), from the jump table of
 * the object holding start: their number (only the first capacity are
 * written to found), or -1 when okprobe cannot tell (the core kernel's jump
 * table is unknown and the range has jump labels).
 */
long okp_glue_jump_labels_within(unsigned long start, unsigned long end,
				 struct okp_jump_label *found,
				 unsigned long capacity);

/* ---- src/kernel/probes.c: the optimizer's work -------------------------- */

/* Runs the optimizer's work soon (after a batching delay), unless queued. */
void okp_glue_schedule_optimizer(void);

/* ---- src/kernel/return_*.c: return probes ------------------------------- */

/*
 * Return probes' pre_handlers, by which the core knows their probes: an
 * okretprobe's kp at the entry (src/kernel/return_rethook.c), and a probe
 * at an exit of one (src/kernel/return_exit_probes.c), with where a missed
 * hit of an exit is counted besides its own nmissed (in its okretprobe's
 * nmissed). src/kernel/return_no_rethook.c where the kernel has no rethook.
 */
struct okprobe;
struct pt_regs;
int okp_glue_return_entry_hit(struct okprobe *probe, struct pt_regs *regs);
int okp_glue_return_exit_hit(struct okprobe *probe, struct pt_regs *regs);
void okp_glue_return_exit_missed(struct okprobe *probe);
/* Its OKPROBE_FLAG_OPTIMIZED changed (the probe mutex is held). */
void okp_glue_return_exit_optimized(struct okprobe *probe, int optimized);

/* ---- src/kernel/probe_events_hit.c: okprobe_events ---------------------- */

/*
 * okprobe_events at a hit (NOKPROBE, notrace):
 * size bytes at address into to with the kernel's nofault copies, 1 or 0
 * when it faulted; the string at address into to (at most size bytes, the
 * last then the NUL), its length with the NUL, 0 on a fault, only the
 * length with size 0; "symbol+0x1/0x20 [module]" for address, the same
 * way; the index-th word above stack_pointer on its task's stack, 0 past
 * it or on a fault (regs_get_kernel_stack_nth()).
 */
int okp_glue_event_read(unsigned long address, void *to, unsigned long size,
			int user);
unsigned long okp_glue_event_read_string(unsigned long address, char *to,
					 unsigned long size, int user);
unsigned long okp_glue_event_symbol_string(unsigned long address, char *to,
					   unsigned long size);
unsigned long okp_glue_event_stack_word(unsigned long stack_pointer,
					unsigned int index);
/* this_cpu_ptr() of the per-cpu address (7.3's this_cpu_ptr(FETCHARG)). */
unsigned long okp_glue_event_cpu_pointer(unsigned long address);

/* ---- src/kernel/probe_events_grammar.c: a module's BTF ----------------- */

/*
 * The raw BTF of the module whose function name is (split on vmlinux's),
 * *size its bytes, freed with okp_glue_module_btf_free(); NULL when name
 * is no module's function or its module has no BTF. Process context.
 */
void *okp_glue_module_btf(const char *name, unsigned long *size);
void okp_glue_module_btf_free(void *raw);

/* ---- arch/<arch>/probes_glue.c: text writes, counter cells -------------- */

const char *okp_glue_reserved(unsigned long address, unsigned long length);
/* Cross-modifies text (text_poke under text_mutex, then sync all CPUs). */
void okp_glue_text_write(unsigned long address, const void *bytes,
			 unsigned long length);
/* One text patch of a batch. */
struct okp_text_patch {
	unsigned long address;
	const void *bytes;
	unsigned long length;
};
/* Writes every patch (text_poke), then syncs every CPU once. */
void okp_glue_text_write_batch(const struct okp_text_patch *patches,
			       unsigned long count);
/*
 * Writes okprobe's own code (out-of-line slots, detours, landings) that no
 * CPU runs: fresh, or retired after the grace periods. Without stopping
 * CPUs: on x86 a CPU reaches such code only through the int3 handler's
 * IRET (serializing) or a jump put in with text_poke's sync; a riscv hart
 * runs fence.i before it next returns from a breakpoint into okprobe's
 * code, and jumps go in under stop_machine() with fence.i on every hart.
 */
void okp_glue_code_write_batch(const struct okp_text_patch *patches,
			       unsigned long count);
/*
 * A counting site's per-CPU counter cells (arch/ glue: what its counting
 * detour adds to, arch::build_detour): 0 when out of memory. Freed only
 * once no detour can run (after the site's grace periods).
 */
unsigned long okp_glue_counter_cells_alloc(void);
void okp_glue_counter_cells_free(unsigned long cells);
/* The sum of every CPU's cell. */
unsigned long long okp_glue_counter_cells_sum(unsigned long cells);

#ifdef __cplusplus
}
#endif

#endif /* OKPROBE_GLUE_SERVICES_H */
