// SPDX-License-Identifier: GPL-2.0
/*
 * The driver of okprobe_selftest.ko's in-kernel probe tests, the same on
 * every architecture: at load it runs the one-instruction cases, the
 * lifecycle, refusal, concurrency, jump-optimization and coexistence tests
 * over the targets the architecture's okp_selftest_arch names (its own
 * tests at their places in its run order), then registers the resident
 * probes okptest reads in debugfs okprobe/list and okprobe/jumps. The TAP
 * lines are read from /sys/kernel/debug/okprobe_selftest/results by the
 * guest's okptest. Also the handlers that record what a probe saw.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/ptrace.h>
#include <linux/slab.h>

#include <okprobe.h>

#include "okprobe_selftest_common.h"
#include "okprobe_selftest_driver.h"

/* ---- Handlers ------------------------------------------------------------ */

int okp_record_pre(struct okprobe *probe, struct pt_regs *regs)
{
	struct okp_probe_record *r =
		container_of(probe, struct okp_probe_record, probe);

	atomic_inc(&r->pre_hits);
	r->seen_arg0 = regs_get_kernel_argument(regs, 0);
	r->seen_arg1 = regs_get_kernel_argument(regs, 1);
	r->seen_pc = instruction_pointer(regs);
	return 0;
}

void okp_record_post(struct okprobe *probe, struct pt_regs *regs,
		     unsigned long flags)
{
	struct okp_probe_record *r =
		container_of(probe, struct okp_probe_record, probe);

	atomic_inc(&r->post_hits);
	r->after = *regs;
}

struct okp_probe_record *okp_record_new(void *address)
{
	struct okp_probe_record *r = kzalloc(sizeof(*r), GFP_KERNEL);

	if (r) {
		r->probe.addr = address;
		r->probe.pre_handler = okp_record_pre;
	}
	return r;
}

int okp_record_pre_count(struct okprobe *probe, struct pt_regs *regs)
{
	return 0;
}

void okp_record_free(struct okp_probe_record *r)
{
	if (r)
		okprobe_unregister(&r->probe);
	kfree(r);
}

/* ---- One instruction ------------------------------------------------------ */

/* Where the post_handler continued and what the instruction linked. */
static bool okp_post_saw_flow(const struct okp_case *c,
			      struct okp_probe_record *r, unsigned long address,
			      char *why, size_t why_size)
{
	unsigned long pc = instruction_pointer(&r->after), linked;

	if (!c->post)
		return true;
	if (c->continues_at && pc != (unsigned long)c->continues_at) {
		snprintf(why, why_size, "post_handler saw pc %pS, expected %pS",
			 (void *)pc, c->continues_at);
		return false;
	}
	if (!c->links)
		return true;
	linked = okp_selftest_arch.link_register(&r->after);
	if (linked != address + c->links) {
		snprintf(why, why_size,
			 "post_handler saw the link %lx, expected %lx", linked,
			 address + c->links);
		return false;
	}
	return true;
}

/* Probe, call 100 times, check counts, registers and results. */
static void okp_run_case(const struct okp_case *c)
{
	struct okp_probe_record *r = kzalloc(sizeof(*r), GFP_KERNEL);
	unsigned long address = (unsigned long)okp_at(c->target, c->offset);
	unsigned long pc = address + okp_selftest_arch.pc_past_probe;
	long step = c->result_step ?: 1;
	bool checked = c->expected != OKP_NO_RESULT;
	char why[200] = "";
	bool ok = false;
	long result;
	int ret, i;

	if (!r) {
		okp_report(false, c->name, "out of memory");
		return;
	}
	r->probe.addr = (void *)address;
	r->probe.pre_handler = okp_record_pre;
	if (c->post)
		r->probe.post_handler = okp_record_post;
	ret = okprobe_register(&r->probe);
	EXPECT(ret == 0, "register failed: %d", ret);
	for (i = 0; i < 100; i++) {
		result = c->target(c->a + i, c->b);
		EXPECT(!checked || result == c->expected + step * i,
		       "call %d returned %ld, expected %ld", i, result,
		       c->expected + step * i);
	}
	EXPECT(atomic_read(&r->pre_hits) == 100, "pre_handler ran %d times",
	       atomic_read(&r->pre_hits));
	EXPECT(!c->post || atomic_read(&r->post_hits) == 100,
	       "post_handler ran %d times", atomic_read(&r->post_hits));
	EXPECT(c->args_moved ||
	       (r->seen_arg0 == c->a + 99 && r->seen_arg1 == c->b),
	       "handler saw arguments %ld, %ld", r->seen_arg0, r->seen_arg1);
	EXPECT(r->seen_pc == pc, "handler saw pc %lx, expected %lx",
	       r->seen_pc, pc);
	if (!okp_post_saw_flow(c, r, address, why, sizeof(why)))
		goto out;
	okprobe_unregister(&r->probe);
	/* After unregistering, calls run the original and count nothing. */
	result = c->target(c->a, c->b);
	EXPECT(!checked || result == c->expected,
	       "result %ld after unregister", result);
	EXPECT(atomic_read(&r->pre_hits) == 100, "hit after unregister");
	ok = true;
out:
	okp_report(ok, c->name, why);
	okp_record_free(r);
}

