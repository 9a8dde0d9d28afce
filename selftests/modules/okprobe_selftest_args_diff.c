// SPDX-License-Identifier: GPL-2.0
/*
 * Argument-only probes against probes of pt_regs, on the same instructions
 * and the same calls: every optimizable target of the relocation classes,
 * and every instruction of a few real kernel functions (int_sqrt, gcd,
 * kstrtoull's parser, sort_r). Each instruction is probed by a pre_handler
 * probe twice, then by an args_handler probe twice, while this thread
 * makes the same calls; the record must hold what pt_regs held (the argument
 * registers, x86's ax, the probed address, the stack pointer) at every
 * hit. Hits in interrupts and other tasks are not counted; a register
 * either kind's two runs disagree on (a dead one's leftover, made to
 * differ from run to run) is not compared. Then
 * the targets run on every CPU at once under argument-only probes, and
 * every probe must count every call.
 */
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/math.h>
#include <linux/gcd.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/delay.h>

#include "okprobe_selftest_common.h"
#include "okprobe_selftest_driver.h"

#define OKP_DIFF_CALLS 4
#define OKP_DIFF_HITS 96	/* per site and run: loops hit a site often */
#define OKP_DIFF_SITES 24	/* probed at once */
#define OKP_DIFF_SPACING 16	/* bytes between a run's sites: one jump each */
#define OKP_DIFF_MAX_SIZE 1024	/* the longest function probed */

struct okp_diff_hit {
	int call;
	struct okprobe_args args;
};

struct okp_diff_site {
	struct okprobe probe;
	bool optimized;
	int args_detour; /* okp_args_detour_at() while optimized */
	int hits;
	struct okp_diff_hit log[OKP_DIFF_HITS];
};

/* One run's sites, and what the other kind saw at the same ones. */
struct okp_diff {
	struct okp_diff_site sites[OKP_DIFF_SITES];
	struct okp_diff_site full[OKP_DIFF_SITES];
	struct okp_diff_site again[OKP_DIFF_SITES];	/* full's, once more */
	struct okp_diff_site sites_again[OKP_DIFF_SITES];	/* sites', once more */
	size_t count;
	unsigned int compared;	/* sites the calls reached */
	unsigned int optimized;	/* of those, optimized in the args run */
};

/* The thread making the calls, which call it is in, and which run. */
static struct task_struct *okp_diff_tester;
static int okp_diff_call;
static unsigned long okp_diff_run;
static unsigned long okp_diff_scrambled;

/*
 * Leaves values of seed in the argument registers (and x86's ax, the
 * return value). Before each call, seeded by the call: a register the
 * probed code no longer reads holds the same in every run, which the
 * record must show as pt_regs does (a record word taken from the wrong
 * register then differs). At the end of the handler, seeded by the run:
 * the argument-only detour need not restore a dead register, so what the
 * handler leaves reaches later sites and calls, while the full detour
 * restores every register; such a leftover differs between the two
 * argument-only runs and is not compared.
 */
static noinline __noipa unsigned long okp_diff_scramble(unsigned long a,
						unsigned long b,
						unsigned long c,
						unsigned long d,
						unsigned long e,
						unsigned long f,
						unsigned long g,
						unsigned long h)
{
	asm volatile("" : : "r"(a), "r"(b), "r"(c), "r"(d), "r"(e), "r"(f),
		     "r"(g), "r"(h) : "memory");
	return a ^ h;
}

static void okp_diff_scramble_registers(unsigned long seed)
{
	seed *= 0x9e3779b97f4a7c15UL;
	WRITE_ONCE(okp_diff_scrambled,
		   okp_diff_scramble(seed + 1, seed + 2, seed + 3, seed + 4,
				     seed + 5, seed + 6, seed + 7, seed + 8));
}

static void okp_diff_log(struct okprobe *probe, const struct okprobe_args *args)
{
	struct okp_diff_site *site =
		container_of(probe, struct okp_diff_site, probe);

	/* In an interrupt current is the task it interrupted. */
	if (!in_task() || READ_ONCE(okp_diff_tester) != current)
		return;
	if (site->hits < OKP_DIFF_HITS) {
		site->log[site->hits].call = READ_ONCE(okp_diff_call);
		site->log[site->hits].args = *args;
	}
	site->hits++;
	okp_diff_scramble_registers(READ_ONCE(okp_diff_run) << 32);
}

