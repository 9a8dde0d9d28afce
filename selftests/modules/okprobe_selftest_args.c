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
#include <linux/string.h>
#include <linux/uaccess.h>

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

/*
 * Whether the jump at address leads to an argument-only detour: 1 or 0,
 * or -1 when there is no jump there that this can follow. x86: the
 * detour's first instruction is push %rsp (a full detour's push
 * $__KERNEL_DS). riscv: a window that starts at address with auipc +
 * jalr, whose detour opens its frame with addi sp, sp, -144 or -160 (a
 * full detour's: -288); an end-anchored window or a c.j landing: -1.
 */
int okp_args_detour_at(void *address)
{
#ifdef CONFIG_X86
	u8 jump[5], first;
	s32 rel;

	if (copy_from_kernel_nofault(jump, address, sizeof(jump)) ||
	    jump[0] != 0xe9)
		return -1;
	memcpy(&rel, jump + 1, sizeof(rel));
	if (copy_from_kernel_nofault(&first, address + 5 + rel, 1))
		return -1;
	return first == 0x54;
#else
	u32 jump[2], first;
	long target, frame;

	if (copy_from_kernel_nofault(jump, address, sizeof(jump)) ||
	    (jump[0] & 0x7f) != 0x17 || (jump[1] & 0x707f) != 0x67 ||
	    ((jump[1] >> 15) & 0x1f) != ((jump[0] >> 7) & 0x1f))
		return -1;
	target = (long)address + (long)(s32)(jump[0] & 0xfffff000) +
		 ((s32)jump[1] >> 20);
	if (copy_from_kernel_nofault(&first, (void *)target, sizeof(first)) ||
	    (first & 0xfffff) != 0x10113) /* addi sp, sp, imm */
		return -1;
	frame = (s32)first >> 20;
	return frame == -144 || frame == -160;
#endif
}

/* Where the kind can be read, it must be the one expected. */
static bool okp_args_kind_is(void *address, int expected)
{
	int kind = okp_args_detour_at(address);

	return kind == expected || (kind < 0 && !IS_ENABLED(CONFIG_X86));
}

static atomic_long_t okp_args_full_hits;

static int okp_args_full_pre(struct okprobe *probe, struct pt_regs *regs)
{
	atomic_long_inc(&okp_args_full_hits);
	return 0;
}

/*
 * An argument-only site gets a probe of pt_regs and loses it again: the
 * argument-only detour (x86) gives way to a full one, then comes back, and
 * at every step each call is one hit of each probe there, optimized.
 */
static void okp_test_args_beside_full(const struct okp_instruction *at)
{
	static const char name[] =
		"argument-only probe joined by a pre_handler probe and left again: optimized at each step, every call one hit of each";
	struct okp_args_probe *p = kzalloc(sizeof(*p), GFP_KERNEL);
	struct okprobe *full = kzalloc(sizeof(*full), GFP_KERNEL);
	char why[300] = "";
	long full_hits;
	int ret;

	EXPECT(p && full, "out of memory");
	atomic_long_set(&okp_args_full_hits, 0);
	p->probe.addr = okp_at(at->function, at->offset);
	p->probe.args_handler = okp_args_handler;
	ret = okprobe_register(&p->probe);
	EXPECT(!ret, "okprobe_register: %d", ret);
	EXPECT(okp_wait_optimized(&p->probe, true), "never optimized alone");
	EXPECT(okp_args_kind_is(p->probe.addr, 1),
	       "alone, the jump leads to no argument-only detour (%d)",
	       okp_args_detour_at(p->probe.addr));
	if (!okp_args_calls(p, at->function, why, sizeof(why)))
		goto out;
	full->addr = p->probe.addr;
	full->pre_handler = okp_args_full_pre;
	ret = okprobe_register(full);
	EXPECT(!ret, "okprobe_register (pre_handler): %d", ret);
	EXPECT(okp_wait_optimized(full, true), "never optimized with both");
	EXPECT(okp_args_kind_is(p->probe.addr, 0),
	       "with a pre_handler, the jump leads to no full detour (%d)",
	       okp_args_detour_at(p->probe.addr));
	if (!okp_args_calls(p, at->function, why, sizeof(why)))
		goto out;
	full_hits = atomic_long_read(&okp_args_full_hits);
	EXPECT(full_hits == 3 * OKP_ARGS_CALLS, "the pre_handler saw %ld hits",
	       full_hits);
	okprobe_unregister(full);
	full->okp_site = NULL;
	EXPECT(okp_wait_optimized(&p->probe, true),
	       "never optimized again alone");
	EXPECT(okp_args_kind_is(p->probe.addr, 1),
	       "alone again, the jump leads to no argument-only detour (%d)",
	       okp_args_detour_at(p->probe.addr));
	if (!okp_args_calls(p, at->function, why, sizeof(why)))
		goto out;
	EXPECT(atomic_long_read(&okp_args_full_hits) == full_hits,
	       "the unregistered pre_handler ran");
	EXPECT(!p->probe.nmissed, "%lu missed", p->probe.nmissed);
out:
	if (full && full->okp_site)
		okprobe_unregister(full);
	if (p && p->probe.okp_site)
		okprobe_unregister(&p->probe);
	okp_report(!why[0], name, why);
	kfree(full);
	kfree(p);
}

void okp_test_args_probes(const struct okp_instruction *at)
{
	okp_test_args_probe(at, false);
	okp_test_args_probe(at, true);
	okp_test_args_beside_full(at);
}
