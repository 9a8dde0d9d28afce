// SPDX-License-Identifier: GPL-2.0
/*
 * Lifecycle cases written once for every architecture: each arch's
 * selftest passes its own targets (functions, probed offsets and what
 * they return).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/ptrace.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include <okprobe.h>

#include "okprobe_selftest_common.h"

/* Allocates a probe at target's address with okp_count_pre; NULL: none. */
static struct okp_counted_probe *
okp_counted_alloc(const struct okp_cycle_target *target)
{
	struct okp_counted_probe *p = kzalloc(sizeof(*p), GFP_KERNEL);

	if (!p)
		return NULL;
	p->probe.addr = okp_at(target->target, target->offset);
	p->probe.pre_handler = okp_count_pre;
	if (copy_from_kernel_nofault(p->original, p->probe.addr,
				     OKP_TEXT_BYTES)) {
		kfree(p);
		return NULL;
	}
	return p;
}

/* Unregisters p's probe (a no-op when it is not registered), frees it. */
static void okp_counted_free(struct okp_counted_probe *p)
{
	if (p)
		okprobe_unregister(&p->probe);
	kfree(p);
}

static void *okp_target_address(const struct okp_cycle_target *target)
{
	return okp_at(target->target, target->offset);
}

/* Whether the target returns what it should for (a, b). */
static bool okp_target_right(const struct okp_cycle_target *target, long a,
			     long b)
{
	return target->target(a, b) == target->expect(a, b);
}

/* Whether the text at p's address is what it was before registering. */
static bool okp_text_restored(const struct okp_counted_probe *p)
{
	u8 now[OKP_TEXT_BYTES];

	return !copy_from_kernel_nofault(now, p->probe.addr, sizeof(now)) &&
	       !memcmp(now, p->original, sizeof(now));
}

/*
 * okprobe_register_many() is all or nothing: a batch with a bad probe
 * (inside an instruction) leaves none registered and no breakpoint; a
 * good batch registers all, each hit once per call;
 * okprobe_unregister_many() removes all and restores the text byte for
 * byte. good: three targets at distinct addresses.
 */
void okp_test_register_many(const struct okp_cycle_target *good,
			    void *inside_instruction)
{
	struct okp_counted_probe *p = kcalloc(4, sizeof(*p), GFP_KERNEL);
	struct okprobe *batch[4];
	char why[200] = "";
	bool ok = false;
	int i, ret;

	EXPECT(p, "out of memory");
	for (i = 0; i < 4; i++) {
		p[i].probe.addr = i < 3 ? okp_target_address(&good[i]) :
					  inside_instruction;
		p[i].probe.pre_handler = okp_count_pre;
		batch[i] = &p[i].probe;
	}
	for (i = 0; i < 4; i++)
		EXPECT(!copy_from_kernel_nofault(p[i].original, p[i].probe.addr,
						 OKP_TEXT_BYTES),
		       "cannot read the text at %pS", p[i].probe.addr);
	ret = okprobe_register_many(batch, 4);
	EXPECT(ret == -EILSEQ, "a batch with a bad probe gave %d", ret);
	for (i = 0; i < 3; i++) {
		EXPECT(!p[i].probe.okp_site && okp_text_restored(&p[i]),
		       "a failed batch left %pS registered or patched",
		       p[i].probe.addr);
		EXPECT(okp_target_right(&good[i], 1, 2) &&
		       !atomic_read(&p[i].hits),
		       "after a failed batch %pS: wrong result or %d hits",
		       p[i].probe.addr, atomic_read(&p[i].hits));
	}
	ret = okprobe_register_many(batch, 3);
	EXPECT(ret == 0, "a good batch gave %d", ret);
	for (i = 0; i < 3; i++)
		EXPECT(okp_target_right(&good[i], 1, 2) &&
		       atomic_read(&p[i].hits) == 1,
		       "%pS in the batch: wrong result or %d hits",
		       p[i].probe.addr, atomic_read(&p[i].hits));
	okprobe_unregister_many(batch, 3);
	for (i = 0; i < 3; i++) {
		EXPECT(!p[i].probe.okp_site && okp_text_restored(&p[i]),
		       "unregister_many left %pS registered or patched",
		       p[i].probe.addr);
		EXPECT(okp_target_right(&good[i], 1, 2) &&
		       atomic_read(&p[i].hits) == 1,
		       "%pS after unregister_many: wrong result or %d hits",
		       p[i].probe.addr, atomic_read(&p[i].hits));
	}
	ok = true;
out:
	if (p)
		okprobe_unregister_many(batch, 4);
	okp_report(ok, "register_many all or nothing, unregister_many", why);
	kfree(p);
}

