// SPDX-License-Identifier: GPL-2.0
/*
 * Return probes at a function's exits (built where the kernel has
 * CONFIG_RETHOOK). Where okprobe can prove every way out of the function
 * (the exit census, core/function_exits.hpp via okp_core_function_exits)
 * and a jump can replace a breakpoint at each, an okretprobe with neither
 * entry_handler nor data (src/core/return_plan.cpp decides) puts no probe
 * at the entry and replaces no return address. Its handler runs at the
 * function's exits instead: probes okprobe registers at each return (the
 * handler runs there, regs shown as after the return) and at each tail
 * call (which hooks the return address for the callee, as an entry does,
 * return_rethook.c). No instance, no trampoline: the return path of an
 * optimized probe. The core knows these probes by their pre_handler,
 * okp_glue_return_exit_hit.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/ptrace.h>
#include <linux/rethook.h>
#include <linux/slab.h>
#include <linux/static_call.h>
#include <linux/uaccess.h>

#include <okprobe.h>

#include "core/core_api.h"
#include "glue.h"
#include "arch_glue.h"
#include "resolved_calls.h"
#include "return_probes.h"

/* arch_rethook_trampoline's address. */
static unsigned long okp_rethook_trampoline __ro_after_init;

void okp_return_exits_init(void)
{
	okp_rethook_trampoline =
		(unsigned long)static_call_query(okp_arch_rethook_trampoline);
}

/* ---- The hit path (preemption off, no locks, no allocation) ------------- */

/*
 * The return address at an exit is the rethook trampoline: a return probe
 * on a function that tail-called this one hooked it. The real one, for
 * the instance and regs, is on rethook's list, as unwinders find it.
 */
static noinline void notrace okp_return_unhooked(struct okretprobe_instance *instance,
						 struct pt_regs *regs,
						 unsigned long sp)
{
	struct llist_node *cur = NULL;
	unsigned long ret;

	ret = okp_call(rethook_find_ret_addr)(current,
					      okp_arch_rethook_frame(regs, sp),
					      &cur);
	if (ret) {
		instance->ret_addr = ret;
		instruction_pointer_set(regs, ret);
	}
}
NOKPROBE_SYMBOL(okp_return_unhooked);

/*
 * At a tail call the census proved from the bytes that the stack is as at
 * the function's entry. Before rethook writes over what should be the
 * return address, this checks that it is one: text, right after a call.
 * Should the proof be wrong (hand-written code jumping with its frame up,
 * a jump through a thunk okprobe does not know), nothing is written.
 */
static noinline bool notrace okp_return_address_on_top(struct pt_regs *regs)
{
	unsigned long ret = okp_arch_return_address(regs);
	u8 before[OKP_ARCH_CALL_MAX];

	if (!okp_call(core_kernel_text)(ret) &&
	    !okp_call(__module_text_address)(ret))
		return false;
	if (copy_from_kernel_nofault(before, (void *)(ret - sizeof(before)),
				     sizeof(before)))
		return false;
	return okp_arch_call_ends_here(before);
}
NOKPROBE_SYMBOL(okp_return_address_on_top);

/*
 * The return is missed, and said once: the census was wrong here.
 * __kprobes: GCC would split the log line into a .cold piece that
 * NOKPROBE_SYMBOL does not cover.
 */
static noinline void notrace __kprobes
okp_return_not_on_top(struct okp_return_exit *exit)
{
	okp_return_missed(exit->rp);
	pr_err_once("return probe: no return address on the stack at the tail call %pS: its return is not hooked\n",
		    exit->kp.addr);
}

/*
 * An exit's pre_handler: the function returns, or tail-calls, here. At a
 * return handler runs at once, regs shown as the kernel's return
 * trampoline shows them: the instruction pointer the caller's return
 * address, the stack pointer as after the return; both are put back
 * before the return itself runs. A tail call's callee returns for the
 * function: its return address is hooked, as at an entry. The core runs
 * this as any probe's handler: a hit inside another okprobe handler is
 * missed (okp_glue_return_exit_missed). Its one local, the instance, has
 * a flexible data[] that stays empty (no data_size at the exits): the
 * stack protector would guard nothing and cost every return.
 */
