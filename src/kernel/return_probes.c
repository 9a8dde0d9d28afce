// SPDX-License-Identifier: GPL-2.0
/*
 * Return probes (okretprobe) on the kernel's rethook, for every
 * architecture whose kernel has one (Debian's amd64 6.1 and 6.12, riscv64
 * 6.12).
 *
 * An okretprobe is an ordinary entry probe (its kp, at the function's first
 * byte: ftrace on x86, the [AFTER FTRACE] probe on riscv, a breakpoint or
 * an optimized jump elsewhere) whose pre_handler takes a rethook node and
 * hooks the return: rethook keeps the real return address on the task's
 * shadow list, the kernel's own trampoline calls okprobe at the return,
 * the unwinders and the task-exit path know about it (rethook_flush_task),
 * and after rethook_free() a pending return goes back to its caller without
 * calling anything of okprobe's: no return address ever points into
 * okprobe's or a client's text.
 *
 * Instances: a rethook's pool is fixed once allocated, which is where
 * kretprobe misses come from. okprobe's pool is a chain of rethooks:
 * max(maxactive, 4 x CPUs, 16) instances in two halves to start with, and
 * in the background (irq_work, then a work item) another rethook as large
 * as all before it whenever an entry finds the newest empty, up to
 * OKP_RETURN_INSTANCES_MAX. The hit path never allocates: it may run
 * where the allocator's own locks are held.
 *
 * Exits: where okprobe can prove every way out of the function (the exit
 * census, core/function_exits.hpp) and a jump can replace a breakpoint at
 * each, an okretprobe with neither entry_handler nor data puts no probe at
 * the entry and replaces no return address. Its handler runs at the
 * function's exits instead: probes okprobe registers at each return (the
 * handler runs there, regs shown as after the return) and at each tail
 * call (which hooks the return address for the callee, as an entry does).
 * No instance, no trampoline: the return path of an optimized probe.
 *
 * Lock order: okp_return_mutex, then okp_probe_mutex (taken inside
 * okprobe_register() and friends).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/err.h>
#include <linux/hashtable.h>
#include <linux/irq_work.h>
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/workqueue.h>
#ifdef CONFIG_RETHOOK
#include <linux/rethook.h>
#endif

#include <okprobe.h>

#include "core/core_api.h"
#include "compat.h"
#include "glue.h"
#include "arch_glue.h"
#include "resolved_calls.h"

/* What okretprobe.data_size may be. */
#define OKP_RETURN_DATA_MAX 4096
/* The most instances one okretprobe's pool grows to. */
#define OKP_RETURN_INSTANCES_MAX 65536
/* Rethooks in the chain: two halves of 16, each next doubling: 65536. */
#define OKP_RETURN_POOLS 14

/*
 * An okretprobe's kp is its own at the exits (never registered): others
 * than the client update its flags with this (the optimizer's writer,
 * enable and disable).
 */
static void okp_return_set_flag(struct okretprobe *rp, unsigned int flag,
				bool on)
{
	unsigned int old = READ_ONCE(rp->kp.flags), new;

	do {
		new = on ? old | flag : old & ~flag;
	} while (!try_cmpxchg(&rp->kp.flags, &old, new));
}

static DEFINE_MUTEX(okp_return_mutex);
/*
 * Every registered okretprobe's state, under okp_return_mutex: listed in
 * registration order, and hashed by its okretprobe's address for the calls
 * that name one (a _many call looks each of its probes up).
 */
static LIST_HEAD(okp_return_probes);
static DEFINE_HASHTABLE(okp_return_by_rp, 10);

#ifdef CONFIG_RETHOOK

/*
 * The instances are a chain of rethooks, the newest as large as all the
 * others together: an entry takes from the newest first, and finding it
 * empty means half the pool is in use, the sign to add the next one.
 * No counter shared by the CPUs on the hit path, and an instance of a
 * task that exits inside the function simply goes back to its rethook
 * (rethook_flush_task()).
 */
