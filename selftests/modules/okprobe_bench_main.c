// SPDX-License-Identifier: GPL-2.0
/*
 * okprobe_bench.ko: what one probe hit costs, okprobe's against the kernel's
 * kprobes, on the same instruction, and how many of a sample of kernel
 * instructions each can register and optimize (make bench).
 *
 * The per-hit target is okp_bench_target (okprobe_bench_target.S), probed
 * at +0. Nothing is measured at load: the guest's okptest (suite "bench")
 * drives the module through /sys/kernel/debug/okprobe_bench/control, one
 * configuration at a time, so that it can set the kprobes-optimization
 * sysctls and read kprobes/list and okprobe/jumps in between:
 *
 *   arm CONFIG    register the probe of CONFIG: none, kprobe (the kernel's,
 *                 with a pre_handler), okprobe-post (okprobe with only a
 *                 post_handler: unboosted) or okprobe-pre (okprobe with
 *                 only a pre_handler: boosted, or optimized when okprobe's
 *                 sysctl allows)
 *   state         whether the armed probe is optimized now
 *   run CALLS     call the target CALLS times, in batches with preemption
 *                 off, timing only the batches
 *   disarm        unregister the probe
 *
 * and, for the coverage of kernel instructions:
 *
 *   site ADDRESS  add a site (okptest resolves the sample's "symbol offset"
 *                 lines through /proc/kallsyms); its first bytes are kept
 *   cover KIND    register a probe with a counting pre_handler at every
 *                 site, one by one: KIND kprobe or okprobe
 *   cover-state   count the jumps in the text at registered sites, the
 *                 sites whose text differs from what it was, the hits
 *   uncover       unregister them all (unregister_kprobes() or
 *                 okprobe_unregister_many())
 *   sites-clear   forget the sites
 *
 * Reading the file gives the outcome of the last command:
 *
 *   kprobe armed traps=2 preemption=1
 *   kprobe optimized=1
 *   okprobe-pre calls=100000 ns=123456789 hits=100000 missed=0 bad=0 traps=1 jump=none
 *   cover okprobe sites=1000 registered=812 ns=1234567 moved=0 errors=-1:100,-16:88
 *   cover-state jumps=600 changed=812 hits=12345 missed=0 optimized=600
 *   uncover okprobe unregistered=812 ns=123456
 *
 * Each handler counts its hits; bad counts calls that returned a wrong
 * value; traps is the number of int3 traps one hit takes (0 when the jump
 * was in place for the whole run); jump says whether the probe was
 * optimized (a jmp at the probed address) before and after the run: none,
 * throughout or changed; preemption says whether the kernel has
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
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
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

/*
 * An optimized probe, the kernel's or okprobe's, is a 5-byte jmp rel32 at
 * the probed address; an armed one that is not is an int3.
 */
#define OKP_BENCH_JMP32_OPCODE 0xe9
#define OKP_BENCH_JMP32_SIZE 5

static DEFINE_MUTEX(okp_bench_lock);
static int okp_bench_armed = OKP_BENCH_DISARMED;
static struct kprobe okp_bench_kprobe;
static struct okprobe okp_bench_okprobe;
static atomic_long_t okp_bench_hits;
static char okp_bench_result[256];
static struct dentry *okp_bench_dir;
/* The coverage pass registered now: OKP_BENCH_KPROBE, _OKPROBE_PRE or none. */
static int okp_bench_cover_kind = OKP_BENCH_DISARMED;

static int okp_bench_covering(void)
{
	return okp_bench_cover_kind != OKP_BENCH_DISARMED;
}

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

/*
 * Whether the armed probe is optimized now. okprobe says so in its flags.
 * The kernel's KPROBE_FLAG_OPTIMIZED (and so [OPTIMIZED] in kprobes/list)
 * is set when the probe is queued for its optimizer, before the jump is
 * written: only the jmp in the text says the optimizer is done.
 */
