// SPDX-License-Identifier: GPL-2.0
/*
 * A function's entry, symbol+0, on every kernel: through ftrace where it
 * saves registers (OKPROBE_FLAG_FTRACE, as kprobes on ftrace), else at the
 * first instruction past the ftrace call site, else (no ftrace) at the
 * first instruction. The handlers see the arguments the function got; a
 * pre_handler can make the function return at once; the kernel's own
 * kprobe at +0 of the same function counts the same calls, alone and,
 * where both go through ftrace, at once.
 *
 * Targets: okp_entry_target, C in this module (so ftrace has a call site
 * at its entry wherever the kernel has ftrace), and kstrtoull, a kernel
 * function others call too, whose hits are counted only for the string
 * the test passes. Whether a kernel function is traced is the kernel's
 * build's choice (lib/string.c is not, on Debian's kernels): the kernel
 * function's entry is checked against what okprobe says it found.
 */
#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/kernel.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kprobes.h>
#include <linux/ptrace.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "okprobe_selftest.h"
#include "okprobe_selftest_common.h"

#define OKP_ENTRY_CALLS 1000

/* Not static and called through a pointer: no clone takes its calls. */
noinline long okp_entry_target(long a, long b);
noinline long okp_entry_target(long a, long b)
{
	return a * 3 + b;
}

static long okp_entry_call(long a, long b)
{
	long (*target)(long a, long b) = okp_entry_target;

	OPTIMIZER_HIDE_VAR(target);
	return target(a, b);
}

#ifdef CONFIG_X86_64
/* Where an overriding pre_handler sends the function: straight back. */
static noinline notrace void okp_entry_just_return(void)
{
}
#endif

/* The first byte of the function's own code (past an IBT landing pad). */
static unsigned long okp_entry_code(void *function)
{
	return (unsigned long)function + okp_entry_pad(function);
}

/*
 * Where okprobe must put a probe asked for function+0, and whether through
 * ftrace: what this kernel's configuration says of a traced function.
 */
static unsigned long okp_entry_expected(void *function, bool *via_ftrace)
{
	*via_ftrace = false;
#ifdef CONFIG_DYNAMIC_FTRACE
	if (IS_ENABLED(CONFIG_DYNAMIC_FTRACE_WITH_REGS)) {
		*via_ftrace = true;
		return okp_entry_code(function);
	}
#if defined(MCOUNT_AUIPC_SIZE) && defined(MCOUNT_JALR_SIZE)
	/*
	 * riscv's call site as patched atomically (6.16 on): auipc, then
	 * the jalr that ftrace records and MCOUNT_INSN_SIZE measures.
	 */
	return okp_entry_code(function) + MCOUNT_AUIPC_SIZE + MCOUNT_JALR_SIZE;
#else
	return okp_entry_code(function) + MCOUNT_INSN_SIZE;
#endif
#else
	return okp_entry_code(function);
#endif
}

struct okp_entry_probe {
	struct okprobe probe;
	atomic_long_t hits, post_hits, arg_sum;
	/* Counted only when the first argument is this (0: always). */
	unsigned long only_arg0;
	unsigned long pre_ip, post_ip;	/* the last hit's */
	bool override;			/* make the function return 42 */
};

/*
 * Counts a hit and adds up its first two arguments, unless the first is
 * not only_arg0 (when that is set): false then.
 */
static bool okp_entry_count(struct pt_regs *regs, unsigned long only_arg0,
			    atomic_long_t *hits, atomic_long_t *arg_sum)
{
	if (only_arg0 && regs_get_kernel_argument(regs, 0) != only_arg0)
		return false;
	atomic_long_inc(hits);
	atomic_long_add(regs_get_kernel_argument(regs, 0) +
			regs_get_kernel_argument(regs, 1), arg_sum);
	return true;
}

static int okp_entry_pre(struct okprobe *probe, struct pt_regs *regs)
{
	struct okp_entry_probe *p =
		container_of(probe, struct okp_entry_probe, probe);

	if (!okp_entry_count(regs, p->only_arg0, &p->hits, &p->arg_sum))
		return 0;
	p->pre_ip = instruction_pointer(regs);
	if (!p->override)
		return 0;
	regs_set_return_value(regs, 42);
#ifdef CONFIG_X86_64
	instruction_pointer_set(regs, (unsigned long)okp_entry_just_return);
#else
	instruction_pointer_set(regs, regs->ra);
#endif
	return 1;
}

