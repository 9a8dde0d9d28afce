// SPDX-License-Identifier: GPL-2.0
// okprobe_riscv_bench_sites: make bench's sample of riscv64 kernel
// instruction boundaries (x86_bench_sites.cpp's, for riscv).
//
//   okprobe_riscv_bench_sites VMLINUX SYSTEM.MAP COUNT OUTPUT
//
// Walks every function of the kernel's .text (function starts from
// System.map) with okprobe's RV64GC decoder, compressed instructions
// included, and samples its boundaries (bench_sample.hpp). Skipped: other
// sections (init text is freed after boot), functions whose name another
// symbol shares ("symbol offset" must name one place), and what follows an
// undecodable instruction. Nothing is filtered by either mechanism's rules;
// a site in an LR/SC sequence is tagged "lr-sc": the kernel's kprobes take
// it, and the loop around it then never ends once it runs (okptest keeps
// it from them).
#include "bench_sample.hpp"
#include "riscv/instruction_decoder.hpp"
#include "riscv/probe_rules.hpp"
#include "riscv_kernel.hpp"

#include <cstdlib>
#include <map>

namespace {

const char *lr_sc_tag(const okp::host::SampleBoundary &boundary)
{
	return okp::riscv::in_lr_sc_sequence(boundary.function, boundary.function_size, boundary.offset) ? "lr-sc"
													 : nullptr;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 5) {
		std::cerr << "usage: " << argv[0] << " VMLINUX SYSTEM.MAP COUNT OUTPUT\n";
		return 2;
	}
	okp::riscv::host::Kernel kernel;
	if (!okp::riscv::host::load_kernel(argv[1], argv[2], kernel)) {
		std::cerr << argv[0] << ": cannot read " << argv[1] << " and " << argv[2] << "\n";
		return 1;
	}
	std::map<std::string, int> name_count;
	for (const auto &symbol : kernel.functions)
		++name_count[symbol.name];
	std::vector<okp::host::SampleBoundary> boundaries;
	long functions = 0, ambiguous = 0;
	for (size_t first = 0; first < kernel.functions.size();) {
		size_t last = first;
		while (last + 1 < kernel.functions.size() &&
		       kernel.functions[last + 1].address == kernel.functions[first].address)
			++last;
		const size_t next = last + 1;
		const uint64_t start = kernel.functions[first].address;
		const auto *section = kernel.section_of(start);
		if (!section || section->name != ".text") {
			first = next;
			continue;
		}
		uint64_t end = section->address + section->size;
		if (next < kernel.functions.size())
			end = std::min(end, kernel.functions[next].address);
		const std::string *name = nullptr;
		for (size_t i = first; i <= last && !name; ++i)
			if (name_count[kernel.functions[i].name] == 1)
				name = &kernel.functions[i].name;
		if (!name) {
			++ambiguous;
			first = next;
			continue;
		}
		++functions;
		const uint8_t *bytes = kernel.bytes_at(start);
		for (uint64_t offset = 0; offset < end - start;) {
			const okp::riscv::Instruction insn =
				okp::riscv::decode_instruction(bytes + offset, end - start - offset);
			if (insn.length == 0)
				break; // no boundary beyond what does not decode can be proven
			boundaries.push_back({name, offset, bytes, end - start});
			offset += insn.length;
		}
		first = next;
	}
	char about[160];
	std::snprintf(about, sizeof(about), "%ld functions of .text; skipped %ld ambiguously named functions",
		      functions, ambiguous);
	return okp::host::write_bench_sample(argv[0], boundaries, std::strtol(argv[3], nullptr, 10), about, argv[4],
					     lr_sc_tag);
}
