// SPDX-License-Identifier: GPL-2.0
/*
 * Return probes at the entry, on the kernel's rethook (built where the
 * kernel has CONFIG_RETHOOK: Debian's amd64 6.1 and 6.12, riscv64 6.12).
 * An okretprobe's kp at the function's first byte (ftrace on x86, the
 * [AFTER FTRACE] probe on riscv, a breakpoint or an optimized jump
 * elsewhere) has okp_glue_return_entry_hit as its pre_handler, which takes
 * a rethook node and hooks the return: rethook keeps the real return
 * address on the task's shadow list, the kernel's own trampoline calls
 * okprobe at the return, the unwinders and the task-exit path know about
 * it (rethook_flush_task), and after rethook_free() a pending return goes
 * back to its caller without calling anything of okprobe's: no return
 * address ever points into okprobe's or a client's text.
 *
 * Instances: a rethook's pool is fixed once allocated, which is where
 * kretprobe misses come from. okprobe's pool is a chain of rethooks:
 * max(maxactive, 4 x CPUs, 16) instances in two halves to start with, and
 * in the background (irq_work, then a work item) another rethook as large
 * as all before it whenever an entry finds the newest empty, up to
 * OKP_RETURN_INSTANCES_MAX. The hit path never allocates: it may run
 * where the allocator's own locks are held.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/err.h>
#include <linux/irq_work.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/rethook.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include <okprobe.h>

#include "core/core_api.h"
#include "compat.h"
#include "glue.h"
#include "resolved_calls.h"
#include "return_probes.h"

/* The most instances one okretprobe's pool grows to. */
#define OKP_RETURN_INSTANCES_MAX 65536

struct okp_return_node {
	struct rethook_node node;	/* first: rethook kfree()s it (6.1) */
	struct okretprobe_instance instance;
};

/*
 * rethook_try_get() and rethook_recycle() of a live rethook, from the
 * pool's own inline operations (linux/freelist.h on 6.1, linux/objpool.h
 * on 6.12): no call out of okprobe on the hit path. rethook_try_get()'s
 * other checks hold here: the rethook is not being freed while its probe
 * is registered, and the caller asked whether RCU is watching.
 */
static __always_inline struct rethook_node *okp_rethook_take(struct rethook *rh)
{
#ifdef OKP_HAVE_RETHOOK_OBJPOOL
	return objpool_pop(&rh->pool);
#else
	struct freelist_node *node = freelist_try_get(&rh->pool);

	return node ? container_of(node, struct rethook_node, freelist) : NULL;
#endif
}

static __always_inline void okp_rethook_give_back(struct rethook_node *node)
{
#ifdef OKP_HAVE_RETHOOK_OBJPOOL
	objpool_push(node, &node->rethook->pool);
#else
	freelist_add(&node->freelist, &node->rethook->pool);
#endif
}

/*
 * The compiler may keep a copy of those inline operations in okprobe's
 * text (6.12's objpool_pop()/objpool_push()): a kprobe there would
 * re-enter the handler that called it.
 */
#ifdef OKP_HAVE_RETHOOK_OBJPOOL
NOKPROBE_SYMBOL(objpool_pop);
NOKPROBE_SYMBOL(objpool_push);
#else
NOKPROBE_SYMBOL(freelist_try_get);
NOKPROBE_SYMBOL(freelist_add);
#endif

/* ---- The hit paths (preemption off, no locks, no allocation) ------------ */

/*
 * Asks the worker for the next rethook, the newest of count being empty.
 * irq_work is NMI-safe and takes no lock a probed function may hold (the
 * worker's allocation would).
 */
static void notrace okp_return_want_more(struct okp_return_probe *state,
					 int count)
{
	if (count < OKP_RETURN_POOLS &&
	    time_after_eq(jiffies, READ_ONCE(state->grow_after))) {
		WRITE_ONCE(state->wanted, count);
		irq_work_queue(&state->kick);
	}
}
NOKPROBE_SYMBOL(okp_return_want_more);

/*
 * The newest rethook ran out: the worker is asked for another, and every
 * rethook is tried, newest first (the count read again: one added since
 * is tried too). Out of line, and given only the probe, so that the
 * common case keeps nothing across its pop for it.
 */