static void okp_entry_post(struct okprobe *probe, struct pt_regs *regs,
			   unsigned long flags)
{
	struct okp_entry_probe *p =
		container_of(probe, struct okp_entry_probe, probe);

	if (p->only_arg0 && regs_get_kernel_argument(regs, 0) != p->only_arg0)
		return;
	atomic_long_inc(&p->post_hits);
	p->post_ip = instruction_pointer(regs);
}

/* The pc a hit at address shows the handlers (include/okprobe.h). */
static unsigned long okp_entry_hit_pc(unsigned long address)
{
	return IS_ENABLED(CONFIG_X86_64) ? address + 1 : address;
}

/* okp_entry_target(i, 7) for i < calls: the arguments' sum. */
static long okp_entry_calls(int calls, long *wrong)
{
	long sum = 0;
	int i;

	*wrong = 0;
	for (i = 0; i < calls; i++) {
		sum += i + 7;
		if (okp_entry_call(i, 7) != i * 3 + 7)
			(*wrong)++;
	}
	return sum;
}

static void okp_test_entry_target(bool post)
{
	struct okp_entry_probe *p = kzalloc(sizeof(*p), GFP_KERNEL);
	unsigned long expected;
	bool via_ftrace;
	char why[160] = "";
	char name[128];
	long sum, wrong;
	int ret;

	expected = okp_entry_expected(okp_entry_target, &via_ftrace);
	snprintf(name, sizeof(name),
		 "entry probe at okp_entry_target+0%s: %s, %d calls counted with their arguments",
		 post ? " with a post_handler" : "",
		 via_ftrace ? "through ftrace" :
		 IS_ENABLED(CONFIG_DYNAMIC_FTRACE) ? "past the ftrace call site" :
		 "at the first instruction", OKP_ENTRY_CALLS);
	EXPECT(p, "out of memory");
	p->probe.addr = okp_entry_target;
	p->probe.pre_handler = okp_entry_pre;
	if (post)
		p->probe.post_handler = okp_entry_post;
	ret = okprobe_register(&p->probe);
	EXPECT(!ret, "okprobe_register: %d", ret);
	EXPECT((unsigned long)p->probe.addr == expected,
	       "probed %pS, not %pS", p->probe.addr, (void *)expected);
	EXPECT(!!(p->probe.flags & OKPROBE_FLAG_FTRACE) == via_ftrace,
	       "flags %#x", p->probe.flags);
	sum = okp_entry_calls(OKP_ENTRY_CALLS, &wrong);
	EXPECT(!wrong, "%ld wrong results", wrong);
	EXPECT(atomic_long_read(&p->hits) == OKP_ENTRY_CALLS,
	       "%ld hits", atomic_long_read(&p->hits));
	EXPECT(atomic_long_read(&p->arg_sum) == sum,
	       "arguments add up to %ld, not %ld",
	       atomic_long_read(&p->arg_sum), sum);
	EXPECT(p->pre_ip == okp_entry_hit_pc(expected),
	       "pre_handler saw ip %pS", (void *)p->pre_ip);
	EXPECT(!p->probe.nmissed, "%lu missed", p->probe.nmissed);
	if (post) {
		EXPECT(atomic_long_read(&p->post_hits) == OKP_ENTRY_CALLS,
		       "%ld post_handler runs",
		       atomic_long_read(&p->post_hits));
#ifdef CONFIG_DYNAMIC_FTRACE
		EXPECT(!via_ftrace || p->post_ip == expected + MCOUNT_INSN_SIZE,
		       "post_handler saw ip %pS", (void *)p->post_ip);
#endif
	}
out:
	if (p && p->probe.okp_site)
		okprobe_unregister(&p->probe);
	okp_report(!why[0], name, why);
	kfree(p);
}

/*
 * A pre_handler that sets the return value and the pc to the caller's
 * return path: the function returns 42 without running (what
 * fault-injection does with kprobes). The post_handler keeps the probe a
 * breakpoint where it is not entered through ftrace: an optimized probe
 * ignores a changed pc.
 */
