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

#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/jump_label.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/linkage.h>
#include <linux/module.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/static_call.h>
#include <linux/uaccess.h>

#include <okprobe.h>

#include "okprobe_selftest.h"
#include "okprobe_selftest_common.h"

/* ---- Handlers ------------------------------------------------------------ */

struct okp_probe_record {
	struct okprobe probe;
	atomic_t pre_hits, post_hits;
	long seen_di, seen_si, seen_ax_after;
	unsigned long seen_ip;
};

static int okp_record_pre(struct okprobe *probe, struct pt_regs *regs)
{
	struct okp_probe_record *r =
		container_of(probe, struct okp_probe_record, probe);

	atomic_inc(&r->pre_hits);
	r->seen_di = regs->di;
	r->seen_si = regs->si;
	r->seen_ip = regs->ip;
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

/* Counts nothing: for probes that only need to be there. */
static int okp_record_pre_count(struct okprobe *probe, struct pt_regs *regs)
{
	return 0;
}

/* The byte at address: 0xcc while a breakpoint is armed there. */
static u8 okp_text_byte(void *address)
{
	u8 byte = 0;

	if (copy_from_kernel_nofault(&byte, address, 1))
		return 0;
	return byte;
}

/*
 * Unregisters the record's probe (a no-op when it is not registered) and
 * frees it; NULL is fine.
 */
static void okp_record_free(struct okp_probe_record *r)
{
	if (r)
		okprobe_unregister(&r->probe);
	kfree(r);
}

/* ---- Test cases ----------------------------------------------------------- */

/* The NO_RESULT cases check their results in okp_test_emulated_results. */
#define NO_RESULT LONG_MIN

struct okp_case {
	const char *name;
	okp_target_fn target;
	unsigned long offset;
	long a, b;
	long expected;		/* for a; each call adds 1 to a and to it */
	bool post;
	int result_step;	/* how much the result grows per call: 0 = 1 */
	bool args_moved;	/* di/si no longer hold a/b at the probe */
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
	r->probe.addr = okp_at(c->target, c->offset);
	r->probe.pre_handler = okp_record_pre;
	if (c->post)
		r->probe.post_handler = okp_record_post;
	ret = okprobe_register(&r->probe);
	EXPECT(ret == 0, "register failed: %d", ret);
	for (i = 0; i < 100; i++) {
		long step = c->result_step ?: 1;

		result = c->target(c->a + i, c->b);
		EXPECT(c->expected == NO_RESULT ||
		       result == c->expected + step * i,
		       "call %d returned %ld, expected %ld", i, result,
		       c->expected + step * i);
	}
	okprobe_unregister(&r->probe);
	EXPECT(atomic_read(&r->pre_hits) == 100, "pre_handler ran %d times",
	       atomic_read(&r->pre_hits));
	EXPECT(!c->post || atomic_read(&r->post_hits) == 100,
	       "post_handler ran %d times", atomic_read(&r->post_hits));
	EXPECT(c->args_moved || (r->seen_di == c->a + 99 && r->seen_si == c->b),
	       "handler saw di=%ld si=%ld", r->seen_di, r->seen_si);
	EXPECT(r->seen_ip == (unsigned long)okp_at(c->target, c->offset) + 1,
	       "handler saw ip %lx, expected probe address + 1",
	       r->seen_ip);
	/* After unregistering, calls run the original and count nothing. */
	c->target(c->a, c->b);
	EXPECT(atomic_read(&r->pre_hits) == 100, "hit after unregister");
	ok = true;
out:
	okp_report(ok, c->name, why);
	okp_record_free(r);
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
	{ "rip-relative store rebased", okp_target_rip_store, 0, 1, 2,
	  1 + 0x10 + 2, false },
	{ "rip-relative with immediate rebased", okp_target_rip_store, 7, 1,
	  2, 1 + 0x10 + 2, true },
	{ "jmp rel8 (emulated)", okp_target_jmp, 3, 5, 6, 11, false },
	{ "jmp rel32 (emulated)", okp_target_jmp, 11, 5, 6, 11, true },
	{ "popf (emulated)", okp_target_popf, 1, 3, 4, 7, true },
	{ "string op (movsq) copied", okp_target_string, 10, 3, 0, 6, false,
	  2, true },
	{ "immediate and displacement copied", okp_target_imm_disp, 5, 1, 2,
	  1 + 0x1234 + 2, true },
};

/*
 * Also the test of "inside an ftrace call site": a C function starts with
 * one (its entry itself is okprobe_selftest_entry.c's).
 */
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
	/*
	 * The thunk jump, or the ret the loader made of it: where objtool
	 * runs on the linked module (IBT kernels) it lists this file's
	 * return sites too, and without a return-thunk mitigation (QEMU
	 * TCG's CPU) the loader rewrites them into ret (c3 cc ...).
	 */
	EXPECT(okp_text_byte(okp_at(okp_target_ret, 3)) == 0xe9 ||
	       okp_text_byte(okp_at(okp_target_ret, 3)) == 0xc3,
	       "okp_target_ret+3 is %02x, neither the return thunk jump nor ret",
	       okp_text_byte(okp_at(okp_target_ret, 3)));
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
	jcc->probe.addr = okp_at(okp_target_jcc, 4);
	jcc->probe.pre_handler = okp_record_pre;
	call->probe.addr = okp_at(okp_target_call, 0);
	call->probe.pre_handler = okp_record_pre;
	call->probe.post_handler = okp_record_post;
	ret->probe.addr = okp_at(okp_target_ret, 3);
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
	okp_report(ok, "jcc both ways, call and ret give the right results",
		   why);
	okp_record_free(jcc);
	okp_record_free(call);
	okp_record_free(ret);
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
	first->probe.addr = okp_at(okp_target_overlay, 0);
	first->probe.pre_handler = okp_record_pre;
	second->probe.addr = okp_at(okp_target_overlay, 5);
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
	okp_report(ok, "a second probe after a probed instruction registers",
		   why);
	okp_record_free(first);
	okp_record_free(second);
}

