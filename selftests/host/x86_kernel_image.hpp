// SPDX-License-Identifier: GPL-2.0
// Debian's stock 6.1 kernel as host programs see it: the vmlinux unpacked
// from linux-image-6.1.0-*-amd64's vmlinuz (sections, no symbol table) and
// the text symbols of the same kernel's /proc/kallsyms, dumped from a guest
// booted nokaslr so that they are link addresses (tools/okprobe_build.py's
// kernel_symbols).
//
// Shared by the kernel-bytes tests and the benchmark's site sampler.
#pragma once

#include "x86/instruction_analysis.hpp"

#include <stdint.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace okp::host {

struct KernelSection {
	std::string name;
	uint64_t address, size, offset;
};

struct KernelSymbol {
	uint64_t address;
	std::string name;
};

struct KernelImage {
	std::vector<uint8_t> image;
	std::vector<KernelSection> text;	 // executable sections
	std::vector<KernelSymbol> symbols;	 // in executable sections, sorted by address
	std::map<std::string, uint64_t> by_name; // the first address of each name
	std::map<std::string, int> name_count;	 // how many symbols carry each name
	std::vector<uint64_t> exception_sites;	 // sorted: instructions with an __ex_table entry
	// Edges the decoder cannot see, sorted by site: jump labels
	// (__jump_table: a nop's target) and exception fixups (__ex_table).
	std::vector<std::pair<uint64_t, uint64_t>> hidden_edges;
	// objtool's list of the return-thunk jumps (.return_sites), sorted:
	// every return of the kernel's C code and of its RET macro.
	std::vector<uint64_t> return_sites;

	const KernelSection *section_of(uint64_t address) const;
	// Where symbols[index] ends: the next higher symbol or its section's end.
	uint64_t end_of(size_t index) const;
	// The image bytes at a text address (which section_of must know).
	const uint8_t *bytes_at(uint64_t address) const;
};

// Reads vmlinux and the kallsyms dump; false when either is unusable.
bool load_kernel_image(const char *vmlinux_path, const char *kallsyms_path, KernelImage &kernel);

// Puts the running kernel's text in place of the image's: the bytes of
// [_stext, _etext) a guest's QEMU saved (kernel_symbols in
// tools/okprobe_build.py), after alternatives, jump labels, static calls
// and ftrace patched them at boot. Returns how many bytes differ from the
// image's, or -1 when the file does not fit the text.
long overlay_runtime_text(const char *path, KernelImage &kernel);

// The kernel's branch thunks by name, bounded, as the module resolves them
// at run time (arch/x86/breakpoints.cpp).
okp::x86::Thunks kernel_thunks(const KernelImage &kernel);

} // namespace okp::host
