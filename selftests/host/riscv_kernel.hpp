// SPDX-License-Identifier: GPL-2.0
// A riscv64 vmlinux (ELF with symbols) and its System.map, read for the
// host: the kernel-bytes test and tools/riscv-coverage share it. The
// census walks every function through the decoder, the breakpoint probe
// rules and the jump optimizer, and counts what each says.
//
// Host code: uses std freely (only the arch/riscv/ core is freestanding).
#pragma once

#include "riscv/detour.hpp"
#include "riscv/mmu_off_functions.h"
#include "riscv/function_analysis.hpp"
#include "riscv/instruction_decoder.hpp"
#include "riscv/jump_optimization.hpp"
#include "riscv/probe_rules.hpp"

#include <algorithm>
#include <cstring>
#include <elf.h>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace okp::riscv::host {

struct Section {
	std::string name;
	uint64_t address, size, offset;
	bool executable;
};

struct Symbol {
	uint64_t address;
	std::string name;
};

struct Kernel {
	std::vector<uint8_t> image;
	std::vector<Section> sections;
	std::vector<Symbol> functions; // text symbols, sorted by address
	std::map<std::string, uint64_t> by_name;
	std::vector<ExtraEdge> exception_edges;	 // sorted by from
	std::vector<ExtraEdge> jump_label_edges; // sorted by from
	std::vector<uint64_t> ftrace_sites;	 // sorted: the 8-byte patchable entries
	// DYNAMIC_FTRACE_WITH_CALL_OPS (riscv from 6.16): a traced function's
	// 8 bytes before its entry hold its ftrace_ops, not code.
	bool call_ops = false;
	uint64_t end = 0; // _end
	uint64_t rodata_start = 0, rodata_end = 0, ro_after_init_start = 0, ro_after_init_end = 0;

	const Section *section_of(uint64_t address) const
	{
		for (const Section &s : sections)
			if (s.address <= address && address < s.address + s.size && s.offset)
				return &s;
		return nullptr;
	}
	const uint8_t *bytes_at(uint64_t address) const
	{
		const Section *s = section_of(address);
		return s ? image.data() + s->offset + (address - s->address) : nullptr;
	}
	template <typename T> T read(uint64_t address) const
	{
		T value{};
		if (const uint8_t *p = bytes_at(address))
			memcpy(&value, p, sizeof(value));
		return value;
	}
	// Reads the kernel's read-only data, as the module must: only
	// [__start_rodata, __end_rodata), where GCC's jump tables are, and
	// not its __ro_after_init part (written during boot). The ELF says
	// .rodata is writable: it holds __ro_after_init; the kernel maps the
	// whole range read-only once booted.
	size_t read_constant(uint64_t address, void *out, size_t size) const
	{
		const uint64_t end = address + size;
		if (address < rodata_start || end > rodata_end || end < address ||
		    (end > ro_after_init_start && address < ro_after_init_end))
			return 0;
		const Section *s = section_of(address);
		if (!s || end > s->address + s->size)
			return 0;
		memcpy(out, image.data() + s->offset + (address - s->address), size);
		return size;
	}
	DataReader constant_data() const
	{
		return {[](uint64_t address, void *out, size_t size, void *context) {
				return static_cast<const Kernel *>(context)->read_constant(address, out, size);
			},
			const_cast<Kernel *>(this)};
	}
	uint64_t symbol(const std::string &name) const
	{
		const auto it = by_name.find(name);
		return it == by_name.end() ? 0 : it->second;
	}
	// The lowest module address (MODULES_VADDR = PFN_ALIGN(_end) - 2 GiB):
	// the farthest a detour can be from kernel text.
	uint64_t lowest_module_address() const { return ((end + 4095) & ~4095ull) - (1ull << 31); }
};

// Reads "ADDRESS TYPE NAME" lines (System.map, or /proc/kallsyms as
// okptest's kallsyms suite dumps it): every name into by_name, the text
// symbols inside executable sections into functions.
inline void read_symbols(const std::string &path, Kernel &kernel)
{
	std::ifstream lines(path);
	std::string line;
	while (std::getline(lines, line)) {
		std::istringstream fields(line);
		std::string address, type, name;
		if (!(fields >> address >> type >> name))
			continue;
		const uint64_t value = std::stoull(address, nullptr, 16);
		kernel.by_name.emplace(name, value);
		const Section *section = kernel.section_of(value);
		if (section && section->executable && std::string("tTwW").find(type[0]) != std::string::npos)
			kernel.functions.push_back({value, name});
	}
	std::stable_sort(kernel.functions.begin(), kernel.functions.end(),
			 [](const Symbol &a, const Symbol &b) { return a.address < b.address; });
}

