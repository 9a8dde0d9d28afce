/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What okprobe_selftest.ko's tests share on every architecture: TAP
 * results (read from /sys/kernel/debug/okprobe_selftest/results by the
 * guest's okptest), the EXPECT macro, and threads that hammer probed
 * targets on every online CPU.
 */
#ifndef OKPROBE_SELFTEST_COMMON_H
#define OKPROBE_SELFTEST_COMMON_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/string.h>
#include <linux/types.h>

#include <okprobe.h>

/*
 * The percentage of the long tests' counts (hammered hits, churn rounds,
 * random coexistence steps) to run: the module parameter scale (100). A
 * target whose suite repeats another's on the same source runs fewer
 * (testing.md, "what is not run twice").
 */
long okp_scaled(long count);
/*
 * Whether this run is the full one (scale=100): a target whose suite
 * repeats another's, on the same kprobes source or arch, runs less.
 */
bool okp_full_scale(void);

/* Appends one TAP line: "ok N name" or "not ok N name # why". */
void okp_report(bool ok, const char *name, const char *why);

/*
 * Checks cond inside a test that has a char why[] and an out: label:
 * on failure, formats why and jumps to out.
 */
#define EXPECT(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			snprintf(why, sizeof(why), __VA_ARGS__);	\
			goto out;					\
		}							\
	} while (0)

/* The args_only parameter: the driver runs those tests (arch targets). */
extern bool okp_args_only;

/* The results buffer, then debugfs okprobe_selftest/results. */
int okp_results_init(void);
void okp_results_publish(void);
void okp_results_exit(void);

/* One hammering thread per online CPU. */
struct okp_hammer {
	long calls;		/* made so far */
	long wrong;		/* results that were not as expected */
	bool started;
	struct completion done;
	/* For okp_round_hammer: one round of calls, returns the wrong ones. */
	long (*round)(long a);
};

/* Read by the hammer threads: true asks them to finish. */
extern bool okp_hammer_stop;

/* Starts fn bound to every online CPU; returns how many started. */
unsigned int okp_start_hammers(struct okp_hammer *hammers,
			       int (*fn)(void *data));
/*
 * A hammer thread that calls hammer->round(a) (a = 0..7 in turn) until
 * asked to stop, sleeping now and then so that rcu-tasks grace periods end.
 */
int okp_round_hammer(void *data);
/* Starts okp_round_hammer with round on every online CPU. */
unsigned int okp_start_round_hammers(struct okp_hammer *hammers,
				     long (*round)(long a));
/*
 * Calls every target from a thread on every online CPU at once, in rounds
 * (a = 0..7 in turn, b = 1), until min_calls calls are made; the rounds
 * made in *rounds. False, with why in reason, when a thread did not start
 * or a result was wrong.
 */
struct okp_cycle_target;
bool okp_hammer_targets(const struct okp_cycle_target *targets, size_t count,
			long min_calls, long *rounds, char *reason,
			size_t reason_size);
/* Calls made so far by all of them. */
long okp_hammer_calls(struct okp_hammer *hammers);
/* Stops them and adds up their calls and wrong results. */
void okp_stop_hammers(struct okp_hammer *hammers, long *calls, long *wrong);

/* Every probe target: long name(long a, long b). */
typedef long (*okp_target_fn)(long a, long b);

/*
 * The length of the landing pad a function starts with: IBT kernels put an
 * endbr64 at every function's entry (SYM_FUNC_START adds it to the
 * assembly targets too), and okprobe, like kprobes, never probes it. Where
 * no indirect call can land the loader seals it into a 4-byte nop.
 */
static inline unsigned long okp_entry_pad(const void *function)
{
#ifdef CONFIG_X86_64
	static const u8 endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const u8 sealed[] = { 0x66, 0x0f, 0x1f, 0x00 };

	if (!memcmp(function, endbr64, sizeof(endbr64)) ||
	    !memcmp(function, sealed, sizeof(sealed)))
		return sizeof(endbr64);
#endif
	return 0;
}

/*
 * offset bytes into a function's own code: the test tables count their
 * offsets from the instruction after the entry pad, on every kernel.
 */
static inline void *okp_at(const void *function, unsigned long offset)
{
	return (void *)function + okp_entry_pad(function) + offset;
}

/* The bytes compared to prove a probe's text is restored. */
/*
 * The exported function behind strscpy(): strscpy itself in 6.1, a macro
 * over sized_strscpy() since the two-argument form came (6.8).
 */
#ifdef strscpy
#define OKP_STRSCPY_FUNCTION sized_strscpy
#else
#define OKP_STRSCPY_FUNCTION strscpy
#endif

#define OKP_TEXT_BYTES 4

struct pt_regs;

/*
 * A probe that counts its handlers' runs. With redirect_to set, its
 * pre_handler sets the return value to 42 and continues there (returns 1).
 */
