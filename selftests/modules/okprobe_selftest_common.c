// SPDX-License-Identifier: GPL-2.0
/*
 * The parts of okprobe_selftest.ko every architecture shares: see
 * okprobe_selftest_common.h.
 */
#include <linux/debugfs.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

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

struct dentry *okp_results_publish(void)
{
	okp_selftest_dir = debugfs_create_dir("okprobe_selftest", NULL);
	debugfs_create_file("results", 0400, okp_selftest_dir, NULL,
			    &okp_results_fops);
	return okp_selftest_dir;
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
