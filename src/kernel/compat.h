/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What differs between the kernels okprobe builds for (Debian 12's 6.1,
 * Debian 13's 6.12), decided at build time from the kernel's own headers:
 * Kbuild greps them and defines OKP_HAVE_* (no version numbers, which
 * distribution kernels backport across). Only the glue includes this; the
 * core never sees a kernel difference.
 */
#ifndef OKPROBE_COMPAT_H
#define OKPROBE_COMPAT_H

#include <linux/module.h>

/* [start, end) of kernel memory. */
struct okp_range {
	unsigned long start, end;
};

/* The most ranges okp_module_core() gives. */
#define OKP_MODULE_CORE_RANGES 4

#ifdef OKP_HAVE_MODULE_MEMORY
/* 6.4 split a module's memory into mem[], one allocation per kind. */
static inline struct okp_range okp_module_memory(const struct module *mod,
						 enum mod_mem_type type)
{
	unsigned long base = (unsigned long)mod->mem[type].base;

	return (struct okp_range){ base, base + mod->mem[type].size };
}

static inline struct okp_range okp_module_text(const struct module *mod)
{
	return okp_module_memory(mod, MOD_TEXT);
}

static inline struct okp_range okp_module_init_text(const struct module *mod)
{
	return okp_module_memory(mod, MOD_INIT_TEXT);
}

static inline int okp_module_core(const struct module *mod,
				  struct okp_range *ranges)
{
	ranges[0] = okp_module_memory(mod, MOD_TEXT);
	ranges[1] = okp_module_memory(mod, MOD_DATA);
	ranges[2] = okp_module_memory(mod, MOD_RODATA);
	ranges[3] = okp_module_memory(mod, MOD_RO_AFTER_INIT);
	return 4;
}

static inline int okp_module_rodata_ranges(const struct module *mod,
					   struct okp_range *ranges)
{
	ranges[0] = okp_module_memory(mod, MOD_RODATA);
	ranges[1] = okp_module_memory(mod, MOD_INIT_RODATA);
	return 2;
}
#else
/* 6.1: core and init layouts, each text, then read-only data, then data. */
static inline struct okp_range okp_layout_part(const struct module_layout *l,
					       unsigned int from,
					       unsigned int to)
{
	unsigned long base = (unsigned long)l->base;

	return (struct okp_range){ base + from, base + to };
}

static inline struct okp_range okp_module_text(const struct module *mod)
{
	return okp_layout_part(&mod->core_layout, 0, mod->core_layout.text_size);
}

static inline struct okp_range okp_module_init_text(const struct module *mod)
{
	return okp_layout_part(&mod->init_layout, 0, mod->init_layout.text_size);
}

static inline int okp_module_core(const struct module *mod,
				  struct okp_range *ranges)
{
	ranges[0] = okp_layout_part(&mod->core_layout, 0, mod->core_layout.size);
	return 1;
}

static inline int okp_module_rodata_ranges(const struct module *mod,
					   struct okp_range *ranges)
{
	ranges[0] = okp_layout_part(&mod->core_layout,
				    mod->core_layout.text_size,
				    mod->core_layout.ro_size);
	ranges[1] = okp_layout_part(&mod->init_layout,
				    mod->init_layout.text_size,
				    mod->init_layout.ro_size);
	return 2;
}
#endif

/*
 * Executable memory within reach of kernel text: module_alloc() until
 * 6.10's execmem_alloc(). Both are resolved at load (ksyms.c);
 * okp_exec_alloc() (resolved_calls.h) calls the one resolved.
 * EXECMEM_MODULE_TEXT, not the kprobes' EXECMEM_KPROBES: on riscv that one
 * comes read-only and executable already, and okprobe fills its pages
 * before it seals them (writing one oopsed on Debian 13's riscv64 kernel).
 * Where execmem_alloc_rw() exists (6.17 on) it is the one: on a kernel
 * with ARCH_HAS_EXECMEM_ROX (7.x amd64) module text itself comes
 * read-only from a cache of huge pages, and execmem_alloc_rw() hands it
 * over writable and not executable, as every kernel before gave it.
 */
#ifdef OKP_HAVE_EXECMEM
#include <linux/execmem.h>
#ifdef OKP_HAVE_EXECMEM_ALLOC_RW
#define OKP_EXEC_ALLOC_FUNCTION execmem_alloc_rw
#else
#define OKP_EXEC_ALLOC_FUNCTION execmem_alloc
#endif
#define OKP_EXEC_FREE_FUNCTION execmem_free
#else
#include <linux/moduleloader.h>
#include <linux/vmalloc.h>
#define OKP_EXEC_ALLOC_FUNCTION module_alloc
#define OKP_EXEC_FREE_FUNCTION vfree
#endif

/* 6.11 made a sysctl's table const for its handler. */
#ifdef OKP_HAVE_CONST_CTL_TABLE
#define OKP_CTL_TABLE const struct ctl_table
#else
#define OKP_CTL_TABLE struct ctl_table
#endif

/* 6.6's register_sysctl() counts entries; 6.1's needs an empty last one. */
#ifdef OKP_HAVE_REGISTER_SYSCTL_SZ
#define OKP_CTL_TABLE_END
#else
#define OKP_CTL_TABLE_END {}
#endif

/* What one arch's kernels differ in (arch/<arch>/arch_compat.h). */
#include "arch_compat.h"

#endif /* OKPROBE_COMPAT_H */