/* A jump label site of this module, for the bad registrations. */
static DEFINE_STATIC_KEY_FALSE(okp_test_key);
/* The key of okp_target_static_jump's jump label; never enabled. */
DEFINE_STATIC_KEY_FALSE(okp_target_jump_key);

static noinline int okp_jump_label_user(void)
{
	return static_branch_unlikely(&okp_test_key) ? 1 : 0;
}

static void *okp_jump_label_site(void)
{
	okp_jump_label_user();
	if (!THIS_MODULE->num_jump_entries)
		return NULL;
	return (void *)jump_entry_code(&THIS_MODULE->jump_entries[0]);
}

/* What only x86 refuses (okp_test_bad_registrations adds the rest). */
static void okp_test_x86_bad_registrations(void)
{
	/* Symbol offsets count the entry pad too. */
	const unsigned long pad = okp_entry_pad(okp_target_add);
	const struct okp_bad_registration cases[] = {
		{ "inside an instruction", "okp_target_add", NULL, pad + 1,
		  true, -EILSEQ },
		{ "not text", NULL, &okp_target_data, 0, true, -EINVAL },
		{ "inside an ftrace call site", "okp_test_fixed_results", NULL,
		  okp_entry_pad(okp_test_fixed_results) + 2, true, -EILSEQ },
		{ "exception-table entry", "okp_target_extable", NULL, 0, true,
		  -EPERM },
		{ "ud2 (BUG site)", "okp_target_refused", NULL, pad + 5, true,
		  -EPERM },
		{ "someone else's int3", "okp_target_refused", NULL, pad + 12,
		  true, -EBUSY },
		{ "NOKPROBE_SYMBOL", "notify_die", NULL, 0, true, -EPERM },
		{ "entry text", "entry_SYSCALL_64", NULL, 0, true, -EPERM },
		{ "jump label site", NULL, okp_jump_label_site(), 0, true,
		  -EBUSY },
	};

	okp_test_bad_registrations("okp_target_add", okp_target_add,
				   cases, ARRAY_SIZE(cases));
}