static const struct okp_cycle_target *okp_inner_target;
static long okp_inner_result;

/* Calls the inner probe's target from inside the outer probe's handler. */
static int okp_outer_pre(struct okprobe *probe, struct pt_regs *regs)
{
	okp_inner_result = okp_inner_target->target(1, 2);
	return okp_count_pre(probe, regs);
}

/*
 * A probe hit inside another probe's handler runs no handler and counts
 * in its nmissed, as kprobes do; the function still returns its result.
 */
void okp_test_recursion(const struct okp_cycle_target *outer_target,
			const struct okp_cycle_target *inner_target)
{
	struct okp_counted_probe *outer = kzalloc(sizeof(*outer), GFP_KERNEL);
	struct okp_counted_probe *inner = kzalloc(sizeof(*inner), GFP_KERNEL);
	bool outer_registered = false, inner_registered = false;
	char why[200] = "";
	bool ok = false;

	EXPECT(outer && inner, "out of memory");
	okp_inner_target = inner_target;
	outer->probe.addr = okp_target_address(outer_target);
	outer->probe.pre_handler = okp_outer_pre;
	inner->probe.addr = okp_target_address(inner_target);
	inner->probe.pre_handler = okp_count_pre;
	outer_registered = !okprobe_register(&outer->probe);
	inner_registered = !okprobe_register(&inner->probe);
	EXPECT(outer_registered && inner_registered, "register failed");
	EXPECT(okp_target_right(outer_target, 2, 3), "outer target result");
	EXPECT(okp_inner_result == inner_target->expect(1, 2),
	       "the inner target returned %ld inside the handler",
	       okp_inner_result);
	EXPECT(atomic_read(&outer->hits) == 1 &&
	       atomic_read(&inner->hits) == 0 && inner->probe.nmissed == 1,
	       "outer %d inner %d nmissed %lu", atomic_read(&outer->hits),
	       atomic_read(&inner->hits), inner->probe.nmissed);
	/* Outside a handler the inner probe runs normally. */
	EXPECT(okp_target_right(inner_target, 1, 2) &&
	       atomic_read(&inner->hits) == 1, "inner probe alone: %d hits",
	       atomic_read(&inner->hits));
	ok = true;
out:
	if (outer_registered)
		okprobe_unregister(&outer->probe);
	if (inner_registered)
		okprobe_unregister(&inner->probe);
	okp_report(ok, "a probe hit inside a handler is counted in nmissed",
		   why);
	kfree(outer);
	kfree(inner);
}

/* Counts two hits a call: a handler put in place of okp_count_pre. */
static int okp_count_pre_twice(struct okprobe *probe, struct pt_regs *regs)
{
	okp_count_pre(probe, regs);
	return okp_count_pre(probe, regs);
}

/* Calls the target n times; whether every result was right. */
static bool okp_target_calls(const struct okp_cycle_target *target, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!okp_target_right(target, i, 2))
			return false;
	return true;
}

/*
 * An optimized site while its probes change under it: x86's detour calls
 * a sole probe's pre_handler itself and checks at every hit that it still
 * may (src/core/direct_hit.hpp); whatever changed, each hit must run
 * exactly the handlers a breakpoint hit would. A hit inside the outer
 * probe's handler (both optimized) is missed; a second probe at the
 * address, the first removed, the second disabled and enabled again, its
 * pre_handler replaced, are each counted exactly.
 */
