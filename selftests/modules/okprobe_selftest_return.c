// SPDX-License-Identifier: GPL-2.0
/*
 * Return probes (okretprobe), on every kernel with rethook; where there is
 * none, registration is refused with EOPNOTSUPP (checked instead).
 *
 * Targets: assembly of each architecture without an ftrace call site
 * (several returns, a tail call, recursion: okprobe_selftest*_targets.S),
 * C functions of this module (a sleeper, a stack trace taker: ftrace sites
 * where the kernel has ftrace), and real kernel functions others call too
 * (kstrtoull, kern_path: an entry_handler keeps only the test's calls).
 * The kernel's own kretprobe on the same function, in a second phase of
 * the same workload, is the reference for return values, misses and stack
 * traces.
 *
 * Each test runs twice: with an entry_handler and data (the return address
 * hooked through rethook at every call), then with neither, where okprobe
 * runs the handler at the function's exits wherever it can prove them and
 * make each a jump, and where the handler itself keeps only the test's
 * calls.
 */
#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/kthread.h>
#include <linux/namei.h>
#include <linux/path.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/stacktrace.h>
#include <linux/string.h>
#include <linux/wait.h>

#include "okprobe_selftest_common.h"
#ifdef CONFIG_X86_64
#include "okprobe_selftest.h"
#endif

static long okp_expect_branches(long a, long b)
{
	return a < 0 ? 1 : a == 0 ? 2 : 2 * a + b;
}

static long okp_expect_tail(long a, long b)
{
	return okp_expect_branches(a + 1, b);
}

/* What each instance carries from its entry to its return. */
struct okp_ret_data {
	long a, b;
	unsigned long magic;
};

#define OKP_RET_MAGIC 0x6f6b7265UL
/* Return values recorded in order (recursion, the differential). */
#define OKP_RET_RECORDS 64

/*
 * Whether the tests run without entry_handler and data: at the exits where
 * okprobe can put the return probe there.
 */
static bool okp_ret_exits;

struct okp_ret_probe {
	struct okretprobe rp;
	/*
	 * Without data: the arguments of the call the test makes next, for
	 * the handler's check (single-task tests only).
	 */
	long next_a, next_b;
	/*
	 * At the exits, and no tail call (whose callee returns through
	 * rethook): check regs->sp too.
	 */
	bool check_sp;
	/* Only this task's calls get an instance (NULL: every task's). */
	struct task_struct *task;
	long (*expect)(long a, long b);
	/* The function every call returns to (0: any): ret_addr's check. */
	unsigned long caller;
	atomic_t entries, returns, wrong;
	/* The first wrong return, for the report. */
	long wrong_a, wrong_got;
	atomic_t recorded;
	long records[OKP_RET_RECORDS];
};

static struct okp_ret_probe *okp_ret_of(struct okretprobe_instance *ri)
{
	return container_of(ri->rp, struct okp_ret_probe, rp);
}

static int okp_ret_entry(struct okretprobe_instance *ri, struct pt_regs *regs)
{
	struct okp_ret_probe *probe = okp_ret_of(ri);
	struct okp_ret_data *data = (void *)ri->data;

	if (probe->task && current != probe->task)
		return 1;
	data->a = regs_get_kernel_argument(regs, 0);
	data->b = regs_get_kernel_argument(regs, 1);
	data->magic = OKP_RET_MAGIC;
	atomic_inc(&probe->entries);
	return 0;
}

/*
 * At an exit on x86, regs->sp is the stack pointer after the return: the
 * return address was just below it (rethook's trampoline, which a tail
 * call's callee returns through, leaves its own address there).
 */
static bool okp_ret_stack_after_return(struct okp_ret_probe *probe,
				       struct okretprobe_instance *ri,
				       struct pt_regs *regs)
{
#ifdef CONFIG_X86_64
	if (probe->check_sp && (probe->rp.kp.flags & OKPROBE_FLAG_RETURN_EXITS))
		return *(unsigned long *)(regs->sp - sizeof(long)) == ri->ret_addr;
#endif
	return true;
}

static int okp_ret_return(struct okretprobe_instance *ri, struct pt_regs *regs)
{
	struct okp_ret_probe *probe = okp_ret_of(ri);
	struct okp_ret_data next = { probe->next_a, probe->next_b, OKP_RET_MAGIC };
	struct okp_ret_data *data = probe->rp.data_size ? (void *)ri->data : &next;
	long got = regs_return_value(regs);
	int slot;
	bool right;

	/* No entry_handler: the test's calls are kept here. */
	if (!probe->rp.entry_handler) {
		if (probe->task && current != probe->task)
			return 0;
		atomic_inc(&probe->entries);
	}
	right = data->magic == OKP_RET_MAGIC &&
		okp_ret_stack_after_return(probe, ri, regs) &&
		instruction_pointer(regs) == ri->ret_addr &&
		(!probe->caller || (ri->ret_addr > probe->caller &&
				    ri->ret_addr < probe->caller + 4096)) &&
		(!probe->task || current == probe->task) &&
		(!probe->expect || got == probe->expect(data->a, data->b));
	if (!right && atomic_inc_return(&probe->wrong) == 1) {
		probe->wrong_a = data->a;
		probe->wrong_got = got;
	}
	data->magic = 0;
	slot = atomic_inc_return(&probe->recorded) - 1;
	if (slot < OKP_RET_RECORDS)
		probe->records[slot] = got;
	atomic_inc(&probe->returns);
	return 0;
}

static void okp_ret_init(struct okp_ret_probe *probe, const char *symbol,
			 long (*expect)(long a, long b))
{
	memset(probe, 0, sizeof(*probe));
	probe->rp.kp.symbol_name = symbol;
	probe->rp.handler = okp_ret_return;
	if (!okp_ret_exits) {
		probe->rp.entry_handler = okp_ret_entry;
		probe->rp.data_size = sizeof(struct okp_ret_data);
	}
	probe->expect = expect;
}

