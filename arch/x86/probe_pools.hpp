// SPDX-License-Identifier: GPL-2.0
// x86-64's executable memory and resolved kernel addresses, shared by its
// breakpoint hooks (breakpoints.cpp, which defines them) and its jump hooks
// (optimizer.cpp). Changed only by the probe table's writer.
#pragma once

#include "core/detour_pool.hpp"
#include "core/function_cache.hpp"
#include "core/function_text.hpp"
#include "core/slot_pool.hpp"
#include "x86/detour.hpp"
#include "x86/jump_optimization.hpp"
#include "x86/out_of_line.hpp"

namespace okp::x86 {

constexpr uint8_t int3 = 0xcc;
// Each slot holds two copies: [0, 32) ends in a jmp back (boosted runs and
// runs without handlers), [32, 64) ends in int3 (runs before a post_handler).
constexpr unsigned long slot_bytes = 2 * slot_size;
// Room for 65,536 probes, as riscv's pool (half-size slots, 512 pages):
// okprobe-cover arms tens of thousands of blocks (make bench's 50,000;
// 512 pages refused the 32,769th with ENOMEM). Pages are allocated as
// they fill.
constexpr int max_slot_pages = 1024;

// What the writer keeps of the last function it decoded: its map, and once
// a jump was planned in it, its pieces (read and decoded into the map) and
// their keys, to see that they did not change either.
struct DecodedFunction {
	FunctionMap map;
	bool pieces_added = false;
	size_t piece_count = 0;
	TextKey pieces[max_pieces];
};

struct ProbePools {
	SlotPool<slot_bytes, max_slot_pages> slots;
	DetourPool detours;
	Thunks thunks;
	DetourCall detour_call;	 // all but the context
	uint64_t args_entry = 0; // an argument-only detour's: okp_core_args_hit
	bool thunks_resolved = false;
	LastFunction<DecodedFunction> last_function;
};

extern ProbePools probe_pools;

// The decode of the function at address whose bytes are bytes: the last
// one when the bytes are the same, or nullptr when memory is short.
DecodedFunction *decoded_function(const uint8_t *bytes, size_t size, uint64_t address);

} // namespace okp::x86