struct okp_return_probe {
	struct list_head list;
	struct hlist_node by_rp;	/* okp_return_by_rp while listed */
	struct okretprobe *rp;
	struct rethook *pools[OKP_RETURN_POOLS];
	int pool_count;			/* published with release */
	/* The pool_count whose newest rethook an entry found empty. */
	int wanted;
	unsigned long node_size;
	long capacity;			/* instances in the pools (worker's) */
	/* Calls that found every rethook empty, for the worker to log. */
	atomic_long_t starved;
	unsigned long starved_logged;
	/*
	 * No growth asked for before this time (jiffies): set by the worker
	 * when memory ran out, so that it tries again a second later.
	 */
	unsigned long grow_after;
	struct irq_work kick;
	struct work_struct grow;
	/* At the exits: their probes (NULL: kp at the entry). */
	struct okp_return_exit *exits;
	int exit_count;
	/* How many of them are optimized (okprobe's writer counts). */
	atomic_t optimized_exits;
};

/* A probe at one exit of the function (okprobe's, never the client's). */
struct okp_return_exit {
	struct okprobe kp;
	struct okretprobe *rp;
	int count;		/* the function's exits */
	bool tail_call;
};

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

static void notrace okp_return_missed(struct okretprobe *rp)
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
static int notrace okp_return_entry(struct okprobe *probe,
				    struct pt_regs *regs)
{
	struct okretprobe *rp = container_of(probe, struct okretprobe, kp);

	okp_return_hook(rp, regs,
			!!(READ_ONCE(probe->flags) & OKPROBE_FLAG_FTRACE));
	return 0;
}
NOKPROBE_SYMBOL(okp_return_entry);

/* arch_rethook_trampoline's address. */
static unsigned long okp_rethook_trampoline __ro_after_init;

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
			okp_return_hook(rp, regs, false);
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

/*
 * After kp is unregistered (no entry handler runs any more): no growth,
 * no handler. The caller waits for one grace period before freeing the
 * state: a return handler may still be running on another CPU.
 */
static void okp_return_stop(struct okp_return_probe *state)
{
	irq_work_sync(&state->kick);
	cancel_work_sync(&state->grow);
	okp_return_free_pools(state);
}

/* A state whose kp never ran (or is gone), stopped and freed. */
static void okp_return_destroy(struct okp_return_probe *state)
{
	okp_return_stop(state);
	synchronize_rcu();
	kfree(state);
}

static struct okp_return_probe *okp_return_create(struct okretprobe *rp)
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


static const char *okp_return_unsupported;

#else /* !CONFIG_RETHOOK */

struct okp_return_probe {
	struct list_head list;
	struct hlist_node by_rp;	/* okp_return_by_rp while listed */
	struct okretprobe *rp;
};

/* Never armed (registration is refused); a handler all the same. */
static int notrace okp_return_entry(struct okprobe *probe,
				    struct pt_regs *regs)
{
	return 0;
}
NOKPROBE_SYMBOL(okp_return_entry);

static struct okp_return_probe *okp_return_create(struct okretprobe *rp)
{
	return NULL;
}

/* The core knows exits by their handler: never registered here. */
int notrace okp_glue_return_exit_hit(struct okprobe *probe,
				     struct pt_regs *regs)
{
	return 0;
}
NOKPROBE_SYMBOL(okp_glue_return_exit_hit);

void notrace okp_glue_return_exit_missed(struct okprobe *probe)
{
}
NOKPROBE_SYMBOL(okp_glue_return_exit_missed);

void okp_glue_return_exit_optimized(struct okprobe *probe, int optimized)
{
}

static void okp_return_stop(struct okp_return_probe *state)
{
}

static void okp_return_destroy(struct okp_return_probe *state)
{
}

static const char *okp_return_unsupported =
	"this kernel has no rethook (CONFIG_RETHOOK), which okprobe's return probes use";

#endif /* CONFIG_RETHOOK */

#ifdef CONFIG_RETHOOK
static int okp_return_exit_count(const struct okp_return_probe *state)
{
	return state->exit_count;
}

