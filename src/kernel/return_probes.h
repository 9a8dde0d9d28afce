/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What okprobe's return-probe files share: one registered okretprobe's
 * state and the calls between them. return_probes.c is the API, the
 * registration (carrying out src/core/return_plan.cpp's plan) and the list
 * of registered probes; return_rethook.c the instance pools on the
 * kernel's rethook and the hit paths of the entry and the return;
 * return_exit_probes.c the probes at a function's exits. Those two are
 * built where the kernel has CONFIG_RETHOOK and return_no_rethook.c
 * elsewhere (Kbuild): that is the one place rethook's absence is decided.
 */
#ifndef OKPROBE_RETURN_PROBES_H
#define OKPROBE_RETURN_PROBES_H

#include <linux/atomic.h>
#include <linux/irq_work.h>
#include <linux/list.h>
#include <linux/types.h>
#include <linux/workqueue.h>

#include <okprobe.h>

/* Rethooks in the chain: two halves of 16, each next doubling: 65536. */
#define OKP_RETURN_POOLS 14

struct rethook;

/* A probe at one exit of the function (okprobe's, never the client's). */
struct okp_return_exit {
	struct okprobe kp;
	struct okretprobe *rp;
	int count;		/* the function's exits */
	bool tail_call;
};

/*
 * One registered okretprobe. At the entry, its instances are a chain of
 * rethooks, the newest as large as all the others together: an entry
 * takes from the newest first, and finding it empty means half the pool is
 * in use, the sign to add the next one. No counter shared by the CPUs on
 * the hit path, and an instance of a task that exits inside the function
 * simply goes back to its rethook (rethook_flush_task()).
 */
struct okp_return_probe {
	/* On okp_return_probes, hashed by rp (return_probes.c's mutex). */
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

/*
 * An okretprobe's kp at the exits is its own (never registered): others
 * than the client update its flags with this (the optimizer's writer,
 * enable and disable).
 */
static inline void okp_return_set_flag(struct okretprobe *rp,
				       unsigned int flag, bool on)
{
	unsigned int old = READ_ONCE(rp->kp.flags), new;

	do {
		new = on ? old | flag : old & ~flag;
	} while (!try_cmpxchg(&rp->kp.flags, &old, new));
}

/* The probe at exit i of a return probe at the exits. */
static inline struct okprobe *okp_return_exit_probe(struct okp_return_probe *state,
						    int i)
{
	return &state->exits[i].kp;
}

/*
 * return_rethook.c: a state with its first instances, or NULL (no memory);
 * stopping one after its probes are unregistered (no growth, no handler;
 * the caller waits a grace period before freeing it); destroying one whose
 * probes never ran. kp's pre_handler at the entry is
 * okp_glue_return_entry_hit (core/glue_services.h).
 */
struct okp_return_probe *okp_return_create(struct okretprobe *rp);
void okp_return_stop(struct okp_return_probe *state);
void okp_return_destroy(struct okp_return_probe *state);
/*
 * Whether address is where a function starts, as kprobe_on_func_entry()
 * takes it: its first byte, past an IBT landing pad, its ftrace call site
 * or (riscv 6.12) past that site; true where it is not text at all.
 */
bool okp_return_at_entry(unsigned long address);
/* A call the probe could not follow (its hit paths). */
void okp_return_missed(struct okretprobe *rp);
/* A tail call: its callee's return address hooked, as at an entry. */
void okp_return_hook_tail_call(struct okretprobe *rp, struct pt_regs *regs);

/*
 * return_exit_probes.c: puts the state's probes at the function's exits:
 * 0, or -EOPNOTSUPP when they cannot be proven or registered (the caller
 * hooks the return address instead; why goes to the debug log), or
 * -ENOMEM. Under okp_return_mutex; rethook's trampoline is found at load.
 */
int okp_return_register_exits(struct okp_return_probe *state);
void okp_return_exits_init(void);

#endif /* OKPROBE_RETURN_PROBES_H */
