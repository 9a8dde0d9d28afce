// SPDX-License-Identifier: GPL-2.0
/*
 * okprobe_bench.ko: what one hit of a breakpoint probe costs, okprobe's
 * against the kernel's kprobes, on the same instruction (make bench).
 *
 * The target is okp_bench_target (okprobe_bench_target.S), probed at +0.
 * Nothing is measured at load: the guest's okptest (suite "bench") drives
 * the module through /sys/kernel/debug/okprobe_bench/control, one
 * configuration at a time, so that it can set the kernel's
 * kprobes-optimization sysctl and read kprobes/list in between:
 *
 *   arm CONFIG    register the probe of CONFIG: none, kprobe (the kernel's,
 *                 with a pre_handler), okprobe-post (okprobe with only a
 *                 post_handler: unboosted) or okprobe-pre (okprobe with
 *                 only a pre_handler: boosted)
 *   run CALLS     call the target CALLS times, in batches with preemption
 *                 off, timing only the batches
 *   disarm        unregister the probe
 *
 * Reading the file gives the outcome of the last command:
 *
 *   kprobe armed traps=2 preemption=1
 *   okprobe-pre calls=100000 ns=123456789 hits=100000 missed=0 bad=0 traps=1
 *
 * Each handler counts its hits; bad counts calls that returned a wrong
 * value; traps is the number of int3 traps one hit takes when the probe is
 * not jump-optimized; preemption says whether the kernel has
 * CONFIG_PREEMPTION. Only one probe is armed at a time: okprobe refuses an
 * address that holds someone else's int3, and a kprobe would take
 * okprobe's int3 for its own.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include <okprobe.h>

/* okprobe_bench_target.S: returns value + 1; +0 is the probed mov. */
long okp_bench_target(long value);

enum okp_bench_config {
	OKP_BENCH_NONE,
	OKP_BENCH_KPROBE,
	OKP_BENCH_OKPROBE_POST,
	OKP_BENCH_OKPROBE_PRE,
	OKP_BENCH_DISARMED = -1,
};

static const char *const okp_bench_names[] = {
	[OKP_BENCH_NONE] = "none",
	[OKP_BENCH_KPROBE] = "kprobe",
	[OKP_BENCH_OKPROBE_POST] = "okprobe-post",
	[OKP_BENCH_OKPROBE_PRE] = "okprobe-pre",
};

/* Calls per batch run with preemption off. */
#define OKP_BENCH_BATCH 1000UL
#define OKP_BENCH_MAX_CALLS 100000000UL

static DEFINE_MUTEX(okp_bench_lock);
static int okp_bench_armed = OKP_BENCH_DISARMED;
static struct kprobe okp_bench_kprobe;
static struct okprobe okp_bench_okprobe;
static atomic_long_t okp_bench_hits;
static char okp_bench_result[256];
static struct dentry *okp_bench_dir;

/* ---- Handlers: each counts, nothing else ---------------------------------- */

static int okp_bench_kprobe_pre(struct kprobe *probe, struct pt_regs *regs)
{
	atomic_long_inc(&okp_bench_hits);
	return 0;
}

static int okp_bench_okprobe_pre(struct okprobe *probe, struct pt_regs *regs)
{
	atomic_long_inc(&okp_bench_hits);
	return 0;
}

static void okp_bench_okprobe_post(struct okprobe *probe,
				   struct pt_regs *regs, unsigned long flags)
{
	atomic_long_inc(&okp_bench_hits);
}

/* ---- Commands ------------------------------------------------------------- */

/*
 * int3 traps per hit of the armed probe when it is not optimized. The
 * kernel boosts (one trap: the copy jumps back) only without
 * CONFIG_PREEMPTION; otherwise the copy ends in a second int3, except for
 * the instructions it emulates. okprobe boosts unless there is a
 * post_handler.
 */
static int okp_bench_traps(void)
{
	switch (okp_bench_armed) {
	case OKP_BENCH_KPROBE:
		if (okp_bench_kprobe.ainsn.emulate_op)
			return 1;
		if (okp_bench_kprobe.ainsn.boostable &&
		    !IS_ENABLED(CONFIG_PREEMPTION))
			return 1;
		return 2;
	case OKP_BENCH_OKPROBE_POST:
		return 2;
	case OKP_BENCH_OKPROBE_PRE:
		return 1;
	default:
		return 0;
	}
}

static unsigned long okp_bench_missed(void)
{
	switch (okp_bench_armed) {
	case OKP_BENCH_KPROBE:
		return okp_bench_kprobe.nmissed;
	case OKP_BENCH_OKPROBE_POST:
	case OKP_BENCH_OKPROBE_PRE:
		return okp_bench_okprobe.nmissed;
	default:
		return 0;
	}
}

