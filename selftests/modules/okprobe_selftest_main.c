// SPDX-License-Identifier: GPL-2.0
/*
 * In-kernel tests of okprobe's x86-64 breakpoint probes.
 *
 * The probe targets are written in assembly so the instruction at each
 * probed offset is known. Each test registers probes, calls its target with
 * known inputs, and checks the hit count, the registers the handler saw and
 * the target's result. The tests run at load; their TAP lines are read from
 * /sys/kernel/debug/okprobe_selftest/results by the guest's okptest.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/kernel.h>
#include <linux/linkage.h>
#include <linux/module.h>
#include <linux/ptrace.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include <okprobe.h>

#include "okprobe_selftest.h"

/* ---- Handlers ------------------------------------------------------------ */

struct okp_probe_record {
	struct okprobe probe;
	atomic_t pre_hits, post_hits;
	long seen_di, seen_si, seen_ax_after;
	unsigned long seen_ip;
	int redirect_to_return;		/* pre_handler skips the instruction */
	unsigned long redirect_ip;
};

static int okp_record_pre(struct okprobe *probe, struct pt_regs *regs)
{
	struct okp_probe_record *r =
		container_of(probe, struct okp_probe_record, probe);

	atomic_inc(&r->pre_hits);
	r->seen_di = regs->di;
	r->seen_si = regs->si;
	r->seen_ip = regs->ip;
	if (r->redirect_to_return) {
		regs->ax = 42;
		regs->ip = r->redirect_ip;
		return 1;
	}
	return 0;
}

static void okp_record_post(struct okprobe *probe, struct pt_regs *regs,
			    unsigned long flags)
{
	struct okp_probe_record *r =
		container_of(probe, struct okp_probe_record, probe);

	atomic_inc(&r->post_hits);
	r->seen_ax_after = regs->ax;
}

/* ---- Test bookkeeping ------------------------------------------------------ */

static char *okp_results;
static size_t okp_results_used;
static int okp_test_number;

static void okp_report(bool ok, const char *name, const char *why)
{
	okp_results_used += scnprintf(okp_results + okp_results_used,
				      PAGE_SIZE * 4 - okp_results_used,
				      "%sok %d %s%s%s\n", ok ? "" : "not ",
				      ++okp_test_number, name,
				      ok ? "" : " # ", ok ? "" : why);
}

#define EXPECT(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			snprintf(why, sizeof(why), __VA_ARGS__);	\
			goto out;					\
		}							\
	} while (0)

typedef long (*okp_target_fn)(long a, long b);

/* The NO_RESULT cases check their results in okp_test_emulated_results. */
#define NO_RESULT LONG_MIN

struct okp_case {
	const char *name;
	okp_target_fn target;
	unsigned long offset;
	long a, b;
	long expected;		/* for a; each call adds 1 to a and to it */
	bool post;
};

/* Probe, call 100 times, check counts, registers and results. */
static void okp_run_case(const struct okp_case *c)
{
	struct okp_probe_record *r = kzalloc(sizeof(*r), GFP_KERNEL);
	char why[160] = "";
	bool ok = false;
	long result;
	int ret, i;

	if (!r) {
		okp_report(false, c->name, "out of memory");
		return;
	}
	r->probe.addr = (void *)c->target + c->offset;
	r->probe.pre_handler = okp_record_pre;
	if (c->post)
		r->probe.post_handler = okp_record_post;
	ret = okprobe_register(&r->probe);
	EXPECT(ret == 0, "register failed: %d", ret);
	for (i = 0; i < 100; i++) {
		result = c->target(c->a + i, c->b);
		EXPECT(c->expected == NO_RESULT || result == c->expected + i,
		       "call %d returned %ld, expected %ld", i, result,
		       c->expected + i);
	}
	okprobe_unregister(&r->probe);
	EXPECT(atomic_read(&r->pre_hits) == 100, "pre_handler ran %d times",
	       atomic_read(&r->pre_hits));
	EXPECT(!c->post || atomic_read(&r->post_hits) == 100,
	       "post_handler ran %d times", atomic_read(&r->post_hits));
	EXPECT(r->seen_di == c->a + 99 && r->seen_si == c->b,
	       "handler saw di=%ld si=%ld", r->seen_di, r->seen_si);
	EXPECT(r->seen_ip == (unsigned long)c->target + c->offset + 1,
	       "handler saw ip %lx, expected probe address + 1",
	       r->seen_ip);
	/* After unregistering, calls run the original and count nothing. */
	c->target(c->a, c->b);
	EXPECT(atomic_read(&r->pre_hits) == 100, "hit after unregister");
	ok = true;
out:
	if (!ok && r->probe.okp_site)
		okprobe_unregister(&r->probe);
	okp_report(ok, c->name, why);
	kfree(r);
}

