/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unexported kernel functions okprobe calls, one
 * OKP_RESOLVED_FUNCTION(name, function, required) each: okp_call(name)
 * calls function, resolved by its own name at load; required says whether a
 * kernel without it fails the load. No include guard: resolved_calls.h and
 * ksyms.c include it with OKP_RESOLVED_FUNCTION defined as they need, as
 * the kernel's kvm-x86-ops.h is. kallsyms_lookup_name comes first: it
 * resolves the others.
 */
OKP_RESOLVED_FUNCTION(kallsyms_lookup_name, kallsyms_lookup_name, 1);
OKP_RESOLVED_FUNCTION(kallsyms_lookup_size_offset, kallsyms_lookup_size_offset,
		      1);
/* module_alloc and vfree until 6.10's execmem_alloc and execmem_free. */
OKP_RESOLVED_FUNCTION(exec_alloc, OKP_EXEC_ALLOC_FUNCTION, 1);
OKP_RESOLVED_FUNCTION(exec_free, OKP_EXEC_FREE_FUNCTION, 1);
OKP_RESOLVED_FUNCTION(set_memory_x, set_memory_x, 1);
OKP_RESOLVED_FUNCTION(set_memory_ro, set_memory_ro, 1);
OKP_RESOLVED_FUNCTION(search_exception_tables, search_exception_tables, 1);
OKP_RESOLVED_FUNCTION(core_kernel_text, core_kernel_text, 1);
OKP_RESOLVED_FUNCTION(__module_text_address, __module_text_address, 1);
OKP_RESOLVED_FUNCTION(jump_label_text_reserved, jump_label_text_reserved,
		      IS_ENABLED(CONFIG_JUMP_LABEL));
OKP_RESOLVED_FUNCTION(jump_label_lock, jump_label_lock,
		      IS_ENABLED(CONFIG_JUMP_LABEL));
OKP_RESOLVED_FUNCTION(jump_label_unlock, jump_label_unlock,
		      IS_ENABLED(CONFIG_JUMP_LABEL));
OKP_RESOLVED_FUNCTION(ftrace_location, ftrace_location,
		      IS_ENABLED(CONFIG_DYNAMIC_FTRACE));
OKP_RESOLVED_FUNCTION(ftrace_location_range, ftrace_location_range,
		      IS_ENABLED(CONFIG_DYNAMIC_FTRACE));
OKP_RESOLVED_FUNCTION(rethook_alloc, rethook_alloc, IS_ENABLED(CONFIG_RETHOOK));
OKP_RESOLVED_FUNCTION(rethook_free, rethook_free, IS_ENABLED(CONFIG_RETHOOK));
OKP_RESOLVED_FUNCTION(rethook_hook, rethook_hook, IS_ENABLED(CONFIG_RETHOOK));
/*
 * An exit of a return probe finds the trampoline where another return
 * probe (or the kernel's kretprobe) hooked a tail call's return: the real
 * return address is on rethook's list.
 */
OKP_RESOLVED_FUNCTION(rethook_find_ret_addr, rethook_find_ret_addr,
		      IS_ENABLED(CONFIG_RETHOOK));
OKP_RESOLVED_FUNCTION(arch_rethook_trampoline, arch_rethook_trampoline,
		      IS_ENABLED(CONFIG_RETHOOK));
#ifndef OKP_HAVE_RETHOOK_OBJPOOL
/* 6.1's rethook pool grows by nodes; 6.12's is an objpool, sized once. */
OKP_RESOLVED_FUNCTION(rethook_add_node, rethook_add_node,
		      IS_ENABLED(CONFIG_RETHOOK));
#endif
/* Absent without CONFIG_OPTPROBES. */
OKP_RESOLVED_FUNCTION(wait_for_kprobe_optimizer, wait_for_kprobe_optimizer, 0);
/* okprobe_events: its files in tracefs, its entries in error_log. */
OKP_RESOLVED_FUNCTION(tracefs_create_file, tracefs_create_file, 0);
OKP_RESOLVED_FUNCTION(tracefs_remove, tracefs_remove, 0);
OKP_RESOLVED_FUNCTION(tracing_log_err, tracing_log_err, 0);
OKP_RESOLVED_FUNCTION(tracing_reset_all_online_cpus,
		      tracing_reset_all_online_cpus, 0);
/* Its symbols counted as kprobe_events counts them (not unique: refused). */
OKP_RESOLVED_FUNCTION(kallsyms_on_each_match_symbol,
		      kallsyms_on_each_match_symbol, 0);
OKP_RESOLVED_FUNCTION(module_kallsyms_on_each_symbol,
		      module_kallsyms_on_each_symbol, 0);
/* Its string fetches, as the kernel's kprobe events copy them. */
OKP_RESOLVED_FUNCTION(strncpy_from_kernel_nofault, strncpy_from_kernel_nofault,
		      0);
OKP_RESOLVED_FUNCTION(strncpy_from_user_nofault, strncpy_from_user_nofault, 0);

/* The arch's own (arch/<arch>/arch_resolved_functions.h). */
#include "arch_resolved_functions.h"
