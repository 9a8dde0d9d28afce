/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The core's entry points: okp_core_* functions, implemented in C++ (src/core,
 * and the arch's hit handlers in arch/<arch>/), called by the C glue.
 *
 * Only plain C types cross the boundary between okprobe's C glue (which
 * includes <linux/...> headers) and its freestanding C++ core (which never
 * does): integers, pointers, and the structs below.
 */
#ifndef OKPROBE_CORE_ENTRY_H
#define OKPROBE_CORE_ENTRY_H

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
 * okprobe_register_many: the breakpoints of the okp_core_register calls
 * between these two go into the text together, with one synchronization,
 * and their entries through ftrace into its filters with one pass; end
 * before anything else (a rollback) and before the mutex is dropped. End
 * returns 0, or the negative errno ftrace refused an entry with (*where
 * the site, *why the reason): the batch is then to be unregistered.
 */
void okp_core_begin_arm_batch(void);
int okp_core_end_arm_batch(const char **where, const char **why);
/*
 * One grace period for the batch; entries the table does not hold (NULL,
 * unregistered, copies) are skipped and counted: returns how many.
 */
unsigned long okp_core_unregister_many(struct okprobe **probes,
				       unsigned long count);
/* okprobe_enable/okprobe_disable: 0 or -EINVAL. */
int okp_core_set_probe_enabled(struct okprobe *probe, int enabled);
/* Disables count probes at once, all or none: 0 or -EINVAL. */
int okp_core_disable_probes(struct okprobe **probes, unsigned long count);
/*
 * okprobe-cover: the function holding address ([*start, *start + *size)),
 * and the offsets of its basic blocks' first instructions, decoded from
 * its text as it was before okprobe (core/basic_blocks.hpp): their count,
 * of which at most capacity are written, or -ENOENT (no function there),
 * -E2BIG, -ENOMEM, -EIO. Probe mutex held.
 */
long okp_core_block_starts(unsigned long address, unsigned long *start,
			   unsigned long *size, unsigned int *offsets,
			   unsigned long capacity);
/*
 * Return probes at the exits: every way out of the function whose entry
 * probe names (symbol_name, a copy of its symbol_name, or its addr; offset
 * 0), found by core/function_exits.hpp, each a return or a tail call to
 * target, written to exits, and the entry probe's address to *entry; their
 * count (at most capacity), or -EOPNOTSUPP when they cannot be proven or a
 * jump could not replace a breakpoint at one of them, -EBUSY (someone
 * else's bytes in the function), -EINVAL (probe names no function's
 * entry), -E2BIG, -ENOMEM; then *why, and *where the instruction that
 * decided it. Probe mutex held.
 */
/* The most exits okp_core_function_exits() reports (max_function_exits). */
#define OKP_FUNCTION_EXITS_MAX 64
struct okp_function_exit {
	unsigned long address;
	unsigned long target;
	int tail_call;
};
long okp_core_function_exits(const struct okprobe *probe,
			     const char *symbol_name, unsigned long *entry,
			     struct okp_function_exit *exits,
			     unsigned long capacity, const char **why,
			     unsigned long *where);
/*
 * ---- Return probes: where one goes (src/core/return_plan.cpp, pure) ----
 * The facts of one okretprobe_register() call, gathered by the glue.
 */
struct okp_return_request {
	int registered;		/* okp_private set, or already listed */
	int has_rethook;	/* the kernel has CONFIG_RETHOOK */
	unsigned long data_size;
	int has_entry_handler;
	unsigned long offset;	/* kp.offset */
	unsigned int flags;	/* kp.flags but OKPROBE_FLAG_RETURN_EXITS */
	int has_symbol_name;
	/* Without symbol_name: kp.addr is where a function starts. */
	int at_function_start;
	/* The symbol kp names (NULL: unknown, kp's registration says why). */
	const char *name;
};
enum okp_return_strategy {
	/* kp at the entry, its pre_handler hooking the return address */
	OKP_RETURN_AT_ENTRY,
	/* probes at the exits where the census proves them, else the entry */
	OKP_RETURN_AT_EXITS,
};
/*
 * request NULL: the client passed no probe. 0 and *strategy, or -EINVAL /
 * -EOPNOTSUPP and *why, the line okretprobe_register() logs.
 */
int okp_core_plan_return(const struct okp_return_request *request,
			 enum okp_return_strategy *strategy, const char **why);

/* okprobe_read_count: 0 or -EINVAL. */
int okp_core_read_count(struct okprobe *probe, unsigned long long *count);
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
	/* asked for the entry, probed past the function's ftrace call site */
	int past_ftrace;
	const struct okprobe *probe;	/* the line's probe */
	/*
	 * An okretprobe's kp at the entry (missed then counts its instances'
	 * misses too, okretprobe.nmissed), or the probe at one of its exits.
	 */
	int return_entry;
	int return_exit;
};
void okp_core_list(void (*emit)(const struct okp_list_line *line,
				void *context),
		   void *context);

/* One line of debugfs okprobe/jumps: a probed address and its jump. */
struct okp_jump_line {
	unsigned long address;
	const char *description;
	/* "optimized", "waiting", "breakpoint", "lost", "ftrace" */
	const char *state;
	const char *why;		/* why not optimized, or NULL */
	unsigned int region_length;	/* bytes the jump replaces (0: none) */
	unsigned int detour_size;	/* bytes of detour code (0: none) */
	unsigned int region_behind;	/* of those, before address */
	int args_detour;		/* the detour is argument-only */
};
void okp_core_jumps(void (*emit)(const struct okp_jump_line *line,
				 void *context),
		    void *context);
/* debugfs writer_steps: each writer step's count and nanoseconds. */
void okp_core_writer_steps(void (*emit)(const char *step, unsigned long times,
					unsigned long ns, void *context),
			   void *context);

/* debug.kprobes_optimization changed: unoptimize or queue every probe. */
void okp_core_optimization_changed(void);
/*
 * The optimizer's delayed work: begin returns 0 when there is nothing to
 * do, else a generation; the glue drops the probe mutex, waits for an RCU
 * and an rcu-tasks grace period (at once), takes it again and calls
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

struct okprobe_args;
/*
 * An argument-only detour calls this instead, with preemption disabled:
 * record is the struct okprobe_args it pushed (what the handlers write to
 * its arguments and return value is popped back into the registers).
 */
void okp_core_args_hit(void *site, struct okprobe_args *record,
		       struct okp_cpu_state *cpu);

/*
 * The breakpoint handler (arch): regs is the trap's struct pt_regs. Returns
 * 1 when the breakpoint was okprobe's (regs now says where to continue), 0
 * when it was not. NMI-like context: no locks, no allocation.
 */
int okp_core_breakpoint(void *regs);

/*
 * okprobe's ftrace_ops callback at the call site address (preemption off,
 * disabled by the glue; no ftrace recursion lock: the core's active_site
 * is the guard): regs as ftrace saved them, or NULL when ftrace saved
 * none, a hit then counted as missed. Not called where RCU is not
 * watching.
 */
void okp_core_ftrace_hit(unsigned long address, void *regs,
			 struct okp_cpu_state *cpu);

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

#ifdef __cplusplus
}
#endif

#endif /* OKPROBE_CORE_ENTRY_H */
