// SPDX-License-Identifier: GPL-2.0
/*
 * Coexistence with the kernel's own kprobes (perf probe, bpftrace, BPF
 * kprobe links, kprobe_events, SystemTap all go through them).
 *
 * Neither side can decode through the other's bytes: the kernel proves an
 * instruction boundary by decoding the function from its start through the
 * live text, seeing through its own kprobes only, and okprobe proves its
 * boundaries and jump regions from the original bytes of the functions it
 * has read. So the unit of exclusion is the function:
 *
 *  - okprobe claims a function before its first site there is created:
 *    under kprobe_mutex it looks for a kernel kprobe anywhere in the
 *    function (armed, disabled, or optimized and waiting for the kernel's
 *    optimizer to take its jump out: such a kprobe stays in kprobe_table
 *    until its bytes are gone) and refuses with EBUSY when it finds one.
 *    Kprobes on ftrace (KPROBE_FLAG_FTRACE) patch no byte of their own and
 *    do not count.
 *  - In the same critical section it enters the function into the kernel's
 *    kprobe blacklist (kernel/kprobes.c's kprobe_blacklist, read under RCU
 *    by within_kprobe_blacklist() on every register_kprobe(), shown in
 *    /sys/kernel/debug/kprobes/blacklist), leaving out the function's
 *    ftrace call site so that kprobes on ftrace still work there.
 *  - On x86 a guard kprobe on arch_prepare_kprobe() closes the window the
 *    blacklist leaves: a register_kprobe() that passed its blacklist check
 *    before the claim, and takes kprobe_mutex after it, is refused with
 *    EBUSY from arch_prepare_kprobe() (called under kprobe_mutex, so it and
 *    the claim are serialized).
 *  - The claim is released when okprobe's last site in the function is
 *    retired or its text is gone, after okprobe's bytes have left the text.
 *
 * okprobe's own module text goes into the kernel's blacklist too, for as
 * long as the module is loaded: a kprobe inside okprobe's handlers would
 * recurse into the trap.
 *
 * Locking: claims change under okp_probe_mutex (callers) and kprobe_mutex
 * (here), in that order; the guard reads them under RCU (preemption off in
 * its handler).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/errno.h>
#include <linux/kallsyms.h>
#include <linux/ftrace.h>
#include <linux/hash.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "core/core_api.h"
#include "compat.h"
#include "glue.h"
#include "resolved_calls.h"

#ifdef CONFIG_KPROBES

/* kernel/kprobes.c's KPROBE_TABLE_SIZE (1 << KPROBE_HASH_BITS), 6.1 - 6.12. */
#define OKP_KPROBE_TABLE_SIZE 64

/* A function okprobe has sites in, and its entries in the kernel's list. */
struct okp_claim {
	struct list_head list; /* okp_claims */
	struct hlist_node by_start; /* okp_claims_by_start */
	unsigned long start, end;
	unsigned long users;
	/* Before and after the function's ftrace call site. */
	struct kprobe_blacklist_entry entries[2];
	int entry_count;
	struct rcu_head rcu;
};

static const char okp_kernel_kprobe_why[] =
	"a kernel kprobe (perf, bpftrace, kprobe_events) is in the function";

static LIST_HEAD(okp_claims);
/* The claims again, by function start: claiming must not walk them all. */
#define OKP_CLAIM_HASH_BITS 10
static struct hlist_head okp_claims_by_start[1 << OKP_CLAIM_HASH_BITS];
static struct hlist_head *okp_kprobe_table;
static struct list_head *okp_kprobe_blacklist;
static struct mutex *okp_kprobe_mutex;
/* okprobe's own text in the kernel's blacklist. */
static struct kprobe_blacklist_entry okp_self_entry;
static bool okp_self_listed;

static void okp_blacklist_insert(struct kprobe_blacklist_entry *entry,
				 unsigned long start, unsigned long end)
{
	entry->start_addr = start;
	entry->end_addr = end;
	list_add_tail_rcu(&entry->list, okp_kprobe_blacklist);
}

