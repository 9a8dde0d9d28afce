// SPDX-License-Identifier: GPL-2.0
// The hit path, for every architecture: what okprobe does when one of its
// breakpoints traps, when a trapping copy's post trap arrives, and when a
// detour calls in. The arch answers only the questions of its port
// (core/arch_port.hpp: where the pc is, how the instruction runs, how
// interrupts are blocked); the order of everything else is decided here,
// once, as kernel/kprobes.c's aggr_pre_handler and opt_pre_handler do over
// arch/*/kernel/kprobes/core.c.
//
// Context: the breakpoint trap (NMI-like) or a detour's call with preemption
// off. No lock, no allocation; everything here is OKP_HANDLER_PATH.
//
// One CPU's hit (okp_cpu_state):
//   idle          active_site == nullptr
//   in handlers   active_site == the site: its pre_handlers run. Any probe
//                 hit now (in a handler, or on the way to the post trap) is
//                 only counted in nmissed, and its instruction runs
//                 without handlers
//   stepping      active_site == the site, its trapping copy runs with
//                 interrupts off; the post trap runs the post_handlers
//                 and the CPU is idle again
#include "core/args_record.hpp"
#include "core/core_api.h"
#include "core/handler_path.hpp"
#include "core/probe_table.hpp"
#include "core/probe_table_parts.hpp"

#include <okprobe.h>