struct okp_counted_probe {
	struct okprobe probe;
	atomic_t hits;			/* of the pre_handler */
	atomic_t post_hits;
	unsigned long redirect_to;
	u8 original[OKP_TEXT_BYTES];	/* the text before registering */
};

int okp_count_pre(struct okprobe *probe, struct pt_regs *regs);
void okp_count_post(struct okprobe *probe, struct pt_regs *regs,
		    unsigned long flags);

/* ---- Jump optimization ---------------------------------------------------- */

/* The optimizer waits 5 jiffies and an rcu-tasks grace period (slow on TCG). */
#define OKP_OPTIMIZE_TIMEOUT_MS 60000

struct okprobe;

bool okp_optimized(struct okprobe *probe);
/* Waits until the probe is (or is not) optimized; false on timeout. */
bool okp_wait_optimized(struct okprobe *probe, bool optimized);
/* Writes sysctl debug.kprobes_optimization as an operator would. */
int okp_write_sysctl(const char *value);
/* Writes value to a /proc or /sys file; 0 or -errno. */
int okp_write_file(const char *path, const char *value);
/* Reads up to size bytes of the file; how many, or an error. */
ssize_t okp_read_file(const char *path, char *buffer, size_t size);
#define OKP_JUMPS_FILE "/sys/kernel/debug/okprobe/jumps"
/* A probed target of the cycle test, and what it must return. */
struct okp_cycle_target {
	okp_target_fn target;
	unsigned long offset;
	long (*expect)(long a, long b);
	/*
	 * Where the jump starts before the probe (riscv: a window that ends
	 * at a return).
	 */
	unsigned int behind;
};

/*
 * A steady probe (pre_handler only) at each target, every CPU calling all
 * targets, while step(steady, n, context) runs for n = 0, 1, ... until at
 * least min_steps steps and min_rounds rounds of calls. True when every
 * hammer started, no step failed (nonzero), no call returned a wrong
 * result, and every steady probe counted every call with none missed;
 * otherwise false with reason filled. *rounds: the rounds of calls made.
 */
bool okp_hammer_steady(const struct okp_cycle_target *targets, size_t count,
		       long min_rounds, unsigned long min_steps,
		       int (*step)(struct okp_counted_probe *steady,
				   unsigned long n, void *context),
		       void *context, long *rounds, char *reason,
		       size_t reason_size);

/*
 * Every CPU calls every target (a = 0..7 in turn, b = 1) while their
 * probes go optimize -> unoptimize -> optimize, by the sysctl and by
 * enabling a post_handler probe at the first target, until at least
 * min_hits calls: every steady probe must count every call, and the
 * post_handler probe get both handlers or neither.
 */
void okp_test_optimization_cycles(const struct okp_cycle_target *targets,
				  size_t count, long min_hits,
				  const char *name);

/*
 * Counting probes (OKPROBE_FLAG_COUNTER) at every target, all optimized,
 * every CPU calling every target until min_calls calls in all: each count
 * is exactly its target's calls and every result is right (the targets'
 * registers and flags went through). Then: a disabled counter stops
 * counting and counts again once enabled; a handler, or a second probe at
 * a counter's address, is refused; unregistering restores the text.
 */
void okp_test_counting(const struct okp_cycle_target *targets, size_t count,
		       long min_calls);

/*
 * A probe at target + inner_offset, inside the jump of an optimized probe
 * at target: registering it takes the outer jump out first (both are
 * breakpoints, is_breakpoint says so from the text), the outer stays a
 * breakpoint while the inner one lives (and is optimized itself), both
 * count every call, and the outer jumps again once the inner one is gone.
 */
void okp_test_neighbour_in_region(okp_target_fn target,
				  unsigned long inner_offset,
				  long (*expect)(long a, long b),
				  bool (*is_breakpoint)(void *address));

/* ---- A function's entry (okprobe_selftest_entry.c) ------------------------ */

void okp_test_entry_probes(void);

/*
 * Return probe targets in each arch's assembly, no ftrace call site:
 * a < 0: 1, a == 0: 2, else 2a + b (three returns); the same of a + 1
 * through a tail call; a == 0: b, else itself of (a - 1, b) plus 1.
 */
long okp_ret_branches(long a, long b);
long okp_ret_tail(long a, long b);
long okp_ret_recurse(long a, long b);

/* okprobe_selftest_return.c: return probes (okretprobe). */
void okp_test_return_probes(void);
/*
 * entry_only=1 / return_only=1 / coexist_only=1 / context_only=1: the
 * module runs okp_test_entry_probes() / okp_test_return_probes() / the
 * kernel kprobe coexistence matrix on kernel functions / the calling
 * contexts and bad input (okp_test_bad_input() on target + offset) alone.
 * okp_part_only() says whether it was loaded so; okp_run_part_only() runs
 * the part, publishes its results and returns true, or returns false for
 * the whole suite.
 */
bool okp_part_only(void);
bool okp_run_part_only(okp_target_fn target, unsigned long offset,
		       long (*expect)(long a, long b));

