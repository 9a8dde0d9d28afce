// SPDX-License-Identifier: GPL-2.0
/*
 * A function's entry through ftrace, as kprobes on ftrace do it
 * (kernel/kprobes.c, arch/x86/kernel/kprobes/ftrace.c): at a function's
 * ftrace call site okprobe writes no byte; one of two ftrace_ops, filtered
 * to the call sites of its armed entry probes, calls the core instead of a
 * breakpoint. The ops with FTRACE_OPS_FL_IPMODIFY serve sites with a
 * post_handler (as kprobe_ipmodify_ops), the other the rest, so that an
 * entry probe without one leaves the function to livepatch or a BPF
 * trampoline that modifies the ip.
 *
 * Each ops is registered with ftrace while at least one call site is in
 * its filter. Everything here runs under okprobe's probe mutex (the
 * writer); ftrace takes its own locks inside: the order is okprobe's probe
 * mutex, then ftrace's (Documentation/design.md).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ftrace.h>
#include <linux/kprobes.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>

#include "core/core_api.h"
#include "glue.h"
#include "resolved_calls.h"

unsigned long okp_glue_ftrace_site(unsigned long address,
				   unsigned long *length)
{
#ifdef CONFIG_DYNAMIC_FTRACE
	*length = 0;
	if (!okp_resolved(ftrace_location))
		return 0;
	address = okp_call(ftrace_location)(address);
	if (address)
		*length = MCOUNT_INSN_SIZE;
	return address;
#else
	*length = 0;
	return 0;
#endif
}

#ifdef CONFIG_DYNAMIC_FTRACE_WITH_REGS

/*
 * ftrace calls this at an armed call site, perhaps with preemption on.
 * regs are ftrace's full save. okprobe's sites and probes live by RCU
 * grace periods, which do not wait for a CPU where RCU is not watching
 * (idle code ftrace may trace): there nothing of okprobe's is touched, not
 * even a probe's nmissed (the call simply runs without handlers, as under
 * ftrace's recursion guard with kprobes on ftrace).
 *
 * No ftrace_test_recursion_trylock(): the core's per-CPU active_site is
 * this callback's recursion guard, as kprobe_running() is kprobes' (which
 * take both). Everything before the core sets it is notrace and calls
 * nothing traced (the C++ core is built without ftrace's flags); a
 * handler that calls a function okprobe hooks through ftrace, or an
 * interrupt or NMI that does while a hit runs, finds it set and counts a
 * miss, as a kprobe would. Of the kernel's functions, only the inline
 * ones and rcu_is_watching() (notrace on 6.1 and 6.12) run before it.
 * The trylock's 25 instructions were an eighth of an entry hit
 * (tools/trace-hit); it let one nested call per context through anyway
 * (its transition bit), and dropped a second uncounted.
 *
 * Every call and return counts on the hit path (under QEMU's TCG each
 * return is a lookup of its own): one call into the core, the per-CPU
 * state computed here, and rcu_is_watching() asked only of the idle task,
 * the only task whose traceable code runs where RCU does not watch
 * (entry code that stops RCU is noinstr, never traced).
 */
static void notrace okp_ftrace_handler(unsigned long ip,
				       unsigned long parent_ip,
				       struct ftrace_ops *ops,
				       struct ftrace_regs *fregs)
{
	struct pt_regs *regs = ftrace_get_regs(fregs);

	preempt_disable_notrace();
	if (likely(!is_idle_task(current)) || rcu_is_watching())
		okp_core_ftrace_hit(ip, regs, this_cpu_ptr(&okp_cpu_states));
	preempt_enable_notrace();
}
NOKPROBE_SYMBOL(okp_ftrace_handler);

static struct ftrace_ops okp_ftrace_ops = {
	.func = okp_ftrace_handler,
	.flags = FTRACE_OPS_FL_SAVE_REGS,
};

static struct ftrace_ops okp_ftrace_ipmodify_ops = {
	.func = okp_ftrace_handler,
	.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY,
};