/*
 * The core kernel's static call table, from /proc/kallsyms (okptest
 * passes __start_static_call_sites and __stop_static_call_sites).
 */
static unsigned long core_static_call_sites, core_static_call_sites_end;
module_param(core_static_call_sites, ulong, 0444);
module_param(core_static_call_sites_end, ulong, 0444);

/* A static call site of this module: the kernel keeps its own table. */
static int okp_static_call_target(int value)
{
	return value + 1;
}
DEFINE_STATIC_CALL(okp_test_call, okp_static_call_target);

static noinline int okp_static_call_user(int value)
{
	return static_call(okp_test_call)(value);
}

static unsigned long okp_static_call_address(const struct static_call_site *site)
{
	return (long)site->addr + (long)&site->addr;
}

static bool okp_static_call_is_init(const struct static_call_site *site)
{
	return ((long)site->key + (long)&site->key) & STATIC_CALL_SITE_INIT;
}

/*
 * No static call site can be probed: the kernel rewrites it (a call, a
 * nop or a ret) under text_mutex whenever its target changes. okprobe
 * answers core sites from its own sorted copy of the table and asks the
 * kernel for a module's; both must refuse. A core site may also be
 * refused for its section (EPERM), never taken.
 */
static void okp_test_static_call_sites(void)
{
	const struct static_call_site *site =
		(const void *)core_static_call_sites;
	const struct static_call_site *end =
		(const void *)core_static_call_sites_end;
	struct okp_probe_record *r = kzalloc(sizeof(*r), GFP_KERNEL);
	char why[160] = "";
	bool ok = false;
	int tried = 0, busy = 0, ret;

	EXPECT(r, "out of memory");
	EXPECT(site && end > site,
	       "no core static call table passed (core_static_call_sites=)");
	EXPECT(okp_static_call_user(1) == 2, "the static call did not run");
	EXPECT(THIS_MODULE->num_static_call_sites > 0,
	       "this module has no static call site");
	r->probe.addr = (void *)okp_static_call_address(
		&THIS_MODULE->static_call_sites[0]);
	r->probe.pre_handler = okp_record_pre;
	ret = okprobe_register(&r->probe);
	if (!ret)
		okprobe_unregister(&r->probe);
	EXPECT(ret == -EBUSY, "this module's static call site %pS: got %d",
	       r->probe.addr, ret);
	for (; site < end && tried < 64; site++) {
		if (okp_static_call_is_init(site))
			continue;
		memset(&r->probe, 0, sizeof(r->probe));
		r->probe.addr = (void *)okp_static_call_address(site);
		r->probe.pre_handler = okp_record_pre;
		ret = okprobe_register(&r->probe);
		if (!ret)
			okprobe_unregister(&r->probe);
		EXPECT(ret == -EBUSY || ret == -EPERM,
		       "core static call site %pS: got %d", r->probe.addr,
		       ret);
		busy += ret == -EBUSY;
		tried++;
	}
	EXPECT(busy > 0, "none of %d core static call sites was refused as one",
	       tried);
	ok = true;
out:
	okp_report(ok, "static call sites of the kernel and of a module are refused",
		   why);
	okp_record_free(r);
}

/* The post_handler sees the registers the probed instruction left. */
static void okp_test_post_handler_regs(void)
{
	struct okp_probe_record *r = kzalloc(sizeof(*r), GFP_KERNEL);
	char why[160] = "";
	bool ok = false;

	EXPECT(r, "out of memory");
	r->probe.addr = okp_at(okp_target_add, 3); /* add %rsi, %rax */
	r->probe.post_handler = okp_record_post;
	EXPECT(!okprobe_register(&r->probe), "register failed");
	EXPECT(okp_target_add(20, 22) == 42, "wrong result");
	EXPECT(atomic_read(&r->post_hits) == 1 && r->seen_ax_after == 42,
	       "post_handler ran %d times, saw ax %ld",
	       atomic_read(&r->post_hits), r->seen_ax_after);
	ok = true;
out:
	okp_report(ok, "a post_handler alone sees the instruction's result",
		   why);
	okp_record_free(r);
}