int notrace __no_stack_protector
okp_glue_return_exit_hit(struct okprobe *probe, struct pt_regs *regs)
{
	struct okp_return_exit *exit =
		container_of(probe, struct okp_return_exit, kp);
	struct okretprobe *rp = exit->rp;
	struct okretprobe_instance instance = { .rp = rp };
	unsigned long ip, sp;

	if (exit->tail_call) {
		if (likely(okp_return_address_on_top(regs)))
			okp_return_hook_tail_call(rp, regs);
		else
			okp_return_not_on_top(exit);
		return 0;
	}
	if (!rp->handler)
		return 0;
	ip = instruction_pointer(regs);
	sp = kernel_stack_pointer(regs);
	instance.ret_addr = okp_arch_present_return(regs);
	/* Hooked for a tail call's callee (a return probe on this one). */
	if (unlikely(instance.ret_addr == okp_rethook_trampoline))
		okp_return_unhooked(&instance, regs, sp);
	rp->handler(&instance, regs);
	okp_arch_undo_present_return(regs, ip, sp);
	return 0;
}
NOKPROBE_SYMBOL(okp_glue_return_exit_hit);

void notrace okp_glue_return_exit_missed(struct okprobe *probe)
{
	okp_return_missed(container_of(probe, struct okp_return_exit, kp)->rp);
}
NOKPROBE_SYMBOL(okp_glue_return_exit_missed);

/* ---- Registration (okp_return_mutex) ------------------------------------ */

/* kp says OKPROBE_FLAG_OPTIMIZED while every exit's probe is a jump. */
void okp_glue_return_exit_optimized(struct okprobe *probe, int optimized)
{
	struct okp_return_exit *exit =
		container_of(probe, struct okp_return_exit, kp);
	struct okp_return_probe *state = READ_ONCE(exit->rp->okp_private);
	int now = atomic_add_return(optimized ? 1 : -1,
				    &state->optimized_exits);

	okp_return_set_flag(exit->rp, OKPROBE_FLAG_OPTIMIZED,
			    now == exit->count);
}

int okp_return_register_exits(struct okp_return_probe *state)
{
	struct okretprobe *rp = state->rp;
	struct okp_function_exit *found;
	struct okp_return_exit *exits = NULL;
	struct okprobe **kps = NULL;
	unsigned long entry = 0, where = 0;
	const char *why = "out of memory";
	long count;
	int i, ret = -EOPNOTSUPP;

	found = kmalloc_array(OKP_FUNCTION_EXITS_MAX, sizeof(*found), GFP_KERNEL);
	if (!found)
		return -ENOMEM;
	count = okp_probes_function_exits(&rp->kp, found, OKP_FUNCTION_EXITS_MAX,
					  &entry, &why, &where);
	if (count <= 0)
		goto out;
	exits = kcalloc(count, sizeof(*exits), GFP_KERNEL);
	kps = kmalloc_array(count, sizeof(*kps), GFP_KERNEL);
	if (!exits || !kps) {
		why = "out of memory";
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < count; i++) {
		exits[i].kp.addr = (void *)found[i].address;
		exits[i].kp.pre_handler = okp_glue_return_exit_hit;
		exits[i].kp.flags = rp->kp.flags & OKPROBE_FLAG_DISABLED;
		exits[i].rp = rp;
		exits[i].count = count;
		exits[i].tail_call = found[i].tail_call;
		kps[i] = &exits[i].kp;
	}
	where = entry;
	if (okp_probes_register_many_quietly(kps, count, &why))
		goto out;
	state->exits = exits;
	state->exit_count = count;
	exits = NULL;
	rp->kp.addr = (void *)entry;
	okp_return_set_flag(rp, OKPROBE_FLAG_RETURN_EXITS, true);
	ret = 0;
out:
	if (ret)
		pr_debug("return probe at %pS: at the entry, not the exits: %pS: %s\n",
			 (void *)entry, (void *)where, why);
	kfree(kps);
	kfree(exits);
	kfree(found);
	return ret;
}
