// SPDX-License-Identifier: GPL-2.0
/*
 * riscv64's part of okprobe_selftest.ko: its case table and the tests only
 * riscv runs, for the driver (okprobe_selftest_driver.c) to run.
 *
 * The probe targets are written in assembly (RVI and RVC,
 * okprobe_selftest_riscv_targets.S) so the instruction at each probed
 * offset is known. Each case probes one instruction, calls its target with
 * known inputs and checks the hit count, the registers the handler saw,
 * where control flow continued and what it linked, and the target's
 * result; okp_selftest_arch names the targets of the shared tests and what
 * they must return. The riscv tests: ebreak and c.ebreak in the text,
 * refusals, the jump cases (auipc + jalr or c.jr windows, at returns too),
 * no free register, and landings that share a page offset.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <okprobe.h>

#include "okprobe_selftest_common.h"
#include "okprobe_selftest_driver.h"
#include "okprobe_selftest_riscv.h"

/* The first two bytes at address (an RVC ebreak is 0x9002). */
static u16 okp_text_half(void *address)
{
	u16 half = 0;

	if (copy_from_kernel_nofault(&half, address, sizeof(half)))
		return 0;
	return half;
}

static u32 okp_text_word(void *address)
{
	u32 word = 0;

	if (copy_from_kernel_nofault(&word, address, sizeof(word)))
		return 0;
	return word;
}

/* ---- Test cases ----------------------------------------------------------- */

static const struct okp_case okp_cases[] = {
	{ "add (RVI) out of line", okp_rv_add, 0, 1, 2, 3 },
	{ "addi (RVI) out of line, with post_handler", okp_rv_add, 4, 1, 2, 3,
	  true, .args_moved = true },
	{ "ret (jalr x0, 0(ra)) simulated", okp_rv_add, 8, 1, 2, 3,
	  .args_moved = true },
	{ "addi sp (stack) out of line", okp_rv_load_store, 0, 1, 2, 3 },
	{ "sd to the stack out of line, with post_handler", okp_rv_load_store,
	  4, 1, 2, 3, true },
	{ "ld from the stack out of line", okp_rv_load_store, 8, 1, 2, 3 },
	{ "auipc simulated", okp_rv_auipc, 0, 1, 2, 7, true },
	{ "second auipc simulated", okp_rv_auipc, 4, 1, 2, 7 },
	{ "blt taken simulated", okp_rv_blt, 0, 10, 1, 11, true },
	{ "blt not taken simulated", okp_rv_blt, 0, -1000, 1000, 100, true },
	{ "j (jal x0) simulated", okp_rv_j, 0, 1, 2, 3, true },
	{ "jal ra (call) simulated", okp_rv_jal, 8, 1, 2, 4, true,
	  .result_step = 2, .continues_at = okp_rv_helper_double, .links = 4 },
	{ "jalr ra, 0(t0) simulated", okp_rv_jalr, 16, 1, 2, 4, true,
	  .result_step = 2, .continues_at = okp_rv_helper_double, .links = 4 },
	{ "jalr t0, 0(t0) (rd == rs1) simulated", okp_rv_jalr_same, 8, 1, 2,
	  4, true, .result_step = 2, .continues_at = okp_rv_helper_double_t0 },
	{ "c.addi16sp out of line", okp_rvc_stack, 0, 1, 2, 3 },
	{ "c.sdsp out of line, with post_handler", okp_rvc_stack, 2, 1, 2, 3,
	  true },
	{ "c.ldsp out of line", okp_rvc_stack, 4, 1, 2, 3 },
	{ "c.add out of line", okp_rvc_stack, 6, 1, 2, 3 },
	{ "c.mv out of line, with post_handler", okp_rvc_stack, 8, 1, 2, 3,
	  true },
	{ "c.jr ra simulated", okp_rvc_stack, 12, 1, 2, 3, true,
	  .args_moved = true },
	{ "c.beqz not taken simulated", okp_rvc_beqz, 0, 1, 2, 4, true },
	{ "c.bnez taken simulated", okp_rvc_bnez, 0, 1, 2, 3, true },
	{ "c.j simulated", okp_rvc_j, 0, 1, 2, 3, true },
	{ "c.jalr t0 simulated", okp_rvc_jalr, 12, 1, 2, 4, true,
	  .result_step = 2, .continues_at = okp_rv_helper_double, .links = 2 },
	{ "c.jalr ra (reads ra before linking) simulated", okp_rvc_jalr_ra,
	  12, 1, 2, 4, true, .result_step = 2,
	  .continues_at = okp_rv_helper_double, .links = 2 },
	{ "4-byte add at a 2-byte-aligned address", okp_rvc_mixed, 2, 1, 2, 3,
	  true },
};

