// SPDX-License-Identifier: GPL-2.0
#include "probe_table.hpp"

#include "errno.hpp"

#include "core_api.h"
#include "handler_path.hpp"
#include "patch_batch.hpp"

namespace okp {
namespace {

constexpr Refusal out_of_memory = refuse(error::enomem, "out of memory");
constexpr unsigned int inactive_flags = OKPROBE_FLAG_DISABLED | OKPROBE_FLAG_GONE;

unsigned int load_flags(const okprobe *probe)
{
	return AtomicRef(probe->flags).load(Order::acquire);
}

void set_flag(okprobe *probe, unsigned int flag, bool on)
{
	const unsigned int flags = load_flags(probe);
	AtomicRef(probe->flags).store(on ? flags | flag : flags & ~flag, Order::release);
}

// OKPROBE_FLAG_OPTIMIZED follows the probe's jump; an okretprobe at the
// exits says it once all its exits' probes do (the glue counts).
void show_probe_optimized(okprobe *probe, bool optimized)
{
	if (!!(load_flags(probe) & OKPROBE_FLAG_OPTIMIZED) == optimized)
		return;
	set_flag(probe, OKPROBE_FLAG_OPTIMIZED, optimized);
	if (probe->pre_handler == okp_glue_return_exit_hit)
		okp_glue_return_exit_optimized(probe, optimized);
}

bool within(uint64_t address, uint64_t start, uint64_t end)
{
	return address >= start && address < end;
}

// A jump region is at most this long (x86: 4 + 15 bytes; riscv: 8).
constexpr uint64_t max_jump_region = 32;
constexpr size_t optimizer_batch = 64;

// Optimized sites whose jumps must come out, all in one arch::unoptimize
// (one text synchronization, and on riscv one rcu-tasks grace period, for
// the batch), after which each is waiting for leave_jump. Each site is
// added once. When memory is short, optimizer_batch at a time.
class JumpsOut {
public:
	JumpsOut(size_t capacity, WaitingSites &waiting) : all_(OwnedArray<Site *>::make(capacity)), waiting_(waiting)
	{}
	JumpsOut(const JumpsOut &) = delete;
	JumpsOut &operator=(const JumpsOut &) = delete;
	~JumpsOut() { flush(); }

	void add(Site &site)
	{
		if (site.jump != JumpState::optimized || site.is_lost())
			return;
		if (count_ == capacity())
			flush();
		batch()[count_++] = &site;
	}

	void flush()
	{
		if (!count_)
			return;
		arch::unoptimize(batch(), count_);
		// A lost one keeps its state: its detour stays (update_site
		// reports it).
		for (size_t i = 0; i < count_; ++i)
			if (!batch()[i]->is_lost())
				set_jump(*batch()[i], JumpState::waiting, waiting_);
		count_ = 0;
	}

private:
	Site **batch() { return all_ ? all_.get() : small_; }
	size_t capacity() const { return all_ ? all_.size() : optimizer_batch; }

	OwnedArray<Site *> all_;
	Site *small_[optimizer_batch];
	size_t count_ = 0;
	WaitingSites &waiting_;
};

// Breakpoints of sites about to be freed, all written back in one
// okp_glue_text_write_batch: one synchronization of every CPU (on riscv one
// stop_machine) for the batch instead of one per site, which was 90 us a
// site in a QEMU guest. The caller removes no site from the address index
// before flush(): a CPU still trapping on an old breakpoint finds its site.
// When memory is short, small_batch at a time (on the stack, beside a
// JumpsOut).
class BreakpointsOut {
public:
	explicit BreakpointsOut(size_t capacity)
	    : all_(OwnedArray<okp_text_patch>::make(capacity)), sites_(OwnedArray<Site *>::make(capacity))
	{}
	BreakpointsOut(const BreakpointsOut &) = delete;
	BreakpointsOut &operator=(const BreakpointsOut &) = delete;
	~BreakpointsOut() { flush(); }

	// As ProbeTable::disarm: only over okprobe's own breakpoint.
	void add(Site &site)
	{
		size_t length = 0;
		const uint8_t *breakpoint = arch::breakpoint_bytes(site, &length);
		if (!holds_breakpoint_over_original(site, breakpoint, length, arch::instruction_length(site))) {
			mark_lost(site, "someone else changed the instruction under okprobe's breakpoint");
			return;
		}
		if (count_ == capacity())
			flush();
		patches()[count_] = {site.address, site.original, length};
		sites()[count_++] = &site;
	}

