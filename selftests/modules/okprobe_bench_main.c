// SPDX-License-Identifier: GPL-2.0
/*
 * okprobe_bench.ko: what one probe hit costs, okprobe's against the kernel's
 * kprobes, on the same instruction, and how many of a sample of kernel
 * instructions each can register and optimize (make bench).
 *
 * The per-hit targets are assembly functions that return their argument
 * + 1, each probed at +0: okp_bench_target (okprobe_bench_target.S) on
 * x86; okp_bench_target (a 4-byte instruction) and okp_bench_target_c (a
 * compressed one) on riscv64 (okprobe_bench_riscv_target.S). Nothing is
 * measured at load: the guest's okptest (suite "bench") drives the module
 * through /sys/kernel/debug/okprobe_bench/control, one configuration at a
 * time, so that it can set the kprobes-optimization sysctls and read
 * kprobes/list and okprobe/jumps in between:
 *
 *   arm CONFIG [TARGET]
 *                 register the probe of CONFIG at TARGET+0 (a target's
 *                 name; the first by default): CONFIG none, kprobe (the
 *                 kernel's, with a pre_handler), okprobe-post (okprobe
 *                 with only a post_handler: unboosted) or okprobe-pre
 *                 (okprobe with only a pre_handler: boosted, or optimized
 *                 when okprobe's sysctl allows); and, at a function's
 *                 entry (okp_bench_entry, C, an ftrace call site),
 *                 kretprobe or okretprobe (counting in their return
 *                 handlers: one entry and one return per call; the
 *                 okretprobe at the function's exits where a jump fits
 *                 at each), or okretprobe-rethook (the
 *                 same, OKPROBE_FLAG_RETURN_RETHOOK: the return address
 *                 hooked at the entry), or
 *                 ftrace-ops (a bare ftrace_ops of this module that
 *                 counts: the floor of any probe through ftrace), or
 *                 okprobe-count (a counting okprobe, OKPROBE_FLAG_COUNTER:
 *                 its hits are okprobe_read_count()'s), or okprobe-args
 *                 (an argument-only okprobe: its args_handler counts)
 *   state         whether the armed probe is optimized now
 *   places        where okp_bench_mid's probed instructions are, as
 *                 FUNCTION+OFFSET (make bench's BPF rows)
 *   jump-at OFFSET
 *                 whether a jump (an optprobe's or okprobe's) is in the
 *                 text at the armed target + OFFSET: for probes this
 *                 module did not register (make bench's BPF rows arm
 *                 "none" on okp_bench_mid and attach from user space)
 *   run CALLS     call the armed target CALLS times, in batches with
 *                 preemption off (and interrupts, where the kernel traces
 *                 irq flags), timing only the batches
 *   disarm        unregister the probe
 *   ruler         time a loop of a known number of instructions with
 *                 interrupts off: under QEMU's -icount shift=0 (make
 *                 bench's instruction-count runs) a nanosecond of the
 *                 guest's clock is one instruction, and this checks it
 *
 * and, for the coverage of kernel instructions:
 *
 *   site ADDRESS  add a site (okptest resolves the sample's "symbol offset"
 *                 lines through /proc/kallsyms, or takes the blocks
 *                 okprobe/cover probed); its first bytes are kept
 *   cover KIND [N [SECONDS]]
 *                 register a probe with a counting pre_handler at each of
 *                 the first N sites (all by default), one by one: KIND
 *                 kprobe or okprobe; or okprobe-many, one
 *                 okprobe_register_many() over the sites the last okprobe
 *                 pass took. With SECONDS, a one-by-one pass stops once
 *                 that long has gone by (SECONDS in nanoseconds must fit
 *                 a u64, or ERANGE), and any stops at a fatal signal:
 *                 its sites= says how many it tried, and the pass is
 *                 those
 *   cover-state   count the jumps in the text at registered sites (not
 *                 those through ftrace, whose call is ftrace's), the
 *                 sites whose text differs from what it was (the
 *                 OKP_BENCH_TEXT_SIZE bytes around each; every site's when
 *                 no pass is registered: okptest's "text restored"), the
 *                 hits
 *   cover-again   after an okprobe pass is optimized: unregister the first
 *                 of its probes that is optimized (not through ftrace,
 *                 the same site whatever N) and register it again, each
 *                 timed; okptest then waits for the optimizer's one pass
 *                 for it (make bench's "one more probe")
 *   uncover       unregister them all (unregister_kprobes() or
 *                 okprobe_unregister_many())
 *   sites-clear   forget the sites
 *
 * Reading the file gives the outcome of the last command:
 *
 *   kprobe armed traps=2 preemption=1 irqs_off=0
 *   kprobe optimized=1
 *   places okp_bench_mid+0x13 okp_bench_mid+0x1b
 *   jump-at offset=0x13 jump=1
 *   okprobe-pre calls=100000 ns=123456789 hits=100000 missed=0 bad=0 traps=1 jump=none
 *   cover okprobe sites=1000 registered=812 ns=1234567 moved=0 errors=-1:100,-16:88
 *   cover-state jumps=600 changed=812 hits=12345 missed=0 optimized=600
 *   cover-again site=3 unregister_ns=123456 register_ns=123456 ret=0
 *   uncover okprobe unregistered=812 ns=123456
 *   ruler instructions=2000000 ns=2000093
 *
 * Each handler counts its hits; bad counts calls that returned a wrong
 * value; traps is the number of breakpoint traps (int3, ebreak) one hit
 * takes (0 when the jump was in place for the whole run); jump says whether
 * the probe was optimized (a jump at the probed address) before and after
 * the run: none, throughout or changed; irqs_off whether the batches run
 * with interrupts off; preemption says whether the kernel has
 * CONFIG_PREEMPTION. Only one probe is armed at a time: okprobe refuses an
 * address that holds someone else's int3, and a kprobe would take
 * okprobe's int3 for its own.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/ftrace.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#ifdef OKP_HAVE_LINUX_UNALIGNED
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

#include <okprobe.h>

#include "okprobe_bench.h"

/* The targets: each returns value + 1; +0 is probed. */
long okp_bench_target(long value);
#ifdef CONFIG_RISCV
long okp_bench_target_c(long value);
#endif

/*
 * A C function, for a function's entry: an ftrace call site at +0 where
 * the kernel has ftrace, so that entry probes (okprobe's and kprobes')
 * and return probes go through ftrace where the kernel lets them. On
 * riscv a few nops after the call site leave room for okprobe's jump
 * past it (a function as short as value + 1 would end inside it).
 */
noinline long okp_bench_entry(long value);
noinline long okp_bench_entry(long value)
{
#ifdef CONFIG_RISCV
	asm volatile(".rept 4\n\tnop\n\t.endr");
#endif
	return value + 1;
}