/* ---- Next to the kernel's kprobes (okprobe_selftest_coexist.c) ---------- */

/* A function the coexistence matrix probes. */
struct okp_coexist_target {
	void *function;
	/*
	 * Offsets of instructions: where the first party goes, one inside
	 * its jump region, one elsewhere in the function.
	 */
	unsigned long at, inside, other;
	/* Calls the function once; false when it returned a wrong result. */
	bool (*call)(void *function, long a);
	/* Nothing but the test calls it: hit counts are exact. */
	bool exclusive;
	/* Both optimizers put their jump at "at": the test waits for it. */
	bool optimizable;
};

/*
 * The matrix: {kernel kprobe, optimized kernel kprobe} x {okprobe,
 * optimized okprobe} x {same address, inside the region, same function,
 * other function} x both registration orders x both removal orders, every
 * CPU calling the targets throughout. One TAP line per pair and placement.
 */
void okp_test_kernel_kprobes(const struct okp_coexist_target *target,
			     const struct okp_coexist_target *other);
/*
 * steps seeded random steps (the seed is in the TAP line) over the targets,
 * every CPU calling them throughout: a kernel kprobe or an okprobe
 * registered or unregistered at a target's offset, an okprobe enabled or
 * disabled, okprobe's sysctl or the kernel's kprobes-optimization
 * toggled. After every step: a target never holds both, each registration
 * is accepted exactly when the other party is absent, no okprobe is
 * [OPTIMIZED] without its jump in the text; every 100 steps every probe
 * counts a burst of calls exactly. At the end the text is as it was.
 */
void okp_test_random_coexistence(const struct okp_cycle_target *targets,
				 size_t count, unsigned int steps);
/*
 * Its steps at full counts. Each run draws a new seed, so runs add up;
 * 1000 steps make every kind of step at every target many times (2000
 * took a minute of x86's guest, over make check's budget).
 */
#define OKP_RANDOM_STEPS 1000
/* The same on strscpy and memchr_inv (offsets found at run time). */
void okp_test_kernel_kprobes_on_kernel_functions(void);
void okp_test_kernel_kprobe_in_piece(okp_target_fn function, void *piece,
				     long (*expect)(long a, long b));

/* ---- Bad client input (okprobe_selftest_input.c) -------------------------- */

/*
 * NULL pointers, unknown structs, bad symbol_name strings and a seeded fuzz
 * loop through every API entry point; afterwards a probe at target + offset
 * (which returns expect(a, b)) must still count every call.
 */
void okp_test_lost_text(const struct okp_cycle_target *target);
void okp_test_trap_path_refused(const char *const *refused,
				size_t refused_count,
				const char *const *allowed,
				size_t allowed_count);
void okp_test_handler_calls_its_function(okp_target_fn target,
					 unsigned long offset,
					 long (*expect)(long a, long b));
void okp_test_bad_input(okp_target_fn target, unsigned long offset,
			long (*expect)(long a, long b));

/*
 * ---- Lifecycle cases (okprobe_selftest_lifecycle.c) -----------------------
 *
 * Written once; each arch passes its targets. A target's offset is the
 * probed instruction; is_breakpoint says from the text whether okprobe's
 * breakpoint is at an address.
 */

/* good holds three distinct addresses. */
void okp_test_register_many(const struct okp_cycle_target *good,
			    void *inside_instruction);
void okp_test_recursion(const struct okp_cycle_target *outer,
			const struct okp_cycle_target *inner);
/* return_offset: an instruction of the target that returns. */
void okp_test_redirect(const struct okp_cycle_target *target,
		       unsigned long return_offset);
void okp_test_aggregation(const struct okp_cycle_target *target);
void okp_test_optimized_probe_changes(const struct okp_cycle_target *target,
				      const struct okp_cycle_target *outer_target);
void okp_test_double_registration(const struct okp_cycle_target *target);
void okp_test_enable_disable(const struct okp_cycle_target *target,
			     bool (*is_breakpoint)(void *address));
void okp_test_disabled_aggregate(const struct okp_cycle_target *target,
				 bool (*is_breakpoint)(void *address));

/* A registration that must fail, and with which errno. */
struct okp_bad_registration {
	const char *what;
	const char *symbol;
	void *addr;
	unsigned long offset;
	bool handler;		/* false: no handler at all */
	int error;
};

/* target_symbol names target, a function okprobe can probe at +0. */
void okp_test_bad_registrations(const char *target_symbol, void *target,
				const struct okp_bad_registration *arch_cases,
				size_t count);
/* neighbour: another instruction of targets[0]'s function. */
void okp_test_concurrency(const struct okp_cycle_target *targets,
			  size_t count, void *neighbour, long min_calls,
			  unsigned long min_rounds);
/* target must optimize; optimized_result is what target(1, 2) returns. */
void okp_test_optimized_redirect_ignored(const struct okp_cycle_target *target,
					 unsigned long return_offset,
					 long optimized_result);

#endif /* OKPROBE_SELFTEST_COMMON_H */
