// SPDX-License-Identifier: GPL-2.0
/*
 * What a buggy client can pass to okprobe's API, for every architecture:
 * NULL pointers, structs okprobe does not hold (never registered, copies,
 * unregistered twice, garbage okp_site), unreadable or endless
 * symbol_name strings, and a seeded fuzz loop of malformed structs through
 * every entry point; and every call from where it must not sleep. None
 * may oops the kernel or leave okprobe's mutex held; every errno is one
 * Documentation/api.md lists; a probe registered afterwards still counts
 * every call.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/err.h>
#include <linux/irqflags.h>
#include <linux/kprobes.h>
#include <linux/kernel.h>
#include <linux/prandom.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include <okprobe.h>

#include "okprobe_selftest_common.h"

#define OKP_FUZZ_ROUNDS 300

static atomic_long_t okp_input_hits;

static int okp_input_pre(struct okprobe *probe, struct pt_regs *regs)
{
	atomic_long_inc(&okp_input_hits);
	return 0;
}

static void okp_input_post(struct okprobe *probe, struct pt_regs *regs,
			   unsigned long flags)
{
}

static bool okp_documented_errno(int ret)
{
	return ret == 0 || ret == -EINVAL || ret == -ENOENT ||
	       ret == -EILSEQ || ret == -EPERM || ret == -EBUSY ||
	       ret == -ENOMEM;
}

/* A probe at target + offset counts each of 100 calls. */
static bool okp_still_counts(okp_target_fn target, unsigned long offset,
			     long (*expect)(long a, long b), char *why,
			     size_t size)
{
	struct okprobe *probe = kzalloc(sizeof(*probe), GFP_KERNEL);
	bool ok = false;
	int i, ret;

	if (!probe) {
		snprintf(why, size, "out of memory");
		return false;
	}
	probe->addr = okp_at(target, offset);
	probe->pre_handler = okp_input_pre;
	atomic_long_set(&okp_input_hits, 0);
	ret = okprobe_register(probe);
	if (ret) {
		snprintf(why, size, "a good probe afterwards: %d", ret);
		goto out;
	}
	for (i = 0; i < 100; i++) {
		if (target(i, 1) != expect(i, 1)) {
			snprintf(why, size, "a wrong result afterwards");
			goto unregister;
		}
	}
	ok = atomic_long_read(&okp_input_hits) == 100;
	if (!ok)
		snprintf(why, size, "a good probe afterwards counted %ld of 100",
			 atomic_long_read(&okp_input_hits));
unregister:
	okprobe_unregister(probe);
out:
	kfree(probe);
	return ok;
}

static void okp_test_null_pointers(okp_target_fn target, unsigned long offset,
				   long (*expect)(long a, long b))
{
	struct okprobe *good = kzalloc(sizeof(*good), GFP_KERNEL);
	struct okprobe *batch[3] = { NULL, NULL, NULL };
	char why[160] = "";
	bool ok = false;
	int ret;

	EXPECT(good, "out of memory");
	EXPECT(okprobe_register(NULL) == -EINVAL, "register(NULL)");
	EXPECT(okprobe_register_many(NULL, 2) == -EINVAL,
	       "register_many(NULL, 2)");
	good->addr = okp_at(target, offset);
	good->pre_handler = okp_input_pre;
	batch[0] = good;
	ret = okprobe_register_many(batch, 2);
	EXPECT(ret == -EINVAL, "register_many with a NULL entry: %d", ret);
	EXPECT(!good->okp_site, "a batch with a NULL entry registered some");
	EXPECT(okprobe_register_many(batch, 0) == -EINVAL,
	       "register_many(count 0)");
	EXPECT(okprobe_enable(NULL) == -EINVAL, "enable(NULL)");
	EXPECT(okprobe_disable(NULL) == -EINVAL, "disable(NULL)");
	okprobe_unregister(NULL);
	okprobe_unregister_many(NULL, 3);
	okprobe_unregister_many(batch + 1, 2);
	okprobe_unregister_many(batch, -1);
	ok = okp_still_counts(target, offset, expect, why, sizeof(why));
out:
	okp_report(ok, "NULL pointers anywhere in the API: -EINVAL or ignored, before any lock",
		   why);
	kfree(good);
}