/*
 * Where make bench's BPF rows probe the middle of a function (okptest
 * arms "none" on it and attaches bpftrace from user space). A C function,
 * for its ftrace call site: the kernel's kprobe_events and perf's
 * kprobes, bpftrace's kprobe:, refuse a function without one ("Could not
 * probe notrace function"). Its body is assembly, so that the probed
 * instructions are known; their addresses are okp_bench_mid_places[]
 * (the "places" command gives them as offsets). x86: the first an add
 * whose 5-byte window holds only instructions the kernel's optprobes copy
 * (both the kernel and okprobe put a jump there), the second a test whose
 * window ends in a conditional jump, which the kernel never copies
 * (can_boost()) and okprobe relocates (only okprobe optimizes it). riscv:
 * an addi whose destination is dead before it, which okprobe's auipc +
 * jalr goes through (riscv has no optprobes).
 */
noinline __noclone long okp_bench_mid(long value);
noinline __noclone long okp_bench_mid(long value)
{
	long result;
#ifdef CONFIG_RISCV
	long scratch;

	/* 4-byte instructions: rd != rs1 has no compressed form. */
	asm volatile("addi %[scratch], %[value], 1\n\t"
		     "1: addi %[result], %[scratch], 2\n\t"
		     "addi %[scratch], %[result], -2\n\t"
		     "mv %[result], %[scratch]\n\t"
		     ".pushsection .data\n\t"
		     ".balign 8\n\t"
		     "okp_bench_mid_places: .dword 1b\n\t"
		     ".popsection"
		     : [result] "=&r"(result), [scratch] "=&r"(scratch)
		     : [value] "r"(value));
#else
	asm volatile("mov %[value], %[result]\n\t"
		     "1: add $2, %[result]\n\t"
		     "sub $1, %[result]\n\t"
		     "2: test %[result], %[result]\n\t"
		     "jz 3f\n\t"
		     "3:\n\t"
		     ".pushsection .data\n\t"
		     ".balign 8\n\t"
		     "okp_bench_mid_places: .quad 1b, 2b\n\t"
		     ".popsection"
		     : [result] "=&r"(result)
		     : [value] "r"(value)
		     : "cc");
#endif
	return result;
}

static const struct {
	const char *name;
	void *address;
} okp_bench_targets[] = {
	{ "okp_bench_target", okp_bench_target },
#ifdef CONFIG_RISCV
	{ "okp_bench_target_c", okp_bench_target_c },
#endif
	{ "okp_bench_entry", okp_bench_entry },
	{ "okp_bench_mid", okp_bench_mid },
};

enum okp_bench_config {
	OKP_BENCH_NONE,
	OKP_BENCH_KPROBE,
	OKP_BENCH_OKPROBE_POST,
	OKP_BENCH_OKPROBE_PRE,
	OKP_BENCH_KRETPROBE,
	OKP_BENCH_OKRETPROBE,
	OKP_BENCH_FTRACE_OPS,
	OKP_BENCH_OKPROBE_COUNT,
	OKP_BENCH_OKRETPROBE_RETHOOK,
	OKP_BENCH_OKPROBE_ARGS,
	OKP_BENCH_DISARMED = -1,
};

static const char *const okp_bench_names[] = {
	[OKP_BENCH_NONE] = "none",
	[OKP_BENCH_KPROBE] = "kprobe",
	[OKP_BENCH_OKPROBE_POST] = "okprobe-post",
	[OKP_BENCH_OKPROBE_PRE] = "okprobe-pre",
	[OKP_BENCH_KRETPROBE] = "kretprobe",
	[OKP_BENCH_OKRETPROBE] = "okretprobe",
	[OKP_BENCH_FTRACE_OPS] = "ftrace-ops",
	[OKP_BENCH_OKPROBE_COUNT] = "okprobe-count",
	[OKP_BENCH_OKRETPROBE_RETHOOK] = "okretprobe-rethook",
	[OKP_BENCH_OKPROBE_ARGS] = "okprobe-args",
};

/* Calls per batch run with preemption off. */
#define OKP_BENCH_BATCH 1000UL

/*
 * A kernel that traces irq flags (CONFIG_TRACE_IRQFLAGS, which lockdep's
 * PROVE_LOCKING selects on the riscv test kernels) runs that tracing at
 * every trap taken with interrupts on, and riscv's trace_hardirqs_off/on
 * find their caller's caller by walking the stack under lockdep: about
 * 90 us of every hit under TCG whatever the probe, and as much for every
 * interrupt landing in a batch. There the batches run with interrupts off
 * as well: a trap then changes no irq state and none of that runs.
 */
#define OKP_BENCH_IRQS_OFF IS_ENABLED(CONFIG_TRACE_IRQFLAGS)
#define OKP_BENCH_MAX_CALLS 100000000UL

/*
 * The bytes an optimized probe writes at the probed address: x86, a jmp
 * rel32 (the kernel's optprobe and okprobe); riscv64, okprobe's auipc+jalr
 * through a free register (the kernel has no optprobes there).
 */
#ifdef CONFIG_RISCV
#define OKP_BENCH_JUMP_SIZE 8
#else
#define OKP_BENCH_JUMP_SIZE 5
#endif

static bool okp_bench_is_jump(const u8 *text)
{
#ifdef CONFIG_RISCV
	u32 auipc = get_unaligned_le32(text);
	u32 jalr = get_unaligned_le32(text + 4);
	u16 c_jr = get_unaligned_le16(text + 4);
	u32 rd = (auipc >> 7) & 0x1f;

	/* auipc rd, ...; then jalr ..., ...(rd) or c.jr rd */
	return (auipc & 0x7f) == 0x17 && rd &&
	       (((jalr & 0x707f) == 0x67 && ((jalr >> 15) & 0x1f) == rd) ||
		((c_jr & 0xf07f) == 0x8002 && ((c_jr >> 7) & 0x1f) == rd));
#else
	return text[0] == 0xe9;
#endif
}

static bool okp_bench_jump_at(void *address)
{
	u8 text[OKP_BENCH_JUMP_SIZE];

	return !copy_from_kernel_nofault(text, address, sizeof(text)) &&
	       okp_bench_is_jump(text);
}

static DEFINE_MUTEX(okp_bench_lock);
static int okp_bench_armed = OKP_BENCH_DISARMED;
/* The index in okp_bench_targets of the armed probe's target. */
static int okp_bench_armed_target;
static struct kprobe okp_bench_kprobe;
static struct okprobe okp_bench_okprobe;
#ifdef CONFIG_KRETPROBES
static struct kretprobe okp_bench_kretprobe;
#endif
static struct okretprobe okp_bench_okretprobe;
static atomic_long_t okp_bench_hits;
/* The armed counting probe's count at the end of the last run. */
static unsigned long long okp_bench_counted;

