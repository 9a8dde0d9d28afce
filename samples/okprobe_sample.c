// SPDX-License-Identifier: GPL-2.0
/*
 * A client of okprobe's API: counts the hits of one probe.
 *
 *   insmod okprobe_sample.ko symbol=ksys_read offset=5
 *
 * With counter=1 the probe is a counting one (OKPROBE_FLAG_COUNTER, no
 * handler: once optimized, its detour only adds to a per-CPU count);
 * /sys/module/okprobe_sample/parameters/entries reads okprobe_read_count().
 * With return=1 it puts a return probe (okretprobe) on the function
 * instead: /sys/module/okprobe_sample/parameters/returns counts its
 * returns and return_sum adds up their return values; with pid=N only
 * the calls of process N are counted (its entry_handler drops the others).
 *
 * Writing 0 to /sys/module/okprobe_sample/parameters/registered
 * unregisters the probe, 1 registers it again, as it was loaded.
 *
 * Without symbol= it only checks that it was built for the loaded okprobe's
 * API version. The count is in debugfs okprobe/list while it is loaded and
 * in the log when it unloads. Writing 1 to
 * /sys/module/okprobe_sample/parameters/disabled disables the probe
 * (okprobe_disable()), 0 enables it again. Reading
 * /sys/module/okprobe_sample/parameters/text shows the first bytes at the
 * probed address as the CPU sees them: the instruction, okprobe's
 * breakpoint, or an optimized probe's jump.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>

#include <okprobe.h>

static char *symbol;
module_param(symbol, charp, 0444);
MODULE_PARM_DESC(symbol, "Kernel function to probe");

static ulong offset;
module_param(offset, ulong, 0444);
MODULE_PARM_DESC(offset, "Offset of the probed instruction in the function");

static bool return_probe;
module_param_named(return, return_probe, bool, 0444);
MODULE_PARM_DESC(return, "Probe the function's returns (okretprobe)");

static bool counter;
module_param(counter, bool, 0444);
MODULE_PARM_DESC(counter, "A counting probe (OKPROBE_FLAG_COUNTER), no handler");

static int pid;
module_param(pid, int, 0444);
MODULE_PARM_DESC(pid, "With return=1: count only this process's calls");

static atomic_long_t okprobe_sample_hits = ATOMIC_LONG_INIT(0);
static atomic_long_t okprobe_sample_returns = ATOMIC_LONG_INIT(0);
static atomic_long_t okprobe_sample_return_sum = ATOMIC_LONG_INIT(0);

static int okprobe_sample_pre(struct okprobe *probe, struct pt_regs *regs)
{
	atomic_long_inc(&okprobe_sample_hits);
	return 0;
}

static struct okprobe okprobe_sample_probe = {
	.pre_handler = okprobe_sample_pre,
};

static int okprobe_sample_entry(struct okretprobe_instance *instance,
				struct pt_regs *regs)
{
	if (pid && task_tgid_nr(current) != pid)
		return 1;
	atomic_long_inc(&okprobe_sample_hits);
	return 0;
}

static int okprobe_sample_return(struct okretprobe_instance *instance,
				 struct pt_regs *regs)
{
	atomic_long_inc(&okprobe_sample_returns);
	atomic_long_add(regs_return_value(regs), &okprobe_sample_return_sum);
	return 0;
}

static struct okretprobe okprobe_sample_return_probe = {
	.entry_handler = okprobe_sample_entry,
	.handler = okprobe_sample_return,
};

/* The probe whose address, flags and switch the parameters show. */
static struct okprobe *okprobe_sample_active(void)
{
	return return_probe ? &okprobe_sample_return_probe.kp :
			      &okprobe_sample_probe;
}

static int okprobe_sample_get_counter(char *buffer,
				      const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%ld\n", atomic_long_read(kp->arg));
}

static const struct kernel_param_ops okprobe_sample_counter_ops = {
	.get = okprobe_sample_get_counter,
};
module_param_cb(returns, &okprobe_sample_counter_ops,
		&okprobe_sample_returns, 0444);