/* Structs okprobe does not hold: copies, twice, garbage okp_site. */
static void okp_test_unknown_structs(okp_target_fn target,
				     unsigned long offset,
				     long (*expect)(long a, long b))
{
	struct okprobe *real = kzalloc(3 * sizeof(*real), GFP_KERNEL);
	struct okprobe *copy = real + 1, *stranger = real + 2;
	void *const garbage[] = { (void *)1, (void *)0xdead000000000000UL,
				  ERR_PTR(-ENOMEM), (void *)&garbage,
				  (void *)target };
	char why[160] = "";
	bool ok = false;
	int i, ret;

	EXPECT(real, "out of memory");
	real->addr = okp_at(target, offset);
	real->pre_handler = okp_input_pre;
	EXPECT(!okprobe_register(real), "the real probe was refused");
	*copy = *real;
	ret = okprobe_register(copy);
	EXPECT(ret == -EINVAL, "registering a copy: %d", ret);
	EXPECT(okprobe_disable(copy) == -EINVAL, "disabling a copy");
	okprobe_unregister(copy);
	EXPECT(!(real->flags & OKPROBE_FLAG_DISABLED) && real->okp_site,
	       "a copy's unregister or disable reached the real probe");
	for (i = 0; i < ARRAY_SIZE(garbage); i++) {
		memset(stranger, 0, sizeof(*stranger));
		stranger->addr = real->addr;
		stranger->pre_handler = okp_input_pre;
		stranger->okp_site = garbage[i];
		ret = okprobe_register(stranger);
		EXPECT(ret == -EINVAL, "registering with okp_site %p: %d",
		       garbage[i], ret);
		EXPECT(okprobe_enable(stranger) == -EINVAL,
		       "enabling with okp_site %p", garbage[i]);
		okprobe_unregister(stranger);
	}
	okprobe_unregister(real);
	okprobe_unregister(real);
	EXPECT(okprobe_enable(real) == -EINVAL, "enabling an unregistered probe");
	/* A struct is reusable once unregistered. */
	ret = okprobe_register(real);
	EXPECT(!ret, "registering it again: %d", ret);
	okprobe_unregister(real);
	ok = okp_still_counts(target, offset, expect, why, sizeof(why));
out:
	okp_report(ok, "copies, double unregisters and garbage okp_site are refused or ignored",
		   why);
	kfree(real);
}

/* symbol_name: unreadable, endless, empty. */
static void okp_test_bad_symbol_names(okp_target_fn target,
				      unsigned long offset,
				      long (*expect)(long a, long b))
{
	struct okprobe *probe = kzalloc(sizeof(*probe), GFP_KERNEL);
	char *endless = kmalloc(PAGE_SIZE, GFP_KERNEL);
	char *edge = vmalloc(PAGE_SIZE);
	const struct {
		const char *name;
		int error;
	} cases[] = {
		{ (const char *)1, -EINVAL },
		{ (const char *)0x400000, -EINVAL },
		{ (const char *)0xdead000000000000UL, -EINVAL },
		{ ERR_PTR(-ENOMEM), -EINVAL },
		{ endless, -EINVAL },
		/* Up to the guard page after a vmalloc'ed one: faults. */
		{ edge ? edge + PAGE_SIZE - 4 : NULL, -EINVAL },
		{ "", -ENOENT },
	};
	char why[160] = "";
	bool ok = false;
	int i, ret;

	EXPECT(probe && endless && edge, "out of memory");
	memset(endless, 'a', PAGE_SIZE);
	memset(edge, 'b', PAGE_SIZE);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(probe, 0, sizeof(*probe));
		probe->symbol_name = cases[i].name;
		probe->pre_handler = okp_input_pre;
		ret = okprobe_register(probe);
		if (!ret)
			okprobe_unregister(probe);
		EXPECT(ret == cases[i].error, "symbol_name %d: %d, expected %d",
		       i, ret, cases[i].error);
	}
	ok = okp_still_counts(target, offset, expect, why, sizeof(why));
