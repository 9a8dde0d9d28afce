// SPDX-License-Identifier: GPL-2.0
/*
 * What okprobe_events asks the running kernel before it takes a line: the
 * grammar its own kprobe_events speaks (the BTF grammar, the char type,
 * the symbol check of 6.8 and later), told once to the C++ core at load,
 * and what its symbols say of a line's place (an entry, inside a function,
 * unknown, a name several functions have), asked by the core's parser for
 * each line (okp_core_event_parse()'s place callback), and the BTF of
 * the module whose function a line names. Under okp_events_mutex, as
 * every line.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/kallsyms.h>
#include <linux/limits.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/string.h>

#include "glue.h"
#include "probe_events.h"
#include "resolved_calls.h"
#include "return_probes.h"

/* The running kernel's kprobe_events validates symbols first (6.8 on). */
static bool okp_validate_symbols;

/*
 * The running kernel's kprobe_events grammar, as it says itself: its
 * tracefs README (readme_msg, which kallsyms has) lists "<argname>" where
 * it reads BTF (CONFIG_PROBE_EVENTS_BTF_ARGS, 6.6 and later) and its
 * types ("char" from 6.5); without the README, btf_find_func_proto(),
 * built with the BTF grammar, says that. 7.3's README lists
 * "this_cpu_read(" (its parser of nested arguments: this_cpu_*(), at most
 * 8 nested levels, 255-character arguments, a new error text, which the
 * README does not name), "[(structname" (typecasts, with the BTF grammar)
 * and "$current" among the fetchargs. validate_probe_symbol() (6.8 and
 * later) checks a symbol before the rest of the place. The BTF read is
 * vmlinux's own, between __start_BTF and __stop_BTF (kallsyms always has
 * them).
 */
/*
 * Whether the running kernel's kprobe_events error texts (its
 * trace_probe_err_text[], which kallsyms has) include text: what a kernel
 * parses that its README does not say.
 */
static bool okp_kernel_error_text(const char *text)
{
	unsigned long table = okp_ksyms_lookup("trace_probe_err_text");
	const char *const *entries = (const char *const *)table;
	unsigned long size, offset, i;

	if (!table ||
	    !okp_call(kallsyms_lookup_size_offset)(table, &size, &offset) ||
	    offset)
		return false;
	for (i = 0; i < size / sizeof(*entries); i++)
		if (entries[i] && !strcmp(entries[i], text))
			return true;
	return false;
}

void okp_events_grammar(void)
{
	const char *readme = (const char *)okp_ksyms_lookup("readme_msg");
	unsigned long start = okp_ksyms_lookup("__start_BTF");
	unsigned long stop = okp_ksyms_lookup("__stop_BTF");
	struct okp_event_grammar grammar = {};
	int ret;

	grammar.validate_symbols = !!okp_ksyms_lookup("validate_probe_symbol");
	grammar.btf_arguments = readme ? !!strstr(readme, "<argname>") :
		!!okp_ksyms_lookup("btf_find_func_proto");
	grammar.char_type = readme && strstr(readme, " char, string");
	grammar.dentry_types = readme && strstr(readme, "%pd/%pD");
	grammar.return_arguments = readme &&
		strstr(readme, "return probes support: $retval, $arg<N>");
	grammar.nested_arguments = readme && strstr(readme, "this_cpu_read(");
	grammar.typecasts = grammar.nested_arguments &&
		strstr(readme, "[(structname");
	grammar.current_task = readme && strstr(readme, "$current");
	grammar.eprobe_typecasts = !grammar.typecasts &&
		okp_kernel_error_text("Typecasts are only for eprobe fields");
	okp_validate_symbols = grammar.validate_symbols;
	if ((grammar.btf_arguments || grammar.dentry_types) && start &&
	    stop > start) {
		grammar.btf = (const void *)start;
		grammar.btf_size = stop - start;
	}
	ret = okp_core_event_grammar(&grammar);
	if (grammar.btf_arguments && (!grammar.btf || ret))
		pr_warn("okprobe_events: no vmlinux BTF (%d): arguments by name find nothing\n",
			ret);
}

/*
 * The symbols named name, in vmlinux and in every module, as kprobe_events
 * counts them (number_of_same_symbols()).
 */
struct okp_symbol_count {
	unsigned int count;
	const char *name;
};

static int okp_count_symbol(void *data, unsigned long unused)
{
	((struct okp_symbol_count *)data)->count++;
	return 0;
}