static const struct okp_case okp_cases[] = {
	/* name, target, offset, a, b, expected result, post_handler */
	{ "mov copied out of line", okp_target_add, 0, 1, 2, 3, false },
	{ "add copied, with post_handler", okp_target_add, 3, 1, 2, 3, true },
	{ "rip-relative load rebased", okp_target_rip, 0, 1, 0,
	  0x5a5a1234 + 1, false },
	{ "jcc not taken (emulated)", okp_target_jcc, 4, 1, 0, NO_RESULT, false },
	{ "call rel32 (emulated)", okp_target_call, 0, 0, 5, NO_RESULT, true },
	{ "return thunk jump (emulated ret)", okp_target_ret, 3, 0, 7,
	  NO_RESULT, true },
	{ "push copied", okp_target_push_pop, 0, 10, 3, 7, false },
	{ "pop copied, with post_handler", okp_target_push_pop, 1, 10, 3, 7,
	  true },
	{ "pushf (emulated)", okp_target_pushf, 0, 0, 0, NO_RESULT, true },
	{ "lea with displacement copied", okp_target_lea_imm, 0, 1, 2,
	  1 + 0x10 + 6, false },
	{ "imul with immediate copied", okp_target_lea_imm, 4, 1, 2,
	  1 + 0x10 + 6, true },
};

/* Also the test of "ftrace call site": a C function starts with one. */
static noinline void okp_test_fixed_results(void)
{
	char why[160] = "";
	bool ok = false;

	EXPECT(okp_target_jcc(0, 0) == 2 && okp_target_jcc(3, 0) == 1,
	       "jcc target returned %ld/%ld unprobed", okp_target_jcc(0, 0),
	       okp_target_jcc(3, 0));
	EXPECT(okp_target_call(4, 1) == 9, "call target returned %ld",
	       okp_target_call(4, 1));
	EXPECT(okp_target_ret(0, 7) == 7, "ret target returned %ld",
	       okp_target_ret(0, 7));
	ok = true;
out:
	okp_report(ok, "targets compute their results unprobed", why);
}

/* jcc both ways, call and ret through their probes, checking results. */
static void okp_test_emulated_results(void)
{
	struct okp_probe_record *jcc = kzalloc(sizeof(*jcc), GFP_KERNEL);
	struct okp_probe_record *call = kzalloc(sizeof(*call), GFP_KERNEL);
	struct okp_probe_record *ret = kzalloc(sizeof(*ret), GFP_KERNEL);
	char why[160] = "";
	bool ok = false;

	EXPECT(jcc && call && ret, "out of memory");
	jcc->probe.addr = (void *)okp_target_jcc + 4;
	jcc->probe.pre_handler = okp_record_pre;
	call->probe.addr = (void *)okp_target_call;
	call->probe.pre_handler = okp_record_pre;
	call->probe.post_handler = okp_record_post;
	ret->probe.addr = (void *)okp_target_ret + 3;
	ret->probe.pre_handler = okp_record_pre;
	EXPECT(!okprobe_register(&jcc->probe) &&
	       !okprobe_register(&call->probe) &&
	       !okprobe_register(&ret->probe), "register failed");
	EXPECT(okp_target_jcc(0, 0) == 2, "jcc taken gave %ld",
	       okp_target_jcc(0, 0));
	EXPECT(okp_target_jcc(9, 0) == 1, "jcc not taken gave %ld",
	       okp_target_jcc(9, 0));
	EXPECT(okp_target_call(4, 1) == 9, "call gave %ld",
	       okp_target_call(4, 1));
	EXPECT(okp_target_ret(0, 7) == 7, "ret gave %ld", okp_target_ret(0, 7));
	/* One call each (the messages' calls run only on failure). */
	EXPECT(atomic_read(&jcc->pre_hits) == 2 &&
	       atomic_read(&call->pre_hits) == 1 &&
	       atomic_read(&call->post_hits) == 1 &&
	       atomic_read(&ret->pre_hits) == 1,
	       "hits jcc %d call %d/%d ret %d", atomic_read(&jcc->pre_hits),
	       atomic_read(&call->pre_hits), atomic_read(&call->post_hits),
	       atomic_read(&ret->pre_hits));
	ok = true;
out:
	if (jcc && jcc->probe.okp_site)
		okprobe_unregister(&jcc->probe);
	if (call && call->probe.okp_site)
		okprobe_unregister(&call->probe);
	if (ret && ret->probe.okp_site)
		okprobe_unregister(&ret->probe);
	okp_report(ok, "jcc both ways, call and ret give the right results",
		   why);
	kfree(jcc);
	kfree(call);
	kfree(ret);
}