static void okp_diff_args_handler(struct okprobe *probe,
				  struct okprobe_args *args)
{
	okp_diff_log(probe, args);
}

/* What an argument-only handler would get, from pt_regs. */
static int okp_diff_pre(struct okprobe *probe, struct pt_regs *regs)
{
	struct okprobe_args args;

#ifdef CONFIG_X86
	args.arg[0] = regs->di;
	args.arg[1] = regs->si;
	args.arg[2] = regs->dx;
	args.arg[3] = regs->cx;
	args.arg[4] = regs->r8;
	args.arg[5] = regs->r9;
	args.ax = regs->ax;
	args.ip = regs->ip - 1;	/* a breakpoint's convention */
#else
	memcpy(args.arg, &regs->a0, sizeof(args.arg));
	args.ip = regs->epc;
#endif
	args.sp = regs->sp;
	okp_diff_log(probe, &args);
	return 0;
}

/*
 * Waits until the optimizer is done with the run's sites: it puts in a
 * batch's jumps together, so once expected of them are in (at least one
 * where expected is 0; the first run does not know) and 300 ms pass with
 * no more, or after 5 s without any. Returns how many are optimized.
 */
static unsigned int okp_diff_settle(struct okp_diff_site *sites, size_t count,
				    unsigned int expected)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(5000);
	unsigned long changed = jiffies;
	unsigned int optimized, last = 0;
	size_t i;

	for (;;) {
		for (i = 0, optimized = 0; i < count; i++)
			optimized += okp_optimized(&sites[i].probe);
		if (optimized != last) {
			last = optimized;
			changed = jiffies;
		}
		if (optimized == count || time_after(jiffies, deadline) ||
		    (optimized >= max(expected, 1U) &&
		     time_after(jiffies, changed + msecs_to_jiffies(300))))
			return optimized;
		msleep(20);
	}
}

/*
 * Probes the run's addresses with one kind, waits until the optimizer has
 * put in every jump it took, makes the calls, takes the probes out.
 * Returns 0, or the registration's error.
 */
static int okp_diff_probe_run(struct okp_diff_site *sites, void **addresses,
			      size_t count, bool args,
			      void (*calls)(void *context), void *context,
			      unsigned int *optimized, unsigned int expected)
{
	struct okprobe *taken[OKP_DIFF_SITES];
	size_t i, registered;
	int ret = 0;

	for (registered = 0; registered < count; registered++) {
		struct okp_diff_site *site = &sites[registered];

		memset(site, 0, sizeof(*site));
		site->probe.addr = addresses[registered];
		if (args)
			site->probe.args_handler = okp_diff_args_handler;
		else
			site->probe.pre_handler = okp_diff_pre;
		ret = okprobe_register(&site->probe);
		if (ret)
			break;
	}
	if (!ret) {
		*optimized = okp_diff_settle(sites, count, expected);
		for (i = 0; i < count; i++) {
			sites[i].optimized = okp_optimized(&sites[i].probe);
			sites[i].args_detour =
				okp_args_detour_at(sites[i].probe.addr);
		}
		WRITE_ONCE(okp_diff_run, okp_diff_run + 1);
		WRITE_ONCE(okp_diff_tester, current);
		calls(context);
		WRITE_ONCE(okp_diff_tester, NULL);
	}
	for (i = 0; i < registered; i++)
		taken[i] = &sites[i].probe;
	okprobe_unregister_many(taken, registered);
	return ret;
}

/*
 * Whether the record's word w of hit n holds what pt_regs held. Each kind
 * ran twice: a word either kind's two runs disagree on is a dead
 * register's leftover (okp_diff_scramble_registers() sees to that), and
 * is not compared.
 */
static bool okp_diff_word_same(const struct okp_diff_hit *a,
			       const struct okp_diff_hit *b,
			       const struct okp_diff_hit *f,
			       const struct okp_diff_hit *g, size_t w)
{
	const unsigned long *aw = (const unsigned long *)&a->args;
	const unsigned long *bw = (const unsigned long *)&b->args;
	const unsigned long *fw = (const unsigned long *)&f->args;
	const unsigned long *gw = (const unsigned long *)&g->args;

	return fw[w] != gw[w] || aw[w] != bw[w] || aw[w] == fw[w];
}

