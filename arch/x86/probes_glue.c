// SPDX-License-Identifier: GPL-2.0
/*
 * x86-64 breakpoint probes, the kernel side: the int3 die notifier, text
 * patching, executable slot pages and the x86 reserved-text checks. The
 * arch-neutral half (API, mutex, module notifier) is src/kernel/probes.c.
 *
 * text_mutex is taken after okp_probe_mutex, only around one text_poke()
 * and its sync, never across a grace period.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jump_label.h>
#include <linux/kdebug.h>
#include <linux/kprobes.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/notifier.h>
#include <linux/percpu.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/seq_file.h>
#include <linux/static_call.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include <okprobe.h>

#include "core/core_api.h"
#include "glue_services.h"
#include "kernel/glue.h"
#include "arch_glue.h"
#include "kernel/compat.h"
#include "kernel/resolved_calls.h"

/* The core works on pt_regs as okp::x86::Registers: same layout. */
static_assert(sizeof(struct pt_regs) == 21 * 8);
static_assert(offsetof(struct pt_regs, r15) == 0);
static_assert(offsetof(struct pt_regs, ax) == 10 * 8);
static_assert(offsetof(struct pt_regs, cx) == 11 * 8);
static_assert(offsetof(struct pt_regs, ip) == 16 * 8);
static_assert(offsetof(struct pt_regs, flags) == 18 * 8);
static_assert(offsetof(struct pt_regs, sp) == 19 * 8);

/*
 * arch_jump_entry_size() (not exported): a jump label is a 2-byte jmp or
 * nop, or a 5-byte one.
 */
unsigned long okp_arch_jump_label_size(unsigned long code)
{
	u8 bytes[2];

	if (copy_from_kernel_nofault(bytes, (void *)code, sizeof(bytes)))
		return OKP_MAX_JUMP_LABEL_SIZE;
	if (bytes[0] == 0xeb || (bytes[0] == 0x66 && bytes[1] == 0x90))
		return 2;
	return OKP_MAX_JUMP_LABEL_SIZE;
}

/* x86 refuses no range of its own beyond the kernel's sections. */
/*
 * The return thunks: under RETHUNK every return of the kernel, the int3
 * handler's included, may run one of them, whichever the CPU's mitigation
 * picked at boot. The trap-path walk cannot take SRSO's alias thunks
 * (kallsyms sizes them up to _etext), so they are refused here by name,
 * each with the bytes a thunk can span.
 */
static const char *const okp_return_thunks[] = {
	"__x86_return_thunk", "its_return_thunk", "call_depth_return_thunk",
	"retbleed_return_thunk", "retbleed_untrain_ret", "srso_return_thunk",
	"srso_safe_ret", "srso_untrain_ret", "srso_alias_return_thunk",
	"srso_alias_safe_ret", "srso_alias_untrain_ret", "entry_untrain_ret",
};
#define OKP_RETURN_THUNK_BYTES 64

/*
 * Code the kernel copies as a template: a breakpoint or jump of okprobe's
 * there would be copied with it, into memory where no probe of okprobe's
 * is (an int3 nobody takes, a jump relative to the wrong place). ftrace
 * copies ftrace_caller or ftrace_regs_caller into each dynamic trampoline
 * it creates (create_trampoline(), whenever an ftrace_ops is registered:
 * okprobe's own entry probes, a kprobe on ftrace, a BPF trampoline). A
 * register_many() of the bench's whole sample on Debian 13's 6.12 put an
 * int3 at ftrace_regs_caller+0x48 before its entry probes registered
 * okprobe's ftrace_ops: the new trampoline carried it, and the next
 * traced call died on it (issue 35). kprobes copies its optprobe template
 * (.rodata on newer kernels) for each optprobe.
 */
static const struct {
	const char *start, *end, *why;
} okp_copied_templates[] = {
	{ "ftrace_caller", "ftrace_caller_end",
	  "ftrace's trampoline template (copied into each trampoline)" },
	{ "ftrace_regs_caller", "ftrace_regs_caller_end",
	  "ftrace's trampoline template (copied into each trampoline)" },
	{ "optprobe_template_entry", "optprobe_template_end",
	  "kprobes' optprobe template (copied for each optprobe)" },
};