/* Checks what every return probe test checks at its end. */
static bool okp_ret_balanced(struct okp_ret_probe *probe, int calls,
			     char *why, size_t size)
{
	int entries = atomic_read(&probe->entries);
	int returns = atomic_read(&probe->returns);
	int wrong = atomic_read(&probe->wrong);

	if (entries == calls && returns == calls && !wrong &&
	    !READ_ONCE(probe->rp.nmissed))
		return true;
	snprintf(why, size,
		 "%s: %d calls, %d entries, %d returns, %d wrong (a=%ld got %ld), nmissed %lu",
		 probe->rp.kp.symbol_name, calls, entries, returns, wrong,
		 probe->wrong_a, probe->wrong_got, probe->rp.nmissed);
	return false;
}

static struct okp_ret_probe okp_ret_probes[2];

/* Each test's report, named for the run it belongs to. */
static void okp_ret_report(bool ok, const char *name, const char *why)
{
	char named[320];

	snprintf(named, sizeof(named), "%s%s", name,
		 okp_ret_exits ? " [no entry_handler: at the exits where provable]" : "");
	okp_report(ok, named, why);
}

/*
 * Where a return probe without entry_handler and data runs: at the exits
 * (the census proves them and each becomes a jump). The assembly targets
 * are written for it on both arches. A kernel function's exits on riscv
 * need straight-line code before each (the jump ends at the exit): there
 * either is right. Empty, or why not.
 */
static void okp_ret_check_placement(struct okp_ret_probe *probe, char *why,
				    size_t size)
{
	bool at_exits = probe->rp.kp.flags & OKPROBE_FLAG_RETURN_EXITS;
	bool expected = okp_ret_exits;

	if (IS_ENABLED(CONFIG_RISCV) && okp_ret_exits &&
	    (!probe->rp.kp.symbol_name ||
	     strncmp(probe->rp.kp.symbol_name, "okp_ret_", 8)))
		return;
	if (at_exits != expected)
		snprintf(why, size, "%s: %s the exits", probe->rp.kp.symbol_name,
			 at_exits ? "at" : "not at");
}

/* Without rethook: a clear refusal, nothing registered. */
static void okp_test_return_unsupported(void)
{
	struct okp_ret_probe *probe = &okp_ret_probes[0];
	char why[160] = "";
	int ret;

	okp_ret_init(probe, "okp_ret_branches", okp_expect_branches);
	ret = okretprobe_register(&probe->rp);
	EXPECT(ret == -EOPNOTSUPP, "registered: %d", ret);
	EXPECT(!probe->rp.okp_private, "okp_private set");
out:
	if (!ret)
		okretprobe_unregister(&probe->rp);
	okp_ret_report(!why[0],
		   "without rethook (CONFIG_RETHOOK) a return probe is refused with EOPNOTSUPP",
		   why);
}

/*
 * At the exits the probes are breakpoints until okprobe's optimizer makes
 * them jumps (kp says OKPROBE_FLAG_OPTIMIZED once all are): waits up to
 * 10 s. True once they are, or when the probe is not at the exits.
 */
static bool okp_ret_wait_optimized(struct okp_ret_probe *probe)
{
	unsigned long deadline = jiffies + 10 * HZ;

	if (!(probe->rp.kp.flags & OKPROBE_FLAG_RETURN_EXITS))
		return true;
	while (!(READ_ONCE(probe->rp.kp.flags) & OKPROBE_FLAG_OPTIMIZED)) {
		if (time_after(jiffies, deadline))
			return false;
		msleep(20);
	}
	return true;
}

/*
 * okp_ret_branches' three returns, its arguments carried in data; at the
 * exits, the first half of the calls through their breakpoints, the rest
 * through their jumps.
 */
static void okp_test_return_branches(void)
{
	struct okp_ret_probe *probe = &okp_ret_probes[0];
	long (*target)(long a, long b) = okp_ret_branches;
	int i, calls = 300, ret;
	char why[200] = "";

	okp_ret_init(probe, "okp_ret_branches", okp_expect_branches);
	probe->task = current;
	probe->check_sp = true;
	probe->caller = (unsigned long)okp_test_return_branches;
	ret = okretprobe_register(&probe->rp);
	EXPECT(!ret, "register: %d", ret);
	EXPECT(probe->rp.kp.addr == okp_at(okp_ret_branches, 0),
	       "kp.addr %pS, not the function's first instruction",
	       probe->rp.kp.addr);
	okp_ret_check_placement(probe, why, sizeof(why));
	EXPECT(!why[0], "%s", why);
	OPTIMIZER_HIDE_VAR(target);
	for (i = 0; i < calls; i++) {
		long a = i % 3 == 0 ? -i : i % 3 == 1 ? 0 : i;

		if (i == calls / 2)
			EXPECT(okp_ret_wait_optimized(probe),
			       "the exits not optimized within 10 s");
		probe->next_a = a;
		probe->next_b = i;
		if (target(a, i) != okp_expect_branches(a, i))
			EXPECT(false, "call %d returned the wrong value", i);
	}
	okretprobe_unregister(&probe->rp);
	EXPECT(!probe->rp.okp_private, "okp_private still set");
	okp_ret_balanced(probe, calls, why, sizeof(why));
	/* No handler once unregistered. */
	target(5, 5);
	EXPECT(atomic_read(&probe->returns) == calls,
	       "a handler ran after unregister");
out:
	if (probe->rp.okp_private)
		okretprobe_unregister(&probe->rp);
	okp_ret_report(!why[0],
		   "return probe on a function with three returns: every call's return value, its entry arguments in data, the caller's address as ip (at the exits: through breakpoints, then jumps)",
		   why);
}

/*
 * A tail call: okp_ret_tail's return is okp_ret_branches' ret, which
 * returns to okp_ret_tail's caller. Both probed: both handlers run, each
 * with its own data.
 */