	void flush()
	{
		if (!count_)
			return;
		okp_glue_text_write_batch(patches(), count_);
		for (size_t i = 0; i < count_; ++i)
			sites()[i]->patched_bytes = 0;
		count_ = 0;
	}

private:
	bool whole() const { return all_ && sites_; }
	okp_text_patch *patches() { return whole() ? all_.get() : small_patches_; }
	Site **sites() { return whole() ? sites_.get() : small_sites_; }
	size_t capacity() const { return whole() ? all_.size() : small_batch; }

	static constexpr size_t small_batch = 16;
	OwnedArray<okp_text_patch> all_;
	OwnedArray<Site *> sites_;
	okp_text_patch small_patches_[small_batch];
	Site *small_sites_[small_batch];
	size_t count_ = 0;
};

} // namespace

OKP_HANDLER_PATH bool ProbeTable::probe_active(const okprobe *probe)
{
	return probe && !(load_flags(probe) & inactive_flags);
}

DirectHit ProbeTable::direct_hit(const Site &site) const
{
	DirectHit direct;
	okprobe *probe = site.counting() || site.via_ftrace ? nullptr : sole_pre_candidate(site);
	if (!probe)
		return direct;
	direct.site = reinterpret_cast<uint64_t>(&site);
	direct.probe = reinterpret_cast<uint64_t>(probe);
	direct.handler = reinterpret_cast<uint64_t>(probe->pre_handler);
	direct.all_enabled = reinterpret_cast<uint64_t>(&all_enabled_);
	// Site is not standard-layout (it has an arch part), but GCC and
	// Clang lay it out as declared: offsetof is well defined for them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
	direct.slots = offsetof(Site, probe_slots);
	direct.first_probe = offsetof(Site, probes);
	direct.first_hits = offsetof(Site, hits);
	direct.lost = offsetof(Site, lost);
#pragma GCC diagnostic pop
	direct.probe_flags = offsetof(okprobe, flags);
	direct.probe_pre_handler = offsetof(okprobe, pre_handler);
	direct.inactive_flags = inactive_flags;
	static_assert(sizeof(site.probe_slots) == 1 && sizeof(site.probes[0]) == 8 && sizeof(site.hits[0]) == 8 &&
		      sizeof(site.lost) == 8 && sizeof(all_enabled_) == 1 && sizeof(probe->flags) == 4 &&
		      inactive_flags < 0x80);
	// The detour tests and sets okp_cpu_state::active_site at the
	// state's address.
	static_assert(offsetof(okp_cpu_state, active_site) == 0);
	return direct;
}

bool ProbeTable::should_be_armed(const Site &site) const
{
	if (!all_enabled() || site.gone)
		return false;
	for (const okprobe *probe : site.attached_probes())
		if (probe && !(probe->flags & OKPROBE_FLAG_DISABLED))
			return true;
	return false;
}

const char *ProbeTable::jump_refusal(const Site &site) const
{
	if (!okp_core_optimization_enabled())
		return "optimization is off (debug.kprobes_optimization=0)";
	if (site.jump_refusal)
		return site.jump_refusal;
	for (const okprobe *probe : site.attached_probes())
		if (probe && !(probe->flags & OKPROBE_FLAG_DISABLED) && probe->post_handler)
			return "a probe at the address has a post_handler";
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
	if (const char *why = arch::build_detour(site, direct_hit(site), *owned)) {
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

void ProbeTable::defer_arm(Site &site)
{
	// Each site is on the batch's list once.
	OKP_ASSERT(batching_arms_ && !site.arm_pending);
	site.arm_pending = true;
	site.arm_next = pending_arms_;
	pending_arms_ = &site;
	++pending_arm_count_;
}

// The breakpoint goes in over the original instruction only; it comes
// out (the original bytes back) only over okprobe's breakpoint. Anything
// else there is someone else's change: the site is lost, nothing written.
void ProbeTable::arm(Site &site)
{
	OKP_ASSERT(!site.armed && !site.arm_pending);
	if (site.via_ftrace) {
		const bool ipmodify = wants_ipmodify(site);
		if (batching_arms_ && site.batch_registering) {
			// With the batch's other entries, one pass of ftrace
			// (arm_ftrace_sites undoes armed if ftrace refuses).
			site.ftrace_ipmodify = ipmodify;
			site.ftrace_error = 0;
			defer_arm(site);
			return;
		}
		const int result = okp_glue_ftrace_arm(site.address, ipmodify);
		site.ftrace_error = -result;
		if (!result)
			site.ftrace_ipmodify = ipmodify;
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
	for (Site *site = pending_arms_; site; site = site->arm_next) {
		if (!site->arm_pending)
			continue;
		site->arm_pending = false;
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
		if (site.armed && !site.ftrace_error)
			okp_glue_ftrace_disarm(site.address, site.ftrace_ipmodify);
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

bool ProbeTable::wants_ipmodify(const Site &site)
{
	for (const okprobe *probe : site.attached_probes())
		if (probe && probe->post_handler && !(probe->flags & OKPROBE_FLAG_DISABLED))
			return true;
	return false;
}

namespace {

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

} // namespace

void ProbeTable::refuse_ftrace_arm(Site &site, int error)
{
	site.armed = false;
	site.ftrace_error = error;
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
				if (sites[i]->ftrace_ipmodify != (ipmodify != 0))
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
			if (sites[i]->ftrace_ipmodify == (ipmodify != 0))
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
			if (sites[i]->ftrace_ipmodify != (ipmodify != 0))
				continue;
			if (addresses)
				addresses[n++] = sites[i]->address;
			else
				okp_glue_ftrace_disarm(sites[i]->address, ipmodify); // memory is short
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
	if (site.arm_pending) {
		site.ftrace_ipmodify = wants_ipmodify(site);
		site.unoptimized_why = site.jump_refusal;
		return;
	}
	// A post_handler came or went: ftrace_ops are chosen per call site,
	// so the site leaves one and enters the other (calls in between run
	// no handler).
	if (site.armed && site.ftrace_ipmodify != wants_ipmodify(site)) {
		disarm(site);
		site.armed = false;
	}
	if (!site.armed) {
		arm(site);
		if (site.ftrace_error) {
			site.unoptimized_why = ftrace_refusal(site.ftrace_error);
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

int ProbeTable::update_site_refusing(Site &site)
{
	if (!site.via_ftrace) {
		update_site(site);
		return 0;
	}
	update_ftrace_site(site, false);
	if (site.armed || !should_be_armed(site))
		return 0;
	return site.ftrace_error ? site.ftrace_error : error::ebusy;
}

void ProbeTable::update_site(Site &site, bool defer_detour)
{
	if (site.via_ftrace) {
		update_ftrace_site(site);
		return;
	}
	if (site.is_lost()) {
		settle_lost(site);
		return;
	}
	if (!should_be_armed(site)) {
		set_queued(site, false);
		leave_jump(site);
		if (site.armed && !site.is_lost())
			disarm(site);
		if (site.is_lost()) {
			settle_lost(site);
			return;
		}
		site.armed = false;
		site.unoptimized_why = site.gone ? "its text is gone" : "disabled";
		return;
	}
	if (!site.armed) {
		arm(site);
		if (site.is_lost()) {
			settle_lost(site);
			return;
		}
		site.armed = true;
	}
	if (const char *why = jump_refusal(site)) {
		set_queued(site, false);
		leave_jump(site);
		site.unoptimized_why = why;
	} else if (site.jump == JumpState::breakpoint && defer_detour) {
		// The optimizer builds the detour (optimizer_begin); the caller
		// schedules it once for all.
		set_queued(site, true);
		site.unoptimized_why = "waiting for the optimizer";
	} else if (site.jump == JumpState::breakpoint) {
		set_queued(site, false);
		enter_waiting(site);
	}
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
		batch[i]->patched_before = patched_extent(*batch[i]);
	}
	{
		const StepTimer timer(clock_, WriterStep::optimize);
		arch::optimize(batch, count);
	}
	for (size_t i = 0; i < count; ++i) {
		Site &site = *batch[i];
		const uint8_t before = site.patched_before;
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

void ProbeTable::free_storage_now(AddressTable<Site>::Storage *old, void *)
{
	AddressTable<Site>::free_storage(old);
}

void ProbeTable::retire_storage(AddressTable<Site>::Storage *old, void *)
{
	// Handlers may still walk the old storage until a grace period ends.
	okp_glue_synchronize_rcu();
	AddressTable<Site>::free_storage(old);
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

void ProbeTable::release_function(Site &site)
{
	if (!site.claimed)
		return;
	site.claimed = false;
	okp_glue_release_function(site.function);
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

Result<Site *> ProbeTable::create_site(const Registration &checked)
{
	const uint64_t address = checked.address;
	uint8_t original[max_original_bytes] = {};
	if (read_original_text(address, original, sizeof(original)) == 0)
		return refuse(error::einval, "the text cannot be read");
	Owned<Site> owned = Owned<Site>::make();
	if (!owned)
		return out_of_memory;
	Site *site = owned.get();
	site->address = address;
	for (size_t i = 0; i < max_original_bytes; ++i)
		site->original[i] = original[i];
	if (const char *refusal = arch::prepare_site(*site, original))
		return refuse(error::enomem, refusal);
	okp_glue_describe(address, site->description, sizeof(site->description));
	{
		const StepTimer timer(clock_, WriterStep::plan);
		site->jump_refusal = arch::plan_jump(*site, TableText(*this));
	}
	if (!site->jump_refusal && site->jump_region_behind)
		keep_bytes_behind(*site);
	site->unoptimized_why = site->jump_refusal;
	// The writer's list first, then what handlers see.
	const uint64_t copy = arch::trapping_copy(*site);
	const uint64_t post_trap = post_trap_of(*site);
	if (!append(site)) {
		arch::release_site(*site);
		return out_of_memory;
	}
	if (copy && !post_traps_.insert(post_trap, site, retire_storage, nullptr)) {
		unlink(site);
		arch::release_site(*site);
		return out_of_memory;
	}
	if (site->jump_region_behind &&
	    !region_starts_.insert(site->jump_region_start(), site, retire_storage, nullptr)) {
		if (copy)
			post_traps_.remove(post_trap);
		unlink(site);
		arch::release_site(*site);
		return out_of_memory;
	}
	if (!sites_.insert(address, site, retire_storage, nullptr)) {
		if (site->jump_region_behind)
			region_starts_.remove(site->jump_region_start());
		if (copy)
			post_traps_.remove(post_trap);
		unlink(site);
		arch::release_site(*site);
		return out_of_memory;
	}
	// The claim the caller holds is the site's from here on.
	site->function = checked.function;
	site->claimed = true;
	owned.release(); // the table's, until free_site
	return site;
}

Result<Site *> ProbeTable::create_ftrace_site(const Registration &checked)
{
	Owned<Site> owned = Owned<Site>::make();
	if (!owned)
		return out_of_memory;
	Site *site = owned.get();
	site->address = checked.address;
	site->via_ftrace = true;
	site->ftrace_length = checked.length;
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

uint64_t ProbeTable::post_trap_of(const Site &site)
{
	// The copy's trailing breakpoint follows the copied instruction.
	return arch::trapping_copy(site) + (arch::next_instruction(site) - site.address);
}

void ProbeTable::abandon_new_site(Site *site)
{
	unpublish(*site);
	unlink(site);
	release_function(*site);
	update_sites_before(site->address);
	// Never armed, but published: a grace period before it goes.
	okp_glue_synchronize_rcu();
	free_site(site);
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

void ProbeTable::unpublish(Site &site)
{
	sites_.remove(site.address);
	if (site.jump_region_behind && region_starts_.lookup(site.jump_region_start()) == &site)
		region_starts_.remove(site.jump_region_start());
}

void ProbeTable::free_site(Site *site)
{
	// No probe left to hit it, no detour left to lead into it.
	OKP_ASSERT(site->used_slots() == 0 && !site->current_detour());
	if (site->counting())
		okp_glue_counter_cells_free(site->counter_cells);
	if (site->via_ftrace) {
		delete site;
		return;
	}
	if (arch::trapping_copy(*site))
		post_traps_.remove(post_trap_of(*site));
	if (site->jump_region_behind && region_starts_.lookup(site->jump_region_start()) == site)
		region_starts_.remove(site->jump_region_start());
	arch::release_site(*site);
	delete site;
}

bool ProbeTable::append(Site *site)
{
	// At the head of its granule's chain. Replacing a head reuses the
	// head's slot; only a granule's first site may need the index to grow.
	const uint64_t granule = (site->address >> granule_shift) + 1;
	Site *head = by_granule_.remove(granule);
	if (!by_granule_.insert(granule, site, free_storage_now, nullptr)) {
		if (head)
			by_granule_.insert(granule, head, free_storage_now, nullptr);
		return false;
	}
	site->granule_next = head;
	++site_count_;
	site->prev = last_;
	site->next = nullptr;
	(last_ ? last_->next : first_) = site;
	last_ = site;
	return true;
}

void ProbeTable::unlink(Site *site)
{
	queued_.remove(*site);
	waiting_.remove(*site);
	(site->prev ? site->prev->next : first_) = site->next;
	(site->next ? site->next->prev : last_) = site->prev;
	site->next = site->prev = nullptr;
	--site_count_;
	const uint64_t granule = (site->address >> granule_shift) + 1;
	Site *head = by_granule_.lookup(granule);
	if (head == site) {
		by_granule_.remove(granule);
		if (site->granule_next)
			by_granule_.insert(granule, site->granule_next, free_storage_now, nullptr);
	} else {
		for (Site *link = head; link; link = link->granule_next)
			if (link->granule_next == site)
				link->granule_next = site->granule_next;
	}
	site->granule_next = nullptr;
}

Site *ProbeTable::site_of(const okprobe *probe) const
{
	// Found by the struct's address, never by what the struct says.
	Site *site = probe ? by_probe_.lookup(reinterpret_cast<uint64_t>(probe)) : nullptr;
	if (!site)
		return nullptr;
	for (const okprobe *registered : site->attached_probes())
		if (registered == probe)
			return site;
	return nullptr;
}

Status ProbeTable::register_probe(okprobe *probe, const char *symbol_name, InstructionRules rules)
{
	// The glue refuses a NULL probe itself (-EINVAL).
	OKP_ASSERT(probe);
	const StepTimer timer(clock_, WriterStep::register_probe);
	// okp_site is zero before registration: anything else is a registered
	// struct, a copy of one, or garbage.
	if (probe->okp_site || site_of(probe))
		return refuse(error::einval, "the probe is already registered (or okp_site is not zero)");
	if (probe->flags &
	    ~static_cast<unsigned int>(OKPROBE_FLAG_DISABLED | OKPROBE_FLAG_COUNTER | OKPROBE_FLAG_RETURN_RETHOOK))
		return refuse(error::einval, "only OKPROBE_FLAG_DISABLED, OKPROBE_FLAG_COUNTER and "
					     "OKPROBE_FLAG_RETURN_RETHOOK may be set at registration");
	const bool counter = probe->flags & OKPROBE_FLAG_COUNTER;
	if (counter && (probe->pre_handler || probe->post_handler))
		return refuse(error::einval, "a counting probe has no handlers");
	ProbeRequest request;
	request.symbol_name = symbol_name;
	request.offset = probe->offset;
	request.address = reinterpret_cast<uint64_t>(probe->addr);
	request.has_pre_handler = probe->pre_handler != nullptr;
	request.has_post_handler = probe->post_handler != nullptr;
	request.counter = counter;

	// Every registration is checked, also one joining an existing site,
	// against the original text rather than okprobe's patches.
	const TableText original(*this);
	const Result<Registration> result = [&] {
		const StepTimer proof(clock_, WriterStep::proof);
		return check_registration(request, original, rules);
	}();
	if (!result)
		return result.refusal();
	const Registration &checked = result.value();

	Site *site = sites_.lookup(checked.address);
	const bool new_site = !site;
	if (new_site && checked.via_ftrace) {
		// ftrace enters the function: okprobe writes none of its bytes,
		// so nothing is claimed from the kernel's kprobes.
		const Result<Site *> created = create_ftrace_site(checked);
		if (!created)
			return created.refusal();
		site = created.value();
	} else if (new_site) {
		// Another party's bytes in the function would desynchronize our
		// proofs and the kernel's: a function holds kernel kprobes or
		// okprobe's sites, never both. The claim shuts the kernel's
		// kprobes out; then the proof is made again, on bytes no kernel
		// kprobe can have changed since (one may have come and gone
		// between the first proof's check and the claim).
		const char *claim_refusal = "";
		const int claim = [&] {
			const StepTimer timer(clock_, WriterStep::claim);
			return okp_glue_claim_function(checked.function, checked.function_size, &claim_refusal);
		}();
		if (claim)
			return refuse(-claim, claim_refusal);
		const Result<Registration> proven = [&] {
			const StepTimer timer(clock_, WriterStep::recheck);
			return check_registration(request, original, rules, &checked);
		}();
		if (!proven || proven->address != checked.address || proven->function != checked.function ||
		    proven->function_size != checked.function_size) {
			okp_glue_release_function(checked.function);
			return proven ? refuse(error::ebusy, "the function changed while it was claimed")
				      : proven.refusal();
		}
		// A jump covering the address goes before its breakpoint comes.
		for_each_site_in(checked.address - (max_jump_region - 1), checked.address + max_jump_region_behind + 1,
				 [&](Site &other) {
					 if (!other.gone && other.jump != JumpState::breakpoint &&
					     other.jump_region_start() <= checked.address &&
					     other.jump_region_end() > checked.address)
						 leave_jump(other);
				 });
		const Result<Site *> created = create_site(checked);
		if (!created) {
			okp_glue_release_function(checked.function);
			update_sites_before(checked.address);
			return created.refusal();
		}
		site = created.value();
	}
	// A counting detour counts for its one probe and runs no handler.
	if (!new_site && (counter || site->counting()))
		return refuse(error::ebusy, counter ? "a counting probe needs the address to itself"
						    : "a counting probe has this address to itself");
	if (counter) {
		site->counter_cells = okp_glue_counter_cells_alloc();
		if (!site->counter_cells) {
			abandon_new_site(site);
			return out_of_memory;
		}
	}
	int index = -1;
	for (int i = 0; i < max_probes_per_site && index < 0; ++i)
		if (!site->probe_at(i))
			index = i;
	if (index < 0)
		return refuse(error::ebusy, "too many probes at this address");
	if (!by_probe_.insert(reinterpret_cast<uint64_t>(probe), site, free_storage_now, nullptr)) {
		if (new_site)
			abandon_new_site(site);
		return out_of_memory;
	}
	// An optimized hit runs no post_handler: the jump goes first.
	if (probe->post_handler && !(probe->flags & OKPROBE_FLAG_DISABLED))
		leave_jump(*site);
	site->past_ftrace = site->past_ftrace || checked.past_ftrace;
	// Everything the handler reads is filled before the probe is
	// published to it.
	probe->addr = reinterpret_cast<void *>(checked.address);
	probe->nmissed = 0;
	probe->okp_site = site;
	if (site->via_ftrace)
		set_flag(probe, OKPROBE_FLAG_FTRACE, true);
	site->hits[index].store(0, Order::relaxed);
	if (index + 1 > site->used_slots())
		site->probe_slots.store(static_cast<uint8_t>(index + 1), Order::release);
	site->probes[index].store(probe, Order::release);
	site->batch_registering = batching_arms_;
	const int refused = update_site_refusing(*site);
	site->batch_registering = false;
	if (refused) {
		// ftrace would not call okprobe there: no probe, and the
		// reason.
		okprobe *one[] = {probe};
		unregister_probes(one, 1);
		return refuse(refused, ftrace_refusal(refused));
	}
	show_optimized(*site);
	if (new_site)
		update_sites_before(site->address);
	return {};
}

size_t ProbeTable::unregister_probes(okprobe *const *probes, size_t count)
{
	OKP_ASSERT(probes || !count);
	const StepTimer timer(clock_, WriterStep::unregister);
	write_pending_arms();
	size_t unknown = 0;
	// First every probe leaves its slot (handlers stop choosing it); the
	// sites they leave are chained through work_next, each once.
	Site *touched = nullptr;
	for (size_t n = 0; n < count; ++n) {
		okprobe *probe = probes[n];
		Site *site = site_of(probe);
		if (!site) {
			++unknown;
			continue;
		}
		uint8_t slots = 0;
		for (int i = 0; i < max_probes_per_site; ++i) {
			if (site->probe_at(i) == probe)
				site->probes[i].store(nullptr, Order::release);
			else if (site->probe_at(i))
				slots = static_cast<uint8_t>(i + 1);
		}
		site->probe_slots.store(slots, Order::relaxed);
		by_probe_.remove(reinterpret_cast<uint64_t>(probe));
		probe->okp_site = nullptr;
		show_probe_optimized(probe, false);
		set_flag(probe, OKPROBE_FLAG_FTRACE, false);
		if (!site->touched) {
			site->touched = true;
			site->work_next = touched;
			touched = site;
		}
	}
	// The jumps of the sites left empty come out in one pass, as in
	// update_all_sites, not one unoptimize each; then their breakpoints,
	// also in one pass.
	{
		size_t sites = 0;
		for (Site *site = touched; site; site = site->work_next)
			++sites;
		{
			JumpsOut out(sites, waiting_);
			for (Site *site = touched; site; site = site->work_next)
				if (!site->used_slots())
					out.add(*site);
		}
		BreakpointsOut breakpoints(sites);
		// The entry sites through ftrace leave their ops' filters in
		// one pass of ftrace.
		OwnedArray<Site *> entries = OwnedArray<Site *>::make(sites);
		size_t entry_count = 0;
		for (Site *site = touched; site; site = site->work_next) {
			if (site->used_slots())
				continue;
			leave_jump(*site);
			if (site->armed && site->via_ftrace) {
				if (entries)
					entries[entry_count++] = site;
				else
					disarm(*site);
			} else if (site->armed && !site->is_lost()) {
				breakpoints.add(*site);
			}
		}
		disarm_ftrace_sites(entries.get(), entry_count);
	}
	Site *dying = nullptr; // linked through next once unlinked
	const bool detached = touched != nullptr;
	while (touched) {
		Site *site = touched;
		touched = site->work_next;
		site->touched = false;
		site->work_next = nullptr;
		if (site->used_slots()) {
			update_site(*site); // the others may all be disabled
			continue;
		}
		settle_lost(*site); // a breakpoint someone else changed
		// A lost site stays while its text may still trap or jump into
		// okprobe (listed in okprobe/jumps, found by the handler).
		if (site->is_lost()) {
			if (!lost_text_released(*site))
				continue;
			retire_detour(*site);
		}
		site->armed = false;
		if (!site->gone)
			unpublish(*site);
		unlink(site);
		site->next = dying;
		dying = site;
	}
	// Lost sites no probe holds any more, whose text is the original again
	// (someone put it back): nothing leads into okprobe's copies now.
	bool reaped = false;
	for (Site *site = lost_pinned_ ? first_ : nullptr, *next; site; site = next) {
		next = site->next;
		if (site->is_lost() && !site->used_slots() && site->lost_pinned && lost_text_released(*site)) {
			retire_detour(*site);
			if (!site->gone)
				unpublish(*site);
			unlink(site);
			site->next = dying;
			dying = site;
			reaped = true;
		}
	}
	if (!detached && !reaped)
		return unknown;
	// Sites whose jump region held a dying one may jump now.
	for (const Site *site = dying; site; site = site->next)
		update_sites_before(site->address);
	// One grace period for the batch: after it no handler runs a detached
	// probe or holds a dying site.
	okp_glue_synchronize_rcu();
	if (!dying && !retired_detours_)
		return unknown;
	// And no task is still preempted inside a dying site's boosted copy or
	// a withdrawn detour.
	okp_glue_synchronize_rcu_tasks();
	free_retired_detours(~0ull);
	while (dying) {
		Site *next = dying->next;
		release_function(*dying);
		free_site(dying);
		dying = next;
	}
	return unknown;
}

int ProbeTable::set_probe_enabled(okprobe *probe, bool enabled)
{
	write_pending_arms();
	Site *site = site_of(probe);
	if (!site)
		return -error::einval;
	if (enabled && (load_flags(probe) & OKPROBE_FLAG_GONE))
		return -error::einval;
	if (enabled && probe->post_handler)
		leave_jump(*site); // before the post_handler can be asked for
	set_flag(probe, OKPROBE_FLAG_DISABLED, !enabled);
	if (const int refused = update_site_refusing(*site)) {
		// ftrace refused the entry: the probe stays disabled.
		set_flag(probe, OKPROBE_FLAG_DISABLED, true);
		update_ftrace_site(*site);
		return -refused;
	}
	return 0;
}

int ProbeTable::disable_probes(okprobe *const *probes, size_t count)
{
	OKP_ASSERT(probes || !count);
	write_pending_arms();
	for (size_t i = 0; i < count; ++i)
		if (!probes[i] || !site_of(probes[i]))
			return -error::einval;
	for (size_t i = 0; i < count; ++i)
		set_flag(probes[i], OKPROBE_FLAG_DISABLED, true);
	{
		JumpsOut out(count, waiting_);
		for (size_t i = 0; i < count; ++i) {
			Site &site = *site_of(probes[i]);
			if (!should_be_armed(site) || jump_refusal(site))
				out.add(site); // once: only an optimized site is added
		}
	}
	for (size_t i = 0; i < count; ++i)
		update_site(*site_of(probes[i]));
	return 0;
}

int ProbeTable::read_count(okprobe *probe, unsigned long long *count) const
{
	OKP_ASSERT(count); // the glue refuses a NULL count (-EINVAL)
	const Site *site = site_of(probe);
	if (!site)
		return -error::einval;
	for (int i = 0; i < max_probes_per_site; ++i)
		if (site->probe_at(i) == probe)
			*count = hits_of(*site, i);
	return 0;
}

unsigned long long ProbeTable::hits_of(const Site &site, int index)
{
	OKP_ASSERT(index >= 0 && index < max_probes_per_site);
	unsigned long long hits = site.hits[index].load(Order::relaxed);
	if (site.counting())
		hits += okp_glue_counter_cells_sum(site.counter_cells);
	return hits;
}

void ProbeTable::set_all_enabled(bool enabled)
{
	write_pending_arms();
	all_enabled_.store(enabled, Order::relaxed);
	update_all_sites();
	unregister_probes(nullptr, 0); // lost sites whose text is back
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
		okp_glue_synchronize_rcu();
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
					    within(reinterpret_cast<uint64_t>(probe->post_handler), start, end);
			if (inside && count < capacity)
				found[count++] = probe;
		}
	}
	return count;
}

void ProbeTable::clear()
{
	write_pending_arms();
	okprobe *batch[32];
	for (;;) {
		size_t count = 0;
		for (const Site *site = first_; site && count < 32; site = site->next)
			for (okprobe *probe : site->attached_probes())
				if (probe && count < 32)
					batch[count++] = probe;
		if (!count)
			break;
		unregister_probes(batch, count);
	}
	unregister_probes(nullptr, 0); // lost sites whose text is back
	sites_.destroy();
	post_traps_.destroy();
	region_starts_.destroy();
	by_granule_.destroy();
	by_probe_.destroy();
	all_enabled_.store(true, Order::relaxed);
}

// ---- Handler side -----------------------------------------------------------

OKP_HANDLER_PATH void ProbeTable::start_hit(Site &site, HitProbes &hit)
{
	hit.count = 0;
	const int slots = site.probe_slots.load(Order::acquire);
	for (int i = 0; i < slots && i < max_probes_per_site; ++i) {
		okprobe *probe = site.probes[i].load(Order::acquire);
		if (probe_active(probe)) {
			hit.probes[hit.count++] = probe;
			site.hits[i].fetch_add(1, Order::relaxed);
		}
	}
}

OKP_HANDLER_PATH bool ProbeTable::run_pre_handlers(const HitProbes &hit, pt_regs *regs)
{
	for (int i = 0; i < hit.count; ++i) {
		okprobe *probe = hit.probes[i];
		if (probe->pre_handler && probe->pre_handler(probe, regs))
			return true;
	}
	return false;
}

OKP_HANDLER_PATH void ProbeTable::run_post_handlers(const HitProbes &hit, pt_regs *regs)
{
	for (int i = 0; i < hit.count; ++i)
		if (okprobe *probe = hit.probes[i]; probe->post_handler)
			probe->post_handler(probe, regs, 0);
}

OKP_HANDLER_PATH bool ProbeTable::wants_post_handlers(const HitProbes &hit)
{
	for (int i = 0; i < hit.count; ++i)
		if (hit.probes[i]->post_handler)
			return true;
	return false;
}

OKP_HANDLER_PATH void ProbeTable::run_optimized_hit(Site &site, pt_regs *regs)
{
	const int slots = site.probe_slots.load(Order::acquire);
	for (int i = 0; i < slots && i < max_probes_per_site; ++i) {
		okprobe *probe = site.probes[i].load(Order::acquire);
		if (!probe_active(probe))
			continue;
		site.hits[i].fetch_add(1, Order::relaxed);
		if (probe->pre_handler)
			probe->pre_handler(probe, regs);
	}
}

OKP_HANDLER_PATH void ProbeTable::count_missed(Site &site)
{
	for (int i = 0; i < max_probes_per_site; ++i) {
		okprobe *probe = site.probes[i].load(Order::acquire);
		if (!probe)
			continue;
		// A counting probe runs no handler, so nothing is missed: a hit
		// inside another probe's handler is one more hit (the counting
		// detour counts it too).
		if (site.counting()) {
			if (probe_active(probe))
				site.hits[i].fetch_add(1, Order::relaxed);
			continue;
		}
		AtomicRef(probe->nmissed).fetch_add(1, Order::relaxed);
		// An okretprobe's exit: the okretprobe missed a return.
		if (probe->pre_handler == okp_glue_return_exit_hit)
			okp_glue_return_exit_missed(probe);
	}
}

} // namespace okp
