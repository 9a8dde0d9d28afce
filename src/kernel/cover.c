// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/debug/okprobe/cover: basic-block coverage of kernel functions
 * on a stock kernel, with counting probes (OKPROBE_FLAG_COUNTER), driven by
 * tools/okprobe-cover.
 *
 *   echo add 0xADDRESS... > cover   a counting probe at the first
 *                                instruction of every basic block of each
 *                                function holding an ADDRESS
 *                                (core/basic_blocks.hpp, decoded from its
 *                                text); blocks okprobe refuses are listed
 *                                with the reason
 *   echo reach 0xADDRESS... > cover the same, each block's probe one-shot
 *                                (OKPROBE_FLAG_BREAKPOINT: never a jump):
 *                                its first hit records it and has it
 *                                disabled (its breakpoint taken out), so a
 *                                reached block costs nothing afterwards
 *   echo clear > cover           unregister them all
 *   cat cover                    the functions okprobe could not cover, and
 *                                why; per function: its blocks, each with
 *                                its hits and how it is probed
 *
 *   refused 0xffffffffc0a02000 okp_target_init+0x0/0x1000 [okprobe_test_target]: no function's text is there (...) (-2)
 *   function 0xffffffffc0a01000 okp_cover_target+0x0/0x1c [okprobe_test_target] blocks=5 reached=3
 *   +0x0 hits=1 optimized
 *   +0x19 hits=0 refused: a jump label site (-16)
 *
 * One write is one batch, for tens of thousands of blocks: every block of
 * its functions is registered with one text write of their breakpoints
 * (okp_probes_register_each), and a function okprobe cannot cover fails
 * the write with its errno after the others are added (the write says
 * which only when it names one function). A reach block's first hit (its
 * pre_handler, in the hit's context) puts it on okp_cover_fired and raises
 * okp_cover_irq_work, which schedules okp_cover_disarm_work: that disables
 * the fired blocks' probes in one batch (one text write), under
 * okp_cover_mutex, in process context. clear unregisters every block in
 * one batch (one grace period).
 *
 * Locking: okp_cover_mutex, then okp_probe_mutex (inside the probe calls).
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/irq_work.h>
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
/* The most functions one write names (a page of "0x%lx " addresses). */
#define OKP_COVER_MAX_WRITE PAGE_SIZE
#define OKP_COVER_MAX_FUNCTIONS (OKP_COVER_MAX_WRITE / 4)

struct okp_cover_block {
	struct okprobe probe;
	int error;		/* 0, or why the registration was refused */
	/* Where an earlier block's probe went (a +0 moved): not listed. */
	bool same_block;
	char why[80];
	/* Reach mode: 1 once hit; on okp_cover_fired until disabled. */
	atomic_t fired;
	struct llist_node fired_node;
};

struct okp_cover_function {
	struct list_head node;
	unsigned long start, size;
	/*
	 * "name+0x0/0xSIZE [module]" when it was covered: the report keeps
	 * naming a function whose module went away (kallsyms no longer can).
	 */
	char *name;
	unsigned int count;
	bool reach;		/* one-shot probes, not counting ones */
	struct okp_cover_block blocks[];
};

/*
 * A function a write named that okprobe could not cover (not one covered
 * already): listed first in the report, until clear, so that a tool that
 * wrote hundreds at once learns which and why whatever its shell says of
 * the write's errno.
 */
struct okp_cover_refusal {
	struct list_head node;
	unsigned long address;
	int error;
};

/* The most refusals kept; more are counted. */
#define OKP_COVER_MAX_REFUSALS 4096

static DEFINE_MUTEX(okp_cover_mutex);
static LIST_HEAD(okp_cover_functions);
static LIST_HEAD(okp_cover_refusals);
static unsigned int okp_cover_refusal_count;

/* Reach blocks hit for the first time, whose probes are not yet disabled. */
static LLIST_HEAD(okp_cover_fired);

/* A block okprobe holds a probe for (not refused, not a same block). */
static bool okp_cover_registered(const struct okp_cover_block *block)
{
	return !block->error && !block->same_block;
}