/* The breakpoint matches the instruction's length; disarming restores it. */
static void okp_test_breakpoint_bytes(void)
{
	void *wide_at = (void *)okp_rv_add, *narrow_at = (void *)okp_rvc_stack + 6;
	struct okp_probe_record *wide = okp_record_new(wide_at);
	struct okp_probe_record *narrow = okp_record_new(narrow_at);
	u32 wide_before = okp_text_word(wide_at);
	u16 narrow_before = okp_text_half(narrow_at);
	u16 after_narrow = okp_text_half(narrow_at + 2);
	char why[200] = "";
	bool ok = false;

	EXPECT(wide && narrow, "out of memory");
	EXPECT(!okprobe_register(&wide->probe) &&
	       !okprobe_register(&narrow->probe), "register failed");
	EXPECT(okp_text_word(wide_at) == 0x00100073, "RVI text is %08x",
	       okp_text_word(wide_at));
	EXPECT(okp_text_half(narrow_at) == 0x9002 &&
	       okp_text_half(narrow_at + 2) == after_narrow,
	       "RVC text is %04x %04x", okp_text_half(narrow_at),
	       okp_text_half(narrow_at + 2));
	okprobe_unregister(&wide->probe);
	okprobe_unregister(&narrow->probe);
	EXPECT(okp_text_word(wide_at) == wide_before &&
	       okp_text_half(narrow_at) == narrow_before,
	       "text not restored: %08x %04x", okp_text_word(wide_at),
	       okp_text_half(narrow_at));
	ok = true;
out:
	okp_report(ok, "ebreak over RVI, c.ebreak over RVC, both restored",
		   why);
	okp_record_free(wide);
	okp_record_free(narrow);
}

/* What only riscv refuses (okp_test_bad_registrations adds the rest). */
static void okp_test_riscv_bad_registrations(void)
{
	static const struct okp_bad_registration cases[] = {
		{ "odd address", "okp_rv_add", NULL, 1, true, -EILSEQ },
		{ "inside a 4-byte instruction", "okp_rv_add", NULL, 2, true,
		  -EILSEQ },
		{ "someone else's ebreak", "okp_rv_refused", NULL, 4, true,
		  -EBUSY },
		{ "csrr (system)", "okp_rv_refused", NULL, 8, true, -EPERM },
		{ "fence.i", "okp_rv_refused", NULL, 12, true, -EPERM },
		{ "lr (LR/SC sequence)", "okp_rv_refused", NULL, 16, true,
		  -EPERM },
		{ "sc (LR/SC sequence)", "okp_rv_refused", NULL, 20, true,
		  -EPERM },
		{ "exception-table entry", "okp_rv_extable", NULL, 0, true,
		  -EPERM },
	};

	okp_test_bad_registrations("okp_rv_add", okp_rv_add, cases,
				   ARRAY_SIZE(cases));
}

/* ---- Jump optimization ------------------------------------------------------ */

struct okp_jump_case {
	const char *name;
	okp_target_fn target;
	unsigned long offset;
	long (*expect)(long a, long b);
	bool args_moved;	/* a0/a1 no longer hold a/b at the probe */
	unsigned int window;	/* bytes the jump replaces */
	/*
	 * At a return the window ends with the probed instruction: it
	 * starts this many bytes before it.
	 */
	unsigned int behind;
};

static long okp_expect_sum(long a, long b)
{
	return a + b;
}

static long okp_expect_sum_1(long a, long b)
{
	return a + b + 1;
}

static long okp_expect_sum_2(long a, long b)
{
	return a + b + 2;
}

static long okp_expect_word(long a, long b)
{
	return a + 1000 + b;
}

static long okp_expect_blt(long a, long b)
{
	return b < a ? a + b : a + b + 100;
}

static long okp_expect_double(long a, long b)
{
	return 2 * a + b;
}