/* How many call sites each ops filters (the writer's). */
static unsigned int okp_ftrace_sites, okp_ftrace_ipmodify_sites;

int okp_glue_ftrace_supported(void)
{
	return 1;
}

/* The ops a call site goes through, and its count of sites. */
static struct ftrace_ops *okp_ftrace_ops_of(int ipmodify, unsigned int **sites)
{
	*sites = ipmodify ? &okp_ftrace_ipmodify_sites : &okp_ftrace_sites;
	return ipmodify ? &okp_ftrace_ipmodify_ops : &okp_ftrace_ops;
}

/*
 * One pass of ftrace over its records for the whole batch
 * (ftrace_set_filter_ips(), as fprobe uses it), where a probe at a time
 * cost a pass each: registering 1000 entry probes with
 * okprobe_register_many() no longer updates ftrace's text 1000 times.
 */
int okp_glue_ftrace_arm_many(const unsigned long *addresses,
			     unsigned int count, int ipmodify)
{
	unsigned int *sites;
	struct ftrace_ops *ops = okp_ftrace_ops_of(ipmodify, &sites);
	int ret;

	ret = ftrace_set_filter_ips(ops, (unsigned long *)addresses, count,
				    0, 0);
	if (ret)
		return ret;
	if (*sites == 0) {
		ret = register_ftrace_function(ops);
		if (ret) {
			/*
			 * The filter held no other site: emptied whole, so
			 * that no address is left for the next registration
			 * even when a removal would find no memory.
			 */
			ftrace_set_filter_ips(ops, NULL, 0, 0, 1);
			return ret;
		}
	}
	*sites += count;
	return 0;
}

void okp_glue_ftrace_disarm_many(const unsigned long *addresses,
				 unsigned int count, int ipmodify)
{
	unsigned int *sites, i;
	struct ftrace_ops *ops = okp_ftrace_ops_of(ipmodify, &sites);
	int ret;

	/*
	 * The last sites unregister the ops first, as kprobes does: an ops
	 * must not be left registered with an empty filter, which ftrace
	 * reads as "trace every function". If ftrace cannot (it was killed),
	 * its call sites may still lead into okprobe: the ops keeps its
	 * filter, and okprobe.ko stays loaded.
	 */
	if (WARN_ON_ONCE(*sites < count))
		return;
	if (*sites == count) {
		ret = unregister_ftrace_function(ops);
		if (ret) {
			__module_get(THIS_MODULE);
			pr_err("cannot leave %pS: unregister_ftrace_function: %d; okprobe stays loaded\n",
			       (void *)addresses[0], ret);
			return;
		}
	}
	*sites -= count;
	/*
	 * The call sites are still in ftrace's records: a module's going
	 * text is disarmed from its GOING notifier, before ftrace drops them.
	 */
	ret = ftrace_set_filter_ips(ops, (unsigned long *)addresses, count,
				    1, 0);
	if (!ret || count == 1) {
		if (ret)
			pr_err("ftrace_set_filter_ip(%pS, remove): %d\n",
			       (void *)addresses[0], ret);
		return;
	}
	/* All or nothing: one at a time, so that only a refused one stays. */
	for (i = 0; i < count; i++) {
		ret = ftrace_set_filter_ip(ops, addresses[i], 1, 0);
		if (ret)
			pr_err("ftrace_set_filter_ip(%pS, remove): %d\n",
			       (void *)addresses[i], ret);
	}
}

#else /* !CONFIG_DYNAMIC_FTRACE_WITH_REGS */

/* ftrace saves no registers here: entry probes go past the call site. */
int okp_glue_ftrace_supported(void)
{
	return 0;
}

int okp_glue_ftrace_arm_many(const unsigned long *addresses,
			     unsigned int count, int ipmodify)
{
	return -EOPNOTSUPP;
}

void okp_glue_ftrace_disarm_many(const unsigned long *addresses,
				 unsigned int count, int ipmodify)
{
}

#endif /* CONFIG_DYNAMIC_FTRACE_WITH_REGS */
