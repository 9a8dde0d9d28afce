// SPDX-License-Identifier: GPL-2.0
/*
 * The parts of okprobe_selftest.ko every architecture shares: see
 * okprobe_selftest_common.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/moduleparam.h>
#include <linux/ktime.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>

#include <okprobe.h>

#include "okprobe_selftest_common.h"

#define OKP_RESULTS_SIZE (PAGE_SIZE * 4)

static char *okp_results;
static size_t okp_results_used;
static int okp_test_number;
static struct dentry *okp_selftest_dir;

static bool okp_entry_only;
module_param_named(entry_only, okp_entry_only, bool, 0444);
MODULE_PARM_DESC(entry_only, "Run the entry probe tests alone");
static bool okp_return_only;
module_param_named(return_only, okp_return_only, bool, 0444);
MODULE_PARM_DESC(return_only, "Run the return probe tests alone");
static bool okp_coexist_only;
module_param_named(coexist_only, okp_coexist_only, bool, 0444);
MODULE_PARM_DESC(coexist_only,
		 "Run the kernel kprobe coexistence matrix on kernel functions alone");
static bool okp_context_only;
module_param_named(context_only, okp_context_only, bool, 0444);
MODULE_PARM_DESC(context_only,
		 "Run the calling-context and bad-input tests alone");
bool okp_args_only;
module_param_named(args_only, okp_args_only, bool, 0444);
MODULE_PARM_DESC(args_only,
		 "Run the argument-only probe tests alone (with the differential on kernel functions)");

bool okp_part_only(void)
{
	return okp_entry_only || okp_return_only || okp_coexist_only ||
	       okp_context_only || okp_args_only;
}

bool okp_run_part_only(okp_target_fn target, unsigned long offset,
		       long (*expect)(long a, long b))
{
	if (okp_entry_only)
		okp_test_entry_probes();
	if (okp_return_only)
		okp_test_return_probes();
	/*
	 * On kernel functions only: the matrix on the module's own targets
	 * runs in the whole suites (the oldest and newest kernel of each
	 * arch), and its bytes are the same on every kernel.
	 */
	if (okp_coexist_only)
		okp_test_kernel_kprobes_on_kernel_functions();
	/*
	 * What a kernel's preemption model and locks change for a client's
	 * calls (a PREEMPT_RT spinlock, PREEMPT_LAZY), on every kernel.
	 */
	if (okp_context_only)
		okp_test_bad_input(target, offset, expect);
	if (!okp_part_only())
		return false;
	okp_results_publish();
	return true;
}

static uint scale = 100;
module_param(scale, uint, 0444);
MODULE_PARM_DESC(scale, "Percent of the long tests' counts to run (1-100); below 100, the kprobe coexistence matrix runs on the module's own targets only");

long okp_scaled(long count)
{
	return max(1L, count * clamp(scale, 1U, 100U) / 100);
}

bool okp_full_scale(void)
{
	return scale >= 100;
}

/* When the last result was reported (or the results began). */
static u64 okp_report_ns;

void okp_report(bool ok, const char *name, const char *why)
{
	u64 now = ktime_get_ns();

	/*
	 * Where make check's time goes, on the console beside the TAP (the
	 * number only: a name may hold words the console check looks for).
	 */
	pr_info("test %d took %llu ms\n", okp_test_number + 1,
		(now - okp_report_ns) / NSEC_PER_MSEC);
	okp_report_ns = now;
	okp_results_used += scnprintf(okp_results + okp_results_used,
				      OKP_RESULTS_SIZE - okp_results_used,
				      "%sok %d %s%s%s\n", ok ? "" : "not ",
				      ++okp_test_number, name,
				      ok ? "" : " # ", ok ? "" : why);
}