static long okp_expect_double_2(long a, long b)
{
	return 2 * a + 2 + b;
}

static long okp_expect_beqz(long a, long b)
{
	return a == 0 ? b : a + 3 + b;
}

static long okp_expect_bnez(long a, long b)
{
	return a != 0 ? a + b : 9 + b;
}

static const struct okp_jump_case okp_jump_cases[] = {
	{ "optimized: add, addi", okp_rvj_arith, 0, okp_expect_sum_1 },
	{ "optimized: sd, ld", okp_rvj_load_store, 4, okp_expect_sum },
	{ "optimized: auipc, addi (auipc relocated)", okp_rvj_auipc, 0,
	  okp_expect_word },
	{ "optimized: blt taken and not taken, relocated", okp_rvj_blt, 0,
	  okp_expect_blt },
	{ "optimized: j (jal x0), relocated", okp_rvj_j, 0, okp_expect_sum },
	{ "optimized: jal ra (a call) at the window's end", okp_rvj_jal, 8,
	  okp_expect_double_2 },
	{ "optimized: jalr ra, 0(t0) at the window's end", okp_rvj_jalr, 12,
	  okp_expect_double, true },
	{ "optimized: c.addi16sp, c.sdsp, c.ldsp (auipc + c.jr)",
	  okp_rvcj_stack, 0, okp_expect_sum, .window = 6 },
	{ "optimized: c.j, relocated", okp_rvcj_j, 0, okp_expect_sum,
	  .window = 6 },
	{ "optimized: c.beqz taken and not taken, relocated", okp_rvcj_beqz,
	  0, okp_expect_beqz, .window = 6 },
	{ "optimized: c.bnez taken and not taken, relocated", okp_rvcj_bnez,
	  0, okp_expect_bnez, .window = 6 },
	{ "optimized: c.jr ra ends the window", okp_rvcj_jr, 0,
	  okp_expect_sum_2, .window = 6 },
	{ "optimized: c.jalr t0 at the window's end", okp_rvcj_jalr, 12,
	  okp_expect_double_2, .window = 6 },
	{ "optimized: 2+2+2-byte window (auipc + c.jr)", okp_rvcj_mixed, 0,
	  okp_expect_sum_2, .window = 6 },
	{ "optimized: 2+2+4-byte window (auipc + jalr at a 2-byte boundary)",
	  okp_rvcj_mixed, 2, okp_expect_sum_2 },
	{ "optimized: 2+4-byte window (auipc + c.jr)", okp_rvcj_mixed, 4,
	  okp_expect_sum_2, .window = 6 },
	{ "optimized: 4+2-byte window (auipc + c.jr)", okp_rvcj_mixed, 6,
	  okp_expect_sum_2, .window = 6 },
	{ "optimized at a return (c.jr ra): the 6-byte window ends there, over c.addi16sp and c.li",
	  okp_rvcj_stack, 14, okp_expect_sum, true, .window = 6, .behind = 4 },
	{ "optimized at a return (c.jr ra): an 8-byte window ends there, over add and c.li",
	  okp_rvcj_mixed, 12, okp_expect_sum_2, true, .window = 8, .behind = 6 },
	{ "optimized at a return (jalr x0, 0(ra)): the 8-byte window ends there, over li",
	  okp_rvj_arith, 12, okp_expect_sum_1, true, .window = 8, .behind = 4 },
	{ "optimized at a return after an epilogue: addi sp, ret (auipc + jalr)",
	  okp_rvj_epilogue, 24, okp_expect_sum_1, true, .window = 8, .behind = 4 },
	{ "optimized at a return after an epilogue: c.ldsp ra, c.addi16sp, c.jr ra (auipc + c.jr)",
	  okp_rvcj_epilogue, 10, okp_expect_sum, true, .window = 6, .behind = 4 },
};

#define OKP_JUMP_CALLS 100
#define OKP_WINDOW_MAX 8

/* The first instruction of every detour: addi sp, sp, -288 (its pt_regs). */
#define OKP_DETOUR_FIRST_WORD 0xee010113

