// SPDX-License-Identifier: GPL-2.0
// riscv64's jump hooks: whether auipc+jalr (or auipc+c.jr through a
// register liveness proves dead) may replace a site's breakpoint (the plan,
// from jump_optimization.cpp over the whole function), the site's detour,
// and the stop_machine patching of windows in and out. When they run is
// src/core/probe_table.cpp's (the optimizer).
#include "core/code_graph.hpp"
#include "core/core_api.h"
#include "core/function_text.hpp"
#include "core/kernel_facts.hpp"
#include "core/patch_batch.hpp"
#include "core/probe_table.hpp"
#include "riscv/detour.hpp"
#include "riscv/function_analysis.hpp"
#include "riscv/glue_services.h"
#include "riscv/jump_optimization.hpp"
#include "riscv/probe_pools.hpp"

namespace okp::riscv {

// ---- The site's function, decoded whole ---------------------------------------

const char *SiteFunction::add_edge(const ExtraEdge &edge, ExtraEdge (&found)[max_edges], size_t *count) const
{
	if (!in_function(edge.from) && !in_function(edge.to))
		return nullptr; // between pieces: nothing of the function's
	if (*count == max_edges)
		return "the function has too many jump labels and exception fixups to check";
	found[(*count)++] = edge;
	return nullptr;
}

// The jump labels and exception fixups whose site lies in range (the
// function or one of its pieces). An unknown exception table is asked
// instruction by instruction; an unknown jump table is a refusal.
const char *SiteFunction::add_edges_of(const CodeRange &range, ExtraEdge (&found)[max_edges], size_t *count) const
{
	const char *why = nullptr;
	const kernel::HiddenEdges read =
		kernel::hidden_edges_within<max_edges>(range.address, range.size, [&](const kernel::HiddenEdge &e) {
			why = add_edge({e.from, e.to,
					e.kind == kernel::HiddenEdge::Kind::jump_label
						? ExtraEdge::Kind::jump_label
						: ExtraEdge::Kind::exception_fixup},
				       found, count);
			return !why;
		});
	if (why)
		return why;
	switch (read) {
	case kernel::HiddenEdges::read:
		return nullptr;
	case kernel::HiddenEdges::labels_unknown:
		return "the function has jump labels and the kernel's jump table is unknown";
	case kernel::HiddenEdges::too_many:
		return "the function has too many jump labels and exception fixups to check";
	case kernel::HiddenEdges::exceptions_unknown:
		break;
	}
	for (size_t at = 0; at < range.size;) {
		const Instruction insn = decode_instruction(range.bytes + at, range.size - at);
		if (insn.length == 0)
			break;
		const uint64_t address = range.address + at;
		if (kernel::has_exception_entry(address)) {
			const uint64_t fixup = okp_glue_exception_fixup(address);
			if (!fixup)
				return "an exception-table entry of the function has no fixup address";
			if (const char *refusal =
				    add_edge({address, fixup, ExtraEdge::Kind::exception_fixup}, found, count))
				return refusal;
		}
		at += insn.length;
	}
	return nullptr;
}

const char *SiteFunction::collect_edges(ExtraEdge (&found)[max_edges], size_t *count) const
{
	*count = 0;
	if (const char *why = add_edges_of(text.range, found, count))
		return why;
	for (size_t p = 0; p < piece_count; ++p)
		if (const char *why = add_edges_of(ranges[p], found, count))
			return why;
	return nullptr;
}

const char *SiteFunction::analyse(const Site &site, const OriginalText &original)
{
	uint64_t start = 0, size = 0;
	if (!kernel::function_of(site.address, &start, &size))
		return "no function is known at the address";
	if (const char *why = text.read(original, start, size))
		return why;
	uint64_t targets[max_external_targets];
	const size_t target_count = code_references(text.range, references::jumps, targets, max_external_targets);
	if (const char *why = read_pieces(original, site.description, text.range, targets, target_count, pieces, ranges,
					  &piece_count))
		return why;
	for (size_t p = 0; p < piece_count; ++p)
		piece_keys[p] = TextKey::of(ranges[p].bytes, ranges[p].size, ranges[p].address);
	if (const char *why = collect_edges(edges, &edge_count))
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

bool SiteFunction::still_holds(const OriginalText &original) const
{
	for (size_t p = 0; p < piece_count; ++p) {
		const TextKey &piece = piece_keys[p];
		FunctionText now;
		if (original.changed_by_others(piece.address, piece.size) ||
		    now.read(original, piece.address, piece.size) ||
		    !(TextKey::of(now.bytes, piece.size, piece.address) == piece))
			return false;
	}
	ExtraEdge found[max_edges];
	size_t count = 0;
	if (collect_edges(found, &count) || count != edge_count)
		return false;
	for (size_t i = 0; i < count; ++i)
		if (found[i].from != edges[i].from || found[i].to != edges[i].to || found[i].kind != edges[i].kind)
			return false;
	return true;
}

namespace {

// Where the site's window starts: its address, or before it (end-anchored).
uint64_t window_of(const Site &site)
{
	return site.address - site.arch.plan.behind;
}

// The breakpoint over the window's first instruction (never over the
// next one): the probe's own where the window starts at the probe, an
// end-anchored window's guard.
size_t guard_length(const Site &site)
{
	return site.arch.plan.instructions[0].instruction.length;
}

const uint8_t *guard_bytes(const Site &site)
{
	return guard_length(site) == 2 ? c_ebreak_bytes : ebreak_bytes;
}

// The analysis of the site's function: the last one when neither its
// bytes, its pieces' nor its edges changed. nullptr and *why when none.
const SiteFunction *site_function(const Site &site, const OriginalText &original, const char **why)
{
	*why = "no function is known at the address";
	uint64_t start = 0, size = 0;
	if (!kernel::function_of(site.address, &start, &size))
		return nullptr;
	FunctionText text;
	if ((*why = text.read(original, start, size)))
		return nullptr;
	const TextKey key = TextKey::of(text.bytes, size, start);
	if (const SiteFunction *last = probe_pools.last_function.find(key))
		if (last->still_holds(original))
			return last;
	SiteFunction *function = probe_pools.last_function.replace(key);
	*why = function ? function->analyse(site, original) : "out of memory";
	if (*why) {
		probe_pools.last_function.clear();
		return nullptr;
	}
	return function;
}

// A register dead after the site's instruction, by liveness over its whole
// function, or 0: what the boosted copy jumps back through when the slot is
// out of jal reach.
unsigned scratch_after(const Site &site, const FunctionAnalysis &analysis)
{
	switch (analysis.problem()) {
	case FunctionProblem::undecodable:
	case FunctionProblem::target_inside:
	case FunctionProblem::out_of_memory:
		return 0;
	default:
		break; // an indirect jump leaves liveness sound (it reads everything)
	}
	if (analysis.index_of(arch::next_instruction(site)) < 0)
		return 0; // the function ends with the instruction
	return dead_register(analysis.live_at(arch::next_instruction(site)));
}

} // namespace
} // namespace okp::riscv

namespace okp::arch {

using namespace okp::riscv;

// Asked once, right after create_site and before the site is published:
// the only moment a site reads its whole function. The slot's boosted half
// is written here when it needs a register that liveness proves dead.
const char *plan_jump(Site &site, const OriginalText &original)
{
	const char *why = nullptr;
	const SiteFunction *function = site_function(site, original, &why);
	if (!why && site.arch.slot && !site.arch.boosted) {
		const unsigned scratch = scratch_after(site, function->analysis);
		if (scratch)
			write_slot(site, site.original, scratch);
	}
	if (!why) {
		const OptimizationPlan plan = plan_jump_optimization(function->analysis, site.address);
		if (plan.refusal != OptimizationRefusal::none)
			why = optimization_refusal_text(plan.refusal);
		else
			why = kernel::reserved(site.address - plan.behind, plan.window_length);
		if (!why) {
			site.arch.plan = plan;
			site.jump_region_behind = plan.behind;
			site.jump_region_length = uint8_t(plan.window_length - plan.behind);
		}
	}
	return why;
}

namespace {

const DetourTask &detour_task()
{
	if (!probe_pools.detour_task_known) {
		okp_riscv_detour_task glue = {};
		okp_glue_detour_task(&glue);
		DetourTask &task = probe_pools.detour_task;
		task.per_cpu_offsets = glue.per_cpu_offsets;
		task.cpu_states = glue.cpu_states;
		task.cpu = int32_t(glue.cpu);
		task.preempt_count = int32_t(glue.preempt_count);
		task.flags = int32_t(glue.flags);
		task.need_resched_bit = uint8_t(glue.need_resched_bit);
		task.preemption_point = glue.preemption_point;
		probe_pools.detour_task_known = true;
	}
	return probe_pools.detour_task;
}

// An argument-only detour's call: the glue's entry, or (where the glue
// found how) the core's with this CPU's state, or the site's one probe's
// handler itself (direct).
ArgsCall args_call(const Site &site, const DirectHit &direct)
{
	ArgsCall call;
	call.entry = reinterpret_cast<uint64_t>(&okp_glue_args_entry);
	call.context = reinterpret_cast<uint64_t>(&site);
	call.probed = site.address;
	call.task = detour_task();
	call.core_entry = reinterpret_cast<uint64_t>(&okp_core_args_hit);
	call.direct = direct;
	return call;
}

} // namespace

// The full detour calls the glue's okp_glue_optimized_entry (direct is
// used by argument-only detours alone).
const char *build_detour(Site &site, const DirectHit &direct, Detour &detour)
{
	const OptimizationPlan &plan = site.arch.plan;
	const uint64_t window = window_of(site);
	// A counting probe's detour needs a second dead register, and the
	// jump's arrival (an end-anchored one may be entered from its guard
	// instead); without them it gets the full detour, which counts
	// through the handler path.
	const bool counting = site.counting() && counting_second_register(plan) && !plan.behind;
	CounterCall counter;
	counter.cells = site.counter_cells;
	counter.cpu_offset = detour_task().cpu;
	static_assert(OKP_COUNTER_CELL_STRIDE == 1u << CounterCall{}.stride_shift,
		      "the glue's cells, the detour's shift");
	// Where the copy that trapping hits continue in starts.
	size_t copy_offset = detour_frame_size;
	// jumped_to: where the window's jump arrives (the detour or its
	// landing), which the counting detour's prologue starts from.
	const auto build = [&](uint64_t at, uint64_t jumped_to, uint8_t *bytes) -> size_t {
		if (counting) {
			counter.arrival = window_jump_register_value(plan, window, jumped_to);
			return riscv::build_counting_detour(plan, window, at, counter, bytes, max_detour_size,
							    &copy_offset);
		}
		if (detour.args_record) {
			const ArgsCall call = args_call(site, direct);
			return riscv::build_args_detour(plan, window, at, call, bytes, max_detour_size, &copy_offset);
		}
		return riscv::build_detour(plan, window, at, reinterpret_cast<uint64_t>(&okp_glue_optimized_entry),
					   reinterpret_cast<uint64_t>(&site), bytes, max_detour_size, &copy_offset);
	};
	size_t length = 0;
	uint64_t code, entry;
	if (plan.needs_landing()) {
		// auipc + c.jr lands at the probe's page offset: a c.j there
		// leads to the detour, on the same page within c.j's reach.
		code = probe_pools.detours.place_with_landing<max_detour_size, 2>(
			window % landing_alignment, c_j_reach, build,
			[&](uint64_t at, uint64_t target, uint8_t *bytes) -> size_t {
				uint8_t jump[max_window_size];
				if (!encode_window_jump(plan, window, at, jump))
					return 0;
				const uint16_t c_j = encode::c_j(int32_t(target - at));
				bytes[0] = uint8_t(c_j);
				bytes[1] = uint8_t(c_j >> 8);
				return 2;
			},
			&length, &entry);
	} else {
		code = probe_pools.detours.place<max_detour_size>(
			[&](uint64_t at, uint8_t *bytes) -> size_t {
				uint8_t jump[max_window_size];
				return encode_window_jump(plan, window, at, jump) ? build(at, at, bytes) : 0;
			},
			&length);
		entry = code;
	}
	if (!code)
		return plan.needs_landing() ? "no detour memory within reach of auipc with a free landing"
					    : "no detour memory within reach of auipc+jalr";
	detour.code = code;
	detour.entry = entry;
	detour.copy = code + copy_offset;
	detour.size = static_cast<uint16_t>(length);
	return nullptr;
}

// An argument-only detour saves the argument registers and temporaries
// only (build_args_detour); its entry calls no handler of pt_regs.
bool has_args_detour()
{
	return true;
}

void release_detour(const Detour &detour)
{
	// c.ebreak over the old code and its landing: a stale jump traps loudly.
	const bool landing = detour.entry != detour.code;
	probe_pools.detours.release<max_detour_size>(detour.code, detour.size, c_ebreak_bytes,
						     landing ? detour.entry : 0, landing ? sizeof(c_ebreak_bytes) : 0);
}

// Each waiting site has its breakpoint over its first instruction and the
// original bytes after it, and no task is inside the window (the rcu-tasks
// grace period since its detour was published). One stop_machine() for the
// batch writes every window whole, "auipc; jalr" or "auipc; c.jr": no hart
// runs while the bytes change, and each runs fence.i before it goes on.
//
// An end-anchored window (plan.behind) first gets its guard: okprobe's
// breakpoint over its first instruction, which sends a task to the
// detour's start (hit_path.cpp). After one rcu-tasks grace period for all
// of them no task is inside such a window either (a task preempted inside
// has left it; none has entered since), and it is written with the rest.
void optimize(Site *const *sites, size_t count)
{
	PatchBatch guards(count);
	bool guarded = false;
	const auto write_guards = [&] {
		guards.write();
		guarded = guarded || guards.size();
		guards.clear();
	};
	for (size_t i = 0; i < count; ++i) {
		Site &site = *sites[i];
		uint8_t jump[max_window_size];
		if (!site.arch.plan.behind || !site.current_detour() ||
		    !encode_window_jump(site.arch.plan, window_of(site), site.current_detour()->entry, jump))
			continue;
		if (!holds_breakpoint_over_original(site, riscv::breakpoint_bytes(site), site.arch.instruction.length,
						    site.jump_region_length) ||
		    !text_holds(window_of(site), site.original_behind, site.jump_region_behind)) {
			mark_lost(site, "someone else changed the jump's window under okprobe's ebreak");
			continue;
		}
		if (guards.full())
			write_guards();
		// Before the guard can trap: the handler's sign that it is
		// okprobe's.
		site.patched_behind.store(true, Order::release);
		guards.add(window_of(site), guard_bytes(site), guard_length(site), site);
	}
	write_guards();
	if (guarded)
		okp_glue_synchronize(OKP_GRACE_TASKS);

	PatchBatch windows(count);
	const auto write = [&] {
		windows.write();
		for (size_t i = 0; i < windows.size(); ++i)
			windows.site(i).patched_bytes = windows.site(i).jump_region_length;
		windows.clear();
	};
	for (size_t i = 0; i < count; ++i) {
		Site &site = *sites[i];
		uint8_t jump[max_window_size];
		// Only over what okprobe left there: its breakpoint, its guard
		// and the original bytes. Anything else stays a breakpoint.
		if (site.is_lost() || !site.current_detour() ||
		    !encode_window_jump(site.arch.plan, window_of(site), site.current_detour()->entry, jump))
			continue;
		const size_t guard = guard_length(site);
		if (site.arch.plan.behind && !site.patched_behind.load(Order::relaxed))
			continue; // no guard went in
		if ((site.arch.plan.behind && (!text_holds(window_of(site), guard_bytes(site), guard) ||
					       !text_holds(window_of(site) + guard, site.original_behind + guard,
							   site.jump_region_behind - guard))) ||
		    !holds_breakpoint_over_original(site, riscv::breakpoint_bytes(site), site.arch.instruction.length,
						    site.jump_region_length)) {
			mark_lost(site, "someone else changed the jump's window under okprobe's ebreak");
			continue;
		}
		if (windows.full())
			write();
		windows.add(window_of(site), jump, site.arch.plan.window_length, site);
	}
	write();
}

// The reverse, in two steps. A task may have been interrupted between the
// auipc and the jalr (or c.jr), with epc there and tmp loaded: the original
// bytes must not come back under it. So: the breakpoint over every auipc
// (the jalr or c.jr stays: such a task still reaches the detour, and new
// hits trap and run the detour's copy, which stays published until this
// returns); one rcu-tasks grace period, after which no task is between the
// two; then the original bytes after the breakpoints. An end-anchored
// window's breakpoint over its auipc is its guard (new hits run the whole
// detour from its start); its original bytes, guard included, then come
// back with the probe's breakpoint at the probed address.
void unoptimize(Site *const *sites, size_t count)
{
	PatchBatch patches(count);
	for (size_t i = 0; i < count; ++i) {
		Site &site = *sites[i];
		uint8_t jump[max_window_size];
		// Only over okprobe's own jump.
		if (!encode_window_jump(site.arch.plan, window_of(site), site.current_detour()->entry, jump) ||
		    !text_holds(window_of(site), jump, site.arch.plan.window_length)) {
			mark_lost(site, "someone else changed okprobe's jump");
			continue;
		}
		if (patches.full()) {
			patches.write();
			patches.clear();
		}
		patches.add(window_of(site), guard_bytes(site), guard_length(site), site);
	}
	patches.write();
	patches.clear();
	okp_glue_synchronize(OKP_GRACE_TASKS);
	for (size_t i = 0; i < count; ++i) {
		Site &site = *sites[i];
		if (site.is_lost())
			continue;
		if (patches.full()) {
			patches.write();
			patches.clear();
		}
		const size_t first = site.arch.instruction.length;
		if (site.arch.plan.behind) {
			// The window whole: its original bytes, and the
			// probe's breakpoint at the probed address (the last
			// instruction: nothing of the window follows it).
			uint8_t bytes[max_window_size];
			const size_t behind = site.jump_region_behind;
			__builtin_memcpy(bytes, site.original_behind, behind);
			__builtin_memcpy(bytes + behind, riscv::breakpoint_bytes(site), first);
			patches.add(window_of(site), bytes, behind + first, site);
		} else {
			patches.add(site.address + first, site.original + first, site.arch.plan.window_length - first,
				    site);
		}
		site.patched_bytes = site.arch.instruction.length;
	}
	patches.write();
	// The guards are out of the text: a trap there is no longer ours.
	for (size_t i = 0; i < count; ++i)
		if (sites[i]->arch.plan.behind && !sites[i]->is_lost())
			sites[i]->patched_behind.store(false, Order::release);
}

} // namespace okp::arch
