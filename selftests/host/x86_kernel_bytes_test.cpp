// SPDX-License-Identifier: GPL-2.0
// The x86 instruction analysis over every function of a Debian stock kernel
// (6.1 and 6.12 amd64): the vmlinux unpacked from its vmlinuz, with function
// starts from the same kernel's /proc/kallsyms (booted nokaslr).
//
// Needs OKPROBE_X86_VMLINUX and OKPROBE_X86_KALLSYMS (tools/check sets them
// in its x86 stage); prints a census of what a breakpoint probe would do at
// each instruction.
#include "x86/detour.hpp"
#include "x86/instruction_analysis.hpp"
#include "x86/instruction_decoder.hpp"
#include "x86/jump_optimization.hpp"
#include "x86/out_of_line.hpp"
#include "x86/trap_path.hpp"
#include "x86/zydis_decode.hpp"
#include "x86_insn_differential.hpp"
#include "x86_kernel_image.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace okp::x86;
using okp::CodeRange;

using Kernel = okp::host::KernelImage;

const Kernel *load_kernel()
{
	static Kernel kernel;
	static bool loaded = false;
	if (loaded)
		return kernel.symbols.empty() ? nullptr : &kernel;
	loaded = true;
	const char *vmlinux = std::getenv("OKPROBE_X86_VMLINUX");
	const char *kallsyms = std::getenv("OKPROBE_X86_KALLSYMS");
	if (!vmlinux || !kallsyms || !okp::host::load_kernel_image(vmlinux, kallsyms, kernel))
		return nullptr;
	return &kernel;
}

// The same kernel with the running text laid over vmlinux's
// (OKPROBE_X86_RUNTIME_TEXT); nullptr when either is missing. changed:
// how many bytes the boot patched, -1 when the file does not fit.
const Kernel *load_running_kernel(long *changed)
{
	static Kernel running;
	static long patched = -1;
	static bool loaded = false;
	const Kernel *kernel = load_kernel();
	const char *runtime = std::getenv("OKPROBE_X86_RUNTIME_TEXT");
	if (!kernel || !runtime)
		return nullptr;
	if (!loaded) {
		loaded = true;
		running = *kernel;
		patched = okp::host::overlay_runtime_text(runtime, running);
	}
	*changed = patched;
	return &running;
}