out:
	okp_report(ok, "unreadable, endless and empty symbol_name strings are refused",
		   why);
	vfree(edge);
	kfree(endless);
	kfree(probe);
}

static unsigned long okp_random_pointer(struct rnd_state *rnd, void *near)
{
	unsigned long value = ((u64)prandom_u32_state(rnd) << 32) |
			      prandom_u32_state(rnd);

	switch (prandom_u32_state(rnd) % 5) {
	case 0:
		return 0;
	case 1:
		return value;
	case 2:
		return (unsigned long)near + value % 64;
	case 3:
		return (unsigned long)OKP_STRSCPY_FUNCTION + value % 512;
	default:
		return value % PAGE_SIZE;
	}
}

static void okp_test_fuzz(okp_target_fn target, unsigned long offset,
			  long (*expect)(long a, long b))
{
	static const char *const names[] = { "strscpy", "okp_no_such_symbol",
					     "memchr_inv" };
	struct okprobe *probes = kcalloc(2, sizeof(*probes), GFP_KERNEL);
	u32 seed = get_random_u32();
	struct rnd_state rnd;
	char name[128], why[160] = "";
	bool ok = false;
	int round, ret;

	EXPECT(probes, "out of memory");
	prandom_seed_state(&rnd, seed);
	for (round = 0; round < OKP_FUZZ_ROUNDS; round++) {
		struct okprobe *p = &probes[0];
		u32 pick = prandom_u32_state(&rnd);

		memset(p, 0, sizeof(*p));
		p->pre_handler = okp_input_pre;
		p->post_handler = pick & 1 ? okp_input_post : NULL;
		if (pick & 2)
			p->symbol_name = pick & 4 ?
				names[(pick >> 8) % ARRAY_SIZE(names)] :
				(const char *)okp_random_pointer(&rnd, target);
		if (pick & 8)
			p->addr = (void *)okp_random_pointer(&rnd, target);
		if (pick & 16)
			p->offset = okp_random_pointer(&rnd, NULL);
		if (pick & 32)
			p->flags = prandom_u32_state(&rnd) &
				   (pick & 64 ? OKPROBE_FLAG_DISABLED : ~0u);
		if ((pick & 0x300) == 0x300)
			p->okp_site = (void *)okp_random_pointer(&rnd, target);
		ret = okprobe_register(p);
		EXPECT(okp_documented_errno(ret),
		       "round %d: undocumented errno %d", round, ret);
		probes[1] = *p; /* a copy, registered or not */
		okprobe_disable(&probes[1]);
		okprobe_unregister(&probes[1]);
		if (!ret) {
			EXPECT(!okprobe_disable(p) && !okprobe_enable(p),
			       "round %d: enable/disable of a registered probe",
			       round);
		}
		okprobe_unregister(p);
		if (pick & 0x400)
			okprobe_unregister(p);
	}
	ok = okp_still_counts(target, offset, expect, why, sizeof(why));
out:
	snprintf(name, sizeof(name),
		 "%d rounds of malformed structs through every entry point (seed %u)",
		 OKP_FUZZ_ROUNDS, seed);
	okp_report(ok, name, why);
	kfree(probes);
}

/*
 * A handler that calls the probed function itself, the way a client
 * printk()ing from a probe on printk does: the inner hit is missed and its
 * instruction still runs, the outer one's post_handler runs once, after
 * the outer instruction (riscv runs both through one trapping copy).
 */
static okp_target_fn okp_reentered_target;
static long (*okp_reentered_expect)(long a, long b);
static atomic_long_t okp_reentered_pre, okp_reentered_post,
	okp_reentered_wrong;

static int okp_reentering_pre(struct okprobe *probe, struct pt_regs *regs)
{
	long a = atomic_long_inc_return(&okp_reentered_pre);

	if (okp_reentered_target(a, 7) != okp_reentered_expect(a, 7))
		atomic_long_inc(&okp_reentered_wrong);
	return 0;
}

static void okp_reentered_post_handler(struct okprobe *probe,
				       struct pt_regs *regs,
				       unsigned long flags)
{
	atomic_long_inc(&okp_reentered_post);
}