/* The concurrency test: calls on all CPUs and churn steps, at least. */
#define OKP_HAMMER_HITS 1000000
#define OKP_CHURN_ROUNDS 40

/* ---- Jump optimization ------------------------------------------------------ */

struct okp_jump_case {
	const char *name;
	okp_target_fn target;
	unsigned long offset;
	long a, b;
	bool fixed_a;		/* a is a pointer: every call passes it as is */
	bool args_moved;	/* di/si no longer hold a/b at the probe */
	/* Must stay a breakpoint (okptest checks why in debugfs jumps). */
	bool refused;
};

static long okp_extable_word = 77;

static const struct okp_jump_case okp_jump_cases[] = {
	{ "add; ret", okp_target_add, 3, 1, 2 },
	{ "rip-relative load", okp_target_rip, 0, 1, 0 },
	{ "jcc taken and not taken, relocated", okp_target_jcc, 4, -50, 0 },
	{ "call rel32, relocated", okp_target_call, 0, 0, 5 },
	{ "mov; jmp __x86_return_thunk", okp_target_ret, 0, 0, 7 },
	{ "push, pop, sub", okp_target_push_pop, 0, 10, 3 },
	{ "popf", okp_target_popf, 1, 3, 4 },
	{ "lea, imul", okp_target_lea_imm, 0, 1, 2 },
	{ "rip-relative store", okp_target_rip_store, 0, 1, 2 },
	{ "rip-relative with immediate", okp_target_rip_store, 7, 1, 2 },
	{ "jmp rel32, relocated", okp_target_jmp, 11, 5, 6 },
	{ "movsq", okp_target_string, 10, 3, 0, false, true },
	{ "immediate and displacement", okp_target_imm_disp, 5, 1, 2 },
	{ "a branch into the jump: stays a breakpoint", okp_target_jmp, 3, 5,
	  6, false, false, true },
	{ "an exception-table entry in the function: stays a breakpoint",
	  (okp_target_fn)(void *)okp_target_extable, 3,
	  (long)&okp_extable_word, 0, true, true, true },
	{ "an indirect jump in the function: stays a breakpoint",
	  okp_target_indirect, 0, 1, 2, false, false, true },
	{ "a disabled jump label that would jump into it: stays a breakpoint",
	  okp_target_static_jump, 0, 1, 2, false, false, true },
};

#define OKP_JUMP_CALLS 100

/*
 * The probe reaches [OPTIMIZED] (or, refused, is still a breakpoint once a
 * probe registered after it is optimized), then counts every call with
 * unchanged results; unregistering restores the text.
 */