/*
 * The two kinds' logs at one site (args and args_again: two runs with
 * the record; full and again: two with pt_regs): the same hits, the same
 * registers.
 */
static bool okp_diff_same(const struct okp_diff_site *args,
			  const struct okp_diff_site *args_again,
			  const struct okp_diff_site *full,
			  const struct okp_diff_site *again, char *why,
			  size_t size)
{
	int n;

	if (args->hits != full->hits || full->hits != again->hits ||
	    args->hits != args_again->hits) {
		snprintf(why, size, "%pS: %d hits with args_handler, %d and %d with pre_handler",
			 args->probe.addr, args->hits, full->hits,
			 again->hits);
		return false;
	}
	for (n = 0; n < min(args->hits, OKP_DIFF_HITS); n++) {
		const struct okp_diff_hit *a = &args->log[n], *f = &full->log[n];
		bool same = a->call == f->call && a->args.ip == f->args.ip &&
			    a->args.sp == f->args.sp &&
			    a->args.ip == (unsigned long)args->probe.addr;
		size_t w;

		for (w = 0; same && w < sizeof(a->args) / sizeof(unsigned long);
		     w++)
			same = okp_diff_word_same(a, &args_again->log[n], f,
						  &again->log[n], w);
		if (!same) {
			snprintf(why, size,
				 "%pS (%s, %s), hit %d (call %d): record ip %lx sp %lx %*phN; pt_regs ip %lx sp %lx %*phN",
				 args->probe.addr,
				 args->optimized ? "optimized" : "breakpoint",
				 full->optimized ? "optimized" : "breakpoint",
				 n, a->call, a->args.ip, a->args.sp,
				 (int)min(sizeof(a->args.arg), (size_t)64),
				 a->args.arg, f->args.ip, f->args.sp,
				 (int)min(sizeof(f->args.arg), (size_t)64),
				 f->args.arg);
			return false;
		}
	}
	return true;
}

/* The bytes at each site a jump may cover, before the runs. */
#define OKP_DIFF_TEXT 24
static u8 okp_diff_text[OKP_DIFF_SITES][OKP_DIFF_TEXT];

/*
 * Takes the sites' text (take), or checks that it is what it was before:
 * okprobe restores it byte for byte.
 */
static bool okp_diff_text_same(void **addresses, size_t count, void *end,
			       bool take, char *why, size_t size)
{
	u8 now[OKP_DIFF_TEXT];
	size_t i, length;

	for (i = 0; i < count; i++) {
		/* Not into the next function, which others may patch. */
		length = end ? min_t(size_t, OKP_DIFF_TEXT, end - addresses[i])
			     : OKP_DIFF_TEXT;
		if (copy_from_kernel_nofault(take ? okp_diff_text[i] : now,
					     addresses[i], length)) {
			snprintf(why, size, "%pS: text unreadable",
				 addresses[i]);
			return false;
		}
		if (!take && memcmp(now, okp_diff_text[i], length)) {
			snprintf(why, size,
				 "%pS: text changed after the run: %*ph, was %*ph",
				 addresses[i], (int)length, now, (int)length,
				 okp_diff_text[i]);
			return false;
		}
	}
	return true;
}

/* One set of addresses: both kinds, compared. */
static bool okp_diff_addresses(struct okp_diff *diff, void **addresses,
			       size_t count, void *end,
			       void (*calls)(void *context), void *context,
			       char *why, size_t size)
{
	unsigned int full_optimized = 0, args_optimized = 0;
	size_t i;
	int ret;

	if (!okp_diff_text_same(addresses, count, end, true, why, size))
		return false;
	ret = okp_diff_probe_run(diff->full, addresses, count, false, calls,
				 context, &full_optimized, 0);
	if (!ret)
		ret = okp_diff_probe_run(diff->again, addresses, count, false,
					 calls, context, &full_optimized,
					 full_optimized);
	if (!ret && !okp_diff_text_same(addresses, count, end, false, why, size))
		return false;
	if (!ret)
		ret = okp_diff_probe_run(diff->sites, addresses, count, true,
					 calls, context, &args_optimized,
					 full_optimized);
	if (!ret)
		ret = okp_diff_probe_run(diff->sites_again, addresses, count,
					 true, calls, context, &args_optimized,
					 full_optimized);
	if (ret) {
		snprintf(why, size, "registering at %pS: %d", addresses[0],
			 ret);
		return false;
	}
	if (!okp_diff_text_same(addresses, count, end, false, why, size))
		return false;
	for (i = 0; i < count; i++) {
		if (!okp_diff_same(&diff->sites[i], &diff->sites_again[i],
				   &diff->full[i], &diff->again[i], why, size))
			return false;
		if (diff->sites[i].optimized && diff->sites[i].args_detour == 0) {
			snprintf(why, size, "%pS: optimized without the argument-only detour",
				 addresses[i]);
			return false;
		}
		diff->compared += diff->sites[i].hits > 0;
		diff->optimized += diff->sites[i].hits > 0 &&
				   diff->sites[i].optimized;
	}
	return true;
}