/* The fired blocks' probes disabled, their breakpoints out in one write. */
static void okp_cover_disarm(struct work_struct *work)
{
	struct okp_cover_block *block, *next;
	struct llist_node *fired;
	struct okprobe **probes;
	int count = 0;

	mutex_lock(&okp_cover_mutex);
	fired = llist_del_all(&okp_cover_fired);
	llist_for_each_entry(block, fired, fired_node)
		count++;
	probes = count > 1 ? kvmalloc_array(count, sizeof(*probes), GFP_KERNEL)
			   : NULL;
	count = 0;
	llist_for_each_entry_safe(block, next, fired, fired_node) {
		/*
		 * A same block's probe may fire before okp_cover_add()
		 * unregisters it: one probe not registered would fail the
		 * whole batch (-EINVAL).
		 */
		if (!okp_cover_registered(block))
			continue;
		if (probes)
			probes[count++] = &block->probe;
		else
			okprobe_disable(&block->probe);
	}
	if (count)
		okp_probes_disable_many(probes, count);
	kvfree(probes);
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

static struct okp_cover_function *okp_cover_find(struct list_head *functions,
						 unsigned long address)
{
	struct okp_cover_function *function;

	list_for_each_entry(function, functions, node)
		if (address >= function->start &&
		    address < function->start + function->size)
			return function;
	return NULL;
}

/* Whether the function's text went away (its module unloaded). */
static bool okp_cover_gone(const struct okp_cover_function *function)
{
	unsigned int i;

	for (i = 0; i < function->count; i++)
		if (okp_cover_registered(&function->blocks[i]))
			return READ_ONCE(function->blocks[i].probe.flags) &
			       OKPROBE_FLAG_GONE;
	return false;
}

static void okp_cover_free(struct okp_cover_function *function)
{
	kfree(function->name);
	kvfree(function);
}

/*
 * Unregisters the functions' probes, one batch (one grace period) for all,
 * and frees them.
 */
static void okp_cover_remove_all(struct list_head *functions)
{
	struct okp_cover_function *function, *next;
	struct okprobe **probes;
	unsigned long total = 0, n = 0;
	unsigned int i;

	list_for_each_entry(function, functions, node)
		total += function->count;
	probes = total ? kvmalloc_array(total, sizeof(*probes), GFP_KERNEL)
		       : NULL;
	list_for_each_entry(function, functions, node) {
		for (i = 0; i < function->count; i++) {
			if (!okp_cover_registered(&function->blocks[i]))
				continue;
			if (probes)
				probes[n++] = &function->blocks[i].probe;
			else
				okprobe_unregister(&function->blocks[i].probe);
		}
	}
	if (n)
		okprobe_unregister_many(probes, n);
	kvfree(probes);
	list_for_each_entry_safe(function, next, functions, node) {
		if (function->reach)
			okp_cover_forget_fired(function);
		list_del(&function->node);
		okp_cover_free(function);
	}
}

static void okp_cover_remove(struct okp_cover_function *function)
{
	LIST_HEAD(one);

	list_move(&function->node, &one);
	okp_cover_remove_all(&one);
}

/*
 * The function holding address, decoded into its blocks' probes (not yet
 * registered); or NULL and *error.
 */
static struct okp_cover_function *
okp_cover_prepare(struct list_head *prepared, unsigned long address,
		  bool reach, unsigned int *offsets, int *error)
{
	struct okp_cover_function *function;
	unsigned long start, size;
	long count, i;

	function = okp_cover_find(&okp_cover_functions, address);
	if (function && !okp_cover_gone(function)) {
		*error = -EEXIST;
		return NULL;
	}
	/* Its module went and came back: cover the new text. */
	if (function)
		okp_cover_remove(function);
	if (okp_cover_find(prepared, address)) {
		*error = -EEXIST; /* named twice */
		return NULL;
	}
	count = okp_probes_block_starts(address, &start, &size, offsets,
					OKP_COVER_MAX_BLOCKS);
	if (count <= 0 || count > OKP_COVER_MAX_BLOCKS) {
		*error = count < 0 ? count : count ? -E2BIG : -EILSEQ;
		return NULL;
	}
	function = kvzalloc(struct_size(function, blocks, count), GFP_KERNEL);
	if (!function) {
		*error = -ENOMEM;
		return NULL;
	}
	function->start = start;
	function->size = size;
	function->reach = reach;
	function->count = count;
	function->name = kasprintf(GFP_KERNEL, "%pS", (void *)start);
	if (!function->name) {
		kvfree(function);
		*error = -ENOMEM;
		return NULL;
	}
	for (i = 0; i < count; i++) {
		struct okp_cover_block *block = &function->blocks[i];

		block->probe.addr = (void *)(start + offsets[i]);
		if (reach) {
			block->probe.pre_handler = okp_cover_reach_hit;
			block->probe.flags = OKPROBE_FLAG_BREAKPOINT;
		} else {
			block->probe.flags = OKPROBE_FLAG_COUNTER;
		}
	}
	return function;
}

/*
 * The outcome of each block's registration. A +0 probe moves past endbr64
 * or the ftrace call site, where a branch of the function may lead too:
 * that block is the same as the first, and not listed; its own probe
 * (reach: a second one at the site) is put on *duplicates to unregister.
 */
static void okp_cover_settle(struct okp_cover_function *function,
			     const int *errors, const char **whys,
			     struct okprobe **duplicates, unsigned long *n)
{
	struct okp_cover_block *first = &function->blocks[0];
	unsigned int i;

	for (i = 0; i < function->count; i++) {
		struct okp_cover_block *block = &function->blocks[i];

		block->error = errors[i];
		if (block->error)
			strscpy(block->why, whys[i], sizeof(block->why));
		if (!i || first->error || block->probe.addr != first->probe.addr)
			continue;
		if (block->error && block->error != -EBUSY)
			continue;
		if (!block->error)
			duplicates[(*n)++] = &block->probe;
		block->same_block = true;
	}
}

static void okp_cover_refused(unsigned long address, int error)
{
	struct okp_cover_refusal *refusal;

	if (++okp_cover_refusal_count > OKP_COVER_MAX_REFUSALS)
		return;
	refusal = kmalloc(sizeof(*refusal), GFP_KERNEL);
	if (!refusal)
		return;
	refusal->address = address;
	refusal->error = error;
	list_add_tail(&refusal->node, &okp_cover_refusals);
}

static const char *okp_cover_refusal_why(int error)
{
	switch (error) {
	case -ENOENT:
		return "no function's text is there (a module's init code is freed once it is loaded)";
	case -E2BIG:
		return "the function is too large (over 1 MiB, or over 4096 blocks)";
	case -EILSEQ:
		return "no block of the function could be decoded";
	case -EIO:
		return "the function's text cannot be read";
	case -ENOMEM:
		return "out of memory";
	default:
		return "refused";
	}
}

/*
 * Covers each function one of the addresses is in, all their blocks in one
 * batch. 0, or the first function's errno (the others are covered; each
 * refusal but EEXIST's is listed in the report).
 */
static int okp_cover_add(const unsigned long *addresses, unsigned int named,
			 bool reach)
{
	struct okp_cover_function *function, *next_function;
	struct okprobe **probes = NULL;
	const char **whys = NULL;
	unsigned int *offsets;
	unsigned long total = 0, n = 0, i;
	int *errors = NULL, error = 0, ret;
	LIST_HEAD(prepared);

	offsets = kvmalloc_array(OKP_COVER_MAX_BLOCKS, sizeof(*offsets),
				 GFP_KERNEL);
	if (!offsets)
		return -ENOMEM;
	for (i = 0; i < named; i++) {
		function = okp_cover_prepare(&prepared, addresses[i], reach,
					     offsets, &ret);
		if (!function) {
			error = error ?: ret;
			if (ret != -EEXIST)
				okp_cover_refused(addresses[i], ret);
			continue;
		}
		list_add_tail(&function->node, &prepared);
		total += function->count;
	}
	kvfree(offsets);
	if (!total)
		return error;
	probes = kvmalloc_array(total, sizeof(*probes), GFP_KERNEL);
	errors = kvmalloc_array(total, sizeof(*errors), GFP_KERNEL);
	whys = kvmalloc_array(total, sizeof(*whys), GFP_KERNEL);
	if (!probes || !errors || !whys) {
		/* Nothing registered yet: the prepared go as they came. */
		list_for_each_entry_safe(function, next_function, &prepared, node)
			okp_cover_free(function);
		error = -ENOMEM;
		goto out;
	}
	list_for_each_entry(function, &prepared, node)
		for (i = 0; i < function->count; i++)
			probes[n++] = &function->blocks[i].probe;
	okp_probes_register_each(probes, total, errors, whys);
	/* Settled: the duplicates (at most one a function) reuse probes. */
	n = 0;
	i = 0;
	list_for_each_entry(function, &prepared, node) {
		okp_cover_settle(function, errors + i, whys + i, probes, &n);
		i += function->count;
	}
	if (n)
		okprobe_unregister_many(probes, n);
	list_splice_tail(&prepared, &okp_cover_functions);
out:
	kvfree(probes);
	kvfree(errors);
	kvfree(whys);
	return error;
}

static void okp_cover_clear(void)
{
	struct okp_cover_refusal *refusal, *next;

	okp_cover_remove_all(&okp_cover_functions);
	list_for_each_entry_safe(refusal, next, &okp_cover_refusals, node)
		kfree(refusal);
	INIT_LIST_HEAD(&okp_cover_refusals);
	okp_cover_refusal_count = 0;
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
	struct okp_cover_refusal *refusal;
	struct okp_cover_function *function;
	unsigned long long *hits;
	unsigned int i, reached, listed;

	hits = kvmalloc_array(OKP_COVER_MAX_BLOCKS, sizeof(*hits), GFP_KERNEL);
	if (!hits)
		return -ENOMEM;
	mutex_lock(&okp_cover_mutex);
	list_for_each_entry(refusal, &okp_cover_refusals, node)
		seq_printf(m, "refused 0x%016lx %pS: %s (%d)\n", refusal->address,
			   (void *)refusal->address,
			   okp_cover_refusal_why(refusal->error),
			   refusal->error);
	if (okp_cover_refusal_count > OKP_COVER_MAX_REFUSALS)
		seq_printf(m, "refused %u more\n",
			   okp_cover_refusal_count - OKP_COVER_MAX_REFUSALS);
	list_for_each_entry(function, &okp_cover_functions, node) {
		/* Each count read once: the header agrees with the lines. */
		reached = 0;
		listed = 0;
		for (i = 0; i < function->count; i++) {
			const struct okp_cover_block *block =
				&function->blocks[i];

			hits[i] = 0;
			if (block->same_block)
				continue;
			listed++;
			if (okp_cover_registered(block) && function->reach)
				hits[i] = atomic_read(&block->fired);
			else if (okp_cover_registered(block))
				okprobe_read_count(&function->blocks[i].probe,
						   &hits[i]);
			reached += hits[i] != 0;
		}
		seq_printf(m, "function 0x%016lx %s blocks=%u reached=%u%s\n",
			   function->start, function->name, listed, reached,
			   function->reach ? " reach" : "");
		for (i = 0; i < function->count; i++) {
			struct okp_cover_block *block = &function->blocks[i];
			unsigned long offset =
				(unsigned long)block->probe.addr -
				function->start;

			if (block->same_block)
				continue;
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

/*
 * "add" or "reach" and its addresses into addresses[]: how many, or -EINVAL
 * for a malformed one (then nothing is added).
 */
static int okp_cover_parse(char *list, unsigned long *addresses)
{
	unsigned int named = 0;
	char *token;
	int ret;

	while ((token = strsep(&list, " \t\n"))) {
		if (!*token)
			continue;
		if (named == OKP_COVER_MAX_FUNCTIONS)
			return -EINVAL;
		ret = kstrtoul(token, 0, &addresses[named]);
		if (ret)
			return ret;
		named++;
	}
	return named ? named : -EINVAL;
}

static ssize_t okp_cover_write(struct file *file, const char __user *buffer,
			       size_t count, loff_t *position)
{
	unsigned long *addresses = NULL;
	char *command, *argument;
	bool reach;
	int ret;

	if (count > OKP_COVER_MAX_WRITE)
		return -EINVAL;
	command = memdup_user_nul(buffer, count);
	if (IS_ERR(command))
		return PTR_ERR(command);
	argument = strim(command);
	mutex_lock(&okp_cover_mutex);
	if (!strcmp(argument, "clear")) {
		okp_cover_clear();
		ret = 0;
	} else if (!strncmp(argument, "add ", 4) ||
		   !strncmp(argument, "reach ", 6)) {
		reach = argument[0] == 'r';
		addresses = kmalloc_array(OKP_COVER_MAX_FUNCTIONS,
					  sizeof(*addresses), GFP_KERNEL);
		ret = addresses ? okp_cover_parse(argument + (reach ? 6 : 4),
						  addresses)
				: -ENOMEM;
		if (ret > 0)
			ret = okp_cover_add(addresses, ret, reach);
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&okp_cover_mutex);
	kfree(addresses);
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