// 6.12's __pfx_ symbols name the padding before each function (nops that
// call-depth tracking may turn into its accounting thunk), not code a
// probe is meant for: kallsyms lists them, the census leaves them out.
bool is_padding(const okp::host::KernelSymbol &symbol)
{
	return symbol.name.rfind("__pfx_", 0) == 0;
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
	const Thunks thunks = kernel_thunks(kernel);
	// Where okprobe's slots live: module space, within rel32 of the kernel.
	const uint64_t slot_address = 0xffffffffc0100000;

	Census census;
	for (size_t i = 0; i < kernel.symbols.size(); ++i) {
		const okp::host::KernelSymbol &symbol = kernel.symbols[i];
		if (i + 1 < kernel.symbols.size() && kernel.symbols[i + 1].address == symbol.address)
			continue; // an alias: count the function once
		if (is_padding(symbol))
			continue;
		const uint64_t end = kernel.end_of(i);
		const uint8_t *bytes = kernel.bytes_at(symbol.address);
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

// The function a .cold or .part piece belongs to ("foo.cold.3" -> "foo").
std::string owner_of_piece(const std::string &name)
{
	for (const char *suffix : {".cold", ".part"}) {
		const size_t at = name.find(suffix);
		if (at != std::string::npos && at > 0)
			return name.substr(0, at);
	}
	return {};
}

struct OptimizationCensus {
	long instructions = 0, optimizable = 0, needs_branch_relocation = 0;
	long functions_with_pieces = 0;
	// Detours built for every optimizable instruction, as the module would
	// (at a module-area address, 1 GiB above the kernel's text).
	long detours_failed = 0;
	size_t detour_bytes_total = 0, detour_bytes_max = 0;
	std::map<OptimizationRefusal, long> refusals;
};

constexpr uint64_t detour_area = 0xffffffffc0000000ull;

OptimizationCensus take_optimization_census(const Kernel &kernel)
{
	const Thunks thunks = kernel_thunks(kernel);
	struct Code {
		const uint8_t *bytes;
		uint64_t address, size;
	};
	std::vector<Code> code(kernel.symbols.size());
	std::map<std::string, std::vector<size_t>> pieces_of;
	for (size_t i = 0; i < kernel.symbols.size(); ++i) {
		const okp::host::KernelSymbol &symbol = kernel.symbols[i];
		code[i] = {kernel.bytes_at(symbol.address), symbol.address, kernel.end_of(i) - symbol.address};
		const std::string owner = owner_of_piece(symbol.name);
		if (!owner.empty())
			pieces_of[owner].push_back(i);
	}
	const auto has_exception_entry = [](uint64_t address, void *context) {
		const auto &sites = *static_cast<const std::vector<uint64_t> *>(context);
		return std::binary_search(sites.begin(), sites.end(), address);
	};

	OptimizationCensus census;
	for (size_t i = 0; i < kernel.symbols.size(); ++i) {
		if (i + 1 < kernel.symbols.size() && kernel.symbols[i + 1].address == kernel.symbols[i].address)
			continue; // an alias
		if (is_padding(kernel.symbols[i]))
			continue;
		const CodeRange function{code[i].bytes, code[i].address, code[i].size};
		std::vector<CodeRange> pieces;
		if (auto it = pieces_of.find(kernel.symbols[i].name); it != pieces_of.end())
			for (size_t piece : it->second)
				pieces.push_back({code[piece].bytes, code[piece].address, code[piece].size});
		census.functions_with_pieces += !pieces.empty();
		FunctionMap map;
		if (!map.build(function, pieces.data(), pieces.size(), thunks, has_exception_entry,
			       const_cast<std::vector<uint64_t> *>(&kernel.exception_sites))) {
			++census.refusals[OptimizationRefusal::out_of_memory];
			continue;
		}
		for (uint64_t offset = 0; offset < function.size;) {
			const size_t left = std::min<uint64_t>(function.size - offset, max_instruction_length);
			const Analysis a =
				analyze_instruction(function.bytes + offset, left, function.address + offset, thunks);
			if (a.length == 0 || a.refusal == Refusal::undecodable)
				break; // the end of what decodes
			if (a.refusal == Refusal::breakpoint) {
				// Padding to the end; or, in the running text, the
				// int3s after a return the boot made of a return
				// thunk's jmp (never executed): skip them.
				if (std::all_of(function.bytes + offset, function.bytes + function.size,
						[](uint8_t b) { return b == 0xcc; }))
					break;
				++offset;
				continue;
			}
			++census.instructions;
			const OptimizationPlan plan =
				plan_jump_optimization(function, map, function.address + offset, thunks);
			if (plan.refusal == OptimizationRefusal::none) {
				++census.optimizable;
				bool branch = false;
				for (int n = 0; n < plan.count; ++n)
					branch |= plan.instructions[n].analysis.transfer != Transfer::none &&
						  plan.instructions[n].analysis.execution == Execution::emulate;
				census.needs_branch_relocation += branch;
				uint8_t detour[max_detour_size];
				// As in the module: with the per-CPU bracket (offsets as
				// in Debian's kernel; the sizes do not depend on them).
				DetourCall call;
				call.entry = detour_area + 0x100000;
				call.context = 0x1234;
				call.cpu_states = 0x28f00;
				call.this_cpu_off = 0x1f0e0;
				call.preempt_count = 0x1f0c8;
				call.preempt_schedule = function.address;
				const size_t length =
					build_detour(plan, function.bytes + offset, function.address + offset, thunks,
						     detour_area, call, detour, sizeof(detour));
				census.detours_failed += length == 0;
				census.detour_bytes_total += length;
				census.detour_bytes_max = std::max(census.detour_bytes_max, length);
			} else {
				++census.refusals[plan.refusal];
			}
			offset += a.length;
		}
	}
	return census;
}

TEST(X86KernelBytes, JumpOptimizationOverEveryInstruction)
{
	const Kernel *kernel = load_kernel();
	if (!kernel)
		GTEST_SKIP() << "OKPROBE_X86_VMLINUX / OKPROBE_X86_KALLSYMS not set";
	const auto started = std::chrono::steady_clock::now();
	const OptimizationCensus census = take_optimization_census(*kernel);
	const auto seconds =
		std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count();
	const auto percent = [&](long n) { return n * 100.0 / census.instructions; };
	std::cout << "x86 jump-optimization census of the guest kernel's vmlinux (" << seconds << " s):\n"
		  << "  instructions            " << census.instructions << " (" << kernel->exception_sites.size()
		  << " __ex_table entries, " << census.functions_with_pieces << " functions with .cold/.part pieces)\n"
		  << "  optimizable             " << census.optimizable << " (" << percent(census.optimizable)
		  << " %)\n"
		  << "  of those, only by relocating a branch in the region " << census.needs_branch_relocation << " ("
		  << percent(census.needs_branch_relocation) << " %)\n";
	for (const auto &[refusal, count] : census.refusals)
		std::cout << "  refused: " << optimization_refusal_text(refusal) << ": " << count << " ("
			  << percent(count) << " %)\n";
	std::cout << "  detours built           " << census.optimizable - census.detours_failed << ", failed "
		  << census.detours_failed << "; bytes per detour: mean "
		  << census.detour_bytes_total / std::max(1l, census.optimizable - census.detours_failed) << ", max "
		  << census.detour_bytes_max << "\n";
	EXPECT_EQ(census.detours_failed, 0) << "every planned region relocates";
	EXPECT_LE(census.detour_bytes_max, max_detour_size);
	EXPECT_GT(census.instructions, 2000000);
	EXPECT_GT(kernel->exception_sites.size(), 100u); // 600 in 6.1.0-56-amd64
	// Every rule must be seen doing something on a real kernel.
	for (OptimizationRefusal refusal :
	     {OptimizationRefusal::region_past_function, OptimizationRefusal::region_not_relocatable,
	      OptimizationRefusal::indirect_jump, OptimizationRefusal::jump_into_region,
	      OptimizationRefusal::exception_entry})
		EXPECT_GT(census.refusals.count(refusal) ? census.refusals.at(refusal) : 0, 0)
			<< optimization_refusal_text(refusal);
	EXPECT_GT(census.needs_branch_relocation, 0);
	// The floor: a jump can replace the breakpoint at most instructions
	// (92 % on 6.1.0-56-amd64).
	EXPECT_GE(census.optimizable * 100, census.instructions * 85);
}

// The bytes the guest executes: boot-time patching rewrote calls to the
// return and indirect-branch thunks (to ret and plain indirect branches
// where the CPU needs no mitigation, or to call depth accounting), ftrace's
// calls to nops, jump labels and static calls. The analysis must see
// through what it made, and the floor hold there too.
TEST(X86KernelBytes, JumpOptimizationOverTheRuntimeText)
{
	long changed = -1;
	const Kernel *running = load_running_kernel(&changed);
	if (!running)
		GTEST_SKIP() << "OKPROBE_X86_VMLINUX / OKPROBE_X86_KALLSYMS / OKPROBE_X86_RUNTIME_TEXT not set";
	ASSERT_GE(changed, 0) << "the running text is not the size of [_stext, _etext)";
	const uint64_t size = running->by_name.at("_etext") - running->by_name.at("_stext");
	const OptimizationCensus census = take_optimization_census(*running);
	const Census breakpoints = take_census(*running);
	const auto percent = [&](long n) { return n * 100.0 / census.instructions; };
	std::cout << "x86 census of the running kernel's text (" << changed << " of " << size
		  << " bytes patched at boot):\n"
		  << "  functions               " << breakpoints.functions << " (" << breakpoints.fully_decoded
		  << " decoded to their end)\n"
		  << "  instructions            " << census.instructions << "\n"
		  << "  optimizable             " << census.optimizable << " (" << percent(census.optimizable)
		  << " %)\n";
	for (const auto &[refusal, count] : census.refusals)
		std::cout << "  refused: " << optimization_refusal_text(refusal) << ": " << count << " ("
			  << percent(count) << " %)\n";
	// The same kernel, patched: some bytes, not most (a text read from the
	// wrong address would differ nearly everywhere). 3 % on 6.1; 5 % on
	// 6.12 with call depth tracking, which rewrites every call.
	EXPECT_GT(changed, 1000);
	EXPECT_LT(changed * 4, static_cast<long>(size));
	EXPECT_GE(breakpoints.fully_decoded * 1000, breakpoints.functions * 999);
	EXPECT_EQ(census.detours_failed, 0) << "every planned region relocates";
	EXPECT_GE(census.optimizable * 100, census.instructions * 85);
	// ___bpf_prog_run's computed goto jumps through a register: through
	// call depth tracking's jump thunk on 6.12 under retbleed=stuff, which
	// must count as indirect (a goto may land inside any jump).
	const uint64_t interpreter = running->by_name.at("___bpf_prog_run");
	const long index = [&] {
		for (size_t i = 0; i < running->symbols.size(); ++i)
			if (running->symbols[i].address == interpreter)
				return long(i);
		return -1L;
	}();
	ASSERT_GE(index, 0);
	const CodeRange function{running->bytes_at(interpreter), interpreter,
				 running->end_of(size_t(index)) - interpreter};
	FunctionMap map;
	ASSERT_TRUE(map.build(function, nullptr, 0, kernel_thunks(*running), nullptr, nullptr));
	EXPECT_EQ(map.function_refusal(), OptimizationRefusal::indirect_jump);
}

TEST(X86KernelBytes, EveryFunctionOfTheDebianKernel)
{
	const Kernel *kernel = load_kernel();
	if (!kernel)
		GTEST_SKIP() << "OKPROBE_X86_VMLINUX / OKPROBE_X86_KALLSYMS not set";
	const Census census = take_census(*kernel);

	std::cout << "x86 census of the guest kernel's vmlinux:\n"
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

// okprobe's relocation rules against the kernel's own insn.c on every
// instruction of a kernel (x86_insn_differential.hpp): the lengths the walk
// steps by, what a copy rebases and which branches it emulates.
long insn_differential(const Kernel &kernel, const char *title, long *compared)
{
	const Thunks thunks = kernel_thunks(kernel);
	differential::Tally tally;
	for (size_t i = 0; i < kernel.symbols.size(); ++i) {
		const okp::host::KernelSymbol &symbol = kernel.symbols[i];
		if ((i + 1 < kernel.symbols.size() && kernel.symbols[i + 1].address == symbol.address) ||
		    is_padding(symbol))
			continue;
		const uint64_t end = kernel.end_of(i);
		const uint8_t *bytes = kernel.bytes_at(symbol.address);
		for (uint64_t at = symbol.address; at < end;) {
			const size_t available = std::min<uint64_t>(end - at, max_instruction_length);
			const uint8_t *insn = bytes + (at - symbol.address);
			const Analysis a = analyze_instruction(insn, available, at, thunks);
			if (a.refusal == Refusal::undecodable ||
			    (a.refusal == Refusal::breakpoint &&
			     std::all_of(insn, insn + (end - at), [](uint8_t b) { return b == 0xcc; })))
				break;
			std::ostringstream where;
			where << symbol.name << "+0x" << std::hex << (at - symbol.address);
			tally.add(insn, available, at, thunks, where.str());
			at += a.length;
		}
	}
	*compared = tally.compared;
	return tally.report(std::cout, title);
}

// On the text a probe meets: the running kernel's, as the boot patched it
// (alternatives, static calls, call depth tracking's thunks), where the
// guest saved it; else the vmlinux's.
TEST(X86KernelBytes, TheRelocationRulesAgreeWithTheKernelsInsnDecoder)
{
	long changed = -1;
	const Kernel *running = load_running_kernel(&changed);
	const Kernel *kernel = running && changed >= 0 ? running : load_kernel();
	if (!kernel)
		GTEST_SKIP() << "OKPROBE_X86_VMLINUX / OKPROBE_X86_KALLSYMS not set";
	long compared = 0;
	EXPECT_EQ(insn_differential(*kernel,
				    kernel == running ? "every instruction of the guest kernel's running text"
						      : "every instruction of the guest kernel's vmlinux",
				    &compared),
		  0);
	EXPECT_GT(compared, 1000000);
}

// The writer proves boundaries and finds a function's jumps out from one
// decode (FunctionMap, kept for the next registration in the function): it
// must answer as the walks it replaces do, on every function of the kernel
// (boundaries at the middle of each function: each walk is linear).
TEST(X86KernelBytes, OneDecodeAnswersAsTheWalksDo)
{
	const Kernel *kernel = load_kernel();
	if (!kernel)
		GTEST_SKIP() << "OKPROBE_X86_VMLINUX / OKPROBE_X86_KALLSYMS not set";
	const Thunks thunks = kernel_thunks(*kernel);
	long functions = 0, offsets = 0, with_targets = 0, foreign = 0, undecodable = 0;
	for (size_t i = 0; i < kernel->symbols.size(); ++i) {
		const uint64_t address = kernel->symbols[i].address;
		const uint64_t size = kernel->end_of(i) - address;
		const uint8_t *bytes = kernel->bytes_at(address);
		if (!bytes || size == 0 || size > 64 * 1024)
			continue;
		++functions;
		const CodeRange function{bytes, address, size};
		FunctionMap map;
		ASSERT_TRUE(map.decode(function, thunks));
		uint64_t expected[64], found[64];
		const size_t expected_count = external_jump_targets(function, thunks, expected, 64);
		const size_t count = map.external_jump_targets(found, 64);
		// Past the capacity the walk stops removing duplicates: both are
		// then only "too many".
		if (expected_count <= 64) {
			ASSERT_EQ(count, expected_count) << kernel->symbols[i].name;
			for (size_t t = 0; t < count; ++t)
				ASSERT_EQ(found[t], expected[t]) << kernel->symbols[i].name;
		} else {
			ASSERT_GT(count, 64u) << kernel->symbols[i].name;
		}
		with_targets += expected_count != 0;
		for (uint64_t offset : {size / 2, size / 2 + 1, size}) {
			const Boundary walked = check_instruction_boundary(bytes, size, offset);
			ASSERT_EQ(map.boundary(offset), walked) << kernel->symbols[i].name << "+" << offset;
			++offsets;
			foreign += walked == Boundary::foreign_breakpoint;
			undecodable += walked == Boundary::undecodable;
		}
	}
	std::cout << "  one decode per function: " << functions << " functions, " << offsets
		  << " boundaries as walked (" << foreign << " after a foreign int3, " << undecodable
		  << " past undecodable bytes), " << with_targets << " with jumps out\n";
	EXPECT_GT(functions, 40000);
	EXPECT_GT(with_targets, 1000);
}

} // namespace

namespace {

// kallsyms' view: a text symbol up to the next one.
// decode_instruction() uses Zydis's minimal mode: every field okprobe reads
// must be what the full mode gives. Every fourth function's walk (about
// 700,000 instructions; all of them take 38 s at -O0). A one-off check
// of every byte offset of the kernel's .text found no difference either.
TEST(X86KernelBytes, MinimalDecodingReadsAsTheFullMode)
{
	const Kernel *kernel = load_kernel();
	if (!kernel)
		GTEST_SKIP() << "OKPROBE_X86_VMLINUX / OKPROBE_X86_KALLSYMS not set";
	ZydisDecoder full;
	ASSERT_TRUE(ZYAN_SUCCESS(ZydisDecoderInit(&full, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)));
	long instructions = 0;
	for (size_t i = 0; i < kernel->symbols.size(); i += 4) {
		const uint64_t address = kernel->symbols[i].address;
		const uint64_t size = kernel->end_of(i) - address;
		const uint8_t *bytes = kernel->bytes_at(address);
		if (!bytes || size == 0 || size > 64 * 1024)
			continue;
		for (uint64_t offset = 0; offset < size;) {
			const size_t left =
				size - offset < max_instruction_length ? size - offset : max_instruction_length;
			ZydisDecodedInstruction a, b;
			const bool decoded =
				ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&full, nullptr, bytes + offset, left, &a));
			ASSERT_EQ(decode_instruction(bytes + offset, left, &b), decoded)
				<< kernel->symbols[i].name << "+" << offset;
			if (!decoded)
				break;
			const auto where = [&] { return kernel->symbols[i].name + "+" + std::to_string(offset); };
			ASSERT_EQ(a.mnemonic, b.mnemonic) << where();
			ASSERT_EQ(a.length, b.length) << where();
			ASSERT_EQ(a.opcode_map, b.opcode_map) << where();
			ASSERT_EQ(a.opcode, b.opcode) << where();
			ASSERT_EQ(a.operand_width, b.operand_width) << where();
			ASSERT_EQ(a.address_width, b.address_width) << where();
			ASSERT_EQ(a.attributes & ZYDIS_ATTRIB_HAS_MODRM, b.attributes & ZYDIS_ATTRIB_HAS_MODRM)
				<< where();
			ASSERT_EQ(a.raw.modrm.mod, b.raw.modrm.mod) << where();
			ASSERT_EQ(a.raw.modrm.reg, b.raw.modrm.reg) << where();
			ASSERT_EQ(a.raw.modrm.rm, b.raw.modrm.rm) << where();
			ASSERT_EQ(a.raw.rex.B, b.raw.rex.B) << where();
			ASSERT_EQ(a.raw.disp.value, b.raw.disp.value) << where();
			ASSERT_EQ(a.raw.disp.size, b.raw.disp.size) << where();
			ASSERT_EQ(a.raw.disp.offset, b.raw.disp.offset) << where();
			for (int k = 0; k < 2; ++k) {
				ASSERT_EQ(a.raw.imm[k].value.s, b.raw.imm[k].value.s) << where();
				ASSERT_EQ(a.raw.imm[k].is_relative, b.raw.imm[k].is_relative) << where();
				ASSERT_EQ(a.raw.imm[k].size, b.raw.imm[k].size) << where();
			}
			++instructions;
			offset += a.length;
		}
	}
	std::cout << "  minimal decoding: " << instructions << " instructions read as in the full mode\n";
	ASSERT_GT(instructions, 500000);
}

bool image_function_of(uint64_t address, uint64_t *start, uint64_t *size, void *context)
{
	const Kernel &kernel = *static_cast<const Kernel *>(context);
	auto next = std::upper_bound(kernel.symbols.begin(), kernel.symbols.end(), address,
				     [](uint64_t a, const okp::host::KernelSymbol &s) { return a < s.address; });
	if (next == kernel.symbols.begin())
		return false;
	const size_t index = size_t(next - kernel.symbols.begin()) - 1;
	*start = kernel.symbols[index].address;
	*size = kernel.end_of(index) - *start;
	return *size > 0 && kernel.section_of(*start) && kernel.section_of(*start)->name == ".text";
}

} // namespace

