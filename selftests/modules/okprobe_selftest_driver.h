/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The driver of okprobe_selftest.ko (okprobe_selftest_driver.c): the module
 * init that runs the same breakpoint and jump tests on every architecture,
 * the handlers that record what a probe saw, and the runner of the
 * one-instruction cases. Each architecture's file (okprobe_selftest_x86.c,
 * okprobe_selftest_riscv.c) describes itself in okp_selftest_arch: its
 * cases, which of its targets each shared test probes, what its results
 * must be, and the tests only it runs, at their places in its run order.
 */
#ifndef OKPROBE_SELFTEST_DRIVER_H
#define OKPROBE_SELFTEST_DRIVER_H

#include <linux/atomic.h>
#include <linux/limits.h>
#include <linux/ptrace.h>
#include <linux/types.h>

#include <okprobe.h>

#include "okprobe_selftest_common.h"

/* ---- What a probe saw ------------------------------------------------------ */

struct okp_probe_record {
	struct okprobe probe;
	atomic_t pre_hits, post_hits;
	/* The pre_handler's first two arguments (a, b) and pc. */
	long seen_arg0, seen_arg1;
	unsigned long seen_pc;
	/* The registers the post_handler saw. */
	struct pt_regs after;
};

/* A record whose probe at address has okp_record_pre; NULL without memory. */
struct okp_probe_record *okp_record_new(void *address);
int okp_record_pre(struct okprobe *probe, struct pt_regs *regs);
void okp_record_post(struct okprobe *probe, struct pt_regs *regs,
		     unsigned long flags);
/* Counts nothing: for probes that only need to be there. */
int okp_record_pre_count(struct okprobe *probe, struct pt_regs *regs);
/*
 * Unregisters the record's probe (a no-op when it is not registered) and
 * frees it; NULL is fine.
 */
void okp_record_free(struct okp_probe_record *r);

/* ---- One instruction, probed and called 100 times --------------------------- */

/* A case whose results the architecture checks in a test of its own. */
#define OKP_NO_RESULT LONG_MIN

struct okp_case {
	const char *name;
	okp_target_fn target;
	unsigned long offset;
	long a, b;
	long expected;		/* for a; each call adds 1 to a and to it */
	bool post;
	int result_step;	/* how much the result grows per call: 0 = 1 */
	bool args_moved;	/* a and b are no longer the arguments there */
	/* For post_handlers of control flow: where it continued (0: next). */
	okp_target_fn continues_at;
	int links;		/* bytes to the return address it links, 0: none */
};

/* An instruction: okp_at(function, offset). */
struct okp_instruction {
	okp_target_fn function;
	unsigned long offset;
};

/* A symbol and an offset in it. */
struct okp_symbol_offset {
	const char *symbol;
	unsigned long offset;
};

/* ---- An architecture, as the driver runs it ------------------------------- */

/*
 * Where the tests only the architecture runs go in the run order: before
 * the cases; after them; before the bad client input; after the trap
 * path's refusals; after the disabled aggregate; in place of the jump
 * cases; after the ignored redirect of an optimized probe.
 */
enum okp_arch_tests_place {
	OKP_BEFORE_CASES,
	OKP_AFTER_CASES,
	OKP_BEFORE_BAD_INPUT,
	OKP_AFTER_TRAP_PATH,
	OKP_AFTER_DISABLED_AGGREGATE,
	OKP_JUMP_CASES,
	OKP_AFTER_REDIRECT_IGNORED,
	OKP_ARCH_TESTS_PLACES
};

/* The tests only the architecture runs at one place (NULL: none). */
typedef void (*okp_arch_tests_fn)(void);

/* The lifecycle tests' targets. */
struct okp_lifecycle_targets {
	/* okp_test_register_many's three (the first also redirected). */
	const struct okp_cycle_target *three;
	/* An instruction of the first one's function that returns. */
	unsigned long redirect_return_offset;
	/* Aggregated, then enabled and disabled. */
	const struct okp_cycle_target *toggled;
	const struct okp_cycle_target *disabled_aggregate;
	/* Inside an instruction, for okp_test_register_many. */
	struct okp_instruction inside_instruction;
};

