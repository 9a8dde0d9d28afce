// SPDX-License-Identifier: GPL-2.0
/*
 * Harness self-test: a module whose only job is to WARN when loaded, so the
 * guest runner can prove it fails a run whose console shows a warning even
 * when every TAP line says ok.
 */
#include <linux/bug.h>
#include <linux/module.h>

static int __init okprobe_test_warn_init(void)
{
	WARN(1, "okprobe harness self-test: deliberate warning\n");
	return 0;
}

static void __exit okprobe_test_warn_exit(void)
{
}

module_init(okprobe_test_warn_init);
module_exit(okprobe_test_warn_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("okprobe harness self-test: injects a WARN");
