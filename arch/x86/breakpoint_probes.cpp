// SPDX-License-Identifier: GPL-2.0
// x86-64 breakpoint probes: the arch half of a Site (the analysed
// instruction and its out-of-line slot), the slot pool, and the int3
// handler. The probe lifecycle is src/core/probe_table.cpp's.
//
// Ownership: sites, the post-trap table and the slot pool are changed only
// by the probe table's writer (under the glue's probe mutex); the handler
// reads them with atomic loads and no lock. A site's slot is written before
// the site is published; its post-trap entry goes away only in
// retire_site(), after the grace periods, because a CPU may be executing
// the trapping copy (interrupts off) until its post trap arrives.
#include "core/address_table.hpp"
#include "core/core_api.h"
#include "core/probe_table.hpp"
#include "x86/out_of_line.hpp"
#include "x86/probe_rules.hpp"

#include <okprobe.h>

namespace okp::x86 {
namespace {

constexpr uint8_t int3 = 0xcc;
constexpr unsigned long page_size = 4096;
// Each slot holds two copies: [0, 32) ends in a jmp back (boosted runs and
// runs without handlers), [32, 64) ends in int3 (runs before a post_handler).
constexpr unsigned long slot_bytes = 2 * slot_size;
constexpr unsigned long slots_per_page = page_size / slot_bytes;
constexpr int max_slot_pages = 64;

struct BreakpointSite : Site {
	Analysis analysis;
	uint64_t slot = 0; // 0 for emulated instructions
};

// Executable slots, a page at a time.
struct SlotPool {
	uint8_t *pages[max_slot_pages] = {};
	uint64_t used[max_slot_pages] = {}; // bit i: slot i of the page is taken

	uint64_t take()
	{
		for (int p = 0; p < max_slot_pages; ++p) {
			if (!pages[p]) {
				pages[p] = static_cast<uint8_t *>(okp_glue_exec_page_alloc());
				if (!pages[p])
					return 0;
			}
			for (unsigned long i = 0; i < slots_per_page; ++i) {
				if (!(used[p] & (1ull << i))) {
					used[p] |= 1ull << i;
					return reinterpret_cast<uint64_t>(pages[p] + i * slot_bytes);
				}
			}
		}
		return 0;
	}

	void give_back(uint64_t slot)
	{
		for (int p = 0; p < max_slot_pages; ++p) {
			const uint64_t base = reinterpret_cast<uint64_t>(pages[p]);
			if (pages[p] && slot >= base && slot < base + page_size)
				used[p] &= ~(1ull << ((slot - base) / slot_bytes));
		}
	}

	void release_all()
	{
		for (int p = 0; p < max_slot_pages; ++p) {
			if (pages[p])
				okp_glue_exec_page_free(pages[p]);
			pages[p] = nullptr;
			used[p] = 0;
		}
	}
};

struct ArchProbes {
	AddressTable<BreakpointSite> post_traps; // by the address of a slot's trailing int3
	SlotPool slots;
	Thunks thunks;
	bool thunks_resolved = false;
};

constinit ArchProbes arch_probes;

void free_retired(AddressTable<BreakpointSite>::Storage *old, void *)
{
	// Handlers may still walk the old storage until a grace period ends.
	okp_glue_synchronize_rcu();
	AddressTable<BreakpointSite>::free_storage(old);
}

void resolve_thunks()
{
	if (arch_probes.thunks_resolved)
		return;
	arch_probes.thunks.return_thunk = okp_glue_lookup_symbol(return_thunk_symbol);
	for (int reg = 0; reg < 16; ++reg) {
		const char *name = indirect_thunk_symbols[reg];
		arch_probes.thunks.indirect_thunk[reg] = name ? okp_glue_lookup_symbol(name) : 0;
	}
	arch_probes.thunks_resolved = true;
}

// Builds both copies of the instruction in the site's slot.
bool write_slot(BreakpointSite &site, const uint8_t *original)
{
	if (site.analysis.execution == Execution::emulate)
		return true;
	site.slot = arch_probes.slots.take();
	if (!site.slot)
		return false;
	uint8_t boosted[slot_size], trapping[slot_size];
	if (!build_slot(site.analysis, original, site.address, site.slot, SlotEnd::jump_back, boosted) ||
	    !build_slot(site.analysis, original, site.address, site.slot + slot_size, SlotEnd::breakpoint, trapping)) {
		arch_probes.slots.give_back(site.slot);
		site.slot = 0;
		return false;
	}
	okp_glue_text_write(site.slot, boosted, slot_size);
	okp_glue_text_write(site.slot + slot_size, trapping, slot_size);
	return true;
}

uint64_t post_trap_address(const BreakpointSite &site)
{
	return site.slot + slot_size + site.analysis.length;
}

// ---- The handler ------------------------------------------------------------

uint64_t read_stack(uint64_t address)
{
	return *reinterpret_cast<const uint64_t *>(address);
}

void write_stack(uint64_t address, uint64_t value)
{
	*reinterpret_cast<uint64_t *>(address) = value;
}

const StackAccess stack = {write_stack, read_stack};

pt_regs *as_pt_regs(Registers &regs)
{
	return reinterpret_cast<pt_regs *>(&regs);
}

// The per-CPU state's storage for the probes of the hit in progress.
ProbeTable::HitProbes &hit_probes_of(okp_cpu_state &cpu)
{
	static_assert(sizeof(cpu.hit_probes) == sizeof(ProbeTable::HitProbes::probes));
	static_assert(offsetof(okp_cpu_state, hit_count) ==
		      offsetof(okp_cpu_state, hit_probes) + offsetof(ProbeTable::HitProbes, count));
	return *reinterpret_cast<ProbeTable::HitProbes *>(&cpu.hit_probes);
}

// Continues at the displaced instruction without running handlers.
void execute_without_handlers(BreakpointSite &site, Registers &regs)
{
	if (site.analysis.execution == Execution::emulate)
		emulate(site.analysis, site.address, regs, stack);
	else
		regs.ip = site.slot; // the boosted copy
}

int breakpoint_hit(BreakpointSite &site, Registers &regs, okp_cpu_state &cpu)
{
	if (cpu.active_site) {
		// A probe hit inside a handler (or between a copy and its post
		// trap): count it, run the instruction, call no handler.
		ProbeTable::count_missed(site);
		execute_without_handlers(site, regs);
		return 1;
	}
	if (!registered_probes.all_enabled()) {
		// Disarming raced with this hit.
		execute_without_handlers(site, regs);
		return 1;
	}
	cpu.active_site = &site;
	ProbeTable::HitProbes &probes = hit_probes_of(cpu);
	ProbeTable::start_hit(site, probes);
	if (ProbeTable::run_pre_handlers(probes, as_pt_regs(regs))) {
		// A pre_handler moved ip itself: the instruction is skipped.
		cpu.active_site = nullptr;
		return 1;
	}
	if (site.analysis.execution == Execution::emulate) {
		emulate(site.analysis, site.address, regs, stack);
		ProbeTable::run_post_handlers(probes, as_pt_regs(regs));
		cpu.active_site = nullptr;
		return 1;
	}
	if (!ProbeTable::wants_post_handlers(probes)) {
		regs.ip = site.slot; // boosted: the copy jumps back by itself
		cpu.active_site = nullptr;
		return 1;
	}
	// The trapping copy, with interrupts off until its post trap.
	cpu.saved_flags = regs.flags & flag::interrupt;
	regs.flags &= ~flag::interrupt;
	regs.ip = site.slot + slot_size;
	return 1;
}

int post_trap_hit(BreakpointSite &site, Registers &regs, okp_cpu_state &cpu)
{
	regs.ip = site.address + site.analysis.length;
	regs.flags |= cpu.saved_flags;
	cpu.saved_flags = 0;
	if (cpu.active_site == &site)
		ProbeTable::run_post_handlers(hit_probes_of(cpu), as_pt_regs(regs));
	cpu.active_site = nullptr;
	return 1;
}

} // namespace
} // namespace okp::x86

