// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/okprobe/cover: basic-block coverage of kernel functions
 * on a stock kernel, with counting probes (OKPROBE_FLAG_COUNTER), driven by
 * tools/okprobe-cover.
 *
 *   echo add 0xADDRESS > cover   a counting probe at the first instruction of
 *                                every basic block of the function holding
 *                                ADDRESS (core/basic_blocks.hpp, decoded from
 *                                its text); blocks okprobe refuses are
 *                                listed with the reason
 *   echo reach 0xADDRESS > cover the same, each block's probe one-shot: its
 *                                first hit records it and has it disabled
 *                                (its breakpoint taken out), so a reached
 *                                block costs nothing afterwards
 *   echo clear > cover           unregister them all
 *   cat cover                    per function: its blocks, each with its hits
 *                                and how it is probed
 *
 *   function 0xffffffffc0a01000 okp_cover_target+0x0/0x1c [okprobe_test_target] blocks=5 reached=3
 *   +0x0 hits=1 optimized
 *   +0x19 hits=0 refused: a jump label site (-16)
 *
 * A reach block's first hit (its pre_handler, in the hit's context) puts it
 * on okp_cover_fired and raises okp_cover_irq_work, which schedules
 * okp_cover_disarm_work: that disables the fired blocks' probes, under
 * okp_cover_mutex, in process context.
 *
 * Locking: okp_cover_mutex, then okp_probe_mutex (inside the probe calls).
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/irq_work.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include <okprobe.h>

#include "core/core_api.h"
#include "glue.h"

/* The most blocks of one function okprobe-cover probes. */
#define OKP_COVER_MAX_BLOCKS 4096

struct okp_cover_block {
	struct okprobe probe;
	int error;		/* 0, or why the registration was refused */
	char why[80];
	/* Reach mode: 1 once hit; on okp_cover_fired until disabled. */
	atomic_t fired;
	struct llist_node fired_node;
};

struct okp_cover_function {
	struct list_head node;
	unsigned long start, size;
	unsigned int count;
	bool reach;		/* one-shot probes, not counting ones */
	struct okp_cover_block blocks[];
};

static DEFINE_MUTEX(okp_cover_mutex);
static LIST_HEAD(okp_cover_functions);

/* Reach blocks hit for the first time, whose probes are not yet disabled. */
static LLIST_HEAD(okp_cover_fired);

static void okp_cover_disarm(struct work_struct *work)
{
	struct okp_cover_block *block, *next;
	struct llist_node *fired;

	mutex_lock(&okp_cover_mutex);
	fired = llist_del_all(&okp_cover_fired);
	llist_for_each_entry_safe(block, next, fired, fired_node)
		okprobe_disable(&block->probe);
	mutex_unlock(&okp_cover_mutex);
}

static DECLARE_WORK(okp_cover_disarm_work, okp_cover_disarm);

static notrace void okp_cover_fired_irq(struct irq_work *work)
{
	schedule_work(&okp_cover_disarm_work);
}
NOKPROBE_SYMBOL(okp_cover_fired_irq);

static struct irq_work okp_cover_irq_work = IRQ_WORK_INIT(okp_cover_fired_irq);

/* A reach block's probe: its first hit records it and asks for its end. */
static notrace int okp_cover_reach_hit(struct okprobe *probe,
				       struct pt_regs *regs)
{
	struct okp_cover_block *block =
		container_of(probe, struct okp_cover_block, probe);

	if (atomic_xchg(&block->fired, 1))
		return 0;
	llist_add(&block->fired_node, &okp_cover_fired);
	irq_work_queue(&okp_cover_irq_work);
	return 0;
}
NOKPROBE_SYMBOL(okp_cover_reach_hit);

/*
 * Takes function's blocks off okp_cover_fired (its probes are unregistered:
 * no more come), under okp_cover_mutex, which okp_cover_disarm() takes too.
 */
static void okp_cover_forget_fired(const struct okp_cover_function *function)
{
	struct okp_cover_block *block, *next;
	struct llist_node *fired = llist_del_all(&okp_cover_fired);
	bool others = false;

	llist_for_each_entry_safe(block, next, fired, fired_node) {
		if (block >= function->blocks &&
		    block < function->blocks + function->count)
			continue;
		llist_add(&block->fired_node, &okp_cover_fired);
		others = true;
	}
	if (others)
		schedule_work(&okp_cover_disarm_work);
}

