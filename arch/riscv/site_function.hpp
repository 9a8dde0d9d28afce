// SPDX-License-Identifier: GPL-2.0
// The function holding a riscv site, decoded whole with its pieces and the
// edges its bytes do not show: jump labels (a nop that may become a jump)
// and exception fixups (a fault that resumes elsewhere). Its liveness
// analysis is what planning a jump costs most; the writer keeps the last
// one (ProbePools::last_function) for the next site in the same function,
// while the function's bytes, its pieces' and its edges stay the same.
// Defined in optimizer.cpp. Large: allocated.
#pragma once

#include "core/function_cache.hpp"
#include "core/function_text.hpp"
#include "riscv/function_analysis.hpp"

namespace okp {
struct Site;
}

namespace okp::riscv {

constexpr size_t max_edges = 64;

struct SiteFunction {
	FunctionText text;
	FunctionText pieces[max_pieces];
	CodeRange ranges[max_pieces];
	TextKey piece_keys[max_pieces];
	size_t piece_count = 0;
	ExtraEdge edges[max_edges];
	size_t edge_count = 0;
	FunctionAnalysis analysis;

	// Reads and analyses the site's function: nullptr, or why it cannot.
	const char *analyse(const Site &site, const OriginalText &original);
	// Whether the pieces still hold the bytes analysed (and no kernel
	// kprobe) and the function and pieces the same edges.
	bool still_holds(const OriginalText &original) const;

private:
	const char *collect_edges(ExtraEdge (&found)[max_edges], size_t *count) const;
	const char *add_edges_of(const CodeRange &range, ExtraEdge (&found)[max_edges], size_t *count) const;
	const char *add_edge(const ExtraEdge &edge, ExtraEdge (&found)[max_edges], size_t *count) const;
	bool in_function(uint64_t address) const
	{
		return address >= text.range.address && address < text.range.address + text.range.size;
	}
};

} // namespace okp::riscv