#ifdef CONFIG_DYNAMIC_FTRACE_WITH_REGS
/*
 * The floor of any probe through ftrace: an ftrace_ops of a module (as
 * okprobe's is) whose callback only counts.
 */
static void notrace okp_bench_ftrace_callback(unsigned long ip,
					      unsigned long parent_ip,
					      struct ftrace_ops *ops,
					      struct ftrace_regs *fregs)
{
	int bit = ftrace_test_recursion_trylock(ip, parent_ip);

	if (bit < 0)
		return;
	atomic_long_inc(&okp_bench_hits);
	ftrace_test_recursion_unlock(bit);
}

static struct ftrace_ops okp_bench_ftrace_ops = {
	.func = okp_bench_ftrace_callback,
	.flags = FTRACE_OPS_FL_SAVE_REGS,
};
#endif
static char okp_bench_result[256];
static struct dentry *okp_bench_dir;
/* The coverage pass registered now: OKP_BENCH_KPROBE, _OKPROBE_PRE or none. */
static int okp_bench_cover_kind = OKP_BENCH_DISARMED;

static int okp_bench_covering(void)
{
	return okp_bench_cover_kind != OKP_BENCH_DISARMED;
}

/* ---- Handlers: each counts, nothing else ---------------------------------- */

static int okp_bench_kprobe_pre(struct kprobe *probe, struct pt_regs *regs)
{
	atomic_long_inc(&okp_bench_hits);
	return 0;
}

static int okp_bench_okprobe_pre(struct okprobe *probe, struct pt_regs *regs)
{
	atomic_long_inc(&okp_bench_hits);
	return 0;
}

static void okp_bench_okprobe_args(struct okprobe *probe,
				   struct okprobe_args *args)
{
	atomic_long_inc(&okp_bench_hits);
}

static void okp_bench_okprobe_post(struct okprobe *probe,
				   struct pt_regs *regs, unsigned long flags)
{
	atomic_long_inc(&okp_bench_hits);
}

#ifdef CONFIG_KRETPROBES
static int okp_bench_kretprobe_handler(struct kretprobe_instance *instance,
				       struct pt_regs *regs)
{
	atomic_long_inc(&okp_bench_hits);
	return 0;
}
#endif

static int okp_bench_okretprobe_handler(struct okretprobe_instance *instance,
					struct pt_regs *regs)
{
	atomic_long_inc(&okp_bench_hits);
	return 0;
}

/* ---- Commands ------------------------------------------------------------- */

/*
 * Breakpoint traps per hit of the kernel's kprobe when it is not optimized.
 * x86 boosts (one trap: the copy jumps back) only without
 * CONFIG_PREEMPTION; otherwise the copy ends in a second int3, except for
 * the instructions it emulates. riscv never boosts: a single-stepped copy
 * (an insn slot) ends in an ebreak, a simulated instruction has no slot.
 */
static int okp_bench_kprobe_traps(struct kprobe *probe)
{
#if defined(CONFIG_KPROBES) && defined(CONFIG_X86)
	if (kprobe_ftrace(probe))
		return 0;
	if (probe->ainsn.emulate_op)
		return 1;
	if (probe->ainsn.boostable && !IS_ENABLED(CONFIG_PREEMPTION))
		return 1;
	return 2;
#elif defined(CONFIG_KPROBES) && defined(CONFIG_RISCV)
	if (kprobe_ftrace(probe))
		return 0;
	return probe->ainsn.api.insn ? 2 : 1;
#else
	return 0;
#endif
}

/*
 * Breakpoint traps per hit of the armed probe when it is not optimized.
 * okprobe boosts unless there is a post_handler (on riscv, where the
 * copy's jump back reaches or a register is free after the instruction,
 * as at every bench target).
 */
static int okp_bench_traps(void)
{
	switch (okp_bench_armed) {
	case OKP_BENCH_KPROBE:
		return okp_bench_kprobe_traps(&okp_bench_kprobe);
	case OKP_BENCH_OKPROBE_POST:
		return 2;
	case OKP_BENCH_OKPROBE_PRE:
	case OKP_BENCH_OKPROBE_COUNT:
	case OKP_BENCH_OKPROBE_ARGS:
		return okp_bench_okprobe.flags & OKPROBE_FLAG_FTRACE ? 0 : 1;
#ifdef CONFIG_KRETPROBES
	case OKP_BENCH_KRETPROBE:
		/* The entry's (a kprobe); the return is rethook's, no trap. */
		return okp_bench_kprobe_traps(&okp_bench_kretprobe.kp);
#endif
	case OKP_BENCH_OKRETPROBE:
	case OKP_BENCH_OKRETPROBE_RETHOOK:
		return okp_bench_okretprobe.kp.flags & OKPROBE_FLAG_FTRACE ?
			       0 : 1;
	default:
		return 0;
	}
}

/*
 * Whether the armed probe is optimized now. okprobe says so in its flags.
 * The kernel's KPROBE_FLAG_OPTIMIZED (and so [OPTIMIZED] in kprobes/list)
 * is set when the probe is queued for its optimizer, before the jump is
 * written: only the jmp in the text says the optimizer is done.
 */
static int okp_bench_optimized(void)
{
	switch (okp_bench_armed) {
	/*
	 * Where kprobes put it: past an IBT kernel's endbr64. A kprobe on
	 * ftrace writes no jump: what is there is ftrace's call (riscv's
	 * auipc+jalr looks like an optprobe's jump).
	 */
	case OKP_BENCH_KPROBE:
		return !(okp_bench_kprobe.flags & KPROBE_FLAG_FTRACE) &&
		       okp_bench_jump_at(okp_bench_kprobe.addr);
	case OKP_BENCH_OKPROBE_POST:
	case OKP_BENCH_OKPROBE_PRE:
	case OKP_BENCH_OKPROBE_COUNT:
	case OKP_BENCH_OKPROBE_ARGS:
		return !!(READ_ONCE(okp_bench_okprobe.flags) &
			  OKPROBE_FLAG_OPTIMIZED);
#ifdef CONFIG_KRETPROBES
	case OKP_BENCH_KRETPROBE:
		return !(okp_bench_kretprobe.kp.flags & KPROBE_FLAG_FTRACE) &&
		       okp_bench_jump_at(okp_bench_kretprobe.kp.addr);
#endif
	case OKP_BENCH_OKRETPROBE:
	case OKP_BENCH_OKRETPROBE_RETHOOK:
		return !!(READ_ONCE(okp_bench_okretprobe.kp.flags) &
			  OKPROBE_FLAG_OPTIMIZED);
	default:
		return 0;
	}
}