static struct okp_cover_function *okp_cover_find(unsigned long address)
{
	struct okp_cover_function *function;

	list_for_each_entry(function, &okp_cover_functions, node)
		if (address >= function->start &&
		    address < function->start + function->size)
			return function;
	return NULL;
}

static void okp_cover_remove(struct okp_cover_function *function);

/* Whether the function's text went away (its module unloaded). */
static bool okp_cover_gone(const struct okp_cover_function *function)
{
	unsigned int i;

	for (i = 0; i < function->count; i++)
		if (!function->blocks[i].error)
			return READ_ONCE(function->blocks[i].probe.flags) &
			       OKPROBE_FLAG_GONE;
	return false;
}

/*
 * Whether block i starts where an earlier block's probe went: a +0
 * probe moves past endbr64 or the ftrace call site, where a branch of
 * the function may lead too. That one is the same block.
 */
static bool okp_cover_same_block(const struct okp_cover_function *function,
				 unsigned int i)
{
	unsigned long address = (unsigned long)function->blocks[i].probe.addr;
	unsigned int j;

	for (j = 0; j < i; j++)
		if (!function->blocks[j].error &&
		    (unsigned long)function->blocks[j].probe.addr == address)
			return true;
	return false;
}

static int okp_cover_add(unsigned long address, bool reach)
{
	unsigned long start, size;
	struct okp_cover_function *function;
	unsigned int *offsets;
	const char *why;
	long count, i, kept;

	function = okp_cover_find(address);
	if (function && !okp_cover_gone(function))
		return -EEXIST;
	/* Its module went and came back: cover the new text. */
	if (function)
		okp_cover_remove(function);
	offsets = kvmalloc_array(OKP_COVER_MAX_BLOCKS, sizeof(*offsets),
				 GFP_KERNEL);
	if (!offsets)
		return -ENOMEM;
	count = okp_probes_block_starts(address, &start, &size, offsets,
					OKP_COVER_MAX_BLOCKS);
	if (count <= 0 || count > OKP_COVER_MAX_BLOCKS) {
		kvfree(offsets);
		return count < 0 ? count : count ? -E2BIG : -EILSEQ;
	}
	function = kvzalloc(struct_size(function, blocks, count), GFP_KERNEL);
	if (!function) {
		kvfree(offsets);
		return -ENOMEM;
	}
	function->start = start;
	function->size = size;
	function->reach = reach;
	for (i = 0, kept = 0; i < count; i++) {
		struct okp_cover_block *block = &function->blocks[kept];

		memset(block, 0, sizeof(*block));
		block->probe.addr = (void *)(start + offsets[i]);
		if (reach)
			block->probe.pre_handler = okp_cover_reach_hit;
		else
			block->probe.flags = OKPROBE_FLAG_COUNTER;
		why = "";
		block->error = okp_probes_register_quietly(&block->probe, &why);
		if (block->error == -EBUSY &&
		    okp_cover_same_block(function, kept))
			continue;
		if (block->error)
			strscpy(block->why, why, sizeof(block->why));
		kept++;
	}
	function->count = kept;
	kvfree(offsets);
	list_add_tail(&function->node, &okp_cover_functions);
	return 0;
}

/* Unregisters the function's probes (one batch) and forgets it. */
static void okp_cover_remove(struct okp_cover_function *function)
{
	struct okprobe **probes;
	unsigned int i, n;

	probes = kvmalloc_array(function->count, sizeof(*probes), GFP_KERNEL);
	for (i = 0, n = 0; i < function->count; i++) {
		if (function->blocks[i].error)
			continue;
		if (probes)
			probes[n++] = &function->blocks[i].probe;
		else
			okprobe_unregister(&function->blocks[i].probe);
	}
	if (probes && n)
		okprobe_unregister_many(probes, n);
	kvfree(probes);
	if (function->reach)
		okp_cover_forget_fired(function);
	list_del(&function->node);
	kvfree(function);
}