static struct okprobe *okp_return_exit_probe(struct okp_return_probe *state,
					     int i)
{
	return &state->exits[i].kp;
}

/* After the exits' probes are unregistered (and a grace period). */
static void okp_return_free_exits(struct okp_return_probe *state)
{
	kfree(state->exits);
	state->exits = NULL;
	state->exit_count = 0;
}
#else
static int okp_return_exit_count(const struct okp_return_probe *state)
{
	return 0;
}

static struct okprobe *okp_return_exit_probe(struct okp_return_probe *state,
					     int i)
{
	return NULL;
}

static void okp_return_free_exits(struct okp_return_probe *state)
{
}
#endif

/* ---- The API ------------------------------------------------------------ */

static void okp_return_list(struct okp_return_probe *state)
{
	list_add_tail(&state->list, &okp_return_probes);
	hash_add(okp_return_by_rp, &state->by_rp, (unsigned long)state->rp);
}

/* Off okp_return_probes (no lookup finds it any more), onto list. */
static void okp_return_unlist(struct okp_return_probe *state,
			      struct list_head *list)
{
	hash_del(&state->by_rp);
	list_move_tail(&state->list, list);
}

static struct okp_return_probe *okp_return_find(const struct okretprobe *rp)
{
	struct okp_return_probe *state;

	lockdep_assert_held(&okp_return_mutex);
	hash_for_each_possible(okp_return_by_rp, state, by_rp, (unsigned long)rp)
		if (state->rp == rp)
			return state;
	return NULL;
}

static void okp_return_refuse(const char *why, int ret)
{
	pr_err("cannot register return probe: %s (%d)\n", why, ret);
}

/*
 * Whether address is where a function starts: its first byte, the first
 * instruction past an x86 IBT landing pad (endbr64, or the nop that seals
 * it), its ftrace call site, as kprobes' kprobe_on_func_entry() takes, or
 * the first instruction past that call site (where okprobe puts an entry
 * probe on riscv 6.12: kp.addr of a registered one).
 */
static bool okp_return_at_entry(unsigned long address)
{
	unsigned long start, size, length, site;

	if (!okp_glue_function_of(address, &start, &size))
		return true; /* not text: kp's registration says why */
	site = okp_glue_ftrace_site(start, &length);
	return address == start || okp_kprobe_symbol_start(address) == start ||
	       (site && (address == site || address == site + length));
}

/*
 * Whether kp names a piece GCC split off a function (name.cold, entered
 * by a jump from the function's body): its first byte is no entry, and
 * what the stack holds there is no return address.
 */
static bool okp_return_piece(const struct okretprobe *rp)
{
	char name[KSYM_SYMBOL_LEN];

	if (rp->kp.symbol_name) {
		long copied = okp_copy_name(name, rp->kp.symbol_name,
					    sizeof(name));

		if (copied <= 0 || copied >= sizeof(name))
			return false; /* kp's registration says why */
	} else {
		sprint_symbol_no_offset(name, (unsigned long)rp->kp.addr);
	}
	return strstr(name, ".cold");
}

#ifdef CONFIG_RETHOOK
/*
 * Whether rp may run at the exits: no entry_handler and no data (nothing
 * to carry from the entry to the return), and the client did not ask for
 * the return address to be hooked.
 */
static bool okp_return_wants_exits(const struct okretprobe *rp)
{
	/* Other flags are kp's registration's to refuse (COUNTER). */
	return !rp->entry_handler && !rp->data_size &&
	       !(rp->kp.flags & ~OKPROBE_FLAG_DISABLED);
}

/*
 * Puts rp's probes at the function's exits: 0, or -EOPNOTSUPP when they
 * cannot be proven or registered (the caller hooks the return address
 * instead; why goes to the debug log), or -ENOMEM.
 */
static int okp_return_register_exits(struct okp_return_probe *state)
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
#else
static bool okp_return_wants_exits(const struct okretprobe *rp)
{
	return false;
}