static void okp_test_entry_override(bool post)
{
	struct okp_entry_probe *p = kzalloc(sizeof(*p), GFP_KERNEL);
	char why[160] = "";
	char name[128];
	int ret, i;

	snprintf(name, sizeof(name),
		 "entry probe's pre_handler returns the function early (override%s)",
		 post ? ", with a post_handler" : ", pre_handler alone");
	EXPECT(p, "out of memory");
	p->probe.addr = okp_entry_target;
	p->probe.pre_handler = okp_entry_pre;
	if (post)
		p->probe.post_handler = okp_entry_post;
	p->override = true;
	ret = okprobe_register(&p->probe);
	EXPECT(!ret, "okprobe_register: %d", ret);
	for (i = 0; i < 100; i++)
		EXPECT(okp_entry_call(i, 7) == 42,
		       "call %d returned %ld", i, okp_entry_call(i, 7));
	EXPECT(atomic_long_read(&p->hits) >= 100, "%ld hits",
	       atomic_long_read(&p->hits));
	EXPECT(!atomic_long_read(&p->post_hits),
	       "the post_handler ran for a skipped function");
	okprobe_unregister(&p->probe);
	EXPECT(okp_entry_call(5, 7) == 22, "still overridden after unregister");
out:
	if (p && p->probe.okp_site)
		okprobe_unregister(&p->probe);
	okp_report(!why[0], name, why);
	kfree(p);
}

#ifdef CONFIG_KPROBES
struct okp_entry_kprobe {
	struct kprobe kp;
	atomic_long_t hits, arg_sum;
	unsigned long only_arg0;
};

static int okp_entry_kprobe_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct okp_entry_kprobe *k =
		container_of(kp, struct okp_entry_kprobe, kp);

	okp_entry_count(regs, k->only_arg0, &k->hits, &k->arg_sum);
	return 0;
}

static void okp_entry_kprobe_post(struct kprobe *kp, struct pt_regs *regs,
				  unsigned long flags)
{
}

/* kstrtoull(text, 10, &value) for i < calls: what the probes add up. */
static long okp_entry_kstrtoull_calls(char *text, int calls)
{
	unsigned long long value;
	long sum = 0;
	int i;

	for (i = 0; i < calls; i++) {
		sum += (long)text + 10;
		if (kstrtoull(text, 10, &value) || value != 12345)
			sum = -1;
	}
	return sum;
}

/*
 * Two phases of the same calls, then both at once: the kernel's kprobe at
 * +0 (through ftrace where the kernel has kprobes on ftrace; on riscv 6.12,
 * which has not, the kernel refuses +0 with EINVAL, and its kprobe goes
 * where okprobe went) and okprobe's entry probe count the same calls and
 * see the same arguments.
 */
