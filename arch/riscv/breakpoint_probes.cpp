// SPDX-License-Identifier: GPL-2.0
// riscv64 breakpoint probes: the arch half of a Site (the decoded
// instruction and its out-of-line slot), the slot pool, and the ebreak
// handler. The probe lifecycle is src/core/probe_table.cpp's.
//
// Ownership: sites, the post-trap table and the slot pool are changed only
// by the probe table's writer (under the glue's probe mutex); the handler
// reads them with atomic loads and no lock. A site's slot is written before
// the site is published; its post-trap entry goes away only in
// retire_site(), after the grace periods, because a hart may be executing
// the trapping copy (interrupts off) until its post trap arrives.
//
// The registers: riscv reports a breakpoint with epc at the ebreak, so
// handlers see regs->epc == the probed address (include/okprobe.h).
#include "core/address_table.hpp"
#include "core/core_api.h"
#include "core/probe_table.hpp"
#include "core/slot_pool.hpp"
#include "riscv/function_analysis.hpp"
#include "riscv/out_of_line.hpp"
#include "riscv/probe_rules.hpp"

#include <okprobe.h>

namespace okp::riscv {
namespace {

constexpr int max_slot_pages = 64;
// The longest function whose liveness a registration computes.
constexpr uint64_t max_function_walk = 64 * 1024;

struct BreakpointSite : Site {
	Instruction instruction;
	bool simulated = false;
	uint64_t slot = 0; // 0 for simulated instructions
	// The slot's first half jumps back by itself: a hit without
	// post_handlers does not trap again.
	bool boosted = false;
};

struct ArchProbes {
	AddressTable<BreakpointSite> post_traps; // by the address of a slot's trailing ebreak
	SlotPool<slot_size, max_slot_pages> slots;
};

constinit ArchProbes arch_probes;

void free_retired(AddressTable<BreakpointSite>::Storage *old, void *)
{
	// Handlers may still walk the old storage until a grace period ends.
	okp_glue_synchronize_rcu();
	AddressTable<BreakpointSite>::free_storage(old);
}

uint64_t next_instruction(const BreakpointSite &site)
{
	return site.address + site.instruction.length;
}

uint64_t trapping_copy(const BreakpointSite &site)
{
	return site.slot + slot_half;
}

uint64_t post_trap_address(const BreakpointSite &site)
{
	return trapping_copy(site) + site.instruction.length;
}

// Writes the slot's two copies. The first half jumps back when it can
// without a register (jal reach) or through scratch; otherwise the site is
// not boosted and its first half is left as c.unimp.
bool write_slot(BreakpointSite &site, const uint8_t *original, unsigned scratch)
{
	uint8_t bytes[slot_size] = {};
	uint8_t half[slot_half];
	if (!build_copy(original, site.instruction.length, trapping_copy(site), next_instruction(site),
			SlotEnd::breakpoint, 0, half))
		return false;
	__builtin_memcpy(bytes + slot_half, half, slot_half);
	site.boosted = build_copy(original, site.instruction.length, site.slot, next_instruction(site),
				  SlotEnd::jump_back, scratch, half) != 0;
	if (site.boosted)
		__builtin_memcpy(bytes, half, slot_half);
	okp_glue_text_write(site.slot, bytes, slot_size);
	return true;
}

// ---- The handler ------------------------------------------------------------

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

// Continues at the displaced instruction without running handlers. A site
// that cannot boost runs its trapping copy with interrupts as they are: its
// post trap only moves epc on (it is not this CPU's active hit).
void execute_without_handlers(BreakpointSite &site, Registers &regs)
{
	if (site.simulated)
		simulate(site.instruction, site.address, regs);
	else if (site.boosted)
		regs.epc = site.slot;
	else
		regs.epc = trapping_copy(site);
}

int breakpoint_hit(BreakpointSite &site, Registers &regs, okp_cpu_state &cpu)
{
	if (cpu.active_site) {
		// A probe hit inside a handler: count it, run the instruction,
		// call no handler.
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
		// A pre_handler moved epc itself: the instruction is skipped.
		cpu.active_site = nullptr;
		return 1;
	}
	if (site.simulated) {
		simulate(site.instruction, site.address, regs);
		ProbeTable::run_post_handlers(probes, as_pt_regs(regs));
		cpu.active_site = nullptr;
		return 1;
	}
	if (site.boosted && !ProbeTable::wants_post_handlers(probes)) {
		regs.epc = site.slot; // the copy jumps back by itself
		cpu.active_site = nullptr;
		return 1;
	}
	// The trapping copy, with interrupts off until its post trap (sret
	// takes them from SPIE).
	cpu.saved_flags = regs.status & status_spie;
	regs.status &= ~status_spie;
	regs.epc = trapping_copy(site);
	return 1;
}

int post_trap_hit(BreakpointSite &site, Registers &regs, okp_cpu_state &cpu)
{
	regs.epc = next_instruction(site);
	if (cpu.active_site != &site)
		return 1; // a copy run without handlers
	regs.status |= cpu.saved_flags;
	cpu.saved_flags = 0;
	ProbeTable::run_post_handlers(hit_probes_of(cpu), as_pt_regs(regs));
	cpu.active_site = nullptr;
	return 1;
}

bool is_breakpoint(uint64_t address)
{
	uint8_t bytes[4] = {};
	const size_t read = okp_glue_read_text(address, bytes, sizeof(bytes));
	const uint32_t half = bytes[0] | uint32_t(bytes[1]) << 8;
	if (read >= 2 && half == c_ebreak_encoding)
		return true;
	return read == 4 && (half | uint32_t(bytes[2]) << 16 | uint32_t(bytes[3]) << 24) == ebreak_encoding;
}

// ---- Liveness for the boosted copy's jump back --------------------------------

struct FunctionText {
	uint8_t *bytes = nullptr;
	CodeRange range;