static noinline struct rethook_node *notrace
okp_return_take_older(struct okretprobe *rp)
{
	struct okp_return_probe *state = READ_ONCE(rp->okp_private);
	/* Pairs with the release in okp_return_add(): the pools are set. */
	int count = smp_load_acquire(&state->pool_count);
	struct rethook_node *node;
	int i;

	okp_return_want_more(state, count);
	for (i = count - 1; i >= 0; i--) {
		node = okp_rethook_take(state->pools[i]);
		if (node)
			return node;
	}
	atomic_long_inc(&state->starved);
	return NULL;
}
NOKPROBE_SYMBOL(okp_return_take_older);

static __always_inline struct rethook_node *
okp_return_take(struct okretprobe *rp)
{
	struct okp_return_probe *state = READ_ONCE(rp->okp_private);
	/* Pairs with the release in okp_return_add(): the pools are set. */
	int count = smp_load_acquire(&state->pool_count);
	struct rethook_node *node;

	/*
	 * An instance is freed by RCU (rethook's, after its probe goes):
	 * none is taken where RCU is not watching (idle code), as
	 * rethook_try_get() refuses there.
	 */
	if (unlikely(is_idle_task(current)) && !rcu_is_watching())
		return NULL;
	node = okp_rethook_take(state->pools[count - 1]);
	if (likely(node))
		return node;
	return okp_return_take_older(rp);
}

void notrace okp_return_missed(struct okretprobe *rp)
{
	atomic_long_inc((atomic_long_t *)&rp->nmissed);
}
NOKPROBE_SYMBOL(okp_return_missed);

/*
 * Takes an instance and hooks the return address regs show (the entry's,
 * or a tail call's, where the stack is as at entry): handler runs when the
 * function returns. mcount: regs are ftrace's, at the function's call site.
 */
static __always_inline void okp_return_hook(struct okretprobe *rp,
					    struct pt_regs *regs, bool mcount)
{
	struct okp_return_node *taken;
	struct rethook_node *node;

	node = okp_return_take(rp);
	if (!node) {
		okp_return_missed(rp);
		return;
	}
	taken = container_of(node, struct okp_return_node, node);
	taken->instance.rp = rp;
	taken->instance.ret_addr = 0;
	if (rp->entry_handler && rp->entry_handler(&taken->instance, regs)) {
		okp_rethook_give_back(node);
		return;
	}
	okp_call(rethook_hook)(node, regs, mcount);
}

/* kp's pre_handler: a call of the function. */
int notrace okp_glue_return_entry_hit(struct okprobe *probe,
				      struct pt_regs *regs)
{
	struct okretprobe *rp = container_of(probe, struct okretprobe, kp);

	okp_return_hook(rp, regs,
			!!(READ_ONCE(probe->flags) & OKPROBE_FLAG_FTRACE));
	return 0;
}
NOKPROBE_SYMBOL(okp_glue_return_entry_hit);

/* An exit probe at a tail call (return_exit_probes.c). */
void notrace okp_return_hook_tail_call(struct okretprobe *rp,
				       struct pt_regs *regs)
{
	okp_return_hook(rp, regs, false);
}
NOKPROBE_SYMBOL(okp_return_hook_tail_call);

/*
 * The kernel's return trampoline calls this (preemption off) until
 * rethook_free(). As kretprobes mark their kprobe current, the return
 * handler runs as an okprobe handler: probes hit inside it are missed
 * rather than nested.
 */
static __always_inline void okp_return_hit(struct rethook_node *node,
					   void *data, struct pt_regs *regs)
{
	struct okp_return_probe *state = data;
	struct okretprobe *rp = state->rp;
	struct okp_cpu_state *cpu = this_cpu_ptr(&okp_cpu_states);
	struct okp_return_node *taken =
		container_of(node, struct okp_return_node, node);

	if (!rp->handler)
		return;
	if (cpu->active_site) {
		okp_return_missed(rp);
		return;
	}
	cpu->active_site = state;
	/* Where rethook sends the return: the caller, also past a tail call. */
	taken->instance.ret_addr = instruction_pointer(regs);
	rp->handler(&taken->instance, regs);
	cpu->active_site = NULL;
}

#ifdef OKP_HAVE_RETHOOK_RET_ADDR
static void notrace okp_return_handler(struct rethook_node *node, void *data,
				       unsigned long ret_addr,
				       struct pt_regs *regs)
{
	okp_return_hit(node, data, regs);
}
#else
static void notrace okp_return_handler(struct rethook_node *node, void *data,
				       struct pt_regs *regs)
{
	okp_return_hit(node, data, regs);
}
#endif
NOKPROBE_SYMBOL(okp_return_handler);