static void okp_test_entry_against_kprobe(void *function, const char *what,
					  bool filtered)
{
	struct okp_entry_probe *p = kzalloc(sizeof(*p), GFP_KERNEL);
	struct okp_entry_kprobe *k = kzalloc(sizeof(*k), GFP_KERNEL);
	char *buffer = kstrdup("12345", GFP_KERNEL);
	bool via_ftrace, together, kprobed = false;
	unsigned long expected;
	char why[200] = "";
	char name[160];
	long sum, wrong = 0;
	int ret;

	expected = okp_entry_expected(function, &via_ftrace);
	snprintf(name, sizeof(name),
		 "entry probe at %s+0 and the kernel's kprobe count the same %d calls and arguments",
		 what, OKP_ENTRY_CALLS);
	EXPECT(p && k && buffer, "out of memory");
	if (filtered)
		p->only_arg0 = k->only_arg0 = (unsigned long)buffer;

	/* Phase 1: okprobe alone. */
	p->probe.addr = function;
	p->probe.pre_handler = okp_entry_pre;
	ret = okprobe_register(&p->probe);
	EXPECT(!ret, "okprobe_register: %d", ret);
	/* A kernel function's build may leave ftrace out of it. */
	if (filtered && !(p->probe.flags & OKPROBE_FLAG_FTRACE) &&
	    (unsigned long)p->probe.addr == okp_entry_code(function)) {
		expected = okp_entry_code(function);
		via_ftrace = false;
	}
	EXPECT((unsigned long)p->probe.addr == expected,
	       "okprobe probed %pS, not %pS", p->probe.addr,
	       (void *)expected);
	EXPECT(!!(p->probe.flags & OKPROBE_FLAG_FTRACE) == via_ftrace,
	       "flags %#x", p->probe.flags);
	sum = filtered ? okp_entry_kstrtoull_calls(buffer, OKP_ENTRY_CALLS) :
			 okp_entry_calls(OKP_ENTRY_CALLS, &wrong);
	EXPECT(!wrong, "%ld wrong results", wrong);
	EXPECT(atomic_long_read(&p->hits) == OKP_ENTRY_CALLS &&
	       atomic_long_read(&p->arg_sum) == sum,
	       "okprobe alone: %ld hits, arguments %ld (not %ld)",
	       atomic_long_read(&p->hits), atomic_long_read(&p->arg_sum), sum);
	okprobe_unregister(&p->probe);

	/* Phase 2: the kernel's kprobe alone, at +0. */
	k->kp.addr = function;
	k->kp.pre_handler = okp_entry_kprobe_pre;
	ret = register_kprobe(&k->kp);
	together = !ret && via_ftrace;
	if (ret == -EINVAL && expected != okp_entry_code(function)) {
		/* No kprobes on ftrace: where okprobe went. */
		memset(&k->kp, 0, sizeof(k->kp));
		k->kp.addr = (void *)expected;
		k->kp.pre_handler = okp_entry_kprobe_pre;
		ret = register_kprobe(&k->kp);
	}
	EXPECT(!ret, "register_kprobe: %d", ret);
	kprobed = true;
	/* The kernel's own answer: at +0 it uses ftrace exactly when okprobe
	 * does (on kernels with kprobes on ftrace).
	 */
	EXPECT(!IS_ENABLED(CONFIG_KPROBES_ON_FTRACE) ||
	       !!(k->kp.flags & KPROBE_FLAG_FTRACE) == via_ftrace,
	       "the kernel's kprobe %s ftrace, okprobe %s",
	       k->kp.flags & KPROBE_FLAG_FTRACE ? "uses" : "does not use",
	       via_ftrace ? "does" : "does not");
	sum = filtered ? okp_entry_kstrtoull_calls(buffer, OKP_ENTRY_CALLS) :
			 okp_entry_calls(OKP_ENTRY_CALLS, &wrong);
	EXPECT(atomic_long_read(&k->hits) == OKP_ENTRY_CALLS &&
	       atomic_long_read(&k->arg_sum) == sum,
	       "kprobe alone: %ld hits, arguments %ld (not %ld)",
	       atomic_long_read(&k->hits), atomic_long_read(&k->arg_sum), sum);

	/*
	 * Phase 3, where both go through ftrace: okprobe writes no byte
	 * there, so neither refuses the other.
	 */
	if (together) {
		atomic_long_set(&k->hits, 0);
		atomic_long_set(&k->arg_sum, 0);
		memset(&p->probe, 0, sizeof(p->probe));
		atomic_long_set(&p->hits, 0);
		atomic_long_set(&p->arg_sum, 0);
		p->probe.addr = function;
		p->probe.pre_handler = okp_entry_pre;
		ret = okprobe_register(&p->probe);
		EXPECT(!ret, "okprobe_register beside the kprobe: %d", ret);
		sum = filtered ?
			okp_entry_kstrtoull_calls(buffer, OKP_ENTRY_CALLS) :
			okp_entry_calls(OKP_ENTRY_CALLS, &wrong);
		EXPECT(atomic_long_read(&p->hits) == OKP_ENTRY_CALLS &&
		       atomic_long_read(&k->hits) == OKP_ENTRY_CALLS &&
		       atomic_long_read(&p->arg_sum) == sum &&
		       atomic_long_read(&k->arg_sum) == sum,
		       "together: okprobe %ld hits, kprobe %ld", atomic_long_read(&p->hits),
		       atomic_long_read(&k->hits));
	}
out:
	if (p && p->probe.okp_site)
		okprobe_unregister(&p->probe);
	if (kprobed)
		unregister_kprobe(&k->kp);
	okp_report(!why[0], name, why);
	kfree(buffer);
	kfree(k);
	kfree(p);
}

/*
 * ftrace lets one user change a function's ip: the kernel's kprobe with a
 * post_handler at +0 holds kprobe_ipmodify_ops there, so okprobe's entry
 * probe with a post_handler is refused (EBUSY, ftrace's word), one without
 * one joins through the ops that leave the ip alone, and counts.
 */
