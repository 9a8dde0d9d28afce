// SPDX-License-Identifier: GPL-2.0
/*
 * Lifecycle cases written once for every architecture: each arch's
 * selftest passes its own targets (functions, probed offsets and what
 * they return).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include <okprobe.h>

#include "okprobe_selftest_common.h"

/* The bytes compared to prove the text is restored. */
#define OKP_TEXT_BYTES 4

struct okp_counted_probe {
	struct okprobe probe;
	atomic_t hits;
	u8 original[OKP_TEXT_BYTES];
};

static int okp_count_pre(struct okprobe *probe, struct pt_regs *regs)
{
	struct okp_counted_probe *p =
		container_of(probe, struct okp_counted_probe, probe);

	atomic_inc(&p->hits);
	return 0;
}

static void *okp_target_address(const struct okp_cycle_target *target)
{
	return (void *)target->target + target->offset;
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
