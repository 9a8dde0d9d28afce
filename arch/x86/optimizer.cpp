// SPDX-License-Identifier: GPL-2.0
// x86-64's jump hooks: whether a 5-byte jmp may replace a site's int3 (the
// plan, from jump_optimization.cpp over the whole function), the site's
// detour, and the breakpoint-first patching of jumps in and out. When they
// run is src/core/probe_table.cpp's (the optimizer).
#include "core/core_api.h"
#include "core/function_text.hpp"
#include "core/kernel_facts.hpp"
#include "core/patch_batch.hpp"
#include "core/probe_table.hpp"
#include "x86/detour.hpp"
#include "x86/glue_services.h"
#include "x86/jump_optimization.hpp"
#include "x86/probe_pools.hpp"

namespace okp::arch {

using namespace okp::x86;

namespace {

// Whether the pieces read for decoded still hold the same bytes, with no
// kernel kprobe in them.
bool same_pieces(const DecodedFunction &decoded, const OriginalText &original)
{
	for (size_t p = 0; p < decoded.piece_count; ++p) {
		const TextKey &piece = decoded.pieces[p];
		FunctionText text;
		if (original.changed_by_others(piece.address, piece.size) ||
		    text.read(original, piece.address, piece.size) ||
		    !(TextKey::of(text.bytes, piece.size, piece.address) == piece))
			return false;
	}
	return true;
}

// The map of the site's function and its pieces: decoded once, kept for
// the next site while neither changes. nullptr and *why when not.
const FunctionMap *function_map(const Site &site, const CodeRange &function, const OriginalText &original,
				const char **why)
{
	*why = "out of memory";
	DecodedFunction *decoded = decoded_function(function.bytes, function.size, function.address);
	if (decoded && decoded->pieces_added) {
		if (same_pieces(*decoded, original))
			return &decoded->map;
		probe_pools.last_function.clear();
		decoded = decoded_function(function.bytes, function.size, function.address);
	}
	if (!decoded)
		return nullptr;
	uint64_t targets[max_external_targets];
	const size_t target_count = decoded->map.external_jump_targets(targets, max_external_targets);
	FunctionText pieces[max_pieces];
	CodeRange ranges[max_pieces];
	size_t piece_count = 0;
	*why = read_pieces(original, site.description, function, targets, target_count, pieces, ranges, &piece_count);
	if (*why)
		return nullptr;
	for (size_t p = 0; p < piece_count; ++p) {
		if (!decoded->map.add_piece(ranges[p], probe_pools.thunks)) {
			probe_pools.last_function.clear();
			*why = "out of memory";
			return nullptr;
		}
		decoded->pieces[p] = TextKey::of(ranges[p].bytes, ranges[p].size, ranges[p].address);
	}
	decoded->map.finish();
	decoded->piece_count = piece_count;
	decoded->pieces_added = true;
	return &decoded->map;
}

// Why an exception-table entry in the function refuses every jump in it (a
// fixup could resume inside one), or nullptr. One range query; address by
// address where the kernel's table is unknown.
const char *exception_refusal(const CodeRange &function, const FunctionMap &map)
{
	okp_exception_entry first;
	long found = okp_glue_exception_entries_within(function.address, function.address + function.size, &first, 1);
	for (size_t offset = 0; found < 0 && offset < map.size(); ++offset)
		if (map.starts_at(offset) && kernel::has_exception_entry(function.address + offset))
			found = 1;
	return found > 0 ? optimization_refusal_text(OptimizationRefusal::exception_entry) : nullptr;
}

} // namespace

const char *plan_jump(Site &site, const OriginalText &original)
{
	uint64_t start = 0, size = 0;
	if (!kernel::function_of(site.address, &start, &size))
		return "no function is known at the address";
	FunctionText function;
	if (const char *why = function.read(original, start, size))
		return why;
	const char *map_refusal = nullptr;
	const FunctionMap *map = function_map(site, function.range, original, &map_refusal);
	if (!map)
		return map_refusal;
	const OptimizationPlan plan = plan_jump_optimization(function.range, *map, site.address, probe_pools.thunks);
	if (plan.refusal != OptimizationRefusal::none)
		return optimization_refusal_text(plan.refusal);
	if (const char *refusal = exception_refusal(function.range, *map))
		return refusal;
	if (const char *why = kernel::reserved(site.address, plan.region_length))
		return why;
	// The targets decoding could not see: disabled jump labels' (nops).
	const int jump_label =
		okp_glue_jump_label_target_within(site.address + 1, site.address + jump_size, start, start + size);
	if (jump_label > 0)
		return "a jump label targets the inside of the jump";
	if (jump_label < 0)
		return "the function has jump labels and the kernel's jump table is unknown";
	site.arch.plan = plan;
	site.arch.flags_dead = status_flags_dead(function.bytes, size, site.address - start);
	site.arch.call_flags_dead = status_flags_dead(function.bytes, size, site.address - start, ClobberedFlags::call);
	__builtin_memcpy(site.arch.region, function.bytes + (site.address - start), plan.region_length);
	site.jump_region_length = plan.region_length;
	return nullptr;
}

const char *build_detour(Site &site, const DirectHit &direct, Detour &detour)
{
	DetourCall call = probe_pools.detour_call;
	call.context = reinterpret_cast<uint64_t>(&site);
	call.direct = direct;
	const CounterCall counter{site.counter_cells, site.arch.flags_dead};
	size_t length = 0, copy_at = 0;
	const uint64_t code = probe_pools.detours.place<max_detour_size>(
		[&](uint64_t at, uint8_t *bytes) -> size_t {
			uint8_t jump[jump_size];
			if (!build_jump(site.address, at, jump))
				return 0;
			if (site.counting()) {
				copy_at = counting_prologue_size(counter);
				return x86::build_counting_detour(site.arch.plan, site.arch.region, site.address,
								  probe_pools.thunks, at, counter, bytes,
								  max_detour_size);
			}
			if (detour.args_record) {
				ArgsCall args{call, site.arch.call_flags_dead};
				args.call.entry = probe_pools.args_entry;
				return x86::build_args_detour(site.arch.plan, site.arch.region, site.address,
							      probe_pools.thunks, at, args, bytes, max_detour_size,
							      &copy_at);
			}
			return x86::build_detour(site.arch.plan, site.arch.region, site.address, probe_pools.thunks, at,
						 call, bytes, max_detour_size, &copy_at);
		},
		&length);
	if (!code)
		return "no detour memory within reach of a jump";
	detour.code = code;
	detour.entry = code;
	detour.copy = code + copy_at;
	detour.size = static_cast<uint16_t>(length);
	return nullptr;
}

bool has_args_detour()
{
	return true;
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
		if (!site.current_detour() || !build_jump(site.address, site.current_detour()->entry, jump))
			continue;
		if (!holds_breakpoint_over_original(site, &int3, 1, jump_size)) {
			mark_lost(site, "someone else changed the jump's region under okprobe's int3");
			continue;
		}
		// Either batch may have fallen back to its small stack
		// batch when memory was short: whichever fills first.
		if (heads.full() || tails.full())
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
		if (!build_jump(site.address, site.current_detour()->entry, jump) ||
		    !text_holds(site.address, jump, jump_size)) {
			mark_lost(site, "someone else changed okprobe's jump");
			continue;
		}
		if (heads.full() || tails.full())
			write_in_order(heads, tails, 1);
		heads.add(site.address, &int3, 1, site);
		tails.add(site.address + 1, site.original + 1, jump_size - 1, site);
	}
	write_in_order(heads, tails, 1);
}

} // namespace okp::arch