/* A kernel kprobe that owns bytes in [start, end), or NULL. */
static struct kprobe *okp_kernel_kprobe_within(unsigned long start,
					       unsigned long end)
{
	struct kprobe *p;
	int i;

	lockdep_assert_held(okp_kprobe_mutex);
	for (i = 0; i < OKP_KPROBE_TABLE_SIZE; i++) {
		hlist_for_each_entry(p, &okp_kprobe_table[i], hlist) {
			unsigned long at = (unsigned long)p->addr;

			if (at >= start && at < end &&
			    !(p->flags & (KPROBE_FLAG_FTRACE | KPROBE_FLAG_GONE)))
				return p;
		}
	}
	return NULL;
}

/*
 * The line that names the kernel kprobe okprobe refuses to share with.
 * Once in five seconds for the same kprobe: okprobe-cover's batch asks for
 * every block of a function in a moment, and each is refused for the same
 * one (the refusal's errno and the cover report still say it for each).
 * The writer's mutex (the caller's) guards the last one said.
 */
static void okp_log_kernel_kprobe(void *where)
{
	static void *said_where;
	static unsigned long said_at;

	if (where == said_where && time_before(jiffies, said_at + 5 * HZ))
		return;
	said_where = where;
	said_at = jiffies;
	pr_info("kernel kprobe at %pS: okprobe leaves its function alone\n",
		where);
}

const char *okp_glue_foreign_probe(unsigned long start, unsigned long size)
{
	struct kprobe *theirs;
	void *where = NULL;
	bool leaving;

	if (!okp_kprobe_table)
		return NULL;
	mutex_lock(okp_kprobe_mutex);
	theirs = okp_kernel_kprobe_within(start, start + size);
	leaving = theirs && (theirs->flags & KPROBE_FLAG_DISABLED);
	mutex_unlock(okp_kprobe_mutex);
	/*
	 * An optimized kprobe just unregistered stays in kprobe_table,
	 * disabled, until the kernel's delayed optimizer has taken its jump
	 * out (an operator who removed a kprobe_events line a moment ago
	 * expects the function to be free): let the optimizer finish first.
	 */
	/* Not exported; absent without CONFIG_OPTPROBES. */
	if (leaving && okp_resolved(wait_for_kprobe_optimizer))
		okp_call(wait_for_kprobe_optimizer)();
	/* Its owner may free it once kprobe_mutex is dropped: copy addr. */
	mutex_lock(okp_kprobe_mutex);
	theirs = okp_kernel_kprobe_within(start, start + size);
	if (theirs)
		where = theirs->addr;
	mutex_unlock(okp_kprobe_mutex);
	if (!where)
		return NULL;
	okp_log_kernel_kprobe(where);
	return okp_kernel_kprobe_why;
}

/* Whether entry is one okprobe put on the kernel's list (RCU reader). */
static bool okp_own_entry(const struct kprobe_blacklist_entry *entry)
{
	struct okp_claim *claim;

	if (entry == &okp_self_entry)
		return true;
	list_for_each_entry_rcu(claim, &okp_claims, list)
		if (entry >= claim->entries &&
		    entry < claim->entries + ARRAY_SIZE(claim->entries))
			return true;
	return false;
}

/*
 * The kernel's entries for core kernel text, merged into disjoint ranges
 * sorted by start, taken at load (before okprobe's first claim): they never
 * change after boot (modules list only their own text), while the list
 * grows by two entries per function okprobe claims. Asking the list for
 * every registration made registering n probes O(n^2).
 */
static struct okp_range *okp_core_listed;
static unsigned long okp_core_listed_count;

