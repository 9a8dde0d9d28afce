// SPDX-License-Identifier: GPL-2.0
// The x86 instruction analysis over every function of Debian's stock 6.1
// kernel: the vmlinux unpacked from linux-image-6.1.0-*-amd64's vmlinuz, with
// function starts from the same kernel's /proc/kallsyms (booted nokaslr).
//
// Needs OKPROBE_X86_VMLINUX and OKPROBE_X86_KALLSYMS (tools/check sets them
// in its x86 stage); prints a census of what a breakpoint probe would do at
// each instruction.
#include "x86/instruction_analysis.hpp"
#include "x86/instruction_decoder.hpp"
#include "x86/out_of_line.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace okp::x86;

struct Section {
	uint64_t address, size, offset;
};

struct Symbol {
	uint64_t address;
	std::string name;
};

struct Kernel {
	std::vector<uint8_t> image;
	std::vector<Section> text; // executable sections
	std::vector<Symbol> symbols;
	std::map<std::string, uint64_t> by_name;

	const Section *section_of(uint64_t address) const
	{
		for (const Section &s : text)
			if (s.address <= address && address < s.address + s.size)
				return &s;
		return nullptr;
	}
};

const Kernel *load_kernel()
{
	static Kernel kernel;
	static bool loaded = false;
	if (loaded)
		return kernel.symbols.empty() ? nullptr : &kernel;
	loaded = true;
	const char *vmlinux = std::getenv("OKPROBE_X86_VMLINUX");
	const char *kallsyms = std::getenv("OKPROBE_X86_KALLSYMS");
	if (!vmlinux || !kallsyms)
		return nullptr;

	std::ifstream image(vmlinux, std::ios::binary);
	kernel.image.assign(std::istreambuf_iterator<char>(image), {});
	if (kernel.image.size() < sizeof(Elf64_Ehdr))
		return nullptr;
	Elf64_Ehdr header;
	memcpy(&header, kernel.image.data(), sizeof(header));
	for (unsigned i = 0; i < header.e_shnum; ++i) {
		Elf64_Shdr section;
		memcpy(&section, kernel.image.data() + header.e_shoff + i * sizeof(section), sizeof(section));
		if (section.sh_type == SHT_PROGBITS && (section.sh_flags & SHF_EXECINSTR))
			kernel.text.push_back({section.sh_addr, section.sh_size, section.sh_offset});
	}

	std::ifstream lines(kallsyms);
	std::string line;
	while (std::getline(lines, line)) {
		std::istringstream fields(line);
		std::string address, type, name;
		if (!(fields >> address >> type >> name))
			continue;
		const uint64_t value = std::stoull(address, nullptr, 16);
		kernel.by_name.emplace(name, value);
		if (kernel.section_of(value))
			kernel.symbols.push_back({value, name});
	}
	std::sort(kernel.symbols.begin(), kernel.symbols.end(),
		  [](const Symbol &a, const Symbol &b) { return a.address < b.address; });
	return kernel.symbols.empty() ? nullptr : &kernel;
}

struct Census {
	long functions = 0, fully_decoded = 0, instructions = 0;
	long copy = 0, rip_relative = 0, emulated = 0, return_thunk = 0, indirect_thunk = 0;
	long unreachable_slots = 0;
	long padding_bytes = 0; // int3 fill up to the next symbol
	std::map<Refusal, long> refusals;
	std::vector<std::string> undecodable_at;
};

