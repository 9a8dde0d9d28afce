// SPDX-License-Identifier: GPL-2.0
/*
 * okprobe test client: probes okp_gone_target in okprobe_test_target.ko
 * and stays loaded while the test unloads that module.
 *
 *   insmod okprobe_test_gone.ko init_address=ADDR
 *
 * registers the probe (the load fails if that fails) and then, given
 * init_address, tries a probe at ADDR, the target module's freed init
 * text, which must fail. Read back through
 * /sys/module/okprobe_test_gone/parameters/:
 *   hits         times the handler ran
 *   flags        the probe's OKPROBE_FLAG_* bits
 *   init_result  what registering at init_address returned
 *   text         the first bytes at the probe (okptest's enable test
 *                checks the breakpoint comes and goes)
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>

#include <okprobe.h>

static unsigned long init_address;
module_param(init_address, ulong, 0444);
MODULE_PARM_DESC(init_address, "Freed init text to try to probe");

static int init_result;
module_param(init_result, int, 0444);
MODULE_PARM_DESC(init_result, "What registering at init_address returned");

static atomic_long_t okp_gone_hits = ATOMIC_LONG_INIT(0);

static int okp_gone_pre(struct okprobe *probe, struct pt_regs *regs)
{
	atomic_long_inc(&okp_gone_hits);
	return 0;
}

static struct okprobe okp_gone_probe = {
	.symbol_name = "okp_gone_target",
	.pre_handler = okp_gone_pre,
};

static struct okprobe okp_init_text_probe = {
	.pre_handler = okp_gone_pre,
};

static int okp_gone_get_hits(char *buffer, const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%ld\n", atomic_long_read(&okp_gone_hits));
}

static const struct kernel_param_ops okp_gone_hits_ops = {
	.get = okp_gone_get_hits,
};
module_param_cb(hits, &okp_gone_hits_ops, NULL, 0444);

static int okp_gone_get_flags(char *buffer, const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%u\n", READ_ONCE(okp_gone_probe.flags));
}

static const struct kernel_param_ops okp_gone_flags_ops = {
	.get = okp_gone_get_flags,
};
module_param_cb(flags, &okp_gone_flags_ops, NULL, 0444);

/* As many bytes as the sample client shows: enough for a jump. */
#define OKP_GONE_TEXT_BYTES 8

static int okp_gone_get_text(char *buffer, const struct kernel_param *kp)
{
	u8 text[OKP_GONE_TEXT_BYTES];

	if (copy_from_kernel_nofault(text, okp_gone_probe.addr, sizeof(text)))
		return -EFAULT;
	return sysfs_emit(buffer, "%*ph\n", (int)sizeof(text), text);
}

static const struct kernel_param_ops okp_gone_text_ops = {
	.get = okp_gone_get_text,
};
module_param_cb(text, &okp_gone_text_ops, NULL, 0444);

static int __init okp_gone_init(void)
{
	int ret;

	ret = okprobe_register(&okp_gone_probe);
	if (ret)
		return ret;
	if (init_address) {
		okp_init_text_probe.addr = (void *)init_address;
		init_result = okprobe_register(&okp_init_text_probe);
		if (!init_result)
			okprobe_unregister(&okp_init_text_probe);
	}
	return 0;
}

static void __exit okp_gone_exit(void)
{
	okprobe_unregister(&okp_gone_probe);
}

module_init(okp_gone_init);
module_exit(okp_gone_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("okprobe test: a probe on a module that goes away");