static void okp_cover_clear(void)
{
	struct okp_cover_function *function, *next;

	list_for_each_entry_safe(function, next, &okp_cover_functions, node)
		okp_cover_remove(function);
}

static const char *okp_cover_state(const struct okprobe *probe)
{
	unsigned int flags = READ_ONCE(probe->flags);

	if (flags & OKPROBE_FLAG_GONE)
		return "gone";
	if (flags & OKPROBE_FLAG_LOST)
		return "lost";
	if (flags & OKPROBE_FLAG_DISABLED)
		return "reached, disabled";
	if (flags & OKPROBE_FLAG_OPTIMIZED)
		return "optimized";
	if (flags & OKPROBE_FLAG_FTRACE)
		return "ftrace";
	return "breakpoint";
}

static int okp_cover_show(struct seq_file *m, void *unused)
{
	struct okp_cover_function *function;
	unsigned long long *hits;
	unsigned int i, reached;
	char where[KSYM_SYMBOL_LEN];

	hits = kvmalloc_array(OKP_COVER_MAX_BLOCKS, sizeof(*hits), GFP_KERNEL);
	if (!hits)
		return -ENOMEM;
	mutex_lock(&okp_cover_mutex);
	list_for_each_entry(function, &okp_cover_functions, node) {
		/* Each count read once: the header agrees with the lines. */
		reached = 0;
		for (i = 0; i < function->count; i++) {
			hits[i] = 0;
			if (!function->blocks[i].error && function->reach)
				hits[i] = atomic_read(&function->blocks[i].fired);
			else if (!function->blocks[i].error)
				okprobe_read_count(&function->blocks[i].probe,
						   &hits[i]);
			reached += hits[i] != 0;
		}
		sprint_symbol(where, function->start);
		seq_printf(m, "function 0x%016lx %s blocks=%u reached=%u%s\n",
			   function->start, where, function->count, reached,
			   function->reach ? " reach" : "");
		for (i = 0; i < function->count; i++) {
			struct okp_cover_block *block = &function->blocks[i];
			unsigned long offset =
				(unsigned long)block->probe.addr -
				function->start;

			if (block->error) {
				seq_printf(m, "+0x%lx hits=0 refused: %s (%d)\n",
					   offset, block->why, block->error);
				continue;
			}
			seq_printf(m, "+0x%lx hits=%llu %s\n", offset, hits[i],
				   okp_cover_state(&block->probe));
		}
	}
	mutex_unlock(&okp_cover_mutex);
	kvfree(hits);
	return 0;
}

static int okp_cover_open(struct inode *inode, struct file *file)
{
	return single_open(file, okp_cover_show, NULL);
}

static ssize_t okp_cover_write(struct file *file, const char __user *buffer,
			       size_t count, loff_t *position)
{
	char *command, *argument;
	unsigned long address;
	int ret;

	if (count > 64)
		return -EINVAL;
	command = memdup_user_nul(buffer, count);
	if (IS_ERR(command))
		return PTR_ERR(command);
	argument = strim(command);
	mutex_lock(&okp_cover_mutex);
	if (!strcmp(argument, "clear")) {
		okp_cover_clear();
		ret = 0;
	} else if (!strncmp(argument, "add ", 4)) {
		ret = kstrtoul(skip_spaces(argument + 4), 0, &address);
		if (!ret)
			ret = okp_cover_add(address, false);
	} else if (!strncmp(argument, "reach ", 6)) {
		ret = kstrtoul(skip_spaces(argument + 6), 0, &address);
		if (!ret)
			ret = okp_cover_add(address, true);
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&okp_cover_mutex);
	kfree(command);
	return ret ? ret : count;
}

const struct file_operations okp_cover_fops = {
	.owner = THIS_MODULE,
	.open = okp_cover_open,
	.read = seq_read,
	.write = okp_cover_write,
	.llseek = seq_lseek,
	.release = single_release,
};

void okp_cover_exit(void)
{
	mutex_lock(&okp_cover_mutex);
	okp_cover_clear();
	mutex_unlock(&okp_cover_mutex);
	/* Nothing fires now: what was raised runs to its (empty) end. */
	irq_work_sync(&okp_cover_irq_work);
	cancel_work_sync(&okp_cover_disarm_work);
}