static unsigned long okp_bench_missed(void)
{
	switch (okp_bench_armed) {
	case OKP_BENCH_KPROBE:
		return okp_bench_kprobe.nmissed;
	case OKP_BENCH_OKPROBE_POST:
	case OKP_BENCH_OKPROBE_PRE:
	case OKP_BENCH_OKPROBE_COUNT:
	case OKP_BENCH_OKPROBE_ARGS:
		return okp_bench_okprobe.nmissed;
#ifdef CONFIG_KRETPROBES
	case OKP_BENCH_KRETPROBE:
		return okp_bench_kretprobe.nmissed +
		       okp_bench_kretprobe.kp.nmissed;
#endif
	case OKP_BENCH_OKRETPROBE:
	case OKP_BENCH_OKRETPROBE_RETHOOK:
		return okp_bench_okretprobe.nmissed +
		       okp_bench_okretprobe.kp.nmissed;
	default:
		return 0;
	}
}

static int okp_bench_target_index(const char *name)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(okp_bench_targets); i++)
		if (!strcmp(okp_bench_targets[i].name, name))
			return i;
	return -EINVAL;
}

static int okp_bench_arm(const char *name, const char *target_name)
{
	int config, target, ret = 0;
	void *address;

	if (okp_bench_armed != OKP_BENCH_DISARMED || okp_bench_covering())
		return -EBUSY;
	config = match_string(okp_bench_names, ARRAY_SIZE(okp_bench_names),
			      name);
	target = target_name[0] ? okp_bench_target_index(target_name) : 0;
	if (config < 0 || target < 0)
		return -EINVAL;
	address = okp_bench_targets[target].address;
	switch (config) {
	case OKP_BENCH_KPROBE:
		memset(&okp_bench_kprobe, 0, sizeof(okp_bench_kprobe));
		okp_bench_kprobe.addr = address;
		okp_bench_kprobe.pre_handler = okp_bench_kprobe_pre;
		ret = register_kprobe(&okp_bench_kprobe);
		break;
	case OKP_BENCH_OKPROBE_POST:
	case OKP_BENCH_OKPROBE_PRE:
		memset(&okp_bench_okprobe, 0, sizeof(okp_bench_okprobe));
		okp_bench_okprobe.addr = address;
		if (config == OKP_BENCH_OKPROBE_POST)
			okp_bench_okprobe.post_handler = okp_bench_okprobe_post;
		else
			okp_bench_okprobe.pre_handler = okp_bench_okprobe_pre;
		ret = okprobe_register(&okp_bench_okprobe);
		break;
	case OKP_BENCH_OKPROBE_COUNT:
		memset(&okp_bench_okprobe, 0, sizeof(okp_bench_okprobe));
		okp_bench_okprobe.addr = address;
		okp_bench_okprobe.flags = OKPROBE_FLAG_COUNTER;
		ret = okprobe_register(&okp_bench_okprobe);
		break;
	case OKP_BENCH_OKPROBE_ARGS:
		memset(&okp_bench_okprobe, 0, sizeof(okp_bench_okprobe));
		okp_bench_okprobe.addr = address;
		okp_bench_okprobe.args_handler = okp_bench_okprobe_args;
		ret = okprobe_register(&okp_bench_okprobe);
		break;
	case OKP_BENCH_KRETPROBE:
#ifdef CONFIG_KRETPROBES
		memset(&okp_bench_kretprobe, 0, sizeof(okp_bench_kretprobe));
		okp_bench_kretprobe.kp.addr = address;
		okp_bench_kretprobe.handler = okp_bench_kretprobe_handler;
		ret = register_kretprobe(&okp_bench_kretprobe);
#else
		ret = -EOPNOTSUPP;
#endif
		break;
	case OKP_BENCH_OKRETPROBE:
	case OKP_BENCH_OKRETPROBE_RETHOOK:
		memset(&okp_bench_okretprobe, 0, sizeof(okp_bench_okretprobe));
		okp_bench_okretprobe.kp.addr = address;
		okp_bench_okretprobe.handler = okp_bench_okretprobe_handler;
		if (config == OKP_BENCH_OKRETPROBE_RETHOOK)
			okp_bench_okretprobe.kp.flags =
				OKPROBE_FLAG_RETURN_RETHOOK;
		ret = okretprobe_register(&okp_bench_okretprobe);
		break;
	case OKP_BENCH_FTRACE_OPS:
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_REGS
		ret = ftrace_set_filter_ip(&okp_bench_ftrace_ops,
					   (unsigned long)address, 0, 1);
		if (!ret) {
			ret = register_ftrace_function(&okp_bench_ftrace_ops);
			if (ret)
				ftrace_set_filter_ip(&okp_bench_ftrace_ops,
						     (unsigned long)address, 1,
						     1);
		}
#else
		ret = -EOPNOTSUPP;
#endif
		break;
	}
	if (ret) {
		pr_err("cannot arm %s on %pS: %d\n", name, address, ret);
		return ret;
	}
	okp_bench_armed = config;
	okp_bench_counted = 0;
	okp_bench_armed_target = target;
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "%s armed traps=%d preemption=%d irqs_off=%d\n", name,
		 okp_bench_traps(), IS_ENABLED(CONFIG_PREEMPTION),
		 OKP_BENCH_IRQS_OFF);
	return 0;
}

static int okp_bench_state(void)
{
	if (okp_bench_armed == OKP_BENCH_DISARMED)
		return -ENOENT;
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "%s optimized=%d\n", okp_bench_names[okp_bench_armed],
		 okp_bench_optimized());
	return 0;
}

/* "places okp_bench_mid+0x13 ...": the places of okp_bench_mid_places. */
static int okp_bench_places(void)
{
	size_t used = scnprintf(okp_bench_result, sizeof(okp_bench_result), "places");
	int i;

	for (i = 0; i < OKP_BENCH_PLACES; i++)
		used += scnprintf(okp_bench_result + used, sizeof(okp_bench_result) - used,
				  " okp_bench_mid+0x%lx",
				  okp_bench_mid_places[i] - (unsigned long)okp_bench_mid);
	scnprintf(okp_bench_result + used, sizeof(okp_bench_result) - used, "\n");
	return 0;
}

static int okp_bench_jump_at_offset(unsigned long offset)
{
	if (okp_bench_armed == OKP_BENCH_DISARMED)
		return -ENOENT;
	if (offset > 64)
		return -EINVAL;
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "jump-at offset=0x%lx jump=%d\n", offset,
		 okp_bench_jump_at((u8 *)okp_bench_targets[okp_bench_armed_target].address +
				   offset));
	return 0;
}