namespace {

void expect_int3_path(const Kernel *kernel, const char *which)
{
	okp::CodeGraphFacts facts{};
	facts.function_of = image_function_of;
	facts.read_text = [](uint64_t address, uint8_t *buffer, size_t size, void *context) -> size_t {
		const uint8_t *bytes = static_cast<const Kernel *>(context)->bytes_at(address);
		if (!bytes)
			return 0;
		std::memcpy(buffer, bytes, size);
		return size;
	};
	facts.context = const_cast<Kernel *>(kernel);
	auto lookup = [](const char *name, void *context) -> uint64_t {
		const Kernel &k = *static_cast<const Kernel *>(context);
		const auto it = k.by_name.find(name);
		return it == k.by_name.end() ? 0 : it->second;
	};
	okp::RangeList reached;
	const okp::TrapPath path = int3_path_functions(facts, lookup, reached);
	std::map<std::string, bool> names;
	for (size_t i = 0; i < reached.size(); ++i)
		for (const okp::host::KernelSymbol &s : kernel->symbols)
			if (s.address == reached[i].start)
				names[s.name] = true;
	reached.clear();
	std::string at = "?";
	for (const okp::host::KernelSymbol &s : kernel->symbols)
		if (s.address <= path.walk.culprit)
			at = s.name;
	ASSERT_EQ(path.why, nullptr) << path.why << " at " << at;
	std::cout << "x86 int3 path (" << which << "): " << names.size() << " functions refused\n";
	if (std::getenv("OKPROBE_VERBOSE"))
		for (const auto &[name, _] : names)
			std::cout << "  " << name << "\n";
	// The die notifiers' chain and the RCU read lock it takes (Debian's
	// kernel is PREEMPT_RCU), the kprobes handler before them.
	// (atomic_notifier_call_chain and notifier_call_chain are inlined.)
	for (const char *name : {"notify_die", "__rcu_read_lock", "__rcu_read_unlock", "kprobe_int3_handler"})
		EXPECT_TRUE(names.count(name)) << name;
	// The text poker's own int3 handler (renamed in 6.16).
	EXPECT_TRUE(names.count("poke_int3_handler") || names.count("smp_text_poke_int3_handler"));
	for (const char *name : {"try_to_wake_up", "__schedule", "vfs_read", "ksys_read", "kfree", "do_sys_openat2",
				 "force_sig_fault", "_raw_spin_lock", "_raw_spin_lock_irqsave"})
		EXPECT_FALSE(names.count(name)) << name;
	EXPECT_LT(names.size(), 300u);
}

} // namespace