static void okp_test_return_tail_call(void)
{
	struct okp_ret_probe *tail = &okp_ret_probes[0];
	struct okp_ret_probe *branches = &okp_ret_probes[1];
	struct okretprobe *both[] = { &tail->rp, &branches->rp };
	long (*target)(long a, long b) = okp_ret_tail;
	int i, calls = 200, ret;
	char why[200] = "";

	okp_ret_init(tail, "okp_ret_tail", okp_expect_tail);
	okp_ret_init(branches, "okp_ret_branches", okp_expect_branches);
	tail->task = branches->task = current;
	/* Past the tail call, okp_ret_branches returns here too. */
	tail->caller = branches->caller =
		(unsigned long)okp_test_return_tail_call;
	ret = okretprobe_register_many(both, ARRAY_SIZE(both));
	EXPECT(!ret, "register_many: %d", ret);
	okp_ret_check_placement(tail, why, sizeof(why));
	okp_ret_check_placement(branches, why, sizeof(why));
	EXPECT(!why[0], "%s", why);
	OPTIMIZER_HIDE_VAR(target);
	for (i = 0; i < calls; i++) {
		if (i == calls / 2)
			EXPECT(okp_ret_wait_optimized(tail) &&
			       okp_ret_wait_optimized(branches),
			       "the exits not optimized within 10 s");
		tail->next_a = i - 100;
		branches->next_a = i - 100 + 1;
		tail->next_b = branches->next_b = i;
		if (target(i - 100, i) != okp_expect_tail(i - 100, i))
			EXPECT(false, "call %d returned the wrong value", i);
	}
	okretprobe_unregister_many(both, ARRAY_SIZE(both));
	if (okp_ret_balanced(tail, calls, why, sizeof(why)))
		okp_ret_balanced(branches, calls, why, sizeof(why));
out:
	if (tail->rp.okp_private)
		okretprobe_unregister_many(both, ARRAY_SIZE(both));
	okp_ret_report(!why[0],
		   "return probes on a function that tail-calls another and on the other: both handlers run for every call, each with its own data",
		   why);
}

/* Recursion: one instance per level, the innermost returning first. */
static void okp_test_return_recursion(void)
{
	struct okp_ret_probe *probe = &okp_ret_probes[0];
	long (*target)(long a, long b) = okp_ret_recurse;
	int depth = 8, rounds = 20, i, level, ret;
	char why[200] = "";
	long got;

	okp_ret_init(probe, "okp_ret_recurse", NULL);
	probe->task = current;
	ret = okretprobe_register(&probe->rp);
	EXPECT(!ret, "register: %d", ret);
	okp_ret_check_placement(probe, why, sizeof(why));
	EXPECT(!why[0], "%s", why);
	OPTIMIZER_HIDE_VAR(target);
	got = target(depth, 100);
	EXPECT(got == 100 + depth, "returned %ld", got);
	EXPECT(atomic_read(&probe->recorded) == depth + 1, "%d returns",
	       atomic_read(&probe->recorded));
	for (level = 0; level <= depth; level++)
		EXPECT(probe->records[level] == 100 + level,
		       "return %d saw %ld, not %d", level,
		       probe->records[level], 100 + level);
	for (i = 1; i < rounds; i++)
		target(depth, i);
	okretprobe_unregister(&probe->rp);
	okp_ret_balanced(probe, rounds * (depth + 1), why, sizeof(why));
out:
	if (probe->rp.okp_private)
		okretprobe_unregister(&probe->rp);
	okp_ret_report(!why[0],
		   "return probe on a recursive function: one instance per level, returns innermost first with each level's value",
		   why);
}

/* ---- Sleepers ------------------------------------------------------------ */

#define OKP_RET_SLEEPERS 64
#define OKP_RET_SLEEPER_WAVE 4

static DECLARE_WAIT_QUEUE_HEAD(okp_ret_wait);
static bool okp_ret_go;
static atomic_t okp_ret_asleep;

/* Sleeps until okp_ret_go; returns a * 3 + b. */
noinline long okp_ret_sleeper(long a, long b);
noinline long okp_ret_sleeper(long a, long b)
{
	atomic_inc(&okp_ret_asleep);
	wait_event(okp_ret_wait, READ_ONCE(okp_ret_go));
	return a * 3 + b;
}

/*
 * The same without an ftrace call site, which the kernel's kretprobe can
 * take on every kernel (without kprobes on ftrace, riscv 6.12's refuses
 * okp_ret_sleeper's entry).
 */
noinline notrace long okp_ret_sleeper_untraced(long a, long b);
noinline notrace long okp_ret_sleeper_untraced(long a, long b)
{
	atomic_inc(&okp_ret_asleep);
	wait_event(okp_ret_wait, READ_ONCE(okp_ret_go));
	return a * 3 + b;
}

static long okp_expect_sleeper(long a, long b)
{
	return a * 3 + b;
}

struct okp_ret_sleeper_thread {
	long (*target)(long a, long b);
	long a;
	long got;
	struct completion done;
};

static int okp_ret_sleeper_fn(void *data)
{
	struct okp_ret_sleeper_thread *thread = data;
	long (*target)(long a, long b) = thread->target;

	OPTIMIZER_HIDE_VAR(target);
	thread->got = target(thread->a, 7);
	kthread_complete_and_exit(&thread->done, 0);
}

/*
 * Starts count sleepers, waits until all are asleep in okp_ret_sleeper,
 * then calls between() and wakes them. Returns how many returned the
 * right value (or -1 if they did not all fall asleep).
 */
static int okp_ret_run_sleepers(struct okp_ret_sleeper_thread *threads,
				int count, long (*target)(long a, long b),
				void (*between)(void *context), void *context)
{
	unsigned long deadline = jiffies + 60 * HZ;
	int i, started = 0, right = 0;

	WRITE_ONCE(okp_ret_go, false);
	atomic_set(&okp_ret_asleep, 0);
	for (i = 0; i < count; i++) {
		struct task_struct *task;

		threads[i].target = target;
		threads[i].a = i;
		threads[i].got = -1;
		init_completion(&threads[i].done);
		task = kthread_run(okp_ret_sleeper_fn, &threads[i],
				   "okp_ret_sleeper/%d", i);
		if (IS_ERR(task))
			break;
		started++;
		/*
		 * Tasks arrive as on a machine, not all in one instant: in
		 * fours, each four asleep before the next starts.
		 */
		if (started % OKP_RET_SLEEPER_WAVE == 0 || i == count - 1)
			while (atomic_read(&okp_ret_asleep) < started &&
			       time_before(jiffies, deadline))
				msleep(20);
	}
	/* In wait_event() by now, or about to be. */
	msleep(50);
	if (between)
		between(context);
	WRITE_ONCE(okp_ret_go, true);
	wake_up_all(&okp_ret_wait);
	for (i = 0; i < started; i++) {
		wait_for_completion(&threads[i].done);
		right += threads[i].got == okp_expect_sleeper(i, 7);
	}
	return started == count ? right : -1;
}

