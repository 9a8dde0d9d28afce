// SPDX-License-Identifier: GPL-2.0
// The probe table: every registered probe, the breakpoint sites they share,
// and the lifecycle of both, for every architecture. One class, its methods
// in files by concern (probe_table_parts.hpp lists them): registration,
// arming, the jump optimizer, ftrace entries, lost and gone text, hits.
//
// A Site is one probed address: one breakpoint in the text, the
// architecture's way of executing the displaced instruction (arch::), and
// up to max_probes_per_site client probes aggregated behind it.
//
// Life of a site:
//   created    registration found no site at the address: the arch
//              analyses the instruction and prepares its out-of-line copy
//   armed      the breakpoint is in the text. A site is armed exactly when
//              probes are enabled globally (debugfs enabled), the site is
//              not gone, and at least one of its probes is not disabled
//   gone       its text went away (module unload, module init text freed):
//              disarmed, out of the lookup table, handlers never run again;
//              it stays listed until its probes are unregistered
//   retired    its last probe was unregistered: disarmed, out of the lookup
//              table, then after the grace periods the arch frees it
//
// Jump optimization (sysctl debug.kprobes_optimization=1), for an armed
// site whose probes have no post_handler and whose arch plan allows it:
//   breakpoint  no detour; a hit traps and takes the breakpoint path
//   waiting     the detour is built and published: a hit traps and
//               continues in the detour's copy of the region, so no task
//               newly enters the region's interior; the optimizer patches
//               the jump in after an rcu-tasks grace period that started
//               after the publication (by generation)
//   optimized   the jump is in the text; hits run the detour
// Leaving (disable, unregister, a post_handler, a probe inside the region,
// sysctl 0) reverses the text first, withdraws the detour, and frees it
// only after the next grace periods.
//
// Ownership and locking: one ProbeTable, changed only by its writer under
// the glue's probe mutex (every method not marked "handler"). Handlers
// (breakpoint context, NMI-like) use only lookup() and the handler helpers,
// which read with atomic loads and take no lock. A site or probe a handler
// may hold is freed or reused only after an RCU grace period
// (okp_glue_synchronize(OKP_GRACE_RCU)); an out-of-line copy a task may be
// preempted in only after an rcu-tasks one (OKP_GRACE_TASKS).
#pragma once

#include "core/address_table.hpp"
#include "core/arch_port.hpp"
#include "core/assert.hpp"
#include "core/atomic.hpp"
#include "core/core_api.h"
#include "core/handler_path.hpp"
#include "core/intrusive_list.hpp"
#include "core/owned.hpp"
#include "core/site.hpp"
#include "core/result.hpp"
#include "core/writer_clock.hpp"

#include <okprobe.h>

namespace okp {

// One line of debugfs okprobe/list.
struct ListLine {
	uint64_t address;
	const char *description;
	unsigned long hits, missed;
	unsigned int flags; // OKPROBE_FLAG_*
	bool optimized;
	bool ftrace;	  // ftrace calls its handlers at the function's entry
	bool past_ftrace; // asked for the entry, probed past its ftrace site
	const okprobe *probe = nullptr;
};

// One line of debugfs okprobe/jumps: a site and its jump state.
struct JumpLine {
	uint64_t address;
	const char *description;
	JumpState state;
	bool lost;	 // okprobe lost the text (why says how)
	bool ftrace;	 // a function's entry ftrace calls the handlers at
	const char *why; // why not optimized (nullptr when optimized)
	unsigned int region_length, detour_size;
	unsigned int region_behind; // the region starts this many bytes before address
	bool args_detour;	    // the detour is argument-only (Detour::args_record)
};

class ProbeTable {
public:
	constexpr ProbeTable() = default;
	ProbeTable(const ProbeTable &) = delete;
	ProbeTable &operator=(const ProbeTable &) = delete;

	// ---- Writer (probe mutex held; may sleep) ----

