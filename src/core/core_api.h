/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The boundary between okprobe's C glue (which includes <linux/...> headers)
 * and its freestanding C++ core (which never does).
 *
 * Only plain C types cross it: integers, pointers, and the structs below.
 * Functions named okp_core_* are implemented in C++ and called by the glue;
 * functions named okp_glue_* are implemented in C and called by the core.
 */
#ifndef OKPROBE_CORE_API_H
#define OKPROBE_CORE_API_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Kernel symbol resolution ------------------------------------------ */

/* Why a resolved symbol was rejected; okp_core_symbol_verdict_text names it. */
enum okp_symbol_verdict {
	OKP_SYMBOL_OK = 0,
	OKP_SYMBOL_NOT_FOUND,		/* the lookup returned 0 */
	OKP_SYMBOL_UNDESCRIBED,		/* no symbol is known at that address */
	OKP_SYMBOL_NAME_MISMATCH,	/* the address belongs to another symbol */
	OKP_SYMBOL_NOT_AT_START,	/* the address is inside the symbol */
	OKP_SYMBOL_IN_MODULE,		/* the address is in a module, not the kernel */
};

/* One kernel symbol okprobe needs, and where its address goes. */
struct okp_symbol_request {
	const char *name;
	unsigned long *address;	/* written only when the symbol validates */
	int required;		/* 0: a missing optional symbol leaves 0 */
};

/* How the core asks the kernel about symbols (kallsyms, sprint_symbol). */
struct okp_symbol_ops {
	unsigned long (*lookup)(const char *name);
	/* Writes "name+0xOFF/0xSIZE [module]" like sprint_symbol(), or "". */
	void (*describe)(unsigned long address, char *buffer,
			 unsigned long size);
};

/* The first request that failed, for the log line that names it. */
struct okp_symbol_failure {
	const char *name;
	unsigned long address;
	enum okp_symbol_verdict verdict;
	char description[160];	/* what the kernel says is at address */
};

/*
 * Checks that sprint_symbol()'s description of address is exactly the start
 * of the core-kernel symbol name.
 */
enum okp_symbol_verdict okp_core_check_symbol(const char *name,
					      unsigned long address,
					      const char *description);

/*
 * Resolves and validates every request in order. Returns the number of
 * required requests that failed (0 on success); the first failure is copied
 * to *failure. Optional requests that fail are left 0 and do not count.
 */
int okp_core_resolve_symbols(struct okp_symbol_request *requests,
			     unsigned long count,
			     const struct okp_symbol_ops *ops,
			     struct okp_symbol_failure *failure);

const char *okp_core_symbol_verdict_text(enum okp_symbol_verdict verdict);

/* ---- Operator switches (sysctl and debugfs) ---------------------------- */

int okp_core_init(void);
void okp_core_exit(void);

/* debug.kprobes_optimization: 1 lets probes be optimized into jumps. */
int okp_core_optimization_enabled(void);
void okp_core_set_optimization(int enabled);

/* ---- Address ranges okprobe refuses to probe (debugfs okprobe/blacklist) */

/* Returns 0, or -1 when out of memory or the range is empty. */
int okp_core_blacklist_add(unsigned long start, unsigned long end,
			   const char *why);
/* Returns the entry's why string, or 0 when the address is probeable. */
const char *okp_core_blacklist_find(unsigned long address);
unsigned long okp_core_blacklist_count(void);
/* Copies entry index; returns 0 when index is past the end. */
int okp_core_blacklist_entry(unsigned long index, unsigned long *start,
			     unsigned long *end, const char **why);

/*
 * Adds to the blacklist every function on the arch's trap path where a
 * breakpoint cannot be taken (okp::arch::trap_path_functions). Returns how
 * many, or a negative errno with *why (and *culprit: the function where
 * the walk gave up, or 0).
 */
long okp_core_refuse_trap_path(const char **why, unsigned long *culprit);

/* ---- Probes (src/core/probe_api.cpp, under the glue's probe mutex) ---- */

struct okprobe;

/*
 * May sleep. symbol_name: the glue's bounded copy of probe->symbol_name,
 * or NULL. 0 or -errno, and *why.
 */
int okp_core_register(struct okprobe *probe, const char *symbol_name,
		      const char **why);