void okp_test_handler_calls_its_function(okp_target_fn target,
					 unsigned long offset,
					 long (*expect)(long a, long b))
{
	struct okprobe *probe = kzalloc(sizeof(*probe), GFP_KERNEL);
	char why[200] = "";
	bool ok = false;
	int i, ret, round;

	EXPECT(probe, "out of memory");
	okp_reentered_target = target;
	okp_reentered_expect = expect;
	for (round = 0; round < 2; round++) {
		memset(probe, 0, sizeof(*probe));
		probe->addr = okp_at(target, offset);
		probe->pre_handler = okp_reentering_pre;
		/* Without a post_handler: the boosted copy; with: trapping. */
		if (round)
			probe->post_handler = okp_reentered_post_handler;
		atomic_long_set(&okp_reentered_pre, 0);
		atomic_long_set(&okp_reentered_post, 0);
		atomic_long_set(&okp_reentered_wrong, 0);
		ret = okprobe_register(probe);
		EXPECT(!ret, "register: %d", ret);
		for (i = 0; i < 1000; i++)
			if (target(i, 3) != expect(i, 3))
				atomic_long_inc(&okp_reentered_wrong);
		okprobe_unregister(probe);
		EXPECT(!atomic_long_read(&okp_reentered_wrong),
		       "round %d: %ld wrong results", round,
		       atomic_long_read(&okp_reentered_wrong));
		EXPECT(atomic_long_read(&okp_reentered_pre) == 1000 &&
		       probe->nmissed == 1000 &&
		       atomic_long_read(&okp_reentered_post) ==
		       (round ? 1000 : 0),
		       "round %d: pre %ld post %ld missed %lu of 1000", round,
		       atomic_long_read(&okp_reentered_pre),
		       atomic_long_read(&okp_reentered_post), probe->nmissed);
	}
	ok = true;
out:
	okp_report(ok, "a handler that calls its own probed function: the inner hit is missed, results and post_handlers exact",
		   why);
	kfree(probe);
}

static int okp_quiet_pre(struct okprobe *probe, struct pt_regs *regs)
{
	return 0;
}

/*
 * What the arch's breakpoint trap path reaches (okp::arch::
 * trap_path_functions) is refused with EPERM; functions it does not reach
 * stay probeable (another rule may still refuse them, EBUSY at an ftrace
 * site, but not EPERM).
 */
void okp_test_trap_path_refused(const char *const *refused,
				size_t refused_count,
				const char *const *allowed,
				size_t allowed_count)
{
	struct okprobe probe;
	char why[200] = "";
	bool ok = false;
	size_t i;
	int ret;

	for (i = 0; i < refused_count + allowed_count; i++) {
		const bool refuse = i < refused_count;
		const char *name = refuse ? refused[i] :
				   allowed[i - refused_count];

		memset(&probe, 0, sizeof(probe));
		probe.symbol_name = name;
		probe.pre_handler = okp_quiet_pre;
		ret = okprobe_register(&probe);
		if (!ret)
			okprobe_unregister(&probe);
		EXPECT(refuse ? ret == -EPERM : ret != -EPERM,
		       "%s: %d", name, ret);
	}
	ok = true;
out:
	okp_report(ok, "what the breakpoint trap path reaches is refused (EPERM), the rest is probeable",
		   why);
}

/*
 * x86's call padding (6.2 and later) puts a __pfx_ symbol of nops before
 * each function: not code, and rewritten by call depth accounting and
 * FineIBT. okprobe refuses it with EINVAL, as kprobes does; where there is
 * none, the symbol is unknown to both.
 */