	// Checks the request with the arch's rules, then attaches the probe to
	// the site at its address (creating and arming the site as needed).
	// symbol_name is the glue's checked copy of probe->symbol_name (which
	// is never read here), or nullptr.
	Status register_probe(okprobe *probe, const char *symbol_name, InstructionRules rules);
	// okprobe_register_many: the breakpoints of the registrations between
	// begin_arm_batch and end_arm_batch go into the text together, with
	// one synchronization (x86) or stop_machine (riscv) for all; every
	// probe is live when end_arm_batch returns 0. Any other writer entry
	// point writes the batch first.
	// Entry probes through ftrace are armed together too, one pass of
	// ftrace for all; end_arm_batch returns the first errno ftrace
	// refused one with (0: none), *where and *why saying which and why
	// (the caller unregisters the batch: register_many is all or
	// nothing).
	void begin_arm_batch()
	{
		OKP_ASSERT(!batching_arms_); // batches do not nest
		batching_arms_ = true;
		batch_refusal_ = 0;
		batch_refused_where_ = batch_refused_why_ = nullptr;
	}
	int end_arm_batch(const char **where, const char **why)
	{
		OKP_ASSERT(batching_arms_);
		batching_arms_ = false;
		write_pending_arms();
		*where = batch_refused_where_;
		*why = batch_refused_why_;
		return batch_refusal_;
	}
	// Detaches every probe, then waits one grace period for the whole
	// batch (and one rcu-tasks grace period when a site dies) before
	// anything is freed. Probes the table does not hold (nullptr, never
	// registered, already unregistered, a copy of a registered struct) are
	// skipped: returns how many.
	size_t unregister_probes(okprobe *const *probes, size_t count);
	// okprobe_enable/okprobe_disable: 0, or -EINVAL when the probe is not
	// registered or (to enable) gone.
	int set_probe_enabled(okprobe *probe, bool enabled);
	// Disables probes[0..count) at once, all or none: 0, or -EINVAL
	// (nothing changed) when one is not registered. The jumps that go
	// come out in one pass (on riscv one rcu-tasks grace period, where
	// one by one each takes its own): a return probe's exits.
	int disable_probes(okprobe *const *probes, size_t count);
	// okprobe_read_count: 0, or -EINVAL when the probe is not registered.
	int read_count(okprobe *probe, unsigned long long *count) const;
	// The hits of the probe in slot index of site, a counting site's
	// cells included.
	static unsigned long long hits_of(const Site &site, int index);
	// The site holding probe, found in the table: a client's struct is
	// never trusted (its okp_site may be garbage or a copy's). nullptr when
	// the probe is not registered.
	Site *site_of(const okprobe *probe) const;
	// debugfs enabled: arms or disarms every site; probes keep their
	// own enabled state.
	void set_all_enabled(bool enabled);
	bool all_enabled() const { return all_enabled_.load(Order::relaxed); }
	// Text [start, end) is going away: its sites become gone. Returns when
	// no handler of theirs runs any more.
	void text_gone(uint64_t start, uint64_t end);
	// Probes whose struct or handlers lie in [start, end) (a module's
	// memory that is going away), for the glue to unregister.
	size_t probes_within(uint64_t start, uint64_t end, okprobe **found, size_t capacity) const;
	// sysctl debug.kprobes_optimization changed (core_state's switch):
	// unoptimizes or queues every site.
	void optimization_changed();
	// The optimizer (the glue's delayed work): begin returns 0 when there is
	// nothing to do, else a generation; the glue then waits for the RCU
	// and rcu-tasks grace periods without the probe mutex, and calls
	// finish with it, which patches the jumps of the sites waiting since
	// before begin and frees the detours withdrawn before it.
	uint64_t optimizer_begin();
	void optimizer_finish(uint64_t generation);
	// Visits one line per registered probe, in registration order.
	template <typename Visit> void for_each_line(Visit visit) const;
	template <typename Visit> void for_each_jump(Visit visit) const;
	// Where the writer's time went since load (debugfs writer_steps).
	const WriterClock &writer_clock() const { return clock_; }
	// The optimizer's staging lists: how many sites wait for a detour
	// and for a jump, and whether the lists hold exactly the sites in
	// those states (the host tests check it after every test).
	size_t queued_sites() const { return queued_.size(); }
	size_t waiting_sites() const { return waiting_.size(); }
	bool staging_lists_consistent() const;
	// Unregisters everything left (module exit).
	void clear();
	// Reads text with okprobe's own breakpoints and jumps replaced by the
	// original bytes.
	size_t read_original_text(uint64_t address, uint8_t *buffer, size_t size) const;
	// Whether a lost site lies in [start, start + size): bytes okprobe
	// cannot account for, so no proof may read that function.
	bool lost_text_within(uint64_t start, uint64_t size) const;
	// Why no jump could replace a breakpoint at address (the plan a site
	// there has or would get, and the probes inside its region), or
	// nullptr. The sysctl is not asked: this is about the text.
	const char *planned_jump_refusal(uint64_t address) const;

