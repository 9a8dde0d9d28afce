// SPDX-License-Identifier: GPL-2.0
// okprobe's x86 relocation rules against the kernel's own instruction
// decoder (issue 37, "Decoders differentially fuzzed"): for one instruction,
// what analyze_instruction() decides (its length, which disp32 it rebases
// to where, which relative branch it emulates to which target) beside what
// insn.c reads (its length, insn_rip_relative() and the displacement, and
// the relative branches the kernel's kprobes emulate, by the same opcode
// switch as their prepare_emulation()). Each disagreement is a kind; the
// kinds understood are in explained_kind() with their reason.
//
// Host code: uses std freely.
#pragma once

#include "kernel_insn_reader.h"
#include "x86/instruction_analysis.hpp"
#include "x86/instruction_decoder.hpp"

#include <iomanip>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace okp::x86::differential {

// The kernel's kprobes emulate these relative branches (6.1's
// prepare_emulation()): jcc rel8/rel32, jmp rel8/rel32, call rel32, loop*,
// jrcxz. Their target: the next instruction plus the immediate. insn.c
// keeps a VEX instruction's opcode byte without its map (vpcmpeqd's 76
// would read as jbe): those are never branches.
inline bool kernel_relative_branch(const kernel_insn_reading &k)
{
	const unsigned char op = k.opcode[0];
	if (k.vex)
		return false;
	return (op >= 0x70 && op <= 0x7f) || op == 0xe8 || op == 0xe9 || op == 0xeb || (op >= 0xe0 && op <= 0xe3) ||
	       (op == 0x0f && k.opcode_bytes > 1 && k.opcode[1] >= 0x80 && k.opcode[1] <= 0x8f);
}

// Whether target is one of the kernel's return or indirect-branch thunks.
inline bool is_thunk(const Thunks &thunks, uint64_t target)
{
	if (target == thunks.return_thunk)
		return true;
	for (const uint64_t t : thunks.return_thunk_variants)
		if (t && t == target)
			return true;
	for (const uint64_t t : thunks.indirect_thunk)
		if (t && t == target)
			return true;
	for (const auto &variant : thunks.indirect_jump_thunk_variants)
		for (const uint64_t t : variant)
			if (t && t == target)
				return true;
	return false;
}

// Where the two read different lengths: by the opcode, for the three
// places insn.c's opcode map and the CPU's manuals part (explained_kind()).
inline std::string length_kind(const kernel_insn_reading &k)
{
	if (k.opcode[0] == 0x0f && !k.vex) {
		if (k.opcode[1] == 0xff)
			return "length differs: ud0 (0f ff)";
		if (k.opcode[1] >= 0x19 && k.opcode[1] <= 0x1e)
			return "length differs: a reserved hint nop (0f 19-1e)";
		if (k.opcode[1] >= 0x20 && k.opcode[1] <= 0x23)
			return "length differs: mov to or from cr/dr (0f 20-23)";
		if (k.mandatory_prefix && k.no_attribute)
			return "length differs: a 66/f2/f3 form insn.c's map lacks";
		if (k.mandatory_prefix && k.last_prefix != 0x66 && k.last_prefix != 0xf2 && k.last_prefix != 0xf3)
			return "length differs: a 66/f2/f3 prefix followed by another prefix";
	}
	return "length differs (unsafe)";
}

// AMD's SSE4a EXTRQ/INSERTQ (66 or f2, then 0f 78 or 0f 79).
inline bool sse4a(const uint8_t *bytes, size_t available)
{
	size_t i = 0;
	bool prefixed = false;
	for (; i < available; ++i) {
		const uint8_t b = bytes[i];
		if (b == 0x66 || b == 0xf2)
			prefixed = true;
		else if (!is_legacy_prefix(b) && (b & 0xf0) != 0x40)
			break;
	}
	return prefixed && i + 1 < available && bytes[i] == 0x0f && (bytes[i + 1] == 0x78 || bytes[i + 1] == 0x79);
}

// The kinds of disagreement at one instruction; empty when both agree.
inline std::vector<std::string> disagreements(const uint8_t *bytes, size_t available, uint64_t address,
					      const Thunks &thunks)
{
	std::vector<std::string> kinds;
	kernel_insn_reading k;
	kernel_insn_read(bytes, int(available), &k);
	const Analysis a = analyze_instruction(bytes, available, address, thunks);
	const bool copied = a.execution == Execution::copy || a.execution == Execution::copy_rip_relative;
	if (a.refusal == Refusal::undecodable) {
		if (k.decoded)
			kinds.push_back("okprobe: undecodable; insn.c decodes");
		return kinds;
	}
	if (!k.decoded) {
		if (a.execution == Execution::refuse)
			kinds.push_back("insn.c: undecodable; okprobe decodes and refuses it");
		else if (sse4a(bytes, available))
			kinds.push_back("insn.c: undecodable; okprobe decodes SSE4a's extrq/insertq");
		else if (available > 3 && bytes[0] == 0xc4 && (bytes[1] & 0x1f) == 3 && bytes[3] >= 0x5c &&
			 bytes[3] <= 0x7f)
			kinds.push_back("insn.c: undecodable; okprobe decodes FMA4");
		else
			kinds.push_back("insn.c: undecodable; okprobe decodes");
		return kinds;
	}
	if (a.length != k.length) {
		kinds.push_back(length_kind(k));
		return kinds;
	}
	const uint64_t next = address + k.length;
	if (kernel_relative_branch(k)) {
		const uint64_t target = next + uint64_t(k.immediate);
		if (copied)
			kinds.push_back("a relative branch okprobe copies unrebased (unsafe)");
		else if (a.execution == Execution::refuse)
			kinds.push_back(std::string("a relative branch okprobe refuses: ") + refusal_text(a.refusal));
		else if (is_thunk(thunks, target) && a.execution == Execution::emulate &&
			 a.transfer != Transfer::jump && a.transfer != Transfer::call)
			kinds.push_back("a branch to a thunk okprobe emulates as what the thunk stands for");
		else if (!a.relative_branch || a.target != target)
			kinds.push_back("relative branch target differs (unsafe)");
	} else if (a.relative_branch) {
		kinds.push_back("okprobe emulates a relative branch insn.c reads as none");
	}
	if (k.rip_relative) {
		const uint64_t operand = next + uint64_t(k.displacement);
		if (a.execution == Execution::copy)
			kinds.push_back("a rip-relative operand okprobe copies unrebased (unsafe)");
		else if (a.execution == Execution::copy_rip_relative &&
			 (a.disp_offset != k.displacement_offset || a.target != operand))
			kinds.push_back("rip-relative rebased at the wrong offset or address (unsafe)");
	} else if (a.execution == Execution::copy_rip_relative) {
		kinds.push_back("okprobe rebases what insn.c reads as not rip-relative (unsafe)");
	}
	return kinds;
}

