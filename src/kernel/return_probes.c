// SPDX-License-Identifier: GPL-2.0
/*
 * Return probes (okretprobe): the API, the registration and the list of
 * registered probes. Where a probe goes is src/core/return_plan.cpp's
 * decision, from the facts gathered here: refused, at the function's
 * exits (return_exit_probes.c: probes at each return and tail call, when
 * the exit census proves them), or at the entry, its kp's pre_handler
 * hooking the return address on the kernel's rethook (return_rethook.c:
 * the instance pools and the hit paths). Without CONFIG_RETHOOK,
 * return_no_rethook.c stands in for both and every probe is refused.
 *
 * Lock order: okp_return_mutex, then okp_probe_mutex (taken inside
 * okprobe_register() and friends).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hashtable.h>
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/slab.h>

#include <okprobe.h>

#include "core/core_api.h"
#include "compat.h"
#include "glue.h"
#include "return_probes.h"

static DEFINE_MUTEX(okp_return_mutex);
/*
 * Every registered okretprobe's state, under okp_return_mutex: listed in
 * registration order, and hashed by its okretprobe's address for the calls
 * that name one (a _many call looks each of its probes up).
 */
static LIST_HEAD(okp_return_probes);
static DEFINE_HASHTABLE(okp_return_by_rp, 10);

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
bool okp_return_at_entry(unsigned long address)
{
	unsigned long start, size, length, site;

	if (!okp_glue_function_of(address, &start, &size))
		return true; /* not text: kp's registration says why */
	site = okp_glue_ftrace_site(start, &length);
	return address == start || okp_kprobe_symbol_start(address) == start ||
	       (site && (address == site || address == site + length));
}

/*
 * The name of the symbol kp names, for the .cold rule (a piece GCC split
 * off a function, entered by a jump from its body, has no entry and no
 * return address of its own): name, or NULL when symbol_name cannot be
 * read (kp's registration says why).
 */
static const char *okp_return_name(const struct okretprobe *rp, char *name,
				   long size)
{
	if (rp->kp.symbol_name) {
		long copied = okp_copy_name(name, rp->kp.symbol_name, size);

		if (copied <= 0 || copied >= size)
			return NULL;
	} else {
		sprint_symbol_no_offset(name, (unsigned long)rp->kp.addr);
	}
	return name;
}

/*
 * Where rp goes (src/core/return_plan.cpp): 0 and *strategy, or the
 * refusal, logged.
 */
static int okp_return_plan(const struct okretprobe *rp,
			   enum okp_return_strategy *strategy)
{
	struct okp_return_request request = {
		.has_rethook = IS_ENABLED(CONFIG_RETHOOK),
		.at_function_start = 1,
	};
	char name[KSYM_SYMBOL_LEN];
	const char *why;
	int ret;

	if (rp) {
		request.registered = rp->okp_private || okp_return_find(rp);
		request.data_size = rp->data_size;
		request.has_entry_handler = !!rp->entry_handler;
		request.offset = rp->kp.offset;
		/* RETURN_EXITS is okprobe's, cleared as registration starts. */
		request.flags = rp->kp.flags & ~OKPROBE_FLAG_RETURN_EXITS;
		request.has_symbol_name = !!rp->kp.symbol_name;
		if (!rp->kp.symbol_name)
			request.at_function_start =
				okp_return_at_entry((unsigned long)rp->kp.addr);
		request.name = okp_return_name(rp, name, sizeof(name));
	}
	ret = okp_core_plan_return(rp ? &request : NULL, strategy, &why);
	if (ret)
		okp_return_refuse(why, ret);
	return ret;
}

static int okp_return_register_locked(struct okretprobe *rp)
{
	enum okp_return_strategy strategy;
	struct okp_return_probe *state;
	int ret;

	lockdep_assert_held(&okp_return_mutex);
	ret = okp_return_plan(rp, &strategy);
	if (ret)
		return ret;
	state = okp_return_create(rp);
	if (!state) {
		okp_return_refuse("no memory for its instances", -ENOMEM);
		return -ENOMEM;
	}
	rp->nmissed = 0;
	rp->kp.flags &= ~OKPROBE_FLAG_RETURN_EXITS;
	WRITE_ONCE(rp->okp_private, state);
	if (strategy == OKP_RETURN_AT_EXITS) {
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
	rp->kp.pre_handler = okp_glue_return_entry_hit;
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
		count += max(state->exit_count, 1);
	if (!count)
		return;
	kps = kmalloc_array(count, sizeof(*kps), GFP_KERNEL);
	list_for_each_entry(state, list, list) {
		int exits = state->exit_count, e;

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
		kfree(state->exits);
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
		exits = state->exit_count;
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
	okp_return_exits_init();
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