// ---- The probe table's arch hooks --------------------------------------------

namespace okp::arch {

using namespace okp::x86;

Site *create_site(uint64_t address, const uint8_t (&original)[max_original_bytes], const char **why)
{
	resolve_thunks();
	BreakpointSite *site = new BreakpointSite;
	if (!site) {
		*why = "out of memory";
		return nullptr;
	}
	site->address = address;
	site->analysis = analyze_instruction(original, max_original_bytes, address, arch_probes.thunks);
	if (!write_slot(*site, original)) {
		delete site;
		*why = "no out-of-line slot within reach";
		return nullptr;
	}
	if (site->slot && !arch_probes.post_traps.insert(post_trap_address(*site), site, free_retired, nullptr)) {
		arch_probes.slots.give_back(site->slot);
		delete site;
		*why = "out of memory";
		return nullptr;
	}
	return site;
}

void arm(Site &site)
{
	okp_glue_text_write(site.address, &int3, 1);
	site.patched_bytes = 1;
}

void disarm(Site &site)
{
	// Only the first byte ever changed; it comes back as it was.
	okp_glue_text_restore(site.address, &int3, site.original, 1);
	site.patched_bytes = 0;
}

void retire_site(Site *generic)
{
	BreakpointSite *site = static_cast<BreakpointSite *>(generic);
	if (site->slot) {
		arch_probes.post_traps.remove(post_trap_address(*site));
		arch_probes.slots.give_back(site->slot);
	}
	delete site;
}

InstructionVerdict probe_rules(const uint8_t *function, size_t size, size_t offset, uint64_t function_address)
{
	return x86::probe_rules(function, size, offset, function_address);
}

void release_resources()
{
	// Every site is retired: no post trap can arrive any more.
	arch_probes.post_traps.destroy();
	arch_probes.slots.release_all();
	arch_probes.thunks_resolved = false;
}

} // namespace okp::arch

using namespace okp;
using namespace okp::x86;

extern "C" int okp_core_breakpoint(void *raw_regs)
{
	Registers &regs = *static_cast<Registers *>(raw_regs);
	const uint64_t address = regs.ip - 1; // int3 has executed
	okp_cpu_state &cpu = *okp_glue_cpu_state();
	if (Site *site = registered_probes.lookup(address))
		return breakpoint_hit(*static_cast<BreakpointSite *>(site), regs, cpu);
	if (BreakpointSite *site = arch_probes.post_traps.lookup(address))
		return post_trap_hit(*site, regs, cpu);
	// A breakpoint removed while this CPU was already trapping on it: the
	// byte is the original again, so run it from the start (as kprobes
	// does). The kernel's own int3 users (text_poke_bp, kprobes) handle
	// theirs before die notifiers run; a breakpoint still present is
	// someone else's and not ours to claim.
	if (*reinterpret_cast<const volatile uint8_t *>(address) != int3) {
		regs.ip = address;
		return 1;
	}
	return 0;
}