// The kernel's tables, found through its symbols; sorted.
inline void read_tables(Kernel &kernel)
{
	kernel.end = kernel.symbol("_end");
	kernel.rodata_start = kernel.symbol("__start_rodata");
	kernel.rodata_end = kernel.symbol("__end_rodata");
	kernel.ro_after_init_start = kernel.symbol("__start_ro_after_init");
	kernel.ro_after_init_end = kernel.symbol("__end_ro_after_init");

	// __ex_table: {int insn, fixup; short type, data}, relative to each field.
	const uint64_t ex_start = kernel.symbol("__start___ex_table"), ex_stop = kernel.symbol("__stop___ex_table");
	for (uint64_t at = ex_start; ex_start && at + 12 <= ex_stop; at += 12)
		kernel.exception_edges.push_back({at + kernel.read<int32_t>(at), at + 4 + kernel.read<int32_t>(at + 4),
						  ExtraEdge::Kind::exception_fixup});
	// __jump_table: {s32 code, s32 target; long key}, relative.
	const uint64_t jump_start = kernel.symbol("__start___jump_table"),
		       jump_stop = kernel.symbol("__stop___jump_table");
	for (uint64_t at = jump_start; jump_start && at + 16 <= jump_stop; at += 16)
		kernel.jump_label_edges.push_back({at + kernel.read<int32_t>(at), at + 4 + kernel.read<int32_t>(at + 4),
						   ExtraEdge::Kind::jump_label});
	// __mcount_loc: absolute addresses of the patchable function entries
	// (a raw image's may be unrelocated: its caller reads them instead).
	const uint64_t mcount_start = kernel.symbol("__start_mcount_loc"),
		       mcount_stop = kernel.symbol("__stop_mcount_loc");
	for (uint64_t at = mcount_start; mcount_start && at + 8 <= mcount_stop; at += 8)
		kernel.ftrace_sites.push_back(kernel.read<uint64_t>(at));
	const auto by_from = [](const ExtraEdge &a, const ExtraEdge &b) { return a.from < b.from; };
	std::sort(kernel.exception_edges.begin(), kernel.exception_edges.end(), by_from);
	std::sort(kernel.jump_label_edges.begin(), kernel.jump_label_edges.end(), by_from);
	std::sort(kernel.ftrace_sites.begin(), kernel.ftrace_sites.end());
}

// A stock kernel's raw Image (Debian's riscv64 package ships no vmlinux
// or System.map): its bytes from _start on, the symbols okptest's kallsyms
// suite dumped from a guest booted with nokaslr (text symbols and section
// bounds, at link addresses), and the ftrace sites it dumped beside them
// (ftrace-sites-nokaslr.txt: the image's __mcount_loc holds addresses
// the boot relocates). Text is [_start, _etext) and [_sinittext,
// _einittext), as the ELF's executable sections would be; with CALL_OPS
// not the init text: where its functions end is their ftrace_ops
// literals', and ftrace drops the init text's records at the end of boot,
// before the dump (and before any module could probe it: it is freed).
inline bool load_raw_kernel(std::vector<uint8_t> &&bytes, const std::string &symbols, Kernel &kernel)
{
	const std::string directory = symbols.substr(0, symbols.rfind('/') + 1);
	// The stock kernel's configuration, beside its image (debian13.py).
	std::ifstream config(directory + "config");
	for (std::string line; std::getline(config, line);)
		kernel.call_ops |= line == "CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS=y";
	Kernel names;
	names.sections.push_back({"all", 0, ~0ull, 1, true});
	read_symbols(symbols, names);
	const uint64_t start = names.symbol("_start"), etext = names.symbol("_etext");
	if (!start || etext <= start)
		return false;
	// Offsets start past one page of zeros: an offset of 0 means "no
	// bytes" to section_of.
	constexpr uint64_t front = 4096;
	const std::vector<uint8_t> raw = std::move(bytes); // may be kernel.image
	kernel.image.assign(front, 0);
	kernel.image.insert(kernel.image.end(), raw.begin(), raw.end());
	const uint64_t size = raw.size();
	const auto add = [&](const char *name, uint64_t from, uint64_t to, bool executable) {
		if (from >= start && to > from && to - start <= size)
			kernel.sections.push_back({name, from, to - from, front + (from - start), executable});
	};
	add(".text", start, etext, true);
	if (!kernel.call_ops)
		add(".init.text", names.symbol("_sinittext"), names.symbol("_einittext"), true);
	add("image", start, start + size, false);
	read_symbols(symbols, kernel);
	read_tables(kernel);
	std::ifstream sites(directory + "ftrace-sites-nokaslr.txt");
	std::string site;
	kernel.ftrace_sites.clear();
	while (sites >> site)
		kernel.ftrace_sites.push_back(std::stoull(site, nullptr, 16));
	std::sort(kernel.ftrace_sites.begin(), kernel.ftrace_sites.end());
	return !kernel.functions.empty();
}

