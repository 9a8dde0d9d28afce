// SPDX-License-Identifier: GPL-2.0
/*
 * x86-64's part of okprobe_selftest.ko: its case table and the tests only
 * x86 runs, for the driver (okprobe_selftest_driver.c) to run.
 *
 * The probe targets are written in assembly (okprobe_selftest_targets.S)
 * so the instruction at each probed offset is known. Each case probes one
 * instruction, calls its target with known inputs and checks the hit count,
 * the registers the handler saw and the target's result; okp_selftest_arch
 * names the targets of the shared tests and what they must return. The
 * x86 tests: results of emulated control flow, refusals (ftrace and static
 * call sites, BUG sites, someone else's int3, jump labels), a post_handler
 * alone, and the jump cases (a 5-byte jmp, or a breakpoint and why).
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
#include "okprobe_selftest_driver.h"

/* The byte at address: 0xcc while a breakpoint is armed there. */
static u8 okp_text_byte(void *address)
{
	u8 byte = 0;

	if (copy_from_kernel_nofault(&byte, address, 1))
		return 0;
	return byte;
}

/* ---- Test cases ----------------------------------------------------------- */

/* The OKP_NO_RESULT cases check their results in okp_test_emulated_results. */
static const struct okp_case okp_cases[] = {
	/* name, target, offset, a, b, expected result, post_handler */
	{ "mov copied out of line", okp_target_add, 0, 1, 2, 3, false },
	{ "add copied, with post_handler", okp_target_add, 3, 1, 2, 3, true },
	{ "rip-relative load rebased", okp_target_rip, 0, 1, 0,
	  0x5a5a1234 + 1, false },
	{ "jcc not taken (emulated)", okp_target_jcc, 4, 1, 0, OKP_NO_RESULT, false },
	{ "call rel32 (emulated)", okp_target_call, 0, 0, 5, OKP_NO_RESULT, true },
	{ "return thunk jump (emulated ret)", okp_target_ret, 3, 0, 7,
	  OKP_NO_RESULT, true },
	{ "push copied", okp_target_push_pop, 0, 10, 3, 7, false },
	{ "pop copied, with post_handler", okp_target_push_pop, 1, 10, 3, 7,
	  true },
	{ "pushf (emulated)", okp_target_pushf, 0, 0, 0, OKP_NO_RESULT, true },
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
	struct okp_probe_record *jcc = okp_record_new(okp_at(okp_target_jcc, 4));
	struct okp_probe_record *call =
		okp_record_new(okp_at(okp_target_call, 0));
	struct okp_probe_record *ret = okp_record_new(okp_at(okp_target_ret, 3));
	char why[160] = "";
	bool ok = false;

	EXPECT(jcc && call && ret, "out of memory");
	call->probe.post_handler = okp_record_post;
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
	struct okp_probe_record *first =
		okp_record_new(okp_at(okp_target_overlay, 0));
	struct okp_probe_record *second =
		okp_record_new(okp_at(okp_target_overlay, 5));
	char why[160] = "";
	bool ok = false;
	int ret;

	EXPECT(first && second, "out of memory");
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
	EXPECT(atomic_read(&r->post_hits) == 1 &&
	       regs_return_value(&r->after) == 42,
	       "post_handler ran %d times, saw ax %ld",
	       atomic_read(&r->post_hits), (long)regs_return_value(&r->after));
	ok = true;
out:
	okp_report(ok, "a post_handler alone sees the instruction's result",
		   why);
	okp_record_free(r);
}

/*
 * The flags a breakpoint hit sees just after an unlocked cmpxchg16b are the
 * CPU's. QEMU before 8.1 (Debian 12's 7.2) computes cmpxchg16b's flags in
 * a helper from env->cc_op, which its translator does not bring up to
 * date first: in a translation block entered after an iret (okprobe's hit
 * at +1 returning through its boosted copy, whose jmp lands at +4) it is
 * still CC_OP_EFLAGS, so the helper takes the add's source operand (cc_src)
 * for all of RFLAGS, and an exception before the next flag-setting
 * instruction pushes it. make bench's okprobe-cover discovery on 6.12
 * probed the blocks on both sides of SLUB's cmpxchg16b; jne
 * (__kmalloc_cache_noprof+0x99 and +0xca): the second hit pushed the low
 * half of %rdi as RFLAGS and its iret loaded TF, IOPL, DF and ID from it
 * (exc_debug_kernel's WARN on the single step, then crashes). The kernel's
 * kprobes there would do the same. Here a sets only bit 30, reserved
 * (iret ignores it), for the pre_handler to find in regs->flags. The x86
 * guests run Debian 13's QEMU (tools/guest_emulator.py), which passes; on
 * Debian 12's 7.2 (OKPROBE_HOST_QEMU=1) it fails on every x86 kernel, as it
 * should: the test bed's emulator, not okprobe.
 */