/* A pre_handler that moves ip and returns 1 skips the instruction. */
static void okp_test_redirect(void)
{
	struct okp_probe_record *r = kzalloc(sizeof(*r), GFP_KERNEL);
	char why[160] = "";
	bool ok = false;
	long result;

	EXPECT(r, "out of memory");
	r->probe.addr = (void *)okp_target_add;
	r->probe.pre_handler = okp_record_pre;
	r->redirect_to_return = 1;
	r->redirect_ip = (unsigned long)okp_target_add + 6; /* its ret */
	EXPECT(!okprobe_register(&r->probe), "register failed");
	result = okp_target_add(1, 2);
	EXPECT(result == 42, "redirected call returned %ld", result);
	ok = true;
out:
	if (r && r->probe.okp_site)
		okprobe_unregister(&r->probe);
	okp_report(ok, "pre_handler redirect skips the instruction", why);
	kfree(r);
}

/*
 * Two probes on one address share the breakpoint; removing one keeps the
 * other working.
 */
static void okp_test_aggregation(void)
{
	struct okp_probe_record *a = kzalloc(sizeof(*a), GFP_KERNEL);
	struct okp_probe_record *b = kzalloc(sizeof(*b), GFP_KERNEL);
	char why[160] = "";
	bool ok = false;

	EXPECT(a && b, "out of memory");
	a->probe.addr = (void *)okp_target_add + 3;
	a->probe.pre_handler = okp_record_pre;
	b->probe.addr = (void *)okp_target_add + 3;
	b->probe.pre_handler = okp_record_pre;
	b->probe.post_handler = okp_record_post;
	EXPECT(!okprobe_register(&a->probe) && !okprobe_register(&b->probe),
	       "register failed");
	EXPECT(okp_target_add(2, 3) == 5, "wrong result");
	EXPECT(atomic_read(&a->pre_hits) == 1 &&
	       atomic_read(&b->pre_hits) == 1 &&
	       atomic_read(&b->post_hits) == 1, "both must run once");
	okprobe_unregister(&a->probe);
	EXPECT(okp_target_add(2, 3) == 5, "wrong result after removal");
	EXPECT(atomic_read(&a->pre_hits) == 1 &&
	       atomic_read(&b->pre_hits) == 2 &&
	       atomic_read(&b->post_hits) == 2,
	       "after removing one: a %d b %d", atomic_read(&a->pre_hits),
	       atomic_read(&b->pre_hits));
	ok = true;
out:
	if (a && a->probe.okp_site)
		okprobe_unregister(&a->probe);
	if (b && b->probe.okp_site)
		okprobe_unregister(&b->probe);
	okp_report(ok, "two probes on one address; one removed", why);
	kfree(a);
	kfree(b);
}

/* A probe hit inside another probe's handler is missed, not run. */
static struct okp_probe_record *okp_inner;
static long okp_inner_result;