// Loads vmlinux and System.map, or a raw Image and the symbols dumped from
// its guest (load_raw_kernel); false when either is unreadable.
inline bool load_kernel(const std::string &vmlinux, const std::string &system_map, Kernel &kernel)
{
	std::ifstream file(vmlinux, std::ios::binary);
	kernel.image.assign(std::istreambuf_iterator<char>(file), {});
	if (kernel.image.size() >= SELFMAG && memcmp(kernel.image.data(), ELFMAG, SELFMAG) != 0)
		return load_raw_kernel(std::move(kernel.image), system_map, kernel);
	if (kernel.image.size() < sizeof(Elf64_Ehdr))
		return false;
	Elf64_Ehdr header;
	memcpy(&header, kernel.image.data(), sizeof(header));
	if (header.e_machine != EM_RISCV)
		return false;
	std::vector<Elf64_Shdr> headers(header.e_shnum);
	memcpy(headers.data(), kernel.image.data() + header.e_shoff, header.e_shnum * sizeof(Elf64_Shdr));
	const char *names = reinterpret_cast<const char *>(kernel.image.data() + headers[header.e_shstrndx].sh_offset);
	for (const Elf64_Shdr &s : headers)
		if (s.sh_type == SHT_PROGBITS && (s.sh_flags & SHF_ALLOC))
			kernel.sections.push_back({names + s.sh_name, s.sh_addr, s.sh_size, s.sh_offset,
						   (s.sh_flags & SHF_EXECINSTR) != 0});

	read_symbols(system_map, kernel);
	read_tables(kernel);
	return !kernel.functions.empty();
}

// riscv 6.1's ftrace patches 8 bytes at each recorded entry.
constexpr uint64_t ftrace_site_size = 8;
// A jump label site is one 4-byte nop or jal.
constexpr uint64_t jump_label_site_size = 4;

struct Census {
	long functions = 0, fully_decoded = 0, with_indirect_jump = 0, instructions = 0, padding_bytes = 0;
	long jump_tables = 0, with_jump_table = 0; // recovered, and the functions that have one
	long jump_tables_found = 0;		   // of those, what a lookup by jump finds again
	long dataflow_sweeps_max = 0;
	// The psABI check: calls linking through ra, and those after which
	// the caller reads a temporary it did not write (what interprocedural
	// register allocation would do).
	long calls = 0, calls_followed_by_temporary_read = 0;
	long noreturn_calls_followed_by_temporary_read = 0; // unrelated code follows them
	// Functions the analysis solved strictly because a call's return
	// reads a temporary (FunctionAnalysis::temporary_kept_across_call),
	// and those where the check above found a call the analysis missed.
	// strict_noreturn: of the strict ones, those whose first such call
	// is one that never returns (__stack_chk_fail, __fortify_panic).
	long strict_functions = 0, strict_missed = 0, strict_noreturn = 0;
	std::vector<std::string> temporary_read_after;
	std::map<std::string, long> operations;
	std::map<std::string, long> classes;
	std::vector<std::string> undecodable_at;

	// Breakpoints.
	long probeable = 0, simulated = 0, out_of_line = 0;
	std::map<std::string, long> breakpoint_refusals;