static unsigned long okp_cx16_seen;

static int okp_cx16_pre(struct okprobe *probe, struct pt_regs *regs)
{
	okp_cx16_seen = regs->flags;
	return okp_record_pre(probe, regs);
}

/* RFLAGS' defined bits (bit 1 always reads 1). */
#define OKP_RFLAGS_DEFINED 0x3f7fd7UL

static void okp_test_flags_after_cmpxchg16b(void)
{
	static u64 buf[2] __aligned(16);
	struct okp_probe_record *before =
		okp_record_new(okp_at(okp_target_cx16, 1));
	struct okp_probe_record *after =
		okp_record_new(okp_at(okp_target_cx16, 26));
	const char *name = "a hit after cmpxchg16b sees the CPU's RFLAGS";
	const long payload = 1L << 30;
	char why[200] = "";
	bool ok = false;
	long ret;

	EXPECT(before && after, "out of memory");
	if (!boot_cpu_has(X86_FEATURE_CX16)) {
		name = "a hit after cmpxchg16b: no CX16, not run";
		ok = true;
		goto out;
	}
	EXPECT(okp_text_byte(okp_at(okp_target_cx16, 20)) == 0x48 &&
	       okp_text_byte(okp_at(okp_target_cx16, 21)) == 0x0f &&
	       okp_text_byte(okp_at(okp_target_cx16, 24)) == 0x75,
	       "okp_target_cx16 is not laid out as its offsets say");
	before->probe.flags |= OKPROBE_FLAG_BREAKPOINT;
	after->probe.flags |= OKPROBE_FLAG_BREAKPOINT;
	after->probe.pre_handler = okp_cx16_pre;
	EXPECT(!okprobe_register(&before->probe) &&
	       !okprobe_register(&after->probe), "register failed");
	buf[0] = 5;
	buf[1] = 7;
	okp_cx16_seen = 0;
	ret = okp_target_cx16(payload, (long)buf);
	EXPECT(ret == 1 && buf[0] == 5 + payload && buf[1] == 7,
	       "cmpxchg16b gave %ld, buf %llx %llx", ret, buf[0], buf[1]);
	EXPECT(atomic_read(&before->pre_hits) == 1 &&
	       atomic_read(&after->pre_hits) == 1, "hits %d/%d",
	       atomic_read(&before->pre_hits), atomic_read(&after->pre_hits));
	EXPECT(!(okp_cx16_seen & ~OKP_RFLAGS_DEFINED) &&
	       !(okp_cx16_seen & (X86_EFLAGS_TF | X86_EFLAGS_IOPL |
				  X86_EFLAGS_NT | X86_EFLAGS_DF)) &&
	       (okp_cx16_seen & X86_EFLAGS_ZF),
	       "the hit after cmpxchg16b saw RFLAGS %#lx, the add before it had %#lx: the emulator's cmpxchg16b flags are wrong (QEMU < 8.1 TCG)",
	       okp_cx16_seen, payload);
	ok = true;
out:
	okp_report(ok, name, why);
	okp_record_free(before);
	okp_record_free(after);
}

static void okp_test_x86_registers(void)
{
	okp_test_post_handler_regs();
	okp_test_flags_after_cmpxchg16b();
}

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
	EXPECT(r->seen_pc == (unsigned long)address + 1,
	       "handler saw ip %lx, not the address + 1", r->seen_pc);
	EXPECT(c->args_moved ||
	       (r->seen_arg0 == c->a + OKP_JUMP_CALLS - 1 &&
		r->seen_arg1 == c->b),
	       "handler saw di=%ld si=%ld", r->seen_arg0, r->seen_arg1);
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

/* okp_test_register_many's three, okp_test_recursion's outer and inner. */
static const struct okp_cycle_target okp_lifecycle_targets[] = {
	{ okp_target_add, 0, okp_expect_add },
	{ okp_target_rip, 0, okp_expect_rip },
	{ okp_target_push_pop, 1, okp_expect_push_pop },
};

/* The targets the cycle test keeps optimized, one steady probe each. */
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

/* imul with an immediate: okp_test_disabled_aggregate's. */
static const struct okp_cycle_target okp_imul_target = {
	okp_target_lea_imm, 4, okp_expect_lea_imm
};

static const struct okp_lifecycle_targets okp_lifecycle = {
	.three = okp_lifecycle_targets, .redirect_return_offset = 6,
	.toggled = &okp_cycle_targets[0],
	.disabled_aggregate = &okp_imul_target,
	.inside_instruction = { okp_target_add, 1 },
};

/*
 * The jump tests' hits, and the concurrency test's: calls on all CPUs
 * and churn steps, at least. A quarter of the jump tests' calls is
 * enough for the churn: its steps are what it is about, and its million
 * calls took 42 s of make check's x86 guest.
 */
