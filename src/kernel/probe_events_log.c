// SPDX-License-Identifier: GPL-2.0
/*
 * okprobe_events' refusals in the kernel's own error_log
 * (/sys/kernel/tracing/error_log): a refused line, the error's text and a
 * caret under the column at fault, as kprobe_events' refusals are logged
 * (tracing_log_err), or a ratelimited kernel log line where this kernel
 * has no tracing_log_err. The texts are the C++ core's
 * (okp_core_event_error_texts), copied once into memory that outlives
 * okprobe.ko, because error_log reads them whenever it is read. Called by
 * probe_events.c and probe_events_call.c under okp_events_mutex.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kmemleak.h>
#include <linux/printk.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "probe_events.h"
#include "resolved_calls.h"

/*
 * error_log's entries keep the text table they were given and read it
 * whenever error_log is read, also after okprobe.ko is gone; the kernel
 * has no way to take an entry back. The table and its texts are copied
 * once per load, at the first error, into memory never freed (about
 * 3 KB), and told to kmemleak: once error_log has let go of the entries
 * and okprobe.ko its pointer, nothing refers to them, by design.
 */
static const char **okp_lasting_error_texts(void)
{
	static const char **texts;
	const char **ours = okp_core_event_error_texts();
	unsigned long count = 0, i;

	if (texts)
		return texts;
	while (ours[count])
		count++;
	texts = kcalloc(count + 1, sizeof(*texts), GFP_KERNEL);
	for (i = 0; texts && i < count; i++) {
		texts[i] = kstrdup(ours[i], GFP_KERNEL);
		if (texts[i])
			continue;
		/* Nothing of okprobe.ko's own may outlive it: no table. */
		while (i--)
			kfree(texts[i]);
		kfree(texts);
		texts = NULL;
	}
	if (!texts)
		return NULL;
	kmemleak_not_leak(texts);
	for (i = 0; i < count; i++)
		kmemleak_not_leak(texts[i]);
	return texts;
}

void okp_event_log(const char *line, unsigned int index, unsigned int column)
{
	const char **texts = okp_lasting_error_texts();

	if (okp_resolved(tracing_log_err) && texts)
		okp_call(tracing_log_err)(NULL, "okprobe_events", line, texts,
					  index, column);
	else
		pr_info_ratelimited("okprobe_events: %s: %s\n", line,
				    okp_core_event_error_texts()[index]);
}