TEST(X86KernelBytes, TheInt3PathReachesTheNotifiersRcuLockAndNotTheScheduler)
{
	const Kernel *kernel = load_kernel();
	if (!kernel)
		GTEST_SKIP() << "OKPROBE_X86_VMLINUX / OKPROBE_X86_KALLSYMS not set";
	expect_int3_path(kernel, "vmlinux");
}

// As the module walks it: in the running text, where call depth tracking
// (retbleed=stuff) aims every call at the callee's padding.
TEST(X86KernelBytes, TheInt3PathInTheRuntimeTextReachesWhatTheImageDoes)
{
	long changed = -1;
	const Kernel *running = load_running_kernel(&changed);
	if (!running)
		GTEST_SKIP() << "OKPROBE_X86_VMLINUX / OKPROBE_X86_KALLSYMS / OKPROBE_X86_RUNTIME_TEXT not set";
	ASSERT_GE(changed, 0);
	expect_int3_path(running, "running text");
}

// Under FRED (X86_FRED, 6.9 on; Debian's 7.x amd64 kernels) a breakpoint
// enters through asm_fred_entrypoint_kernel and fred_entry_from_kernel, not
// the IDT's asm_exc_int3; both then run exc_int3, whose walk the module
// refuses. What runs before exc_int3 is refused too if every function from
// which exc_int3 is reached by direct calls and jumps lies in the entry or
// noinstr text the module refuses whole (src/kernel/blacklist.c): shown
// here over the whole kernel's call graph, as QEMU's TCG has no FRED to
// show it on. A kernel without FRED checks the IDT's entry alone.
TEST(X86KernelBytes, WhatRunsBeforeExcInt3IsEntryOrNoinstrTextOnEveryEntry)
{
	const Kernel *kernel = load_kernel();
	if (!kernel)
		GTEST_SKIP() << "OKPROBE_X86_VMLINUX / OKPROBE_X86_KALLSYMS not set";
	const auto address_of = [&](const char *name) -> uint64_t {
		const auto it = kernel->by_name.find(name);
		return it == kernel->by_name.end() ? 0 : it->second;
	};
	const uint64_t exc_int3 = address_of("exc_int3");
	ASSERT_NE(exc_int3, 0u);
	const std::pair<uint64_t, uint64_t> refused_whole[] = {
		{address_of("__entry_text_start"), address_of("__entry_text_end")},
		{address_of("__noinstr_text_start"), address_of("__noinstr_text_end")},
	};
	const auto refused = [&](uint64_t address) {
		for (const auto &[start, end] : refused_whole)
			if (start && address >= start && address < end)
				return true;
		return false;
	};
	const auto symbol_at = [&](uint64_t address) {
		const auto it =
			std::upper_bound(kernel->symbols.begin(), kernel->symbols.end(), address,
					 [](uint64_t a, const okp::host::KernelSymbol &s) { return a < s.address; });
		return it == kernel->symbols.begin() ? kernel->symbols.size()
						     : size_t(it - kernel->symbols.begin()) - 1;
	};
	// Every function's direct references, reversed: who reaches whom.
	const Thunks thunks = kernel_thunks(*kernel);
	std::map<uint64_t, std::vector<uint64_t>> callers;
	std::vector<uint64_t> targets(4096);
	for (size_t i = 0; i < kernel->symbols.size(); ++i) {
		const uint64_t start = kernel->symbols[i].address;
		const uint64_t size = kernel->end_of(i) - start;
		const uint8_t *bytes = kernel->bytes_at(start);
		if (!bytes || !size || size > 256 * 1024 || is_padding(kernel->symbols[i]))
			continue;
		const size_t count = code_references(CodeRange{bytes, start, size}, thunks,
						     okp::references::jumps | okp::references::calls, targets.data(),
						     targets.size());
		for (size_t t = 0; t < count && t < targets.size(); ++t) {
			const size_t callee = symbol_at(targets[t]);
			if (callee < kernel->symbols.size())
				callers[kernel->symbols[callee].address].push_back(start);
		}
	}
	// Back from exc_int3 to every entry that reaches it.
	std::map<uint64_t, bool> seen{{exc_int3, true}};
	std::vector<uint64_t> pending{exc_int3};
	std::vector<std::string> outside;
	bool through_fred = false;
	while (!pending.empty()) {
		const uint64_t function = pending.back();
		pending.pop_back();
		for (const uint64_t caller : callers[function]) {
			const size_t index = symbol_at(caller);
			const okp::host::KernelSymbol &symbol = kernel->symbols[index];
			if (seen[symbol.address])
				continue;
			seen[symbol.address] = true;
			through_fred |= symbol.name == "fred_entry_from_kernel";
			// Xen PV's trap stubs jump to the IDT's entries; the
			// kernel lists them NOKPROBE (xen-asm.S's xen_pv_trap),
			// and okprobe takes that list (blacklist.c).
			if (!refused(symbol.address) && symbol.name.rfind("xen_asm_exc_", 0) != 0)
				outside.push_back(symbol.name);
			pending.push_back(symbol.address);
		}
	}
	std::cout << "x86 entries to exc_int3: " << seen.size() - 1 << " functions reach it"
		  << (address_of("fred_entry_from_kernel") ? ", FRED's among them" : " (no FRED in this kernel)")
		  << "\n";
	EXPECT_TRUE(outside.empty()) << outside.size() << " outside entry/noinstr text, the first "
				     << (outside.empty() ? "" : outside[0]);
	EXPECT_TRUE(seen[address_of("asm_exc_int3")]) << "the IDT's entry was not found";
	if (address_of("fred_entry_from_kernel")) {
		EXPECT_TRUE(through_fred) << "FRED's kernel entry does not reach exc_int3 here";
	}
}

