// SPDX-License-Identifier: GPL-2.0
// How a riscv64 detour is laid out, shared by the full detour
// (detour.cpp) and the argument-only one (args_detour.cpp):
//   [the prefix]   an end-anchored window's instructions before the probed
//                  one, relocated (relocate_prefix)
//   the frame      save, call, restore: written by the detour's builder
//   the copy       the window from the probed instruction on, relocated,
//                  ending in the jump back (written first, by
//                  relocate_behind: the frame's size must be known)
//   [the tail]     code only branches reach (the copy ends in a jump)
//   the literals   8-byte aligned
// Offsets in a Layout are from the frame's start.
#pragma once

#include "riscv/code_writer.hpp"

namespace okp::riscv {

struct Layout {
	size_t frame = 0, copy = 0, tail = 0, literal = 0;
};

// Writes plan's window copy, from its instruction first on, behind a frame
// of frame_size bytes (the frame at detour_address, out), leaving
// tail_size bytes after it; false when it cannot.
bool relocate_behind(const OptimizationPlan &plan, uint64_t address, uint8_t first, uint64_t detour_address,
		     size_t frame_size, uint8_t *out, size_t capacity, Layout &layout, size_t tail_size = 0);

// With the frame written: steps over the copy to the tail.
bool skip_to_tail(CodeWriter &code, const Layout &layout);

// With the tail written: never-run nops up to the literals, then the first
// literal. The detour's length so far, or 0 when something did not fit.
size_t finish_literals(CodeWriter &code, const Layout &layout, uint64_t literal);

// The frame, the copy, no tail and one literal: the detour's length, or 0
// when the frame came out another size or something did not fit.
size_t finish_detour(CodeWriter &code, const Layout &layout, uint64_t literal);

// An end-anchored window's instructions before the probed one run first,
// ahead of the frame: their copy at the detour's start, its length in
// prefix (0 for another window). False when the plan or the detour's
// alignment refuses, or the copy does not fit.
bool relocate_prefix(const OptimizationPlan &plan, uint64_t address, uint64_t detour_address, uint8_t *out,
		     size_t capacity, size_t &prefix);

} // namespace okp::riscv