static void okp_test_entry_ipmodify_owner(void)
{
	struct okp_entry_probe *p = kzalloc(sizeof(*p), GFP_KERNEL);
	struct okp_entry_kprobe *k = kzalloc(sizeof(*k), GFP_KERNEL);
	bool kprobed = false;
	char why[160] = "";
	long wrong;
	int ret;

	EXPECT(p && k, "out of memory");
	k->kp.addr = (void *)okp_entry_target;
	k->kp.pre_handler = okp_entry_kprobe_pre;
	k->kp.post_handler = okp_entry_kprobe_post;
	ret = register_kprobe(&k->kp);
	EXPECT(!ret, "register_kprobe with a post_handler: %d", ret);
	kprobed = true;
	EXPECT(k->kp.flags & KPROBE_FLAG_FTRACE, "the kernel's kprobe is not on ftrace");
	p->probe.addr = okp_entry_target;
	p->probe.pre_handler = okp_entry_pre;
	p->probe.post_handler = okp_entry_post;
	ret = okprobe_register(&p->probe);
	EXPECT(ret == -EBUSY, "okprobe with a post_handler beside it: %d", ret);
	memset(&p->probe, 0, sizeof(p->probe));
	p->probe.addr = okp_entry_target;
	p->probe.pre_handler = okp_entry_pre;
	ret = okprobe_register(&p->probe);
	EXPECT(!ret, "okprobe without a post_handler beside it: %d", ret);
	okp_entry_calls(OKP_ENTRY_CALLS, &wrong);
	EXPECT(!wrong && atomic_long_read(&p->hits) == OKP_ENTRY_CALLS &&
	       atomic_long_read(&k->hits) == OKP_ENTRY_CALLS,
	       "okprobe %ld hits, kprobe %ld, %ld wrong results",
	       atomic_long_read(&p->hits), atomic_long_read(&k->hits), wrong);
out:
	if (p && p->probe.okp_site)
		okprobe_unregister(&p->probe);
	if (kprobed)
		unregister_kprobe(&k->kp);
	okp_report(!why[0], "an entry's ip owned by the kernel's kprobe (post_handler): okprobe's post_handler probe refused with EBUSY, one without joins and counts",
		   why);
	kfree(k);
	kfree(p);
}
#endif

/*
 * Two entries in one ftrace_ops while every CPU calls both: taking one out
 * (its call site leaves the filter; the ops stays) stops its count and
 * leaves the other counting every call.
 */
noinline long okp_entry_target2(long a, long b);
noinline long okp_entry_target2(long a, long b)
{
	return a * 5 + b;
}

static long okp_entry_round(long a)
{
	long (*first)(long a, long b) = okp_entry_target;
	long (*second)(long a, long b) = okp_entry_target2;

	OPTIMIZER_HIDE_VAR(first);
	OPTIMIZER_HIDE_VAR(second);
	return (first(a, 1) != a * 3 + 1) + (second(a, 1) != a * 5 + 1);
}

static void okp_test_entry_two_sites(void)
{
	struct okp_entry_probe *p = kcalloc(2, sizeof(*p), GFP_KERNEL);
	struct okp_hammer *hammers = kcalloc(nr_cpu_ids, sizeof(*hammers),
					     GFP_KERNEL);
	long calls = 0, wrong = 0, wrong_after = 0, after, before;
	unsigned long deadline = jiffies + 60 * HZ;
	unsigned int started = 0;
	char why[160] = "";
	int ret, i;

	EXPECT(p && hammers, "out of memory");
	p[0].probe.addr = okp_entry_target;
	p[1].probe.addr = okp_entry_target2;
	for (i = 0; i < 2; i++) {
		p[i].probe.pre_handler = okp_entry_pre;
		ret = okprobe_register(&p[i].probe);
		EXPECT(!ret, "okprobe_register %d: %d", i, ret);
	}
	started = okp_start_round_hammers(hammers, okp_entry_round);
	EXPECT(started == num_online_cpus(), "started %u threads", started);
	while (okp_hammer_calls(hammers) < 20000 && time_before(jiffies, deadline))
		msleep(20);
	okprobe_unregister(&p[0].probe);
	before = atomic_long_read(&p[1].hits);
	while (atomic_long_read(&p[1].hits) < before + 20000 &&
	       time_before(jiffies, deadline))
		msleep(20);
	okp_stop_hammers(hammers, &calls, &wrong);
	started = 0;
	EXPECT(time_before(jiffies, deadline), "the calls did not come in 60 s");
	after = atomic_long_read(&p[0].hits);
	okp_entry_calls(10, &wrong_after);
	EXPECT(atomic_long_read(&p[0].hits) == after,
	       "the unregistered entry still counts");
	EXPECT(!wrong && !wrong_after, "%ld wrong results",
	       wrong + wrong_after);
	/* Every call of the second function: the rounds, then those ten. */
	EXPECT(atomic_long_read(&p[1].hits) == calls,
	       "the remaining entry counted %ld of %ld calls",
	       atomic_long_read(&p[1].hits), calls);
	EXPECT(!p[1].probe.nmissed, "%lu missed", p[1].probe.nmissed);
out:
	if (started)
		okp_stop_hammers(hammers, &calls, &wrong);
	for (i = 0; p && i < 2; i++)
		if (p[i].probe.okp_site)
			okprobe_unregister(&p[i].probe);
	okp_report(!why[0], "two entry probes while every CPU calls both: one unregistered stops, the other counts every call",
		   why);
	kfree(hammers);
	kfree(p);
}

