// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/okprobe/: the operator's view, shaped like the kernel's
 * /sys/kernel/debug/kprobes/.
 *   list       one line per registered probe: address,
 *              symbol+offset [module], hits, missed hits, [OPTIMIZED],
 *              [DISABLED], [GONE] and [LOST]
 *   jumps      one line per probed address: its jump state (optimized,
 *              waiting, breakpoint, lost), the bytes the jump replaces and the
 *              detour's size, or why it stays a breakpoint
 *   enabled    1/0: arm or disarm every probe without unregistering it
 *   blacklist  the address ranges okprobe refuses to probe
 *   writer_steps  each step of registering, optimizing and unregistering:
 *              how many times it ran and its nanoseconds, since load
 *   cover      basic-block coverage with counting probes (cover.c)
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

#include "core/core_api.h"
#include "glue.h"

static struct dentry *okp_debugfs_dir;

static int okp_list_show(struct seq_file *m, void *unused)
{
	okp_probes_show(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(okp_list);

static int okp_jumps_show(struct seq_file *m, void *unused)
{
	okp_probes_show_jumps(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(okp_jumps);

static int okp_writer_steps_show(struct seq_file *m, void *unused)
{
	okp_probes_show_writer_steps(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(okp_writer_steps);

static int okp_blacklist_show(struct seq_file *m, void *unused)
{
	unsigned long index, start, end;
	const char *why;

	for (index = 0; okp_core_blacklist_entry(index, &start, &end, &why);
	     index++)
		seq_printf(m, "0x%016lx-0x%016lx\t%s\n", start, end, why);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(okp_blacklist);

static ssize_t okp_enabled_read(struct file *file, char __user *buffer,
				size_t count, loff_t *position)
{
	char text[3] = { okp_probes_enabled() ? '1' : '0', '\n', 0 };

	return simple_read_from_buffer(buffer, count, position, text, 2);
}

static ssize_t okp_enabled_write(struct file *file, const char __user *buffer,
				 size_t count, loff_t *position)
{
	bool enable;
	int ret;

	ret = kstrtobool_from_user(buffer, count, &enable);
	if (ret)
		return ret;
	okp_probes_set_enabled(enable);
	return count;
}

static const struct file_operations okp_enabled_fops = {
	.owner = THIS_MODULE,
	.read = okp_enabled_read,
	.write = okp_enabled_write,
	.llseek = default_llseek,
};

int okp_debugfs_init(void)
{
	okp_debugfs_dir = debugfs_create_dir("okprobe", NULL);
	if (IS_ERR(okp_debugfs_dir))
		return PTR_ERR(okp_debugfs_dir);
	debugfs_create_file("list", 0400, okp_debugfs_dir, NULL,
			    &okp_list_fops);
	debugfs_create_file("jumps", 0400, okp_debugfs_dir, NULL,
			    &okp_jumps_fops);
	debugfs_create_file("enabled", 0600, okp_debugfs_dir, NULL,
			    &okp_enabled_fops);
	debugfs_create_file("blacklist", 0400, okp_debugfs_dir, NULL,
			    &okp_blacklist_fops);
	debugfs_create_file("writer_steps", 0400, okp_debugfs_dir, NULL,
			    &okp_writer_steps_fops);
	debugfs_create_file("cover", 0600, okp_debugfs_dir, NULL,
			    &okp_cover_fops);
	okp_fail_alloc_init(okp_debugfs_dir);
	return 0;
}

void okp_debugfs_exit(void)
{
	debugfs_remove_recursive(okp_debugfs_dir);
	okp_debugfs_dir = NULL;
}
