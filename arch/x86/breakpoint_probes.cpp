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
#include "x86/glue_services.h"
#include "core/detour_pool.hpp"
#include "core/function_text.hpp"
#include "core/handler_path.hpp"
#include "core/probe_table.hpp"
#include "core/slot_pool.hpp"
#include "x86/detour.hpp"
#include "x86/out_of_line.hpp"
#include "x86/probe_rules.hpp"
#include "x86/trap_path.hpp"

#include <okprobe.h>

namespace okp::x86 {
namespace {

constexpr uint8_t int3 = 0xcc;
constexpr uint64_t kernel_code_segment = 0x10; // __KERNEL_CS
// Each slot holds two copies: [0, 32) ends in a jmp back (boosted runs and
// runs without handlers), [32, 64) ends in int3 (runs before a post_handler).
constexpr unsigned long slot_bytes = 2 * slot_size;
constexpr int max_slot_pages = 64;

struct BreakpointSite : Site {
	Analysis analysis;
	uint64_t slot = 0; // 0 for emulated instructions
	// The jump's plan, when plan_jump allowed one, and the original bytes
	// of its region (up to 4 + 15).
	OptimizationPlan plan;
	uint8_t region[jump_size - 1 + max_instruction_length] = {};
};

struct ArchProbes {
	AddressTable<BreakpointSite> post_traps; // by the address of a slot's trailing int3
	SlotPool<slot_bytes, max_slot_pages> slots;
	DetourPool detours;
	Thunks thunks;
	DetourCall detour_call; // all but the context
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
	okp_detour_percpu percpu = {};
	okp_glue_detour_percpu(&percpu);
	DetourCall &call = arch_probes.detour_call;
	call.entry = reinterpret_cast<uint64_t>(&okp_core_optimized_hit);
	call.cpu_states = percpu.cpu_states;
	call.this_cpu_off = static_cast<int32_t>(percpu.this_cpu_off);
	call.preempt_count = static_cast<int32_t>(percpu.preempt_count);
	call.preempt_schedule = percpu.preempt_schedule;
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
	const okp_text_patch copies[2] = {{site.slot, boosted, slot_size},
					  {site.slot + slot_size, trapping, slot_size}};
	okp_glue_code_write_batch(copies, 2);
	return true;
}

uint64_t post_trap_address(const BreakpointSite &site)
{
	return site.slot + slot_size + site.analysis.length;
}

// ---- The handler ------------------------------------------------------------

OKP_HANDLER_PATH uint64_t read_stack(uint64_t address)
{
	return *reinterpret_cast<const uint64_t *>(address);
}

OKP_HANDLER_PATH void write_stack(uint64_t address, uint64_t value)
{
	*reinterpret_cast<uint64_t *>(address) = value;
}

const StackAccess stack = {write_stack, read_stack};

pt_regs *as_pt_regs(Registers &regs)
{
	return reinterpret_cast<pt_regs *>(&regs);
}

// Continues at the displaced instruction without running handlers. While a
// detour is published its copy runs the whole jump region: a task must not
// newly stop inside the region once it waits for its jump.
void execute_without_handlers(BreakpointSite &site, Registers &regs)
{
	if (const Detour *detour = ProbeTable::published_detour(site))
		regs.ip = detour->copy;
	else if (site.analysis.execution == Execution::emulate)
		emulate(site.analysis, site.address, regs, stack);
	else
		regs.ip = site.slot; // the boosted copy
}

int breakpoint_hit(BreakpointSite &site, Registers &regs, okp_cpu_state &cpu)
{
	if (__atomic_load_n(&site.lost, __ATOMIC_RELAXED)) {
		// okprobe's int3 is still there, whatever else changed: run
		// the instruction it displaced, call no handler.
		execute_without_handlers(site, regs);
		return 1;
	}
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
	ProbeTable::HitProbes &probes = ProbeTable::hit_probes_of(cpu);
	ProbeTable::start_hit(site, probes);
	// Read after the snapshot: a probe with a post_handler is published
	// only after the detour is withdrawn.
	const Detour *detour = ProbeTable::published_detour(site);
	if (ProbeTable::run_pre_handlers(probes, as_pt_regs(regs))) {
		// A pre_handler moved ip itself: the instruction is skipped.
		cpu.active_site = nullptr;
		return 1;
	}
	if (detour && !ProbeTable::wants_post_handlers(probes)) {
		regs.ip = detour->copy; // waiting for the jump: the region's copy
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
		ProbeTable::run_post_handlers(ProbeTable::hit_probes_of(cpu), as_pt_regs(regs));
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

void arm(Site &generic)
{
	BreakpointSite &site = static_cast<BreakpointSite &>(generic);
	if (!text_holds(site.address, site.original, site.analysis.length)) {
		mark_lost(site, "the instruction changed before okprobe put its int3 back");
		return;
	}
	okp_glue_text_write(site.address, &int3, 1);
	site.patched_bytes = 1;
}

void disarm(Site &generic)
{
	// Only the first byte ever changed; it comes back as it was, over
	// okprobe's int3 and nothing else.
	BreakpointSite &site = static_cast<BreakpointSite &>(generic);
	if (!holds_breakpoint_over_original(site, &int3, 1, site.analysis.length)) {
		mark_lost(site, "someone else changed the instruction under okprobe's int3");
		return;
	}
	okp_glue_text_write(site.address, site.original, 1);
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
	arch_probes.detours.release_all();
	arch_probes.thunks_resolved = false;
}

// ---- Jump optimization --------------------------------------------------------

const char *plan_jump(Site &generic, const KernelFacts &facts)
{
	BreakpointSite &site = static_cast<BreakpointSite &>(generic);
	uint64_t start = 0, size = 0;
	if (!facts.function_of(site.address, &start, &size, facts.context))
		return "no function is known at the address";
	FunctionText function;
	if (const char *why = function.read(facts, start, size))
		return why;
	uint64_t targets[max_external_targets];
	const size_t target_count =
		external_jump_targets(function.range, arch_probes.thunks, targets, max_external_targets);
	FunctionText pieces[max_pieces];
	CodeRange ranges[max_pieces];
	size_t piece_count = 0;
	if (const char *why = read_pieces(facts, site.description, function.range, targets, target_count, pieces,
					  ranges, &piece_count))
		return why;
	const OptimizationPlan plan =
		plan_jump_optimization(function.range, ranges, piece_count, site.address, arch_probes.thunks,
				       facts.has_exception_entry, facts.context);
	if (plan.refusal != OptimizationRefusal::none)
		return optimization_refusal_text(plan.refusal);
	if (const char *why = facts.reserved(site.address, plan.region_length, facts.context))
		return why;
	// The targets decoding could not see: disabled jump labels' (nops).
	const int jump_label =
		okp_glue_jump_label_target_within(site.address + 1, site.address + jump_size, start, start + size);
	if (jump_label > 0)
		return "a jump label targets the inside of the jump";
	if (jump_label < 0)
		return "the function has jump labels and the kernel's jump table is unknown";
	site.plan = plan;
	__builtin_memcpy(site.region, function.bytes + (site.address - start), plan.region_length);
	site.jump_region_length = plan.region_length;
	return nullptr;
}

Detour *create_detour(Site &generic, const char **why)
{
	BreakpointSite &site = static_cast<BreakpointSite &>(generic);
	Detour *detour = new Detour;
	if (!detour) {
		*why = "out of memory";
		return nullptr;
	}
	DetourCall call = arch_probes.detour_call;
	call.context = reinterpret_cast<uint64_t>(&site);
	size_t length = 0;
	const uint64_t code = arch_probes.detours.place<max_detour_size>(
		[&](uint64_t at, uint8_t *bytes) -> size_t {
			uint8_t jump[jump_size];
			if (!build_jump(site.address, at, jump))
				return 0;
			return build_detour(site.plan, site.region, site.address, arch_probes.thunks, at, call, bytes,
					    max_detour_size);
		},
		&length);
	if (!code) {
		delete detour;
		*why = "no detour memory within reach of a jump";
		return nullptr;
	}
	detour->code = code;
	detour->entry = code;
	detour->copy = code + detour_frame_size(call);
	detour->size = static_cast<uint16_t>(length);
	return detour;
}

void free_detour(Detour *detour)
{
	static constexpr uint8_t breakpoint[1] = {int3};
	arch_probes.detours.release<max_detour_size>(detour->code, detour->size, breakpoint);
	delete detour;
}

// The breakpoint is at the first byte and every CPU traps there (and goes
// on in the detour's copy): write bytes 2-5 of the jump, sync, then its
// first byte, sync. As text_poke_bp(), for a whole batch at once.
void optimize(Site *const *sites, size_t count)
{
	for (size_t start = 0; start < count; start += text_batch) {
		okp_text_patch tails[text_batch], heads[text_batch];
		uint8_t jumps[text_batch][jump_size];
		Site *accepted[text_batch];
		size_t n = 0;
		for (size_t i = start; i < count && i < start + text_batch; ++i) {
			Site &site = *sites[i];
			// Only over what okprobe left there: its breakpoint and the
			// original bytes. Anything else stays a breakpoint.
			if (!site.detour || !build_jump(site.address, site.detour->entry, jumps[n]))
				continue;
			if (!holds_breakpoint_over_original(site, &int3, 1, jump_size)) {
				mark_lost(site, "someone else changed the jump's region under okprobe's int3");
				continue;
			}
			tails[n] = {site.address + 1, jumps[n] + 1, jump_size - 1};
			heads[n] = {site.address, jumps[n], 1};
			accepted[n++] = &site;
		}
		okp_glue_text_write_batch(tails, n);
		okp_glue_text_write_batch(heads, n);
		for (size_t i = 0; i < n; ++i)
			accepted[i]->patched_bytes = jump_size;
	}
}

// The reverse: the breakpoint over the jump's first byte, sync, the
// original bytes 2-5, sync. The breakpoint stays.
void unoptimize(Site *const *sites, size_t count)
{
	for (size_t start = 0; start < count; start += text_batch) {
		okp_text_patch heads[text_batch], tails[text_batch];
		Site *accepted[text_batch];
		size_t n = 0;
		for (size_t i = start; i < count && i < start + text_batch; ++i) {
			Site &site = *sites[i];
			uint8_t jump[jump_size];
			// Only over okprobe's own jump.
			if (!build_jump(site.address, site.detour->entry, jump) ||
			    !text_holds(site.address, jump, jump_size)) {
				mark_lost(site, "someone else changed okprobe's jump");
				continue;
			}
			heads[n] = {site.address, &int3, 1};
			tails[n] = {site.address + 1, site.original + 1, jump_size - 1};
			accepted[n++] = &site;
		}
		okp_glue_text_write_batch(heads, n);
		okp_glue_text_write_batch(tails, n);
		for (size_t i = 0; i < n; ++i)
			accepted[i]->patched_bytes = 1;
	}
}

TrapPath trap_path_functions(const CodeGraphFacts &facts, uint64_t (*lookup)(const char *name, void *context),
			     RangeList &reached)
{
	return int3_path_functions(facts, lookup, reached);
}

} // namespace okp::arch

using namespace okp;
using namespace okp::x86;

// An optimized hit, from the detour: the handlers see regs as an int3 hit
// would present them (ip = address + 1). A pre_handler's change of ip is
// ignored: the detour goes on with the region's copy, as the kernel does
// for optprobes. The fast path: no snapshot (no post_handler takes part),
// no call but the handlers'.
extern "C" OKP_HANDLER_PATH [[gnu::flatten]] void okp_core_optimized_hit(void *raw_site, void *raw_regs,
									 struct okp_cpu_state *cpu)
{
	Site &site = *static_cast<Site *>(raw_site);
	Registers &regs = *static_cast<Registers *>(raw_regs);
	ProbeTable::optimized_hit(site, as_pt_regs(regs), *cpu, [&] {
		regs.ip = site.address + 1;
		regs.cs = kernel_code_segment;
		regs.orig_ax = ~0ull;
	});
}

extern "C" OKP_HANDLER_PATH int okp_core_breakpoint(void *raw_regs)
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