	// ---- Handler (breakpoint context: lock-free, no allocation) ----

	Site *lookup(uint64_t address) const { return sites_.lookup(address); }
	// The site whose trapping copy ends at address (its post trap).
	Site *post_trap_site(uint64_t address) const { return post_traps_.lookup(address); }
	// The site whose end-anchored region starts at address (its guard).
	Site *region_start_site(uint64_t address) const { return region_starts_.lookup(address); }
	// The probes that take part in one hit, chosen once when the
	// breakpoint traps: a probe enabled, disabled or unregistered
	// meanwhile gets both of its handlers for that hit or neither. The
	// structs stay valid for the whole hit: unregistering waits for a
	// grace period, and a hit (int3 handler, the trapping copy with
	// interrupts off, the post trap) is one RCU read-side section.
	struct HitProbes {
		okprobe *probes[max_probes_per_site];
		int count;
	};
	// Collects the active probes and counts a hit for each.
	static void start_hit(Site &site, HitProbes &hit);
	// Runs their pre_handlers (and args_handlers, with address as the
	// record's ip). Returns true when a pre_handler moved the ip itself
	// (the probed instruction is then skipped).
	static bool run_pre_handlers(const HitProbes &hit, pt_regs *regs, uint64_t address);
	static void run_post_handlers(const HitProbes &hit, pt_regs *regs);
	// Whether one of them has a post_handler (the hit cannot boost).
	static bool wants_post_handlers(const HitProbes &hit);
	// A hit while a handler already ran on this CPU: counted in nmissed,
	// not run; a counting probe's is a hit like any other.
	static void count_missed(Site &site);
	// An optimized hit (no post_handler can be active): counts a hit for
	// each active probe and runs its pre_handler (or args_handler); every
	// one runs, whatever they return, as the kernel's opt_pre_handler()
	// does.
	static void run_optimized_hit(Site &site, pt_regs *regs);
	// An argument-only detour's hit: the same for the args_handlers,
	// over the record the detour pushed.
	static void run_args_hit(Site &site, okprobe_args &record);
	// A site's only probe when it is active and has no post_handler (an
	// entry probe as most are), its hit counted; else nullptr. Its hit
	// needs no snapshot: nothing runs after the pre_handler.
	static okprobe *sole_pre_probe(Site &site);
	// The same probe, its hit not counted: what the detour of an x86
	// site calls directly (direct_hit).
	static okprobe *sole_pre_candidate(const Site &site);
	// The site's one active probe, when it has an args_handler: what an
	// argument-only detour calls directly.
	static okprobe *sole_args_candidate(const Site &site);
	// The per-CPU state's storage for the probes of the hit in progress.
	static HitProbes &hit_probes_of(okp_cpu_state &cpu);
	// The site's detour while it waits or jumps (acquire: read after the
	// hit's probe snapshot), or nullptr.
	static const Detour *published_detour(const Site &site) { return site.detour.load(Order::acquire); }

private:
	static bool probe_active(const okprobe *probe);
	// Whether the site's detour may call its one probe itself (its
	// args_handler from an argument-only detour).
	DirectHit direct_hit(const Site &site, bool args_record) const;
	// Opens or closes the site's direct_probe gate from its state now.
	void refresh_direct_probe(Site &site);
	// Before probe joins the site: takes its jump out where the probe could
	// not run from it (a post_handler, a breakpoint asked for, a handler of
	// pt_regs at an argument-only detour).
	void leave_jump_for(Site &site, const okprobe &probe);
	// update_site's work; update_site then refreshes the gate.
	void update_site_state(Site &site, bool defer_detour);
	// Whether the site's detour should be argument-only (Detour::args_record).
	bool args_detour_wanted(const Site &site) const;
	// Whether the site's detour is of another kind than it should be.
	bool detour_kind_stale(const Site &site) const;
	bool should_be_armed(const Site &site) const;
	const char *jump_refusal(const Site &site) const;
	// Writes / removes the site's breakpoint (the text write includes its
	// CPU sync) and keeps patched_bytes up to date.
	void arm(Site &site);
	void disarm(Site &site);
	// Writes the arm batch's breakpoints (each only over the original
	// instruction still), one synchronization for all.
	void write_pending_arms();
	// The breakpoints of the probes' sites that no longer need one, out
	// in one text write (disable_probes).
	void take_out_breakpoints(okprobe *const *probes, size_t count);
	// Puts the site on the batch's pending list.
	void defer_arm(Site &site);
	// Arms / disarms entry sites through ftrace, a pass of ftrace per
	// ops for all of them (one at a time when memory is short or a pass
	// is refused, to find which site ftrace refuses).
	void arm_ftrace_sites(Site *const *sites, size_t count);
	// One ops' sites: all in one pass, or, refused, each half again.
	void arm_ftrace_halves(Site *const *sites, uint64_t *addresses, size_t count, int ipmodify);
	void disarm_ftrace_sites(Site *const *sites, size_t count);
	void refuse_ftrace_arm(Site &site, int error);
	// Arms or disarms the site and moves its jump toward what it should
	// be. defer_detour: a detour to build is left to the optimizer.
	void update_site(Site &site, bool defer_detour = false);
	void set_queued(Site &site, bool queued)
	{
		if (queued)
			queued_.push_back(site);
		else
			queued_.remove(site);
	}
	void update_all_sites();
	void update_sites_before(uint64_t address);
	// One arch::optimize for the batch, then each site's new state.
	void optimize_batch(Site *const *batch, size_t count);
	void enter_waiting(Site &site);
	// OKPROBE_FLAG_OPTIMIZED of each probe follows the site's jump.
	static void show_optimized(Site &site);
	// After an arch write: a site the arch marked lost is reported once
	// (one log line, OKPROBE_FLAG_LOST on its probes) and pins the module.
	void settle_lost(Site &site);
	// A lost site okprobe may forget: its text is back to the original (or
	// gone), so nothing leads into okprobe's copies any more.
	bool lost_text_released(Site &site);
	void leave_jump(Site &site);
	// The breakpoint is back (or the site is going): the detour is
	// unpublished and freed after the next grace periods.
	void retire_detour(Site &site);
	void free_retired_detours(uint64_t up_to_generation);
	// The caller holds the claim on checked.function: a site made owns it
	// (released when it is retired or gone); on failure the caller gives
	// it back.
	Result<Site *> create_site(const Registration &checked);
	// A new site for a checked registration outside ftrace: the function
	// claimed from the kernel's kprobes, the proof made again under the
	// claim, the jumps covering the address taken out, the site made (the
	// claim is the site's, or given back on failure).
	Result<Site *> claim_and_create_site(const ProbeRequest &request, const Registration &checked,
					     const OriginalText &original, InstructionRules rules);
	// unregister_probes' steps: every probe out of its slot (the sites
	// left, chained through work.next; *unknown counts the probes the
	// table does not hold); the emptied sites' jumps, breakpoints and
	// ftrace entries out of the text, a pass each; lost sites whose text
	// is back, onto dying (true when there were any).
	Site *detach_probes(okprobe *const *probes, size_t count, size_t *unknown);
	void take_out_emptied(Site *touched);
	bool reap_released_lost(Site *&dying);
	// A site ftrace enters (checked.via_ftrace): nothing of the arch's,
	// no claim (okprobe writes no byte of the function).
	Result<Site *> create_ftrace_site(const Registration &checked);
	// An ftrace site's arming: through the ops that may change the ip
	// when one of its probes has a post_handler (as kprobes on ftrace).
	static bool wants_ipmodify(const Site &site);
	// report_refusal: a refused arm is logged (the caller that refuses a
	// registration or an enable says why itself).
	void update_ftrace_site(Site &site, bool report_refusal = true);
	// update_site for a registration or an enable, which refuse their
	// probe when ftrace refuses its entry: that errno, or 0.
	int update_site_refusing(Site &site);
	static void release_function(Site &site);
	// Why another site keeps site's planned jump out (a probe inside its
	// region, or an overlapping region), or nullptr.
	const char *region_conflict(const Site &site) const;
	// A new site's end-anchored region: its first bytes kept, its start
	// free in region_starts_; else the site gets no jump (why not).
	const char *behind_refusal(const Site &site, uint8_t (&original)[max_jump_region_behind]) const;
	void keep_bytes_behind(Site &site);
	// Out of the handler's indexes by address (its own and its region's
	// start): freed only after a grace period from here.
	void unpublish(Site &site);
	// The bytes okprobe may have written at and before the site.
	static size_t patched_extent(const Site &site)
	{
		return site.patched_bytes + (site.patched_behind.load(Order::relaxed) ? site.jump_region_behind : 0);
	}
	// After the grace periods: the site out of the post-trap table, its
	// arch part released, freed.
	void free_site(Site *site);
	// Where the site's trapping copy post-traps (its post_traps_ key).
	static uint64_t post_trap_of(const Site &site);
	// A site just made for a registration that then failed: out of every
	// index, freed after a grace period.
	void abandon_new_site(Site *site);
	static void retire_storage(AddressTable<Site>::Storage *old, void *context);
	// For the writer's own indexes, which no handler reads.
	static void free_storage_now(AddressTable<Site>::Storage *old, void *context);