MODULE_PARM_DESC(returns, "With return=1: returns counted");
module_param_cb(return_sum, &okprobe_sample_counter_ops,
		&okprobe_sample_return_sum, 0444);
MODULE_PARM_DESC(return_sum, "With return=1: the sum of their return values");
/* A counting probe's count is okprobe's; the others' hits are ours. */
static int okprobe_sample_get_entries(char *buffer,
				      const struct kernel_param *kp)
{
	unsigned long long count;
	int ret;

	if (!counter)
		return okprobe_sample_get_counter(buffer, kp);
	ret = okprobe_read_count(&okprobe_sample_probe, &count);
	return ret ? ret : sysfs_emit(buffer, "%llu\n", count);
}

static const struct kernel_param_ops okprobe_sample_entries_ops = {
	.get = okprobe_sample_get_entries,
};
module_param_cb(entries, &okprobe_sample_entries_ops, &okprobe_sample_hits,
		0444);
MODULE_PARM_DESC(entries, "Hits (with return=1: calls given an instance)");

static int okprobe_sample_get_missed(char *buffer,
				     const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%lu\n",
			  READ_ONCE(okprobe_sample_return_probe.nmissed));
}

static const struct kernel_param_ops okprobe_sample_missed_ops = {
	.get = okprobe_sample_get_missed,
};
module_param_cb(missed, &okprobe_sample_missed_ops, NULL, 0444);
MODULE_PARM_DESC(missed, "With return=1: the return probe's nmissed");

/* Reading it from userspace is a read() itself: on ksys_read, one more. */
static int okprobe_sample_get_pending(char *buffer,
				      const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%ld\n",
			  atomic_long_read(&okprobe_sample_hits) -
			  atomic_long_read(&okprobe_sample_returns));
}

static const struct kernel_param_ops okprobe_sample_pending_ops = {
	.get = okprobe_sample_get_pending,
};
module_param_cb(pending, &okprobe_sample_pending_ops, NULL, 0444);
MODULE_PARM_DESC(pending, "With return=1: calls inside the function now");

static int okprobe_sample_set_disabled(const char *value,
				       const struct kernel_param *kp)
{
	bool disable;
	int ret;

	ret = kstrtobool(value, &disable);
	if (ret)
		return ret;
	if (return_probe)
		return disable ?
			okretprobe_disable(&okprobe_sample_return_probe) :
			okretprobe_enable(&okprobe_sample_return_probe);
	if (disable)
		return okprobe_disable(&okprobe_sample_probe);
	return okprobe_enable(&okprobe_sample_probe);
}

static int okprobe_sample_get_disabled(char *buffer,
				       const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%d\n",
			  !!(READ_ONCE(okprobe_sample_active()->flags) &
			     OKPROBE_FLAG_DISABLED));
}

static const struct kernel_param_ops okprobe_sample_disabled_ops = {
	.set = okprobe_sample_set_disabled,
	.get = okprobe_sample_get_disabled,
};
module_param_cb(disabled, &okprobe_sample_disabled_ops, NULL, 0644);
MODULE_PARM_DESC(disabled, "1 disables the probe, 0 enables it");

/* Enough for a jump: x86's jmp rel32, riscv's auipc+jalr. */
#define OKPROBE_SAMPLE_TEXT_BYTES 8

static int okprobe_sample_get_text(char *buffer, const struct kernel_param *kp)
{
	u8 text[OKPROBE_SAMPLE_TEXT_BYTES];

	void *addr = okprobe_sample_active()->addr;

	if (!addr)
		return -ENODATA;
	if (copy_from_kernel_nofault(text, addr,
				     sizeof(text)))
		return -EFAULT;
	return sysfs_emit(buffer, "%*ph\n", (int)sizeof(text), text);
}

static const struct kernel_param_ops okprobe_sample_text_ops = {
	.get = okprobe_sample_get_text,
};
module_param_cb(text, &okprobe_sample_text_ops, NULL, 0444);
MODULE_PARM_DESC(text, "The bytes at the probed address");