int okp_arch_blacklist(void)
{
	unsigned long address, start, end;
	int i;

	for (i = 0; i < ARRAY_SIZE(okp_return_thunks); i++) {
		address = okp_ksyms_resolve_optional(okp_return_thunks[i]);
		if (address &&
		    okp_core_blacklist_add(address,
					   address + OKP_RETURN_THUNK_BYTES,
					   "a return thunk"))
			return -ENOMEM;
	}
	for (i = 0; i < ARRAY_SIZE(okp_copied_templates); i++) {
		start = okp_ksyms_resolve_optional(okp_copied_templates[i].start);
		end = okp_ksyms_resolve_optional(okp_copied_templates[i].end);
		if (start && end > start &&
		    okp_core_blacklist_add(start, end,
					   okp_copied_templates[i].why))
			return -ENOMEM;
	}
	return 0;
}

const char *okp_glue_reserved(unsigned long address, unsigned long length)
{
	const char *why = okp_text_sites_reserved(address, length,
						  okp_static_call_reserved);
#ifdef OKP_HAVE_ALTERNATIVES_TEXT_RESERVED
	int reserved;

	if (why)
		return why;
	/* alternatives_text_reserved() asserts text_mutex is held. */
	mutex_lock((struct mutex *)okp_ksyms.text_mutex);
	reserved = okp_call(alternatives_text_reserved)((void *)address,
			(void *)(address + length - 1));
	mutex_unlock((struct mutex *)okp_ksyms.text_mutex);
	return reserved ? "the address is patched by alternatives" : NULL;
#else
	return why;
#endif
}

void okp_glue_text_write(unsigned long address, const void *bytes,
			 unsigned long length)
{
	struct mutex *text_mutex = (void *)okp_ksyms.text_mutex;

	mutex_lock(text_mutex);
	okp_call(text_poke)((void *)address, bytes, length);
	okp_call(text_poke_sync)();
	mutex_unlock(text_mutex);
}

void okp_glue_code_write_batch(const struct okp_text_patch *patches,
			       unsigned long count)
{
	struct mutex *text_mutex = (void *)okp_ksyms.text_mutex;
	unsigned long i;

	/* No CPU runs these bytes: no sync (see core_api.h). */
	mutex_lock(text_mutex);
	for (i = 0; i < count; i++)
		if (patches[i].length)
			okp_call(text_poke)((void *)patches[i].address,
					    patches[i].bytes,
					    patches[i].length);
	mutex_unlock(text_mutex);
}

void okp_glue_text_write_batch(const struct okp_text_patch *patches,
			       unsigned long count)
{
	struct mutex *text_mutex = (void *)okp_ksyms.text_mutex;
	unsigned long i;

	if (!count)
		return;
	mutex_lock(text_mutex);
	for (i = 0; i < count; i++)
		okp_call(text_poke)((void *)patches[i].address,
				    patches[i].bytes, patches[i].length);
	okp_call(text_poke_sync)();
	mutex_unlock(text_mutex);
}

struct okp_arch_symbols okp_arch_ksyms;

static int notrace okp_die_notify(struct notifier_block *block,
				  unsigned long event, void *data)
{
	struct die_args *args = data;

	if (event != DIE_INT3 || user_mode(args->regs))
		return NOTIFY_DONE;
	return okp_core_breakpoint(args->regs) ? NOTIFY_STOP : NOTIFY_DONE;
}
NOKPROBE_SYMBOL(okp_die_notify);

/* First in the die chain: every okprobe hit passes through it. */
static struct notifier_block okp_die_block = {
	.notifier_call = okp_die_notify,
	.priority = INT_MAX,
};

/*
 * Whether block is on the die chain now.
 */
static bool okp_on_die_chain(struct notifier_block *block)
{
	struct atomic_notifier_head *chain = (void *)okp_arch_ksyms.die_chain;
	struct notifier_block *at;
	bool found = false;

	rcu_read_lock();
	for (at = rcu_dereference(chain->head); at && !found;
	     at = rcu_dereference(at->next))
		found = at == block;
	rcu_read_unlock();
	return found;
}