	// Jump optimization of the probeable sites.
	long optimizable = 0, optimizable_without_relocation = 0, relocated = 0, short_windows = 0, same_register = 0;
	long no_return_needed = 0, relocation_failed = 0, detour_failed = 0, optimizable_strict = 0;
	// Windows that end with the probe (at a return, jump or tail call),
	// and the probeable returns, of which how many get a jump.
	long end_anchored = 0, returns = 0, returns_optimizable = 0;
	size_t relocated_bytes_max = 0, detour_bytes_max = 0, detour_bytes_total = 0;
	std::map<std::string, long> refusals, refusals_without_relocation;
	std::map<int, long> entry_registers;

	double percent(long n, long of) const { return of ? 100.0 * n / of : 0; }
};

// The code of functions[index]: up to the next function's address (an
// alias's is the same), or its section's end; with CALL_OPS, up to the
// next traced function's ftrace_ops literal, as okp_glue_function_of()
// ends it in the kernel.
inline CodeRange function_code(const Kernel &kernel, size_t index)
{
	const uint64_t address = kernel.functions[index].address;
	const Section *section = kernel.section_of(address);
	uint64_t end = section ? section->address + section->size : address;
	for (size_t next = index + 1; next < kernel.functions.size(); ++next)
		if (kernel.functions[next].address != address) {
			end = std::min(end, kernel.functions[next].address);
			break;
		}
	// A traced function's record is the jalr 4 bytes into it, its literal
	// the 8 bytes before it. The first record past this function's own is
	// the next traced function's: the next symbol's, or one the guest's
	// dump missed (a weak one: the dump keeps t and T).
	if (kernel.call_ops) {
		constexpr uint64_t entry_to_record = 4, literal = 8;
		const auto site = std::upper_bound(kernel.ftrace_sites.begin(), kernel.ftrace_sites.end(),
						   address + entry_to_record);
		if (site != kernel.ftrace_sites.end()) {
			const uint64_t traced = *site - entry_to_record;
			if (traced <= end && traced - literal > address)
				end = traced - literal;
		}
	}
	return CodeRange{kernel.bytes_at(address), address, end - address};
}

// The exception-table edges and jump labels from [start, end).
inline std::vector<ExtraEdge> edges_within(const Kernel &kernel, uint64_t start, uint64_t end)
{
	std::vector<ExtraEdge> edges;
	for (const auto *list : {&kernel.exception_edges, &kernel.jump_label_edges}) {
		auto it = std::lower_bound(list->begin(), list->end(), start,
					   [](const ExtraEdge &e, uint64_t a) { return e.from < a; });
		for (; it != list->end() && it->from < end; ++it)
			edges.push_back(*it);
	}
	return edges;
}

// Whether [start, end) overlaps a reserved site starting in sites (sorted).
inline bool overlaps_site(const std::vector<uint64_t> &sites, uint64_t site_size, uint64_t start, uint64_t end)
{
	auto it = std::lower_bound(sites.begin(), sites.end(), start > site_size ? start - site_size + 1 : 0);
	return it != sites.end() && *it < end;
}

// Calls after which the function reads a temporary (t0-t6) that nobody
// wrote since the call: the registers a caller relies on a callee to keep,
// against the psABI. Liveness the other way round from FunctionAnalysis:
// what the bytes read, and nothing where they leave the function, so that
// only real reads count (and an ebreak ends a path: BUG() stays there).
// Returns the call instructions' indexes.
inline std::vector<size_t> calls_followed_by_temporary_read(const FunctionAnalysis &analysis)
{
	const size_t count = analysis.count();
	std::vector<Instruction> instructions(count);
	for (size_t n = 0; n < count; ++n)
		instructions[n] = analysis.instruction(n);
	std::vector<RegisterSet> live(count + 1, 0);
	const auto at = [&](uint64_t address) {
		const long index = analysis.index_of(address);
		return index < 0 ? RegisterSet(0) : live[index];
	};
	for (bool changed = true; changed;) {
		changed = false;
		for (size_t n = count; n-- > 0;) {
			const Instruction &insn = instructions[n];
			const uint64_t address = analysis.address_of(n);
			// BUG()'s ebreak never returns; after it comes
			// unrelated code, so a path ends there.
			const bool ebreak =
				insn.operation == Operation::ebreak || insn.operation == Operation::c_ebreak;
			RegisterSet out = ebreak ? 0 : live[n + 1];
			if (insn.kind == InstructionClass::direct_jump && insn.rd == reg::zero)
				out = at(address + insn.immediate);
			else if (insn.kind == InstructionClass::conditional_branch)
				out |= at(address + insn.immediate);
			else if (insn.kind == InstructionClass::indirect_jump && insn.rd == reg::zero)
				out = n > 0 && instructions[n - 1].operation == Operation::auipc &&
						      instructions[n - 1].rd == insn.rs1
					      ? at(analysis.address_of(n - 1) + instructions[n - 1].immediate +
						   insn.immediate)
					      : 0;
			const RegisterSet in = is_call(insn) ? (out & ~caller_saved_registers) | insn.reads
							     : insn.reads | (out & ~insn.writes);
			if (in != live[n]) {
				live[n] = in;
				changed = true;
			}
		}
	}
	std::vector<size_t> calls;
	for (size_t n = 0; n + 1 < count; ++n)
		if (is_call(instructions[n]) && instructions[n].rd == reg::ra && (live[n + 1] & temporary_registers))
			calls.push_back(n);
	return calls;
}