static int okp_return_register_exits(struct okp_return_probe *state)
{
	return -EOPNOTSUPP;
}
#endif

static int okp_return_register_locked(struct okretprobe *rp)
{
	struct okp_return_probe *state;
	int ret;

	lockdep_assert_held(&okp_return_mutex);
	if (!rp) {
		okp_return_refuse("the probe is NULL", -EINVAL);
		return -EINVAL;
	}
	if (rp->okp_private || okp_return_find(rp)) {
		okp_return_refuse("the probe is already registered (or okp_private is not zero)",
				  -EINVAL);
		return -EINVAL;
	}
	if (okp_return_unsupported) {
		okp_return_refuse(okp_return_unsupported, -EOPNOTSUPP);
		return -EOPNOTSUPP;
	}
	if (rp->data_size > OKP_RETURN_DATA_MAX) {
		okp_return_refuse("data_size is more than 4096", -EINVAL);
		return -EINVAL;
	}
	if (rp->kp.offset || (!rp->kp.symbol_name &&
			      !okp_return_at_entry((unsigned long)rp->kp.addr))) {
		okp_return_refuse("a return probe goes at a function's entry (offset 0)",
				  -EINVAL);
		return -EINVAL;
	}
	if (okp_return_piece(rp)) {
		okp_return_refuse("a function's split-off piece (.cold) has no entry of its own",
				  -EINVAL);
		return -EINVAL;
	}
	state = okp_return_create(rp);
	if (!state) {
		okp_return_refuse("no memory for its instances", -ENOMEM);
		return -ENOMEM;
	}
	rp->nmissed = 0;
	rp->kp.flags &= ~OKPROBE_FLAG_RETURN_EXITS;
	WRITE_ONCE(rp->okp_private, state);
	if (okp_return_wants_exits(rp)) {
		ret = okp_return_register_exits(state);
		if (!ret) {
			okp_return_list(state);
			return 0;
		}
		if (ret != -EOPNOTSUPP) {
			okp_return_destroy(state);
			rp->okp_private = NULL;
			okp_return_refuse("no memory for its exits' probes", ret);
			return ret;
		}
	}
	rp->kp.pre_handler = okp_return_entry;
	rp->kp.post_handler = NULL;
	ret = okprobe_register(&rp->kp);
	if (ret) {
		/* kp never ran: nothing of the state is in use. */
		okp_return_destroy(state);
		rp->okp_private = NULL;
		return ret;
	}
	okp_return_list(state);
	return 0;
}

/*
 * Unregisters the states on list (taken off okp_return_probes): their kps
 * in one batch, then one grace period for the return handlers.
 */
static void okp_return_unregister_list(struct list_head *list)
{
	struct okp_return_probe *state, *next;
	struct okprobe **kps;
	int i = 0, count = 0;

	lockdep_assert_held(&okp_return_mutex);
	/* A return probe at the exits stands for as many probes. */
	list_for_each_entry(state, list, list)
		count += max(okp_return_exit_count(state), 1);
	if (!count)
		return;
	kps = kmalloc_array(count, sizeof(*kps), GFP_KERNEL);
	list_for_each_entry(state, list, list) {
		int exits = okp_return_exit_count(state), e;

		for (e = 0; e < max(exits, 1); e++) {
			struct okprobe *kp = exits ? okp_return_exit_probe(state, e) :
						     &state->rp->kp;

			if (kps)
				kps[i++] = kp;
			else
				okprobe_unregister(kp);
		}
	}
	if (kps) {
		okprobe_unregister_many(kps, count);
		kfree(kps);
	}
	list_for_each_entry(state, list, list)
		okp_return_stop(state);
	synchronize_rcu();
	list_for_each_entry_safe(state, next, list, list) {
		list_del(&state->list);
		WRITE_ONCE(state->rp->okp_private, NULL);
		okp_return_free_exits(state);
		kfree(state);
	}
}