/*
 * One grace period for the batch; entries the table does not hold (NULL,
 * unregistered, copies) are skipped and counted: returns how many.
 */
unsigned long okp_core_unregister_many(struct okprobe **probes,
				       unsigned long count);
/* okprobe_enable/okprobe_disable: 0 or -EINVAL. */
int okp_core_set_probe_enabled(struct okprobe *probe, int enabled);
/* debugfs okprobe/enabled: 0 disarms every probe without unregistering. */
int okp_core_probes_enabled(void);
void okp_core_set_probes_enabled(int enabled);
/* Text [start, end) goes away (module unload): its probes become gone. */
void okp_core_text_gone(unsigned long start, unsigned long end);
/* Up to capacity probes whose struct or handlers lie in [start, end). */
unsigned long okp_core_probes_within(unsigned long start, unsigned long end,
				     struct okprobe **found,
				     unsigned long capacity);
/* Unregisters whatever clients left behind (module exit). */
void okp_core_probes_exit(void);

/* One line of debugfs okprobe/list. */
struct okp_list_line {
	unsigned long address;
	const char *description;	/* symbol+0xoff/0xsize [module] */
	unsigned long hits;
	unsigned long missed;
	unsigned int flags;		/* OKPROBE_FLAG_* */
	int optimized;			/* a jump replaces the breakpoint */
};
void okp_core_list(void (*emit)(const struct okp_list_line *line,
				void *context),
		   void *context);

/* One line of debugfs okprobe/jumps: a probed address and its jump. */
struct okp_jump_line {
	unsigned long address;
	const char *description;
	const char *state;		/* "optimized", "waiting", "breakpoint", "lost" */
	const char *why;		/* why not optimized, or NULL */
	unsigned int region_length;	/* bytes the jump replaces (0: none) */
	unsigned int detour_size;	/* bytes of detour code (0: none) */
};
void okp_core_jumps(void (*emit)(const struct okp_jump_line *line,
				 void *context),
		    void *context);

/* debug.kprobes_optimization changed: unoptimize or queue every probe. */
void okp_core_optimization_changed(void);
/*
 * The optimizer's delayed work: begin returns 0 when there is nothing to
 * do, else a generation; the glue drops the probe mutex, waits for
 * synchronize_rcu() and synchronize_rcu_tasks(), takes it again and calls
 * finish.
 */
unsigned long okp_core_optimizer_begin(void);
void okp_core_optimizer_finish(unsigned long generation);

struct okp_cpu_state;
/*
 * An optimized probe's detour calls this, with preemption disabled: site is
 * the probe's site, regs the detour's saved struct pt_regs, cpu this CPU's
 * handler state.
 */
void okp_core_optimized_hit(void *site, void *regs,
			    struct okp_cpu_state *cpu);

/*
 * The breakpoint handler (arch): regs is the trap's struct pt_regs. Returns
 * 1 when the breakpoint was okprobe's (regs now says where to continue), 0
 * when it was not; riscv: OKP_BREAKPOINT_TRAPPING_COPY when regs continue
 * in a trapping out-of-line copy, whose post trap must follow on this CPU
 * (arch/riscv/trap_break.S). NMI-like context: no locks, no allocation.
 */
int okp_core_breakpoint(void *regs);
#define OKP_BREAKPOINT_TRAPPING_COPY 2

/* Per-CPU handler state, owned by the glue (DEFINE_PER_CPU). */
struct okp_cpu_state {
	void *active_site;		/* a handler or a post-trap step runs */
	/*
	 * riscv: copies of active_site started without handlers (a nested
	 * hit) whose post traps are still to come: they come first.
	 */
	unsigned long nested_copies;
	unsigned long saved_flags;	/* IF to restore at the post trap */
	/* The probes this hit runs (okp::ProbeTable::HitProbes). */
	void *hit_probes[8];
	int hit_count;
};

/* ---- Provided by the C glue -------------------------------------------- */

/* Process-context allocation for C++ operator new (may sleep). */
void *okp_glue_alloc(unsigned long size);
void okp_glue_free(void *pointer);
/* Called for conditions the core cannot survive (pure virtual call). */
void okp_glue_fatal(const char *message);

