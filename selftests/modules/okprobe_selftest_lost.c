// SPDX-License-Identifier: GPL-2.0
/*
 * Text okprobe wrote, changed by someone else: okprobe must find it before
 * its next write, leave it alone, say so ([LOST], OKPROBE_FLAG_LOST, one
 * log line), never show it optimized, and let it go once the text is the
 * original again. The "someone else" writes this module's own text through
 * a vmap() alias of its page, as a careless patching tool would.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <asm/cacheflush.h>
#ifdef CONFIG_X86
#include <asm/sync_core.h>
#endif

#include <okprobe.h>

#include "okprobe_selftest_common.h"

#define OKP_LOST_BYTES 16

#ifdef CONFIG_X86
static void okp_serialize(void *unused)
{
	sync_core();
}
#endif

/* Writes length bytes of this module's text at address, behind okprobe. */
static int okp_foreign_write(void *address, const void *bytes, size_t length)
{
	size_t done, chunk;

	/* Page by page: the bytes may straddle two pages of text. */
	for (done = 0; done < length; done += chunk) {
		void *at = address + done;
		struct page *page = vmalloc_to_page(at);
		void *alias;

		chunk = min_t(size_t, length - done,
			      PAGE_SIZE - offset_in_page(at));
		if (!page)
			return -EFAULT;
		alias = vmap(&page, 1, VM_MAP, PAGE_KERNEL);
		if (!alias)
			return -ENOMEM;
		memcpy(alias + offset_in_page(at), bytes + done, chunk);
		vunmap(alias);
	}
#ifdef CONFIG_X86
	on_each_cpu(okp_serialize, NULL, 1);
#else
	flush_icache_all();
#endif
	return 0;
}

static atomic_t okp_lost_hits;

static int okp_lost_pre(struct okprobe *probe, struct pt_regs *regs)
{
	atomic_inc(&okp_lost_hits);
	return 0;
}

static bool okp_text_is(void *address, const u8 *bytes)
{
	u8 now[OKP_LOST_BYTES];

	return !copy_from_kernel_nofault(now, address, sizeof(now)) &&
	       !memcmp(now, bytes, sizeof(now));
}

/*
 * One case: register (optimized or not), let someone else write foreign[]
 * (or the original when foreign is NULL), make okprobe want to write
 * (disable, or the sysctl for a jump), then check it did not.
 */
static bool okp_lost_case(const struct okp_cycle_target *t, bool optimized,
			  const u8 *original, const u8 *foreign,
			  char *why, size_t size)
{
	void *at = okp_at(t->target, t->offset);
	struct okprobe probe = { .addr = at, .pre_handler = okp_lost_pre };
	const u8 *written = foreign ? foreign : original;
	bool ok = false;
	int ret;

	okp_write_sysctl(optimized ? "1" : "0");
	atomic_set(&okp_lost_hits, 0);
	ret = okprobe_register(&probe);
	if (ret) {
		snprintf(why, size, "register: %d", ret);
		goto sysctl;
	}
	if (optimized && !okp_wait_optimized(&probe, true)) {
		snprintf(why, size, "never optimized");
		goto unregister;
	}
	if (t->target(5, 6) != t->expect(5, 6) ||
	    atomic_read(&okp_lost_hits) != 1) {
		snprintf(why, size, "before: a wrong result or %d hits",
			 atomic_read(&okp_lost_hits));
		goto unregister;
	}
	ret = okp_foreign_write(at, written, OKP_LOST_BYTES);
	if (ret) {
		snprintf(why, size, "the foreign write: %d", ret);
		goto unregister;
	}
	/* okprobe wants to write: the jump or the breakpoint comes out. */
	if (optimized)
		okp_write_sysctl("0");
	else
		okprobe_disable(&probe);
	if (!(READ_ONCE(probe.flags) & OKPROBE_FLAG_LOST) ||
	    (READ_ONCE(probe.flags) & OKPROBE_FLAG_OPTIMIZED)) {
		snprintf(why, size, "flags 0x%x: not LOST, or still OPTIMIZED",
			 READ_ONCE(probe.flags));
		goto restore;
	}
	if (!okp_text_is(at, written)) {
		snprintf(why, size, "okprobe wrote over someone else's text");
		goto restore;
	}
	/* And wants to write again: enable, optimization back on. */
	okprobe_enable(&probe);
	okp_write_sysctl("1");
	msleep(300);
	if (!okp_text_is(at, written) || okp_optimized(&probe)) {
		snprintf(why, size, "okprobe wrote again once the text was lost");
		goto restore;
	}
	if (!foreign && (t->target(5, 6) != t->expect(5, 6) ||
			 atomic_read(&okp_lost_hits) != 1)) {
		snprintf(why, size, "a lost probe: a wrong result or %d hits",
			 atomic_read(&okp_lost_hits));
		goto restore;
	}
	ok = true;
restore:
	if (foreign)
		okp_foreign_write(at, original, OKP_LOST_BYTES);
unregister:
	okprobe_unregister(&probe);
	if (ok && !okp_text_is(at, original)) {
		snprintf(why, size, "the text is not the original at the end");
		ok = false;
	}
sysctl:
	okp_write_sysctl("1");
	return ok;
}

void okp_test_lost_text(const struct okp_cycle_target *t)
{
	void *at = okp_at(t->target, t->offset);
	u8 original[OKP_LOST_BYTES], foreign[OKP_LOST_BYTES];
	struct okprobe again = { .addr = at, .pre_handler = okp_lost_pre };
	char why[200] = "", detail[160] = "";
	bool ok = false;
	int ret;

	EXPECT(!copy_from_kernel_nofault(original, at, sizeof(original)),
	       "the target is unreadable");
	/* Neither okprobe's bytes nor the original: one bit of the first. */
	memcpy(foreign, original, sizeof(foreign));
	foreign[0] ^= 0x01;
	EXPECT(okp_lost_case(t, false, original, NULL, detail, sizeof(detail)),
	       "breakpoint, the original put back over it: %s", detail);
	EXPECT(okp_lost_case(t, false, original, foreign, detail, sizeof(detail)),
	       "breakpoint, other bytes over it: %s", detail);
	EXPECT(okp_lost_case(t, true, original, NULL, detail, sizeof(detail)),
	       "jump, the original put back over it: %s", detail);
	EXPECT(okp_lost_case(t, true, original, foreign, detail, sizeof(detail)),
	       "jump, other bytes over it: %s", detail);
	/* Released: the address is okprobe's to prove and probe again. */
	atomic_set(&okp_lost_hits, 0);
	ret = okprobe_register(&again);
	EXPECT(!ret, "registering again afterwards: %d", ret);
	t->target(1, 2);
	okprobe_unregister(&again);
	EXPECT(atomic_read(&okp_lost_hits) == 1,
	       "registered again: %d hits of 1", atomic_read(&okp_lost_hits));
	ok = true;
out:
	okp_report(ok, "text changed behind okprobe: left alone, [LOST], never optimized, released once original",
		   why);
}