static void okp_run_jump_case(const struct okp_jump_case *c)
{
	struct okp_probe_record *r = kzalloc(sizeof(*r), GFP_KERNEL);
	struct okp_probe_record *control = kzalloc(sizeof(*r), GFP_KERNEL);
	long *expected = kcalloc(OKP_JUMP_CALLS, sizeof(long), GFP_KERNEL);
	void *address = okp_at(c->target, c->offset);
	u8 original[5], now[5];
	char why[160] = "";
	bool ok = false;
	int ret, i;

	EXPECT(r && control && expected, "out of memory");
	EXPECT(!copy_from_kernel_nofault(original, address, 5), "unreadable");
	for (i = 0; i < OKP_JUMP_CALLS; i++)
		expected[i] = c->target(c->a + (c->fixed_a ? 0 : i), c->b);
	r->probe.addr = address;
	r->probe.pre_handler = okp_record_pre;
	ret = okprobe_register(&r->probe);
	EXPECT(ret == 0, "register failed: %d", ret);
	if (c->refused) {
		/* The optimizer has run over it once this one is optimized. */
		control->probe.addr = okp_at(okp_target_rip, 0);
		control->probe.pre_handler = okp_record_pre;
		EXPECT(!okprobe_register(&control->probe), "control failed");
		EXPECT(okp_wait_optimized(&control->probe, true),
		       "the control probe never optimized");
		EXPECT(!okp_optimized(&r->probe), "optimized");
		EXPECT(okp_text_byte(address) == 0xcc, "no breakpoint");
	} else {
		EXPECT(okp_wait_optimized(&r->probe, true), "never optimized");
		EXPECT(okp_text_byte(address) == 0xe9, "text %02x, not a jmp",
		       okp_text_byte(address));
	}
	for (i = 0; i < OKP_JUMP_CALLS; i++) {
		long result = c->target(c->a + (c->fixed_a ? 0 : i), c->b);

		EXPECT(result == expected[i], "call %d returned %ld, not %ld",
		       i, result, expected[i]);
	}
	EXPECT(atomic_read(&r->pre_hits) == OKP_JUMP_CALLS,
	       "pre_handler ran %d times", atomic_read(&r->pre_hits));
	EXPECT(r->seen_ip == (unsigned long)address + 1,
	       "handler saw ip %lx, not the address + 1", r->seen_ip);
	EXPECT(c->args_moved || (r->seen_di == c->a + OKP_JUMP_CALLS - 1 &&
				 r->seen_si == c->b),
	       "handler saw di=%ld si=%ld", r->seen_di, r->seen_si);
	EXPECT(c->refused != okp_optimized(&r->probe),
	       "optimized changed during the calls");
	okprobe_unregister(&r->probe);
	EXPECT(!okp_optimized(&r->probe), "still flagged optimized");
	EXPECT(!copy_from_kernel_nofault(now, address, 5) &&
	       !memcmp(now, original, 5), "the text is not restored");
	ok = true;
out:
	okp_report(ok, c->name, why);
	okp_record_free(r);
	okp_record_free(control);
	kfree(expected);
}

static bool okp_is_int3(void *address)
{
	return okp_text_byte(address) == 0xcc;
}

/* What the hammered targets return, computed independently. */
static long okp_expect_add(long a, long b)
{
	return a + b;
}

static long okp_expect_rip(long a, long b)
{
	return okp_target_data + a;
}

static long okp_expect_jcc(long a, long b)
{
	return a == 0 ? 2 : 1;
}

static long okp_expect_call(long a, long b)
{
	return 2 * a + b;
}

static long okp_expect_ret(long a, long b)
{
	return b;
}

static long okp_expect_push_pop(long a, long b)
{
	return a - b;
}

static long okp_expect_lea_imm(long a, long b)
{
	return a + 0x10 + 3 * b;
}

static long okp_expect_string(long a, long b)
{
	return 2 * a;
}

static long okp_expect_imm_disp(long a, long b)
{
	return a + 0x1234 + b;
}

/* The targets the cycle test keeps optimized, one steady probe each. */
static long okp_expect_split(long a, long b)
{
	return b ? a + b : a + 1;
}

/* okp_test_register_many's three, okp_test_recursion's outer and inner. */
static const struct okp_cycle_target okp_lifecycle_targets[] = {
	{ okp_target_add, 0, okp_expect_add },
	{ okp_target_rip, 0, okp_expect_rip },
	{ okp_target_push_pop, 1, okp_expect_push_pop },
};