/* The target of the c.j encoded in half. */
static void *okp_c_j_target(void *at, u16 half)
{
	long offset = ((half >> 1) & 0x800) | ((half >> 7) & 0x10) |
		      ((half >> 1) & 0x300) | ((half << 2) & 0x400) |
		      ((half >> 1) & 0x40) | ((half << 1) & 0x80) |
		      ((half >> 2) & 0xe) | ((half << 3) & 0x20);

	return at + (offset & 0x800 ? offset - 0x1000 : offset);
}

/*
 * The jump in the text at address, leading to a detour: "auipc tmp, hi;
 * jalr x0, lo(tmp)" over an 8-byte window, straight to it; "auipc tmp, hi;
 * c.jr tmp" over a 6-byte one, to a c.j (the landing, at address's offset
 * within its page) to it. A detour starts with its frame, or, where the
 * window ends with the probe, with the copy of the behind bytes (original)
 * before it.
 */
static bool okp_is_window_jump(void *address, unsigned int window,
			       const u8 *original, unsigned int behind)
{
	u32 auipc = okp_text_word(address), jalr = okp_text_word(address + 4);
	unsigned int tmp = (auipc >> 7) & 0x1f;
	void *target = address + (long)(s32)(auipc & 0xfffff000);
	u16 jr = okp_text_half(address + 4), landing = okp_text_half(target);

	if ((auipc & 0x7f) != 0x17 || !tmp)
		return false;
	if (window == 8) {
		if ((jalr & 0x7fff) != 0x67 || ((jalr >> 15) & 0x1f) != tmp)
			return false;
		target += (s32)jalr >> 20;
	} else {
		if (jr != (0x8002 | tmp << 7) || (landing & 0xe003) != 0xa001)
			return false;
		target = okp_c_j_target(target, landing);
	}
	if (behind) {
		u8 copy[OKP_WINDOW_MAX];

		return !copy_from_kernel_nofault(copy, target, behind) &&
		       !memcmp(copy, original, behind);
	}
	return okp_text_word(target) == OKP_DETOUR_FIRST_WORD;
}

/*
 * The probe reaches [OPTIMIZED] with the jump in the text, counts every
 * call with unchanged results and the registers of the probe point;
 * unregistering restores the text.
 */
static void okp_run_jump_case(const struct okp_jump_case *c)
{
	struct okp_probe_record *r = kzalloc(sizeof(*r), GFP_KERNEL);
	void *address = okp_at(c->target, c->offset);
	void *start = address - c->behind; /* the window's */
	unsigned int window = c->window ?: 8;
	u8 original[OKP_WINDOW_MAX], now[OKP_WINDOW_MAX];
	char why[200] = "";
	bool ok = false;
	long a, result;
	int ret, i;

	EXPECT(r, "out of memory");
	EXPECT(!copy_from_kernel_nofault(original, start, window),
	       "unreadable");
	r->probe.addr = address;
	r->probe.pre_handler = okp_record_pre;
	ret = okprobe_register(&r->probe);
	EXPECT(ret == 0, "register failed: %d", ret);
	EXPECT(okp_wait_optimized(&r->probe, true), "never optimized");
	EXPECT(okp_is_window_jump(start, window, original, c->behind),
	       "text %08x %08x, not a %u-byte jump", okp_text_word(start),
	       okp_text_word(start + 4), window);
	for (i = 0; i < OKP_JUMP_CALLS; i++) {
		a = i % 8 - 2; /* both ways through every branch */
		result = c->target(a, 1);
		EXPECT(result == c->expect(a, 1),
		       "call %d (a=%ld) returned %ld, not %ld", i, a, result,
		       c->expect(a, 1));
	}
	EXPECT(atomic_read(&r->pre_hits) == OKP_JUMP_CALLS,
	       "pre_handler ran %d times", atomic_read(&r->pre_hits));
	EXPECT(r->seen_pc == (unsigned long)address,
	       "handler saw epc %lx, not the probed address", r->seen_pc);
	EXPECT(c->args_moved || (r->seen_arg0 == a && r->seen_arg1 == 1),
	       "handler saw a0=%ld a1=%ld, not %ld and 1", r->seen_arg0,
	       r->seen_arg1, a);
	/* At a return the registers are the return's: a0 the result. */
	EXPECT(!c->behind || r->seen_arg0 == c->expect(a, 1),
	       "handler saw a0=%ld at the return, not %ld", r->seen_arg0,
	       c->expect(a, 1));
	EXPECT(okp_optimized(&r->probe), "unoptimized during the calls");
	okprobe_unregister(&r->probe);
	EXPECT(!okp_optimized(&r->probe), "still flagged optimized");
	EXPECT(!copy_from_kernel_nofault(now, start, window) &&
	       !memcmp(now, original, window), "the text is not restored");
	EXPECT(c->target(3, 1) == c->expect(3, 1), "result after unregister");
	ok = true;
out:
	okp_report(ok, c->name, why);
	okp_record_free(r);
}