// The target of the call at index n (jal, or auipc + jalr), or 0.
inline uint64_t call_target(const FunctionAnalysis &analysis, size_t n)
{
	const Instruction insn = analysis.instruction(n);
	if (insn.kind == InstructionClass::direct_jump)
		return analysis.address_of(n) + insn.immediate;
	if (n == 0)
		return 0;
	const Instruction auipc = analysis.instruction(n - 1);
	if (auipc.operation != Operation::auipc || auipc.rd != insn.rs1)
		return 0;
	return analysis.address_of(n - 1) + auipc.immediate + insn.immediate;
}

inline Census take_census(const Kernel &kernel)
{
	Census census;
	// They never return: what follows their calls is someone else's code.
	const uint64_t stack_check_failure = kernel.symbol("__stack_chk_fail"),
		       fortify_panic = kernel.symbol("__fortify_panic");
	const auto calls_noreturn = [&](const FunctionAnalysis &analysis, size_t call) {
		const uint64_t target = call_target(analysis, call);
		return target && (target == stack_check_failure || target == fortify_panic);
	};
	// Hand-written resume code okprobe refuses (mmu_off_functions.h).
	const std::vector<std::string> refused = {OKP_RISCV_MMU_OFF_FUNCTIONS};
	const uint64_t detour = kernel.lowest_module_address();
	std::vector<uint64_t> jump_label_sites;
	for (const ExtraEdge &e : kernel.jump_label_edges)
		jump_label_sites.push_back(e.from);

	for (size_t i = 0; i < kernel.functions.size(); ++i) {
		const Symbol &symbol = kernel.functions[i];
		if (i + 1 < kernel.functions.size() && kernel.functions[i + 1].address == symbol.address)
			continue; // an alias: count the function once
		const CodeRange code = function_code(kernel, i);
		const std::vector<ExtraEdge> edges = edges_within(kernel, code.address, code.address + code.size);
		FunctionAnalysis analysis, strict;
		const DataReader data = kernel.constant_data();
		analysis.build(code, nullptr, 0, edges.data(), edges.size(), &data);
		// The same without the psABI (okprobe.ko psabi_liveness=0).
		strict.set_psabi(false);
		strict.build(code, nullptr, 0, edges.data(), edges.size(), &data);
		++census.functions;
		census.dataflow_sweeps_max = std::max<long>(census.dataflow_sweeps_max, analysis.sweeps());
		census.padding_bytes += code.size - analysis.decoded_size();
		if (analysis.problem() == FunctionProblem::undecodable) {
			std::ostringstream where;
			where << symbol.name << "+0x" << std::hex << analysis.problem_address() - symbol.address;
			census.undecodable_at.push_back(where.str());
		} else {
			++census.fully_decoded;
		}
		census.with_indirect_jump += analysis.problem() == FunctionProblem::indirect_jump;
		census.jump_tables += analysis.jump_table_count();
		census.with_jump_table += analysis.jump_table_count() > 0;
		for (size_t n = 0; n < analysis.count(); ++n) {
			const Instruction insn = analysis.instruction(n);
			census.calls += is_call(insn) && insn.rd == reg::ra;
			size_t entries = 0;
			census.jump_tables_found += analysis.jump_table_entries(n, &entries) != nullptr;
		}
		const std::vector<size_t> kept = calls_followed_by_temporary_read(analysis);
		census.strict_functions += analysis.temporary_kept_across_call() >= 0;
		if (const long call = analysis.temporary_kept_across_call(); call >= 0)
			census.strict_noreturn += calls_noreturn(analysis, size_t(call));
		census.strict_missed += !kept.empty() && analysis.temporary_kept_across_call() < 0;
		for (size_t n : kept) {
			if (std::find(refused.begin(), refused.end(), symbol.name) != refused.end())
				continue;
			if (calls_noreturn(analysis, n)) {
				++census.noreturn_calls_followed_by_temporary_read;
				continue;
			}
			++census.calls_followed_by_temporary_read;
			std::ostringstream where;
			where << symbol.name << "+0x" << std::hex << analysis.address_of(n) - symbol.address;
			census.temporary_read_after.push_back(where.str());
		}

		for (size_t n = 0; n < analysis.count(); ++n) {
			const uint64_t address = analysis.address_of(n);
			const Instruction insn = analysis.instruction(n);
			++census.instructions;
			++census.operations[operation_name(insn.operation)];
			++census.classes[instruction_class_name(insn.kind)];

			// The breakpoint rules, then the kernel facts the
			// glue adds (exception entries, ftrace, jump labels).
			const BreakpointPlan breakpoint =
				plan_breakpoint(code.bytes, code.size, address - code.address);
			std::string refusal;
			if (breakpoint.verdict.error)
				refusal = breakpoint.verdict.why;
			else if (analysis.has_exception_entry(n) && breakpoint.execution == Execution::out_of_line)
				refusal = "an exception-table entry (its copy would fault without a fixup)";
			else if (overlaps_site(kernel.ftrace_sites, ftrace_site_size, address, address + insn.length))
				refusal = "an ftrace site";
			else if (overlaps_site(jump_label_sites, jump_label_site_size, address, address + insn.length))
				refusal = "a jump label site";
			if (!refusal.empty()) {
				++census.breakpoint_refusals[refusal];
				continue;
			}
			++census.probeable;
			(breakpoint.execution == Execution::simulate ? census.simulated : census.out_of_line)++;

			const OptimizationPlan strict_plan = plan_jump_optimization(strict, address);
			const uint64_t strict_window = address - strict_plan.behind;
			census.optimizable_strict +=
				strict_plan.refusal == OptimizationRefusal::none &&
				!overlaps_site(kernel.ftrace_sites, ftrace_site_size, strict_window,
					       strict_window + strict_plan.window_length) &&
				!overlaps_site(jump_label_sites, jump_label_site_size, strict_window,
					       strict_window + strict_plan.window_length);
			census.returns += is_return(insn);
			for (bool relocate : {true, false}) {
				PlanOptions options;
				options.relocate = relocate;
				const OptimizationPlan plan = plan_jump_optimization(analysis, address, options);
				// Where the window starts: at the probe, or before it.
				const uint64_t window = address - plan.behind;
				std::string why;
				if (plan.refusal != OptimizationRefusal::none)
					why = optimization_refusal_text(plan.refusal);
				else if (overlaps_site(kernel.ftrace_sites, ftrace_site_size, window,
						       window + plan.window_length))
					why = "an ftrace site in the window";
				else if (overlaps_site(jump_label_sites, jump_label_site_size, window,
						       window + plan.window_length))
					why = "a jump label site in the window";
				if (!relocate) {
					if (why.empty())
						++census.optimizable_without_relocation;
					else
						++census.refusals_without_relocation[why];
					continue;
				}
				if (!why.empty()) {
					++census.refusals[why];
					continue;
				}
				++census.optimizable;
				census.end_anchored += plan.behind != 0;
				census.returns_optimizable += is_return(insn);
				census.relocated += plan.relocates;
				census.short_windows += plan.needs_landing();
				census.no_return_needed += plan.return_register == 0;
				census.same_register += plan.return_register == plan.entry_register;
				++census.entry_registers[plan.entry_register];
				uint8_t copy[max_relocated_window];
				const size_t length = relocate_window(plan, window, detour, copy, sizeof(copy));
				census.relocation_failed += length == 0;
				census.relocated_bytes_max = std::max(census.relocated_bytes_max, length);
				// The whole detour, as the module builds it: at the
				// farthest module address, calling into module text.
				uint8_t code[max_detour_size];
				const size_t size = build_detour(plan, window, detour, detour + 0x10000,
								 0xffffaf8000000000, code, sizeof(code));
				// The patched jump, to the detour or to a landing
				// at the probe's page offset of the detour's page.
				uint8_t jump[max_window_size];
				const uint64_t entry = plan.needs_landing() ? (detour & ~(landing_alignment - 1)) +
										      window % landing_alignment
									    : detour;
				census.detour_failed += size == 0 || encode_window_jump(plan, window, entry, jump) !=
									     plan.window_length;
				census.detour_bytes_max = std::max(census.detour_bytes_max, size);
				census.detour_bytes_total += size;
			}
		}
	}
	return census;
}