/* ---- The run ---------------------------------------------------------------- */

/* okp_test_counting's calls, at least. */
#define OKP_COUNTING_CALLS 1000000

/*
 * The assembly targets' entry pad (endbr64 under IBT, else 0): okptest
 * adds it to the offsets it looks for in debugfs okprobe/list and jumps.
 */
static unsigned long entry_pad;
module_param(entry_pad, ulong, 0444);

/* Runs the architecture's own tests at place, if it has any there. */
static void okp_run_arch_tests(const struct okp_selftest_arch *arch,
			       enum okp_arch_tests_place place)
{
	if (arch->tests[place])
		arch->tests[place]();
}

static long okp_expect_split(long a, long b)
{
	return b ? a + b : a + 1;
}

/* Breakpoint probes: one instruction, lifecycle, refusals, concurrency. */
static void okp_run_breakpoint_tests(const struct okp_selftest_arch *arch)
{
	const struct okp_cycle_target *plain = &arch->plain;
	const struct okp_lifecycle_targets *life = arch->lifecycle;
	const struct okp_concurrency_targets *con = arch->concurrency;
	const struct okp_trap_path *trap = arch->trap_path;
	size_t i;

	okp_run_arch_tests(arch, OKP_BEFORE_CASES);
	for (i = 0; i < arch->case_count; i++)
		okp_run_case(&arch->cases[i]);
	okp_run_arch_tests(arch, OKP_AFTER_CASES);
	okp_test_redirect(&life->three[0], life->redirect_return_offset);
	okp_test_aggregation(life->toggled);
	okp_test_optimized_probe_changes(&arch->jumps->all[0],
					 &arch->jumps->all[1]);
	okp_run_arch_tests(arch, OKP_BEFORE_BAD_INPUT);
	okp_test_bad_input(plain->target, plain->offset, plain->expect);
	okp_test_handler_calls_its_function(plain->target, plain->offset,
					    plain->expect);
	okp_test_trap_path_refused(trap->refused, trap->refused_count,
				   trap->allowed, trap->allowed_count);
	okp_run_arch_tests(arch, OKP_AFTER_TRAP_PATH);
	okp_test_enable_disable(life->toggled, arch->is_breakpoint);
	okp_test_disabled_aggregate(life->disabled_aggregate,
				    arch->is_breakpoint);
	okp_run_arch_tests(arch, OKP_AFTER_DISABLED_AGGREGATE);
	okp_test_register_many(life->three,
			       okp_at(life->inside_instruction.function,
				      life->inside_instruction.offset));
	/*
	 * Breakpoint copies under churn where, with optimization on, every
	 * churn cycle would wait for an rcu-tasks grace period to take the
	 * jump out.
	 */
	if (con->unoptimized)
		okp_write_sysctl("0");
	okp_test_concurrency(con->steady, con->count, con->neighbour,
			     okp_scaled(con->calls),
			     okp_scaled(con->churn_rounds));
	if (con->unoptimized)
		okp_write_sysctl("1");
}