static int okp_outer_pre(struct okprobe *probe, struct pt_regs *regs)
{
	okp_inner_result = okp_target_rip(1, 0);
	return okp_record_pre(probe, regs);
}

static void okp_test_recursion(void)
{
	struct okp_probe_record *outer = kzalloc(sizeof(*outer), GFP_KERNEL);
	char why[160] = "";
	bool ok = false;

	okp_inner = kzalloc(sizeof(*okp_inner), GFP_KERNEL);
	EXPECT(outer && okp_inner, "out of memory");
	outer->probe.addr = (void *)okp_target_add;
	outer->probe.pre_handler = okp_outer_pre;
	okp_inner->probe.addr = (void *)okp_target_rip;
	okp_inner->probe.pre_handler = okp_record_pre;
	EXPECT(!okprobe_register(&outer->probe) &&
	       !okprobe_register(&okp_inner->probe), "register failed");
	EXPECT(okp_target_add(2, 3) == 5, "outer target result");
	EXPECT(okp_inner_result == 0x5a5a1234 + 1,
	       "inner target returned %lx inside the handler",
	       okp_inner_result);
	EXPECT(atomic_read(&outer->pre_hits) == 1 &&
	       atomic_read(&okp_inner->pre_hits) == 0 &&
	       okp_inner->probe.nmissed == 1,
	       "outer %d inner %d nmissed %lu", atomic_read(&outer->pre_hits),
	       atomic_read(&okp_inner->pre_hits), okp_inner->probe.nmissed);
	/* Outside a handler the inner probe runs normally. */
	EXPECT(okp_target_rip(1, 0) == 0x5a5a1234 + 1 &&
	       atomic_read(&okp_inner->pre_hits) == 1, "inner probe alone");
	ok = true;
out:
	if (outer && outer->probe.okp_site)
		okprobe_unregister(&outer->probe);
	if (okp_inner && okp_inner->probe.okp_site)
		okprobe_unregister(&okp_inner->probe);
	okp_report(ok, "a probe hit inside a handler is counted in nmissed",
		   why);
	kfree(outer);
	kfree(okp_inner);
}

/*
 * A second probe later in a function already probed: the boundary walk
 * decodes the original bytes, not okprobe's own int3.
 */
static void okp_test_second_probe_in_function(void)
{
	struct okp_probe_record *first = kzalloc(sizeof(*first), GFP_KERNEL);
	struct okp_probe_record *second = kzalloc(sizeof(*second), GFP_KERNEL);
	char why[160] = "";
	bool ok = false;
	int ret;

	EXPECT(first && second, "out of memory");
	first->probe.addr = (void *)okp_target_overlay;
	first->probe.pre_handler = okp_record_pre;
	second->probe.addr = (void *)okp_target_overlay + 5;
	second->probe.pre_handler = okp_record_pre;
	EXPECT(!okprobe_register(&first->probe), "first register failed");
	ret = okprobe_register(&second->probe);
	EXPECT(ret == 0, "second register returned %d", ret);
	EXPECT(okp_target_overlay(0, 2) == 0xe8 + 2, "result %ld",
	       okp_target_overlay(0, 2));
	EXPECT(atomic_read(&first->pre_hits) == 1 &&
	       atomic_read(&second->pre_hits) == 1, "hits %d/%d",
	       atomic_read(&first->pre_hits), atomic_read(&second->pre_hits));
	ok = true;
out:
	if (first && first->probe.okp_site)
		okprobe_unregister(&first->probe);
	if (second && second->probe.okp_site)
		okprobe_unregister(&second->probe);
	okp_report(ok, "a second probe after a probed instruction registers",
		   why);
	kfree(first);
	kfree(second);
}

