// SPDX-License-Identifier: GPL-2.0
// x86-64's jump hooks: whether a 5-byte jmp may replace a site's int3 (the
// plan, from jump_optimization.cpp over the whole function), the site's
// detour, and the breakpoint-first patching of jumps in and out. When they
// run is src/core/probe_table.cpp's (the optimizer).
#include "core/core_api.h"
#include "core/function_text.hpp"
#include "core/patch_batch.hpp"
#include "core/probe_table.hpp"
#include "x86/detour.hpp"
#include "x86/glue_services.h"
#include "x86/jump_optimization.hpp"
#include "x86/probe_pools.hpp"

namespace okp::arch {

using namespace okp::x86;

const char *plan_jump(Site &site, const KernelFacts &facts)
{
	uint64_t start = 0, size = 0;
	if (!facts.function_of(site.address, &start, &size, facts.context))
		return "no function is known at the address";
	FunctionText function;
	if (const char *why = function.read(facts, start, size))
		return why;
	uint64_t targets[max_external_targets];
	const size_t target_count =
		external_jump_targets(function.range, probe_pools.thunks, targets, max_external_targets);
	FunctionText pieces[max_pieces];
	CodeRange ranges[max_pieces];
	size_t piece_count = 0;
	if (const char *why = read_pieces(facts, site.description, function.range, targets, target_count, pieces,
					  ranges, &piece_count))
		return why;
	const OptimizationPlan plan =
		plan_jump_optimization(function.range, ranges, piece_count, site.address, probe_pools.thunks,
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
	site.arch.plan = plan;
	__builtin_memcpy(site.arch.region, function.bytes + (site.address - start), plan.region_length);
	site.jump_region_length = plan.region_length;
	return nullptr;
}

const char *build_detour(Site &site, Detour &detour)
{
	DetourCall call = probe_pools.detour_call;
	call.context = reinterpret_cast<uint64_t>(&site);
	size_t length = 0;
	const uint64_t code = probe_pools.detours.place<max_detour_size>(
		[&](uint64_t at, uint8_t *bytes) -> size_t {
			uint8_t jump[jump_size];
			if (!build_jump(site.address, at, jump))
				return 0;
			return x86::build_detour(site.arch.plan, site.arch.region, site.address, probe_pools.thunks, at,
						 call, bytes, max_detour_size);
		},
		&length);
	if (!code)
		return "no detour memory within reach of a jump";
	detour.code = code;
	detour.entry = code;
	detour.copy = code + detour_frame_size(call);
	detour.size = static_cast<uint16_t>(length);
	return nullptr;
}

void release_detour(const Detour &detour)
{
	static constexpr uint8_t breakpoint[1] = {int3};
	probe_pools.detours.release<max_detour_size>(detour.code, detour.size, breakpoint);
}

namespace {

// Writes first, then second (one sync each), then records each written
// site's patched bytes.
void write_in_order(PatchBatch &first, PatchBatch &second, uint8_t patched_bytes)
{
	first.write();
	second.write();
	for (size_t i = 0; i < second.size(); ++i)
		second.site(i).patched_bytes = patched_bytes;
	first.clear();
	second.clear();
}

} // namespace

// The breakpoint is at the first byte and every CPU traps there (and goes
// on in the detour's copy): write bytes 2-5 of every jump, sync, then
// their first bytes, sync. As text_poke_bp_batch(), for the whole batch.
void optimize(Site *const *sites, size_t count)
{
	PatchBatch tails(count), heads(count);
	for (size_t i = 0; i < count; ++i) {
		Site &site = *sites[i];
		uint8_t jump[jump_size];
		// Only over what okprobe left there: its breakpoint and the
		// original bytes. Anything else stays a breakpoint.
		if (!site.detour || !build_jump(site.address, site.detour->entry, jump))
			continue;
		if (!holds_breakpoint_over_original(site, &int3, 1, jump_size)) {
			mark_lost(site, "someone else changed the jump's region under okprobe's int3");
			continue;
		}
		if (heads.full())
			write_in_order(tails, heads, jump_size);
		tails.add(site.address + 1, jump + 1, jump_size - 1, site);
		heads.add(site.address, jump, 1, site);
	}
	write_in_order(tails, heads, jump_size);
}

// The reverse: the breakpoint over every jump's first byte, sync, the
// original bytes 2-5, sync. The breakpoints stay.
void unoptimize(Site *const *sites, size_t count)
{
	PatchBatch heads(count), tails(count);
	for (size_t i = 0; i < count; ++i) {
		Site &site = *sites[i];
		uint8_t jump[jump_size];
		// Only over okprobe's own jump.
		if (!build_jump(site.address, site.detour->entry, jump) || !text_holds(site.address, jump, jump_size)) {
			mark_lost(site, "someone else changed okprobe's jump");
			continue;
		}
		if (heads.full())
			write_in_order(heads, tails, 1);
		heads.add(site.address, &int3, 1, site);
		tails.add(site.address + 1, site.original + 1, jump_size - 1, site);
	}
	write_in_order(heads, tails, 1);
}

} // namespace okp::arch
