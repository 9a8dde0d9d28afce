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
#include "core/code_graph.hpp"
#include "core/core_api.h"
#include "riscv/glue_services.h"
#include "core/detour_pool.hpp"
#include "core/function_text.hpp"
#include "core/handler_path.hpp"
#include "core/probe_table.hpp"
#include "core/slot_pool.hpp"
#include "riscv/detour.hpp"
#include "riscv/function_analysis.hpp"
#include "riscv/out_of_line.hpp"
#include "riscv/probe_rules.hpp"
#include "riscv/trap_window.hpp"

#include <okprobe.h>

namespace okp::riscv {
namespace {

constexpr int max_slot_pages = 64;

struct BreakpointSite : Site {
	Instruction instruction;
	bool simulated = false;
	uint64_t slot = 0; // 0 for simulated instructions
	// The slot's first half jumps back by itself: a hit without
	// post_handlers does not trap again.
	bool boosted = false;
	// The jump's plan, when plan_jump allowed one.
	OptimizationPlan plan;
};

struct ArchProbes {
	AddressTable<BreakpointSite> post_traps; // by the address of a slot's trailing ebreak
	SlotPool<slot_size, max_slot_pages> slots;
	DetourPool detours;
};

constinit ArchProbes arch_probes;

void free_retired(AddressTable<BreakpointSite>::Storage *old, void *)
{
	// Handlers may still walk the old storage until a grace period ends.
	okp_glue_synchronize_rcu();
	AddressTable<BreakpointSite>::free_storage(old);
}

// c.ebreak over a compressed instruction, ebreak over a full one: the
// breakpoint never covers the next instruction.
const uint8_t ebreak_bytes[4] = {0x73, 0x00, 0x10, 0x00};
const uint8_t c_ebreak_bytes[2] = {0x02, 0x90};

const uint8_t *breakpoint_bytes(const BreakpointSite &site)
{
	return site.instruction.length == 2 ? c_ebreak_bytes : ebreak_bytes;
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
	const okp_text_patch copies = {site.slot, bytes, slot_size};
	okp_glue_code_write_batch(&copies, 1);
	return true;
}

// ---- The handler ------------------------------------------------------------

pt_regs *as_pt_regs(Registers &regs)
{
	return reinterpret_cast<pt_regs *>(&regs);
}

// Continues at the displaced instruction without running handlers. While a
// detour is published its copy runs the whole window: a task must not newly
// stop inside the window once it waits for its jump (or, while the jump is
// being taken out, find a half-restored window). A site that cannot boost
// runs its trapping copy with interrupts as they are: its post trap only
// moves epc on (it is not this CPU's active hit).
// Returns true when it sent the hit to the trapping copy.
OKP_HANDLER_PATH bool execute_without_handlers(BreakpointSite &site, Registers &regs)
{
	if (const Detour *detour = ProbeTable::published_detour(site))
		regs.epc = detour->copy;
	else if (site.simulated)
		simulate(site.instruction, site.address, regs);
	else if (site.boosted)
		regs.epc = site.slot;
	else {
		regs.epc = trapping_copy(site);
		return true;
	}
	return false;
}

OKP_HANDLER_PATH int breakpoint_hit(BreakpointSite &site, Registers &regs, okp_cpu_state &cpu)
{
	if (__atomic_load_n(&site.lost, __ATOMIC_RELAXED)) {
		// okprobe's ebreak is still there, whatever else changed: run
		// the instruction it displaced, call no handler.
		execute_without_handlers(site, regs);
		return 1;
	}
	if (cpu.active_site) {
		// A probe hit inside a handler, or in the trap entry on the way
		// to the active hit's post trap: count it, run the instruction,
		// call no handler. A copy of the active site itself post-traps
		// before the active hit's own copy does.
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
	ProbeTable::start_hit(site, probes);
	// Read after the snapshot: a probe with a post_handler is published
	// only after the detour is withdrawn.
	const Detour *detour = ProbeTable::published_detour(site);
	if (ProbeTable::run_pre_handlers(probes, as_pt_regs(regs))) {
		// A pre_handler moved epc itself: the instruction is skipped.
		cpu.active_site = nullptr;
		return 1;
	}
	if (detour && !ProbeTable::wants_post_handlers(probes)) {
		regs.epc = detour->copy; // waiting for the jump: the window's copy
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
	// takes them from SPIE), reached without the kernel's exit work
	// (trap_break.S).
	cpu.saved_flags = regs.status & status_spie;
	regs.status &= ~status_spie;
	regs.epc = trapping_copy(site);
	return 1;
}

OKP_HANDLER_PATH int post_trap_hit(BreakpointSite &site, Registers &regs, okp_cpu_state &cpu)
{
	regs.epc = next_instruction(site);
	if (cpu.active_site != &site)
		return 1; // a copy run without handlers
	if (cpu.nested_copies) {
		--cpu.nested_copies; // a nested hit's, not the active one
		return 1;
	}
	regs.status |= cpu.saved_flags;
	cpu.saved_flags = 0;
	ProbeTable::run_post_handlers(ProbeTable::hit_probes_of(cpu), as_pt_regs(regs));
	cpu.active_site = nullptr;
	return 1;
}

OKP_HANDLER_PATH bool is_breakpoint(uint64_t address)
{
	alignas(2) uint8_t bytes[4] = {};
	const size_t read = okp_glue_read_trap_text(address, bytes, sizeof(bytes));
	const uint32_t half = bytes[0] | uint32_t(bytes[1]) << 8;
	if (read >= 2 && half == c_ebreak_encoding)
		return true;
	return read == 4 && (half | uint32_t(bytes[2]) << 16 | uint32_t(bytes[3]) << 24) == ebreak_encoding;
}

// ---- The site's function, decoded whole ---------------------------------------

constexpr size_t max_edges = 64;

// The function holding a site, decoded with its pieces and the edges its
// bytes do not show: jump labels (a nop that may become a jump) and
// exception fixups (a fault that resumes elsewhere). Large: allocated.
struct SiteFunction {
	FunctionText text;
	FunctionText pieces[max_pieces];
	CodeRange ranges[max_pieces];
	size_t piece_count = 0;
	ExtraEdge edges[max_edges];
	size_t edge_count = 0;
	FunctionAnalysis analysis;

	// nullptr, or why the function cannot be analysed.
	const char *analyse(const BreakpointSite &site, const KernelFacts &facts);

private:
	const char *add_edges_of(const CodeRange &range, const KernelFacts &facts);
	const char *add_edge(const ExtraEdge &edge);
	bool in_function(uint64_t address) const
	{
		return address >= text.range.address && address < text.range.address + text.range.size;
	}
};

const char *SiteFunction::add_edge(const ExtraEdge &edge)
{
	if (!in_function(edge.from) && !in_function(edge.to))
		return nullptr; // between pieces: nothing of the function's
	if (edge_count == max_edges)
		return "the function has too many jump labels and exception fixups to check";
	edges[edge_count++] = edge;
	return nullptr;
}

// The jump labels and exception fixups whose site lies in range (the
// function or one of its pieces).
const char *SiteFunction::add_edges_of(const CodeRange &range, const KernelFacts &facts)
{
	okp_jump_label labels[max_edges];
	const long found = okp_glue_jump_labels_within(range.address, range.address + range.size, labels, max_edges);
	if (found < 0)
		return "the function has jump labels and the kernel's jump table is unknown";
	if (found > long(max_edges))
		return "the function has too many jump labels to check";
	for (long i = 0; i < found; ++i)
		if (const char *why = add_edge({labels[i].code, labels[i].target, ExtraEdge::Kind::jump_label}))
			return why;
	for (size_t at = 0; at < range.size;) {
		const Instruction insn = decode_instruction(range.bytes + at, range.size - at);
		if (insn.length == 0)
			break;
		const uint64_t address = range.address + at;
		if (facts.has_exception_entry(address, facts.context)) {
			const uint64_t fixup = okp_glue_exception_fixup(address);
			if (!fixup)
				return "an exception-table entry of the function has no fixup address";
			if (const char *why = add_edge({address, fixup, ExtraEdge::Kind::exception_fixup}))
				return why;
		}
		at += insn.length;
	}
	return nullptr;
}

const char *SiteFunction::analyse(const BreakpointSite &site, const KernelFacts &facts)
{
	uint64_t start = 0, size = 0;
	if (!facts.function_of(site.address, &start, &size, facts.context))
		return "no function is known at the address";
	if (const char *why = text.read(facts, start, size))
		return why;
	uint64_t targets[max_external_targets];
	const size_t target_count = code_references(text.range, references::jumps, targets, max_external_targets);
	if (const char *why = read_pieces(facts, site.description, text.range, targets, target_count, pieces, ranges,
					  &piece_count))
		return why;
	if (const char *why = add_edges_of(text.range, facts))
		return why;
	for (size_t p = 0; p < piece_count; ++p)
		if (const char *why = add_edges_of(ranges[p], facts))
			return why;
	DataReader rodata;
	rodata.read = [](uint64_t address, void *out, size_t size, void *) -> size_t {
		return okp_glue_read_rodata(address, out, size);
	};
	analysis.set_psabi(okp_glue_psabi_liveness());
	if (!analysis.build(text.range, ranges, piece_count, edges, edge_count, &rodata))
		return "out of memory";
	return nullptr;
}

// A register dead after the site's instruction, by liveness over its whole
// function, or 0: what the boosted copy jumps back through when the slot is
// out of jal reach.
unsigned scratch_after(const BreakpointSite &site, const FunctionAnalysis &analysis)
{
	switch (analysis.problem()) {
	case FunctionProblem::undecodable:
	case FunctionProblem::target_inside:
	case FunctionProblem::out_of_memory:
		return 0;
	default:
		break; // an indirect jump leaves liveness sound (it reads everything)
	}
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
	if (!text_holds(site.address, site.original, site.instruction.length)) {
		mark_lost(site, "the instruction changed before okprobe put its ebreak back");
		return;
	}
	okp_glue_text_write(site.address, breakpoint_bytes(site), site.instruction.length);
	site.patched_bytes = site.instruction.length;
}

void disarm(Site &generic)
{
	BreakpointSite &site = static_cast<BreakpointSite &>(generic);
	// Back as it was, only over okprobe's breakpoint.
	if (!text_holds(site.address, breakpoint_bytes(site), site.instruction.length)) {
		mark_lost(site, "someone else changed okprobe's ebreak");
		return;
	}
	okp_glue_text_write(site.address, site.original, site.instruction.length);
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
	arch_probes.detours.release_all();
}

// Asked once, right after create_site and before the site is published:
// the only moment a site reads its whole function. The slot's boosted half
// is written here when it needs a register that liveness proves dead.
const char *plan_jump(Site &generic, const KernelFacts &facts)
{
	BreakpointSite &site = static_cast<BreakpointSite &>(generic);
	SiteFunction *function = new SiteFunction;
	if (!function)
		return "out of memory";
	const char *why = function->analyse(site, facts);
	if (!why && site.slot && !site.boosted) {
		const unsigned scratch = scratch_after(site, function->analysis);
		if (scratch)
			write_slot(site, site.original, scratch);
	}
	if (!why) {
		const OptimizationPlan plan = plan_jump_optimization(function->analysis, site.address);
		if (plan.refusal != OptimizationRefusal::none)
			why = optimization_refusal_text(plan.refusal);
		else
			why = facts.reserved(site.address, plan.window_length, facts.context);
		if (!why) {
			site.plan = plan;
			site.jump_region_length = plan.window_length;
		}
	}
	delete function;
	return why;
}

Detour *create_detour(Site &generic, const char **why)
{
	BreakpointSite &site = static_cast<BreakpointSite &>(generic);
	Detour *detour = new Detour;
	if (!detour) {
		*why = "out of memory";
		return nullptr;
	}
	const auto build = [&](uint64_t at, uint8_t *bytes) -> size_t {
		return build_detour(site.plan, site.address, at, reinterpret_cast<uint64_t>(&okp_glue_optimized_entry),
				    reinterpret_cast<uint64_t>(&site), bytes, max_detour_size);
	};
	size_t length = 0;
	uint64_t code, entry;
	if (site.plan.needs_landing()) {
		// auipc + c.jr lands at the probe's page offset: a c.j there
		// leads to the detour, on the same page within c.j's reach.
		code = arch_probes.detours.place_with_landing<max_detour_size, 2>(
			site.address % landing_alignment, c_j_reach, build,
			[&](uint64_t at, uint64_t target, uint8_t *bytes) -> size_t {
				uint8_t jump[max_window_size];
				if (!encode_window_jump(site.plan, site.address, at, jump))
					return 0;
				const uint16_t c_j = encode::c_j(int32_t(target - at));
				bytes[0] = uint8_t(c_j);
				bytes[1] = uint8_t(c_j >> 8);
				return 2;
			},
			&length, &entry);
	} else {
		code = arch_probes.detours.place<max_detour_size>(
			[&](uint64_t at, uint8_t *bytes) -> size_t {
				uint8_t jump[max_window_size];
				return encode_window_jump(site.plan, site.address, at, jump) ? build(at, bytes) : 0;
			},
			&length);
		entry = code;
	}
	if (!code) {
		delete detour;
		*why = site.plan.needs_landing() ? "no detour memory within reach of auipc with a free landing"
						 : "no detour memory within reach of auipc+jalr";
		return nullptr;
	}
	detour->code = code;
	detour->entry = entry;
	detour->copy = code + detour_frame_size;
	detour->size = static_cast<uint16_t>(length);
	return detour;
}

void free_detour(Detour *detour)
{
	// c.ebreak over the old code and its landing: a stale jump traps loudly.
	const bool landing = detour->entry != detour->code;
	arch_probes.detours.release<max_detour_size>(detour->code, detour->size, c_ebreak_bytes,
						     landing ? detour->entry : 0, landing ? sizeof(c_ebreak_bytes) : 0);
	delete detour;
}

// Each waiting site has its breakpoint over its first instruction and the
// original bytes after it, and no task is inside the window (the rcu-tasks
// grace period since its detour was published). One stop_machine() per
// batch writes every window whole, "auipc; jalr" or "auipc; c.jr": no hart runs
// while the bytes change, and each runs fence.i before it goes on.
void optimize(Site *const *sites, size_t count)
{
	for (size_t start = 0; start < count; start += text_batch) {
		okp_text_patch patches[text_batch];
		uint8_t jumps[text_batch][max_window_size];
		BreakpointSite *accepted[text_batch];
		size_t n = 0;
		for (size_t i = start; i < count && i < start + text_batch; ++i) {
			BreakpointSite &site = static_cast<BreakpointSite &>(*sites[i]);
			// Only over what okprobe left there: its breakpoint and the
			// original bytes. Anything else stays a breakpoint.
			if (!site.detour || !encode_window_jump(site.plan, site.address, site.detour->entry, jumps[n]))
				continue;
			if (!holds_breakpoint_over_original(site, breakpoint_bytes(site), site.instruction.length,
							    site.plan.window_length)) {
				mark_lost(site, "someone else changed the jump's window under okprobe's ebreak");
				continue;
			}
			patches[n] = {site.address, jumps[n], site.plan.window_length};
			accepted[n++] = &site;
		}
		okp_glue_text_write_batch(patches, n);
		for (size_t i = 0; i < n; ++i)
			accepted[i]->patched_bytes = accepted[i]->plan.window_length;
	}
}

// The reverse, in two steps. A task may have been interrupted between the
// auipc and the jalr (or c.jr), with epc there and tmp loaded: the original
// bytes must not come back under it. So: the breakpoint over the auipc
// (the jalr or c.jr stays: such a task still reaches the detour, and new hits trap
// and run the detour's copy, which stays published until this returns);
// an rcu-tasks grace period, after which no task is between the two; then
// the original bytes after the breakpoint.
void unoptimize(Site *const *sites, size_t count)
{
	okp_text_patch patches[text_batch];
	for (size_t start = 0; start < count; start += text_batch) {
		size_t n = 0;
		for (size_t i = start; i < count && i < start + text_batch; ++i) {
			BreakpointSite &site = static_cast<BreakpointSite &>(*sites[i]);
			uint8_t jump[max_window_size];
			// Only over okprobe's own jump.
			if (!encode_window_jump(site.plan, site.address, site.detour->entry, jump) ||
			    !text_holds(site.address, jump, site.plan.window_length)) {
				mark_lost(site, "someone else changed okprobe's jump");
				continue;
			}
			patches[n++] = {site.address, breakpoint_bytes(site), site.instruction.length};
		}
		okp_glue_text_write_batch(patches, n);
	}
	okp_glue_synchronize_rcu_tasks();
	for (size_t start = 0; start < count; start += text_batch) {
		size_t n = 0;
		for (size_t i = start; i < count && i < start + text_batch; ++i) {
			BreakpointSite &site = static_cast<BreakpointSite &>(*sites[i]);
			if (site.lost)
				continue;
			const size_t first = site.instruction.length;
			patches[n++] = {site.address + first, site.original + first, site.plan.window_length - first};
			site.patched_bytes = site.instruction.length;
		}
		okp_glue_text_write_batch(patches, n);
	}
}

} // namespace okp::arch

using namespace okp;
using namespace okp::riscv;

// An optimized hit, from the detour through the glue's
// okp_glue_optimized_entry (preemption off): the handlers see regs as a
// breakpoint hit presents them (epc = the probed address). A pre_handler's
// change of epc is ignored: the detour goes on with the window's copy, as
// the kernel does for optprobes.
extern "C" OKP_HANDLER_PATH [[gnu::flatten]] void okp_core_optimized_hit(void *raw_site, void *raw_regs,
									 struct okp_cpu_state *cpu)
{
	Site &site = *static_cast<Site *>(raw_site);
	Registers &regs = *static_cast<Registers *>(raw_regs);
	ProbeTable::optimized_hit(site, as_pt_regs(regs), *cpu, [&] { regs.epc = site.address; });
}

extern "C" OKP_HANDLER_PATH int okp_core_breakpoint(void *raw_regs)
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

namespace okp::arch {

// riscv's trap path where no breakpoint may be taken: the exit's calls
// after it sets sscratch (trap_window.hpp).
TrapPath trap_path_functions(const CodeGraphFacts &facts, uint64_t (*lookup)(const char *name, void *context),
			     RangeList &reached)
{
	constexpr size_t exit_code_read = 1024; // ret_from_exception to its sret, and more
	TrapPath result;
	const uint64_t exit = lookup("ret_from_exception", facts.context);
	uint8_t *code = exit ? new uint8_t[exit_code_read] : nullptr;
	if (!exit || !code) {
		result.why = exit ? "out of memory" : "no ret_from_exception in this kernel";
		return result;
	}
	const size_t read = facts.read_text(exit, code, exit_code_read, facts.context);
	result = sscratch_window_functions(CodeRange{code, exit, read}, lookup, facts, reached);
	delete[] code;
	return result;
}

} // namespace okp::arch