/*
 * Every register a jump could use is read after the probe: it stays a
 * breakpoint (once a probe registered after it is optimized, the
 * optimizer has been over it) and counts every call. Why is in debugfs
 * okprobe/jumps, which okptest reads for the module's resident probe on
 * the same address.
 */
static void okp_test_no_free_register(void)
{
	struct okp_probe_record *r = okp_record_new((void *)okp_rvj_no_register);
	struct okp_probe_record *control = okp_record_new((void *)okp_rvj_arith);
	char why[200] = "";
	bool ok = false;
	int i;

	EXPECT(r && control, "out of memory");
	EXPECT(!okprobe_register(&r->probe) &&
	       !okprobe_register(&control->probe), "register failed");
	EXPECT(okp_wait_optimized(&control->probe, true),
	       "the control probe never optimized");
	EXPECT(!okp_optimized(&r->probe), "optimized");
	EXPECT(okp_text_word(okp_rvj_no_register) == 0x00100073,
	       "text %08x, not ebreak", okp_text_word(okp_rvj_no_register));
	for (i = 0; i < 100; i++)
		EXPECT(okp_rvj_no_register(i, 2) == i + 2, "wrong result");
	EXPECT(atomic_read(&r->pre_hits) == 100, "hits %d",
	       atomic_read(&r->pre_hits));
	ok = true;
out:
	okp_report(ok, "no free register at the probe: stays a breakpoint and says why",
		   why);
	okp_record_free(r);
	okp_record_free(control);
}

static bool okp_is_ebreak(void *address)
{
	return okp_text_word(address) == 0x00100073 ||
	       okp_text_half(address) == 0x9002;
}

/*
 * Two 6-byte windows at the same page offset, optimized at once: each
 * lands on its own c.j at that offset, on different detour pages, and
 * counts its own calls.
 */
static void okp_test_landings_at_one_offset(void)
{
	struct okp_probe_record *r[2] = {
		kzalloc(sizeof(*r[0]), GFP_KERNEL),
		kzalloc(sizeof(*r[1]), GFP_KERNEL),
	};
	okp_target_fn targets[2] = { okp_rvcj_page_a, okp_rvcj_page_b };
	unsigned long landing[2];
	char why[200] = "";
	bool ok = false;
	int i, n;

	EXPECT(r[0] && r[1], "out of memory");
	EXPECT(((unsigned long)okp_rvcj_page_a & 0xfff) == 0 &&
	       ((unsigned long)okp_rvcj_page_b & 0xfff) == 0,
	       "targets not page-aligned: offsets %lx %lx",
	       (unsigned long)okp_rvcj_page_a & 0xfff,
	       (unsigned long)okp_rvcj_page_b & 0xfff);
	for (n = 0; n < 2; n++) {
		r[n]->probe.addr = (void *)targets[n];
		r[n]->probe.pre_handler = okp_record_pre;
		EXPECT(!okprobe_register(&r[n]->probe), "register %d failed", n);
	}
	for (n = 0; n < 2; n++) {
		u32 auipc;

		EXPECT(okp_wait_optimized(&r[n]->probe, true),
		       "probe %d never optimized", n);
		EXPECT(okp_is_window_jump(r[n]->probe.addr, 6, NULL, 0),
		       "probe %d: text %08x, not auipc + c.jr to a landing", n,
		       okp_text_word(r[n]->probe.addr));
		auipc = okp_text_word(r[n]->probe.addr);
		landing[n] = (unsigned long)r[n]->probe.addr +
			     (long)(s32)(auipc & 0xfffff000);
	}
	EXPECT((landing[0] & 0xfff) == 0 && (landing[1] & 0xfff) == 0 &&
	       landing[0] != landing[1],
	       "landings at %lx and %lx", landing[0], landing[1]);
	for (i = 0; i < 100; i++)
		for (n = 0; n < 2; n++)
			EXPECT(targets[n](i, 1) == i + 3, "wrong result");
	EXPECT(atomic_read(&r[0]->pre_hits) == 100 &&
	       atomic_read(&r[1]->pre_hits) == 100, "hits %d and %d",
	       atomic_read(&r[0]->pre_hits), atomic_read(&r[1]->pre_hits));
	ok = true;
out:
	okp_report(ok, "optimized: two 6-byte windows at one page offset land on two detour pages",
		   why);
	okp_record_free(r[0]);
	okp_record_free(r[1]);
}