static const struct okp_cycle_target okp_cycle_targets[] = {
	{ okp_target_add, 3, okp_expect_add },
	{ okp_target_rip, 0, okp_expect_rip },
	{ okp_target_jcc, 4, okp_expect_jcc },
	{ okp_target_call, 0, okp_expect_call },
	{ okp_target_ret, 0, okp_expect_ret },
	{ okp_target_push_pop, 0, okp_expect_push_pop },
	{ okp_target_lea_imm, 0, okp_expect_lea_imm },
	{ okp_target_jmp, 11, okp_expect_add },
	{ okp_target_popf, 1, okp_expect_add },
	{ okp_target_string, 10, okp_expect_string },
	{ okp_target_imm_disp, 5, okp_expect_imm_disp },
};

/* ---- Next to the kernel's kprobes --------------------------------------- */

static bool okp_call_coexist(void *function, long a)
{
	return okp_target_coexist(a, 1) == a + 1 + 0xe9cc;
}

static bool okp_call_push_pop(void *function, long a)
{
	return okp_target_push_pop(a, 1) == a - 1;
}

/* Jump regions at +0: +0..+9 for both optimizers; +12 lies outside. */
static const struct okp_coexist_target okp_coexist_target = {
	.function = okp_target_coexist, .at = 0, .inside = 3, .other = 12,
	.call = okp_call_coexist, .exclusive = true, .optimizable = true,
};

static const struct okp_coexist_target okp_coexist_other = {
	.function = okp_target_push_pop, .at = 0, .inside = 1, .other = 2,
	.call = okp_call_push_pop, .exclusive = true, .optimizable = true,
};

/*
 * The assembly targets' entry pad (endbr64 under IBT, else 0): okptest
 * adds it to the offsets it looks for in debugfs okprobe/list and jumps.
 */
static unsigned long entry_pad;
module_param(entry_pad, ulong, 0444);

/* Stays registered while the module is loaded, for debugfs okprobe/list. */
static struct okp_probe_record okp_resident;

/*
 * Also resident, for okptest to read why each stays a breakpoint in debugfs
 * okprobe/jumps: a branch into the jump, an exception-table entry, an
 * indirect jump, a jump label's target inside the region, and another
 * probe (the resident one) inside the region.
 */
static struct okprobe okp_resident_refused[] = {
	{ .symbol_name = "okp_target_jmp", .offset = 3 },
	{ .symbol_name = "okp_target_extable", .offset = 3 },
	{ .symbol_name = "okp_target_indirect", .offset = 0 },
	{ .symbol_name = "okp_target_static_jump", .offset = 0 },
	{ .symbol_name = "okp_target_add", .offset = 0 },
};