void okp_test_optimized_probe_changes(const struct okp_cycle_target *target,
				      const struct okp_cycle_target *outer_target)
{
	struct okp_counted_probe *a = okp_counted_alloc(target);
	struct okp_counted_probe *b = okp_counted_alloc(target);
	struct okp_counted_probe *c = okp_counted_alloc(target);
	struct okp_counted_probe *outer = okp_counted_alloc(outer_target);
	char why[200] = "";
	bool ok = false;

	EXPECT(a && b && c && outer, "out of memory");
	EXPECT(!okprobe_register(&a->probe), "register a failed");
	EXPECT(okp_wait_optimized(&a->probe, true), "a never optimized");
	EXPECT(okp_target_calls(target, 100) && atomic_read(&a->hits) == 100,
	       "a alone: %d hits of 100", atomic_read(&a->hits));

	/* A hit inside another optimized probe's handler. */
	outer->probe.pre_handler = okp_outer_pre;
	okp_inner_target = target;
	EXPECT(!okprobe_register(&outer->probe), "register outer failed");
	EXPECT(okp_wait_optimized(&outer->probe, true),
	       "outer never optimized");
	EXPECT(okp_target_right(outer_target, 2, 3) &&
	       okp_inner_result == target->expect(1, 2),
	       "wrong results with the outer probe");
	EXPECT(atomic_read(&outer->hits) == 1 && atomic_read(&a->hits) == 100 &&
	       a->probe.nmissed == 1,
	       "outer %d, inner %d hits and %lu missed",
	       atomic_read(&outer->hits), atomic_read(&a->hits),
	       a->probe.nmissed);
	okprobe_unregister(&outer->probe);

	/* A second probe at the address: both run. */
	EXPECT(!okprobe_register(&b->probe), "register b failed");
	EXPECT(okp_wait_optimized(&b->probe, true), "a and b not optimized");
	EXPECT(okp_target_calls(target, 100) && atomic_read(&a->hits) == 200 &&
	       atomic_read(&b->hits) == 100,
	       "a and b: %d and %d hits", atomic_read(&a->hits),
	       atomic_read(&b->hits));

	/* The first removed: the second alone. */
	okprobe_unregister(&a->probe);
	EXPECT(okp_target_calls(target, 100) && atomic_read(&a->hits) == 200 &&
	       atomic_read(&b->hits) == 200,
	       "b alone: a %d, b %d hits", atomic_read(&a->hits),
	       atomic_read(&b->hits));

	/* Disabled, then enabled (optimized again, a new detour). */
	EXPECT(!okprobe_disable(&b->probe), "disable b failed");
	EXPECT(okp_target_calls(target, 100) && atomic_read(&b->hits) == 200,
	       "disabled b ran: %d hits", atomic_read(&b->hits));
	EXPECT(!okprobe_enable(&b->probe), "enable b failed");
	EXPECT(okp_wait_optimized(&b->probe, true), "b never optimized again");
	EXPECT(okp_target_calls(target, 100) && atomic_read(&b->hits) == 300,
	       "enabled b: %d hits", atomic_read(&b->hits));

	/* Its pre_handler replaced: the new one runs. */
	WRITE_ONCE(b->probe.pre_handler, okp_count_pre_twice);
	EXPECT(okp_target_calls(target, 100) && atomic_read(&b->hits) == 500,
	       "replaced handler: %d hits", atomic_read(&b->hits));
	okprobe_unregister(&b->probe);
	EXPECT(okp_text_restored(b), "the text is not restored");

	/* The same on a site that has had one probe only (x86: direct). */
	EXPECT(!okprobe_register(&c->probe), "register c failed");
	EXPECT(okp_wait_optimized(&c->probe, true), "c never optimized");
	EXPECT(okp_target_calls(target, 100) && atomic_read(&c->hits) == 100,
	       "c: %d hits", atomic_read(&c->hits));
	WRITE_ONCE(c->probe.pre_handler, okp_count_pre_twice);
	EXPECT(okp_target_calls(target, 100) && atomic_read(&c->hits) == 300,
	       "c's replaced handler: %d hits", atomic_read(&c->hits));
	okprobe_unregister(&c->probe);
	EXPECT(okp_text_restored(c), "the text is not restored after c");
	ok = true;
out:
	okp_report(ok, "an optimized site's probes added, removed, disabled, replaced; a nested hit missed",
		   why);
	okp_counted_free(a);
	okp_counted_free(b);
	okp_counted_free(c);
	okp_counted_free(outer);
}

/* A pre_handler that moves the instruction pointer and returns 1 skips. */
void okp_test_redirect(const struct okp_cycle_target *target,
		       unsigned long return_offset)
{
	struct okp_counted_probe *p = okp_counted_alloc(target);
	char why[200] = "";
	bool ok = false;
	long result;

	EXPECT(p, "out of memory");
	p->probe.post_handler = okp_count_post;
	p->redirect_to = (unsigned long)okp_at(target->target, return_offset);
	EXPECT(!okprobe_register(&p->probe), "register failed");
	result = target->target(1, 2);
	EXPECT(result == 42, "redirected call returned %ld", result);
	EXPECT(atomic_read(&p->hits) == 1 && !atomic_read(&p->post_hits),
	       "pre_handler ran %d times, post_handler %d",
	       atomic_read(&p->hits), atomic_read(&p->post_hits));
	ok = true;
out:
	okp_report(ok, "pre_handler redirect skips the instruction", why);
	okp_counted_free(p);
}