/* okp_test_register_many's three; okp_test_recursion's outer and inner. */
static const struct okp_cycle_target okp_lifecycle_targets[] = {
	{ okp_rv_add, 0, okp_expect_sum },
	{ okp_rvc_j, 0, okp_expect_sum },
	{ okp_rv_load_store, 8, okp_expect_sum },
};

/* Every optimized target, hammered across optimize/unoptimize cycles. */
static const struct okp_cycle_target okp_cycle_targets[] = {
	{ okp_rvj_arith, 0, okp_expect_sum_1 },
	{ okp_rvj_load_store, 4, okp_expect_sum },
	{ okp_rvj_auipc, 0, okp_expect_word },
	{ okp_rvj_blt, 0, okp_expect_blt },
	{ okp_rvj_j, 0, okp_expect_sum },
	{ okp_rvj_jal, 8, okp_expect_double_2 },
	{ okp_rvj_jalr, 12, okp_expect_double },
	{ okp_rvcj_stack, 0, okp_expect_sum },
	{ okp_rvcj_j, 0, okp_expect_sum },
	{ okp_rvcj_beqz, 0, okp_expect_beqz },
	{ okp_rvcj_bnez, 0, okp_expect_bnez },
	{ okp_rvcj_jr, 0, okp_expect_sum_2 },
	{ okp_rvcj_jalr, 12, okp_expect_double_2 },
	{ okp_rvcj_mixed, 0, okp_expect_sum_2 },
	/* Windows that end at a return: guarded on the way in and out. */
	{ okp_rvj_epilogue, 24, okp_expect_sum_1, 4 },
	{ okp_rvcj_epilogue, 10, okp_expect_sum, 4 },
};

#define OKP_CYCLE_HITS 500000

/* The window (add, addi) runs (42 + 2 + 1) where the redirect is ignored. */
static const struct okp_jump_targets okp_jumps = {
	.all = okp_cycle_targets, .count = ARRAY_SIZE(okp_cycle_targets),
	.cycle_hits = OKP_CYCLE_HITS, .cpu = "hart",
	.region = { okp_rvj_arith, 4, okp_expect_sum_1 },
	.redirect_offset = 12, .redirect_ignored_result = 45,
};

/*
 * The concurrency test's steady probes (RVC and RVI; the first also takes
 * the churned probe), and its least calls and churn steps.
 */
static const struct okp_cycle_target okp_concurrency_targets[] = {
	{ okp_rvc_stack, 6, okp_expect_sum },
	{ okp_rv_jal, 8, okp_expect_double },
};

#define OKP_HAMMER_CALLS 20000
#define OKP_CHURN_ROUNDS 240

/* Breakpoints only: the churned probe is next to the first steady one. */
static const struct okp_concurrency_targets okp_concurrency = {
	okp_concurrency_targets, ARRAY_SIZE(okp_concurrency_targets),
	(void *)okp_rvc_stack + 4, OKP_HAMMER_CALLS, OKP_CHURN_ROUNDS,
	.unoptimized = true
};

static const struct okp_lifecycle_targets okp_lifecycle = {
	okp_lifecycle_targets, 8, &okp_concurrency_targets[0],
	&okp_lifecycle_targets[2], { okp_rv_add, 2 }
};

/* ---- Next to the kernel's kprobes (breakpoints only on riscv) ----------- */

static bool okp_call_coexist(void *function, long a)
{
	return okp_rv_coexist(a, 1) == a + 1 + 0x9003;
}

static bool okp_call_add(void *function, long a)
{
	return okp_rv_add(a, 1) == a + 1;
}