static void okp_return_kick(struct irq_work *work)
{
	struct okp_return_probe *state =
		container_of(work, struct okp_return_probe, kick);

	schedule_work(&state->grow);
}

/* ---- The pool (process context) ----------------------------------------- */

#ifdef OKP_HAVE_RETHOOK_OBJPOOL
/* A rethook of count instances: 6.12's pool is an objpool of them. */
static struct rethook *okp_return_new_rethook(struct okp_return_probe *state,
					      long count)
{
	struct rethook *rh = okp_call(rethook_alloc)(state, okp_return_handler,
						     state->node_size, count);

	return IS_ERR(rh) ? NULL : rh;
}
#else
/* A rethook of count instances: 6.1's pool is a freelist of nodes. */
static struct rethook *okp_return_new_rethook(struct okp_return_probe *state,
					      long count)
{
	struct rethook *rh = okp_call(rethook_alloc)(state, okp_return_handler);
	struct okp_return_node *node;
	long i;

	for (i = 0; rh && i < count; i++) {
		node = kzalloc(state->node_size,
			       GFP_KERNEL | __GFP_NOWARN | __GFP_NORETRY);
		if (!node) {
			/* Its nodes go with it (after a grace period). */
			okp_call(rethook_free)(rh);
			return NULL;
		}
		okp_call(rethook_add_node)(rh, &node->node);
	}
	return rh;
}
#endif

/* Adds a rethook of count instances to the chain (worker or register). */
static int okp_return_add(struct okp_return_probe *state, long count)
{
	struct rethook *rh;

	if (state->pool_count == OKP_RETURN_POOLS)
		return -ENOSPC;
	rh = okp_return_new_rethook(state, count);
	if (!rh)
		return -ENOMEM;
	state->pools[state->pool_count] = rh;
	state->capacity += count;
	/* The rethook is whole before the hit path sees the count. */
	smp_store_release(&state->pool_count, state->pool_count + 1);
	return 0;
}

/*
 * The next rethook, as large as the pool so far (up to the limit), when
 * an entry found the newest empty since it was added.
 */
static void okp_return_grow(struct work_struct *work)
{
	struct okp_return_probe *state =
		container_of(work, struct okp_return_probe, grow);
	unsigned long starved = atomic_long_read(&state->starved);
	long more = min(state->capacity,
			OKP_RETURN_INSTANCES_MAX - state->capacity);
	int ret = 0;

	if (READ_ONCE(state->wanted) == state->pool_count && more > 0) {
		ret = okp_return_add(state, more);
		if (ret == -ENOMEM)
			WRITE_ONCE(state->grow_after, jiffies + HZ);
	}
	if (starved != state->starved_logged) {
		pr_warn_ratelimited("return probe at %pS: %lu calls found no free instance; %ld instances now%s\n",
				    state->rp->kp.addr,
				    starved - state->starved_logged,
				    state->capacity,
				    ret == -ENOMEM ? ", no memory for more" :
				    more <= 0 || ret ?
				    ", the most there may be" : "");
		state->starved_logged = starved;
	}
}

/* The pools' rethooks stop; their memory goes once no instance is out. */
static void okp_return_free_pools(struct okp_return_probe *state)
{
	int i;

	for (i = 0; i < state->pool_count; i++)
		okp_call(rethook_free)(state->pools[i]);
	state->pool_count = 0;
}

void okp_return_stop(struct okp_return_probe *state)
{
	irq_work_sync(&state->kick);
	cancel_work_sync(&state->grow);
	okp_return_free_pools(state);
}

void okp_return_destroy(struct okp_return_probe *state)
{
	okp_return_stop(state);
	synchronize_rcu();
	kfree(state);
}

struct okp_return_probe *okp_return_create(struct okretprobe *rp)
{
	long first = max3(rp->maxactive, 4 * (int)num_possible_cpus(), 16);
	struct okp_return_probe *state;

	state = kzalloc(sizeof(*state), GFP_KERNEL);
	if (!state)
		return NULL;
	state->rp = rp;
	state->node_size = sizeof(struct okp_return_node) + rp->data_size;
	state->grow_after = jiffies;
	state->wanted = -1;
	init_irq_work(&state->kick, okp_return_kick);
	INIT_WORK(&state->grow, okp_return_grow);
	first = min_t(long, first, OKP_RETURN_INSTANCES_MAX) / 2;
	/* Two halves: the newest found empty means half is in use. */
	if (okp_return_add(state, first) || okp_return_add(state, first)) {
		okp_return_destroy(state);
		return NULL;
	}
	return state;
}