int okretprobe_register(struct okretprobe *rp)
{
	int ret;

	if (okp_api_caller_atomic(__func__, _RET_IP_))
		return -EINVAL;
	might_sleep();
	mutex_lock(&okp_return_mutex);
	ret = okp_return_register_locked(rp);
	mutex_unlock(&okp_return_mutex);
	return ret;
}
EXPORT_SYMBOL_GPL(okretprobe_register);

void okretprobe_unregister(struct okretprobe *rp)
{
	/* The probe stays registered: its owner must not free it. */
	if (okp_api_caller_atomic(__func__, _RET_IP_))
		return;
	okretprobe_unregister_many(&rp, 1);
}
EXPORT_SYMBOL_GPL(okretprobe_unregister);

int okretprobe_register_many(struct okretprobe **rps, int count)
{
	LIST_HEAD(undo);
	struct okp_return_probe *state;
	int i, ret = 0;

	if (okp_api_caller_atomic(__func__, _RET_IP_))
		return -EINVAL;
	might_sleep();
	if (!rps || count <= 0) {
		okp_return_refuse(rps ? "count <= 0" : "the array is NULL",
				  -EINVAL);
		return -EINVAL;
	}
	mutex_lock(&okp_return_mutex);
	for (i = 0; i < count && !ret; i++)
		ret = okp_return_register_locked(rps[i]);
	if (ret) {
		/* All or nothing: the ones before the failure go again. */
		while (--i > 0) {
			state = okp_return_find(rps[i - 1]);
			okp_return_unlist(state, &undo);
		}
		okp_return_unregister_list(&undo);
	}
	mutex_unlock(&okp_return_mutex);
	return ret;
}
EXPORT_SYMBOL_GPL(okretprobe_register_many);

void okretprobe_unregister_many(struct okretprobe **rps, int count)
{
	struct okp_return_probe *state;
	LIST_HEAD(going);
	int i, unknown = 0;

	if (okp_api_caller_atomic(__func__, _RET_IP_))
		return;
	might_sleep();
	if (!rps || count <= 0) {
		pr_err("%s: %s: ignored\n", __func__,
		       rps ? "count <= 0" : "the array is NULL");
		return;
	}
	mutex_lock(&okp_return_mutex);
	for (i = 0; i < count; i++) {
		state = okp_return_find(rps[i]);
		if (!state) {
			unknown++;
			continue;
		}
		okp_return_unlist(state, &going);
	}
	okp_return_unregister_list(&going);
	mutex_unlock(&okp_return_mutex);
	if (unknown)
		pr_err("%s: %d of %d return probes not registered (first %p): ignored\n",
		       __func__, unknown, count, rps[0]);
}
EXPORT_SYMBOL_GPL(okretprobe_unregister_many);

static int okp_return_set_enabled(struct okretprobe *rp, bool enabled)
{
	struct okp_return_probe *state = NULL;
	int ret = -EINVAL, exits = 0, e;

	might_sleep();
	mutex_lock(&okp_return_mutex);
	if (rp)
		state = okp_return_find(rp);
	if (state)
		exits = okp_return_exit_count(state);
	if (state && !exits) {
		ret = enabled ? okprobe_enable(&rp->kp) :
				okprobe_disable(&rp->kp);
	} else if (state && !enabled) {
		/*
		 * Every exit's probe at once, all or none: their jumps come
		 * out together (on riscv one rcu-tasks grace period, not one
		 * an exit). kp, never registered, says which.
		 */
		struct okprobe *kps[OKP_FUNCTION_EXITS_MAX];

		for (e = 0; e < exits; e++)
			kps[e] = okp_return_exit_probe(state, e);
		ret = okp_probes_disable_many(kps, exits);
		if (!ret)
			okp_return_set_flag(rp, OKPROBE_FLAG_DISABLED, true);
	} else if (state) {
		/*
		 * Each exit's probe, all or none (those done go back on a
		 * failure); kp, never registered, says which.
		 */
		for (ret = 0, e = 0; e < exits && !ret; e++) {
			struct okprobe *kp = okp_return_exit_probe(state, e);

			ret = enabled ? okprobe_enable(kp) : okprobe_disable(kp);
		}
		for (e -= 2; ret && e >= 0; e--) {
			struct okprobe *kp = okp_return_exit_probe(state, e);

			if (enabled)
				okprobe_disable(kp);
			else
				okprobe_enable(kp);
		}
		if (!ret)
			okp_return_set_flag(rp, OKPROBE_FLAG_DISABLED,
					    !enabled);
	}
	mutex_unlock(&okp_return_mutex);
	return ret;
}