#ifdef OKP_HAVE_MODULE_SYMBOLS_BY_NAME
static int okp_count_module_symbol(void *data, const char *name,
				   unsigned long unused)
#else
static int okp_count_module_symbol(void *data, const char *name,
				   struct module *module, unsigned long unused)
#endif
{
	struct okp_symbol_count *count = data;

	if (!strcmp(name, count->name))
		count->count++;
	return 0;
}

/* How many symbols are named name; -1 when this kernel cannot tell. */
static int okp_symbols_named(const char *name)
{
	struct okp_symbol_count count = { .name = name };

	if (!okp_resolved(kallsyms_on_each_match_symbol) ||
	    !okp_resolved(module_kallsyms_on_each_symbol))
		return -1;
	okp_call(kallsyms_on_each_match_symbol)(okp_count_symbol, name, &count);
#ifdef OKP_HAVE_MODULE_SYMBOLS_BY_NAME
	okp_call(module_kallsyms_on_each_symbol)(NULL, okp_count_module_symbol,
						 &count);
#else
	okp_call(module_kallsyms_on_each_symbol)(okp_count_module_symbol,
						 &count);
#endif
	return count.count;
}

enum okp_event_place okp_event_place(const struct okp_event_place_query *query)
{
	char name[KSYM_NAME_LEN];
	unsigned long address;

	if (query->symbol_length >= sizeof(name))
		return OKP_EVENT_UNKNOWN_SYMBOL;
	memcpy(name, query->symbol, query->symbol_length);
	name[query->symbol_length] = '\0';
	/*
	 * A module's symbol: its module may come later, and registration
	 * says; where the kernel validates symbols first, a loaded module
	 * that lacks it is an unknown symbol there and then.
	 */
	if (strchr(name, ':') && okp_validate_symbols &&
	    !okp_event_module_missing(name) && !okp_ksyms_lookup(name))
		return OKP_EVENT_UNKNOWN_SYMBOL;
	if (!strchr(name, ':')) {
		address = okp_ksyms_lookup(name);
		if (!address)
			return OKP_EVENT_UNKNOWN_SYMBOL;
		/* kprobe_events refuses a name that means several functions. */
		if (okp_symbols_named(name) > 1)
			return OKP_EVENT_NOT_UNIQUE;
		/*
		 * SYM+OFFS is an entry where it is one of the function that
		 * holds it (kprobe_on_func_entry()): the next function's first
		 * instruction, or past an IBT landing pad.
		 */
		if (query->offset && okp_return_at_entry(address + query->offset))
			return OKP_EVENT_FUNCTION_ENTRY;
	}
	return query->offset ? OKP_EVENT_INSIDE_FUNCTION :
			       OKP_EVENT_FUNCTION_ENTRY;
}

/*
 * The BTF of the module whose function name is, as the kernel's
 * bpf_find_btf_id() finds a name vmlinux's BTF lacks in a module's. The
 * module's .BTF section is freed after it loads; the kernel keeps a copy,
 * parsed, in a struct btf that nothing exported hands out, and shows its
 * bytes in /sys/kernel/btf/MODULE, which is read here (in the writer's
 * mount namespace, where sysfs is). Read as a file, not through
 * kernel_read_file(), whose LSM hook (IPE's) warns of a read it has no
 * rule for.
 */
void *okp_glue_module_btf(const char *name, unsigned long *size)
{
	char path[sizeof("/sys/kernel/btf/") + MODULE_NAME_LEN];
	unsigned long address = okp_ksyms_lookup(name);
	struct module *mod;
	struct file *file;
	loff_t length, pos = 0;
	char *raw = NULL;

	if (!address)
		return NULL;
	preempt_disable();
	mod = okp_call(__module_text_address)(address);
	if (mod)
		snprintf(path, sizeof(path), "/sys/kernel/btf/%s", mod->name);
	preempt_enable();
	if (!mod)
		return NULL;
	file = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(file))
		return NULL;
	length = i_size_read(file_inode(file));
	if (length > 0 && length <= INT_MAX)
		raw = kvmalloc(length, GFP_KERNEL);
	/* sysfs hands a binary file out a page per read. */
	while (raw && pos < length) {
		ssize_t n = kernel_read(file, raw + pos, length - pos, &pos);

		if (n <= 0) {
			kvfree(raw);
			raw = NULL;
		}
	}
	filp_close(file, NULL);
	if (raw)
		*size = length;
	return raw;
}

void okp_glue_module_btf_free(void *raw)
{
	kvfree(raw);
}