/*
 * okprobe's notifier goes first on the die chain, ahead of the others of
 * its priority. Every int3 that reaches the chain runs the notifiers
 * before okprobe's, so a breakpoint in one of them re-enters exc_int3
 * before okprobe's handler can tell it is nested, again and again:
 * notifier_chain_register() puts a block after those of its own priority,
 * and hw_breakpoint_exceptions_notify (INT_MAX, registered at boot) was
 * ahead of okprobe's. A probe there nested every int3 until
 * __nmi_enter()'s BUG_ON, whose report trapped on it again, until the
 * stack overflowed into a silent double-fault loop (issue 35). The
 * function pointers of those notifiers are data, which the trap-path walk
 * cannot follow; first in the chain, okprobe's handler runs before any
 * code that is not exc_int3's own, which the walk does follow.
 *
 * The API has no "first": register_die_notifier() proves that die_chain
 * (resolved, not exported) is the chain it registers on, the block comes
 * off again (unregister_die_notifier() waits for the readers), and goes
 * back at the head under the chain's lock, as
 * atomic_notifier_chain_register() links it. Its removal is the API's.
 */
static int okp_die_notifier_register_first(void)
{
	struct atomic_notifier_head *chain = (void *)okp_arch_ksyms.die_chain;
	unsigned long flags;
	int ret;

	ret = register_die_notifier(&okp_die_block);
	if (ret)
		return ret;
	if (!okp_on_die_chain(&okp_die_block)) {
		unregister_die_notifier(&okp_die_block);
		pr_err("%pS is not the chain register_die_notifier() uses\n",
		       chain);
		return -EINVAL;
	}
	unregister_die_notifier(&okp_die_block);
	spin_lock_irqsave(&chain->lock, flags);
	RCU_INIT_POINTER(okp_die_block.next,
			 rcu_dereference_protected(chain->head,
						   lockdep_is_held(&chain->lock)));
	rcu_assign_pointer(chain->head, &okp_die_block);
	spin_unlock_irqrestore(&chain->lock, flags);
	return 0;
}

int okp_arch_probes_init(void)
{
	int ret;

	okp_static_call_sites_init();
	ret = okp_die_notifier_register_first();
	if (ret)
		okp_static_call_sites_exit();
	return ret;
}

void okp_arch_probes_exit(void)
{
	unregister_die_notifier(&okp_die_block);
	okp_static_call_sites_exit();
}

/*
 * An optimized hit's detour calls okp_core_optimized_hit() directly and
 * does itself what okp_optimized_hit would do around it in C, as the
 * kernel's optimized_callback() does: preemption off while the handlers
 * run (preempt_disable_notrace(), this_cpu_ptr()), and the preemption point
 * of preempt_enable_notrace() after. x86-64 per-CPU variables are
 * %gs-relative and zero-based: their addresses are the offsets.
 */
void okp_glue_detour_percpu(struct okp_detour_percpu *percpu)
{
	percpu->cpu_states = (unsigned long)&okp_cpu_states;
	percpu->this_cpu_off = (long)&this_cpu_off;
	percpu->preempt_count = (long)&OKP_PREEMPT_COUNT;
#if defined(CONFIG_PREEMPT_DYNAMIC) && defined(CONFIG_HAVE_PREEMPT_DYNAMIC_CALL)
	percpu->preempt_schedule =
		(unsigned long)STATIC_CALL_TRAMP_ADDR(preempt_schedule_notrace);
#elif defined(CONFIG_PREEMPTION)
	percpu->preempt_schedule = (unsigned long)preempt_schedule_notrace_thunk;
#else
	percpu->preempt_schedule = 0;
#endif
}

/*
 * A counting site's cells: one u64 per CPU (alloc_percpu), which x86's
 * counting detour increments with one %gs-relative incq.
 */
unsigned long okp_glue_counter_cells_alloc(void)
{
	return (unsigned long)alloc_percpu(u64);
}

void okp_glue_counter_cells_free(unsigned long cells)
{
	free_percpu((u64 __percpu *)cells);
}

unsigned long long okp_glue_counter_cells_sum(unsigned long cells)
{
	unsigned long long sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(*per_cpu_ptr((u64 __percpu *)cells, cpu));
	return sum;
}