#ifdef CONFIG_KPROBES_ON_FTRACE
static int okp_entry_owner_pre(struct kprobe *kp, struct pt_regs *regs)
{
	return 0;
}
#endif

/*
 * okprobe_register_many() of entries: through ftrace they go into its
 * filters in one pass (a second probe with a post_handler on one of them
 * moves it to the other ops on the way), count every call, and leave in
 * one pass with okprobe_unregister_many(). Where the kernel's kprobe with
 * a post_handler owns one entry's ip, the batch fails with EBUSY and none
 * of it stays registered.
 */
static void okp_test_entry_many(void)
{
	struct okp_entry_probe *p = kcalloc(3, sizeof(*p), GFP_KERNEL);
	struct okprobe *batch[3];
	long wrong = 0, before;
	char why[200] = "";
	bool via_ftrace;
	int ret, i;

	EXPECT(p, "out of memory");
	okp_entry_expected(okp_entry_target, &via_ftrace);
	p[0].probe.addr = okp_entry_target;
	p[1].probe.addr = okp_entry_target2;
	p[2].probe.addr = okp_entry_target2;
	for (i = 0; i < 3; i++) {
		p[i].probe.pre_handler = okp_entry_pre;
		batch[i] = &p[i].probe;
	}
	p[2].probe.post_handler = okp_entry_post;
	ret = okprobe_register_many(batch, 3);
	EXPECT(!ret, "okprobe_register_many: %d", ret);
	for (i = 0; i < 3; i++)
		EXPECT(!!(p[i].probe.flags & OKPROBE_FLAG_FTRACE) == via_ftrace,
		       "probe %d: flags 0x%x", i, p[i].probe.flags);
	for (i = 0; i < OKP_ENTRY_CALLS; i++)
		wrong += okp_entry_round(i);
	EXPECT(!wrong, "%ld wrong results", wrong);
	for (i = 0; i < 3; i++)
		EXPECT(atomic_long_read(&p[i].hits) == OKP_ENTRY_CALLS,
		       "probe %d: %ld hits of %d calls", i,
		       atomic_long_read(&p[i].hits), OKP_ENTRY_CALLS);
	EXPECT(atomic_long_read(&p[2].post_hits) == OKP_ENTRY_CALLS,
	       "the post_handler: %ld of %d calls",
	       atomic_long_read(&p[2].post_hits), OKP_ENTRY_CALLS);
	okprobe_unregister_many(batch, 3);
	before = atomic_long_read(&p[0].hits) + atomic_long_read(&p[1].hits) +
		 atomic_long_read(&p[2].hits);
	for (i = 0; i < 10; i++)
		wrong += okp_entry_round(i);
	EXPECT(!wrong && atomic_long_read(&p[0].hits) +
	       atomic_long_read(&p[1].hits) + atomic_long_read(&p[2].hits) ==
	       before, "after unregister_many: %ld wrong, hits went on",
	       wrong);
#ifdef CONFIG_KPROBES_ON_FTRACE
	if (via_ftrace) {
		struct kprobe owner = {
			.addr = (kprobe_opcode_t *)okp_entry_target2,
			.pre_handler = okp_entry_owner_pre,
			.post_handler = okp_entry_kprobe_post,
		};

		ret = register_kprobe(&owner);
		EXPECT(!ret, "register_kprobe with a post_handler: %d", ret);
		for (i = 0; i < 3; i++) {
			memset(&p[i].probe, 0, sizeof(p[i].probe));
			p[i].probe.pre_handler = okp_entry_pre;
			atomic_long_set(&p[i].hits, 0);
		}
		p[0].probe.addr = okp_entry_target;
		p[1].probe.addr = okp_entry_target2;
		p[1].probe.post_handler = okp_entry_post;
		ret = okprobe_register_many(batch, 2);
		okp_entry_calls(10, &wrong);
		unregister_kprobe(&owner);
		EXPECT(ret == -EBUSY,
		       "a batch with an entry the kernel's kprobe owns: %d", ret);
		EXPECT(!p[0].probe.okp_site && !p[1].probe.okp_site,
		       "the batch stays registered in part");
		EXPECT(!atomic_long_read(&p[0].hits) && !wrong,
		       "the refused batch's entry counted %ld calls, %ld wrong",
		       atomic_long_read(&p[0].hits), wrong);
	}
#endif
out:
	for (i = 0; p && i < 3; i++)
		if (p[i].probe.okp_site)
			okprobe_unregister(&p[i].probe);
	okp_report(!why[0], "okprobe_register_many of entries (a post_handler on one): each counts every call, unregister_many stops them all; a batch with an entry another owns fails whole with EBUSY",
		   why);
	kfree(p);
}