/* ---- The relocation classes' targets ---------------------------------------- */

struct okp_diff_targets {
	const struct okp_cycle_target *targets;
	size_t count;
	long wrong;
};

static void okp_diff_call_targets(void *context)
{
	struct okp_diff_targets *t = context;
	size_t i;
	int call;

	for (call = 0; call < OKP_DIFF_CALLS; call++) {
		WRITE_ONCE(okp_diff_call, call);
		for (i = 0; i < t->count; i++) {
			okp_diff_scramble_registers(call * 64 + i + 1);
			t->wrong += t->targets[i].target(call, 7) !=
				    t->targets[i].expect(call, 7);
		}
	}
}

static void okp_test_args_diff_targets(const struct okp_cycle_target *targets,
				       size_t count)
{
	struct okp_diff *diff = kvzalloc(sizeof(*diff), GFP_KERNEL);
	struct okp_diff_targets calls = { targets, min_t(size_t, count, OKP_DIFF_SITES) };
	void *addresses[OKP_DIFF_SITES];
	char why[400] = "";
	bool same;
	size_t i;

	EXPECT(diff, "out of memory");
	for (i = 0; i < calls.count; i++)
		addresses[i] = okp_at(targets[i].target, targets[i].offset);
	same = okp_diff_addresses(diff, addresses, calls.count, NULL,
				  okp_diff_call_targets, &calls, why,
				  sizeof(why));
	/* A wrong result says more than the registers that led to it. */
	EXPECT(!calls.wrong, "%ld wrong results", calls.wrong);
	if (!same)
		goto out;
	EXPECT(diff->optimized == calls.count, "%u of %zu optimized",
	       diff->optimized, calls.count);
out:
	okp_report(!why[0], "argument-only probes on every optimizable target see what probes of pt_regs see on the same calls, and the targets' registers and flags come through", why);
	kvfree(diff);
}

/* ---- Real kernel functions --------------------------------------------------- */

/*
 * Results kept, so that no call is left out, and compared with an
 * unprobed run's (baseline, once known); wrong ones counted.
 */
static unsigned long okp_diff_sink, okp_diff_baseline;
static bool okp_diff_have_baseline;
static unsigned long okp_diff_wrong;