/* Jump optimization, then next to the kernel's kprobes. */
static void okp_run_jump_tests(const struct okp_selftest_arch *arch)
{
	const struct okp_jump_targets *jumps = arch->jumps;
	const struct okp_cycle_target *region = &jumps->region;
	const struct okp_coexistence_targets *co = arch->coexistence;
	char name[160];

	okp_run_arch_tests(arch, OKP_JUMP_CASES);
	okp_test_neighbour_in_region(region->target, region->offset,
				     region->expect, arch->is_breakpoint);
	okp_test_optimized_redirect_ignored(&jumps->all[0],
					    jumps->redirect_offset,
					    jumps->redirect_ignored_result);
	okp_run_arch_tests(arch, OKP_AFTER_REDIRECT_IGNORED);
	snprintf(name, sizeof(name),
		 "%ld hits of %zu optimized targets on every %s across optimize/unoptimize cycles (sysctl, enable/disable)",
		 okp_scaled(jumps->cycle_hits), jumps->count, jumps->cpu);
	okp_test_optimization_cycles(jumps->all, jumps->count,
				     okp_scaled(jumps->cycle_hits), name);
	okp_test_counting(jumps->all, jumps->count,
			  okp_scaled(OKP_COUNTING_CALLS));
	okp_test_args_probes(&arch->args);
	okp_test_args_differential(jumps, okp_scaled(OKP_COUNTING_CALLS));
	okp_test_kernel_kprobes(co->target, co->other);
	okp_test_kernel_kprobes_on_kernel_functions();
	okp_test_kernel_kprobe_in_piece(co->split, co->split_cold,
					okp_expect_split);
	okp_test_lost_text(&jumps->all[0]);
	okp_test_random_coexistence(jumps->all, jumps->count,
				    okp_scaled(OKP_RANDOM_STEPS));
}

/* ---- Resident probes --------------------------------------------------------- */

#define OKP_RESIDENT_REFUSED_MAX 8

static struct okp_probe_record okp_resident;
static struct okprobe okp_resident_refused[OKP_RESIDENT_REFUSED_MAX];

static size_t okp_resident_refused_count(void)
{
	return min_t(size_t, okp_selftest_arch.residents->refused_count,
		     OKP_RESIDENT_REFUSED_MAX);
}

static void okp_register_residents(const struct okp_resident_probes *probes)
{
	const struct okp_instruction *resident = &probes->resident;
	size_t i;

	okp_resident.probe.addr = okp_at(resident->function, resident->offset);
	okp_resident.probe.pre_handler = okp_record_pre;
	if (!okprobe_register(&okp_resident.probe))
		for (i = 0; i < 5; i++)
			resident->function(i, i);
	for (i = 0; i < okp_resident_refused_count(); i++) {
		struct okprobe *p = &okp_resident_refused[i];

		p->symbol_name = probes->refused[i].symbol;
		p->offset = probes->refused[i].offset + entry_pad;
		p->pre_handler = okp_record_pre_count;
		okprobe_register(p);
	}
}

/* ---- Module ------------------------------------------------------------------ */

static int __init okp_selftest_init(void)
{
	const struct okp_selftest_arch *arch = &okp_selftest_arch;
	const struct okp_cycle_target *plain = &arch->plain;
	int ret = okp_results_init();

	if (ret)
		return ret;
	entry_pad = okp_entry_pad(plain->target);
	if (okp_args_only) {
		okp_test_args_probes(&arch->args);
		okp_test_args_differential(arch->jumps,
					   okp_scaled(OKP_COUNTING_CALLS));
	}
	if (okp_run_part_only(plain->target, plain->offset, plain->expect))
		return 0;
	okp_run_breakpoint_tests(arch);
	okp_run_jump_tests(arch);
	okp_register_residents(arch->residents);
	okp_results_publish();
	return 0;
}

static void __exit okp_selftest_exit(void)
{
	size_t i;

	if (okp_part_only()) {
		okp_results_exit();
		return;
	}
	for (i = 0; i < okp_resident_refused_count(); i++)
		okprobe_unregister(&okp_resident_refused[i]);
	if (okp_resident.probe.okp_site)
		okprobe_unregister(&okp_resident.probe);
	okp_results_exit();
}

module_init(okp_selftest_init);
module_exit(okp_selftest_exit);
MODULE_LICENSE("GPL");