// Why a kind is not a bug; nullptr for the kinds that fail the test.
inline const char *explained_kind(const std::string &kind)
{
	static const std::map<std::string, const char *> why = {
		{"okprobe: undecodable; insn.c decodes",
		 "insn.c reads lengths from its opcode map and checks little else "
		 "(reserved and invalid encodings decode there); Zydis refuses them, "
		 "and okprobe refuses the probe, the safe side"},
		{"a branch to a thunk okprobe emulates as what the thunk stands for",
		 "jmp __x86_return_thunk is a ret, call/jmp __x86_indirect_thunk_rax a "
		 "call/jmp *%rax (what the thunk does), as the exit census reads them"},
		{"length differs: ud0 (0f ff)",
		 "Intel's manual gives UD0 a ModRM, AMD's and insn.c's map none; okprobe "
		 "refuses a probe on it, and no kernel function has one"},
		{"length differs: a reserved hint nop (0f 19-1e)",
		 "NOP Ev: the CPU reads a ModRM after each of 0f 19-1e (Zydis does), "
		 "6.1's insn.c map leaves 0f 19-1b and 1d without one; compilers emit "
		 "only 0f 1f"},
		{"length differs: mov to or from cr/dr (0f 20-23)",
		 "the CPU ignores the ModRM's mod bits there (always registers: Zydis's "
		 "length), insn.c reads a memory operand's displacement; compiled code "
		 "has mod 11, where both agree"},
		{"length differs: a 66/f2/f3 form insn.c's map lacks",
		 "a prefix the CPU ignores on that opcode (rep setae, repne cmov): insn.c "
		 "looks the prefixed form up, finds no entry and reads no ModRM; "
		 "compilers emit these prefixes only where they select a form"},
		{"length differs: a 66/f2/f3 prefix followed by another prefix",
		 "insn.c looks the opcode up under the prefix nearest it (a segment "
		 "prefix, say), the CPU under the 66/f2/f3 wherever it stands; "
		 "compilers put those last"},
		{"insn.c: undecodable; okprobe decodes and refuses it",
		 "what Zydis alone reads (Knights Corner's VEX jknzd among it) okprobe "
		 "refuses to probe: the safe side"},
		{"insn.c: undecodable; okprobe decodes FMA4",
		 "AMD's FMA4 (VEX map 3, 5c-7f), missing from 6.1's insn.c map; no "
		 "kernel function has one"},
		{"insn.c: undecodable; okprobe decodes SSE4a's extrq/insertq",
		 "AMD's SSE4a (66/f2 0f 78/79), missing from 6.1's insn.c map; no "
		 "kernel function has one"},
		{"a relative branch okprobe refuses: the instruction has an operand- or address-size prefix okprobe "
		 "does not emulate",
		 "a 0x66 or 0x67 prefix on a branch (its target truncated): okprobe "
		 "refuses it, the kernel's kprobes emulate it as if it were not there"},
	};
	const auto it = why.find(kind);
	return it == why.end() ? nullptr : it->second;
}

// Disagreements counted by kind, with a few examples of each.
struct Tally {
	long compared = 0, agreed = 0;
	std::map<std::string, long> count;
	std::map<std::string, std::vector<std::string>> examples;

	void add(const uint8_t *bytes, size_t available, uint64_t address, const Thunks &thunks,
		 const std::string &where)
	{
		++compared;
		const std::vector<std::string> kinds = disagreements(bytes, available, address, thunks);
		agreed += kinds.empty();
		for (const std::string &kind : kinds) {
			++count[kind];
			std::vector<std::string> &some = examples[kind];
			if (some.size() < 3) {
				std::ostringstream text;
				text << where << ":";
				for (size_t i = 0; i < available && i < 15; ++i)
					text << " " << std::hex << std::setw(2) << std::setfill('0')
					     << unsigned(bytes[i]);
				some.push_back(text.str());
			}
		}
	}

	// Prints the table; returns how many disagreements no reason explains.
	long report(std::ostream &out, const std::string &title) const
	{
		long unexplained = 0;
		out << "x86 relocation rules against the kernel's insn.c: " << title << "\n  " << compared
		    << " instructions, " << agreed << " agree\n";
		for (const auto &[kind, n] : count) {
			const char *why = explained_kind(kind);
			unexplained += why ? 0 : n;
			out << "  " << std::setw(8) << n << "  " << kind << "  [" << (why ? why : "UNEXPLAINED")
			    << "]\n";
			for (const std::string &e : examples.at(kind))
				out << "            e.g. " << e << "\n";
		}
		out << "  " << unexplained << " unexplained\n";
		return unexplained;
	}
};

} // namespace okp::x86::differential