Census take_census(const Kernel &kernel)
{
	Thunks thunks;
	thunks.return_thunk = kernel.by_name.at("__x86_return_thunk");
	const char *const registers[16] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
					   "r8",  "r9",	 "r10", "r11", "r12", "r13", "r14", "r15"};
	for (int reg = 0; reg < 16; ++reg) {
		auto it = kernel.by_name.find(std::string("__x86_indirect_thunk_") + registers[reg]);
		thunks.indirect_thunk[reg] = it == kernel.by_name.end() ? 0 : it->second;
	}
	// Where okprobe's slots live: module space, within rel32 of the kernel.
	const uint64_t slot_address = 0xffffffffc0100000;

	Census census;
	for (size_t i = 0; i < kernel.symbols.size(); ++i) {
		const Symbol &symbol = kernel.symbols[i];
		if (i + 1 < kernel.symbols.size() && kernel.symbols[i + 1].address == symbol.address)
			continue; // an alias: count the function once
		const Section *section = kernel.section_of(symbol.address);
		uint64_t end = section->address + section->size;
		if (i + 1 < kernel.symbols.size())
			end = std::min(end, kernel.symbols[i + 1].address);
		const uint8_t *bytes = kernel.image.data() + section->offset + (symbol.address - section->address);
		++census.functions;
		bool complete = true;
		for (uint64_t at = symbol.address; at < end;) {
			const size_t available = std::min<uint64_t>(end - at, max_instruction_length);
			const uint8_t *insn = bytes + (at - symbol.address);
			const Analysis a = analyze_instruction(insn, available, at, thunks);
			if (a.refusal == Refusal::breakpoint &&
			    std::all_of(insn, insn + (end - at), [](uint8_t b) { return b == 0xcc; })) {
				census.padding_bytes += end - at;
				break;
			}
			++census.instructions;
			if (a.refusal == Refusal::undecodable) {
				complete = false;
				std::ostringstream where;
				where << symbol.name << "+0x" << std::hex << (at - symbol.address);
				census.undecodable_at.push_back(where.str());
				break;
			}
			switch (a.execution) {
			case Execution::copy:
			case Execution::copy_rip_relative: {
				(a.execution == Execution::copy ? census.copy : census.rip_relative)++;
				uint8_t slot[slot_size];
				if (build_slot(a, insn, at, slot_address, SlotEnd::jump_back, slot) == 0)
					++census.unreachable_slots;
				break;
			}
			case Execution::emulate:
				++census.emulated;
				if (a.transfer == Transfer::ret && insn[0] != 0xc3 && insn[0] != 0xc2)
					++census.return_thunk;
				if (a.transfer == Transfer::call_register || a.transfer == Transfer::jump_register)
					census.indirect_thunk += insn[0] != 0xff && insn[0] != 0x41;
				break;
			case Execution::refuse:
				++census.refusals[a.refusal];
				break;
			}
			at += a.length;
		}
		census.fully_decoded += complete;
	}
	return census;
}

TEST(X86KernelBytes, EveryFunctionOfTheDebianKernel)
{
	const Kernel *kernel = load_kernel();
	if (!kernel)
		GTEST_SKIP() << "OKPROBE_X86_VMLINUX / OKPROBE_X86_KALLSYMS not set";
	const Census census = take_census(*kernel);

	std::cout << "x86 census of Debian's 6.1 vmlinux:\n"
		  << "  functions            " << census.functions << " (" << census.fully_decoded
		  << " decoded to their end)\n"
		  << "  instructions         " << census.instructions << " (and " << census.padding_bytes
		  << " bytes of int3 padding)\n"
		  << "  copied out of line   " << census.copy << "\n"
		  << "  rip-relative, rebased " << census.rip_relative << "\n"
		  << "  emulated             " << census.emulated << " (return-thunk jumps " << census.return_thunk
		  << ", indirect-thunk branches " << census.indirect_thunk << ")\n";
	for (const auto &[refusal, count] : census.refusals)
		std::cout << "  refused: " << refusal_text(refusal) << ": " << count << "\n";
	for (size_t i = 0; i < census.undecodable_at.size() && i < 20; ++i)
		std::cout << "  undecodable at " << census.undecodable_at[i] << "\n";

	EXPECT_GT(census.functions, 40000);
	// Function bodies are code: Zydis must walk virtually all of them.
	EXPECT_GE(census.fully_decoded * 1000, census.functions * 999);
	// Under RETHUNK every return is a jmp to the thunk; under RETPOLINE
	// indirect branches go through the thunks: both must be recognised.
	EXPECT_GT(census.return_thunk, 10000);
	EXPECT_GT(census.indirect_thunk, 1000);
	EXPECT_GT(census.rip_relative, 10000);
	// Every copied instruction can run from a slot in module space.
	EXPECT_EQ(census.unreachable_slots, 0);
	// BUG()/WARN() are ud2 sites and must be refused.
	const auto ud2 = census.refusals.find(Refusal::undefined_opcode);
	EXPECT_TRUE(ud2 != census.refusals.end() && ud2->second > 1000);
}

} // namespace
