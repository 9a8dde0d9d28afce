// SPDX-License-Identifier: GPL-2.0
/*
 * Load-time resolution of the kernel symbols okprobe needs but 6.1 does not
 * export. Everything is resolved here, once, before anything else runs; a
 * required symbol that is missing or fails validation fails the load with a
 * log line naming it.
 *
 * kallsyms_lookup_name itself is not exported either. It comes from
 *  - the module parameter kallsyms_lookup_name=ADDRESS, filled from
 *    /proc/kallsyms by tools/okprobe-load (works without CONFIG_KPROBES), or
 *  - a temporary kprobe on it, whose address the kprobes core resolves.
 * Either way the address is checked with sprint_symbol() (exported) before it
 * is ever called, so a stale address from another boot fails cleanly.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "core/core_api.h"
#include "arch_glue.h"
#include "compat.h"
#include "glue.h"
#include "resolved_calls.h"

struct okp_kernel_symbols okp_ksyms;

/* The unexported functions okprobe calls, as static calls (why: there). */
#define OKP_RESOLVED_FUNCTION(name, function, required)		\
	DEFINE_STATIC_CALL_NULL(okp_##name, function)
#include "resolved_functions.h"
#undef OKP_RESOLVED_FUNCTION

/*
 * Handlers call some of them (rethook_hook, the string fetches): where a
 * call site is not patched into a direct call, it goes through the
 * trampoline, which a kprobe must not interrupt either.
 */
#ifdef CONFIG_HAVE_STATIC_CALL
#define OKP_RESOLVED_FUNCTION(name, function, required)		\
	NOKPROBE_SYMBOL(STATIC_CALL_TRAMP(okp_##name))
#include "resolved_functions.h"
#undef OKP_RESOLVED_FUNCTION
#endif

#define OKP_REQUIRED(sym) { #sym, &okp_ksyms.sym, 1 }
#define OKP_ARCH_DATA_REQUEST(sym, required)				\
	{ #sym, &okp_arch_ksyms.sym, required },

/* The unexported data okprobe reads: addresses, never called. */
static struct okp_symbol_request okp_data_table[] = {
	OKP_REQUIRED(_sinittext),
	OKP_REQUIRED(_einittext),
	OKP_REQUIRED(text_mutex),
	{ "event_mutex", &okp_ksyms.event_mutex, 0 },
	{ "ftrace_events", &okp_ksyms.ftrace_events, 0 },
	OKP_ARCH_DATA_SYMBOLS(OKP_ARCH_DATA_REQUEST)
};

unsigned long okp_ksyms_lookup(const char *name)
{
	return okp_resolved(kallsyms_lookup_name) ?
		       okp_call(kallsyms_lookup_name)(name) : 0;
}

static void okp_describe_address(unsigned long address, char *buffer,
				 unsigned long size)
{
	char *description = kmalloc(KSYM_SYMBOL_LEN, GFP_KERNEL);

	buffer[0] = '\0';
	if (!description)
		return;
	sprint_symbol(description, address);
	strscpy(buffer, description, size);
	kfree(description);
}

static const struct okp_symbol_ops okp_kernel_symbol_ops = {
	.lookup = okp_ksyms_lookup,
	.describe = okp_describe_address,
};

/*
 * Without KPROBES_ON_FTRACE (riscv) the kernel refuses a kprobe on the
 * symbol's ftrace call site at +0: the next instruction boundaries are
 * tried, up to this far in.
 */
#define OKP_KPROBE_SEARCH_BYTES 16

static unsigned long okp_kallsyms_lookup_name_from_kprobe(void)
{
#ifdef CONFIG_KPROBES
	struct kprobe probe;
	unsigned long address;
	unsigned int offset;

	for (offset = 0; offset <= OKP_KPROBE_SEARCH_BYTES; offset += 2) {
		probe = (struct kprobe){ .symbol_name = "kallsyms_lookup_name",
					 .offset = offset };
		if (register_kprobe(&probe))
			continue;
		address = okp_kprobe_symbol_start((unsigned long)probe.addr -
						  offset);
		unregister_kprobe(&probe);
		return address;
	}
#endif
	return 0;
}

/* Resolves and validates kallsyms_lookup_name; logs and fails if it can't. */
static int okp_resolve_kallsyms(unsigned long from_parameter)
{
	const char *source = "module parameter kallsyms_lookup_name";
	unsigned long address = from_parameter;
	char description[160];
	enum okp_symbol_verdict verdict;

	if (!address) {
		source = "a temporary kprobe";
		address = okp_kallsyms_lookup_name_from_kprobe();
	}
	if (!address) {
		pr_err("cannot resolve kernel symbol kallsyms_lookup_name: not exported and no kprobes; load with tools/okprobe-load\n");
		return -ENOENT;
	}
	okp_describe_address(address, description, sizeof(description));
	verdict = okp_core_check_symbol("kallsyms_lookup_name", address,
					description);
	if (verdict != OKP_SYMBOL_OK) {
		pr_err("cannot resolve kernel symbol kallsyms_lookup_name: address 0x%lx from %s is \"%s\": %s\n",
		       address, source, description,
		       okp_core_symbol_verdict_text(verdict));
		return -EINVAL;
	}
	static_call_update(okp_kallsyms_lookup_name, (void *)address);
	return 0;
}

static int okp_resolve_table(struct okp_symbol_request *table,
			     unsigned long count)
{
	struct okp_symbol_failure failure = {};
	int failed;

	failed = okp_core_resolve_symbols(table, count, &okp_kernel_symbol_ops,
					  &failure);
	if (!failed)
		return 0;
	if (failure.verdict == OKP_SYMBOL_NOT_FOUND)
		pr_err("cannot resolve kernel symbol %s: %s\n", failure.name,
		       okp_core_symbol_verdict_text(failure.verdict));
	else
		pr_err("cannot resolve kernel symbol %s: address 0x%lx is \"%s\": %s\n",
		       failure.name, failure.address, failure.description,
		       okp_core_symbol_verdict_text(failure.verdict));
	if (failed > 1)
		pr_err("%d more kernel symbols failed to resolve\n", failed - 1);
	return failure.verdict == OKP_SYMBOL_NOT_FOUND ? -ENOENT : -EINVAL;
}

unsigned long okp_ksyms_resolve_optional(const char *name)
{
	unsigned long address;
	struct okp_symbol_request request = { name, &address, 0 };
	struct okp_symbol_failure unused;

	okp_core_resolve_symbols(&request, 1, &okp_kernel_symbol_ops, &unused);
	return address;
}

/*
 * Points each function's static call at it; the first failure's errno, after
 * trying them all (each failure logs its line).
 */
static int okp_resolve_functions(void)
{
	int ret = 0;

#define OKP_RESOLVED_FUNCTION(name, function, required)		\
	do {								\
		unsigned long address = 0;				\
		struct okp_symbol_request request = {			\
			__stringify(function), &address, required	\
		};							\
		int failed = okp_resolve_table(&request, 1);		\
									\
		ret = ret ?: failed;					\
		static_call_update(okp_##name, (void *)address);	\
	} while (0)
#include "resolved_functions.h"
#undef OKP_RESOLVED_FUNCTION
	return ret;
}

/* Points every function's static call nowhere: okp_resolved() is false. */
static void okp_forget_functions(void)
{
#define OKP_RESOLVED_FUNCTION(name, function, required)		\
	static_call_update(okp_##name, NULL)
#include "resolved_functions.h"
#undef OKP_RESOLVED_FUNCTION
}

int okp_ksyms_resolve(unsigned long kallsyms_lookup_name_address,
		      const char *extra_required_symbol)
{
	int ret;

	ret = okp_resolve_kallsyms(kallsyms_lookup_name_address);
	if (ret)
		goto fail;
	ret = okp_resolve_functions();
	if (!ret)
		ret = okp_resolve_table(okp_data_table,
					ARRAY_SIZE(okp_data_table));
	if (ret)
		goto fail;
	if (extra_required_symbol && *extra_required_symbol) {
		unsigned long ignored;
		struct okp_symbol_request extra = {
			extra_required_symbol, &ignored, 1
		};

		ret = okp_resolve_table(&extra, 1);
		if (ret)
			goto fail;
	}
	return 0;
fail:
	memset(&okp_ksyms, 0, sizeof(okp_ksyms));
	okp_forget_functions();
	return ret;
}
