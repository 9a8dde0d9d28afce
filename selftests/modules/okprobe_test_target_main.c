// SPDX-License-Identifier: GPL-2.0
/*
 * A module whose text a test probes and then unloads, so that the probe
 * becomes [GONE]. It does not use okprobe.
 *
 *   /sys/module/okprobe_test_target/parameters/call          write N: call
 *                                                            okp_gone_target
 *                                                            N times
 *   /sys/module/okprobe_test_target/parameters/cover         write A: call
 *                                                            okp_cover_target(A)
 *                                                            once (okprobe-cover's
 *                                                            test)
 *   /sys/module/okprobe_test_target/parameters/init_address  where this
 *                                                            module's init
 *                                                            text was
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

#include "okprobe_test_target.h"

static int okp_target_cover(const char *value, const struct kernel_param *kp)
{
	long a, expected;
	int ret;

	ret = kstrtol(value, 0, &a);
	if (ret)
		return ret;
	expected = a < 1 ? 0 : a > 10 ? a + 2 : a + 1;
	return okp_cover_target(a) == expected ? 0 : -EIO;
}

static const struct kernel_param_ops okp_target_cover_ops = {
	.set = okp_target_cover,
};
module_param_cb(cover, &okp_target_cover_ops, NULL, 0200);
MODULE_PARM_DESC(cover, "Call okp_cover_target once with this value");

static int okp_target_call(const char *value, const struct kernel_param *kp)
{
	unsigned int count, i;
	int ret;

	ret = kstrtouint(value, 0, &count);
	if (ret)
		return ret;
	for (i = 0; i < count; i++)
		if (okp_gone_target(i) != i + 1)
			return -EIO;
	return 0;
}

static const struct kernel_param_ops okp_target_call_ops = {
	.set = okp_target_call,
};
module_param_cb(call, &okp_target_call_ops, NULL, 0200);
MODULE_PARM_DESC(call, "Call okp_gone_target this many times");

static unsigned long init_address;
module_param(init_address, ulong, 0444);
MODULE_PARM_DESC(init_address, "Address of this module's init function");

static noinline int __init okp_target_init(void)
{
	init_address = (unsigned long)okp_target_init;
	return 0;
}

static void __exit okp_target_exit(void)
{
}

module_init(okp_target_init);
module_exit(okp_target_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("okprobe test: a module to probe and unload");