/*
 * Two probes on one address share the breakpoint and both run; removing
 * one keeps the other working.
 */
void okp_test_aggregation(const struct okp_cycle_target *target)
{
	struct okp_counted_probe *a = okp_counted_alloc(target);
	struct okp_counted_probe *b = okp_counted_alloc(target);
	char why[200] = "";
	bool ok = false;

	EXPECT(a && b, "out of memory");
	b->probe.post_handler = okp_count_post;
	EXPECT(!okprobe_register(&a->probe) && !okprobe_register(&b->probe),
	       "register failed");
	EXPECT(okp_target_right(target, 2, 3), "wrong result");
	EXPECT(atomic_read(&a->hits) == 1 && atomic_read(&b->hits) == 1 &&
	       atomic_read(&b->post_hits) == 1, "both must run once");
	okprobe_unregister(&a->probe);
	EXPECT(okp_target_right(target, 2, 3), "wrong result after removal");
	EXPECT(atomic_read(&a->hits) == 1 && atomic_read(&b->hits) == 2 &&
	       atomic_read(&b->post_hits) == 2,
	       "after removing one: a %d b %d/%d", atomic_read(&a->hits),
	       atomic_read(&b->hits), atomic_read(&b->post_hits));
	okprobe_unregister(&b->probe);
	EXPECT(okp_text_restored(b), "the text is not restored");
	ok = true;
out:
	okp_report(ok, "two probes on one address; one removed", why);
	okp_counted_free(a);
	okp_counted_free(b);
}

/* Registering the same struct twice is refused; the first stays intact. */
void okp_test_double_registration(const struct okp_cycle_target *target)
{
	struct okp_counted_probe *p = okp_counted_alloc(target);
	char why[200] = "";
	bool ok = false;
	int ret;

	EXPECT(p, "out of memory");
	EXPECT(!okprobe_register(&p->probe), "first register failed");
	ret = okprobe_register(&p->probe);
	EXPECT(ret == -EINVAL, "second register returned %d", ret);
	EXPECT(okp_target_right(target, 1, 1) && atomic_read(&p->hits) == 1,
	       "the first registration broke");
	ok = true;
out:
	okp_report(ok, "registering the same probe twice fails with EINVAL",
		   why);
	okp_counted_free(p);
}

/*
 * Disabling stops the handlers and takes the breakpoint out; enabling
 * puts both back; enable and disable of an unregistered probe fail.
 */
void okp_test_enable_disable(const struct okp_cycle_target *target,
			     bool (*is_breakpoint)(void *address))
{
	struct okp_counted_probe *p = okp_counted_alloc(target);
	char why[200] = "";
	bool ok = false;
	int ret;

	EXPECT(p, "out of memory");
	ret = okprobe_disable(&p->probe);
	EXPECT(ret == -EINVAL, "disabling an unregistered probe gave %d", ret);
	EXPECT(!okprobe_register(&p->probe), "register failed");
	EXPECT(is_breakpoint(p->probe.addr), "no breakpoint after registering");
	EXPECT(okp_target_right(target, 1, 2) && atomic_read(&p->hits) == 1,
	       "enabled probe did not run once");
	EXPECT(!okprobe_disable(&p->probe), "disable failed");
	EXPECT(p->probe.flags & OKPROBE_FLAG_DISABLED, "flag not set");
	EXPECT(okp_text_restored(p), "a disabled probe left its breakpoint");
	EXPECT(okp_target_right(target, 1, 2) && atomic_read(&p->hits) == 1,
	       "disabled probe ran");
	EXPECT(!okprobe_enable(&p->probe), "enable failed");
	EXPECT(!(p->probe.flags & OKPROBE_FLAG_DISABLED), "flag still set");
	EXPECT(is_breakpoint(p->probe.addr), "no breakpoint after enabling");
	EXPECT(okp_target_right(target, 1, 2) && atomic_read(&p->hits) == 2,
	       "re-enabled probe did not run");
	okprobe_unregister(&p->probe);
	EXPECT(okp_text_restored(p), "breakpoint left after unregister");
	ret = okprobe_enable(&p->probe);
	EXPECT(ret == -EINVAL, "enabling an unregistered probe gave %d", ret);
	ok = true;
out:
	okp_report(ok, "disable removes the breakpoint and stops handlers; enable restores them",
		   why);
	okp_counted_free(p);
}