/*
 * A pre_handler that calls its own function and another probed one: both
 * calls run without handlers and count a miss (the CPU is inside a hit),
 * and return what they should; nothing recurses.
 */
static int okp_entry_recursing_pre(struct okprobe *probe, struct pt_regs *regs)
{
	struct okp_entry_probe *p =
		container_of(probe, struct okp_entry_probe, probe);
	long (*self)(long a, long b) = okp_entry_target;
	long (*other)(long a, long b) = okp_entry_target2;

	OPTIMIZER_HIDE_VAR(self);
	OPTIMIZER_HIDE_VAR(other);
	atomic_long_inc(&p->hits);
	if (self(1, 2) != 5 || other(1, 2) != 7)
		atomic_long_inc(&p->arg_sum); /* a wrong result inside */
	return 0;
}

#ifdef CONFIG_KPROBES_ON_FTRACE
/*
 * A third traced function, and a kernel kprobe on ftrace at its entry
 * whose pre_handler calls okp_entry_target: okprobe's hit then starts
 * inside another ftrace callback, which holds ftrace's recursion bit.
 */
noinline long okp_entry_target3(long a);
noinline long okp_entry_target3(long a)
{
	return a + 3;
}

static atomic_long_t okp_entry_outer_hits, okp_entry_outer_wrong;

static int okp_entry_outer_pre(struct kprobe *kp, struct pt_regs *regs)
{
	long (*target)(long a, long b) = okp_entry_target;

	OPTIMIZER_HIDE_VAR(target);
	atomic_long_inc(&okp_entry_outer_hits);
	if (target(2, 2) != 8)
		atomic_long_inc(&okp_entry_outer_wrong);
	return 0;
}

/*
 * Under ftrace's trylock (okprobe's callback before 415ead6) the kprobe's
 * callback held the bit, okprobe's first call came through on the
 * transition bit and the handler's nested calls were dropped uncounted;
 * now each counts a miss. Returns false when the kernel's kprobe is not
 * on ftrace here (nothing to check).
 */
static bool okp_entry_recursion_under_kprobe(struct okp_entry_probe *p,
					     char *why, size_t size)
{
	struct kprobe kp = {
		.addr = (kprobe_opcode_t *)okp_entry_target3,
		.pre_handler = okp_entry_outer_pre,
	};
	long (*outer)(long a) = okp_entry_target3;
	long hits = atomic_long_read(&p[0].hits), wrong = 0;
	unsigned long missed0 = p[0].probe.nmissed;
	unsigned long missed1 = p[1].probe.nmissed;
	/*
	 * On x86 a function with one ftrace_ops gets that ops' own
	 * trampoline, which calls okprobe's callback directly. riscv has no
	 * such trampolines: every call goes through ftrace_ops_list_func,
	 * whose recursion guard drops a call nested two deep in one context
	 * before okprobe sees it (Documentation/api.md): no miss counted.
	 */
	const unsigned long nested = IS_ENABLED(CONFIG_X86_64) ?
				     OKP_ENTRY_CALLS : 0;
	int ret, i;

	OPTIMIZER_HIDE_VAR(outer);
	atomic_long_set(&okp_entry_outer_hits, 0);
	atomic_long_set(&okp_entry_outer_wrong, 0);
	ret = register_kprobe(&kp);
	if (ret) {
		snprintf(why, size, "register_kprobe: %d", ret);
		return true;
	}
	if (!(kp.flags & KPROBE_FLAG_FTRACE)) {
		unregister_kprobe(&kp);
		return false;
	}
	for (i = 0; i < OKP_ENTRY_CALLS; i++)
		if (outer(i) != i + 3)
			wrong++;
	unregister_kprobe(&kp);
	wrong += atomic_long_read(&okp_entry_outer_wrong) +
		 atomic_long_read(&p[0].arg_sum);
	if (wrong)
		snprintf(why, size, "under a kprobe on ftrace: %ld wrong results",
			 wrong);
	else if (atomic_long_read(&okp_entry_outer_hits) != OKP_ENTRY_CALLS ||
		 atomic_long_read(&p[0].hits) - hits != OKP_ENTRY_CALLS ||
		 p[0].probe.nmissed - missed0 != nested ||
		 p[1].probe.nmissed - missed1 != nested)
		snprintf(why, size,
			 "under a kprobe on ftrace, %d calls (%lu nested misses expected): kprobe %ld hits, okprobe %ld hits %lu missed, the other %lu missed",
			 OKP_ENTRY_CALLS, nested,
			 atomic_long_read(&okp_entry_outer_hits),
			 atomic_long_read(&p[0].hits) - hits,
			 p[0].probe.nmissed - missed0,
			 p[1].probe.nmissed - missed1);
	return true;
}
#endif