static int okp_range_order(const void *a, const void *b)
{
	const struct okp_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void okp_snapshot_core_listed(void)
{
	struct kprobe_blacklist_entry *entry;
	unsigned long count = 0, merged = 0, i;
	struct okp_range *ranges;

	lockdep_assert_held(okp_kprobe_mutex);
	list_for_each_entry(entry, okp_kprobe_blacklist, list)
		count += okp_call(core_kernel_text)(entry->start_addr);
	ranges = kvmalloc_array(count ? count : 1, sizeof(*ranges), GFP_KERNEL);
	if (!ranges)
		return; /* the list is walked */
	count = 0;
	list_for_each_entry(entry, okp_kprobe_blacklist, list)
		if (okp_call(core_kernel_text)(entry->start_addr))
			ranges[count++] = (struct okp_range){ entry->start_addr,
							      entry->end_addr };
	sort(ranges, count, sizeof(*ranges), okp_range_order, NULL);
	for (i = 0; i < count; i++) {
		if (merged && ranges[i].start <= ranges[merged - 1].end)
			ranges[merged - 1].end = max(ranges[merged - 1].end,
						     ranges[i].end);
		else
			ranges[merged++] = ranges[i];
	}
	okp_core_listed = ranges;
	okp_core_listed_count = merged;
}

static bool okp_core_range_listed(unsigned long address)
{
	unsigned long low = 0, high = okp_core_listed_count;

	/* The last range starting at or before address. */
	while (low < high) {
		unsigned long middle = low + (high - low) / 2;

		if (okp_core_listed[middle].start <= address)
			low = middle + 1;
		else
			high = middle;
	}
	return low && address < okp_core_listed[low - 1].end;
}

static bool okp_kernel_listed(unsigned long address)
{
	struct kprobe_blacklist_entry *entry;
	bool found = false;

	if (okp_core_listed && okp_call(core_kernel_text)(address))
		return okp_core_range_listed(address);
	rcu_read_lock();
	list_for_each_entry_rcu(entry, okp_kprobe_blacklist, list) {
		if (address >= entry->start_addr && address < entry->end_addr &&
		    !okp_own_entry(entry)) {
			found = true;
			break;
		}
	}
	rcu_read_unlock();
	return found;
}

/*
 * within_kprobe_blacklist() without okprobe's own entries: the kernel's
 * NOKPROBE_SYMBOL()s (and those of modules loaded since), and its rule
 * that foo.cold or foo.isra.0 is refused when foo is.
 */
const char *okp_glue_kernel_blacklisted(unsigned long address)
{
	static const char *const why = "the address is in the kernel's kprobe blacklist";
	struct okp_symbol_facts facts;

	if (!okp_kprobe_blacklist)
		return NULL;
	if (okp_kernel_listed(address))
		return why;
	if (!okp_symbol_facts(address, true, &facts))
		return NULL;
	return facts.dotted_base && okp_kernel_listed(facts.dotted_base) ?
		       why : NULL;
}

static struct hlist_head *okp_claim_bucket(unsigned long start)
{
	return &okp_claims_by_start[hash_long(start, OKP_CLAIM_HASH_BITS)];
}

static struct okp_claim *okp_claim_of(unsigned long start)
{
	struct okp_claim *claim;

	lockdep_assert_held(okp_kprobe_mutex);
	hlist_for_each_entry(claim, okp_claim_bucket(start), by_start)
		if (claim->start == start)
			return claim;
	return NULL;
}

int okp_glue_claim_function(unsigned long start, unsigned long size,
			    const char **why)
{
	unsigned long ftrace_site = 0, ftrace_end;
	struct okp_claim *claim;
	struct kprobe *theirs;
	int ret = 0;

	if (!okp_kprobe_table)
		return 0;
#ifdef CONFIG_DYNAMIC_FTRACE
	if (okp_resolved(ftrace_location))
		ftrace_site = okp_call(ftrace_location)(start);
	ftrace_end = ftrace_site + MCOUNT_INSN_SIZE;
#else
	ftrace_end = 0;
#endif
	claim = kzalloc(sizeof(*claim), GFP_KERNEL);
	mutex_lock(okp_kprobe_mutex);
	theirs = okp_kernel_kprobe_within(start, start + size);
	if (theirs) {
		/* Logged under kprobe_mutex: theirs stays valid meanwhile. */
		*why = okp_kernel_kprobe_why;
		okp_log_kernel_kprobe(theirs->addr);
		ret = -EBUSY;
		goto out;
	}
	if (okp_claim_of(start)) {
		okp_claim_of(start)->users++;
		goto out;
	}
	if (!claim) {
		*why = "out of memory";
		ret = -ENOMEM;
		goto out;
	}
	claim->start = start;
	claim->end = start + size;
	claim->users = 1;
	if (!ftrace_site || ftrace_site < start || ftrace_end > claim->end) {
		okp_blacklist_insert(&claim->entries[0], start, claim->end);
		claim->entry_count = 1;
	} else {
		if (ftrace_site > start)
			okp_blacklist_insert(&claim->entries[claim->entry_count++],
					     start, ftrace_site);
		if (ftrace_end < claim->end)
			okp_blacklist_insert(&claim->entries[claim->entry_count++],
					     ftrace_end, claim->end);
	}
	list_add_tail_rcu(&claim->list, &okp_claims);
	hlist_add_head(&claim->by_start, okp_claim_bucket(start));
	claim = NULL;
out:
	mutex_unlock(okp_kprobe_mutex);
	kfree(claim);
	return ret;
}

void okp_glue_release_function(unsigned long start)
{
	struct okp_claim *claim;
	int i;

	if (!okp_kprobe_table)
		return;
	mutex_lock(okp_kprobe_mutex);
	claim = okp_claim_of(start);
	if (WARN_ON_ONCE(!claim) || --claim->users) {
		mutex_unlock(okp_kprobe_mutex);
		return;
	}
	for (i = 0; i < claim->entry_count; i++)
		list_del_rcu(&claim->entries[i].list);
	list_del_rcu(&claim->list);
	hlist_del(&claim->by_start);
	mutex_unlock(okp_kprobe_mutex);
	/* within_kprobe_blacklist() and the guard read under RCU. */
	kfree_rcu(claim, rcu);
}

/* Whether address lies in a function okprobe has claimed (RCU reader). */
bool okp_kernel_kprobes_claimed(unsigned long address)
{
	struct okp_claim *claim;
	bool found = false;

	rcu_read_lock();
	list_for_each_entry_rcu(claim, &okp_claims, list) {
		if (address >= claim->start && address < claim->end) {
			found = true;
			break;
		}
	}
	rcu_read_unlock();
	return found;
}

int okp_kernel_kprobes_init(void)
{
	struct okp_range text = okp_module_text(THIS_MODULE);
	unsigned long table = okp_ksyms_resolve_optional("kprobe_table");
	unsigned long size = 0, offset = 0;

	okp_kprobe_blacklist = (void *)okp_ksyms_resolve_optional("kprobe_blacklist");
	okp_kprobe_mutex = (void *)okp_ksyms_resolve_optional("kprobe_mutex");
	/* The table's symbol must be as large as the table we walk. */
	if (table &&
	    (!okp_call(kallsyms_lookup_size_offset)(table, &size, &offset) ||
	     offset ||
	     size < OKP_KPROBE_TABLE_SIZE * sizeof(struct hlist_head)))
		table = 0;
	if (!table || !okp_kprobe_blacklist || !okp_kprobe_mutex) {
		pr_err("cannot find the kernel's kprobe_table, kprobe_blacklist or kprobe_mutex: okprobe could not keep out of the kernel's kprobes\n");
		return -ENOENT;
	}
	mutex_lock(okp_kprobe_mutex);
	okp_snapshot_core_listed();
	okp_blacklist_insert(&okp_self_entry, text.start, text.end);
	okp_self_listed = true;
	mutex_unlock(okp_kprobe_mutex);
	okp_kprobe_table = (void *)table;
	okp_arch_guard_init();
	return 0;
}

void okp_kernel_kprobes_exit(void)
{
	okp_arch_guard_exit();
	if (!okp_self_listed)
		return;
	mutex_lock(okp_kprobe_mutex);
	list_del_rcu(&okp_self_entry.list);
	mutex_unlock(okp_kprobe_mutex);
	kvfree(okp_core_listed);
	okp_core_listed = NULL;
	okp_core_listed_count = 0;
	okp_self_listed = false;
	okp_kprobe_table = NULL;
	/* The entry is in this module's memory; claims left use kfree_rcu. */
	synchronize_rcu();
}

#else /* !CONFIG_KPROBES: nobody else plants kprobes */

const char *okp_glue_foreign_probe(unsigned long start, unsigned long size)
{
	return NULL;
}

const char *okp_glue_kernel_blacklisted(unsigned long address)
{
	return NULL;
}

int okp_glue_claim_function(unsigned long start, unsigned long size,
			    const char **why)
{
	return 0;
}

void okp_glue_release_function(unsigned long start)
{
}

bool okp_kernel_kprobes_claimed(unsigned long address)
{
	return false;
}

int okp_kernel_kprobes_init(void)
{
	return 0;
}

void okp_kernel_kprobes_exit(void)
{
}

#endif