/*
 * Registered with OKPROBE_FLAG_DISABLED: not armed. Aggregated with an
 * enabled probe, the breakpoint stays until both are disabled.
 */
void okp_test_disabled_aggregate(const struct okp_cycle_target *target,
				 bool (*is_breakpoint)(void *address))
{
	struct okp_counted_probe *a = okp_counted_alloc(target);
	struct okp_counted_probe *b = okp_counted_alloc(target);
	char why[200] = "";
	bool ok = false;

	EXPECT(a && b, "out of memory");
	a->probe.flags = OKPROBE_FLAG_DISABLED;
	b->probe.post_handler = okp_count_post;
	EXPECT(!okprobe_register(&a->probe), "register disabled failed");
	EXPECT(okp_text_restored(a), "a disabled probe armed");
	EXPECT(!okprobe_register(&b->probe), "register b failed");
	EXPECT(is_breakpoint(b->probe.addr), "b did not arm");
	EXPECT(okp_target_right(target, 1, 2), "wrong result");
	EXPECT(atomic_read(&a->hits) == 0 && atomic_read(&b->hits) == 1 &&
	       atomic_read(&b->post_hits) == 1, "hits a %d b %d/%d",
	       atomic_read(&a->hits), atomic_read(&b->hits),
	       atomic_read(&b->post_hits));
	EXPECT(!okprobe_disable(&b->probe), "disable b failed");
	EXPECT(okp_text_restored(b), "breakpoint left with both disabled");
	EXPECT(!okprobe_enable(&a->probe), "enable a failed");
	EXPECT(okp_target_right(target, 1, 2), "wrong result");
	EXPECT(atomic_read(&a->hits) == 1 && atomic_read(&b->hits) == 1,
	       "hits a %d b %d", atomic_read(&a->hits), atomic_read(&b->hits));
	ok = true;
out:
	okp_report(ok, "registered disabled; aggregate armed while one is enabled",
		   why);
	okp_counted_free(a);
	okp_counted_free(b);
}

/* Registers c; true when it failed with c->error (left in *error). */
static bool okp_bad_registration_refused(struct okp_counted_probe *p,
					 const struct okp_bad_registration *c,
					 int *error)
{
	memset(&p->probe, 0, sizeof(p->probe));
	p->probe.symbol_name = c->symbol;
	p->probe.addr = c->addr;
	p->probe.offset = c->offset;
	if (c->handler)
		p->probe.pre_handler = okp_count_pre;
	*error = okprobe_register(&p->probe);
	if (!*error)
		okprobe_unregister(&p->probe);
	return *error == c->error;
}

/*
 * Every bad registration fails with its errno: the arch-neutral ones on
 * target (a probeable function named target_symbol), then the arch's own
 * (an instruction class it refuses, someone else's breakpoint, ...).
 */
void okp_test_bad_registrations(const char *target_symbol, void *target,
				const struct okp_bad_registration *arch_cases,
				size_t count)
{
	const struct okp_bad_registration everywhere[] = {
		{ "no handler", target_symbol, NULL, 0, false, -EINVAL },
		{ "unknown symbol", "okp_no_such_symbol", NULL, 0, true,
		  -ENOENT },
		/*
		 * Past its end is the next function's (register_kprobe());
		 * past the end of the address space nobody's.
		 */
		{ "offset that wraps around", target_symbol, NULL,
		  ~0UL - 0xfff, true, -ENOENT },
		{ "both symbol and address", target_symbol, target, 0, true,
		  -EINVAL },
		{ "okprobe's own code", "okprobe_register", NULL, 0, true,
		  -EPERM },
		{ "init text after boot", "start_kernel", NULL, 0, true,
		  -EPERM },
	};
	struct okp_counted_probe *p = kzalloc(sizeof(*p), GFP_KERNEL);
	const struct okp_bad_registration *c;
	char why[200] = "";
	bool ok = false;
	int i, error;

	EXPECT(p, "out of memory");
	for (i = 0; i < ARRAY_SIZE(everywhere) + count; i++) {
		c = i < ARRAY_SIZE(everywhere) ?
			    &everywhere[i] :
			    &arch_cases[i - ARRAY_SIZE(everywhere)];
		EXPECT(c->symbol || c->addr, "%s: no address", c->what);
		EXPECT(okp_bad_registration_refused(p, c, &error),
		       "%s: got %d, expected %d", c->what, error, c->error);
	}
	ok = true;
out:
	okp_report(ok, "bad registrations fail with their errno", why);
	kfree(p);
}

