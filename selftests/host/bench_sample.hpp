// SPDX-License-Identifier: GPL-2.0
// The sampling both bench samplers share (x86_bench_sites.cpp,
// riscv_bench_sites.cpp): COUNT of a kernel's instruction boundaries, in
// address order, at a fixed stride, written as "symbol 0xoffset" lines for
// okptest's bench suite. Deterministic, uniform over instructions, and
// never two sites close enough to get in each other's way.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace okp::host {

struct SampleBoundary {
	const std::string *name; // the function's (unique) name
	uint64_t offset;
	const uint8_t *function = nullptr; // its bytes, for a tag
	uint64_t function_size = 0;
};

// A word after a sampled site's offset that okptest acts on (riscv's
// "lr-sc"), or nullptr.
using SampleTag = const char *(*)(const SampleBoundary &boundary);

// Writes count of boundaries to path with a first comment line saying
// what was sampled from what (about), each with its tag if any. 0, or 1
// with a message on stderr.
inline int write_bench_sample(const char *program, const std::vector<SampleBoundary> &boundaries, long count,
			      const std::string &about, const char *path, SampleTag tag = nullptr)
{
	const size_t total = boundaries.size();
	if (count <= 0 || static_cast<size_t>(count) > total) {
		std::cerr << program << ": cannot take " << count << " of " << total << " boundaries\n";
		return 1;
	}
	char head[128];
	std::snprintf(head, sizeof(head), "%ld of %zu instruction boundaries (every %zuth) in ", count, total,
		      total / count);
	const std::string summary = head + about;
	std::ofstream out(path);
	out << "# okprobe bench sites: " << summary << "\n";
	for (long k = 0; k < count; ++k) {
		// The middle of the k-th of count equal stretches.
		const SampleBoundary &b = boundaries[(2 * k + 1) * total / (2 * count)];
		const char *word = tag ? tag(b) : nullptr;
		char line[600];
		std::snprintf(line, sizeof(line), "%s 0x%llx%s%s\n", b.name->c_str(),
			      static_cast<unsigned long long>(b.offset), word ? " " : "", word ? word : "");
		out << line;
	}
	out.close();
	if (!out) {
		std::cerr << program << ": cannot write " << path << "\n";
		return 1;
	}
	std::cout << summary << "\n";
	return 0;
}

} // namespace okp::host
