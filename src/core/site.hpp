// SPDX-License-Identifier: GPL-2.0
// A Site: one probed address, its text before okprobe, the probes that
// share it, and its state in each concern of the probe table (arming, the
// jump and its detour, ftrace entry, lost text, the counting cells), with
// the small helpers the arch and the core use to check the text it owns.
// The table (probe_table.hpp) owns every site; probe_table.hpp describes
// a site's life and states.
#pragma once

#include "core/arch_port.hpp"
#include "core/atomic.hpp"
#include "core/core_api.h"
#include "core/intrusive_list.hpp"

#include <okprobe.h>

namespace okp {

constexpr int max_probes_per_site = 8;

enum class JumpState : uint8_t { breakpoint, waiting, optimized };

// A site's detour buffer (its code lives in the arch's executable pages).
struct Detour {
	uint64_t code = 0;  // the save/call/restore frame, then the copy
	uint64_t entry = 0; // where the patched jump lands: code, or a landing leading there
	uint64_t copy = 0;  // the relocated region: waiting hits continue here
	uint16_t size = 0;  // bytes of code
	// Its frame is struct okprobe_args, not pt_regs: it calls
	// okp_core_args_hit and serves argument-only probes alone
	// (ProbeTable::args_detour_wanted).
	bool args_record = false;
	uint64_t retired_in = 0; // the optimizer generation it was withdrawn in
	Detour *next_retired = nullptr;
};

struct Site;

// The writer's scratch fields of a site, for passes over many sites.
struct SiteWork {
	// unregister_probes' and take_out_breakpoints' worklist: the sites
	// their probes leave, once each.
	Site *next = nullptr;
	bool touched = false;
	// optimize_batch's note of patched_bytes before its write.
	uint8_t patched_before = 0;
};

// A site's place in the table's arm batch (okprobe_register_many).
struct SiteArmBatch {
	// The site's arm waits in the batch: its breakpoint (patched_bytes
	// already counts it), or its entry into ftrace's filter (armed is
	// already set; ftrace.ipmodify says which ops); next chains the batch.
	bool pending = false;
	Site *next = nullptr;
	// Set while a registration of the batch updates the site: only its
	// own entry waits for the batch's pass of ftrace (and fails the
	// batch when refused), not a neighbour's it re-arms.
	bool registering = false;
};

// How ftrace calls a function entry's handlers (Site::via_ftrace).
struct SiteFtrace {
	bool ipmodify = false; // through the ops that may change the ip
	uint8_t length = 0;    // the call site's bytes
	int error = 0;	       // the errno of the last refused arm, or 0
};

struct Site {
	uint64_t address = 0;
	// The text at address before okprobe touched it.
	uint8_t original[max_original_bytes] = {};
	// Published with release once the probe is filled in; handlers load
	// with acquire.
	Atomic<okprobe *> probes[max_probes_per_site];
	// Times each probe's handlers ran (indexed like probes).
	Atomic<unsigned long> hits[max_probes_per_site];
	// 1 + the highest index of probes[] in use: handlers look no further.
	// Raised before a probe is published, lowered after one is removed.
	Atomic<uint8_t> probe_slots;
	// The probe a direct detour may call by itself (core/direct_hit.hpp),
	// or nullptr: probes[0] while it is the site's only probe, active,
	// without a post_handler, the text okprobe's and the table enabled.
	// The writer clears it before any of that changes and sets it again
	// after (ProbeTable::refresh_direct_probe); the detour compares it with
	// the probe it was built for, one load instead of six.
	Atomic<okprobe *> direct_probe;
	// How many bytes at address the arch has replaced (0: disarmed); the
	// registration checks read original[] for them.
	uint8_t patched_bytes = 0;
	bool armed = false;
	bool gone = false;
	// Where the function holding address starts: claimed from the
	// kernel's kprobes (okp_glue_claim_function) while claimed is set.
	uint64_t function = 0;
	bool claimed = false;
	// "symbol+0xoff/0xsize [module]" at registration: still right in the
	// list after the module is gone.
	char description[128] = {};
	// The table's list of every site, in registration order, and the
	// chain of sites in the same granule of text (for_each_site_in). The
	// writer's only.
	Site *next = nullptr, *prev = nullptr;
	Site *granule_next = nullptr;
	// The writer's scratch space for a pass over several sites.
	SiteWork work;
	// Its place in the table's arm batch (okprobe_register_many).
	SiteArmBatch arm_batch;

	// Jump optimization. detour is published (release) while waiting or
	// optimized; the handler reads it after its probe snapshot.
	Atomic<Detour *> detour;
	// Change it through set_jump(), which keeps the waiting list.
	JumpState jump = JumpState::breakpoint;
	// A breakpoint whose detour the optimizer will build (listed as
	// waiting): on the table's queued list (set_queued()).
	bool jump_queued() const { return queued_link.linked; }
	// The optimizer's staging lists (ProbeTable::queued_, waiting_).
	ListLink<Site> queued_link, waiting_link;
	// The arch's verdict at creation: nullptr when a jump may replace the
	// breakpoint (jump_region_length bytes of text), or why never.
	const char *jump_refusal = nullptr;
	uint8_t jump_region_length = 0;
	// An end-anchored jump (riscv, at an instruction that ends the
	// function's straight line) starts jump_region_behind bytes before
	// address: its region is [jump_region_start(), jump_region_end()).
	// The region's first instruction is then the site's guard: while the
	// jump goes in or comes out, okprobe's breakpoint there sends a task
	// to the detour's start (region_start_site() finds the site by that
	// address), so that none is inside the region when it is rewritten.
	uint8_t jump_region_behind = 0;
	// Those bytes as they were before okprobe, and whether okprobe may
	// have written over them (the guard, the jump): reads of the
	// original text then take them from here. Set (release) before the
	// guard is written, cleared after the original bytes are back: the
	// handler sends a trap at the region's start to the detour only
	// while it is set (anyone else's breakpoint there is theirs).
	uint8_t original_behind[max_jump_region_behind] = {};
	Atomic<bool> patched_behind;
	uint64_t waiting_since = 0; // generation the detour was published in
	// Why the site is not optimized now (nullptr when it is).
	const char *unoptimized_why = nullptr;