/* The concurrency test's steady probes, and the churned one's neighbour. */
struct okp_concurrency_targets {
	const struct okp_cycle_target *steady;
	size_t count;
	void *neighbour;
	long calls;			/* at least, on all CPUs */
	unsigned long churn_rounds;	/* at least */
	/* Churn breakpoints only: optimization off while it runs. */
	bool unoptimized;
};

/* The trap path's functions okprobe refuses, and ones it takes. */
struct okp_trap_path {
	const char *const *refused;
	size_t refused_count;
	const char *const *allowed;
	size_t allowed_count;
};

/* Jump optimization's targets. */
struct okp_jump_targets {
	/* Every optimizable target, for the cycle, counting, random tests. */
	const struct okp_cycle_target *all;
	size_t count;
	long cycle_hits;
	const char *cpu;	/* what the architecture calls one: "CPU" */
	/* A function optimized at +0; offset: inside its jump's region. */
	struct okp_cycle_target region;
	/*
	 * all[0] optimized, its pre_handler redirecting to an instruction
	 * that returns: what it returns for (1, 2) once that is ignored.
	 */
	unsigned long redirect_offset;
	long redirect_ignored_result;
};

/* Next to the kernel's kprobes. */
struct okp_coexistence_targets {
	const struct okp_coexist_target *target, *other;
	/* a + b, or a + 1 when b == 0 in its piece split_cold */
	okp_target_fn split;
	void *split_cold;
};

/*
 * Registered while the module is loaded, for okptest to read in debugfs
 * okprobe/list (the resident one, hit 5 times at load) and okprobe/jumps
 * (why each refused one stays a breakpoint).
 */
struct okp_resident_probes {
	struct okp_instruction resident;
	const struct okp_symbol_offset *refused;
	size_t refused_count;
};

struct okp_selftest_arch {
	const struct okp_case *cases;
	size_t case_count;
	/*
	 * How far past the probed address the pc the pre_handler sees is:
	 * x86's int3 reports the byte after it, riscv's ebreak itself.
	 */
	unsigned long pc_past_probe;
	/*
	 * The register a call links its return address in, as the
	 * post_handler saw it (riscv's ra); NULL where calls link on the
	 * stack (x86), whose cases link nothing.
	 */
	unsigned long (*link_register)(struct pt_regs *regs);
	/* Whether okprobe's breakpoint is at an address, from the text. */
	bool (*is_breakpoint)(void *address);
	/* Its own tests, OKP_ARCH_TESTS_PLACES of them, by place. */
	const okp_arch_tests_fn *tests;
	/*
	 * A plain probed instruction: for one part alone, bad client input,
	 * a handler calling its own function; the module's entry_pad.
	 */
	struct okp_cycle_target plain;
	const struct okp_lifecycle_targets *lifecycle;
	const struct okp_concurrency_targets *concurrency;
	const struct okp_trap_path *trap_path;
	const struct okp_jump_targets *jumps;
	const struct okp_coexistence_targets *coexistence;
	const struct okp_resident_probes *residents;
	/*
	 * Where a and b of long f(long a, long b) are still in the first two
	 * argument registers and the return value register holds a, and f
	 * returns that register plus b: okprobe_selftest_args.c.
	 */
	struct okp_instruction args;
};

/* Argument-only probes at the arch's args instruction (as a breakpoint, optimized). */
void okp_test_args_probes(const struct okp_instruction *at);
/*
 * x86: 1 when the jump at address leads to an argument-only detour, 0 to
 * another, -1 without a jump; riscv: -1.
 */
int okp_args_detour_at(void *address);
/* okprobe_selftest_args_diff.c */
void okp_test_args_differential(const struct okp_jump_targets *jumps,
				long concurrent_calls);

/* The architecture's, in okprobe_selftest_x86.c or _riscv.c. */
extern const struct okp_selftest_arch okp_selftest_arch;

#endif /* OKPROBE_SELFTEST_DRIVER_H */