static int okp_bench_arm(const char *name)
{
	int config, ret = 0;

	if (okp_bench_armed != OKP_BENCH_DISARMED)
		return -EBUSY;
	config = match_string(okp_bench_names, ARRAY_SIZE(okp_bench_names),
			      name);
	if (config < 0)
		return -EINVAL;
	switch (config) {
	case OKP_BENCH_KPROBE:
		memset(&okp_bench_kprobe, 0, sizeof(okp_bench_kprobe));
		okp_bench_kprobe.addr = (kprobe_opcode_t *)okp_bench_target;
		okp_bench_kprobe.pre_handler = okp_bench_kprobe_pre;
		ret = register_kprobe(&okp_bench_kprobe);
		break;
	case OKP_BENCH_OKPROBE_POST:
	case OKP_BENCH_OKPROBE_PRE:
		memset(&okp_bench_okprobe, 0, sizeof(okp_bench_okprobe));
		okp_bench_okprobe.addr = (void *)okp_bench_target;
		if (config == OKP_BENCH_OKPROBE_POST)
			okp_bench_okprobe.post_handler = okp_bench_okprobe_post;
		else
			okp_bench_okprobe.pre_handler = okp_bench_okprobe_pre;
		ret = okprobe_register(&okp_bench_okprobe);
		break;
	}
	if (ret) {
		pr_err("cannot arm %s on %pS: %d\n", name, okp_bench_target,
		       ret);
		return ret;
	}
	okp_bench_armed = config;
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "%s armed traps=%d preemption=%d\n", name, okp_bench_traps(),
		 IS_ENABLED(CONFIG_PREEMPTION));
	return 0;
}

static void okp_bench_disarm(void)
{
	if (okp_bench_armed == OKP_BENCH_KPROBE)
		unregister_kprobe(&okp_bench_kprobe);
	else if (okp_bench_armed == OKP_BENCH_OKPROBE_POST ||
		 okp_bench_armed == OKP_BENCH_OKPROBE_PRE)
		okprobe_unregister(&okp_bench_okprobe);
	okp_bench_armed = OKP_BENCH_DISARMED;
	snprintf(okp_bench_result, sizeof(okp_bench_result), "disarmed\n");
}

static int okp_bench_run(unsigned long calls)
{
	unsigned long done, batch, i, bad = 0, missed;
	u64 ns = 0, start;

	if (okp_bench_armed == OKP_BENCH_DISARMED)
		return -ENOENT;
	if (!calls || calls > OKP_BENCH_MAX_CALLS)
		return -EINVAL;
	missed = okp_bench_missed();
	atomic_long_set(&okp_bench_hits, 0);
	for (done = 0; done < calls; done += batch) {
		batch = min(calls - done, OKP_BENCH_BATCH);
		preempt_disable();
		start = ktime_get_ns();
		for (i = done; i < done + batch; i++)
			bad += (unsigned long)okp_bench_target(i) != i + 1;
		ns += ktime_get_ns() - start;
		preempt_enable();
		cond_resched();
		if (fatal_signal_pending(current))
			return -EINTR;
	}
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "%s calls=%lu ns=%llu hits=%ld missed=%lu bad=%lu traps=%d\n",
		 okp_bench_names[okp_bench_armed], calls, ns,
		 atomic_long_read(&okp_bench_hits),
		 okp_bench_missed() - missed, bad, okp_bench_traps());
	return 0;
}

/* ---- debugfs okprobe_bench/control ---------------------------------------- */

static ssize_t okp_bench_control_write(struct file *file,
				       const char __user *buffer,
				       size_t count, loff_t *position)
{
	char command[64], name[32];
	unsigned long calls;
	int ret;

	if (count >= sizeof(command))
		return -EINVAL;
	if (copy_from_user(command, buffer, count))
		return -EFAULT;
	command[count] = '\0';
	mutex_lock(&okp_bench_lock);
	if (sscanf(command, "arm %31s", name) == 1) {
		ret = okp_bench_arm(name);
	} else if (sscanf(command, "run %lu", &calls) == 1) {
		ret = okp_bench_run(calls);
	} else if (sysfs_streq(command, "disarm")) {
		okp_bench_disarm();
		ret = 0;
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&okp_bench_lock);
	return ret ? ret : count;
}

static ssize_t okp_bench_control_read(struct file *file, char __user *buffer,
				      size_t count, loff_t *position)
{
	ssize_t ret;

	mutex_lock(&okp_bench_lock);
	ret = simple_read_from_buffer(buffer, count, position,
				      okp_bench_result,
				      strlen(okp_bench_result));
	mutex_unlock(&okp_bench_lock);
	return ret;
}

static const struct file_operations okp_bench_control_fops = {
	.owner = THIS_MODULE,
	.write = okp_bench_control_write,
	.read = okp_bench_control_read,
	.llseek = default_llseek,
};

static int __init okp_bench_init(void)
{
	int version = okprobe_api_version();

	if (version != OKPROBE_API_VERSION) {
		pr_err("okprobe API version %d, built for %d\n", version,
		       OKPROBE_API_VERSION);
		return -EINVAL;
	}
	okp_bench_dir = debugfs_create_dir("okprobe_bench", NULL);
	debugfs_create_file("control", 0600, okp_bench_dir, NULL,
			    &okp_bench_control_fops);
	return 0;
}

static void __exit okp_bench_exit(void)
{
	debugfs_remove_recursive(okp_bench_dir);
	mutex_lock(&okp_bench_lock);
	okp_bench_disarm();
	mutex_unlock(&okp_bench_lock);
}

module_init(okp_bench_init);
module_exit(okp_bench_exit);
MODULE_DESCRIPTION("okprobe benchmark: per-hit cost against kprobes");
MODULE_LICENSE("GPL");