	FunctionText() = default;
	FunctionText(const FunctionText &) = delete;
	FunctionText &operator=(const FunctionText &) = delete;
	~FunctionText() { delete[] bytes; }

	bool read(const KernelFacts &facts, uint64_t start, uint64_t size)
	{
		if (size > max_function_walk)
			return false;
		bytes = new uint8_t[size];
		if (!bytes || facts.read_text(start, bytes, size, facts.context) != size)
			return false;
		range = {bytes, start, size};
		return true;
	}
};

// A register dead after the site's instruction, by liveness over its whole
// function, or 0. Only where the bytes show every edge: no jump label site
// (its nop hides a jump) and no exception-table entry (its fixup is an
// edge) in the function.
unsigned scratch_after(const BreakpointSite &site, const KernelFacts &facts)
{
	uint64_t start = 0, size = 0;
	if (!facts.function_of(site.address, &start, &size, facts.context))
		return 0;
	FunctionText text;
	if (!text.read(facts, start, size))
		return 0;
	if (okp_glue_jump_label_sites_within(start, start + size))
		return 0;
	FunctionAnalysis analysis;
	if (!analysis.build(text.range, nullptr, 0, nullptr, 0) || analysis.problem() == FunctionProblem::undecodable ||
	    analysis.problem() == FunctionProblem::target_inside ||
	    analysis.problem() == FunctionProblem::out_of_memory)
		return 0;
	for (size_t i = 0; i < analysis.count(); ++i)
		if (facts.has_exception_entry(analysis.address_of(i), facts.context))
			return 0;
	if (analysis.index_of(next_instruction(site)) < 0)
		return 0; // the function ends with the instruction
	return dead_register(analysis.live_at(next_instruction(site)));
}

} // namespace
} // namespace okp::riscv

// ---- The probe table's arch hooks --------------------------------------------