namespace okp {
namespace {

OKP_HANDLER_PATH pt_regs *as_pt_regs(arch::Registers &regs)
{
	return reinterpret_cast<pt_regs *>(&regs);
}

OKP_HANDLER_PATH arch::Registers &as_registers(pt_regs *regs)
{
	return *reinterpret_cast<arch::Registers *>(regs);
}

// Runs the displaced instruction without handlers. While a detour is
// published its copy runs the whole region: a task must not newly stop
// inside the region once it waits for its jump (or, while the jump is
// being taken out, find a half-restored region). A site that cannot boost
// runs its trapping copy with interrupts as they are; its post trap then
// only moves the pc on. Returns true when it sent the CPU there.
OKP_HANDLER_PATH bool execute_without_handlers(const Site &site, arch::Registers &regs)
{
	if (const Detour *detour = ProbeTable::published_detour(site)) {
		arch::continue_at(regs, detour->copy);
	} else if (arch::emulated(site)) {
		arch::emulate(site, regs);
	} else if (const uint64_t copy = arch::boosted_copy(site)) {
		arch::continue_at(regs, copy);
	} else {
		arch::continue_at(regs, arch::trapping_copy(site));
		return true;
	}
	return false;
}

// After the pre_handlers of a breakpoint hit (none moved the pc): where
// the CPU goes on, and the post_handlers of probes (the emulated
// instruction's at once, a trapping copy's at its post trap).
OKP_HANDLER_PATH [[gnu::always_inline]] inline int leave_breakpoint(Site &site, arch::Registers &regs,
								    okp_cpu_state &cpu,
								    const ProbeTable::HitProbes &probes,
								    const Detour *detour, bool post_handlers)
{
	if (detour && !post_handlers) {
		arch::continue_at(regs, detour->copy); // waiting for the jump
		cpu.active_site = nullptr;
		return 1;
	}
	if (arch::emulated(site)) {
		arch::emulate(site, regs);
		ProbeTable::run_post_handlers(probes, as_pt_regs(regs));
		cpu.active_site = nullptr;
		return 1;
	}
	if (const uint64_t copy = arch::boosted_copy(site); copy && !post_handlers) {
		arch::continue_at(regs, copy); // the copy jumps back by itself
		cpu.active_site = nullptr;
		return 1;
	}
	// The trapping copy, with interrupts off until its post trap.
	cpu.saved_flags = arch::block_interrupts(regs);
	arch::continue_at(regs, arch::trapping_copy(site));
	return 1;
}

OKP_HANDLER_PATH int breakpoint_hit(Site &site, arch::Registers &regs, okp_cpu_state &cpu)
{
	if (site.is_lost()) {
		// okprobe's breakpoint is still there, whatever else changed:
		// run the instruction it displaced, call no handler.
		execute_without_handlers(site, regs);
		return 1;
	}
	if (cpu.active_site) {
		// A probe hit inside a handler, or in the trap entry on the way
		// to the active hit's post trap: count it, run the instruction,
		// call no handler. A trapping copy of the active site itself
		// post-traps before the active hit's own copy does.
		ProbeTable::count_missed(site);
		if (execute_without_handlers(site, regs) && &site == cpu.active_site)
			++cpu.nested_copies;
		return 1;
	}
	if (!registered_probes.all_enabled()) {
		// Disarming raced with this hit.
		execute_without_handlers(site, regs);
		return 1;
	}
	cpu.active_site = &site;
	ProbeTable::HitProbes &probes = ProbeTable::hit_probes_of(cpu);
	// The common case, one probe with a pre_handler only (tools/trace-hit:
	// the snapshot and its loops were 35 of okprobe's 141 instructions of
	// a trap): the post trap of a trapping copy finds no probe to run.
	if (okprobe *sole = ProbeTable::sole_pre_probe(site)) {
		probes.count = 0;
		// Read after the probe, as after the snapshot below.
		const Detour *detour = ProbeTable::published_detour(site);
		if (sole->pre_handler(sole, as_pt_regs(regs))) {
			cpu.active_site = nullptr;
			return 1;
		}
		return leave_breakpoint(site, regs, cpu, probes, detour, false);
	}
	ProbeTable::start_hit(site, probes);
	// Read after the snapshot: a probe with a post_handler is published
	// only after the detour is withdrawn.
	const Detour *detour = ProbeTable::published_detour(site);
	if (ProbeTable::run_pre_handlers(probes, as_pt_regs(regs), site.address)) {
		// A pre_handler moved the pc itself: the instruction is skipped.
		cpu.active_site = nullptr;
		return 1;
	}
	return leave_breakpoint(site, regs, cpu, probes, detour, ProbeTable::wants_post_handlers(probes));
}

OKP_HANDLER_PATH int post_trap_hit(Site &site, arch::Registers &regs, okp_cpu_state &cpu)
{
	arch::continue_at(regs, arch::next_instruction(site));
	if (cpu.active_site != &site)
		return 1; // a copy run without handlers
	if (cpu.nested_copies) {
		--cpu.nested_copies; // a nested hit's, not the active one
		return 1;
	}
	arch::restore_interrupts(regs, cpu.saved_flags);
	cpu.saved_flags = 0;
	ProbeTable::run_post_handlers(ProbeTable::hit_probes_of(cpu), as_pt_regs(regs));
	cpu.active_site = nullptr;
	return 1;
}

} // namespace

// ---- The probe table's handler side ----------------------------------------

OKP_HANDLER_PATH bool ProbeTable::probe_active(const okprobe *probe)
{
	return probe && !(load_flags(probe) & inactive_flags);
}

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

OKP_HANDLER_PATH bool ProbeTable::run_pre_handlers(const HitProbes &hit, pt_regs *regs, uint64_t address)
{
	for (int i = 0; i < hit.count; ++i) {
		okprobe *probe = hit.probes[i];
		if (probe->args_handler)
			run_args_handler(probe, as_registers(regs), address);
		else if (probe->pre_handler && probe->pre_handler(probe, regs))
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
		if (probe->args_handler)
			run_args_handler(probe, as_registers(regs), site.address);
		else if (probe->pre_handler)
			probe->pre_handler(probe, regs);
	}
}

OKP_HANDLER_PATH void ProbeTable::run_args_hit(Site &site, okprobe_args &record)
{
	const int slots = site.probe_slots.load(Order::acquire);
	for (int i = 0; i < slots && i < max_probes_per_site; ++i) {
		okprobe *probe = site.probes[i].load(Order::acquire);
		// A probe of pt_regs is published only after the argument-only
		// detour is withdrawn: one seen here came in while this CPU was
		// already on its way, and the hit is not its.
		if (!probe_active(probe) || !probe->args_handler)
			continue;
		site.hits[i].fetch_add(1, Order::relaxed);
		probe->args_handler(probe, &record);
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

using namespace okp;

extern "C" OKP_HANDLER_PATH int okp_core_breakpoint(void *raw_regs)
{
	arch::Registers &regs = *static_cast<arch::Registers *>(raw_regs);
	const uint64_t address = arch::trapped_address(regs);
	okp_cpu_state &cpu = *okp_glue_cpu_state();
	// An ftrace site has no breakpoint of okprobe's: an int3 or ebreak
	// there is someone else's (kgdb's, say).
	if (Site *site = registered_probes.lookup(address); site && !site->via_ftrace)
		return breakpoint_hit(*site, regs, cpu);
	if (Site *site = registered_probes.post_trap_site(address))
		return post_trap_hit(*site, regs, cpu);
	// The guard of an end-anchored jump going in or out: the task runs
	// the region from the detour's start (its hit is the detour's),
	// never from inside the region.
	if (Site *site = registered_probes.region_start_site(address);
	    site && site->patched_behind.load(Order::acquire))
		if (const Detour *detour = ProbeTable::published_detour(*site)) {
			arch::continue_at(regs, detour->code);
			return 1;
		}
	// A breakpoint removed while this CPU was already trapping on it: the
	// text holds the original instruction again, so run it from the start
	// (as kprobes does). A breakpoint still present is someone else's
	// (the kernel's own users handle theirs before okprobe is asked).
	if (!arch::breakpoint_in_text(address)) {
		arch::continue_at(regs, address);
		return 1;
	}
	return 0;
}

namespace {

// Whether a detour's hit runs handlers: not inside another hit on this CPU
// (then it is missed), nor racing with disarming everything, nor at lost
// text.
OKP_HANDLER_PATH [[gnu::always_inline]] inline bool detour_hit_runs(Site &site, const okp_cpu_state *cpu)
{
	if (cpu->active_site) {
		ProbeTable::count_missed(site);
		return false;
	}
	return registered_probes.all_enabled() && !site.is_lost();
}

} // namespace

// An optimized hit, from the detour (preemption off): the handlers see regs
// as a breakpoint hit presents them. A pre_handler's change of the pc is
// ignored: the detour goes on with the region's copy, as the kernel's
// opt_pre_handler() does, and every pre_handler runs whatever the others
// return. The fast path: no snapshot (no post_handler takes part).
extern "C" OKP_HANDLER_PATH [[gnu::flatten]] void okp_core_optimized_hit(void *raw_site, void *raw_regs,
									 struct okp_cpu_state *cpu)
{
	Site &site = *static_cast<Site *>(raw_site);
	arch::Registers &regs = *static_cast<arch::Registers *>(raw_regs);
	if (!detour_hit_runs(site, cpu))
		return;
	cpu->active_site = &site;
	arch::present_optimized_hit(site, regs);
	ProbeTable::run_optimized_hit(site, as_pt_regs(regs));
	cpu->active_site = nullptr;
}

// An argument-only detour's hit (preemption off): the record is the
// handlers', as the detour pushed it; the rest as okp_core_optimized_hit.
extern "C" OKP_HANDLER_PATH [[gnu::flatten]] void okp_core_args_hit(void *raw_site, okprobe_args *record,
								    struct okp_cpu_state *cpu)
{
	Site &site = *static_cast<Site *>(raw_site);
	if (!detour_hit_runs(site, cpu))
		return;
	cpu->active_site = &site;
	ProbeTable::run_args_hit(site, *record);
	cpu->active_site = nullptr;
}

namespace {

// An entry hit with several probes, or one with a post_handler: the
// snapshot, then the handlers as around a breakpoint. Out of line, so
// that the common case below saves no registers for it.
[[gnu::noinline]] OKP_HANDLER_PATH void ftrace_hit_with_snapshot(Site &site, arch::Registers &regs, okp_cpu_state &cpu,
								 uint64_t address, uint64_t resume)
{
	ProbeTable::HitProbes &probes = ProbeTable::hit_probes_of(cpu);
	ProbeTable::start_hit(site, probes);
	arch::present_hit_at(regs, address);
	if (!ProbeTable::run_pre_handlers(probes, as_pt_regs(regs), address)) {
		arch::continue_at(regs, address + site.ftrace.length);
		ProbeTable::run_post_handlers(probes, as_pt_regs(regs));
		arch::continue_at(regs, resume);
	}
}

[[gnu::noinline]] OKP_HANDLER_PATH void ftrace_hit_missed(Site &site)
{
	ProbeTable::count_missed(site);
}

} // namespace

// ftrace at a function's entry (okprobe's ftrace_ops, preemption off): as
// kprobes on ftrace, the handlers see regs as a breakpoint hit at the call
// site shows them; a pre_handler that returns nonzero has set where the
// function resumes, otherwise the post_handlers see the pc past the call
// site and ftrace gets its own pc back.
extern "C" OKP_HANDLER_PATH [[gnu::flatten]] void okp_core_ftrace_hit(unsigned long address, void *raw_regs,
								      okp_cpu_state *cpu)
{
	Site *site = registered_probes.lookup(address);
	if (!site || !site->via_ftrace)
		return; // disarmed under this call
	if (!raw_regs || cpu->active_site) {
		// Inside another hit's handlers on this CPU (or no registers).
		ftrace_hit_missed(*site);
		return;
	}
	if (!registered_probes.all_enabled())
		return;
	arch::Registers &regs = *static_cast<arch::Registers *>(raw_regs);
	cpu->active_site = site;
	const uint64_t resume = arch::program_counter(regs);
	// The common case, one entry probe with a pre_handler only: no
	// snapshot of the site's probes, nothing after the pre_handler.
	if (okprobe *sole = ProbeTable::sole_pre_probe(*site)) {
		arch::present_hit_at(regs, address);
		if (!sole->pre_handler(sole, as_pt_regs(regs)))
			arch::continue_at(regs, resume);
	} else {
		ftrace_hit_with_snapshot(*site, regs, *cpu, address, resume);
	}
	cpu->active_site = nullptr;
}
