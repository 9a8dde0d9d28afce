// SPDX-License-Identifier: GPL-2.0
// The addresses outside a riscv64 function that its code refers to (where
// its jumps leave it, what it calls, which code addresses it takes), over
// all its bytes (code_references) or only the code its own control flow
// reaches (reachable_code_references): a plain decode, no FunctionAnalysis.
#include "riscv/function_analysis.hpp"

#include "core/owned.hpp"

namespace okp::riscv {

namespace {

// Adds insn's reference, of the kinds asked, to found: a direct target, an
// auipc pair's (previous, at previous_address, is the instruction before).
void add_reference(ExternalReferences &found, unsigned kinds, const Instruction &insn, uint64_t address,
		   const Instruction &previous, uint64_t previous_address)
{
	const bool links = insn.rd != reg::zero;
	const bool after_auipc =
		previous.operation == Operation::auipc && previous.rd == insn.rs1 && insn.rs1 != reg::zero;
	const uint64_t far = previous_address + previous.immediate + insn.immediate;
	if (has_direct_target(insn) && (kinds & (links ? references::calls : references::jumps)))
		found.add(address + insn.immediate);
	else if (insn.operation == Operation::jalr && after_auipc &&
		 (kinds & (links ? references::calls : references::jumps)))
		found.add(far);
	else if (insn.operation == Operation::addi && after_auipc && insn.rd == insn.rs1 &&
		 (kinds & references::taken_address))
		found.add(far);
}

// Marks in live (a byte per byte of function) every instruction start
// reached from offset 0 and from entries inside the function; false when
// the flow cannot be followed (a jump table) or memory ran out.
bool mark_reachable(const CodeRange &function, const uint64_t *entries, size_t entry_count, uint8_t *live)
{
	// Each instruction is pushed at most once per branch to it: at most
	// one pending offset per 2 bytes, plus the entries.
	OwnedArray<uint32_t> pending = OwnedArray<uint32_t>::make(function.size / 2 + entry_count + 1);
	if (!pending)
		return false;
	size_t top = 0;
	pending[top++] = 0;
	for (size_t i = 0; i < entry_count; ++i)
		if (entries[i] >= function.address && entries[i] < function.address + function.size)
			pending[top++] = uint32_t(entries[i] - function.address);
	while (top) {
		for (size_t at = pending[--top]; at < function.size && !live[at];) {
			const Instruction insn = decode_instruction(function.bytes + at, function.size - at);
			if (insn.length == 0)
				break;
			live[at] = 1;
			if (insn.kind == InstructionClass::indirect_jump && !is_call(insn) && !is_return(insn))
				return false;
			if (has_direct_target(insn)) {
				const uint64_t target = at + uint64_t(insn.immediate);
				if (target < function.size && !live[target] && top < pending.size())
					pending[top++] = uint32_t(target);
			}
			if (!falls_through(insn))
				break;
			at += insn.length;
		}
	}
	return true;
}

} // namespace

size_t reachable_code_references(const CodeRange &function, const uint64_t *entries, size_t entry_count, unsigned kinds,
				 uint64_t *targets, size_t capacity)
{
	OwnedArray<uint8_t> live = OwnedArray<uint8_t>::make(function.size);
	if (!live)
		return code_references(function, kinds, targets, capacity);
	for (size_t i = 0; i < function.size; ++i)
		live[i] = 0;
	if (!mark_reachable(function, entries, entry_count, live.get()))
		return code_references(function, kinds, targets, capacity);
	ExternalReferences found{function, targets, capacity};
	Instruction previous;
	uint64_t previous_address = 0;
	size_t previous_end = 0;
	for (size_t at = 0; at < function.size; ++at) {
		if (!live[at])
			continue;
		const Instruction insn = decode_instruction(function.bytes + at, function.size - at);
		// An auipc pairs with the instruction right after it only.
		if (previous_end != at)
			previous = Instruction{};
		add_reference(found, kinds, insn, function.address + at, previous, previous_address);
		previous = insn;
		previous_address = function.address + at;
		previous_end = at + insn.length;
	}
	return found.count;
}

size_t code_references(const CodeRange &function, unsigned kinds, uint64_t *targets, size_t capacity)
{
	ExternalReferences found{function, targets, capacity};
	Instruction previous;
	uint64_t previous_address = 0;
	for (size_t at = 0; at < function.size;) {
		const Instruction insn = decode_instruction(function.bytes + at, function.size - at);
		if (insn.length == 0)
			break;
		const uint64_t address = function.address + at;
		add_reference(found, kinds, insn, address, previous, previous_address);
		previous = insn;
		previous_address = address;
		at += insn.length;
	}
	return found.count;
}

} // namespace okp::riscv