static void okp_test_padding_symbol(void)
{
	static const char name[] = "__pfx_strscpy";
	struct okprobe *probe = kzalloc(sizeof(*probe), GFP_KERNEL);
	char why[160] = "";
	bool ok = false;
	int ret;

	EXPECT(probe, "out of memory");
	probe->symbol_name = name;
	probe->pre_handler = okp_input_pre;
	ret = okprobe_register(probe);
	if (!ret)
		okprobe_unregister(probe);
	EXPECT(ret == -EINVAL || ret == -ENOENT, "okprobe on %s: %d", name,
	       ret);
#if IS_ENABLED(CONFIG_KPROBES)
	{
		struct kprobe kp = { .symbol_name = name };
		int kernel_ret = register_kprobe(&kp);

		if (!kernel_ret)
			unregister_kprobe(&kp);
		EXPECT(ret == kernel_ret, "%s: okprobe %d, kprobes %d", name,
		       ret, kernel_ret);
	}
#endif
	ok = true;
out:
	okp_report(ok, "a function's padding (__pfx_) is refused with EINVAL, as kprobes refuse it",
		   why);
	kfree(probe);
}

static atomic_t okp_handler_call_ret = ATOMIC_INIT(1);
static DEFINE_SPINLOCK(okp_atomic_test_lock);

/* A handler asks to disable its own probe: refused, the hit goes on. */
static int okp_disabling_pre(struct okprobe *probe, struct pt_regs *regs)
{
	atomic_long_inc(&okp_input_hits);
	atomic_set(&okp_handler_call_ret, okprobe_disable(probe));
	return 0;
}

static int okp_atomic_ret(struct okretprobe_instance *instance,
			  struct pt_regs *regs)
{
	return 0;
}

/*
 * Every call of the API, made where the caller must not sleep: with
 * interrupts off (visible on every kernel), with preemption off and under
 * a spinlock (visible with CONFIG_PREEMPT_COUNT; a PREEMPT_RT spinlock
 * holds rcu_read_lock(), refused as such), inside rcu_read_lock() (a
 * preemptible RCU section), and from a handler. Each is refused before
 * anything sleeps: -EINVAL, the void calls return, and nothing changed:
 * the probes not registered stay so, the registered ones (a probe, and a
 * return probe where the kernel has rethook) stay registered and enabled,
 * the probe counts every call, and both unregister normally afterwards.
 */
