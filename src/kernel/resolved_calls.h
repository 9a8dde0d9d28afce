/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Calls into the unexported kernel functions ksyms.c resolves at load.
 *
 * Never through a function pointer. A kernel built with X86_KERNEL_IBT
 * (Debian 13 amd64) seals at boot the endbr64 of every function no indirect
 * call reaches into a 4-byte nop: kallsyms_lookup_name, set_memory_x,
 * text_poke_sync, rethook_hook and nearly every other function below are
 * sealed there, and an indirect call to one raises a control-protection
 * fault (#CP) on a CPU that enforces IBT. A static call is a direct call:
 * x86 patches its call sites, or its trampoline, with a rel32 to the
 * target, which needs no endbr64. On an arch without static calls (riscv,
 * which has no IBT either) it is a call through the key's pointer.
 *
 * Each static call has the type of the kernel's own declaration, so a
 * return type that changed between kernels (int or bool) stays right. The
 * functions are listed in resolved_functions.h.
 */
#ifndef OKPROBE_RESOLVED_CALLS_H
#define OKPROBE_RESOLVED_CALLS_H

#include <linux/extable.h>
#include <linux/ftrace.h>
#include <linux/jump_label.h>
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/rethook.h>
#include <linux/static_call.h>
#include <linux/tracefs.h>
#include <linux/uaccess.h>
#include <asm/set_memory.h>

#include "compat.h"

/*
 * Declared by the kernel only where its configuration has it; the static
 * call needs the type all the same (and stays unresolved).
 */
#ifndef CONFIG_DYNAMIC_FTRACE
unsigned long ftrace_location_range(unsigned long start, unsigned long end);
#endif
#ifndef CONFIG_KPROBES
void wait_for_kprobe_optimizer(void);
#endif
/* kernel/trace/trace.h's, which no module sees: error_log's writer. */
struct trace_array;
void tracing_log_err(struct trace_array *tr, const char *loc, const char *cmd,
		     const char **errs, u8 type, u16 pos);
void tracing_reset_all_online_cpus(void);

#define OKP_RESOLVED_FUNCTION(name, function, required)		\
	DECLARE_STATIC_CALL(okp_##name, function)
#include "resolved_functions.h"
#undef OKP_RESOLVED_FUNCTION

/* A call of a resolved function: okp_call(core_kernel_text)(address). */
#define okp_call(name) static_call(okp_##name)
/* Whether name resolved: only an optional one may not have. */
#define okp_resolved(name) (static_call_query(okp_##name) != NULL)

/* size bytes of executable memory within reach of kernel text, writable. */
static inline void *okp_exec_alloc(unsigned long size)
{
#ifdef OKP_HAVE_EXECMEM
	return okp_call(exec_alloc)(EXECMEM_MODULE_TEXT, size);
#else
	return okp_call(exec_alloc)(size);
#endif
}

#endif