/* okprobe's window at +0 is +0..+8; +12 lies outside. */
static const struct okp_coexist_target okp_coexist_target = {
	.function = okp_rv_coexist, .at = 0, .inside = 4, .other = 12,
	.call = okp_call_coexist, .exclusive = true, .optimizable = true,
};

static const struct okp_coexist_target okp_coexist_other = {
	.function = okp_rv_add, .at = 0, .inside = 4, .other = 4,
	.call = okp_call_add, .exclusive = true, .optimizable = true,
};

static const struct okp_coexistence_targets okp_coexistence = {
	.target = &okp_coexist_target, .other = &okp_coexist_other,
	.split = okp_rv_split, .split_cold = okp_rv_split_cold,
};

/* ---- The run ----------------------------------------------------------------- */

static unsigned long okp_ra(struct pt_regs *regs)
{
	return regs->ra;
}

static void okp_test_riscv_refusals(void)
{
	okp_test_double_registration(&okp_lifecycle_targets[0]);
	okp_test_recursion(&okp_lifecycle_targets[0], &okp_lifecycle_targets[2]);
	okp_test_riscv_bad_registrations();
}

static void okp_run_jump_cases(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(okp_jump_cases); i++)
		okp_run_jump_case(&okp_jump_cases[i]);
	okp_test_no_free_register();
}

static const okp_arch_tests_fn okp_riscv_tests[OKP_ARCH_TESTS_PLACES] = {
	[OKP_AFTER_CASES] = okp_test_breakpoint_bytes,
	[OKP_BEFORE_BAD_INPUT] = okp_test_riscv_refusals,
	[OKP_JUMP_CASES] = okp_run_jump_cases,
	[OKP_AFTER_REDIRECT_IGNORED] = okp_test_landings_at_one_offset,
};

/*
 * What riscv's trap exit calls after it sets sscratch (with
 * CONFIG_TRACE_IRQFLAGS: __trace_hardirqs_on/off, lockdep, the stack walk
 * behind CALLER_ADDR1 and, through kprobes' insn-slot check, the RCU read
 * lock).
 */
static const char *const okp_trap_refused[] = {
	"trace_hardirqs_on", "return_address", "walk_stackframe",
	"__kernel_text_address",
#if defined(CONFIG_PREEMPT_RCU) && defined(CONFIG_KPROBES)
	"__rcu_read_lock",
#endif
};

/*
 * Under KASAN every instrumented function on that path may report, and the
 * report reaches printk and what it calls (strscpy among them): over a
 * thousand functions refused.
 */
static const char *const okp_trap_allowed[] = {
	"vfs_read",
#ifndef CONFIG_KASAN
	"strscpy", "kfree", "_printk",
#endif
};

/*
 * Resident, for okptest to read why it stays a breakpoint in debugfs
 * okprobe/jumps: no register is free at the probe.
 */
static const struct okp_symbol_offset okp_resident_refused[] = {
	{ "okp_rvj_no_register", 0 },
};

static const struct okp_trap_path okp_trap_path = {
	.refused = okp_trap_refused,
	.refused_count = IS_ENABLED(CONFIG_TRACE_IRQFLAGS) ?
			 ARRAY_SIZE(okp_trap_refused) : 0,
	.allowed = okp_trap_allowed,
	.allowed_count = ARRAY_SIZE(okp_trap_allowed),
};

static const struct okp_resident_probes okp_residents = {
	.resident = { okp_rvc_stack, 6 }, .refused = okp_resident_refused,
	.refused_count = ARRAY_SIZE(okp_resident_refused),
};

/* ebreak reports its own address: no pc_past_probe. */
const struct okp_selftest_arch okp_selftest_arch = {
	.cases = okp_cases, .case_count = ARRAY_SIZE(okp_cases),
	.tests = okp_riscv_tests,
	.plain = { okp_rv_add, 4, okp_expect_sum },
	.args = { okp_rv_add, 0 },
	.is_breakpoint = okp_is_ebreak, .link_register = okp_ra,
	.lifecycle = &okp_lifecycle, .concurrency = &okp_concurrency,
	.trap_path = &okp_trap_path, .jumps = &okp_jumps,
	.coexistence = &okp_coexistence, .residents = &okp_residents,
};

MODULE_DESCRIPTION("okprobe in-kernel probe tests (riscv64)");