static void okp_bench_disarm(void)
{
	if (okp_bench_armed == OKP_BENCH_KPROBE)
		unregister_kprobe(&okp_bench_kprobe);
	else if (okp_bench_armed == OKP_BENCH_OKPROBE_POST ||
		 okp_bench_armed == OKP_BENCH_OKPROBE_PRE ||
		 okp_bench_armed == OKP_BENCH_OKPROBE_COUNT ||
		 okp_bench_armed == OKP_BENCH_OKPROBE_ARGS)
		okprobe_unregister(&okp_bench_okprobe);
#ifdef CONFIG_KRETPROBES
	else if (okp_bench_armed == OKP_BENCH_KRETPROBE)
		unregister_kretprobe(&okp_bench_kretprobe);
#endif
	else if (okp_bench_armed == OKP_BENCH_OKRETPROBE ||
		 okp_bench_armed == OKP_BENCH_OKRETPROBE_RETHOOK)
		okretprobe_unregister(&okp_bench_okretprobe);
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_REGS
	else if (okp_bench_armed == OKP_BENCH_FTRACE_OPS) {
		unregister_ftrace_function(&okp_bench_ftrace_ops);
		ftrace_set_filter_ip(&okp_bench_ftrace_ops,
				     (unsigned long)okp_bench_entry, 1, 1);
	}
#endif
	okp_bench_armed = OKP_BENCH_DISARMED;
	snprintf(okp_bench_result, sizeof(okp_bench_result), "disarmed\n");
}

/*
 * Calls target for every value in [first, last); returns how many returned
 * a wrong value. Inlined with a constant target, so each call is direct:
 * an indirect call (a retpoline on Debian's x86) would weigh on every row.
 */
static __always_inline unsigned long okp_bench_calls(long (*target)(long),
						     unsigned long first,
						     unsigned long last)
{
	unsigned long bad = 0, i;

	for (i = first; i < last; i++)
		bad += (unsigned long)target(i) != i + 1;
	return bad;
}

static unsigned long okp_bench_batch(unsigned long first, unsigned long last)
{
#ifdef CONFIG_RISCV
	if (okp_bench_targets[okp_bench_armed_target].address ==
	    okp_bench_target_c)
		return okp_bench_calls(okp_bench_target_c, first, last);
#endif
	if (okp_bench_targets[okp_bench_armed_target].address ==
	    okp_bench_entry)
		return okp_bench_calls(okp_bench_entry, first, last);
	if (okp_bench_targets[okp_bench_armed_target].address == okp_bench_mid)
		return okp_bench_calls(okp_bench_mid, first, last);
	return okp_bench_calls(okp_bench_target, first, last);
}

static int okp_bench_run(unsigned long calls)
{
	unsigned long done, batch, bad = 0, missed;
	int optimized_before, optimized_after;
	u64 ns = 0, start;

	if (okp_bench_armed == OKP_BENCH_DISARMED)
		return -ENOENT;
	if (!calls || calls > OKP_BENCH_MAX_CALLS)
		return -EINVAL;
	missed = okp_bench_missed();
	atomic_long_set(&okp_bench_hits, 0);
	optimized_before = okp_bench_optimized();
	for (done = 0; done < calls; done += batch) {
		batch = min(calls - done, OKP_BENCH_BATCH);
		if (OKP_BENCH_IRQS_OFF)
			local_irq_disable();
		else
			preempt_disable();
		start = ktime_get_ns();
		bad += okp_bench_batch(done, done + batch);
		ns += ktime_get_ns() - start;
		if (OKP_BENCH_IRQS_OFF)
			local_irq_enable();
		else
			preempt_enable();
		cond_resched();
		if (fatal_signal_pending(current))
			return -EINTR;
	}
	optimized_after = okp_bench_optimized();
	if (okp_bench_armed == OKP_BENCH_OKPROBE_COUNT) {
		unsigned long long counted = 0;

		/* It counts from its registration: the calls of every run. */
		okprobe_read_count(&okp_bench_okprobe, &counted);
		atomic_long_set(&okp_bench_hits, counted - okp_bench_counted);
		okp_bench_counted = counted;
	}
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "%s calls=%lu ns=%llu hits=%ld missed=%lu bad=%lu traps=%d jump=%s\n",
		 okp_bench_names[okp_bench_armed], calls, ns,
		 atomic_long_read(&okp_bench_hits),
		 okp_bench_missed() - missed, bad,
		 optimized_before && optimized_after ? 0 : okp_bench_traps(),
		 optimized_before != optimized_after ? "changed" :
		 optimized_before ? "throughout" : "none");
	return 0;
}

/* ---- Coverage: probes on a sample of kernel instructions ------------------ */

/*
 * The scale sample's 10,000 instructions, or make bench's okprobe-cover
 * step: the blocks of the functions it covers, up to about 50,000 and the
 * last function's (okptest_bench_cover.c). kvcalloc'd at the first site.
 */
#define OKP_BENCH_MAX_SITES 65536
/* Distinct registration errnos reported per pass. */
#define OKP_BENCH_MAX_ERRORS 16

/*
 * The text compared before and after each pass, around a site: every
 * byte a probe there may write (x86's jump, past an endbr64 too; riscv's
 * windows, which may start up to 6 bytes before the site).
 */
#define OKP_BENCH_TEXT_BEFORE 8
#define OKP_BENCH_TEXT_SIZE 24

struct okp_bench_site {
	unsigned long address;
	/*
	 * The text before any pass, from first: OKP_BENCH_TEXT_BEFORE bytes
	 * before the site, or the site itself where those are not mapped
	 * (x86 6.1's __do_softirq, after the entry text's padding to a PMD).
	 */
	unsigned long first;
	u8 original[OKP_BENCH_TEXT_SIZE];
	int ret;				/* registration, this pass */
	/* Where it was probed: past an entry's endbr64 under IBT. */
	unsigned long probed;
	bool okprobe_ok;	/* the last okprobe one-by-one pass took it */
};

static struct okp_bench_site *okp_bench_sites;
static int okp_bench_site_count;
/* The pass covers the first okp_bench_pass_count sites. */
static int okp_bench_pass_count;
/* okprobe_register_many() instead of one by one (and its result). */
static bool okp_bench_pass_many;
static struct kprobe *okp_bench_site_kprobes;
static struct okprobe *okp_bench_site_okprobes;
/* The registered ones of this pass, for the batch unregistration. */
static void **okp_bench_site_registered;
static atomic_long_t okp_bench_site_hits;

static void okp_bench_free_pass(void)
{
	kvfree(okp_bench_site_kprobes);
	kvfree(okp_bench_site_okprobes);
	kvfree(okp_bench_site_registered);
	okp_bench_site_kprobes = NULL;
	okp_bench_site_okprobes = NULL;
	okp_bench_site_registered = NULL;
	okp_bench_cover_kind = OKP_BENCH_DISARMED;
}

static int okp_bench_site_kprobe_pre(struct kprobe *probe,
				     struct pt_regs *regs)
{
	atomic_long_inc(&okp_bench_site_hits);
	return 0;
}

static int okp_bench_site_okprobe_pre(struct okprobe *probe,
				      struct pt_regs *regs)
{
	atomic_long_inc(&okp_bench_site_hits);
	return 0;
}

