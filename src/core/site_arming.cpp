// SPDX-License-Identifier: GPL-2.0
// A site's breakpoint in and out of the text: only over the original
// instruction going in, only over okprobe's own breakpoint coming out (else
// the site is lost and nothing is written), one at a time or, between
// begin_arm_batch and end_arm_batch (okprobe_register_many), all of a
// batch's breakpoints and ftrace entries in one write; and, for
// disable_probes, all of its sites' breakpoints out in one write.
#include "core/probe_table_parts.hpp"

namespace okp {

void ProbeTable::defer_arm(Site &site)
{
	// Each site is on the batch's list once.
	OKP_ASSERT(batching_arms_ && !site.arm_batch.pending);
	site.arm_batch.pending = true;
	site.arm_batch.next = pending_arms_;
	pending_arms_ = &site;
	++pending_arm_count_;
}

// The breakpoint goes in over the original instruction only; it comes
// out (the original bytes back) only over okprobe's breakpoint. Anything
// else there is someone else's change: the site is lost, nothing written.
void ProbeTable::arm(Site &site)
{
	OKP_ASSERT(!site.armed && !site.arm_batch.pending);
	if (site.via_ftrace) {
		const bool ipmodify = wants_ipmodify(site);
		if (batching_arms_ && site.arm_batch.registering) {
			// With the batch's other entries, one pass of ftrace
			// (arm_ftrace_sites undoes armed if ftrace refuses).
			site.ftrace.ipmodify = ipmodify;
			site.ftrace.error = 0;
			defer_arm(site);
			return;
		}
		const unsigned long address = site.address;
		const int result = okp_glue_ftrace_arm_many(&address, 1, ipmodify);
		site.ftrace.error = -result;
		if (!result)
			site.ftrace.ipmodify = ipmodify;
		return;
	}
	size_t length = 0;
	const uint8_t *breakpoint = arch::breakpoint_bytes(site, &length);
	if (!text_holds(site.address, site.original, arch::instruction_length(site))) {
		mark_lost(site, "the instruction changed before okprobe put its breakpoint back");
		return;
	}
	const StepTimer timer(clock_, WriterStep::arm);
	site.patched_bytes = uint8_t(length);
	if (batching_arms_) {
		defer_arm(site);
		return;
	}
	okp_glue_text_write(site.address, breakpoint, length);
}

void ProbeTable::write_pending_arms()
{
	if (!pending_arms_)
		return;
	const StepTimer timer(clock_, WriterStep::arm_batch);
	PatchBatch batch(pending_arm_count_);
	OwnedArray<Site *> entries = OwnedArray<Site *>::make(pending_arm_count_);
	size_t entry_count = 0;
	for (Site *site = pending_arms_; site; site = site->arm_batch.next) {
		if (!site->arm_batch.pending)
			continue;
		site->arm_batch.pending = false;
		if (site->via_ftrace) {
			if (entries)
				entries[entry_count++] = site;
			else
				arm_ftrace_sites(&site, 1); // memory is short
			continue;
		}
		size_t length = 0;
		const uint8_t *breakpoint = arch::breakpoint_bytes(*site, &length);
		// Checked again: the batch spans many registrations.
		if (!text_holds(site->address, site->original, arch::instruction_length(*site))) {
			site->patched_bytes = 0;
			mark_lost(*site, "the instruction changed before okprobe put its breakpoint in");
			settle_lost(*site);
			continue;
		}
		if (batch.full()) {
			batch.write();
			batch.clear();
		}
		batch.add(site->address, breakpoint, length, *site);
	}
	batch.write();
	arm_ftrace_sites(entries.get(), entry_count);
	pending_arms_ = nullptr;
	pending_arm_count_ = 0;
}

void ProbeTable::disarm(Site &site)
{
	// okprobe writes nothing where it lost the text.
	OKP_ASSERT(site.armed && (site.via_ftrace || !site.is_lost()));
	if (site.via_ftrace) {
		write_pending_arms(); // its arm may still be pending
		const unsigned long address = site.address;
		if (site.armed && !site.ftrace.error)
			okp_glue_ftrace_disarm_many(&address, 1, site.ftrace.ipmodify);
		return;
	}
	write_pending_arms(); // the breakpoint to take out may still be pending
	size_t length = 0;
	const uint8_t *breakpoint = arch::breakpoint_bytes(site, &length);
	if (!holds_breakpoint_over_original(site, breakpoint, length, arch::instruction_length(site))) {
		mark_lost(site, "someone else changed the instruction under okprobe's breakpoint");
		return;
	}
	okp_glue_text_write(site.address, site.original, length);
	site.patched_bytes = 0;
}

void ProbeTable::take_out_breakpoints(okprobe *const *probes, size_t count)
{
	// The breakpoints of the sites no probe wants armed now, in one write
	// (okprobe-cover's reach probes leave by the thousand): update_site
	// then finds them disarmed. Each site once (work.touched, as in
	// detach_probes); entries through ftrace are update_site's.
	BreakpointsOut breakpoints(count);
	Site *touched = nullptr;
	for (size_t i = 0; i < count; ++i) {
		Site &site = *site_of(probes[i]);
		if (site.work.touched || site.via_ftrace || !site.armed || site.is_lost() || should_be_armed(site))
			continue;
		set_queued(site, false);
		leave_jump(site);
		if (site.is_lost())
			continue;
		site.work.touched = true;
		site.work.next = touched;
		touched = &site;
		breakpoints.add(site);
	}
	breakpoints.flush();
	while (touched) {
		Site &site = *touched;
		touched = site.work.next;
		site.work.touched = false;
		site.work.next = nullptr;
		if (site.is_lost())
			settle_lost(site); // add() found someone else's change
		else
			site.armed = false;
	}
}

} // namespace okp