namespace okp::arch {

using namespace okp::riscv;

Site *create_site(uint64_t address, const uint8_t (&original)[max_original_bytes], const char **why)
{
	BreakpointSite *site = new BreakpointSite;
	if (!site) {
		*why = "out of memory";
		return nullptr;
	}
	site->address = address;
	site->instruction = decode_instruction(original, max_original_bytes);
	site->simulated = is_simulated(site->instruction);
	if (site->simulated)
		return site;
	site->slot = arch_probes.slots.take();
	if (!site->slot || !write_slot(*site, original, 0)) {
		if (site->slot)
			arch_probes.slots.give_back(site->slot);
		delete site;
		*why = "no out-of-line slot within reach";
		return nullptr;
	}
	if (!arch_probes.post_traps.insert(post_trap_address(*site), site, free_retired, nullptr)) {
		arch_probes.slots.give_back(site->slot);
		delete site;
		*why = "out of memory";
		return nullptr;
	}
	return site;
}

void arm(Site &generic)
{
	BreakpointSite &site = static_cast<BreakpointSite &>(generic);
	// c.ebreak over a compressed instruction, ebreak over a full one:
	// the breakpoint never covers the next instruction.
	const uint8_t ebreak[4] = {0x73, 0x00, 0x10, 0x00};
	const uint8_t c_ebreak[2] = {0x02, 0x90};
	const bool compressed = site.instruction.length == 2;
	okp_glue_text_write(site.address, compressed ? c_ebreak : ebreak, site.instruction.length);
	site.patched_bytes = site.instruction.length;
}

void disarm(Site &generic)
{
	BreakpointSite &site = static_cast<BreakpointSite &>(generic);
	const uint8_t ebreak[4] = {0x73, 0x00, 0x10, 0x00};
	const uint8_t c_ebreak[2] = {0x02, 0x90};
	const bool compressed = site.instruction.length == 2;
	// Back as it was, only if the text still holds okprobe's breakpoint.
	okp_glue_text_restore(site.address, compressed ? c_ebreak : ebreak, site.original, site.instruction.length);
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
	return riscv::probe_rules(function, size, offset, function_address);
}

void release_resources()
{
	// Every site is retired: no post trap can arrive any more.
	arch_probes.post_traps.destroy();
	arch_probes.slots.release_all();
}

// Asked once, right after create_site and before the site is published:
// the only moment a site reads its whole function. The slot's boosted half
// is written here when it needs a register that liveness proves dead.
const char *plan_jump(Site &generic, const KernelFacts &facts)
{
	BreakpointSite &site = static_cast<BreakpointSite &>(generic);
	if (site.slot && !site.boosted) {
		const unsigned scratch = scratch_after(site, facts);
		if (scratch)
			write_slot(site, site.original, scratch);
	}
	return "jump optimization is not implemented on riscv yet";
}

Detour *create_detour(Site &, const char **why)
{
	*why = "jump optimization is not implemented on riscv yet";
	return nullptr;
}

void free_detour(Detour *detour)
{
	delete detour;
}

// Never reached: plan_jump refuses every site, so none waits or jumps.
void optimize(Site *const *, size_t) {}
void unoptimize(Site *const *, size_t) {}

} // namespace okp::arch

using namespace okp;
using namespace okp::riscv;

extern "C" int okp_core_breakpoint(void *raw_regs)
{
	Registers &regs = *static_cast<Registers *>(raw_regs);
	const uint64_t address = regs.epc; // the ebreak itself
	okp_cpu_state &cpu = *okp_glue_cpu_state();
	if (Site *site = registered_probes.lookup(address))
		return breakpoint_hit(*static_cast<BreakpointSite *>(site), regs, cpu);
	if (BreakpointSite *site = arch_probes.post_traps.lookup(address))
		return post_trap_hit(*site, regs, cpu);
	// A breakpoint removed while this hart was already trapping on it:
	// the text holds the original instruction again, so run it (as
	// kprobes does). A breakpoint still present is someone else's.
	if (!is_breakpoint(address))
		return 1;
	return 0;
}