static int okp_bench_add_site(unsigned long address)
{
	struct okp_bench_site *site;

	if (okp_bench_covering())
		return -EBUSY;
	if (okp_bench_site_count == OKP_BENCH_MAX_SITES)
		return -ENOSPC;
	if (!okp_bench_sites) {
		okp_bench_sites = kvcalloc(OKP_BENCH_MAX_SITES,
					   sizeof(*okp_bench_sites),
					   GFP_KERNEL);
		if (!okp_bench_sites)
			return -ENOMEM;
	}
	site = &okp_bench_sites[okp_bench_site_count];
	site->address = address;
	site->first = address - OKP_BENCH_TEXT_BEFORE;
	if (copy_from_kernel_nofault(site->original, (void *)site->first,
				     sizeof(site->original))) {
		site->first = address;
		if (copy_from_kernel_nofault(site->original,
					     (void *)site->first,
					     sizeof(site->original)))
			return -EFAULT;
	}
	okp_bench_site_count++;
	snprintf(okp_bench_result, sizeof(okp_bench_result), "site %d\n",
		 okp_bench_site_count);
	return 0;
}

/* Appends "errno:count" pairs of the failed registrations to out. */
static void okp_bench_format_errors(char *out, size_t size)
{
	int errnos[OKP_BENCH_MAX_ERRORS], counts[OKP_BENCH_MAX_ERRORS];
	int distinct = 0, i, j;
	size_t used = 0;

	for (i = 0; i < okp_bench_pass_count; i++) {
		int ret = okp_bench_sites[i].ret;

		if (!ret)
			continue;
		for (j = 0; j < distinct && errnos[j] != ret; j++)
			;
		if (j == distinct) {
			if (distinct == OKP_BENCH_MAX_ERRORS)
				continue;
			errnos[distinct] = ret;
			counts[distinct++] = 0;
		}
		counts[j]++;
	}
	out[0] = '\0';
	for (j = 0; j < distinct && used < size; j++)
		used += scnprintf(out + used, size - used, "%s%d:%d",
				  j ? "," : "", errnos[j], counts[j]);
}

/*
 * Registers a probe at each of the first count sites (all when count is
 * 0): one by one, or (many) with one okprobe_register_many() of the sites
 * the last one-by-one okprobe pass took (it is all or nothing). One by
 * one, a limit (ns, 0: none) ends the pass early: the kernel's kprobes
 * take hours for 50,000 sites (make bench's okprobe-cover step); so does
 * a fatal signal, and then the write fails with EINTR.
 */
static int okp_bench_cover(const char *kind, int count, u64 limit)
{
	int registered = 0, moved = 0, i, many_ret = 0;
	const char *stopped;
	char errors[160];
	u64 start, ns, said;

	if (okp_bench_covering() || okp_bench_armed != OKP_BENCH_DISARMED)
		return -EBUSY;
	if (!okp_bench_site_count)
		return -ENOENT;
	if (count <= 0 || count > okp_bench_site_count)
		count = okp_bench_site_count;
	okp_bench_pass_many = !strcmp(kind, "okprobe-many");
	if (!strcmp(kind, "kprobe"))
		okp_bench_cover_kind = OKP_BENCH_KPROBE;
	else if (!strcmp(kind, "okprobe") || okp_bench_pass_many)
		okp_bench_cover_kind = OKP_BENCH_OKPROBE_PRE;
	else
		return -EINVAL;
	okp_bench_pass_count = count;
	okp_bench_site_kprobes = kvcalloc(count,
					  sizeof(*okp_bench_site_kprobes),
					  GFP_KERNEL);
	okp_bench_site_okprobes = kvcalloc(count,
					   sizeof(*okp_bench_site_okprobes),
					   GFP_KERNEL);
	okp_bench_site_registered = kvcalloc(count,
					     sizeof(*okp_bench_site_registered),
					     GFP_KERNEL);
	if (!okp_bench_site_kprobes || !okp_bench_site_okprobes ||
	    !okp_bench_site_registered) {
		okp_bench_free_pass();
		return -ENOMEM;
	}
	atomic_long_set(&okp_bench_site_hits, 0);
	if (okp_bench_pass_many) {
		struct okprobe **batch =
			(struct okprobe **)okp_bench_site_registered;
		int batched = 0;

		for (i = 0; i < count; i++) {
			struct okp_bench_site *site = &okp_bench_sites[i];
			struct okprobe *op = &okp_bench_site_okprobes[i];

			/* Not in this pass: skipped like a refusal. */
			site->ret = site->okprobe_ok ? 0 : -ENODEV;
			if (site->ret)
				continue;
			op->addr = (void *)site->address;
			op->pre_handler = okp_bench_site_okprobe_pre;
			batch[batched++] = op;
		}
		start = ktime_get_ns();
		if (batched)
			many_ret = okprobe_register_many(batch, batched);
		ns = ktime_get_ns() - start;
		for (i = 0; i < count; i++) {
			struct okp_bench_site *site = &okp_bench_sites[i];

			if (!site->ret && many_ret)
				site->ret = many_ret;
			if (site->ret)
				continue;
			site->probed =
				(unsigned long)okp_bench_site_okprobes[i].addr;
			moved += site->probed != site->address;
		}
		registered = many_ret ? 0 : batched;
		memset(batch, 0, batched * sizeof(*batch));
		okp_bench_format_errors(errors, sizeof(errors));
		snprintf(okp_bench_result, sizeof(okp_bench_result),
			 "cover %s sites=%d registered=%d ns=%llu moved=%d errors=%s\n",
			 kind, count, registered, ns, moved, errors);
		return 0;
	}
	/*
	 * okprobe-many batches the sites this pass takes: not those an
	 * earlier pass took past where this one stops (its limit, a signal).
	 */
	if (okp_bench_cover_kind == OKP_BENCH_OKPROBE_PRE)
		for (i = 0; i < okp_bench_site_count; i++)
			okp_bench_sites[i].okprobe_ok = false;
	start = ktime_get_ns();
	said = start;
	for (i = 0; i < count; i++) {
		struct okp_bench_site *site = &okp_bench_sites[i];
		struct kprobe *kp = &okp_bench_site_kprobes[i];
		struct okprobe *op = &okp_bench_site_okprobes[i];
		void *registered_at;

		/*
		 * Stopped by the limit, or by a fatal signal (the harness
		 * kills a test that outlives its timeout): the pass is the
		 * sites before i, which stay registered until uncover (or
		 * the module's exit) unregisters them.
		 */
		stopped = limit && ktime_get_ns() - start > limit ? "its limit" :
			  fatal_signal_pending(current) ? "a fatal signal" : NULL;
		if (stopped) {
			pr_info("cover %s: stopped by %s after %llu s, at %d of %d sites\n",
				kind, stopped,
				(ktime_get_ns() - start) / NSEC_PER_SEC, i, count);
			okp_bench_pass_count = i;
			break;
		}
		/*
		 * A pass that takes minutes (the kernel's kprobes over 10,000
		 * sites) says where it is each minute: a guest silent for the
		 * runner's limit is hung, and the last site said narrows
		 * where.
		 */
		if (ktime_get_ns() - said > 60 * NSEC_PER_SEC) {
			said = ktime_get_ns();
			pr_info("cover %s: %d of %d sites, next at %pS\n", kind, i,
				count, (void *)site->address);
		}

		if (okp_bench_cover_kind == OKP_BENCH_KPROBE) {
			kp->addr = (kprobe_opcode_t *)site->address;
			kp->pre_handler = okp_bench_site_kprobe_pre;
			site->ret = register_kprobe(kp);
			registered_at = kp->addr;
		} else {
			op->addr = (void *)site->address;
			op->pre_handler = okp_bench_site_okprobe_pre;
			site->ret = okprobe_register(op);
			site->okprobe_ok = !site->ret;
			registered_at = op->addr;
		}
		if (site->ret)
			continue;
		registered++;
		/* Both may move a probe, e.g. past an endbr64 under IBT. */
		site->probed = (unsigned long)registered_at;
		moved += site->probed != site->address;
	}
	ns = ktime_get_ns() - start;
	okp_bench_format_errors(errors, sizeof(errors));
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "cover %s sites=%d registered=%d ns=%llu moved=%d errors=%s\n",
		 kind, okp_bench_pass_count, registered, ns, moved, errors);
	/* The writer is dying: the pass stays registered, as at the limit. */
	return fatal_signal_pending(current) ? -EINTR : 0;
}

