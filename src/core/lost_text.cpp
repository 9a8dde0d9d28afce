// SPDX-License-Identifier: GPL-2.0
// Text okprobe no longer owns. Lost: someone else changed bytes okprobe
// wrote or guards (the arch skipped its write and said why); the site is
// reported once, pins the module, and is forgotten only when its text is
// the original again. Gone: the text went away (a module unloading): the
// sites there are disarmed, unpublished and listed [GONE] until their
// probes are unregistered; probes_within finds the probes a going module
// holds. And the text as it was before okprobe (read_original_text):
// what is under okprobe's own writes, for the checks that must not see
// them.
#include "core/probe_table_parts.hpp"

namespace okp {
namespace {

bool within(uint64_t address, uint64_t start, uint64_t end)
{
	return address >= start && address < end;
}

} // namespace

void ProbeTable::settle_lost(Site &site)
{
	if (!site.is_lost() || site.lost_reported)
		return;
	site.lost_reported = true;
	site.lost_pinned = true;
	++lost_pinned_;
	for (okprobe *probe : site.attached_probes()) {
		if (probe) {
			set_flag(probe, OKPROBE_FLAG_LOST, true);
			show_probe_optimized(probe, false);
		}
	}
	okp_glue_text_lost(site.address, site.description, site.lost.load(Order::relaxed));
}

bool ProbeTable::lost_text_released(Site &site)
{
	const size_t extent = site.patched_bytes ? site.patched_bytes : 1;
	if (!site.gone && !text_holds(site.address, site.original, extent))
		return false;
	if (!site.gone && site.patched_behind.load(Order::relaxed) &&
	    !text_holds(site.jump_region_start(), site.original_behind, site.jump_region_behind))
		return false;
	if (site.lost_pinned) {
		site.lost_pinned = false;
		--lost_pinned_;
		okp_glue_lost_text_released(site.address, site.description);
	}
	return true;
}

bool ProbeTable::lost_text_within(uint64_t start, uint64_t size) const
{
	bool lost = false;
	for_each_site_in(start, start + size, [&](const Site &site) { lost = lost || (site.is_lost() && !site.gone); });
	return lost;
}

void ProbeTable::text_gone(uint64_t start, uint64_t end)
{
	OKP_ASSERT(start <= end);
	write_pending_arms();
	bool any = false;
	for (Site *site = first_; site; site = site->next) {
		if (site->gone || !within(site->address, start, end))
			continue;
		site->gone = true;
		for (okprobe *probe : site->attached_probes())
			if (probe)
				set_flag(probe, OKPROBE_FLAG_GONE, true);
		// The text is still mapped while its module is going: put the
		// original bytes back rather than leave a stray patch.
		update_site(*site);
		if (site->is_lost())
			lost_text_released(*site);
		release_function(*site);
		unpublish(*site);
		any = true;
	}
	if (any)
		okp_glue_synchronize(OKP_GRACE_RCU);
}

size_t ProbeTable::probes_within(uint64_t start, uint64_t end, okprobe **found, size_t capacity) const
{
	OKP_ASSERT(found || !capacity);
	size_t count = 0;
	for (const Site *site = first_; site; site = site->next) {
		for (okprobe *probe : site->attached_probes()) {
			if (!probe)
				continue;
			const bool inside = within(reinterpret_cast<uint64_t>(probe), start, end) ||
					    within(reinterpret_cast<uint64_t>(probe->pre_handler), start, end) ||
					    within(reinterpret_cast<uint64_t>(probe->post_handler), start, end) ||
					    within(reinterpret_cast<uint64_t>(probe->args_handler), start, end);
			if (inside && count < capacity)
				found[count++] = probe;
		}
	}
	return count;
}

size_t ProbeTable::read_original_text(uint64_t address, uint8_t *buffer, size_t size) const
{
	const size_t read = okp_glue_read_text(address, buffer, size);
	// A site before address may have patched bytes inside the read, and
	// one after it the bytes before it (an end-anchored jump).
	const uint64_t reach = max_original_bytes - 1;
	for_each_site_in(address > reach ? address - reach : 0, address + read + max_jump_region_behind,
			 [&](const Site &site) {
				 for (size_t i = 0; i < site.patched_bytes; ++i) {
					 const uint64_t at = site.address + i;
					 if (at >= address && at < address + read)
						 buffer[at - address] = site.original[i];
				 }
				 if (!site.patched_behind.load(Order::relaxed))
					 return;
				 for (size_t i = 0; i < site.jump_region_behind; ++i) {
					 const uint64_t at = site.jump_region_start() + i;
					 if (at >= address && at < address + read)
						 buffer[at - address] = site.original_behind[i];
				 }
			 });
	return read;
}

} // namespace okp
