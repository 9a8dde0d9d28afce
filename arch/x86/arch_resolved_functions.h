/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unexported kernel functions x86's glue calls: the rest of
 * src/kernel/resolved_functions.h, which includes it (no include guard).
 */
#include <linux/static_call.h>
#include <asm/alternative.h>
#include <asm/text-patching.h>

OKP_RESOLVED_FUNCTION(text_poke, text_poke, 1);
OKP_RESOLVED_FUNCTION(text_poke_sync, OKP_TEXT_POKE_SYNC_FUNCTION, 1);
OKP_RESOLVED_FUNCTION(static_call_text_reserved, static_call_text_reserved,
		      IS_ENABLED(CONFIG_HAVE_STATIC_CALL_INLINE));
/*
 * Lock prefixes patched when CPUs come and go (SMP alternatives): gone
 * from kernels that no longer patch them after boot (7.x), where nothing
 * of alternatives' is rewritten at run time.
 */
#ifdef OKP_HAVE_ALTERNATIVES_TEXT_RESERVED
OKP_RESOLVED_FUNCTION(alternatives_text_reserved, alternatives_text_reserved,
		      1);
#endif