#define OKP_HAMMER_HITS 1000000
#define OKP_CHURN_CALLS 250000
#define OKP_CHURN_ROUNDS 40

/* One steady probe; the churned one at okp_target_add's entry. */
static const struct okp_concurrency_targets okp_concurrency = {
	&okp_cycle_targets[0], 1, okp_target_add, OKP_CHURN_CALLS,
	OKP_CHURN_ROUNDS
};

/* add %rsi, %rax runs (42 + 2) where the redirect to +6 is ignored. */
static const struct okp_jump_targets okp_jumps = {
	okp_cycle_targets, ARRAY_SIZE(okp_cycle_targets), OKP_HAMMER_HITS,
	"CPU", { okp_target_add, 3, okp_expect_add }, 6, 44
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

static const struct okp_coexistence_targets okp_coexistence = {
	&okp_coexist_target, &okp_coexist_other, okp_target_split,
	okp_target_split_cold
};

/*
 * Resident, for okptest to read why each stays a breakpoint in debugfs
 * okprobe/jumps: a branch into the jump, an exception-table entry, an
 * indirect jump, a jump label's target inside the region, and another
 * probe (the resident one, at okp_target_add + 3) inside the region.
 */
static const struct okp_symbol_offset okp_resident_refused[] = {
	{ "okp_target_jmp", 3 },
	{ "okp_target_extable", 3 },
	{ "okp_target_indirect", 0 },
	{ "okp_target_static_jump", 0 },
	{ "okp_target_add", 0 },
};

static const struct okp_resident_probes okp_residents = {
	{ okp_target_add, 3 }, okp_resident_refused,
	ARRAY_SIZE(okp_resident_refused)
};

/* ---- The run ----------------------------------------------------------------- */

static void okp_run_jump_cases(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(okp_jump_cases); i++)
		okp_run_jump_case(&okp_jump_cases[i]);
}

static void okp_test_x86_refusals(void)
{
	okp_test_x86_bad_registrations();
	okp_test_static_call_sites();
}

static void okp_test_x86_lifecycle(void)
{
	okp_test_recursion(&okp_lifecycle_targets[0], &okp_lifecycle_targets[1]);
	okp_test_double_registration(&okp_cycle_targets[0]);
	okp_test_second_probe_in_function();
}

static const okp_arch_tests_fn okp_x86_tests[OKP_ARCH_TESTS_PLACES] = {
	[OKP_BEFORE_CASES] = okp_test_fixed_results,
	[OKP_AFTER_CASES] = okp_test_emulated_results,
	[OKP_BEFORE_BAD_INPUT] = okp_test_x86_refusals,
	[OKP_AFTER_TRAP_PATH] = okp_test_x86_lifecycle,
	[OKP_AFTER_DISABLED_AGGREGATE] = okp_test_x86_registers,
	[OKP_JUMP_CASES] = okp_run_jump_cases,
};

/*
 * x86's int3 path before okprobe's die notifier: on a PREEMPT_RCU kernel,
 * atomic_notifier_call_chain()'s RCU read lock (a probe there would
 * re-enter the trap forever).
 */
static const char *const okp_trap_refused[] = {
	"notify_die", "kprobe_int3_handler",
#ifdef CONFIG_PREEMPT_RCU
	"__rcu_read_lock", "__rcu_read_unlock",
#endif
};

static const char *const okp_trap_allowed[] = {
	"vfs_read",
#ifndef CONFIG_KASAN
	/*
	 * Under KASAN every instrumented function on the int3 path may
	 * report, and the report reaches printk, the scheduler's wake-ups
	 * and the allocator: over a thousand functions refused, these among
	 * them.
	 */
	"try_to_wake_up", "_raw_spin_lock", "_printk", "kfree",
#endif
};

static const struct okp_trap_path okp_trap_path = {
	okp_trap_refused, ARRAY_SIZE(okp_trap_refused),
	okp_trap_allowed, ARRAY_SIZE(okp_trap_allowed)
};

const struct okp_selftest_arch okp_selftest_arch = {
	.cases = okp_cases, .case_count = ARRAY_SIZE(okp_cases),
	.tests = okp_x86_tests,
	.plain = { okp_target_add, 3, okp_expect_add },
	.args = { okp_target_add, 3 },
	.pc_past_probe = 1,
	.is_breakpoint = okp_is_int3,
	.lifecycle = &okp_lifecycle, .concurrency = &okp_concurrency,
	.trap_path = &okp_trap_path, .jumps = &okp_jumps,
	.coexistence = &okp_coexistence, .residents = &okp_residents,
};

MODULE_DESCRIPTION("okprobe in-kernel probe tests (x86-64)");