	// The list and the writer's indexes: every site (gone ones
	// included) in registration order, by granule of text (for the
	// range questions: neighbours of a jump, okprobe's bytes in a read),
	// and by the probes it holds. O(1) per site, so a registration costs
	// the same with 10 or 10,000 probes.
	// false when the index cannot grow (out of memory).
	bool append(Site *site);
	void unlink(Site *site);
	template <typename Visit> void for_each_site_in(uint64_t start, uint64_t end, Visit visit) const;

	AddressTable<Site> sites_; // live (not gone) sites by address
	// Sites with a trapping copy, by the address of its post trap (the
	// breakpoint after the copied instruction); an entry goes only when
	// the site is freed, since a CPU may run the copy until then.
	AddressTable<Site> post_traps_;
	// Sites with an end-anchored jump, by their region's start (where
	// their guard breakpoint goes); an entry goes when the site is freed,
	// as a CPU may trap on the guard until then.
	AddressTable<Site> region_starts_;
	Site *first_ = nullptr, *last_ = nullptr; // every site, gone ones included
	size_t site_count_ = 0;
	// The optimizer's staging lists: a pass walks these, not every site
	// (at 10,000 sites, three walks of all of them a pass made each
	// registration slower than the last).
	QueuedSites queued_;
	WaitingSites waiting_;
	AddressTable<Site> by_granule_; // (address >> granule_shift) + 1: a chain's head
	AddressTable<Site> by_probe_;	// a registered okprobe's address: its site
	Atomic<bool> all_enabled_{true};
	// Withdrawn detours, newest first, until their grace periods end.
	Detour *retired_detours_ = nullptr;
	// Lost sites still pinning the module (lost_pinned set).
	size_t lost_pinned_ = 0;
	// The arm batch (begin_arm_batch): sites whose breakpoint is not yet
	// in the text, or whose entry not yet in ftrace's filter, newest
	// first.
	bool batching_arms_ = false;
	Site *pending_arms_ = nullptr;
	size_t pending_arm_count_ = 0;
	// The batch's first ftrace refusal: errno, the site, why.
	int batch_refusal_ = 0;
	const char *batch_refused_where_ = nullptr;
	const char *batch_refused_why_ = nullptr;
	WriterClock clock_;
	// Bumped by optimizer_begin: stamps what a grace period covers.
	uint64_t generation_ = 1;
};

// Sites whose address is in one 64-byte granule of text share a chain: a
// range question looks at the chains of the granules it covers.
constexpr unsigned granule_shift = 6;
// A wider range (a module's text going away) walks the list instead.
constexpr uint64_t max_indexed_range = uint64_t(1) << 16;

template <typename Visit> void ProbeTable::for_each_site_in(uint64_t start, uint64_t end, Visit visit) const
{
	if (end <= start)
		return;
	if (end - start > max_indexed_range) {
		for (Site *site = first_; site; site = site->next)
			if (site->address >= start && site->address < end)
				visit(*site);
		return;
	}
	for (uint64_t granule = start >> granule_shift; granule <= (end - 1) >> granule_shift; ++granule)
		for (Site *site = by_granule_.lookup(granule + 1); site; site = site->granule_next)
			if (site->address >= start && site->address < end)
				visit(*site);
}

template <typename Visit> void ProbeTable::for_each_line(Visit visit) const
{
	for (const Site *site = first_; site; site = site->next) {
		for (int i = 0; i < max_probes_per_site; ++i) {
			const okprobe *probe = site->probe_at(i);
			if (!probe)
				continue;
			ListLine line;
			line.address = site->address;
			line.description = site->description;
			line.hits = static_cast<unsigned long>(hits_of(*site, i));
			line.missed = AtomicRef(probe->nmissed).load(Order::relaxed);
			line.flags = AtomicRef(probe->flags).load(Order::relaxed);
			line.optimized = site->jump == JumpState::optimized && !site->is_lost();
			line.ftrace = site->via_ftrace;
			line.past_ftrace = site->past_ftrace;
			line.probe = probe;
			visit(line);
		}
	}
}

template <typename Visit> void ProbeTable::for_each_jump(Visit visit) const
{
	for (const Site *site = first_; site; site = site->next) {
		JumpLine line;
		line.address = site->address;
		line.description = site->description;
		line.state = site->jump_queued() ? JumpState::waiting : site->jump;
		const char *lost = site->lost.load(Order::relaxed);
		const Detour *detour = site->current_detour();
		line.lost = lost != nullptr;
		line.ftrace = site->via_ftrace;
		line.why = lost ? lost : site->unoptimized_why;
		line.region_length = site->jump_refusal ? 0 : site->jump_region_behind + site->jump_region_length;
		line.region_behind = site->jump_refusal ? 0 : site->jump_region_behind;
		line.detour_size = detour ? detour->size : 0;
		line.args_detour = detour && detour->args_record;
		visit(line);
	}
}

// The module's probe table (src/core/probe_api.cpp).
extern ProbeTable registered_probes;

// Inlined into both hit paths: as a call it cost a fifth more.
OKP_HANDLER_PATH [[gnu::always_inline]] inline okprobe *ProbeTable::sole_pre_candidate(const Site &site)
{
	if (site.probe_slots.load(Order::acquire) != 1)
		return nullptr;
	okprobe *probe = site.probes[0].load(Order::acquire);
	if (!probe_active(probe) || probe->post_handler || !probe->pre_handler)
		return nullptr;
	return probe;
}

inline okprobe *ProbeTable::sole_args_candidate(const Site &site)
{
	if (site.probe_slots.load(Order::acquire) != 1)
		return nullptr;
	okprobe *probe = site.probes[0].load(Order::acquire);
	return probe_active(probe) && probe->args_handler ? probe : nullptr;
}

OKP_HANDLER_PATH [[gnu::always_inline]] inline okprobe *ProbeTable::sole_pre_probe(Site &site)
{
	okprobe *probe = sole_pre_candidate(site);
	if (probe)
		site.hits[0].fetch_add(1, Order::relaxed);
	return probe;
}

inline ProbeTable::HitProbes &ProbeTable::hit_probes_of(okp_cpu_state &cpu)
{
	static_assert(sizeof(cpu.hit_probes) == sizeof(HitProbes::probes));
	static_assert(offsetof(okp_cpu_state, hit_count) ==
		      offsetof(okp_cpu_state, hit_probes) + offsetof(HitProbes, count));
	return *reinterpret_cast<HitProbes *>(&cpu.hit_probes);
}

// What registration and the jump planner read: the kernel's text with
// okprobe's own patches read as the original bytes, and lost text counted
// as someone else's change.
class TableText final : public OriginalText {
public:
	explicit TableText(const ProbeTable &table) : table_(table) {}
	size_t read(uint64_t address, uint8_t *buffer, size_t size) const override
	{
		return table_.read_original_text(address, buffer, size);
	}
	const char *changed_by_others(uint64_t start, uint64_t size) const override
	{
		if (table_.lost_text_within(start, size))
			return "okprobe lost text in the function: someone else changed what it wrote";
		return okp_glue_foreign_probe(start, size);
	}

private:
	const ProbeTable &table_;
};

} // namespace okp
