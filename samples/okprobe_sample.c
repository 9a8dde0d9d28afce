// SPDX-License-Identifier: GPL-2.0
/*
 * A client of okprobe's API: loads only on top of okprobe.ko and refuses to
 * run against an okprobe built with another API version.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>

#include <okprobe.h>

static int __init okprobe_sample_init(void)
{
	int version = okprobe_api_version();

	if (version != OKPROBE_API_VERSION) {
		pr_err("okprobe API version %d, built for %d\n", version,
		       OKPROBE_API_VERSION);
		return -EINVAL;
	}
	pr_info("using okprobe API version %d\n", version);
	return 0;
}

static void __exit okprobe_sample_exit(void)
{
	pr_info("unloaded\n");
}

module_init(okprobe_sample_init);
module_exit(okprobe_sample_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("okprobe sample client");