	// Why okprobe no longer owns the text at address, or nullptr: before
	// a write the arch found the text not holding what okprobe last left
	// there (someone else changed it), skipped the write and said why
	// (mark_lost). From then on okprobe writes nothing there, runs no
	// handler for the site, and keeps it and its detour while the text may
	// still lead into them (the module stays pinned meanwhile).
	Atomic<const char *> lost;
	bool lost_reported = false;
	bool lost_pinned = false;

	// A function's entry that ftrace calls the handlers at
	// (Registration::via_ftrace): okprobe writes no text there and the
	// site has no arch part and no jump; armed means okprobe's ftrace_ops
	// call okp_core_ftrace_hit() for address (through the ops that may
	// change the ip when ftrace.ipmodify), or will once the arm batch it
	// waits in is written (arm_batch.pending). Set before the site is
	// published; the handler reads it.
	bool via_ftrace = false;
	SiteFtrace ftrace;
	// A probe asked for the function's entry went past its ftrace call
	// site to here (Registration::past_ftrace): listed as such.
	bool past_ftrace = false;

	// A counting probe's site (OKPROBE_FLAG_COUNTER; it has the site to
	// itself) has the per-CPU cells its counting detour adds to
	// (okp_glue_counter_cells_alloc), owned by the site and set before
	// its probe is published; any other site has none. Its hits are
	// hits[] (the breakpoint, ftrace and full-detour paths) plus the cells.
	unsigned long counter_cells = 0;

	// The architecture's part: its instruction, copies and jump plan.
	arch::SiteData arch;

	bool counting() const { return counter_cells != 0; }
	uint64_t jump_region_start() const { return address - jump_region_behind; }
	uint64_t jump_region_end() const { return address + jump_region_length; }
	// Whether okprobe lost the text (relaxed: writer and handlers alike).
	bool is_lost() const { return lost.load(Order::relaxed) != nullptr; }
	// The writer's view of the detour (it alone stores it).
	Detour *current_detour() const { return detour.load(Order::relaxed); }
	okprobe *probe_at(int index) const { return probes[index].load(Order::relaxed); }
	// The writer's walk over probes[] (nullptr for a free slot).
	struct AttachedProbes {
		const Atomic<okprobe *> *first, *last;
		struct Iterator {
			const Atomic<okprobe *> *at;
			okprobe *operator*() const { return at->load(Order::relaxed); }
			Iterator &operator++()
			{
				++at;
				return *this;
			}
			bool operator!=(const Iterator &other) const { return at != other.at; }
		};
		Iterator begin() const { return {first}; }
		Iterator end() const { return {last}; }
	};
	AttachedProbes attached_probes() const { return {probes, probes + max_probes_per_site}; }
	int used_slots() const { return probe_slots.load(Order::relaxed); }
};

// Whether the length bytes of text at address are exactly bytes.
inline bool text_holds(uint64_t address, const uint8_t *bytes, size_t length)
{
	uint8_t now[max_original_bytes];
	return length <= sizeof(now) && okp_glue_read_text(address, now, length) == length &&
	       __builtin_memcmp(now, bytes, length) == 0;
}

// For the arch, before a write it then skips: the text is not okprobe's.
inline void mark_lost(Site &site, const char *why)
{
	site.direct_probe.store(nullptr, Order::relaxed);
	if (!site.is_lost())
		site.lost.store(why, Order::relaxed);
}

// Sites an arch's optimize and unoptimize patch per text write (bounded by
// the stack their patch lists take).
constexpr size_t text_batch = 16;

// Whether the length bytes of text at site hold only what okprobe left
// there for a waiting site: its breakpoint (breakpoint_length bytes), then
// the original bytes. Anything else must stay as it is.
inline bool holds_breakpoint_over_original(const Site &site, const uint8_t *breakpoint, size_t breakpoint_length,
					   size_t length)
{
	uint8_t now[max_original_bytes];
	return length <= sizeof(now) && breakpoint_length <= length &&
	       okp_glue_read_text(site.address, now, length) == length &&
	       __builtin_memcmp(now, breakpoint, breakpoint_length) == 0 &&
	       __builtin_memcmp(now + breakpoint_length, site.original + breakpoint_length,
				length - breakpoint_length) == 0;
}

// The sites whose detour is published and whose jump the optimizer is to
// write (JumpState::waiting), in the order they began to wait.
using WaitingSites = IntrusiveList<Site, &Site::waiting_link>;
// The breakpoints whose detour the optimizer is to build.
using QueuedSites = IntrusiveList<Site, &Site::queued_link>;

// Sets site's jump state and keeps waiting in step with it.
inline void set_jump(Site &site, JumpState state, WaitingSites &waiting)
{
	site.jump = state;
	if (state == JumpState::waiting)
		waiting.push_back(site);
	else
		waiting.remove(site);
}

} // namespace okp