inline std::string format_census(const Census &c, const std::string &title)
{
	std::ostringstream out;
	out.setf(std::ios::fixed);
	out.precision(1);
	const auto line = [&](const char *what, long n, long of) {
		out << "  " << what << n << " (" << c.percent(n, of) << " %)\n";
	};
	out << title << "\n"
	    << "  functions               " << c.functions << " (" << c.fully_decoded << " decoded to their end, "
	    << c.with_indirect_jump << " jump through a register other than a return, far jump or jump table)\n"
	    << "  jump tables recovered   " << c.jump_tables << " (in " << c.with_jump_table << " functions)\n"
	    << "  instruction sites       " << c.instructions << " (and " << c.padding_bytes << " bytes of padding)\n";
	out << "  calls through ra        " << c.calls
	    << " (followed by a read of a temporary they did not write: " << c.calls_followed_by_temporary_read
	    << ", and " << c.noreturn_calls_followed_by_temporary_read
	    << " calls of __stack_chk_fail or __fortify_panic)\n";
	out << "  analysed strictly       " << c.strict_functions
	    << " functions (a call's return reads a temporary, after a call that never returns in " << c.strict_noreturn
	    << "; the check above found " << c.strict_missed << " it did not)\n";
	out << "  classes:";
	for (const auto &[name, count] : c.classes)
		out << " " << name << " " << count << ";";
	out << "\n";
	line("breakpoint-probeable     ", c.probeable, c.instructions);
	out << "    simulated " << c.simulated << ", out of line " << c.out_of_line << "\n";
	for (const auto &[why, count] : c.breakpoint_refusals)
		out << "    refused: " << why << ": " << count << "\n";
	line("optimizable (relocating) ", c.optimizable, c.probeable);
	out << "    of those: window relocated " << c.relocated << ", 6-byte (auipc + c.jr) " << c.short_windows
	    << ", one register for entry and return " << c.same_register << " (no return register needed "
	    << c.no_return_needed << "), relocation failures " << c.relocation_failed << ", longest copy "
	    << c.relocated_bytes_max << " bytes\n"
	    << "    ending with the probe (at a return, jump or tail call) " << c.end_anchored
	    << "; returns with a jump " << c.returns_optimizable << " of " << c.returns << " ("
	    << c.percent(c.returns_optimizable, c.returns) << " %)\n"
	    << "    detours built " << c.optimizable - c.detour_failed << " (failures " << c.detour_failed << "), mean "
	    << (c.optimizable ? c.detour_bytes_total / size_t(c.optimizable) : 0) << " bytes, max "
	    << c.detour_bytes_max << " bytes\n";
	line("optimizable (strict liveness: calls and returns read every register) ", c.optimizable_strict,
	     c.probeable);
	for (const auto &[why, count] : c.refusals)
		out << "    not optimizable: " << why << ": " << count << " (" << c.percent(count, c.probeable)
		    << " %)\n";
	line("optimizable (refusing PC-relative/control flow in the window) ", c.optimizable_without_relocation,
	     c.probeable);
	for (const auto &[why, count] : c.refusals_without_relocation)
		out << "    not optimizable: " << why << ": " << count << " (" << c.percent(count, c.probeable)
		    << " %)\n";
	for (size_t i = 0; i < c.temporary_read_after.size() && i < 5; ++i)
		out << "  temporary read after the call at " << c.temporary_read_after[i] << "\n";
	for (size_t i = 0;
	     i < c.undecodable_at.size() && i < (std::getenv("OKPROBE_VERBOSE") ? c.undecodable_at.size() : 10); ++i)
		out << "  undecodable at " << c.undecodable_at[i] << "\n";
	return out.str();
}

} // namespace okp::riscv::host
