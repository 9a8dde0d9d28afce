// SPDX-License-Identifier: GPL-2.0
// What the probe table's own files share and nothing else includes: the
// probe flag helpers, the jump region's bounds, and the two batches that
// take many sites' jumps (JumpsOut) and breakpoints (BreakpointsOut) out of
// the text with one synchronization. The table's files: probe_table.cpp
// (registration and the sites' lifecycle), site_arming.cpp (breakpoints in
// and out), jump_optimizer.cpp (detours, jumps and the optimizer's passes),
// ftrace_sites.cpp (entries ftrace calls), lost_text.cpp (text okprobe no
// longer owns, the text before okprobe), and hit_path.cpp (the handler side).
#pragma once

#include "core/errno.hpp"
#include "core/patch_batch.hpp"
#include "core/probe_table.hpp"

#include <okprobe.h>

namespace okp {

inline constexpr Refusal out_of_memory = refuse(error::enomem, "out of memory");
inline constexpr unsigned int inactive_flags = OKPROBE_FLAG_DISABLED | OKPROBE_FLAG_GONE;

[[gnu::always_inline]] inline unsigned int load_flags(const okprobe *probe)
{
	return AtomicRef(probe->flags).load(Order::acquire);
}

inline void set_flag(okprobe *probe, unsigned int flag, bool on)
{
	const unsigned int flags = load_flags(probe);
	AtomicRef(probe->flags).store(on ? flags | flag : flags & ~flag, Order::release);
}

// OKPROBE_FLAG_OPTIMIZED follows the probe's jump; an okretprobe at the
// exits says it once all its exits' probes do (the glue counts).
inline void show_probe_optimized(okprobe *probe, bool optimized)
{
	if (!!(load_flags(probe) & OKPROBE_FLAG_OPTIMIZED) == optimized)
		return;
	set_flag(probe, OKPROBE_FLAG_OPTIMIZED, optimized);
	if (probe->pre_handler == okp_glue_return_exit_hit)
		okp_glue_return_exit_optimized(probe, optimized);
}

// A jump region is at most this long (x86: 4 + 15 bytes; riscv: 8).
inline constexpr uint64_t max_jump_region = 32;
inline constexpr size_t optimizer_batch = 64;

// Why ftrace refused a site's entry (ftrace_sites.cpp).
const char *ftrace_refusal(int error);

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

} // namespace okp