/* One churn step on a probe: register, disable, enable, unregister. */
static int okp_churn(struct okprobe *p, unsigned long round)
{
	switch (round % 4) {
	case 0:
		p->flags = 0;
		return okprobe_register(p);
	case 1:
		return okprobe_disable(p);
	case 2:
		return okprobe_enable(p);
	default:
		okprobe_unregister(p);
		return 0;
	}
}

/*
 * Every CPU calls the targets, each with a steady probe, while this
 * thread registers, disables, enables and unregisters a probe with a
 * post_handler at the first target's address (so the site switches
 * between its boosted and trapping copies under the hits) and a probe at
 * neighbour, another instruction of the first target. Until at least
 * min_calls rounds of calls and min_rounds churn steps: every steady
 * probe counts every call, exactly, and the churned probe runs both
 * handlers or neither.
 */
/* One step of both churned probes (context); the hammers then run. */
static int okp_churn_step(struct okp_counted_probe *steady, unsigned long n,
			  void *context)
{
	struct okp_counted_probe *churn = context;
	int i, error = 0;

	for (i = 0; i < 2 && !error; i++)
		error = okp_churn(&churn[i].probe, n);
	/* Let the hammers hit each state: registered, disabled, ... */
	usleep_range(100, 200);
	return error;
}

void okp_test_concurrency(const struct okp_cycle_target *targets,
			  size_t count, void *neighbour, long min_calls,
			  unsigned long min_rounds)
{
	struct okp_counted_probe *churn = kcalloc(2, sizeof(*churn),
						  GFP_KERNEL);
	char why[200] = "";
	bool ok = false;
	long calls = 0;
	int i;

	EXPECT(churn, "out of memory");
	churn[0].probe.addr = okp_target_address(&targets[0]);
	churn[1].probe.addr = neighbour;
	for (i = 0; i < 2; i++) {
		churn[i].probe.pre_handler = okp_count_pre;
		churn[i].probe.post_handler = okp_count_post;
	}
	ok = okp_hammer_steady(targets, count, min_calls, min_rounds,
			       okp_churn_step, churn, &calls, why,
			       sizeof(why));
	for (i = 0; i < 2; i++)
		okprobe_unregister(&churn[i].probe);
	if (!ok)
		goto out;
	ok = false;
	for (i = 0; i < 2; i++) {
		EXPECT(atomic_read(&churn[i].post_hits) ==
			       atomic_read(&churn[i].hits) &&
		       atomic_read(&churn[i].hits) <= calls,
		       "churned probe at %pS: pre %d post %d of %ld calls",
		       churn[i].probe.addr, atomic_read(&churn[i].hits),
		       atomic_read(&churn[i].post_hits), calls);
	}
	pr_info("concurrency: %ld calls on %u CPUs, churned probes hit %d and %d times\n",
		calls, num_online_cpus(), atomic_read(&churn[0].hits),
		atomic_read(&churn[1].hits));
	ok = true;
out:
	okp_report(ok, "every CPU calls probed targets while probes at and next to one churn",
		   why);
	kfree(churn);
}

/*
 * Once optimized, a pre_handler's change of the instruction pointer is
 * ignored (the displaced instructions run) while its other register
 * changes are kept: the probe sets the return value to 42 and asks to
 * continue at return_offset. Called with (1, 2), a breakpoint hit returns
 * 42 and an optimized one optimized_result.
 */
void okp_test_optimized_redirect_ignored(const struct okp_cycle_target *target,
					 unsigned long return_offset,
					 long optimized_result)
{
	struct okp_counted_probe *p = okp_counted_alloc(target);
	char why[200] = "";
	bool ok = false;
	long result;

	EXPECT(p, "out of memory");
	p->redirect_to = (unsigned long)okp_at(target->target, return_offset);
	EXPECT(!okprobe_register(&p->probe), "register failed");
	EXPECT(okp_wait_optimized(&p->probe, true), "never optimized");
	result = target->target(1, 2);
	EXPECT(result == optimized_result, "returned %ld, not %ld", result,
	       optimized_result);
	EXPECT(!okp_write_sysctl("0"), "sysctl write failed");
	EXPECT(!okp_optimized(&p->probe), "optimized with the sysctl at 0");
	result = target->target(1, 2);
	EXPECT(result == 42, "as a breakpoint returned %ld, not 42", result);
	ok = true;
out:
	okp_write_sysctl("1");
	okp_report(ok, "optimized: a redirect of the instruction pointer is ignored, other registers kept",
		   why);
	okp_counted_free(p);
}