/*
 * Whether a jump covers a registered site's probed address: bytes that
 * differ from the text before any pass and read as a jump, starting at
 * the probed address or, on riscv, up to 6 bytes before it (a window that
 * ends with the probed instruction: "from=-B" in okprobe/jumps).
 */
#ifdef CONFIG_RISCV
#define OKP_BENCH_JUMP_BEHIND 6
#else
#define OKP_BENCH_JUMP_BEHIND 0
#endif

static bool okp_bench_jump_over(const struct okp_bench_site *site)
{
	u8 now[OKP_BENCH_JUMP_BEHIND + OKP_BENCH_JUMP_SIZE];
	unsigned long from = site->probed - OKP_BENCH_JUMP_BEHIND;
	unsigned long first = site->first;
	int behind;

	if (copy_from_kernel_nofault(now, (void *)from, sizeof(now)))
		return false;
	for (behind = 0; behind <= OKP_BENCH_JUMP_BEHIND; behind += 2) {
		unsigned long start = site->probed - behind;
		const u8 *text = now + OKP_BENCH_JUMP_BEHIND - behind;
		size_t at = start - first;

		if (start < first ||
		    at + OKP_BENCH_JUMP_SIZE > sizeof(site->original))
			continue;
		/* A riscv window of 6 bytes ends before a site 6 bytes on. */
		if (!memcmp(text, site->original + at, OKP_BENCH_JUMP_SIZE) ||
		    !okp_bench_is_jump(text))
			continue;
		if (IS_ENABLED(CONFIG_RISCV) && behind == 6 &&
		    (get_unaligned_le16(text + 4) & 3) == 2)
			continue;
		return true;
	}
	return false;
}

/* Whether the pass's probe at site i went through ftrace, not the text. */
static bool okp_bench_site_through_ftrace(int i)
{
	if (okp_bench_cover_kind == OKP_BENCH_KPROBE)
		return okp_bench_site_kprobes[i].flags & KPROBE_FLAG_FTRACE;
	return READ_ONCE(okp_bench_site_okprobes[i].flags) &
	       OKPROBE_FLAG_FTRACE;
}

static int okp_bench_cover_state(void)
{
	int jumps = 0, changed = 0, optimized = 0, i;
	unsigned long missed = 0;
	u8 now[OKP_BENCH_TEXT_SIZE];

	/* Without a pass, every site's text (the last pass's end). */
	for (i = 0; i < (okp_bench_covering() ? okp_bench_pass_count :
			 okp_bench_site_count); i++) {
		struct okp_bench_site *site = &okp_bench_sites[i];

		if (copy_from_kernel_nofault(now, (void *)site->first,
					     sizeof(now)))
			return -EFAULT;
		changed += memcmp(now, site->original, sizeof(now)) != 0;
		if (!okp_bench_covering() || site->ret)
			continue;
		/* ftrace's call at an entry is not a probe's jump. */
		if (!okp_bench_site_through_ftrace(i))
			jumps += okp_bench_jump_over(site);
		if (okp_bench_cover_kind == OKP_BENCH_KPROBE) {
			missed += okp_bench_site_kprobes[i].nmissed;
		} else {
			missed += okp_bench_site_okprobes[i].nmissed;
			optimized += !!(READ_ONCE(okp_bench_site_okprobes[i].flags) &
					OKPROBE_FLAG_OPTIMIZED);
		}
	}
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "cover-state jumps=%d changed=%d hits=%ld missed=%lu optimized=%d\n",
		 jumps, changed, atomic_long_read(&okp_bench_site_hits), missed,
		 optimized);
	return 0;
}

/*
 * One probe of an optimized okprobe pass out and in again, timed: the
 * first site whose probe is optimized (not through ftrace), so that every
 * N of the scale table measures the same site. The optimizer's pass for it
 * is then the only one (okptest reads okprobe/writer_steps around it).
 */
static int okp_bench_cover_again(void)
{
	struct okp_bench_site *site;
	struct okprobe *op;
	u64 start, unregister_ns, register_ns;
	int i;

	if (okp_bench_cover_kind != OKP_BENCH_OKPROBE_PRE)
		return -EINVAL;
	for (i = 0; i < okp_bench_pass_count; i++) {
		unsigned int flags = READ_ONCE(okp_bench_site_okprobes[i].flags);

		if (!okp_bench_sites[i].ret && (flags & OKPROBE_FLAG_OPTIMIZED) &&
		    !(flags & OKPROBE_FLAG_FTRACE))
			break;
	}
	if (i == okp_bench_pass_count)
		return -ENOENT;
	site = &okp_bench_sites[i];
	op = &okp_bench_site_okprobes[i];
	start = ktime_get_ns();
	okprobe_unregister(op);
	unregister_ns = ktime_get_ns() - start;
	memset(op, 0, sizeof(*op));
	op->addr = (void *)site->address;
	op->pre_handler = okp_bench_site_okprobe_pre;
	start = ktime_get_ns();
	site->ret = okprobe_register(op);
	register_ns = ktime_get_ns() - start;
	if (!site->ret)
		site->probed = (unsigned long)op->addr;
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "cover-again site=%d unregister_ns=%llu register_ns=%llu ret=%d\n",
		 i, unregister_ns, register_ns, site->ret);
	return 0;
}

