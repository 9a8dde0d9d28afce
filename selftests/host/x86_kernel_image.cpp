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
	for (unsigned i = 0; i < header.e_shnum; ++i) {
		const Elf64_Shdr section = section_header(i);
		const char *name =
			reinterpret_cast<const char *>(kernel.image.data() + names.sh_offset + section.sh_name);
		if (section.sh_type == SHT_PROGBITS && (section.sh_flags & SHF_EXECINSTR))
			kernel.text.push_back({name, section.sh_addr, section.sh_size, section.sh_offset});
		// __ex_table: 12-byte entries {int insn, fixup, data}, each
		// relative to its own field.
		if (std::strcmp(name, "__ex_table") != 0)
			continue;
		for (uint64_t at = 0; at + 12 <= section.sh_size; at += 12) {
			int32_t insn;
			memcpy(&insn, kernel.image.data() + section.sh_offset + at, 4);
			kernel.exception_sites.push_back(section.sh_addr + at + insn);
		}
	}
	std::sort(kernel.exception_sites.begin(), kernel.exception_sites.end());

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
	return !kernel.symbols.empty();
}

} // namespace okp::host