/* Kernel facts for registration checks (see registration.hpp). */
enum okp_text_kind {
	OKP_TEXT_NONE, OKP_TEXT_CORE, OKP_TEXT_MODULE, OKP_TEXT_INIT_AFTER_BOOT
};
unsigned long okp_glue_lookup_symbol(const char *name);
int okp_glue_function_of(unsigned long address, unsigned long *start,
			 unsigned long *size);
enum okp_text_kind okp_glue_text_kind(unsigned long address);
const char *okp_glue_reserved(unsigned long address, unsigned long length);
int okp_glue_has_exception_entry(unsigned long address);
/*
 * Claims the function [start, start + size) for okprobe's bytes: 0, or
 * -EBUSY (a kernel kprobe is in it) / -ENOMEM and *why. While claimed, the
 * kernel refuses kprobes in it. Claims are counted; release each one once
 * okprobe's bytes have left the function (src/kernel/kernel_kprobes.c).
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
unsigned long okp_glue_read_text(unsigned long address, void *buffer,
				 unsigned long size);

/*
 * A page of executable memory within rel32 reach of kernel text, filled
 * with breakpoints, read-only; written only through okp_glue_text_write.
 */
void *okp_glue_exec_page_alloc(void);
void okp_glue_exec_page_free(void *page);
/* Cross-modifies text (text_poke under text_mutex, then sync all CPUs). */
void okp_glue_text_write(unsigned long address, const void *bytes,
			 unsigned long length);
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
void okp_glue_synchronize_rcu(void);
/* "symbol+0xoff/0xsize [module]" for address (sprint_symbol), or "". */
void okp_glue_describe(unsigned long address, char *buffer,
		       unsigned long size);
void okp_glue_synchronize_rcu_tasks(void);
struct okp_cpu_state *okp_glue_cpu_state(void);
/* Runs the optimizer's work soon (after a batching delay), unless queued. */
void okp_glue_schedule_optimizer(void);

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
 * x86: 1 when a jump label (enabled or not) of the object holding start
 * jumps into [start, stop), 0 when none does, -1 when okprobe cannot tell
 * (the kernel's jump table is unknown and the function [function,
 * function_end) has jump labels).
 */
int okp_glue_jump_label_target_within(unsigned long start, unsigned long stop,
				      unsigned long function,
				      unsigned long function_end);
/*
 * What an x86 detour needs to do preempt_disable_notrace(),
 * this_cpu_ptr(&okp_cpu_states) and preempt_enable_notrace() itself around
 * its call of okp_core_optimized_hit (see arch/x86/detour.hpp).
 */
struct okp_detour_percpu {
	unsigned long cpu_states;	/* &okp_cpu_states (a per-CPU pointer) */
	long this_cpu_off;		/* %gs offset of this_cpu_off */
	long preempt_count;		/* %gs offset of __preempt_count */
	unsigned long preempt_schedule;	/* preempt_enable's call, or 0 */
};
void okp_glue_detour_percpu(struct okp_detour_percpu *percpu);

/*
 * riscv: the call of every detour. Does what the kernel's optprobe
 * callback does around okp_core_optimized_hit(): fills the rest of the
 * saved struct pt_regs (status as a breakpoint trap would have it),
 * disables preemption and passes this CPU's handler state.
 */
void okp_glue_optimized_entry(void *site, void *regs);
/*
 * riscv: where a fault of the instruction at address resumes (its
 * exception-table entry's fixup), or 0 when it has no entry.
 */
unsigned long okp_glue_exception_fixup(unsigned long address);

/*
 * riscv: the breakpoint trap's read of the text it trapped on (address
 * 2-byte aligned, size even): like okp_glue_read_text, without calling out
 * of okprobe (copy_from_kernel_nofault may be traced or probed). Returns
 * the bytes read.
 */
unsigned long okp_glue_read_trap_text(unsigned long address, void *buffer,
				      unsigned long size);
/* riscv: okprobe.ko's psabi_liveness parameter (1: psABI, 0: strict). */
int okp_glue_psabi_liveness(void);
/*
 * riscv: copies size bytes of read-only data at address (the core
 * kernel's .rodata outside __ro_after_init, or a module's read-only
 * data: where GCC puts switch tables) and returns size; 0 when the range
 * is anything else or unreadable.
 */
unsigned long okp_glue_read_rodata(unsigned long address, void *buffer,
				   unsigned long size);

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

#ifdef __cplusplus
}
#endif

#endif /* OKPROBE_CORE_API_H */