static void okp_bench_uncover(void)
{
	void **registered = okp_bench_site_registered;
	int count = 0, i;
	u64 start, ns;

	if (!okp_bench_covering())
		return;
	for (i = 0; i < okp_bench_pass_count; i++) {
		if (okp_bench_sites[i].ret)
			continue;
		if (okp_bench_cover_kind == OKP_BENCH_KPROBE)
			registered[count++] = &okp_bench_site_kprobes[i];
		else
			registered[count++] = &okp_bench_site_okprobes[i];
	}
	start = ktime_get_ns();
	if (count && okp_bench_cover_kind == OKP_BENCH_KPROBE)
		unregister_kprobes((struct kprobe **)registered, count);
	else if (count)
		okprobe_unregister_many((struct okprobe **)registered, count);
	ns = ktime_get_ns() - start;
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "uncover %s unregistered=%d ns=%llu\n",
		 okp_bench_cover_kind == OKP_BENCH_KPROBE ? "kprobe" : "okprobe",
		 count, ns);
	okp_bench_free_pass();
}

static int okp_bench_clear_sites(void)
{
	if (okp_bench_covering())
		return -EBUSY;
	kvfree(okp_bench_sites);
	okp_bench_sites = NULL;
	okp_bench_site_count = 0;
	snprintf(okp_bench_result, sizeof(okp_bench_result), "sites 0\n");
	return 0;
}

/*
 * The ruler: OKP_BENCH_RULER_LOOPS iterations of a two-instruction loop
 * (decrement, branch back while nonzero), timed like a batch, with
 * interrupts off so that nothing else runs in between.
 */
#define OKP_BENCH_RULER_LOOPS 1000000UL

static int okp_bench_ruler(void)
{
	unsigned long left = OKP_BENCH_RULER_LOOPS, flags;
	u64 start, ns;

	local_irq_save(flags);
	start = ktime_get_ns();
#ifdef CONFIG_RISCV
	asm volatile("1: addi %0, %0, -1\n\tbnez %0, 1b" : "+r"(left));
#else
	asm volatile("1: dec %0\n\tjnz 1b" : "+r"(left) : : "cc");
#endif
	ns = ktime_get_ns() - start;
	local_irq_restore(flags);
	snprintf(okp_bench_result, sizeof(okp_bench_result),
		 "ruler instructions=%lu ns=%llu\n", 2 * OKP_BENCH_RULER_LOOPS,
		 ns);
	return 0;
}

/* ---- debugfs okprobe_bench/control ---------------------------------------- */

static ssize_t okp_bench_control_write(struct file *file,
				       const char __user *buffer,
				       size_t count, loff_t *position)
{
	char command[96], name[32], target[48] = "";
	unsigned long number, seconds;
	int ret;

	if (count >= sizeof(command))
		return -EINVAL;
	if (copy_from_user(command, buffer, count))
		return -EFAULT;
	command[count] = '\0';
	mutex_lock(&okp_bench_lock);
	/*
	 * Whole words first: a space in a sscanf() format matches no space
	 * too, so "cover %31s" would take "cover-state".
	 */
	if (sysfs_streq(command, "state")) {
		ret = okp_bench_state();
	} else if (sysfs_streq(command, "disarm")) {
		okp_bench_disarm();
		ret = 0;
	} else if (sysfs_streq(command, "cover-state")) {
		ret = okp_bench_cover_state();
	} else if (sysfs_streq(command, "cover-again")) {
		ret = okp_bench_cover_again();
	} else if (sysfs_streq(command, "uncover")) {
		okp_bench_uncover();
		ret = 0;
	} else if (sysfs_streq(command, "ruler")) {
		ret = okp_bench_ruler();
	} else if (sysfs_streq(command, "sites-clear")) {
		ret = okp_bench_clear_sites();
	} else if (sscanf(command, "arm %31s %47s", name, target) >= 1) {
		ret = okp_bench_arm(name, target);
	} else if (sysfs_streq(command, "places")) {
		ret = okp_bench_places();
	} else if (sscanf(command, "jump-at %lx", &number) == 1) {
		ret = okp_bench_jump_at_offset(number);
	} else if (sscanf(command, "run %lu", &number) == 1) {
		ret = okp_bench_run(number);
	} else if (sscanf(command, "site %lx", &number) == 1) {
		ret = okp_bench_add_site(number);
	} else if (sscanf(command, "cover %31s %lu %lu", name, &number,
			  &seconds) == 3) {
		/* A limit its nanoseconds would not hold is refused. */
		ret = seconds > U64_MAX / NSEC_PER_SEC ? -ERANGE :
		      okp_bench_cover(name, number, seconds * NSEC_PER_SEC);
	} else if (sscanf(command, "cover %31s %lu", name, &number) == 2) {
		ret = okp_bench_cover(name, number, 0);
	} else if (sscanf(command, "cover %31s", name) == 1) {
		ret = okp_bench_cover(name, 0, 0);
	} else {
		ret = -EINVAL;
	}
	mutex_unlock(&okp_bench_lock);
	return ret ? ret : count;
}

static ssize_t okp_bench_control_read(struct file *file, char __user *buffer,
				      size_t count, loff_t *position)
{
	ssize_t ret;

	mutex_lock(&okp_bench_lock);
	ret = simple_read_from_buffer(buffer, count, position,
				      okp_bench_result,
				      strlen(okp_bench_result));
	mutex_unlock(&okp_bench_lock);
	return ret;
}

static const struct file_operations okp_bench_control_fops = {
	.owner = THIS_MODULE,
	.write = okp_bench_control_write,
	.read = okp_bench_control_read,
	.llseek = default_llseek,
};

static int __init okp_bench_init(void)
{
	int version = okprobe_api_version();

	if (version != OKPROBE_API_VERSION) {
		pr_err("okprobe API version %d, built for %d\n", version,
		       OKPROBE_API_VERSION);
		return -EINVAL;
	}
	okp_bench_dir = debugfs_create_dir("okprobe_bench", NULL);
	debugfs_create_file("control", 0600, okp_bench_dir, NULL,
			    &okp_bench_control_fops);
	return 0;
}

static void __exit okp_bench_exit(void)
{
	debugfs_remove_recursive(okp_bench_dir);
	mutex_lock(&okp_bench_lock);
	okp_bench_disarm();
	okp_bench_uncover();
	okp_bench_clear_sites();
	mutex_unlock(&okp_bench_lock);
}

module_init(okp_bench_init);
module_exit(okp_bench_exit);
MODULE_DESCRIPTION("okprobe benchmark: per-hit cost and coverage against kprobes");
MODULE_LICENSE("GPL");