#ifdef CONFIG_KRETPROBES
struct okp_kernel_ret {
	struct kretprobe rp;
	atomic_t returns;
};

static int okp_kernel_ret_handler(struct kretprobe_instance *ri,
				  struct pt_regs *regs)
{
	struct okp_kernel_ret *probe =
		container_of(get_kretprobe(ri), struct okp_kernel_ret, rp);

	atomic_inc(&probe->returns);
	return 0;
}
#endif

/* okprobe's phase: 64 sleepers in target; its nmissed stays 0. */
static bool okp_ret_sleepers_on(struct okp_ret_sleeper_thread *threads,
				long (*target)(long a, long b),
				const char *symbol, char *why, size_t size)
{
	struct okp_ret_probe *probe = &okp_ret_probes[0];
	int right, ret;

	unsigned long seen = 0;
	int i;

	/* Without data each return's value is checked against the set. */
	okp_ret_init(probe, symbol, okp_ret_exits ? NULL : okp_expect_sleeper);
	probe->caller = (unsigned long)okp_ret_sleeper_fn;
	ret = okretprobe_register(&probe->rp);
	if (ret) {
		snprintf(why, size, "register on %s: %d", symbol, ret);
		return false;
	}
	right = okp_ret_run_sleepers(threads, OKP_RET_SLEEPERS, target, NULL,
				     NULL);
	okretprobe_unregister(&probe->rp);
	if (right != OKP_RET_SLEEPERS) {
		snprintf(why, size, "%s: %d sleepers returned right", symbol,
			 right);
		return false;
	}
	for (i = 0; okp_ret_exits && i < OKP_RET_SLEEPERS &&
		    i < atomic_read(&probe->recorded); i++) {
		long a = (probe->records[i] - 7) / 3;

		if (a >= 0 && a < OKP_RET_SLEEPERS &&
		    okp_expect_sleeper(a, 7) == probe->records[i])
			seen |= 1UL << a;
	}
	if (okp_ret_exits && seen != ~0UL) {
		snprintf(why, size, "%s: returns seen %lx, not every sleeper's",
			 symbol, seen);
		return false;
	}
	return okp_ret_balanced(probe, OKP_RET_SLEEPERS, why, size);
}

/*
 * 64 tasks asleep in the probed function at once: okprobe misses none
 * (its entry through ftrace, or past it, and without an ftrace call site),
 * where the kernel's kretprobe with its default maxactive (max(10, 2 x
 * CPUs)) misses the rest, in a second phase on the same function.
 */
static void okp_test_return_sleepers(void)
{
	struct okp_ret_sleeper_thread *threads;
	char why[200] = "", name[200];
	long kernel_missed = -1;
	int right, ret;

	threads = kcalloc(OKP_RET_SLEEPERS, sizeof(*threads), GFP_KERNEL);
	EXPECT(threads, "no memory");
	if (!okp_ret_sleepers_on(threads, okp_ret_sleeper, "okp_ret_sleeper",
				 why, sizeof(why)) ||
	    !okp_ret_sleepers_on(threads, okp_ret_sleeper_untraced,
				 "okp_ret_sleeper_untraced", why, sizeof(why)))
		goto out;
#ifdef CONFIG_KRETPROBES
	{
		struct okp_kernel_ret kernel = {
			.rp.kp.symbol_name = "okp_ret_sleeper_untraced",
			.rp.handler = okp_kernel_ret_handler,
		};

		ret = register_kretprobe(&kernel.rp);
		EXPECT(!ret, "the kernel's kretprobe: %d", ret);
		right = okp_ret_run_sleepers(threads, OKP_RET_SLEEPERS,
					     okp_ret_sleeper_untraced, NULL,
					     NULL);
		unregister_kretprobe(&kernel.rp);
		kernel_missed = kernel.rp.nmissed;
		EXPECT(right == OKP_RET_SLEEPERS,
		       "under the kernel's kretprobe %d sleepers returned right",
		       right);
		EXPECT(atomic_read(&kernel.returns) + kernel_missed ==
			       OKP_RET_SLEEPERS,
		       "the kernel's kretprobe: %d returns, %ld missed",
		       atomic_read(&kernel.returns), kernel_missed);
		/* Its default pool is smaller than 64 here. */
		if (max(10, 2 * (int)num_possible_cpus()) < OKP_RET_SLEEPERS)
			EXPECT(kernel_missed > 0,
			       "the kernel's kretprobe missed none");
	}
#endif
out:
	kfree(threads);
	snprintf(name, sizeof(name),
		 "%d tasks asleep in a return-probed function on %u CPUs, traced and not: nmissed 0, every return value right (the kernel's kretprobe, default maxactive: %ld missed)",
		 OKP_RET_SLEEPERS, num_online_cpus(), kernel_missed);
	okp_ret_report(!why[0], name, why);
}

static void okp_ret_unregister_between(void *context)
{
	okretprobe_unregister(context);
}

/*
 * Unregistered while 16 calls are inside the function: they return to
 * their callers with the right values, and no handler runs.
 */
static void okp_test_return_unregister_pending(void)
{
	struct okp_ret_probe *probe = &okp_ret_probes[0];
	struct okp_ret_sleeper_thread *threads;
	int right, ret, pending = 16;
	char why[200] = "";

	threads = kcalloc(pending, sizeof(*threads), GFP_KERNEL);
	EXPECT(threads, "no memory");
	okp_ret_init(probe, "okp_ret_sleeper", okp_expect_sleeper);
	ret = okretprobe_register(&probe->rp);
	EXPECT(!ret, "register: %d", ret);
	right = okp_ret_run_sleepers(threads, pending, okp_ret_sleeper,
				     okp_ret_unregister_between, &probe->rp);
	EXPECT(right == pending, "%d of %d returned right", right, pending);
	/* Without an entry_handler, entries are counted at the returns. */
	EXPECT(atomic_read(&probe->entries) == (okp_ret_exits ? 0 : pending),
	       "%d entries", atomic_read(&probe->entries));
	EXPECT(!atomic_read(&probe->returns),
	       "%d handlers ran after unregister",
	       atomic_read(&probe->returns));
out:
	if (probe->rp.okp_private)
		okretprobe_unregister(&probe->rp);
	kfree(threads);
	okp_ret_report(!why[0],
		   "unregistered while 16 calls are inside the function: they return to their callers, no handler runs",
		   why);
}