static int okp_bench_optimized(void)
{
	const u8 *text = (const u8 *)okp_bench_target;

	switch (okp_bench_armed) {
	case OKP_BENCH_KPROBE:
		return READ_ONCE(*text) == OKP_BENCH_JMP32_OPCODE;
	case OKP_BENCH_OKPROBE_POST:
	case OKP_BENCH_OKPROBE_PRE:
		return !!(READ_ONCE(okp_bench_okprobe.flags) &
			  OKPROBE_FLAG_OPTIMIZED);
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

	if (okp_bench_armed != OKP_BENCH_DISARMED || okp_bench_covering())
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

static int okp_bench_state(void)
{
	if (okp_bench_armed == OKP_BENCH_DISARMED)
		return -ENOENT;
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "%s optimized=%d\n", okp_bench_names[okp_bench_armed],
		 okp_bench_optimized());
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
	int optimized_before, optimized_after;
	u64 ns = 0, start;

	if (okp_bench_armed == OKP_BENCH_DISARMED)
		return -ENOENT;
	if (!calls || calls > OKP_BENCH_MAX_CALLS)
		return -EINVAL;
	missed = okp_bench_missed();
	atomic_long_set(&okp_bench_hits, 0);
	optimized_before = okp_bench_optimized();
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
	optimized_after = okp_bench_optimized();
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "%s calls=%lu ns=%llu hits=%ld missed=%lu bad=%lu traps=%d jump=%s\n",
		 okp_bench_names[okp_bench_armed], calls, ns,
		 atomic_long_read(&okp_bench_hits),
		 okp_bench_missed() - missed, bad,
		 optimized_before && optimized_after ? 0 : okp_bench_traps(),
		 optimized_before != optimized_after ? "changed" :
		 optimized_before ? "throughout" : "none");
	return 0;
}

/* ---- Coverage: probes on a sample of kernel instructions ------------------ */

#define OKP_BENCH_MAX_SITES 4096
/* Distinct registration errnos reported per pass. */
#define OKP_BENCH_MAX_ERRORS 16

struct okp_bench_site {
	unsigned long address;
	u8 original[OKP_BENCH_JMP32_SIZE];	/* the text before any pass */
	int ret;				/* registration, this pass */
};

static struct okp_bench_site *okp_bench_sites;
static int okp_bench_site_count;
static struct kprobe *okp_bench_site_kprobes;
static struct okprobe *okp_bench_site_okprobes;
/* The registered ones of this pass, for the batch unregistration. */
static void **okp_bench_site_registered;
static atomic_long_t okp_bench_site_hits;

static void okp_bench_free_pass(void)
{
	kvfree(okp_bench_site_kprobes);
	kvfree(okp_bench_site_okprobes);
	kvfree(okp_bench_site_registered);
	okp_bench_site_kprobes = NULL;
	okp_bench_site_okprobes = NULL;
	okp_bench_site_registered = NULL;
	okp_bench_cover_kind = OKP_BENCH_DISARMED;
}

static int okp_bench_site_kprobe_pre(struct kprobe *probe,
				     struct pt_regs *regs)
{
	atomic_long_inc(&okp_bench_site_hits);
	return 0;
}

static int okp_bench_site_okprobe_pre(struct okprobe *probe,
				      struct pt_regs *regs)
{
	atomic_long_inc(&okp_bench_site_hits);
	return 0;
}

static int okp_bench_add_site(unsigned long address)
{
	struct okp_bench_site *site;

	if (okp_bench_covering())
		return -EBUSY;
	if (okp_bench_site_count == OKP_BENCH_MAX_SITES)
		return -ENOSPC;
	if (!okp_bench_sites) {
		okp_bench_sites = kvcalloc(OKP_BENCH_MAX_SITES,
					   sizeof(*okp_bench_sites),
					   GFP_KERNEL);
		if (!okp_bench_sites)
			return -ENOMEM;
	}
	site = &okp_bench_sites[okp_bench_site_count];
	site->address = address;
	if (copy_from_kernel_nofault(site->original, (void *)address,
				     sizeof(site->original)))
		return -EFAULT;
	okp_bench_site_count++;
	snprintf(okp_bench_result, sizeof(okp_bench_result), "site %d\n",
		 okp_bench_site_count);
	return 0;
}