namespace {

// The exit census (core/function_exits.hpp) over one kernel's functions.
struct ExitCensusRun {
	long functions = 0, accepted = 0, exits = 0, tail_calls = 0, pieces = 0;
	std::map<okp::ExitRefusal, long> refusals;
	// Accepted functions: their exits, and objtool's return sites in their
	// ranges that are not among them (must stay empty), and exits that
	// are neither a return site nor a bare ret (must stay empty).
	std::map<uint64_t, std::vector<uint64_t>> exits_of;
	std::map<uint64_t, std::pair<okp::ExitRefusal, uint64_t>> refused_of; // why, where
	std::vector<std::string> missed_return_sites, unlisted_returns;
	// Tail calls into an indirect-branch thunk: jumps through a register
	// taken for tail calls (must stay empty: the return address is not
	// on top of the stack at a computed goto).
	std::vector<std::string> thunk_tail_calls;
};

struct ExitFactsContext {
	const Kernel *kernel;
	std::string name;
	std::vector<CodeRange> pieces;
};

// Index of the symbol holding address, or -1.
long symbol_index(const Kernel &kernel, uint64_t address)
{
	const auto it = std::upper_bound(kernel.symbols.begin(), kernel.symbols.end(), address,
					 [](uint64_t a, const okp::host::KernelSymbol &s) { return a < s.address; });
	if (it == kernel.symbols.begin())
		return -1;
	const long index = long(it - kernel.symbols.begin()) - 1;
	return address < kernel.end_of(size_t(index)) ? index : -1;
}

okp::ExitPlace place_in_image(uint64_t target, CodeRange *piece, void *opaque)
{
	ExitFactsContext &context = *static_cast<ExitFactsContext *>(opaque);
	const Kernel &kernel = *context.kernel;
	long index = symbol_index(kernel, target);
	if (index < 0)
		return okp::ExitPlace::elsewhere;
	// The first of the aliases at this address names it.
	while (index > 0 && kernel.symbols[size_t(index) - 1].address == kernel.symbols[size_t(index)].address)
		--index;
	const okp::host::KernelSymbol &symbol = kernel.symbols[size_t(index)];
	const std::string cold = context.name + ".cold";
	if (symbol.name.compare(0, cold.size(), cold) == 0 &&
	    (symbol.name.size() == cold.size() || symbol.name[cold.size()] == '.')) {
		*piece = CodeRange{kernel.bytes_at(symbol.address), symbol.address,
				   kernel.end_of(size_t(index)) - symbol.address};
		context.pieces.push_back(*piece);
		return okp::ExitPlace::piece;
	}
	return symbol.address == target ? okp::ExitPlace::function_start : okp::ExitPlace::elsewhere;
}

long hidden_in_image(const CodeRange &range, uint64_t *targets, size_t capacity, void *opaque)
{
	const Kernel &kernel = *static_cast<ExitFactsContext *>(opaque)->kernel;
	auto it = std::lower_bound(kernel.hidden_edges.begin(), kernel.hidden_edges.end(),
				   std::make_pair(range.address, uint64_t(0)));
	long count = 0;
	for (; it != kernel.hidden_edges.end() && it->first < range.address + range.size; ++it) {
		if (size_t(count) < capacity)
			targets[count] = it->second;
		++count;
	}
	return count;
}

// Whether vmlinux's instruction at address is a jump to a static call's
// trampoline (__SCT__name): a tail call the boot turns into a return when
// the static call has no function (static_call_cond).
bool static_call_tail(const Kernel &image, uint64_t address)
{
	const uint8_t *bytes = image.bytes_at(address);
	if (bytes[0] != 0xe9)
		return false;
	int32_t relative;
	std::memcpy(&relative, bytes + 1, 4);
	const long index = symbol_index(image, address + 5 + uint64_t(int64_t(relative)));
	return index >= 0 && image.symbols[size_t(index)].name.rfind("__SCT__", 0) == 0;
}

// Whether the bytes at address are "jmp rel32" to a return thunk (objtool
// leaves some out of .return_sites on 6.1: init text, a few others).
bool jumps_to_return_thunk(const Kernel &kernel, uint64_t address, const Thunks &thunks)
{
	const uint8_t *bytes = kernel.bytes_at(address);
	if (bytes[0] != 0xe9)
		return false;
	int32_t relative;
	std::memcpy(&relative, bytes + 1, 4);
	const uint64_t target = address + 5 + uint64_t(int64_t(relative));
	if (target == thunks.return_thunk)
		return true;
	for (uint64_t variant : thunks.return_thunk_variants)
		if (variant && target == variant)
			return true;
	return false;
}

ExitCensusRun take_exit_census(const Kernel &kernel)
{
	static Thunks thunks;
	thunks = kernel_thunks(kernel);
	const okp::ExitDecoder decode = [](const CodeRange &code, size_t offset, okp::ExitStep &step) {
		exit_step(code, offset, thunks, step);
	};
	ExitCensusRun run;
	std::vector<okp::FunctionExit> exits(okp::max_function_exits);
	for (size_t i = 0; i < kernel.symbols.size(); ++i) {
		const okp::host::KernelSymbol &symbol = kernel.symbols[i];
		// Pieces are decoded with their function; the return thunks
		// (refused by okprobe's blacklist) jump to themselves.
		if ((i > 0 && kernel.symbols[i - 1].address == symbol.address) || is_padding(symbol) ||
		    symbol.name.find(".cold") != std::string::npos ||
		    symbol.name.find("return_thunk") != std::string::npos)
			continue;
		++run.functions;
		ExitFactsContext context{&kernel, symbol.name, {}};
		const okp::ExitFacts facts{place_in_image, hidden_in_image, &context};
		const CodeRange function{kernel.bytes_at(symbol.address), symbol.address,
					 kernel.end_of(i) - symbol.address};
		const okp::ExitCensus census = okp::census_exits(function, decode, facts, exits.data(), exits.size());
		if (census.refusal != okp::ExitRefusal::none) {
			++run.refusals[census.refusal];
			run.refused_of[symbol.address] = {census.refusal, census.at};
			continue;
		}
		++run.accepted;
		run.pieces += long(census.pieces);
		std::vector<uint64_t> &found = run.exits_of[symbol.address];
		for (size_t e = 0; e < census.count; ++e) {
			const okp::FunctionExit &exit = exits[e];
			found.push_back(exit.address);
			++run.exits;
			if (exit.kind == okp::ExitKind::tail_call) {
				++run.tail_calls;
				const long target = symbol_index(kernel, exit.target);
				const std::string &name =
					target >= 0 ? kernel.symbols[size_t(target)].name : symbol.name;
				if (name.find("indirect") != std::string::npos &&
				    name.find("thunk") != std::string::npos)
					run.thunk_tail_calls.push_back(symbol.name + " -> " + name);
				continue;
			}
			const uint8_t first = *kernel.bytes_at(exit.address);
			if (!std::binary_search(kernel.return_sites.begin(), kernel.return_sites.end(), exit.address) &&
			    first != 0xc3 && first != 0xc2 && !jumps_to_return_thunk(kernel, exit.address, thunks) &&
			    !static_call_tail(*load_kernel(), exit.address)) {
				char where[32];
				snprintf(where, sizeof(where), "+0x%lx",
					 (unsigned long)(exit.address - symbol.address));
				run.unlisted_returns.push_back(symbol.name + where);
			}
		}
		std::vector<CodeRange> ranges = context.pieces;
		ranges.push_back(function);
		for (const CodeRange &range : ranges)
			for (auto it = std::lower_bound(kernel.return_sites.begin(), kernel.return_sites.end(),
							range.address);
			     it != kernel.return_sites.end() && *it < range.address + range.size; ++it)
				if (std::find(found.begin(), found.end(), *it) == found.end())
					run.missed_return_sites.push_back(symbol.name);
	}
	return run;
}

void print_exit_census(const ExitCensusRun &run, const char *what)
{
	const auto percent = [&](long n) { return 100.0 * double(n) / double(run.functions ? run.functions : 1); };
	std::cout << "x86 exit census of the " << what << ":\n"
		  << "  functions            " << run.functions << "\n"
		  << "  exits proven         " << run.accepted << " (" << percent(run.accepted) << " %), " << run.exits
		  << " exits, " << run.tail_calls << " of them tail calls, " << run.pieces << " .cold pieces\n";
	for (const auto &[refusal, count] : run.refusals)
		std::cout << "  refused: " << okp::exit_refusal_text(refusal) << ": " << count << " (" << percent(count)
			  << " %)\n";
}

} // namespace

