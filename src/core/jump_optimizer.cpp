// SPDX-License-Identifier: GPL-2.0
// The jump optimizer's half of the probe table: where a site's jump may go
// (its refusal, the regions of its neighbours, the kept bytes before an
// end-anchored region), which detour it gets (argument-only or full, and
// the gate of a direct one), every site brought up to date after the
// sysctl or the table's enabled changed, its detour built and published
// (waiting), the jumps written by the optimizer's passes after a grace
// period (optimizer_begin/optimizer_finish, over the staging lists queued_
// and waiting_ only, as the kernel's kprobe_optimizer() works on its
// optimizing_list), and the way back: the jump out, the detour withdrawn
// and freed a generation later. The states are described in
// probe_table.hpp; the arch writes the text (arch::optimize, unoptimize).
#include "core/probe_table_parts.hpp"

namespace okp {

bool ProbeTable::args_detour_wanted(const Site &site) const
{
	// Every probe attached, enabled or not (enabling one must not need
	// another detour), has an args_handler.
	if (site.counting() || site.via_ftrace || !arch::has_args_detour())
		return false;
	bool any = false;
	for (const okprobe *probe : site.attached_probes()) {
		if (probe && !probe->args_handler)
			return false;
		any = any || probe;
	}
	return any;
}

bool ProbeTable::detour_kind_stale(const Site &site) const
{
	const Detour *detour = site.current_detour();
	return detour && detour->args_record != args_detour_wanted(site);
}

DirectHit ProbeTable::direct_hit(const Site &site, bool args_record) const
{
	DirectHit direct;
	okprobe *probe = site.counting() || site.via_ftrace ? nullptr
			 : args_record			    ? sole_args_candidate(site)
							    : sole_pre_candidate(site);
	if (!probe)
		return direct;
	direct.site = reinterpret_cast<uint64_t>(&site);
	direct.probe = reinterpret_cast<uint64_t>(probe);
	direct.handler = args_record ? reinterpret_cast<uint64_t>(probe->args_handler)
				     : reinterpret_cast<uint64_t>(probe->pre_handler);
	// Site is not standard-layout (it has an arch part), but GCC and
	// Clang lay it out as declared: offsetof is well defined for them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
	direct.direct_probe = offsetof(Site, direct_probe);
	direct.first_hits = offsetof(Site, hits);
#pragma GCC diagnostic pop
	direct.probe_handler = args_record ? offsetof(okprobe, args_handler) : offsetof(okprobe, pre_handler);
	static_assert(sizeof(site.direct_probe) == 8 && sizeof(site.hits[0]) == 8);
	// The detour tests and sets okp_cpu_state::active_site at the
	// state's address.
	static_assert(offsetof(okp_cpu_state, active_site) == 0);
	return direct;
}

void ProbeTable::refresh_direct_probe(Site &site)
{
	okprobe *probe = site.used_slots() == 1 ? site.probe_at(0) : nullptr;
	const bool open = all_enabled() && !site.gone && !site.is_lost() && !site.via_ftrace && !site.counting() &&
			  probe_active(probe) && !probe->post_handler;
	site.direct_probe.store(open ? probe : nullptr, Order::release);
}

void ProbeTable::update_sites_before(uint64_t address)
{
	// Sites before address whose jump may cover it, and sites after it
	// whose end-anchored jump may start before it or overlap the jump of
	// a site at address.
	for_each_site_in(address - (max_jump_region - 1), address + max_jump_region + max_jump_region_behind,
			 [&](Site &site) {
				 if (site.gone || site.address == address)
					 return;
				 if (site.address < address || site.jump_region_behind)
					 update_site(site);
			 });
}

void ProbeTable::leave_jump_for(Site &site, const okprobe &probe)
{
	// An optimized hit runs no post_handler, and an argument-only detour
	// no handler of pt_regs: the jump goes before such a probe comes.
	if ((probe.post_handler || (probe.flags & OKPROBE_FLAG_BREAKPOINT)) && !(probe.flags & OKPROBE_FLAG_DISABLED))
		leave_jump(site);
	else if (!probe.args_handler && site.current_detour() && site.current_detour()->args_record)
		leave_jump(site);
}

void ProbeTable::update_all_sites()
{
	// The jumps that must go are taken out in one pass, then each site
	// settles on its own.
	JumpsOut out(site_count_, waiting_);
	for (Site *site = first_; site; site = site->next)
		if (!should_be_armed(*site) || jump_refusal(*site))
			out.add(*site);
	out.flush();
	// Detours are built by the optimizer, not here: the sysctl and
	// debugfs enabled return at once whatever the number of sites.
	for (Site *site = first_; site; site = site->next)
		update_site(*site, true);
	// Once, not once a site: under probes the call itself can trap.
	if (!queued_.empty())
		okp_glue_schedule_optimizer();
}

const char *ProbeTable::jump_refusal(const Site &site) const
{
	if (!okp_core_optimization_enabled())
		return "optimization is off (debug.kprobes_optimization=0)";
	if (site.jump_refusal)
		return site.jump_refusal;
	for (const okprobe *probe : site.attached_probes()) {
		if (!probe || (probe->flags & OKPROBE_FLAG_DISABLED))
			continue;
		if (probe->post_handler)
			return "a probe at the address has a post_handler";
		if (probe->flags & OKPROBE_FLAG_BREAKPOINT)
			return "a probe at the address keeps its breakpoint (OKPROBE_FLAG_BREAKPOINT)";
	}
	return region_conflict(site);
}

const char *ProbeTable::region_conflict(const Site &site) const
{
	// Another site's breakpoint would land inside the jump (even one
	// disarmed now: enabling it must not write into the jump).
	const uint64_t start = site.jump_region_start(), end = site.jump_region_end();
	bool inside = false, overlap = false;
	for_each_site_in(start - (max_jump_region - 1), end + max_jump_region_behind, [&](const Site &other) {
		if (&other == &site || other.gone)
			return;
		if (other.address >= start && other.address < end)
			inside = true;
		// Only an end-anchored region can overlap another without
		// holding its site: then neither jump is made.
		else if ((site.jump_region_behind || other.jump_region_behind) && !other.jump_refusal &&
			 other.jump_region_start() < end && start < other.jump_region_end())
			overlap = true;
	});
	return inside	 ? "another probe lies inside the jump's region"
	       : overlap ? "another probe's jump region overlaps the jump's"
			 : nullptr;
}

void ProbeTable::show_optimized(Site &site)
{
	const bool optimized = site.jump == JumpState::optimized && !site.is_lost();
	for (okprobe *probe : site.attached_probes())
		if (probe)
			show_probe_optimized(probe, optimized);
}

void ProbeTable::enter_waiting(Site &site)
{
	// A breakpoint in okprobe's text, without a detour yet.
	OKP_ASSERT(site.jump == JumpState::breakpoint && !site.current_detour() && !site.via_ftrace);
	const StepTimer timer(clock_, WriterStep::detour);
	Owned<Detour> owned = Owned<Detour>::make();
	if (!owned) {
		site.unoptimized_why = "out of memory";
		return;
	}
	owned->args_record = args_detour_wanted(site);
	if (const char *why = arch::build_detour(site, direct_hit(site, owned->args_record), *owned)) {
		site.unoptimized_why = why;
		return;
	}
	Detour *detour = owned.release(); // the site's until retire_detour
	set_jump(site, JumpState::waiting, waiting_);
	site.waiting_since = generation_;
	site.unoptimized_why = "waiting for the optimizer";
	// From here on a breakpoint hit continues in the detour's copy.
	site.detour.store(detour, Order::release);
	okp_glue_schedule_optimizer();
}

void ProbeTable::leave_jump(Site &site)
{
	if (site.is_lost())
		return; // its detour stays while the text may lead there
	if (site.jump == JumpState::optimized) {
		Site *one[] = {&site};
		arch::unoptimize(one, 1);
		if (site.is_lost()) {
			settle_lost(site);
			return;
		}
		set_jump(site, JumpState::waiting, waiting_);
	}
	if (site.jump != JumpState::waiting)
		return;
	retire_detour(site);
}

void ProbeTable::retire_detour(Site &site)
{
	if (!site.current_detour())
		return;
	// The breakpoint is back in the text: hits take the breakpoint path
	// again. CPUs and tasks already in the detour leave it before the
	// grace periods that free it end.
	show_optimized(site);
	Detour *detour = site.current_detour();
	site.detour.store(nullptr, Order::release);
	detour->retired_in = generation_;
	detour->next_retired = retired_detours_;
	retired_detours_ = detour;
	set_jump(site, JumpState::breakpoint, waiting_);
	okp_glue_schedule_optimizer();
}

void ProbeTable::free_retired_detours(uint64_t up_to_generation)
{
	for (Detour **link = &retired_detours_; *link;) {
		Detour *detour = *link;
		if (detour->retired_in <= up_to_generation) {
			*link = detour->next_retired;
			arch::release_detour(*detour);
			delete detour;
		} else {
			link = &detour->next_retired;
		}
	}
}

uint64_t ProbeTable::optimizer_begin()
{
	const StepTimer timer(clock_, WriterStep::optimizer_begin);
	write_pending_arms();
	// Queued by update_all_sites: their detours now, published in this
	// generation.
	while (Site *site = queued_.first()) {
		set_queued(*site, false);
		update_site(*site);
	}
	const bool work = retired_detours_ != nullptr || !waiting_.empty();
	return work ? generation_++ : 0;
}

bool ProbeTable::staging_lists_consistent() const
{
	size_t queued = 0, waiting = 0;
	for (const Site *site = first_; site; site = site->next) {
		queued += site->jump_queued();
		waiting += site->jump == JumpState::waiting;
		if ((site->jump == JumpState::waiting) != WaitingSites::contains(*site))
			return false;
	}
	return queued == queued_.size() && waiting == waiting_.size();
}

void ProbeTable::optimizer_finish(uint64_t generation)
{
	// A generation optimizer_begin returned (never 0).
	OKP_ASSERT(generation != 0 && generation < generation_);
	const StepTimer timer(clock_, WriterStep::optimizer_finish);
	write_pending_arms();
	// Every site ready since the grace period began, in one pass: one
	// arch::optimize, one text synchronization (when memory is short,
	// optimizer_batch at a time).
	size_t ready = 0;
	bool more = false;
	for (const Site *site = waiting_.first(); site; site = WaitingSites::next(*site)) {
		if (site->jump != JumpState::waiting || site->is_lost())
			continue;
		if (site->waiting_since <= generation)
			++ready;
		else
			more = true; // published after the grace period began
	}
	const OwnedArray<Site *> all = OwnedArray<Site *>::make(ready);
	Site *small[optimizer_batch];
	Site **batch = all ? all.get() : small;
	const size_t capacity = all ? all.size() : optimizer_batch;
	size_t count = 0;
	// The next site is read before a batch is optimized: the batch's
	// sites leave the list then, the next one is not in the batch.
	for (Site *site = waiting_.first(), *next; site || count; site = next) {
		next = site ? WaitingSites::next(*site) : nullptr;
		if (site && site->jump == JumpState::waiting && !site->is_lost() && site->waiting_since <= generation)
			batch[count++] = site;
		if (count == capacity || (!site && count)) {
			optimize_batch(batch, count);
			count = 0;
		}
		if (!site)
			break;
	}
	free_retired_detours(generation);
	if (more || retired_detours_)
		okp_glue_schedule_optimizer();
}

void ProbeTable::optimize_batch(Site *const *batch, size_t count)
{
	// What each had in the text before, to see which writes happened.
	for (size_t i = 0; i < count; ++i) {
		// Only waiting sites whose text okprobe still owns.
		OKP_ASSERT(batch[i]->jump == JumpState::waiting && !batch[i]->is_lost());
		batch[i]->work.patched_before = patched_extent(*batch[i]);
	}
	{
		const StepTimer timer(clock_, WriterStep::optimize);
		arch::optimize(batch, count);
	}
	for (size_t i = 0; i < count; ++i) {
		Site &site = *batch[i];
		const uint8_t before = site.work.patched_before;
		if (site.is_lost()) {
			settle_lost(site);
		} else if (patched_extent(site) > before) {
			set_jump(site, JumpState::optimized, waiting_);
			site.unoptimized_why = nullptr;
			show_optimized(site);
		} else {
			leave_jump(site);
			site.unoptimized_why = "the text changed under okprobe";
		}
	}
}

void ProbeTable::optimization_changed()
{
	write_pending_arms();
	update_all_sites();
}

const char *ProbeTable::planned_jump_refusal(uint64_t address) const
{
	if (const Site *existing = sites_.lookup(address)) {
		if (existing->jump_refusal)
			return existing->jump_refusal;
		return region_conflict(*existing);
	}
	uint8_t original[max_original_bytes] = {};
	if (read_original_text(address, original, sizeof(original)) == 0)
		return "the text cannot be read";
	Owned<Site> site = Owned<Site>::make();
	if (!site)
		return "out of memory";
	site->address = address;
	for (size_t i = 0; i < max_original_bytes; ++i)
		site->original[i] = original[i];
	if (const char *why = arch::prepare_site(*site, original))
		return why;
	okp_glue_describe(address, site->description, sizeof(site->description));
	const char *why = arch::plan_jump(*site, TableText(*this));
	uint8_t behind[max_jump_region_behind];
	if (!why && site->jump_region_behind)
		why = behind_refusal(*site, behind);
	if (!why)
		why = region_conflict(*site);
	arch::release_site(*site);
	return why;
}

const char *ProbeTable::behind_refusal(const Site &site, uint8_t (&original)[max_jump_region_behind]) const
{
	// The region's start indexes one site only, and its first bytes are
	// kept as they are before okprobe: else no end-anchored jump.
	const uint64_t start = site.jump_region_start();
	if (site.jump_region_behind > max_jump_region_behind || region_starts_.lookup(start) ||
	    read_original_text(start, original, site.jump_region_behind) != site.jump_region_behind)
		return "the jump's region cannot be kept";
	return nullptr;
}

void ProbeTable::keep_bytes_behind(Site &site)
{
	if (const char *why = behind_refusal(site, site.original_behind)) {
		site.jump_refusal = why;
		site.jump_region_behind = 0;
		site.jump_region_length = 0;
	}
}

} // namespace okp
