// SPDX-License-Identifier: GPL-2.0
/*
 * Argument-only probes (okprobe.args_handler), on the arch's args target:
 * an instruction of long f(long a, long b) where a and b are still in the
 * first two argument registers and the return value register holds a (x86
 * okp_target_add+3, riscv okp_rv_add+0), and which returns the return
 * value register plus b. As a breakpoint (OKPROBE_FLAG_BREAKPOINT) and
 * once optimized, every hit's record holds a and b, the return value a,
 * the probed address and a stack pointer on the calling task's stack; what
 * the handler writes to the second argument or to the return value is what
 * the function then computes with; nothing is missed.
 */
#include <linux/atomic.h>
#include <linux/kernel.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>

#include "okprobe_selftest_common.h"
#include "okprobe_selftest_driver.h"

#define OKP_ARGS_CALLS 500

/* What the handler writes back. */
enum okp_args_write { OKP_ARGS_KEEP, OKP_ARGS_SECOND, OKP_ARGS_RETURN };

struct okp_args_probe {
	struct okprobe probe;
	/* The call in progress: its a and b. */
	long a, b;
	enum okp_args_write write;
	atomic_long_t hits, wrong;
	/* The first wrong record, and what was expected of it. */
	struct okprobe_args first_wrong;
	long wrong_a, wrong_b;
};

static bool okp_args_as_expected(const struct okp_args_probe *p,
				 const struct okprobe_args *args)
{
	return args->arg[0] == p->a && args->arg[1] == p->b &&
	       okprobe_args_return_value(args) == p->a &&
	       args->ip == (unsigned long)p->probe.addr &&
	       object_is_on_stack((void *)args->sp);
}

static void okp_args_handler(struct okprobe *probe, struct okprobe_args *args)
{
	struct okp_args_probe *p =
		container_of(probe, struct okp_args_probe, probe);

	atomic_long_inc(&p->hits);
	if (!okp_args_as_expected(p, args) &&
	    atomic_long_inc_return(&p->wrong) == 1) {
		p->first_wrong = *args;
		p->wrong_a = p->a;
		p->wrong_b = p->b;
	}
	if (p->write == OKP_ARGS_SECOND)
		args->arg[1] = 100;
	else if (p->write == OKP_ARGS_RETURN)
		okprobe_args_return_value(args) = 1000;
	/* Read-only: the probed code must not see these. */
	args->ip = 0;
	args->sp = 0;
}

/* What the target returns for a and b under the handler's write. */
static long okp_args_expected(enum okp_args_write write, long a, long b)
{
	return write == OKP_ARGS_SECOND ? a + 100 :
	       write == OKP_ARGS_RETURN ? 1000 + b : a + b;
}

/*
 * OKP_ARGS_CALLS calls under each write; why[] gets what went wrong.
 * Returns false then.
 */
static bool okp_args_calls(struct okp_args_probe *p, okp_target_fn target,
			   char *why, size_t size)
{
	static const enum okp_args_write writes[] = {
		OKP_ARGS_KEEP, OKP_ARGS_SECOND, OKP_ARGS_RETURN
	};
	long hits = atomic_long_read(&p->hits), result;
	int w, i;

	for (w = 0; w < ARRAY_SIZE(writes); w++) {
		p->write = writes[w];
		for (i = 0; i < OKP_ARGS_CALLS; i++) {
			p->a = i;
			p->b = 7 + w;
			result = target(p->a, p->b);
			if (result != okp_args_expected(p->write, p->a, p->b)) {
				snprintf(why, size,
					 "write %d: f(%ld, %ld) returned %ld",
					 p->write, p->a, p->b, result);
				return false;
			}
		}
	}
	p->write = OKP_ARGS_KEEP;
	hits = atomic_long_read(&p->hits) - hits;
	if (hits != ARRAY_SIZE(writes) * OKP_ARGS_CALLS) {
		snprintf(why, size, "%ld hits", hits);
		return false;
	}
	if (atomic_long_read(&p->wrong)) {
		snprintf(why, size,
			 "%ld wrong records; the first, for (%ld, %ld): arg0 %#lx arg1 %#lx ret %#lx ip %pS sp %#lx",
			 atomic_long_read(&p->wrong), p->wrong_a, p->wrong_b,
			 p->first_wrong.arg[0], p->first_wrong.arg[1],
			 okprobe_args_return_value(&p->first_wrong),
			 (void *)p->first_wrong.ip, p->first_wrong.sp);
		return false;
	}
	return true;
}

static void okp_test_args_probe(const struct okp_instruction *at,
				bool optimized)
{
	struct okp_args_probe *p = kzalloc(sizeof(*p), GFP_KERNEL);
	char why[300] = "";
	char name[160];
	int ret;

	/* No %ps: riscv's kallsyms names the target by a mapping symbol. */
	snprintf(name, sizeof(name),
		 "argument-only probe (a, b in the argument registers), %s: the record is the registers, and what the handler writes is what the function computes with",
		 optimized ? "optimized" : "a breakpoint");
	EXPECT(p, "out of memory");
	p->probe.addr = okp_at(at->function, at->offset);
	p->probe.args_handler = okp_args_handler;
	if (!optimized)
		p->probe.flags = OKPROBE_FLAG_BREAKPOINT;
	ret = okprobe_register(&p->probe);
	EXPECT(!ret, "okprobe_register: %d", ret);
	if (optimized)
		EXPECT(okp_wait_optimized(&p->probe, true),
		       "never optimized (flags %#x)", p->probe.flags);
	else
		EXPECT(!okp_optimized(&p->probe), "optimized (flags %#x)",
		       p->probe.flags);
	if (!okp_args_calls(p, at->function, why, sizeof(why)))
		goto out;
	EXPECT(!p->probe.nmissed, "%lu missed", p->probe.nmissed);
	EXPECT(optimized == okp_optimized(&p->probe), "flags %#x",
	       p->probe.flags);
out:
	if (p && p->probe.okp_site)
		okprobe_unregister(&p->probe);
	okp_report(!why[0], name, why);
	kfree(p);
}

void okp_test_args_probes(const struct okp_instruction *at)
{
	okp_test_args_probe(at, false);
	okp_test_args_probe(at, true);
}