static int __init okp_selftest_init(void)
{
	int ret = okp_results_init();
	char name[160];
	int i;

	if (ret)
		return ret;
	entry_pad = okp_entry_pad(okp_target_add);
	if (okp_run_part_only(okp_target_add, 3, okp_expect_add))
		return 0;
	okp_test_fixed_results();
	for (i = 0; i < ARRAY_SIZE(okp_cases); i++)
		okp_run_case(&okp_cases[i]);
	okp_test_emulated_results();
	okp_test_redirect(&okp_lifecycle_targets[0], 6);
	okp_test_aggregation(&okp_cycle_targets[0]);
	okp_test_optimized_probe_changes(&okp_cycle_targets[0],
					 &okp_cycle_targets[1]);
	okp_test_x86_bad_registrations();
	okp_test_static_call_sites();
	okp_test_bad_input(okp_target_add, 3, okp_expect_add);
	okp_test_handler_calls_its_function(okp_target_add, 3, okp_expect_add);
	{
		/*
		 * x86's int3 path before okprobe's die notifier: on a
		 * PREEMPT_RCU kernel, atomic_notifier_call_chain()'s RCU read
		 * lock (a probe there would re-enter the trap forever).
		 */
		static const char *const refused[] = {
			"notify_die", "kprobe_int3_handler",
#ifdef CONFIG_PREEMPT_RCU
			"__rcu_read_lock", "__rcu_read_unlock",
#endif
		};
		static const char *const allowed[] = {
			"vfs_read",
#ifndef CONFIG_KASAN
			/*
			 * Under KASAN every instrumented function on the int3
			 * path may report, and the report reaches printk,
			 * the scheduler's wake-ups and the allocator: over a
			 * thousand functions refused, these among them.
			 */
			"try_to_wake_up", "_raw_spin_lock", "_printk", "kfree",
#endif
		};

		okp_test_trap_path_refused(refused, ARRAY_SIZE(refused),
					   allowed, ARRAY_SIZE(allowed));
	}
	okp_test_recursion(&okp_lifecycle_targets[0], &okp_lifecycle_targets[1]);
	okp_test_double_registration(&okp_cycle_targets[0]);
	okp_test_second_probe_in_function();
	okp_test_enable_disable(&okp_cycle_targets[0], okp_is_int3);
	{
		static const struct okp_cycle_target imul = {
			okp_target_lea_imm, 4, okp_expect_lea_imm
		};

		okp_test_disabled_aggregate(&imul, okp_is_int3);
	}
	okp_test_post_handler_regs();
	okp_test_register_many(okp_lifecycle_targets,
			       okp_at(okp_target_add, 1));
	okp_test_concurrency(&okp_cycle_targets[0], 1, okp_target_add,
			     okp_scaled(OKP_HAMMER_HITS),
			     okp_scaled(OKP_CHURN_ROUNDS));
	for (i = 0; i < ARRAY_SIZE(okp_jump_cases); i++)
		okp_run_jump_case(&okp_jump_cases[i]);
	okp_test_neighbour_in_region(okp_target_add, 3, okp_expect_add,
				     okp_is_int3);
	/* add %rsi, %rax runs: 42 + 2. */
	okp_test_optimized_redirect_ignored(&okp_cycle_targets[0], 6, 44);
	snprintf(name, sizeof(name),
		 "%ld hits of %zu optimized targets on every CPU across optimize/unoptimize cycles (sysctl, enable/disable)",
		 okp_scaled(OKP_HAMMER_HITS), ARRAY_SIZE(okp_cycle_targets));
	okp_test_optimization_cycles(okp_cycle_targets,
				     ARRAY_SIZE(okp_cycle_targets),
				     okp_scaled(OKP_HAMMER_HITS), name);
	okp_test_counting(okp_cycle_targets, ARRAY_SIZE(okp_cycle_targets),
			  okp_scaled(OKP_HAMMER_HITS));
	okp_test_kernel_kprobes(&okp_coexist_target, &okp_coexist_other);
	okp_test_kernel_kprobes_on_kernel_functions();
	okp_test_kernel_kprobe_in_piece(okp_target_split, okp_target_split_cold, okp_expect_split);
	okp_test_lost_text(&okp_cycle_targets[0]);
	okp_test_random_coexistence(okp_cycle_targets,
				    ARRAY_SIZE(okp_cycle_targets),
				    okp_scaled(OKP_RANDOM_STEPS));

	okp_resident.probe.addr = okp_at(okp_target_add, 3);
	okp_resident.probe.pre_handler = okp_record_pre;
	if (!okprobe_register(&okp_resident.probe))
		for (i = 0; i < 5; i++)
			okp_target_add(i, i);
	for (i = 0; i < ARRAY_SIZE(okp_resident_refused); i++) {
		okp_resident_refused[i].offset += entry_pad;
		okp_resident_refused[i].pre_handler = okp_record_pre_count;
		okprobe_register(&okp_resident_refused[i]);
	}
	okp_results_publish();
	return 0;
}

static void __exit okp_selftest_exit(void)
{
	int i;

	if (okp_part_only()) {
		okp_results_exit();
		return;
	}
	for (i = 0; i < ARRAY_SIZE(okp_resident_refused); i++)
		okprobe_unregister(&okp_resident_refused[i]);
	if (okp_resident.probe.okp_site)
		okprobe_unregister(&okp_resident.probe);
	okp_results_exit();
}

module_init(okp_selftest_init);
module_exit(okp_selftest_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("okprobe in-kernel probe tests (x86-64)");
