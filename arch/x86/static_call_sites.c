// SPDX-License-Identifier: GPL-2.0
/*
 * The core kernel's inline static call sites, sorted by address once at
 * load, so "is a static call site in these bytes?" is a binary search.
 *
 * static_call_text_reserved() scans every core site for each question
 * (the table is sorted by key, not by address): 45 us a question under
 * QEMU, three questions a registration. Core sites do not change after
 * boot (those in init text are marked init and ignored, as the kernel's
 * own check ignores them once the system runs); a module's sites are
 * still asked of the kernel, whose check covers them under
 * jump_label_lock.
 *
 * The table's bounds are linker symbols resolved by name; the index is
 * used only when the kernel's own check agrees on a sample of its entries.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/static_call.h>
#include <asm/text-patching.h>

#include "kernel/glue.h"
#include "arch_glue.h"
#include "kernel/resolved_calls.h"

#ifdef CONFIG_HAVE_STATIC_CALL_INLINE

/* Sorted addresses of the core kernel's live static call sites. */
static unsigned long *okp_core_static_calls;
static unsigned long okp_core_static_call_count;

static unsigned long okp_site_address(const struct static_call_site *site)
{
	return (long)site->addr + (long)&site->addr;
}

static bool okp_site_is_init(const struct static_call_site *site)
{
	return ((long)site->key + (long)&site->key) & STATIC_CALL_SITE_INIT;
}

static int okp_compare_addresses(const void *a, const void *b)
{
	unsigned long left = *(const unsigned long *)a;
	unsigned long right = *(const unsigned long *)b;

	return left < right ? -1 : left > right;
}

/* Whether the kernel's own check finds a site at address. */
static bool okp_kernel_finds(unsigned long address)
{
	bool found;

	okp_call(jump_label_lock)();
	found = okp_call(static_call_text_reserved)((void *)address,
						    (void *)address);
	okp_call(jump_label_unlock)();
	return found;
}

void okp_static_call_sites_init(void)
{
	unsigned long start = okp_ksyms_lookup("__start_static_call_sites");
	unsigned long stop = okp_ksyms_lookup("__stop_static_call_sites");
	const struct static_call_site *sites = (void *)start;
	unsigned long count, live = 0, i;
	unsigned long *addresses;

	if (!start || stop < start ||
	    (stop - start) % sizeof(struct static_call_site)) {
		pr_info("no core static call table found: the kernel is asked for every static call check\n");
		return;
	}
	count = (stop - start) / sizeof(struct static_call_site);
	addresses = kvmalloc_array(count ? count : 1, sizeof(*addresses),
				   GFP_KERNEL);
	if (!addresses)
		return;
	for (i = 0; i < count; i++)
		if (!okp_site_is_init(&sites[i]))
			addresses[live++] = okp_site_address(&sites[i]);
	sort(addresses, live, sizeof(*addresses), okp_compare_addresses, NULL);
	/* Asking for all would scan the table once per entry. */
	for (i = 0; i < live; i += live / 16 + 1) {
		if (!okp_kernel_finds(addresses[i]) ||
		    !okp_kernel_finds(addresses[live - 1 - i])) {
			pr_warn("the table at __start_static_call_sites is not the kernel's (entry %lu): the kernel is asked for every static call check\n",
				i);
			kvfree(addresses);
			return;
		}
	}
	okp_core_static_calls = addresses;
	okp_core_static_call_count = live;
}

void okp_static_call_sites_exit(void)
{
	kvfree(okp_core_static_calls);
	okp_core_static_calls = NULL;
	okp_core_static_call_count = 0;
}

/* Called under jump_label_lock, as static_call_text_reserved() wants. */
const char *okp_static_call_reserved(void *start, void *end)
{
	unsigned long first = (unsigned long)start, last = (unsigned long)end;
	unsigned long low = 0, high = okp_core_static_call_count;

	if (!okp_resolved(static_call_text_reserved))
		return NULL;
	if (!okp_core_static_calls || !okp_call(core_kernel_text)(first))
		return okp_call(static_call_text_reserved)(start, end) ?
			"the address is a static call site" : NULL;
	/* The first site that ends after first: a site is a 5-byte call. */
	while (low < high) {
		unsigned long middle = low + (high - low) / 2;

		if (okp_core_static_calls[middle] + CALL_INSN_SIZE <= first)
			low = middle + 1;
		else
			high = middle;
	}
	return low < okp_core_static_call_count &&
	       okp_core_static_calls[low] <= last ?
		"the address is a static call site" : NULL;
}

#else

void okp_static_call_sites_init(void)
{
}

void okp_static_call_sites_exit(void)
{
}

const char *okp_static_call_reserved(void *start, void *end)
{
	return NULL;
}

#endif