/* ---- Stack traces -------------------------------------------------------- */

#define OKP_RET_STACK 12

static unsigned long okp_ret_stack[OKP_RET_STACK];
static unsigned int okp_ret_stack_length;

noinline void okp_ret_stack_leaf(void);
noinline void okp_ret_stack_leaf(void)
{
	okp_ret_stack_length = stack_trace_save(okp_ret_stack,
						OKP_RET_STACK, 0);
}

/* Takes a stack trace below itself; returns a + b. */
noinline long okp_ret_stacker(long a, long b);
noinline long okp_ret_stacker(long a, long b)
{
	void (*leaf)(void) = okp_ret_stack_leaf;

	OPTIMIZER_HIDE_VAR(leaf);
	leaf();
	return a + b;
}

/*
 * The same without an ftrace call site: where kprobes cannot take a
 * traced function's entry (riscv 6.12 has no kprobes on ftrace), the
 * kernel's kretprobe can take this one, for the comparison.
 */
noinline notrace long okp_ret_stacker_untraced(long a, long b);
noinline notrace long okp_ret_stacker_untraced(long a, long b)
{
	void (*leaf)(void) = okp_ret_stack_leaf;

	OPTIMIZER_HIDE_VAR(leaf);
	leaf();
	return a + b;
}

static long okp_expect_stacker(long a, long b)
{
	return a + b;
}

/* Always from here, so that every trace has the same callers. */
static noinline unsigned int okp_ret_take_stack(long (*stacker)(long a, long b),
						unsigned long *trace)
{
	OPTIMIZER_HIDE_VAR(stacker);
	stacker(1, 2);
	memcpy(trace, okp_ret_stack, sizeof(okp_ret_stack));
	return okp_ret_stack_length;
}

/* The frame of okp_ret_take_stack in trace: the stacker's return address. */
static unsigned int okp_ret_callers(const unsigned long *trace,
				    unsigned int length)
{
	unsigned int i;

	for (i = 0; i < length; i++)
		if (trace[i] >= (unsigned long)okp_ret_take_stack &&
		    trace[i] < (unsigned long)okp_ret_take_stack + 256)
			return i;
	return length;
}

/* Whether two traces agree up to frame from (the callers beyond differ). */
static bool okp_ret_same_frames(const unsigned long *a, unsigned int a_length,
				const unsigned long *b, unsigned int b_length,
				unsigned int from)
{
	return a_length > from && b_length > from &&
	       !memcmp(a, b, (from + 1) * sizeof(a[0]));
}

/* A trace of stacker with an okretprobe on it, or 0. */
static unsigned int okp_ret_probed_stack(long (*stacker)(long a, long b),
					 const char *symbol,
					 unsigned long *trace, char *why,
					 size_t size)
{
	struct okp_ret_probe *probe = &okp_ret_probes[0];
	unsigned int length;
	int ret;

	okp_ret_init(probe, symbol, okp_expect_stacker);
	probe->task = current;
	probe->next_a = 1;
	probe->next_b = 2;
	ret = okretprobe_register(&probe->rp);
	if (ret) {
		snprintf(why, size, "register on %s: %d", symbol, ret);
		return 0;
	}
	length = okp_ret_take_stack(stacker, trace);
	okretprobe_unregister(&probe->rp);
	return okp_ret_balanced(probe, 1, why, size) ? length : 0;
}

/*
 * A stack trace taken below a pending return (the stacker's, replaced by
 * the rethook trampoline) shows the same frames as without a probe where
 * the kernel's unwinder recovers rethook's return addresses (x86's ORC);
 * elsewhere (riscv's frame-pointer walk shows arch_rethook_trampoline) it
 * must be what the kernel's own kretprobe leaves, on the same function.
 */
static void okp_test_return_stack_trace(void)
{
	unsigned long plain[OKP_RET_STACK], probed[OKP_RET_STACK];
	unsigned int plain_length, probed_length, from;
	char why[400] = "", name[200];
	const char *verdict = "the frames up to the caller as without a probe";

	plain_length = okp_ret_take_stack(okp_ret_stacker, plain);
	from = okp_ret_callers(plain, plain_length);
	EXPECT(from < plain_length,
	       "okp_ret_take_stack not in the plain trace (%u frames)",
	       plain_length);
	probed_length = okp_ret_probed_stack(okp_ret_stacker, "okp_ret_stacker",
					     probed, why, sizeof(why));
	if (!probed_length)
		goto out;
	if (!okp_ret_same_frames(plain, plain_length, probed, probed_length,
				 from)) {
		unsigned long ours[OKP_RET_STACK], kernel[OKP_RET_STACK] = {};
		unsigned int ours_length, kernel_length = 0;
		long (*untraced)(long a, long b) = okp_ret_stacker_untraced;

		verdict = "as under the kernel's kretprobe (the unwinder shows rethook's trampoline)";
		ours_length = okp_ret_probed_stack(untraced,
						   "okp_ret_stacker_untraced",
						   ours, why, sizeof(why));
		if (!ours_length)
			goto out;
#ifdef CONFIG_KRETPROBES
		{
			struct okp_kernel_ret kernel_probe = {
				.rp.kp.symbol_name = "okp_ret_stacker_untraced",
				.rp.handler = okp_kernel_ret_handler,
			};

			if (!register_kretprobe(&kernel_probe.rp)) {
				kernel_length = okp_ret_take_stack(untraced,
								   kernel);
				unregister_kretprobe(&kernel_probe.rp);
			}
		}
#endif
		EXPECT(okp_ret_same_frames(ours, ours_length, kernel,
					   kernel_length, from),
		       "frames 0-%u with okprobe: %pS %pS %pS, with the kernel's kretprobe (%u frames): %pS %pS %pS; without a probe: %pS",
		       from, (void *)ours[0], (void *)ours[1],
		       (void *)ours[min(from, OKP_RET_STACK - 1)],
		       kernel_length, (void *)kernel[0], (void *)kernel[1],
		       (void *)kernel[min(from, OKP_RET_STACK - 1)],
		       (void *)plain[from]);
	}
out:
	snprintf(name, sizeof(name),
		 "a stack trace below a pending return: %s", verdict);
	okp_ret_report(!why[0], name, why);
}

