// SPDX-License-Identifier: GPL-2.0
// Sites ftrace enters (a function's entry through okprobe's ftrace_ops):
// okprobe writes no byte there. They are armed by entering the ops'
// filter, a batch in one pass of ftrace per ops, halved where ftrace
// refuses one entry to find which; the ops that may change the ip when a
// probe has a post_handler, as the kernel's kprobes on ftrace.
#include "core/probe_table_parts.hpp"

namespace okp {

const char *ftrace_refusal(int error)
{
	switch (error) {
	case error::ebusy:
		return "ftrace refused the function's entry: another ftrace user that changes the ip (livepatch, a BPF "
		       "trampoline) owns it";
	case error::enomem:
		return "out of memory (ftrace)";
	default:
		return "ftrace refused the function's entry";
	}
}

bool ProbeTable::wants_ipmodify(const Site &site)
{
	for (const okprobe *probe : site.attached_probes())
		if (probe && probe->post_handler && !(probe->flags & OKPROBE_FLAG_DISABLED))
			return true;
	return false;
}

void ProbeTable::refuse_ftrace_arm(Site &site, int error)
{
	site.armed = false;
	site.ftrace.error = error;
	site.unoptimized_why = ftrace_refusal(error);
	if (!batch_refusal_) {
		batch_refusal_ = error;
		batch_refused_where_ = site.description;
		batch_refused_why_ = site.unoptimized_why;
	}
}

void ProbeTable::arm_ftrace_halves(Site *const *sites, uint64_t *addresses, size_t count, int ipmodify)
{
	static_assert(sizeof(uint64_t) == sizeof(unsigned long), "ftrace's addresses");
	if (!count)
		return;
	const int result =
		okp_glue_ftrace_arm_many(reinterpret_cast<const unsigned long *>(addresses), unsigned(count), ipmodify);
	if (!result)
		return;
	if (count == 1) {
		refuse_ftrace_arm(*sites[0], -result);
		return;
	}
	// ftrace's update is all or nothing: the half with the entry it
	// refuses is refused again, the other armed (log2 of the batch
	// passes more per refused entry).
	const size_t half = count / 2;
	arm_ftrace_halves(sites, addresses, half, ipmodify);
	arm_ftrace_halves(sites + half, addresses + half, count - half, ipmodify);
}

void ProbeTable::arm_ftrace_sites(Site *const *sites, size_t count)
{
	if (!count)
		return;
	OwnedArray<Site *> ops_sites = OwnedArray<Site *>::make(count);
	OwnedArray<uint64_t> addresses = OwnedArray<uint64_t>::make(count);
	for (int ipmodify = 0; ipmodify < 2; ++ipmodify) {
		if (ops_sites && addresses) {
			size_t n = 0;
			for (size_t i = 0; i < count; ++i) {
				if (sites[i]->ftrace.ipmodify != (ipmodify != 0))
					continue;
				ops_sites[n] = sites[i];
				addresses[n++] = sites[i]->address;
			}
			arm_ftrace_halves(ops_sites.get(), addresses.get(), n, ipmodify);
			continue;
		}
		// No memory for the batch: one at a time.
		for (size_t i = 0; i < count; ++i) {
			uint64_t address = sites[i]->address;
			if (sites[i]->ftrace.ipmodify == (ipmodify != 0))
				arm_ftrace_halves(&sites[i], &address, 1, ipmodify);
		}
	}
}

void ProbeTable::disarm_ftrace_sites(Site *const *sites, size_t count)
{
	OwnedArray<uint64_t> addresses = OwnedArray<uint64_t>::make(count);
	for (int ipmodify = 0; ipmodify < 2; ++ipmodify) {
		size_t n = 0;
		for (size_t i = 0; i < count; ++i) {
			if (sites[i]->ftrace.ipmodify != (ipmodify != 0))
				continue;
			const unsigned long one = sites[i]->address;
			if (addresses)
				addresses[n++] = one;
			else // memory is short: one at a time
				okp_glue_ftrace_disarm_many(&one, 1, ipmodify);
		}
		if (n)
			okp_glue_ftrace_disarm_many(reinterpret_cast<const unsigned long *>(addresses.get()),
						    unsigned(n), ipmodify);
	}
}

void ProbeTable::update_ftrace_site(Site &site, bool report_refusal)
{
	if (!should_be_armed(site)) {
		if (site.armed)
			disarm(site);
		site.armed = false;
		site.unoptimized_why = site.gone ? "its text is gone" : "disabled";
		return;
	}
	// Its arm waits for the batch's pass of ftrace, which reads the ops
	// it wants then.
	if (site.arm_batch.pending) {
		site.ftrace.ipmodify = wants_ipmodify(site);
		site.unoptimized_why = site.jump_refusal;
		return;
	}
	// A post_handler came or went: ftrace_ops are chosen per call site,
	// so the site leaves one and enters the other (calls in between run
	// no handler).
	if (site.armed && site.ftrace.ipmodify != wants_ipmodify(site)) {
		disarm(site);
		site.armed = false;
	}
	if (!site.armed) {
		arm(site);
		if (site.ftrace.error) {
			site.unoptimized_why = ftrace_refusal(site.ftrace.error);
			// Registration and enable refuse their probe and say
			// why; anything else leaves probes that do not run.
			if (report_refusal)
				okp_glue_entry_unarmed(site.address, site.description, site.unoptimized_why);
			return;
		}
		site.armed = true;
	}
	site.unoptimized_why = site.jump_refusal;
}

Result<Site *> ProbeTable::create_ftrace_site(const Registration &checked)
{
	Owned<Site> owned = Owned<Site>::make();
	if (!owned)
		return out_of_memory;
	Site *site = owned.get();
	site->address = checked.address;
	site->via_ftrace = true;
	site->ftrace.length = checked.length;
	okp_glue_describe(checked.address, site->description, sizeof(site->description));
	site->jump_refusal = "entered through ftrace: no jump to make";
	site->unoptimized_why = site->jump_refusal;
	if (!append(site))
		return out_of_memory;
	if (!sites_.insert(checked.address, site, retire_storage, nullptr)) {
		unlink(site);
		return out_of_memory;
	}
	site->function = checked.function;
	owned.release(); // the table's, until free_site
	return site;
}

} // namespace okp
