// SPDX-License-Identifier: GPL-2.0
#include "x86_kernel_image.hpp"

#include <algorithm>
#include <cstring>
#include <elf.h>
#include <fstream>
#include <iterator>
#include <sstream>

namespace okp::host {

const KernelSection *KernelImage::section_of(uint64_t address) const
{
	for (const KernelSection &s : text)
		if (s.address <= address && address < s.address + s.size)
			return &s;
	return nullptr;
}

uint64_t KernelImage::end_of(size_t index) const
{
	const KernelSection *section = section_of(symbols[index].address);
	uint64_t end = section->address + section->size;
	for (size_t next = index + 1; next < symbols.size(); ++next) {
		if (symbols[next].address > symbols[index].address) {
			end = std::min(end, symbols[next].address);
			break;
		}
	}
	return end;
}

long overlay_runtime_text(const char *path, KernelImage &kernel)
{
	std::ifstream file(path, std::ios::binary);
	const std::vector<uint8_t> text{std::istreambuf_iterator<char>(file), {}};
	const auto start = kernel.by_name.find("_stext"), end = kernel.by_name.find("_etext");
	if (start == kernel.by_name.end() || end == kernel.by_name.end() || text.size() != end->second - start->second)
		return -1;
	const KernelSection *section = kernel.section_of(start->second);
	if (!section || end->second > section->address + section->size)
		return -1;
	uint8_t *bytes = kernel.image.data() + section->offset + (start->second - section->address);
	long changed = 0;
	for (size_t i = 0; i < text.size(); ++i)
		changed += bytes[i] != text[i];
	std::copy(text.begin(), text.end(), bytes);
	return changed;
}

const uint8_t *KernelImage::bytes_at(uint64_t address) const
{
	const KernelSection *section = section_of(address);
	return image.data() + section->offset + (address - section->address);
}

bool load_kernel_image(const char *vmlinux_path, const char *kallsyms_path, KernelImage &kernel)
{
	std::ifstream file(vmlinux_path, std::ios::binary);
	kernel.image.assign(std::istreambuf_iterator<char>(file), {});
	if (kernel.image.size() < sizeof(Elf64_Ehdr))
		return false;
	Elf64_Ehdr header;
	memcpy(&header, kernel.image.data(), sizeof(header));
	const auto section_header = [&](unsigned index) {
		Elf64_Shdr section;
		memcpy(&section, kernel.image.data() + header.e_shoff + index * sizeof(section), sizeof(section));
		return section;
	};
	const Elf64_Shdr names = section_header(header.e_shstrndx);
	std::vector<KernelSection> data; // every section with contents
	for (unsigned i = 0; i < header.e_shnum; ++i) {
		const Elf64_Shdr section = section_header(i);
		const char *name =
			reinterpret_cast<const char *>(kernel.image.data() + names.sh_offset + section.sh_name);
		// Code, not writable: 7.3's linker marks .data executable too
		// (WAX), and kallsyms then calls its objects text ('T').
		if (section.sh_type == SHT_PROGBITS && (section.sh_flags & SHF_EXECINSTR) &&
		    !(section.sh_flags & SHF_WRITE))
			kernel.text.push_back({name, section.sh_addr, section.sh_size, section.sh_offset});
		const auto relative = [&](uint64_t at) {
			int32_t value;
			memcpy(&value, kernel.image.data() + section.sh_offset + at, 4);
			return section.sh_addr + at + value;
		};
		// __ex_table: 12-byte entries {int insn, fixup, data}, each
		// relative to its own field.
		if (std::strcmp(name, "__ex_table") == 0) {
			for (uint64_t at = 0; at + 12 <= section.sh_size; at += 12) {
				kernel.exception_sites.push_back(relative(at));
				kernel.hidden_edges.emplace_back(relative(at), relative(at + 4));
			}
		}
		if (section.sh_type == SHT_PROGBITS)
			data.push_back({name, section.sh_addr, section.sh_size, section.sh_offset});
		// .return_sites: ints, each relative to itself.
		if (std::strcmp(name, ".return_sites") == 0)
			for (uint64_t at = 0; at + 4 <= section.sh_size; at += 4)
				kernel.return_sites.push_back(relative(at));
	}
	std::sort(kernel.exception_sites.begin(), kernel.exception_sites.end());
	std::sort(kernel.return_sites.begin(), kernel.return_sites.end());

	std::ifstream lines(kallsyms_path);
	std::string line;
	while (std::getline(lines, line)) {
		std::istringstream fields(line);
		std::string address, type, name;
		if (!(fields >> address >> type >> name))
			continue;
		const uint64_t value = std::stoull(address, nullptr, 16);
		kernel.by_name.emplace(name, value);
		++kernel.name_count[name];
		if (kernel.section_of(value))
			kernel.symbols.push_back({value, name});
	}
	std::sort(kernel.symbols.begin(), kernel.symbols.end(),
		  [](const KernelSymbol &a, const KernelSymbol &b) { return a.address < b.address; });
	// The jump table lies in a data section, between linker symbols:
	// 16-byte entries {int code, target; long key}, relative to their
	// fields.
	const auto start = kernel.by_name.find("__start___jump_table");
	const auto stop = kernel.by_name.find("__stop___jump_table");
	for (const KernelSection &section : data) {
		if (start == kernel.by_name.end() || stop == kernel.by_name.end() || start->second < section.address ||
		    stop->second > section.address + section.size)
			continue;
		for (uint64_t at = start->second; at + 16 <= stop->second; at += 16) {
			int32_t code, target;
			const uint8_t *entry = kernel.image.data() + section.offset + (at - section.address);
			memcpy(&code, entry, 4);
			memcpy(&target, entry + 4, 4);
			kernel.hidden_edges.emplace_back(at + code, at + 4 + target);
		}
	}
	std::sort(kernel.hidden_edges.begin(), kernel.hidden_edges.end());
	return !kernel.symbols.empty();
}

okp::x86::Thunks kernel_thunks(const KernelImage &kernel)
{
	using namespace okp::x86;
	Thunks thunks;
	thunks.return_thunk = kernel.by_name.at(return_thunk_symbol);
	for (int reg = 0; reg < 16; ++reg) {
		const char *name = indirect_thunk_symbols[reg];
		const auto it = name ? kernel.by_name.find(name) : kernel.by_name.end();
		thunks.indirect_thunk[reg] = it == kernel.by_name.end() ? 0 : it->second;
		for (size_t v = 0; name && v < indirect_jump_thunk_variant_count; ++v) {
			const std::string variant = std::string(indirect_jump_thunk_prefixes[v]) +
						    (name + sizeof(indirect_thunk_prefix) - 1);
			const auto found = kernel.by_name.find(variant);
			thunks.indirect_jump_thunk_variants[v][reg] = found == kernel.by_name.end() ? 0 : found->second;
		}
	}
	for (size_t i = 0; i < return_thunk_variant_count; ++i) {
		const auto it = kernel.by_name.find(return_thunk_variant_symbols[i]);
		thunks.return_thunk_variants[i] = it == kernel.by_name.end() ? 0 : it->second;
	}
	bound_thunks(thunks);
	return thunks;
}

} // namespace okp::host