/* Appends "errno:count" pairs of the failed registrations to out. */
static void okp_bench_format_errors(char *out, size_t size)
{
	int errnos[OKP_BENCH_MAX_ERRORS], counts[OKP_BENCH_MAX_ERRORS];
	int distinct = 0, i, j;
	size_t used = 0;

	for (i = 0; i < okp_bench_site_count; i++) {
		int ret = okp_bench_sites[i].ret;

		if (!ret)
			continue;
		for (j = 0; j < distinct && errnos[j] != ret; j++)
			;
		if (j == distinct) {
			if (distinct == OKP_BENCH_MAX_ERRORS)
				continue;
			errnos[distinct] = ret;
			counts[distinct++] = 0;
		}
		counts[j]++;
	}
	out[0] = '\0';
	for (j = 0; j < distinct && used < size; j++)
		used += scnprintf(out + used, size - used, "%s%d:%d",
				  j ? "," : "", errnos[j], counts[j]);
}

static int okp_bench_cover(const char *kind)
{
	int registered = 0, moved = 0, i;
	char errors[160];
	u64 start, ns;

	if (okp_bench_covering() || okp_bench_armed != OKP_BENCH_DISARMED)
		return -EBUSY;
	if (!okp_bench_site_count)
		return -ENOENT;
	if (!strcmp(kind, "kprobe"))
		okp_bench_cover_kind = OKP_BENCH_KPROBE;
	else if (!strcmp(kind, "okprobe"))
		okp_bench_cover_kind = OKP_BENCH_OKPROBE_PRE;
	else
		return -EINVAL;
	okp_bench_site_kprobes = kvcalloc(okp_bench_site_count,
					  sizeof(*okp_bench_site_kprobes),
					  GFP_KERNEL);
	okp_bench_site_okprobes = kvcalloc(okp_bench_site_count,
					   sizeof(*okp_bench_site_okprobes),
					   GFP_KERNEL);
	okp_bench_site_registered = kvcalloc(okp_bench_site_count,
					     sizeof(*okp_bench_site_registered),
					     GFP_KERNEL);
	if (!okp_bench_site_kprobes || !okp_bench_site_okprobes ||
	    !okp_bench_site_registered) {
		okp_bench_free_pass();
		return -ENOMEM;
	}
	atomic_long_set(&okp_bench_site_hits, 0);
	start = ktime_get_ns();
	for (i = 0; i < okp_bench_site_count; i++) {
		struct okp_bench_site *site = &okp_bench_sites[i];
		struct kprobe *kp = &okp_bench_site_kprobes[i];
		struct okprobe *op = &okp_bench_site_okprobes[i];
		void *registered_at;

		if (okp_bench_cover_kind == OKP_BENCH_KPROBE) {
			kp->addr = (kprobe_opcode_t *)site->address;
			kp->pre_handler = okp_bench_site_kprobe_pre;
			site->ret = register_kprobe(kp);
			registered_at = kp->addr;
		} else {
			op->addr = (void *)site->address;
			op->pre_handler = okp_bench_site_okprobe_pre;
			site->ret = okprobe_register(op);
			registered_at = op->addr;
		}
		if (site->ret)
			continue;
		registered++;
		/* kprobes may move a probe, e.g. past an endbr64 under IBT. */
		moved += (unsigned long)registered_at != site->address;
	}
	ns = ktime_get_ns() - start;
	okp_bench_format_errors(errors, sizeof(errors));
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "cover %s sites=%d registered=%d ns=%llu moved=%d errors=%s\n",
		 kind, okp_bench_site_count, registered, ns, moved, errors);
	return 0;
}