static void okp_test_entry_recursion(void)
{
	struct okp_entry_probe *p = kcalloc(2, sizeof(*p), GFP_KERNEL);
	long (*other)(long a, long b) = okp_entry_target2;
	bool under_kprobe = false;
	long wrong = 0;
	char why[160] = "", why_under[200] = "";
	int ret, i;

	EXPECT(p, "out of memory");
	OPTIMIZER_HIDE_VAR(other);
	p[0].probe.addr = okp_entry_target;
	p[0].probe.pre_handler = okp_entry_recursing_pre;
	p[1].probe.addr = okp_entry_target2;
	p[1].probe.pre_handler = okp_entry_pre;
	for (i = 0; i < 2; i++) {
		ret = okprobe_register(&p[i].probe);
		EXPECT(!ret, "okprobe_register %d: %d", i, ret);
	}
	okp_entry_calls(OKP_ENTRY_CALLS, &wrong);
	EXPECT(!wrong, "%ld wrong results", wrong);
	EXPECT(!atomic_long_read(&p[0].arg_sum),
	       "%ld wrong results inside the handler",
	       atomic_long_read(&p[0].arg_sum));
	EXPECT(atomic_long_read(&p[0].hits) == OKP_ENTRY_CALLS &&
	       p[0].probe.nmissed == OKP_ENTRY_CALLS,
	       "the recursing probe: %ld hits, %lu missed of %d calls",
	       atomic_long_read(&p[0].hits), p[0].probe.nmissed,
	       OKP_ENTRY_CALLS);
	EXPECT(!atomic_long_read(&p[1].hits) &&
	       p[1].probe.nmissed == OKP_ENTRY_CALLS,
	       "the other probe, called only inside the handler: %ld hits, %lu missed",
	       atomic_long_read(&p[1].hits), p[1].probe.nmissed);
	/* Outside any hit the other probe runs. */
	for (i = 0; i < 10; i++)
		if (other(i, 1) != i * 5 + 1)
			wrong++;
	EXPECT(!wrong && atomic_long_read(&p[1].hits) == 10,
	       "called directly: %ld hits, %ld wrong",
	       atomic_long_read(&p[1].hits), wrong);
#ifdef CONFIG_KPROBES_ON_FTRACE
	under_kprobe = okp_entry_recursion_under_kprobe(p, why_under,
							sizeof(why_under));
#endif
out:
	for (i = 0; p && i < 2; i++)
		if (p[i].probe.okp_site)
			okprobe_unregister(&p[i].probe);
	okp_report(!why[0], "an entry handler that calls its own and another probed function: each nested call runs without handlers and counts one miss",
		   why);
	if (under_kprobe)
		okp_report(!why_under[0], "the same when a kernel kprobe on ftrace's handler makes the call: the nested calls count their misses (x86; riscv's ftrace list function drops them first)",
			   why_under);
	kfree(p);
}

void okp_test_entry_probes(void)
{
	bool via_ftrace;

	okp_entry_expected(okp_entry_target, &via_ftrace);
	okp_test_entry_target(false);
	okp_test_entry_target(true);
	okp_test_entry_override(true);
	if (via_ftrace)
		okp_test_entry_override(false);
	okp_test_entry_two_sites();
	okp_test_entry_many();
	okp_test_entry_recursion();
#ifdef CONFIG_KPROBES
	okp_test_entry_against_kprobe(okp_entry_target, "okp_entry_target", false);
	/*
	 * Under KASAN kstrtoull is among what the breakpoint trap path
	 * reaches (a KASAN report prints), refused with EPERM as it must be.
	 */
	if (!IS_ENABLED(CONFIG_KASAN))
		okp_test_entry_against_kprobe(kstrtoull, "kstrtoull", true);
	if (via_ftrace && IS_ENABLED(CONFIG_KPROBES_ON_FTRACE))
		okp_test_entry_ipmodify_owner();
#endif
}