/* ---- The kernel's kretprobe on real kernel functions -------------------- */

static const char *const okp_ret_numbers[] = {
	"12", "0x1f", "zz", "99999999999999999999999", "", "7", "-1",
	"0777", "18446744073709551615", "18446744073709551616", " 3",
};

static const char *const okp_ret_paths[] = {
	"/", "/proc", "/nonexistent", "/proc/self", "/proc/1/nothing",
	"/sys/kernel/debug", "",
};

/*
 * One round of the workload: the test task's calls, their results. Not
 * inlined: the calls' return addresses are its own.
 */
static noinline void okp_ret_workload(long *results, int *count)
{
	unsigned long long value;
	struct path path;
	int i, ret;

	*count = 0;
	for (i = 0; i < ARRAY_SIZE(okp_ret_numbers); i++)
		results[(*count)++] = kstrtoull(okp_ret_numbers[i], 0, &value);
	for (i = 0; i < ARRAY_SIZE(okp_ret_paths); i++) {
		ret = kern_path(okp_ret_paths[i], LOOKUP_FOLLOW, &path);
		if (!ret)
			path_put(&path);
		results[(*count)++] = ret;
	}
}

#ifdef CONFIG_KRETPROBES
struct okp_kernel_recorder {
	struct kretprobe rp;
	struct task_struct *task;
	atomic_t recorded;
	long records[OKP_RET_RECORDS];
};

static int okp_kernel_recorder_entry(struct kretprobe_instance *ri,
				     struct pt_regs *regs)
{
	struct okp_kernel_recorder *recorder =
		container_of(get_kretprobe(ri), struct okp_kernel_recorder,
			     rp);

	return current != recorder->task;
}

static int okp_kernel_recorder_return(struct kretprobe_instance *ri,
				      struct pt_regs *regs)
{
	struct okp_kernel_recorder *recorder =
		container_of(get_kretprobe(ri), struct okp_kernel_recorder,
			     rp);
	int slot = atomic_inc_return(&recorder->recorded) - 1;

	if (slot < OKP_RET_RECORDS)
		recorder->records[slot] = (int)regs_return_value(regs);
	return 0;
}
#endif

/*
 * kstrtoull and kern_path, real kernel functions others call too: the
 * okretprobes (one on each) see the test task's calls' return values, in
 * order, as the calls got them; the kernel's kretprobes in a second round
 * see the same.
 */