/* Registering the same struct twice is refused; the first stays intact. */
static void okp_test_double_registration(void)
{
	struct okp_probe_record *r = kzalloc(sizeof(*r), GFP_KERNEL);
	char why[160] = "";
	bool ok = false;
	int ret;

	EXPECT(r, "out of memory");
	r->probe.addr = (void *)okp_target_add + 3;
	r->probe.pre_handler = okp_record_pre;
	EXPECT(!okprobe_register(&r->probe), "first register failed");
	ret = okprobe_register(&r->probe);
	EXPECT(ret == -EINVAL, "second register returned %d", ret);
	EXPECT(okp_target_add(1, 1) == 2 && atomic_read(&r->pre_hits) == 1,
	       "the first registration broke");
	ok = true;
out:
	if (r && r->probe.okp_site)
		okprobe_unregister(&r->probe);
	okp_report(ok, "registering the same probe twice fails with EINVAL",
		   why);
	kfree(r);
}

/* Bad registrations fail with their errno. */
static void okp_test_bad_registrations(void)
{
	struct {
		const char *what;
		const char *symbol;
		void *addr;
		unsigned long offset;
		bool handler;
		int error;
	} cases[] = {
		{ "no handler", "okp_target_add", NULL, 0, false, -EINVAL },
		{ "unknown symbol", "okp_no_such_symbol", NULL, 0, true,
		  -ENOENT },
		{ "inside an instruction", "okp_target_add", NULL, 1, true,
		  -EILSEQ },
		{ "offset past the function", "okp_target_add", NULL, 0x1000,
		  true, -EINVAL },
		{ "not text", NULL, &okp_target_data, 0, true, -EINVAL },
		{ "okprobe's own code", "okprobe_register", NULL, 0, true,
		  -EPERM },
		{ "ftrace call site", "okp_test_fixed_results", NULL, 0, true,
		  -EBUSY },
		{ "exception-table entry", "okp_target_extable", NULL, 0, true,
		  -EPERM },
	};
	struct okp_probe_record *r = kzalloc(sizeof(*r), GFP_KERNEL);
	char why[160] = "";
	bool ok = false;
	int i, ret;

	EXPECT(r, "out of memory");
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(&r->probe, 0, sizeof(r->probe));
		r->probe.symbol_name = cases[i].symbol;
		r->probe.addr = cases[i].addr;
		r->probe.offset = cases[i].offset;
		if (cases[i].handler)
			r->probe.pre_handler = okp_record_pre;
		ret = okprobe_register(&r->probe);
		if (!ret)
			okprobe_unregister(&r->probe);
		EXPECT(ret == cases[i].error, "%s: got %d, expected %d",
		       cases[i].what, ret, cases[i].error);
	}
	ok = true;
out:
	okp_report(ok, "bad registrations fail with their errno", why);
	kfree(r);
}

/* Stays registered while the module is loaded, for debugfs okprobe/list. */
static struct okp_probe_record okp_resident;

static struct dentry *okp_selftest_dir;

static int okp_results_show(struct seq_file *m, void *unused)
{
	seq_write(m, okp_results, okp_results_used);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(okp_results);

static int __init okp_selftest_init(void)
{
	int i;

	okp_results = kzalloc(PAGE_SIZE * 4, GFP_KERNEL);
	if (!okp_results)
		return -ENOMEM;
	okp_test_fixed_results();
	for (i = 0; i < ARRAY_SIZE(okp_cases); i++)
		okp_run_case(&okp_cases[i]);
	okp_test_emulated_results();
	okp_test_redirect();
	okp_test_aggregation();
	okp_test_bad_registrations();
	okp_test_recursion();
	okp_test_double_registration();
	okp_test_second_probe_in_function();

	okp_resident.probe.addr = (void *)okp_target_add + 3;
	okp_resident.probe.pre_handler = okp_record_pre;
	if (!okprobe_register(&okp_resident.probe))
		for (i = 0; i < 5; i++)
			okp_target_add(i, i);
	okp_selftest_dir = debugfs_create_dir("okprobe_selftest", NULL);
	debugfs_create_file("results", 0400, okp_selftest_dir, NULL,
			    &okp_results_fops);
	return 0;
}

static void __exit okp_selftest_exit(void)
{
	if (okp_resident.probe.okp_site)
		okprobe_unregister(&okp_resident.probe);
	debugfs_remove_recursive(okp_selftest_dir);
	kfree(okp_results);
}

module_init(okp_selftest_init);
module_exit(okp_selftest_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("okprobe in-kernel probe tests (x86-64)");
