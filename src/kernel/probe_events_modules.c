// SPDX-License-Identifier: GPL-2.0
/*
 * okprobe_events lines on modules that come and go, as kprobe_events
 * takes them: a "MOD:SYM" line is taken while MOD is not loaded, its
 * probe registered when MOD comes (and again after each reload, the old
 * one unregistered first, as the kernel's trace_kprobe_module_callback()
 * does); a probe whose text goes with its module is gone until then, and
 * enabling its event passes it by (the kernel's __enable_trace_kprobe()).
 *
 * Two notifiers: the one for a module going runs before okprobe's own
 * (probes.c, return_probes.c), which mark the probes [GONE], so that no
 * enabling of an event finds a gone probe not yet marked here; the one for
 * a module coming runs after the kernel's jump label and static call
 * notifiers, whose tables okprobe's checks read.
 *
 * Locks as for a line: okp_events_mutex, then the tracing core's
 * event_mutex (an event's enabled count and its probes' states), then
 * okprobe's own.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kallsyms.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/string.h>

#include "compat.h"
#include "probe_events.h"
#include "resolved_calls.h"

struct okp_module_search {
	const char *name;
	size_t length;
	bool found;
};

#ifdef OKP_HAVE_MODULE_SYMBOLS_BY_NAME
static int okp_module_has_symbol(void *data, const char *name,
				 unsigned long unused)
{
	((struct okp_module_search *)data)->found = true;
	return 1;
}
#else
static int okp_module_has_symbol(void *data, const char *name,
				 struct module *module, unsigned long unused)
{
	struct okp_module_search *search = data;

	if (!module || strlen(module->name) != search->length ||
	    strncmp(module->name, search->name, search->length))
		return 0;
	search->found = true;
	return 1;
}
#endif

/*
 * Whether symbol is MOD:SYM with no module MOD loaded (a module without
 * a symbol counts as not loaded: it has no SYM either). A kernel that
 * cannot say takes the line, as for a module not loaded.
 */
bool okp_event_module_missing(const char *symbol)
{
	char name[MODULE_NAME_LEN];
	struct okp_module_search search = { .name = symbol };
	const char *colon = strchr(symbol, ':');

	if (!colon || colon - symbol >= MODULE_NAME_LEN)
		return false;
	if (!okp_resolved(module_kallsyms_on_each_symbol))
		return true;
	search.length = colon - symbol;
	memcpy(name, symbol, search.length);
	name[search.length] = '\0';
#ifdef OKP_HAVE_MODULE_SYMBOLS_BY_NAME
	okp_call(module_kallsyms_on_each_symbol)(name, okp_module_has_symbol,
						 &search);
#else
	okp_call(module_kallsyms_on_each_symbol)(okp_module_has_symbol,
						 &search);
#endif
	return !search.found;
}

/* Whether the line names its place in mod ("MOD:SYM"). */
static bool okp_event_probe_names(const struct okp_event_probe *ep,
				  const struct module *mod)
{
	size_t length = strlen(mod->name);

	return ep->symbol && !strncmp(ep->symbol, mod->name, length) &&
	       ep->symbol[length] == ':';
}

static unsigned long okp_event_probe_address(struct okp_event_probe *ep)
{
	return (unsigned long)okp_event_probe_kp(ep)->addr;
}

static int okp_events_module_going(struct notifier_block *block,
				   unsigned long state, void *data)
{
	struct okp_range text = okp_module_text(data);
	struct okp_event_probe *ep;
	unsigned long address;

	if (state != MODULE_STATE_GOING)
		return NOTIFY_DONE;
	mutex_lock(&okp_events_mutex);
	mutex_lock(okp_event_mutex());
	list_for_each_entry(ep, &okp_event_probes, list) {
		address = okp_event_probe_address(ep);
		if (ep->registered && address >= text.start &&
		    address < text.end)
			ep->gone = true;
	}
	mutex_unlock(okp_event_mutex());
	mutex_unlock(&okp_events_mutex);
	return NOTIFY_DONE;
}

static int okp_events_module_coming(struct notifier_block *block,
				    unsigned long state, void *data)
{
	struct module *mod = data;
	struct okp_event_probe *ep;
	int ret;

	if (state != MODULE_STATE_COMING)
		return NOTIFY_DONE;
	mutex_lock(&okp_events_mutex);
	mutex_lock(okp_event_mutex());
	list_for_each_entry(ep, &okp_event_probes, list) {
		if (!okp_event_probe_names(ep, mod))
			continue;
		okp_event_probe_unregister(ep);
		ret = okp_event_probe_register(ep);
		if (ret)
			pr_warn("okprobe_events: failed to register %s/%s on %s: %d\n",
				ep->event->group, ep->event->name, mod->name,
				ret);
	}
	mutex_unlock(okp_event_mutex());
	mutex_unlock(&okp_events_mutex);
	return NOTIFY_DONE;
}

/* Before okprobe's own GOING notifiers (priorities 0 and 1). */
static struct notifier_block okp_events_going_block = {
	.notifier_call = okp_events_module_going,
	.priority = 2,
};

/* After the jump label notifier (1), and the static call one (0, earlier). */
static struct notifier_block okp_events_coming_block = {
	.notifier_call = okp_events_module_coming,
	.priority = 0,
};

int okp_events_modules_init(void)
{
	int ret = register_module_notifier(&okp_events_going_block);

	if (ret)
		return ret;
	ret = register_module_notifier(&okp_events_coming_block);
	if (ret)
		unregister_module_notifier(&okp_events_going_block);
	return ret;
}

void okp_events_modules_exit(void)
{
	unregister_module_notifier(&okp_events_coming_block);
	unregister_module_notifier(&okp_events_going_block);
}