static int okp_bench_cover_state(void)
{
	int jumps = 0, changed = 0, optimized = 0, i;
	unsigned long missed = 0;
	u8 now[OKP_BENCH_JMP32_SIZE];

	for (i = 0; i < okp_bench_site_count; i++) {
		struct okp_bench_site *site = &okp_bench_sites[i];

		if (copy_from_kernel_nofault(now, (void *)site->address,
					     sizeof(now)))
			return -EFAULT;
		changed += memcmp(now, site->original, sizeof(now)) != 0;
		if (!okp_bench_covering() || site->ret)
			continue;
		jumps += now[0] == OKP_BENCH_JMP32_OPCODE;
		if (okp_bench_cover_kind == OKP_BENCH_KPROBE) {
			missed += okp_bench_site_kprobes[i].nmissed;
		} else {
			missed += okp_bench_site_okprobes[i].nmissed;
			optimized += !!(READ_ONCE(okp_bench_site_okprobes[i].flags) &
					OKPROBE_FLAG_OPTIMIZED);
		}
	}
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "cover-state jumps=%d changed=%d hits=%ld missed=%lu optimized=%d\n",
		 jumps, changed, atomic_long_read(&okp_bench_site_hits), missed,
		 optimized);
	return 0;
}

static void okp_bench_uncover(void)
{
	void **registered = okp_bench_site_registered;
	int count = 0, i;
	u64 start, ns;

	if (!okp_bench_covering())
		return;
	for (i = 0; i < okp_bench_site_count; i++) {
		if (okp_bench_sites[i].ret)
			continue;
		if (okp_bench_cover_kind == OKP_BENCH_KPROBE)
			registered[count++] = &okp_bench_site_kprobes[i];
		else
			registered[count++] = &okp_bench_site_okprobes[i];
	}
	start = ktime_get_ns();
	if (count && okp_bench_cover_kind == OKP_BENCH_KPROBE)
		unregister_kprobes((struct kprobe **)registered, count);
	else if (count)
		okprobe_unregister_many((struct okprobe **)registered, count);
	ns = ktime_get_ns() - start;
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "uncover %s unregistered=%d ns=%llu\n",
		 okp_bench_cover_kind == OKP_BENCH_KPROBE ? "kprobe" : "okprobe",
		 count, ns);
	okp_bench_free_pass();
}

static int okp_bench_clear_sites(void)
{
	if (okp_bench_covering())
		return -EBUSY;
	kvfree(okp_bench_sites);
	okp_bench_sites = NULL;
	okp_bench_site_count = 0;
	snprintf(okp_bench_result, sizeof(okp_bench_result), "sites 0\n");
	return 0;
}

/* ---- debugfs okprobe_bench/control ---------------------------------------- */

static ssize_t okp_bench_control_write(struct file *file,
				       const char __user *buffer,
				       size_t count, loff_t *position)
{
	char command[64], name[32];
	unsigned long number;
	int ret;

	if (count >= sizeof(command))
		return -EINVAL;
	if (copy_from_user(command, buffer, count))
		return -EFAULT;
	command[count] = '\0';
	mutex_lock(&okp_bench_lock);
	/*
	 * Whole words first: a space in a sscanf() format matches no space
	 * too, so "cover %31s" would take "cover-state".
	 */
	if (sysfs_streq(command, "state")) {
		ret = okp_bench_state();
	} else if (sysfs_streq(command, "disarm")) {
		okp_bench_disarm();
		ret = 0;
	} else if (sysfs_streq(command, "cover-state")) {
		ret = okp_bench_cover_state();
	} else if (sysfs_streq(command, "uncover")) {
		okp_bench_uncover();
		ret = 0;
	} else if (sysfs_streq(command, "sites-clear")) {
		ret = okp_bench_clear_sites();
	} else if (sscanf(command, "arm %31s", name) == 1) {
		ret = okp_bench_arm(name);
	} else if (sscanf(command, "run %lu", &number) == 1) {
		ret = okp_bench_run(number);
	} else if (sscanf(command, "site %lx", &number) == 1) {
		ret = okp_bench_add_site(number);
	} else if (sscanf(command, "cover %31s", name) == 1) {
		ret = okp_bench_cover(name);
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
	okp_bench_uncover();
	okp_bench_clear_sites();
	mutex_unlock(&okp_bench_lock);
}

module_init(okp_bench_init);
module_exit(okp_bench_exit);
MODULE_DESCRIPTION("okprobe benchmark: per-hit cost and coverage against kprobes");
MODULE_LICENSE("GPL");
