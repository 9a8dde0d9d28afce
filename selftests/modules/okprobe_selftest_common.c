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

void okp_report(bool ok, const char *name, const char *why)
{
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
		if (!(hammer->calls & 255))
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

/* A probe that only counts. */
struct okp_counted_probe {
	struct okprobe probe;
	atomic_t pre_hits, post_hits;
};

static int okp_count_pre(struct okprobe *probe, struct pt_regs *regs)
{
	atomic_inc(&container_of(probe, struct okp_counted_probe,
				 probe)->pre_hits);
	return 0;
}

static void okp_count_post(struct okprobe *probe, struct pt_regs *regs,
			   unsigned long flags)
{
	atomic_inc(&container_of(probe, struct okp_counted_probe,
				 probe)->post_hits);
}

/* What the cycle test's hammer threads call. */
static const struct okp_cycle_target *okp_cycle_targets;
static size_t okp_cycle_count;

/* Calls every cycle target (calls counts rounds). */
static int okp_cycle_hammer_thread(void *data)
{
	struct okp_hammer *h = data;
	long i;
	size_t t;

	for (i = 0; !READ_ONCE(okp_hammer_stop); i++) {
		for (t = 0; t < okp_cycle_count; t++) {
			const struct okp_cycle_target *c = &okp_cycle_targets[t];
			/* a = 0 now and then: branches go both ways */
			long a = i & 7;

			if (c->target(a, 1) != c->expect(a, 1))
				h->wrong++;
		}
		WRITE_ONCE(h->calls, i + 1);
		if ((i & 127) == 0)
			schedule_timeout_idle(1);
	}
	complete(&h->done);
	return 0;
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

/* One cycle: out and back in by the sysctl (even) or a post_handler. */
static int okp_cycle_once(int cycle, struct okp_counted_probe *steady,
			  size_t count, struct okp_counted_probe *post)
{
	int error;
	size_t t;

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
	struct okp_counted_probe *steady = kcalloc(count, sizeof(*steady),
						   GFP_KERNEL);
	struct okp_counted_probe *post = kzalloc(sizeof(*post), GFP_KERNEL);
	struct okp_hammer *hammers = kcalloc(nr_cpu_ids, sizeof(*hammers),
					     GFP_KERNEL);
	unsigned int cpus = num_online_cpus(), started = 0;
	long rounds = 0, wrong = 0;
	int cycles = 0, error = 0;
	char why[160] = "";
	bool ok = false;
	size_t t;

	EXPECT(steady && post && hammers, "out of memory");
	for (t = 0; t < count; t++) {
		steady[t].probe.addr = (void *)targets[t].target +
				       targets[t].offset;
		steady[t].probe.pre_handler = okp_count_pre;
		EXPECT(!okprobe_register(&steady[t].probe),
		       "register %pS failed", steady[t].probe.addr);
	}
	post->probe.addr = steady[0].probe.addr;
	post->probe.pre_handler = okp_count_pre;
	post->probe.post_handler = okp_count_post;
	post->probe.flags = OKPROBE_FLAG_DISABLED;
	EXPECT(!okprobe_register(&post->probe), "register post failed");
	okp_cycle_targets = targets;
	okp_cycle_count = count;
	started = okp_start_hammers(hammers, okp_cycle_hammer_thread);
	while (!error && started == cpus &&
	       (cycles < OKP_JUMP_CYCLES ||
		okp_hammer_calls(hammers) * count < min_hits))
		error = okp_cycle_once(cycles++, steady, count, post);
	okp_stop_hammers(hammers, &rounds, &wrong);
	okprobe_unregister(&post->probe);
	for (t = 0; t < count; t++)
		okprobe_unregister(&steady[t].probe);
	EXPECT(started == cpus, "started %u of %u threads", started, cpus);
	EXPECT(!error, "cycle %d failed: %d", cycles, error);
	EXPECT(!wrong, "%ld wrong results", wrong);
	EXPECT(rounds * count >= min_hits, "only %ld calls", rounds * count);
	for (t = 0; t < count; t++) {
		EXPECT(atomic_read(&steady[t].pre_hits) == rounds,
		       "steady probe on %pS counted %d of %ld calls",
		       steady[t].probe.addr, atomic_read(&steady[t].pre_hits),
		       rounds);
		EXPECT(steady[t].probe.nmissed == 0, "%pS missed %lu",
		       steady[t].probe.addr, steady[t].probe.nmissed);
	}
	EXPECT(atomic_read(&post->post_hits) == atomic_read(&post->pre_hits),
	       "post probe counts pre %d post %d",
	       atomic_read(&post->pre_hits), atomic_read(&post->post_hits));
	pr_info("optimization cycles: %ld calls of %zu targets on %u CPUs, %d cycles, post probe hit %d times\n",
		rounds, count, cpus, cycles, atomic_read(&post->pre_hits));
	ok = true;
out:
	okp_write_sysctl("1");
	okp_report(ok, name, why);
	if (steady)
		for (t = 0; t < count; t++)
			okprobe_unregister(&steady[t].probe);
	kfree(steady);
	if (post)
		okprobe_unregister(&post->probe);
	kfree(post);
	kfree(hammers);
}

void okp_test_neighbour_in_region(okp_target_fn target,
				  unsigned long inner_offset,
				  long (*expect)(long a, long b),
				  bool (*is_breakpoint)(void *address))
{
	struct okp_counted_probe *outer = kzalloc(sizeof(*outer), GFP_KERNEL);
	struct okp_counted_probe *inner = kzalloc(sizeof(*inner), GFP_KERNEL);
	void *address = (void *)target, *inside = address + inner_offset;
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
	EXPECT(atomic_read(&outer->pre_hits) == 100 &&
	       atomic_read(&inner->pre_hits) == 100, "hits %d and %d",
	       atomic_read(&outer->pre_hits), atomic_read(&inner->pre_hits));
	okprobe_unregister(&inner->probe);
	EXPECT(okp_wait_optimized(&outer->probe, true),
	       "outer not optimized again");
	for (i = 0; i < 100; i++)
		EXPECT(target(i, 1) == expect(i, 1), "wrong result");
	EXPECT(atomic_read(&outer->pre_hits) == 200, "outer hits %d",
	       atomic_read(&outer->pre_hits));
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