int okretprobe_enable(struct okretprobe *rp)
{
	if (okp_api_caller_atomic(__func__, _RET_IP_))
		return -EINVAL;
	return okp_return_set_enabled(rp, true);
}
EXPORT_SYMBOL_GPL(okretprobe_enable);

int okretprobe_disable(struct okretprobe *rp)
{
	if (okp_api_caller_atomic(__func__, _RET_IP_))
		return -EINVAL;
	return okp_return_set_enabled(rp, false);
}
EXPORT_SYMBOL_GPL(okretprobe_disable);

bool okp_return_probe_of(const struct okprobe *probe)
{
	return probe->pre_handler == okp_return_entry;
}

bool okp_return_exit_of(const struct okprobe *probe)
{
	return probe->pre_handler == okp_glue_return_exit_hit;
}

unsigned long okp_return_missed_of(const struct okprobe *probe)
{
	const struct okretprobe *rp =
		container_of(probe, struct okretprobe, kp);

	return READ_ONCE(rp->nmissed);
}

/* ---- Modules ------------------------------------------------------------ */

static bool okp_return_within(const struct okp_range *ranges, int count,
			      const void *pointer)
{
	unsigned long address = (unsigned long)pointer;
	int i;

	for (i = 0; i < count; i++)
		if (address >= ranges[i].start && address < ranges[i].end)
			return true;
	return false;
}

/*
 * A client that unloads with return probes registered: they are
 * unregistered here, before probes.c's notifier would take their kps
 * alone and leave the rethooks calling into freed text.
 */
static int okp_return_module_notify(struct notifier_block *block,
				    unsigned long event, void *data)
{
	struct okp_range core[OKP_MODULE_CORE_RANGES];
	struct okp_return_probe *state, *next;
	struct module *mod = data;
	LIST_HEAD(orphans);
	int ranges;

	if (event != MODULE_STATE_GOING)
		return NOTIFY_DONE;
	ranges = okp_module_core(mod, core);
	mutex_lock(&okp_return_mutex);
	list_for_each_entry_safe(state, next, &okp_return_probes, list) {
		struct okretprobe *rp = state->rp;

		if (!okp_return_within(core, ranges, rp) &&
		    !okp_return_within(core, ranges, rp->handler) &&
		    !okp_return_within(core, ranges, rp->entry_handler))
			continue;
		pr_err("module %s unloaded without unregistering its return probe at %pS: unregistered it\n",
		       mod->name, rp->kp.addr);
		okp_return_unlist(state, &orphans);
	}
	okp_return_unregister_list(&orphans);
	mutex_unlock(&okp_return_mutex);
	return NOTIFY_DONE;
}

/* Before probes.c's notifier, which drops orphaned kps alone. */
static struct notifier_block okp_return_module_block = {
	.notifier_call = okp_return_module_notify,
	.priority = 1,
};

int okp_return_probes_init(void)
{
#ifdef CONFIG_RETHOOK
	okp_rethook_trampoline =
		(unsigned long)static_call_query(okp_arch_rethook_trampoline);
#endif
	return register_module_notifier(&okp_return_module_block);
}

void okp_return_probes_exit(void)
{
	struct okp_return_probe *state, *next;
	LIST_HEAD(left);

	unregister_module_notifier(&okp_return_module_block);
	mutex_lock(&okp_return_mutex);
	list_for_each_entry_safe(state, next, &okp_return_probes, list)
		okp_return_unlist(state, &left);
	okp_return_unregister_list(&left);
	mutex_unlock(&okp_return_mutex);
}