/*
 * Registers the probe the parameters describe (symbol, offset, return,
 * counter). The structs are filled afresh each time: an unregistered
 * probe's addr is the address it had, and symbol_name with addr is
 * EINVAL, as with the kernel's kprobes.
 */
static int okprobe_sample_register(void)
{
	struct okretprobe *rp = &okprobe_sample_return_probe;
	int ret;

	if (return_probe) {
		rp->kp.addr = NULL;
		rp->kp.flags = 0;
		rp->kp.symbol_name = symbol;
		rp->kp.offset = offset;
		ret = okretprobe_register(rp);
		if (ret)
			return ret;
		pr_info("probing the returns of %s at %pS\n", symbol,
			rp->kp.addr);
		return 0;
	}
	okprobe_sample_probe.addr = NULL;
	okprobe_sample_probe.symbol_name = symbol;
	okprobe_sample_probe.offset = offset;
	okprobe_sample_probe.flags = 0;
	if (counter) {
		okprobe_sample_probe.pre_handler = NULL;
		okprobe_sample_probe.flags = OKPROBE_FLAG_COUNTER;
	}
	ret = okprobe_register(&okprobe_sample_probe);
	if (ret)
		return ret;
	pr_info("probing %s+0x%lx at %pS\n", symbol, offset,
		okprobe_sample_probe.addr);
	return 0;
}

static bool okprobe_sample_is_registered(void)
{
	return okprobe_sample_probe.okp_site ||
	       okprobe_sample_return_probe.okp_private;
}

static void okprobe_sample_unregister(void)
{
	if (okprobe_sample_probe.okp_site)
		okprobe_unregister(&okprobe_sample_probe);
	if (okprobe_sample_return_probe.okp_private)
		okretprobe_unregister(&okprobe_sample_return_probe);
}

/* Module parameter writes are serialized (kernel_param_lock). */
static int okprobe_sample_set_registered(const char *value,
					 const struct kernel_param *kp)
{
	bool wanted;
	int ret;

	ret = kstrtobool(value, &wanted);
	if (ret)
		return ret;
	if (!symbol)
		return -ENODATA;
	if (wanted == okprobe_sample_is_registered())
		return 0;
	if (!wanted) {
		okprobe_sample_unregister();
		return 0;
	}
	return okprobe_sample_register();
}

static int okprobe_sample_get_registered(char *buffer,
					 const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%d\n", okprobe_sample_is_registered());
}

static const struct kernel_param_ops okprobe_sample_registered_ops = {
	.set = okprobe_sample_set_registered,
	.get = okprobe_sample_get_registered,
};
module_param_cb(registered, &okprobe_sample_registered_ops, NULL, 0644);
MODULE_PARM_DESC(registered,
		 "0 unregisters the probe, 1 registers it again (as loaded)");

static int __init okprobe_sample_init(void)
{
	int version = okprobe_api_version();

	if (version != OKPROBE_API_VERSION) {
		pr_err("okprobe API version %d, built for %d\n", version,
		       OKPROBE_API_VERSION);
		return -EINVAL;
	}
	pr_info("using okprobe API version %d\n", version);
	if (!symbol)
		return 0;
	if (return_probe && counter) {
		pr_err("counter=1 is for a probe, not a return probe\n");
		return -EINVAL;
	}
	return okprobe_sample_register();
}

static void __exit okprobe_sample_exit(void)
{
	unsigned long long count = 0;

	if (counter && okprobe_sample_probe.okp_site)
		okprobe_read_count(&okprobe_sample_probe, &count);
	okprobe_sample_unregister();
	if (!counter)
		count = atomic_long_read(&okprobe_sample_hits);
	pr_info("unloaded after %llu hits, %ld returns (%lu missed)\n", count,
		atomic_long_read(&okprobe_sample_returns),
		okprobe_sample_return_probe.nmissed);
}

module_init(okprobe_sample_init);
module_exit(okprobe_sample_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("okprobe sample client: counts the hits of one probe");
