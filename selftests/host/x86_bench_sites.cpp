// SPDX-License-Identifier: GPL-2.0
// okprobe_bench_sites: the sample of kernel instruction boundaries that
// make bench registers with the kernel's kprobes and then with okprobe, to
// count how many each can register and how many each optimizes.
//
//   okprobe_bench_sites VMLINUX KALLSYMS COUNT OUTPUT
//
// Walks every function of the core kernel's .text (Debian's vmlinux, function
// starts from the nokaslr kallsyms dump; see x86_kernel_image.hpp) with
// okprobe's decoder, numbers every instruction boundary in address order and
// takes COUNT of them at a fixed stride: deterministic, uniform over
// instructions, and never two sites close enough to get in each other's
// way. OUTPUT gets "symbol 0xoffset" lines ('#' lines are comments).
//
// Skipped, because no probe can go there at all: entry text (kprobes and
// okprobe both refuse it by section), init and exit text (freed after boot),
// int3 padding, and 6.12's __pfx_ symbols (the nops before each function,
// not a function). Also skipped: functions whose every name is shared with
// another symbol, since "symbol offset" must name one place. Nothing is
// filtered by either mechanism's own rules: that would bias the comparison.
#include "bench_sample.hpp"
#include "x86/instruction_decoder.hpp"
#include "x86_kernel_image.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

using okp::host::KernelImage;

struct Boundary {
	size_t symbol; // index into KernelImage::symbols: the name to use
	uint64_t offset;
};

struct Walk {
	std::vector<Boundary> boundaries;
	long functions = 0, ambiguous_functions = 0, entry_functions = 0;
};

// The symbol among the aliases first...last whose name is unique, if any.
bool unique_name_in_group(const KernelImage &kernel, size_t first, size_t last, size_t &chosen)
{
	for (size_t i = first; i <= last; ++i) {
		if (kernel.name_count.at(kernel.symbols[i].name) == 1) {
			chosen = i;
			return true;
		}
	}
	return false;
}

bool all_int3(const uint8_t *bytes, uint64_t count)
{
	return std::all_of(bytes, bytes + count, [](uint8_t b) { return b == 0xcc; });
}

Walk walk_core_text(const KernelImage &kernel)
{
	const uint64_t entry_start = kernel.by_name.at("__entry_text_start");
	const uint64_t entry_end = kernel.by_name.at("__entry_text_end");
	Walk walk;
	for (size_t first = 0; first < kernel.symbols.size();) {
		size_t last = first;
		while (last + 1 < kernel.symbols.size() &&
		       kernel.symbols[last + 1].address == kernel.symbols[first].address)
			++last;
		const size_t next = last + 1;
		const uint64_t start = kernel.symbols[first].address, end = kernel.end_of(first);
		if (kernel.section_of(start)->name != ".text" || start == end ||
		    kernel.symbols[first].name.rfind("__pfx_", 0) == 0) {
			first = next;
			continue;
		}
		if (start >= entry_start && start < entry_end) {
			++walk.entry_functions;
			first = next;
			continue;
		}
		size_t named;
		if (!unique_name_in_group(kernel, first, last, named)) {
			++walk.ambiguous_functions;
			first = next;
			continue;
		}
		++walk.functions;
		const uint8_t *bytes = kernel.bytes_at(start);
		for (uint64_t offset = 0; offset < end - start;) {
			if (bytes[offset] == 0xcc && all_int3(bytes + offset, end - start - offset))
				break; // padding up to the next function
			const size_t available =
				std::min<uint64_t>(end - start - offset, okp::x86::max_instruction_length);
			const unsigned length = okp::x86::instruction_length(bytes + offset, available);
			if (length == 0)
				break; // no boundary beyond what does not decode can be proven
			walk.boundaries.push_back({named, offset});
			offset += length;
		}
		first = next;
	}
	return walk;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 5) {
		std::cerr << "usage: " << argv[0] << " VMLINUX KALLSYMS COUNT OUTPUT\n";
		return 2;
	}
	KernelImage kernel;
	if (!okp::host::load_kernel_image(argv[1], argv[2], kernel)) {
		std::cerr << argv[0] << ": cannot read " << argv[1] << " and " << argv[2] << "\n";
		return 1;
	}
	const long count = std::strtol(argv[3], nullptr, 10);
	const Walk walk = walk_core_text(kernel);
	std::vector<okp::host::SampleBoundary> boundaries;
	for (const Boundary &b : walk.boundaries)
		boundaries.push_back({&kernel.symbols[b.symbol].name, b.offset});
	char about[160];
	std::snprintf(about, sizeof(about),
		      "%ld functions of .text; skipped %ld entry-text and %ld ambiguously named functions",
		      walk.functions, walk.entry_functions, walk.ambiguous_functions);
	return okp::host::write_bench_sample(argv[0], boundaries, count, about, argv[4]);
}