static int okp_results_show(struct seq_file *m, void *unused)
{
	seq_write(m, okp_results, okp_results_used);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(okp_results);

int okp_results_init(void)
{
	okp_report_ns = ktime_get_ns();
	okp_results = kzalloc(OKP_RESULTS_SIZE, GFP_KERNEL);
	return okp_results ? 0 : -ENOMEM;
}

void okp_results_publish(void)
{
	okp_selftest_dir = debugfs_create_dir("okprobe_selftest", NULL);
	debugfs_create_file("results", 0400, okp_selftest_dir, NULL,
			    &okp_results_fops);
}

void okp_results_exit(void)
{
	debugfs_remove_recursive(okp_selftest_dir);
	kfree(okp_results);
}

bool okp_hammer_stop;

unsigned int okp_start_hammers(struct okp_hammer *hammers,
			       int (*fn)(void *data))
{
	unsigned int started = 0, cpu;

	WRITE_ONCE(okp_hammer_stop, false);
	for_each_online_cpu(cpu) {
		struct task_struct *task;

		init_completion(&hammers[cpu].done);
		task = kthread_create(fn, &hammers[cpu], "okp_hammer/%u", cpu);
		if (IS_ERR(task))
			break;
		kthread_bind(task, cpu);
		hammers[cpu].started = true;
		wake_up_process(task);
		started++;
	}
	return started;
}

int okp_round_hammer(void *data)
{
	struct okp_hammer *hammer = data;
	long a = 0;

	while (!READ_ONCE(okp_hammer_stop)) {
		hammer->wrong += hammer->round(a);
		hammer->calls++;
		a = (a + 1) & 7;
		/* A real sleep: a CPU-bound loop never switches voluntarily. */
		if (!(hammer->calls & 127))
			schedule_timeout_idle(1);
	}
	complete(&hammer->done);
	return 0;
}

unsigned int okp_start_round_hammers(struct okp_hammer *hammers,
				     long (*round)(long a))
{
	unsigned int cpu;

	for_each_possible_cpu(cpu)
		hammers[cpu].round = round;
	return okp_start_hammers(hammers, okp_round_hammer);
}

long okp_hammer_calls(struct okp_hammer *hammers)
{
	unsigned int cpu;
	long calls = 0;

	for_each_online_cpu(cpu)
		calls += READ_ONCE(hammers[cpu].calls);
	return calls;
}

void okp_stop_hammers(struct okp_hammer *hammers, long *calls, long *wrong)
{
	unsigned int cpu;

	WRITE_ONCE(okp_hammer_stop, true);
	for_each_online_cpu(cpu) {
		if (hammers[cpu].started) {
			wait_for_completion(&hammers[cpu].done);
			*wrong += hammers[cpu].wrong;
			*calls += hammers[cpu].calls;
		}
	}
}

/* ---- Jump optimization ---------------------------------------------------- */

#define OKP_SYSCTL "/proc/sys/debug/kprobes_optimization"
#define OKP_JUMP_CYCLES 6

bool okp_optimized(struct okprobe *probe)
{
	return READ_ONCE(probe->flags) & OKPROBE_FLAG_OPTIMIZED;
}

bool okp_wait_optimized(struct okprobe *probe, bool optimized)
{
	unsigned long deadline = jiffies +
				 msecs_to_jiffies(OKP_OPTIMIZE_TIMEOUT_MS);

	while (okp_optimized(probe) != optimized) {
		if (time_after(jiffies, deadline))
			return false;
		msleep(20);
	}
	return true;
}

int okp_write_sysctl(const char *value)
{
	return okp_write_file(OKP_SYSCTL, value);
}

int okp_write_file(const char *path, const char *value)
{
	struct file *file = filp_open(path, O_WRONLY, 0);
	loff_t position = 0;
	ssize_t written;

	if (IS_ERR(file))
		return PTR_ERR(file);
	written = kernel_write(file, value, strlen(value), &position);
	filp_close(file, NULL);
	return written < 0 ? written : 0;
}

ssize_t okp_read_file(const char *path, char *buffer, size_t size)
{
	struct file *file = filp_open(path, O_RDONLY, 0);
	loff_t position = 0;
	ssize_t got, total = 0;

	if (IS_ERR(file))
		return PTR_ERR(file);
	while (total < size) {
		got = kernel_read(file, buffer + total, size - total,
				  &position);
		if (got <= 0) {
			if (got < 0)
				total = got;
			break;
		}
		total += got;
	}
	filp_close(file, NULL);
	return total;
}

int okp_count_pre(struct okprobe *probe, struct pt_regs *regs)
{
	struct okp_counted_probe *p =
		container_of(probe, struct okp_counted_probe, probe);

	atomic_inc(&p->hits);
	if (p->redirect_to) {
		regs_set_return_value(regs, 42);
		instruction_pointer_set(regs, p->redirect_to);
		return 1;
	}
	return 0;
}

void okp_count_post(struct okprobe *probe, struct pt_regs *regs,
		    unsigned long flags)
{
	atomic_inc(&container_of(probe, struct okp_counted_probe,
				 probe)->post_hits);
}

/* What the target hammers call. */
static const struct okp_cycle_target *okp_hammered;
static size_t okp_hammered_count;

/* One call of every hammered target; returns the wrong results. */
static long okp_call_hammered(long a)
{
	long wrong = 0;
	size_t i;

	for (i = 0; i < okp_hammered_count; i++)
		wrong += okp_hammered[i].target(a, 1) !=
			 okp_hammered[i].expect(a, 1);
	return wrong;
}

/*
 * Starts okp_round_hammer on every online CPU; each round calls every
 * target once (a = 0..7 in turn, b = 1). One set runs at a time.
 */
static unsigned int
okp_start_target_hammers(struct okp_hammer *hammers,
			 const struct okp_cycle_target *targets, size_t count)
{
	okp_hammered = targets;
	okp_hammered_count = count;
	return okp_start_round_hammers(hammers, okp_call_hammered);
}

bool okp_hammer_targets(const struct okp_cycle_target *targets, size_t count,
			long min_calls, long *rounds, char *reason,
			size_t reason_size)
{
	struct okp_hammer *hammers = kcalloc(nr_cpu_ids, sizeof(*hammers),
					     GFP_KERNEL);
	unsigned int cpus = num_online_cpus(), started;
	char why[200] = "";
	long wrong = 0;

	*rounds = 0;
	EXPECT(hammers, "out of memory");
	started = okp_start_target_hammers(hammers, targets, count);
	while (started == cpus &&
	       okp_hammer_calls(hammers) * (long)count < min_calls)
		msleep(20);
	okp_stop_hammers(hammers, rounds, &wrong);
	EXPECT(started == cpus, "started %u of %u threads", started, cpus);
	EXPECT(!wrong, "%ld wrong results", wrong);
	EXPECT(*rounds * (long)count >= min_calls, "only %ld calls",
	       *rounds * (long)count);
out:
	kfree(hammers);
	strscpy(reason, why, reason_size);
	return !why[0];
}

bool okp_hammer_steady(const struct okp_cycle_target *targets, size_t count,
		       long min_rounds, unsigned long min_steps,
		       int (*step)(struct okp_counted_probe *steady,
				   unsigned long n, void *context),
		       void *context, long *rounds, char *reason,
		       size_t reason_size)
{
	struct okp_counted_probe *steady = kcalloc(count, sizeof(*steady),
						   GFP_KERNEL);
	struct okp_hammer *hammers = kcalloc(nr_cpu_ids, sizeof(*hammers),
					     GFP_KERNEL);
	unsigned int cpus = num_online_cpus(), started = 0;
	size_t registered = 0, i;
	unsigned long steps = 0;
	long wrong = 0;
	char why[200] = "";
	int error = 0;
	bool ok = false;

	*rounds = 0;
	EXPECT(steady && hammers, "out of memory");
	for (; registered < count; registered++) {
		struct okprobe *probe = &steady[registered].probe;

		probe->addr = okp_at(targets[registered].target, targets[registered].offset);
		probe->pre_handler = okp_count_pre;
		error = okprobe_register(probe);
		EXPECT(!error, "register at %pS failed: %d", probe->addr,
		       error);
	}
	started = okp_start_target_hammers(hammers, targets, count);
	while (!error && started == cpus &&
	       (steps < min_steps || okp_hammer_calls(hammers) < min_rounds))
		error = step(steady, steps++, context);
	okp_stop_hammers(hammers, rounds, &wrong);
	EXPECT(started == cpus, "started %u of %u threads", started, cpus);
	EXPECT(!error, "step %lu failed: %d", steps - 1, error);
	EXPECT(!wrong, "%ld wrong results", wrong);
	EXPECT(*rounds >= min_rounds, "only %ld rounds of calls", *rounds);
	for (i = 0; i < count; i++)
		EXPECT(atomic_read(&steady[i].hits) == *rounds &&
		       !steady[i].probe.nmissed,
		       "steady probe at %pS counted %d of %ld calls, missed %lu",
		       steady[i].probe.addr, atomic_read(&steady[i].hits),
		       *rounds, steady[i].probe.nmissed);
	ok = true;
out:
	if (!ok)
		strscpy(reason, why, reason_size);
	while (registered)
		okprobe_unregister(&steady[--registered].probe);
	kfree(steady);
	kfree(hammers);
	return ok;
}

/* The bytes a jump replaces, at most: enough to see the text restored. */
#define OKP_COUNTING_TEXT 8

/*
 * Where target t's text is compared, and how much of it: from its jump's
 * start, the most a jump replaces; for a window that ends at a return
 * (the function's end), the bytes before it and the return's first two,
 * not the next function's.
 */
static void *okp_counting_text(const struct okp_cycle_target *t,
			       size_t *length)
{
	*length = t->behind ? t->behind + 2 : OKP_COUNTING_TEXT;
	return okp_at(t->target, t->offset) - t->behind;
}

void okp_test_counting(const struct okp_cycle_target *targets, size_t count,
		       long min_calls)
{
	struct okprobe *counters = kcalloc(count, sizeof(*counters),
					   GFP_KERNEL);
	u8 (*original)[OKP_COUNTING_TEXT] = kcalloc(count, OKP_COUNTING_TEXT,
						      GFP_KERNEL);
	struct okp_counted_probe extra = {};
	unsigned long long counted, before;
	long rounds = 0;
	size_t registered = 0, i, length;
	void *text;
	char why[200] = "";
	bool ok = false;
	int ret;

	EXPECT(counters && original, "out of memory");
	for (; registered < count; registered++) {
		struct okprobe *probe = &counters[registered];

		probe->addr = okp_at(targets[registered].target,
				     targets[registered].offset);
		probe->flags = OKPROBE_FLAG_COUNTER;
		text = okp_counting_text(&targets[registered], &length);
		EXPECT(!copy_from_kernel_nofault(original[registered], text,
						 length),
		       "unreadable text at %pS", probe->addr);
		ret = okprobe_register(probe);
		EXPECT(!ret, "register a counter at %pS failed: %d",
		       probe->addr, ret);
	}
	for (i = 0; i < count; i++)
		EXPECT(okp_wait_optimized(&counters[i], true),
		       "the counter at %pS never optimized", counters[i].addr);
	/* Nothing shares a counter's address; a counter has no handler. */
	extra.probe.addr = counters[0].addr;
	extra.probe.pre_handler = okp_count_pre;
	ret = okprobe_register(&extra.probe);
	if (!ret)
		okprobe_unregister(&extra.probe);
	EXPECT(ret == -EBUSY, "a probe beside a counter: %d, not -EBUSY", ret);
	memset(&extra, 0, sizeof(extra));
	extra.probe.addr = okp_at(targets[0].target, targets[0].offset);
	extra.probe.flags = OKPROBE_FLAG_COUNTER;
	extra.probe.pre_handler = okp_count_pre;
	ret = okprobe_register(&extra.probe);
	if (!ret)
		okprobe_unregister(&extra.probe);
	EXPECT(ret == -EINVAL, "a counter with a handler: %d, not -EINVAL",
	       ret);

	if (!okp_hammer_targets(targets, count, min_calls, &rounds, why,
				sizeof(why)))
		goto out;
	for (i = 0; i < count; i++) {
		EXPECT(!okprobe_read_count(&counters[i], &counted),
		       "reading the count failed");
		EXPECT(counted == rounds,
		       "the counter at %pS counted %llu of %ld calls",
		       counters[i].addr, counted, rounds);
		EXPECT(okp_optimized(&counters[i]),
		       "the counter at %pS is no longer optimized",
		       counters[i].addr);
	}

	/* Disabled, it stops; enabled again, it counts on. */
	EXPECT(!okprobe_disable(&counters[0]), "disable failed");
	targets[0].target(1, 1);
	EXPECT(!okprobe_read_count(&counters[0], &before) && before == rounds,
	       "a disabled counter counted: %llu, not %ld", before, rounds);
	EXPECT(!okprobe_enable(&counters[0]), "enable failed");
	EXPECT(okp_wait_optimized(&counters[0], true),
	       "not optimized again once enabled");
	targets[0].target(1, 1);
	targets[0].target(2, 1);
	EXPECT(!okprobe_read_count(&counters[0], &counted) &&
	       counted == before + 2,
	       "enabled again, it counted %llu, not %llu", counted,
	       before + 2);
	ok = true;
out:
	while (registered) {
		u8 now[OKP_COUNTING_TEXT];

		registered--;
		okprobe_unregister(&counters[registered]);
		text = okp_counting_text(&targets[registered], &length);
		if (ok && (copy_from_kernel_nofault(now, text, length) ||
			   memcmp(now, original[registered], length))) {
			snprintf(why, sizeof(why), "the text at %pS is not restored",
				 counters[registered].addr);
			ok = false;
		}
	}
	okp_report(ok, "counting probes count every call of every target exactly, with its registers and flags intact",
		   why);
	kfree(counters);
	kfree(original);
}

static bool okp_all_optimized(struct okp_counted_probe *steady, size_t count,
			      bool optimized)
{
	size_t t;

	for (t = 0; t < count; t++)
		if (!okp_wait_optimized(&steady[t].probe, optimized))
			return false;
	return true;
}

/*
 * One cycle: out and back in by the sysctl (even) or by enabling the
 * post_handler probe (context) at the first target.
 */
static int okp_cycle_once(struct okp_counted_probe *steady,
			  unsigned long cycle, void *context)
{
	struct okp_counted_probe *post = context;
	size_t count = okp_hammered_count, t;
	int error;

	if (!okp_all_optimized(steady, count, true))
		return -ETIMEDOUT;
	msleep(20);
	if (cycle % 2 == 0) {
		error = okp_write_sysctl("0");
		for (t = 0; !error && t < count; t++)
			if (okp_optimized(&steady[t].probe))
				error = -EBUSY;
		msleep(20);
		return error ?: okp_write_sysctl("1");
	}
	error = okprobe_enable(&post->probe);
	if (!error && okp_optimized(&steady[0].probe))
		error = -EBUSY;
	msleep(20);
	return error ?: okprobe_disable(&post->probe);
}

void okp_test_optimization_cycles(const struct okp_cycle_target *targets,
				  size_t count, long min_hits,
				  const char *name)
{
	struct okp_counted_probe *post = kzalloc(sizeof(*post), GFP_KERNEL);
	char why[200] = "";
	bool ok = false;
	long rounds;

	EXPECT(post, "out of memory");
	post->probe.addr = okp_at(targets[0].target, targets[0].offset);
	post->probe.pre_handler = okp_count_pre;
	post->probe.post_handler = okp_count_post;
	post->probe.flags = OKPROBE_FLAG_DISABLED;
	EXPECT(!okprobe_register(&post->probe), "register post failed");
	ok = okp_hammer_steady(targets, count, min_hits / count,
			       OKP_JUMP_CYCLES, okp_cycle_once, post, &rounds,
			       why, sizeof(why));
	okprobe_unregister(&post->probe);
	if (!ok)
		goto out;
	ok = false;
	EXPECT(atomic_read(&post->post_hits) == atomic_read(&post->hits),
	       "post probe counts pre %d post %d",
	       atomic_read(&post->hits), atomic_read(&post->post_hits));
	pr_info("optimization cycles: %ld calls of %zu targets on %u CPUs, post probe hit %d times\n",
		rounds, count, num_online_cpus(), atomic_read(&post->hits));
	ok = true;
out:
	okp_write_sysctl("1");
	okp_report(ok, name, why);
	kfree(post);
}

void okp_test_neighbour_in_region(okp_target_fn target,
				  unsigned long inner_offset,
				  long (*expect)(long a, long b),
				  bool (*is_breakpoint)(void *address))
{
	struct okp_counted_probe *outer = kzalloc(sizeof(*outer), GFP_KERNEL);
	struct okp_counted_probe *inner = kzalloc(sizeof(*inner), GFP_KERNEL);
	void *address = okp_at(target, 0), *inside = okp_at(target, inner_offset);
	char why[200] = "";
	bool ok = false;
	int i;

	EXPECT(outer && inner, "out of memory");
	outer->probe.addr = address;
	outer->probe.pre_handler = okp_count_pre;
	inner->probe.addr = inside;
	inner->probe.pre_handler = okp_count_pre;
	EXPECT(!okprobe_register(&outer->probe), "register outer failed");
	EXPECT(okp_wait_optimized(&outer->probe, true), "outer never optimized");
	EXPECT(!okprobe_register(&inner->probe), "register inner failed");
	EXPECT(!okp_optimized(&outer->probe) && is_breakpoint(address) &&
	       is_breakpoint(inside),
	       "outer still a jump over the inner probe");
	EXPECT(okp_wait_optimized(&inner->probe, true), "inner never optimized");
	for (i = 0; i < 100; i++)
		EXPECT(target(i, 1) == expect(i, 1), "wrong result");
	EXPECT(atomic_read(&outer->hits) == 100 &&
	       atomic_read(&inner->hits) == 100, "hits %d and %d",
	       atomic_read(&outer->hits), atomic_read(&inner->hits));
	okprobe_unregister(&inner->probe);
	EXPECT(okp_wait_optimized(&outer->probe, true),
	       "outer not optimized again");
	for (i = 0; i < 100; i++)
		EXPECT(target(i, 1) == expect(i, 1), "wrong result");
	EXPECT(atomic_read(&outer->hits) == 200, "outer hits %d",
	       atomic_read(&outer->hits));
	ok = true;
out:
	okp_report(ok, "a probe inside a jump's region unoptimizes it until it goes",
		   why);
	/* Unregistering a probe that is not registered is a no-op. */
	if (inner)
		okprobe_unregister(&inner->probe);
	if (outer)
		okprobe_unregister(&outer->probe);
	kfree(inner);
	kfree(outer);
}