// Every return objtool listed in a function whose exits the census proves is
// one of them: the census's own decode checked against the kernel build's.
TEST(X86KernelBytes, TheExitCensusFindsEveryReturnObjtoolListed)
{
	const Kernel *kernel = load_kernel();
	if (!kernel)
		GTEST_SKIP() << "OKPROBE_X86_VMLINUX / OKPROBE_X86_KALLSYMS not set";
	ASSERT_GT(kernel->return_sites.size(), 10000u) << "vmlinux has no .return_sites";
	ASSERT_GT(kernel->hidden_edges.size(), 5000u) << "vmlinux has no __jump_table";
	const ExitCensusRun run = take_exit_census(*kernel);
	print_exit_census(run, "vmlinux");
	EXPECT_TRUE(run.thunk_tail_calls.empty())
		<< run.thunk_tail_calls.size() << " jumps through a register taken for tail calls, first "
		<< run.thunk_tail_calls[0];
	EXPECT_GT(run.functions, 40000);
	EXPECT_GE(run.accepted * 2, run.functions);
	EXPECT_GT(run.tail_calls, 1000);
	EXPECT_TRUE(run.missed_return_sites.empty())
		<< run.missed_return_sites.size() << " return sites missed, first in " << run.missed_return_sites[0];
	EXPECT_TRUE(run.unlisted_returns.empty())
		<< run.unlisted_returns.size() << " exits are no return site, first in " << run.unlisted_returns[0];
	for (const char *name : {"vfs_read", "ksys_read", "do_sys_openat2"})
		EXPECT_TRUE(run.exits_of.count(kernel->by_name.at(name))) << name;
}