static void okp_test_return_kernel_functions(void)
{
	static const char *const symbols[] = { "kstrtoull", "kern_path" };
	static struct okp_ret_probe probes[2];
	struct okretprobe *both[] = { &probes[0].rp, &probes[1].rp };
	/* Static, as probes: on the stack the frame passed 2 KB. */
	static long direct[OKP_RET_RECORDS], seen[OKP_RET_RECORDS];
	int count, i, numbers = ARRAY_SIZE(okp_ret_numbers), ret;
	char why[200] = "", name[256];
	const char *kernel = "not available", *placement = "hooked returns";

	for (i = 0; i < ARRAY_SIZE(symbols); i++) {
		okp_ret_init(&probes[i], symbols[i], NULL);
		probes[i].task = current;
	}
	ret = okretprobe_register_many(both, ARRAY_SIZE(both));
	if (IS_ENABLED(CONFIG_KASAN) && ret == -EPERM) {
		/*
		 * Under KASAN kstrtoull is on the breakpoint trap path (a
		 * KASAN report prints through it): refused, as it must be,
		 * and the pair with it (register_many is all or nothing).
		 */
		placement = "refused on kstrtoull (EPERM: the trap path under KASAN)";
		goto out;
	}
	EXPECT(!ret, "register_many: %d", ret);
	for (i = 0; i < ARRAY_SIZE(symbols); i++)
		if (probes[i].rp.kp.flags & OKPROBE_FLAG_RETURN_EXITS)
			placement = okp_ret_exits ? "at the exits" : "?";
	okp_ret_workload(direct, &count);
	okretprobe_unregister_many(both, ARRAY_SIZE(both));
	EXPECT(atomic_read(&probes[0].recorded) == numbers &&
		       atomic_read(&probes[1].recorded) == count - numbers,
	       "%d and %d returns recorded of %d and %d calls",
	       atomic_read(&probes[0].recorded),
	       atomic_read(&probes[1].recorded), numbers, count - numbers);
	for (i = 0; i < count; i++) {
		seen[i] = i < numbers ? (int)probes[0].records[i] :
					(int)probes[1].records[i - numbers];
		EXPECT(seen[i] == direct[i],
		       "call %d returned %ld, the return probe saw %ld", i,
		       direct[i], seen[i]);
	}
	EXPECT(!atomic_read(&probes[0].wrong) && !atomic_read(&probes[1].wrong),
	       "a return not the test task's, or ip not ret_addr");
#ifdef CONFIG_KRETPROBES
	{
		static struct okp_kernel_recorder recorders[2];
		struct kretprobe *kernel_both[] = { &recorders[0].rp,
						    &recorders[1].rp };
		long again[OKP_RET_RECORDS];
		int again_count;

		for (i = 0; i < ARRAY_SIZE(symbols); i++) {
			memset(&recorders[i], 0, sizeof(recorders[i]));
			recorders[i].rp.kp.symbol_name = symbols[i];
			recorders[i].rp.entry_handler =
				okp_kernel_recorder_entry;
			recorders[i].rp.handler = okp_kernel_recorder_return;
			recorders[i].task = current;
		}
		ret = register_kretprobes(kernel_both, 2);
		if (ret) {
			kernel = "refused";
			goto out;
		}
		okp_ret_workload(again, &again_count);
		unregister_kretprobes(kernel_both, 2);
		kernel = "the same";
		for (i = 0; i < again_count; i++) {
			long k = i < numbers ?
					 recorders[0].records[i] :
					 recorders[1].records[i - numbers];

			EXPECT(again[i] == direct[i] && k == seen[i],
			       "call %d: okprobe saw %ld, the kernel's kretprobe %ld",
			       i, seen[i], k);
		}
		/*
		 * Both at once, on kern_path: the kernel's kretprobe hooks
		 * the return address at the entry (through ftrace, which
		 * leaves the function's bytes to okprobe), so that at the
		 * exits okprobe finds rethook's trampoline there and must
		 * report the caller. (Where the kernel's kretprobe is a
		 * breakpoint, as on kstrtoull, the function is the kernel's:
		 * okprobe refuses with EBUSY, checked by the coexistence
		 * tests.)
		 */
		okp_ret_init(&probes[1], symbols[1], NULL);
		probes[1].task = current;
		probes[1].caller = (unsigned long)okp_ret_workload;
		atomic_set(&recorders[1].recorded, 0);
		memset(&recorders[1].rp, 0, sizeof(recorders[1].rp));
		recorders[1].rp.kp.symbol_name = symbols[1];
		recorders[1].rp.entry_handler = okp_kernel_recorder_entry;
		recorders[1].rp.handler = okp_kernel_recorder_return;
		ret = register_kretprobe(&recorders[1].rp);
		EXPECT(!ret, "the kernel's kretprobe again: %d", ret);
		ret = okretprobe_register(&probes[1].rp);
		if (!(recorders[1].rp.kp.flags & KPROBE_FLAG_FTRACE)) {
			/*
			 * No kprobes on ftrace here (riscv 7.x): the kernel's
			 * kretprobe is a breakpoint in kern_path, so the
			 * function is the kernel's.
			 */
			unregister_kretprobe(&recorders[1].rp);
			if (!ret)
				okretprobe_unregister(&probes[1].rp);
			EXPECT(ret == -EBUSY,
			       "kern_path beside the kernel's breakpoint kretprobe: %d, not EBUSY",
			       ret);
			kernel = "the same; with it, okprobe EBUSY on kern_path (a breakpoint there)";
			goto out;
		}
		if (ret)
			unregister_kretprobe(&recorders[1].rp);
		EXPECT(!ret, "kern_path beside the kernel's kretprobe: %d", ret);
		/* x86's kern_path: at the exits, meeting the trampoline. */
		okp_ret_check_placement(&probes[1], why, sizeof(why));
		if (why[0])
			okretprobe_unregister(&probes[1].rp);
		if (why[0])
			unregister_kretprobe(&recorders[1].rp);
		EXPECT(!why[0], "%s", why);
		okp_ret_workload(again, &again_count);
		okretprobe_unregister(&probes[1].rp);
		unregister_kretprobe(&recorders[1].rp);
		kernel = "the same, also at once on kern_path";
		EXPECT(atomic_read(&probes[1].recorded) == again_count - numbers &&
			       atomic_read(&recorders[1].recorded) ==
				       again_count - numbers,
		       "at once: %d and %d returns recorded of %d calls",
		       atomic_read(&probes[1].recorded),
		       atomic_read(&recorders[1].recorded),
		       again_count - numbers);
		for (i = numbers; i < again_count; i++) {
			long ours = (int)probes[1].records[i - numbers];
			long k = recorders[1].records[i - numbers];

			EXPECT(ours == again[i] && k == again[i],
			       "at once, call %d returned %ld: okprobe saw %ld, the kernel's kretprobe %ld",
			       i, again[i], ours, k);
		}
		EXPECT(!atomic_read(&probes[1].wrong),
		       "at once: a return address not in the caller");
	}
#endif
out:
	if (probes[0].rp.okp_private || probes[1].rp.okp_private)
		okretprobe_unregister_many(both, ARRAY_SIZE(both));
	snprintf(name, sizeof(name),
		 "return probes on kstrtoull and kern_path: the test's calls' return values in order (kernel kretprobe: %s; okprobe: %s)",
		 kernel, placement);
	okp_ret_report(!why[0], name, why);
}

/* ---- Refusals ------------------------------------------------------------ */

static void okp_test_return_refusals(void)
{
	struct okp_ret_probe *probe = &okp_ret_probes[0];
	struct okretprobe *none = NULL;
	char why[200] = "";
	int ret;

	okp_ret_init(probe, "okp_ret_branches", NULL);
	probe->rp.kp.offset = 4;
	ret = okretprobe_register(&probe->rp);
	EXPECT(ret == -EINVAL, "offset 4: %d", ret);
	okp_ret_init(probe, NULL, NULL);
	probe->rp.kp.addr = okp_at(okp_ret_branches, 1);
	ret = okretprobe_register(&probe->rp);
	EXPECT(ret == -EINVAL, "addr inside the function: %d", ret);
	okp_ret_init(probe, "okp_ret_branches", NULL);
	probe->rp.data_size = 1UL << 20;
	ret = okretprobe_register(&probe->rp);
	EXPECT(ret == -EINVAL, "data_size 1 MiB: %d", ret);
#ifdef CONFIG_X86_64
	/* A function's .cold piece: entered by a jump, no entry of its own. */
	okp_ret_init(probe, "okp_target_split.cold", NULL);
	ret = okretprobe_register(&probe->rp);
	EXPECT(ret == -EINVAL, "a .cold piece: %d", ret);
	okp_ret_init(probe, NULL, NULL);
	probe->rp.kp.addr = okp_target_split_cold;
	ret = okretprobe_register(&probe->rp);
	EXPECT(ret == -EINVAL, "a .cold piece by address: %d", ret);
#endif
	okp_ret_init(probe, "okp_no_such_function", NULL);
	ret = okretprobe_register(&probe->rp);
	EXPECT(ret == -ENOENT, "unknown symbol: %d", ret);
	EXPECT(!probe->rp.okp_private, "okp_private left set");
	ret = okretprobe_register(NULL);
	EXPECT(ret == -EINVAL, "NULL: %d", ret);
	ret = okretprobe_register_many(&none, 1);
	EXPECT(ret == -EINVAL, "register_many of NULL: %d", ret);
	okp_ret_init(probe, "okp_ret_branches", NULL);
	ret = okretprobe_register(&probe->rp);
	EXPECT(!ret, "register: %d", ret);
	ret = okretprobe_register(&probe->rp);
	EXPECT(ret == -EINVAL, "registered twice: %d", ret);
	EXPECT(!okretprobe_disable(&probe->rp), "disable failed");
	okp_ret_branches(3, 3);
	EXPECT(!atomic_read(&probe->entries), "a disabled probe ran");
	EXPECT(!okretprobe_enable(&probe->rp), "enable failed");
	okp_ret_branches(3, 3);
	EXPECT(atomic_read(&probe->returns) == 1, "%d returns once enabled",
	       atomic_read(&probe->returns));
	okretprobe_unregister(&probe->rp);
	/* Ignored, with a log line: not registered. */
	okretprobe_unregister(&probe->rp);
	okretprobe_unregister(NULL);
	EXPECT(okretprobe_enable(&probe->rp) == -EINVAL,
	       "enable of an unregistered probe");
out:
	if (probe->rp.okp_private)
		okretprobe_unregister(&probe->rp);
	okp_ret_report(!why[0],
		   "return probe refusals: not at the entry, a .cold piece (x86), data_size, unknown symbol, NULL, twice; disable/enable; unregister twice is ignored",
		   why);
}