static int okp_diff_compare(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void okp_diff_call_int_sqrt(int call)
{
	okp_diff_sink += int_sqrt(call * 1000003UL + 17);
}

static void okp_diff_call_gcd(int call)
{
	okp_diff_sink += gcd(call * 84 + 36, call * 60 + 48);
}

static void okp_diff_call_kstrtoull(int call)
{
	static const char *const text[] = { "0x1f", "12345", "0777",
					    "18446744073709551615", "42",
					    "-1" };
	unsigned long long value = 0;

	okp_diff_sink += kstrtoull(text[call % ARRAY_SIZE(text)], 0, &value);
	okp_diff_sink += value;
}

static void okp_diff_call_sort_r(int call)
{
	int numbers[12];
	int i;

	for (i = 0; i < ARRAY_SIZE(numbers); i++)
		numbers[i] = (i * 7 + call * 5) % 13;
	sort(numbers, ARRAY_SIZE(numbers), sizeof(numbers[0]),
	     okp_diff_compare, NULL);
	for (i = 1; i < ARRAY_SIZE(numbers); i++)
		okp_diff_wrong += numbers[i - 1] > numbers[i];
}

struct okp_diff_function {
	const char *symbol;
	void (*call)(int call);
};

static const struct okp_diff_function okp_diff_functions[] = {
	{ "int_sqrt", okp_diff_call_int_sqrt },
	{ "gcd", okp_diff_call_gcd },
	{ "_parse_integer_limit", okp_diff_call_kstrtoull },
	{ "sort_r", okp_diff_call_sort_r },
};

static void okp_diff_call_function(void *context)
{
	const struct okp_diff_function *function = context;
	int call;

	/* What the calls leave in registers must not depend on the run. */
	okp_diff_sink = 0;
	for (call = 0; call < OKP_DIFF_CALLS; call++) {
		WRITE_ONCE(okp_diff_call, call);
		okp_diff_scramble_registers(call + 1);
		function->call(call);
	}
	if (okp_diff_have_baseline)
		okp_diff_wrong += okp_diff_sink != okp_diff_baseline;
}

/* The function's address and size ("name+0x0/0xSIZE"), or false. */
static noinline_for_stack bool okp_diff_bounds(const char *symbol,
						void **start,
			    unsigned long *size)
{
	struct okprobe probe = { .symbol_name = symbol,
				 .flags = OKPROBE_FLAG_DISABLED,
				 .args_handler = okp_diff_args_handler };
	char text[KSYM_SYMBOL_LEN];
	char *slash;

	if (okprobe_register(&probe))
		return false;
	*start = probe.addr;
	okprobe_unregister(&probe);
	snprintf(text, sizeof(text), "%pS", *start);
	slash = strrchr(text, '/');
	return slash && !kstrtoul(slash + 1, 0, size) && *size;
}

/*
 * Every offset of the function okprobe takes an argument-only probe at
 * (instruction boundaries it may probe), into offsets[]; their number.
 */
static size_t okp_diff_probeable(void *start, unsigned long size,
				 struct okprobe *probes, struct okprobe **taken,
				 u16 *offsets)
{
	size_t found = 0;
	unsigned long offset, next;

	for (offset = 0; offset < size; offset = next) {
		struct okprobe *probe = &probes[found];
		u16 half;

		/*
		 * riscv's lengths are in the first halfword's low bits; x86's
		 * are found by trying every byte (okprobe refuses the inside
		 * of an instruction).
		 */
		next = offset + 1;
		if (IS_ENABLED(CONFIG_RISCV))
			next = offset + (copy_from_kernel_nofault(&half, start + offset, 2) ||
					 (half & 3) == 3 ? 4 : 2);

		memset(probe, 0, sizeof(*probe));
		probe->addr = start + offset;
		probe->flags = OKPROBE_FLAG_DISABLED;
		probe->args_handler = okp_diff_args_handler;
		if (okprobe_register(probe))
			continue;
		taken[found] = probe;
		offsets[found++] = offset;
	}
	okprobe_unregister_many(taken, found);
	return found;
}

struct okp_diff_scratch {
	struct okprobe probes[OKP_DIFF_MAX_SIZE];
	struct okprobe *taken[OKP_DIFF_MAX_SIZE];
	u16 offsets[OKP_DIFF_MAX_SIZE];
	bool done[OKP_DIFF_MAX_SIZE];
};

/*
 * Every probeable instruction of the function, in runs of sites
 * OKP_DIFF_SPACING bytes apart (each can get its own jump).
 */
static bool okp_diff_function(struct okp_diff *diff,
			      const struct okp_diff_function *function,
			      struct okp_diff_scratch *scratch, char *why,
			      size_t size)
{
	void *addresses[OKP_DIFF_SITES], *start;
	unsigned long length;
	size_t found, left, i, count;

	if (!okp_diff_bounds(function->symbol, &start, &length))
		return true; /* not in this kernel: the report counts */
	if (length > OKP_DIFF_MAX_SIZE)
		length = OKP_DIFF_MAX_SIZE;
	found = okp_diff_probeable(start, length, scratch->probes,
				   scratch->taken, scratch->offsets);
	/* What every probed run must compute: the calls unprobed. */
	okp_diff_have_baseline = false;
	okp_diff_call_function((void *)function);
	okp_diff_baseline = okp_diff_sink;
	okp_diff_have_baseline = true;
	memset(scratch->done, 0, sizeof(scratch->done));
	for (left = found; left; left -= count) {
		long last = -OKP_DIFF_SPACING;

		for (i = 0, count = 0; i < found && count < OKP_DIFF_SITES;
		     i++) {
			if (scratch->done[i] ||
			    scratch->offsets[i] < last + OKP_DIFF_SPACING)
				continue;
			scratch->done[i] = true;
			last = scratch->offsets[i];
			addresses[count++] = start + scratch->offsets[i];
		}
		if (!okp_diff_addresses(diff, addresses, count, start + length,
					okp_diff_call_function,
					(void *)function, why, size))
			return false;
	}
	return true;
}

static void okp_test_args_diff_functions(void)
{
	struct okp_diff *diff = kvzalloc(sizeof(*diff), GFP_KERNEL);
	struct okp_diff_scratch *scratch = kvzalloc(sizeof(*scratch),
						    GFP_KERNEL);
	unsigned int functions = 0;
	char why[400] = "";
	size_t f;

	EXPECT(diff && scratch, "out of memory");
	for (f = 0; f < ARRAY_SIZE(okp_diff_functions); f++) {
		unsigned int before = diff->compared;

		if (!okp_diff_function(diff, &okp_diff_functions[f], scratch,
				       why, sizeof(why))) {
			EXPECT(!okp_diff_wrong, "%lu wrong results",
			       okp_diff_wrong);
			goto out;
		}
		functions += diff->compared != before;
	}
	EXPECT(!okp_diff_wrong, "%lu wrong results", okp_diff_wrong);
	pr_info("argument-only differential: %u functions, %u instructions, %u optimized\n",
		functions, diff->compared, diff->optimized);
	EXPECT(functions >= 3, "only %u of the functions found", functions);
	EXPECT(diff->optimized * 4 >= diff->compared,
	       "only %u of %u instructions optimized", diff->optimized,
	       diff->compared);
out:
	okp_report(!why[0], "argument-only probes at every instruction of int_sqrt, gcd, _parse_integer_limit and sort_r see what probes of pt_regs see on the same calls", why);
	kvfree(scratch);
	kvfree(diff);
}

/* ---- Every CPU at once ------------------------------------------------------- */

struct okp_args_counter {
	struct okprobe probe;
	atomic_long_t hits;
};

static void okp_args_count(struct okprobe *probe, struct okprobe_args *args)
{
	atomic_long_inc(&container_of(probe, struct okp_args_counter,
				      probe)->hits);
}

static void okp_test_args_concurrent(const struct okp_cycle_target *targets,
				     size_t count, long min_calls)
{
	struct okp_args_counter *counters = kcalloc(count, sizeof(*counters),
						    GFP_KERNEL);
	size_t registered = 0, i;
	long rounds = 0;
	char why[200] = "";
	int ret;

	EXPECT(counters, "out of memory");
	for (; registered < count; registered++) {
		struct okprobe *probe = &counters[registered].probe;

		probe->addr = okp_at(targets[registered].target,
				     targets[registered].offset);
		probe->args_handler = okp_args_count;
		ret = okprobe_register(probe);
		EXPECT(!ret, "registering at %pS: %d", probe->addr, ret);
	}
	for (i = 0; i < count; i++)
		EXPECT(okp_wait_optimized(&counters[i].probe, true),
		       "%pS never optimized", counters[i].probe.addr);
	if (!okp_hammer_targets(targets, count, min_calls, &rounds, why,
				sizeof(why)))
		goto out;
	for (i = 0; i < count; i++)
		EXPECT(atomic_long_read(&counters[i].hits) == rounds &&
		       !counters[i].probe.nmissed &&
		       okp_optimized(&counters[i].probe),
		       "%pS counted %ld of %ld calls, missed %lu, flags %#x",
		       counters[i].probe.addr,
		       atomic_long_read(&counters[i].hits), rounds,
		       counters[i].probe.nmissed, counters[i].probe.flags);
out:
	while (registered)
		okprobe_unregister(&counters[--registered].probe);
	okp_report(!why[0], "argument-only probes on every optimizable target, called on every CPU at once: each counts every call, registers and flags intact", why);
	kfree(counters);
}

void okp_test_args_differential(const struct okp_jump_targets *jumps,
				long concurrent_calls)
{
	okp_test_args_diff_targets(jumps->all, jumps->count);
	okp_test_args_diff_functions();
	okp_test_args_concurrent(jumps->all, jumps->count, concurrent_calls);
}

