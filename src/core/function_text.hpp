// SPDX-License-Identifier: GPL-2.0
// A probed function's text and its split-off pieces, read once when a site
// plans its jump (arch::plan_jump), for every architecture.
//
// GCC splits a function's unlikely paths into "name.cold" (and clones into
// "name.part.N"); a piece may jump back anywhere into its parent, so the
// planner must decode the pieces too before it can prove that nothing
// lands inside a jump's region.
#pragma once

#include "core/code_range.hpp"
#include "core/original_text.hpp"
#include "core/registration.hpp"

namespace okp {

// Text of a function or piece, read as the original (okprobe's own
// patches undone).
struct FunctionText {
	uint8_t *bytes = nullptr;
	CodeRange range;

	FunctionText() = default;
	FunctionText(const FunctionText &) = delete;
	FunctionText &operator=(const FunctionText &) = delete;
	~FunctionText() { delete[] bytes; }

	// nullptr, or why not.
	const char *read(const OriginalText &text, uint64_t start, uint64_t size);
};

constexpr size_t max_pieces = 4;
constexpr size_t max_external_targets = 64;

// The pieces of the function (described as "name+0x1/0x2 [module]") that
// could jump into it: those of its external jump targets (found by the
// arch's decoder) whose name shares its base ("foo" -> "foo.cold"), and,
// for a piece, the function it was split from. Reads them into pieces and
// ranges; nullptr, or why not.
const char *read_pieces(const OriginalText &text, const char *description, const CodeRange &function,
			const uint64_t *targets, size_t target_count, FunctionText (&pieces)[max_pieces],
			CodeRange (&ranges)[max_pieces], size_t *count);

} // namespace okp