// As the module decodes it, after the boot rewrote every return (to
// "ret; int3" or to call depth tracking's thunk) and resolved static calls,
// paravirt calls and alternatives: again every return objtool listed in a
// proven function is one of its exits, and a function proven in the image
// keeps its exits unless alternatives rewrote it (a handful of hand-written
// ones: copy_page, memmove, the thunks).
TEST(X86KernelBytes, TheExitCensusOfTheRuntimeTextFindsEveryReturnToo)
{
	long changed = -1;
	const Kernel *running = load_running_kernel(&changed);
	if (!running)
		GTEST_SKIP() << "OKPROBE_X86_VMLINUX / OKPROBE_X86_KALLSYMS / OKPROBE_X86_RUNTIME_TEXT not set";
	ASSERT_GE(changed, 0);
	const ExitCensusRun image = take_exit_census(*load_kernel());
	const ExitCensusRun run = take_exit_census(*running);
	print_exit_census(run, "running text");
	EXPECT_TRUE(run.thunk_tail_calls.empty())
		<< run.thunk_tail_calls.size() << " jumps through a register taken for tail calls, first "
		<< run.thunk_tail_calls[0];
	// Its computed goto: a jump through a register inside the function.
	EXPECT_FALSE(run.exits_of.count(running->by_name.at("___bpf_prog_run")));
	EXPECT_TRUE(run.missed_return_sites.empty())
		<< run.missed_return_sites.size() << " return sites missed, first in " << run.missed_return_sites[0];
	EXPECT_TRUE(run.unlisted_returns.empty())
		<< run.unlisted_returns.size() << " exits are no return site, first in " << run.unlisted_returns[0]
		<< " " << run.unlisted_returns[run.unlisted_returns.size() - 1];
	long rewritten = 0;
	std::string names;
	for (const auto &[function, exits] : image.exits_of) {
		const auto it = run.exits_of.find(function);
		if (it != run.exits_of.end() && it->second == exits)
			continue;
		// A static call's trampoline is its target's jmp or a ret, as
		// the boot set it: 7.x's LSM hooks alone are 270 of them.
		if (running->symbols[size_t(symbol_index(*running, function))].name.rfind("__SCT__", 0) == 0)
			continue;
		++rewritten;
		names += " " + running->symbols[size_t(symbol_index(*running, function))].name;
	}
	std::cout << "  proven in the image, other exits or none in the running text:" << names << "\n";
	EXPECT_LE(rewritten, 10);
	// Static calls resolved: more proven than in the image, give or take
	// what alternatives made indirect.
	EXPECT_GE(run.accepted * 100, image.accepted * 99);
}