/* ---- Without entry_handler -------------------------------------------- */

static atomic_t okp_ret_nesting_returns;

/* Calls its own probed function: that return is inside a handler. */
static int okp_ret_nesting_handler(struct okretprobe_instance *ri,
				   struct pt_regs *regs)
{
	long (*target)(long a, long b) = okp_ret_branches;

	atomic_inc(&okp_ret_nesting_returns);
	OPTIMIZER_HIDE_VAR(target);
	target(1, 1);
	return 0;
}

/*
 * A return inside the return handler (the handler calls the function) is
 * missed, not nested: at the exits the okretprobe's nmissed counts it (the
 * exit's probe is hit inside a handler); with rethook the entry's kp does
 * (the call's entry is).
 */
static void okp_test_return_exits_missed(void)
{
	struct okretprobe rp = {
		.kp.symbol_name = "okp_ret_branches",
		.handler = okp_ret_nesting_handler,
	};
	long (*target)(long a, long b) = okp_ret_branches;
	bool at_exits = false;
	int i, calls = 50, ret;
	char why[200] = "";

	atomic_set(&okp_ret_nesting_returns, 0);
	ret = okretprobe_register(&rp);
	EXPECT(!ret, "register: %d", ret);
	at_exits = rp.kp.flags & OKPROBE_FLAG_RETURN_EXITS;
	OPTIMIZER_HIDE_VAR(target);
	for (i = 0; i < calls; i++)
		target(i, i);
	okretprobe_unregister(&rp);
	EXPECT(atomic_read(&okp_ret_nesting_returns) == calls,
	       "%d handlers ran for %d calls",
	       atomic_read(&okp_ret_nesting_returns), calls);
	if (at_exits)
		EXPECT(rp.nmissed == calls && !rp.kp.nmissed,
		       "at the exits: nmissed %lu, kp.nmissed %lu, not %d",
		       rp.nmissed, rp.kp.nmissed, calls);
	else
		EXPECT(rp.kp.nmissed == calls && !rp.nmissed,
		       "with rethook: kp.nmissed %lu, nmissed %lu, not %d",
		       rp.kp.nmissed, rp.nmissed, calls);
out:
	if (rp.okp_private)
		okretprobe_unregister(&rp);
	okp_ret_report(!why[0],
		   "a return probe whose handler calls its function: that return is missed, counted in nmissed at the exits, in kp.nmissed with rethook",
		   why);
}

/* OKPROBE_FLAG_RETURN_RETHOOK: the return address hooked all the same. */
static void okp_test_return_forced_rethook(void)
{
	struct okp_ret_probe *probe = &okp_ret_probes[0];
	long (*target)(long a, long b) = okp_ret_branches;
	int i, calls = 100, ret;
	char why[200] = "";

	okp_ret_exits = true;
	okp_ret_init(probe, "okp_ret_branches", okp_expect_branches);
	probe->task = current;
	probe->rp.kp.flags = OKPROBE_FLAG_RETURN_RETHOOK;
	ret = okretprobe_register(&probe->rp);
	EXPECT(!ret, "register: %d", ret);
	EXPECT(!(probe->rp.kp.flags & OKPROBE_FLAG_RETURN_EXITS),
	       "at the exits though the client asked for rethook");
	OPTIMIZER_HIDE_VAR(target);
	for (i = 0; i < calls; i++) {
		probe->next_a = i - 50;
		probe->next_b = i;
		target(i - 50, i);
	}
	okretprobe_unregister(&probe->rp);
	okp_ret_balanced(probe, calls, why, sizeof(why));
out:
	if (probe->rp.okp_private)
		okretprobe_unregister(&probe->rp);
	okp_ret_report(!why[0],
		   "a return probe without entry_handler that asks for rethook (OKPROBE_FLAG_RETURN_RETHOOK) hooks the return address: every return value",
		   why);
}

void okp_test_return_probes(void)
{
	if (!IS_ENABLED(CONFIG_RETHOOK)) {
		okp_test_return_unsupported();
		return;
	}
	for (okp_ret_exits = false;; okp_ret_exits = true) {
		okp_test_return_refusals();
		okp_test_return_branches();
		okp_test_return_tail_call();
		okp_test_return_recursion();
		okp_test_return_sleepers();
		okp_test_return_unregister_pending();
		okp_test_return_stack_trace();
		okp_test_return_kernel_functions();
		if (okp_ret_exits)
			break;
	}
	okp_test_return_exits_missed();
	okp_test_return_forced_rethook();
	okp_ret_exits = false;
}