static void okp_test_atomic_callers(okp_target_fn target, unsigned long offset,
				    long (*expect)(long a, long b))
{
	struct okprobe *probes = kcalloc(2, sizeof(*probes), GFP_KERNEL);
	struct okretprobe *rps = kcalloc(2, sizeof(*rps), GFP_KERNEL);
	struct okretprobe *rp = rps, *rp_held = rps + 1;
	struct okprobe *registered = probes, *other = probes + 1;
	static const char *const calls[] = {
		"register", "register_many", "disable", "enable", "read_count",
		"okretprobe_register", "okretprobe_register_many",
		"okretprobe_disable", "okretprobe_enable",
	};
	int rets[ARRAY_SIZE(calls)];
	unsigned long long count = 0;
	unsigned long flags;
	char why[160] = "";
	bool ok = false, rp_registered = false;
	int ret, i, context;
	long hits;

	EXPECT(probes && rps, "out of memory");
	registered->addr = okp_at(target, offset);
	registered->pre_handler = okp_input_pre;
	other->addr = okp_at(target, offset);
	other->pre_handler = okp_input_pre;
	rp->kp.addr = okp_at(target, 0);
	rp->handler = okp_atomic_ret;
	ret = okprobe_register(registered);
	EXPECT(!ret, "registering the probe: %d", ret);
	/*
	 * A registered return probe, for its enable, disable and unregister
	 * (EOPNOTSUPP without rethook: riscv 6.1; then those calls meet an
	 * unregistered one, -EINVAL either way).
	 */
	rp_held->kp.addr = okp_at(target, 0);
	rp_held->handler = okp_atomic_ret;
	rp_registered = !okretprobe_register(rp_held);
	for (context = 0; context < 4; context++) {
		struct okprobe *batch[] = { other };
		struct okretprobe *rp_batch[] = { rp };
		const char *where = context == 0 ? "interrupts off" :
				    context == 1 ? "preemption off" :
				    context == 2 ? "a spinlock" :
						   "rcu_read_lock()";

		if ((context == 1 && !IS_ENABLED(CONFIG_PREEMPT_COUNT)) ||
		    (context == 2 && !IS_ENABLED(CONFIG_PREEMPT_COUNT)) ||
		    (context == 3 && !IS_ENABLED(CONFIG_PREEMPT_RCU)))
			continue;
		if (context == 0)
			local_irq_save(flags);
		else if (context == 1)
			preempt_disable();
		else if (context == 2)
			spin_lock(&okp_atomic_test_lock);
		else
			rcu_read_lock();
		rets[0] = okprobe_register(other);
		rets[1] = okprobe_register_many(batch, 1);
		rets[2] = okprobe_disable(registered);
		rets[3] = okprobe_enable(registered);
		rets[4] = okprobe_read_count(registered, &count);
		rets[5] = okretprobe_register(rp);
		rets[6] = okretprobe_register_many(rp_batch, 1);
		rets[7] = okretprobe_disable(rp_held);
		rets[8] = okretprobe_enable(rp_held);
		okprobe_unregister(registered);
		okprobe_unregister_many(&registered, 1);
		okretprobe_unregister(rp_held);
		okretprobe_unregister_many(&rp_held, 1);
		if (context == 0)
			local_irq_restore(flags);
		else if (context == 1)
			preempt_enable();
		else if (context == 2)
			spin_unlock(&okp_atomic_test_lock);
		else
			rcu_read_unlock();
		for (i = 0; i < ARRAY_SIZE(calls); i++)
			EXPECT(rets[i] == -EINVAL, "%s with %s: %d", calls[i],
			       where, rets[i]);
		EXPECT(!other->okp_site, "register with %s registered it",
		       where);
		EXPECT(!rp->okp_private, "okretprobe_register with %s registered it",
		       where);
		if (rp_registered) {
			/* Still registered and enabled: these succeed. */
			ret = okretprobe_disable(rp_held);
			EXPECT(!ret, "the return probe after %s: disable %d",
			       where, ret);
			ret = okretprobe_enable(rp_held);
			EXPECT(!ret, "the return probe after %s: enable %d",
			       where, ret);
		}
		atomic_long_set(&okp_input_hits, 0);
		for (i = 0; i < 10; i++)
			EXPECT(target(i, 1) == expect(i, 1),
			       "a wrong result after %s", where);
		hits = atomic_long_read(&okp_input_hits);
		EXPECT(hits == 10,
		       "after unregister with %s the probe counted %ld of 10",
		       where, hits);
	}
	okprobe_unregister(registered);
	if (rp_registered)
		okretprobe_unregister(rp_held);
	rp_registered = false;
	/* From its own handler (a breakpoint hit: interrupts off). */
	registered->pre_handler = okp_disabling_pre;
	ret = okprobe_register(registered);
	EXPECT(!ret, "registering the disabling probe: %d", ret);
	atomic_long_set(&okp_input_hits, 0);
	for (i = 0; i < 3; i++)
		target(i, 1);
	hits = atomic_long_read(&okp_input_hits);
	okprobe_unregister(registered);
	EXPECT(atomic_read(&okp_handler_call_ret) == -EINVAL,
	       "disable from the probe's handler: %d",
	       atomic_read(&okp_handler_call_ret));
	EXPECT(hits == 3, "after disabling itself the probe counted %ld of 3",
	       hits);
	ok = okp_still_counts(target, offset, expect, why, sizeof(why));
out:
	okp_report(ok, "API calls from atomic context (interrupts or preemption off, a spinlock, rcu_read_lock(), a handler): -EINVAL or ignored, before anything sleeps, nothing changed",
		   why);
	if (!ok && registered && registered->okp_site)
		okprobe_unregister(registered);
	if (rp_registered)
		okretprobe_unregister(rp_held);
	kfree(rps);
	kfree(probes);
}

void okp_test_bad_input(okp_target_fn target, unsigned long offset,
			long (*expect)(long a, long b))
{
	okp_test_atomic_callers(target, offset, expect);
	okp_test_padding_symbol();
	okp_test_null_pointers(target, offset, expect);
	okp_test_unknown_structs(target, offset, expect);
	okp_test_bad_symbol_names(target, offset, expect);
	okp_test_fuzz(target, offset, expect);
}
