// SPDX-License-Identifier: GPL-2.0
#include "riscv/trap_window.hpp"

#include "riscv/function_analysis.hpp"
#include "riscv/instruction_decoder.hpp"

namespace okp::riscv {
namespace {

constexpr uint32_t csr_sscratch = 0x140;

bool writes_tp_to_sscratch(const Instruction &insn)
{
	return insn.operation == Operation::csrrw && insn.rd == reg::zero && insn.rs1 == reg::tp &&
	       (insn.raw >> 20) == csr_sscratch;
}

// Only the code that can run (reachable_code_references): where the hidden
// entries are unknown, every byte of the function.
size_t calls_jumps_and_callbacks(const CodeRange &function, const HiddenEntries &entries, uint64_t *targets,
				 size_t capacity)
{
	constexpr unsigned kinds = references::jumps | references::calls | references::taken_address;
	if (!entries.known)
		return code_references(function, kinds, targets, capacity);
	return reachable_code_references(function, entries.addresses, entries.count, kinds, targets, capacity);
}

} // namespace

TrapWindowCalls sscratch_window_calls(const CodeRange &exit_code, uint64_t *calls, size_t capacity)
{
	TrapWindowCalls result;
	bool inside = false;
	Instruction previous;
	uint64_t previous_address = 0;
	for (size_t at = 0; at < exit_code.size;) {
		const Instruction insn = decode_instruction(exit_code.bytes + at, exit_code.size - at);
		if (insn.length == 0) {
			result.why = "undecodable bytes before the trap exit's sret";
			return result;
		}
		const uint64_t address = exit_code.address + at;
		if (writes_tp_to_sscratch(insn)) {
			inside = true;
		} else if (insn.operation == Operation::sret) {
			if (!inside)
				result.why = "the trap exit reaches sret without writing sscratch";
			return result;
		} else if (inside && is_call(insn)) {
			uint64_t target = 0;
			if (has_direct_target(insn))
				target = address + insn.immediate;
			else if (insn.operation == Operation::jalr && previous.operation == Operation::auipc &&
				 previous.rd == insn.rs1 && insn.rs1 != reg::zero)
				target = previous_address + previous.immediate + insn.immediate;
			else {
				result.why = "an indirect call in the trap exit after sscratch is written";
				return result;
			}
			if (result.count < capacity)
				calls[result.count] = target;
			++result.count;
		}
		previous = insn;
		previous_address = address;
		at += insn.length;
	}
	result.why = "no sret in the trap exit code read";
	return result;
}

TrapPath sscratch_window_functions(const CodeRange &exit_code, uint64_t (*lookup)(const char *name, void *context),
				   const CodeGraphFacts &facts, RangeList &reached)
{
	constexpr size_t max_roots = 8;
	uint64_t roots[max_roots];
	const TrapWindowCalls calls = sscratch_window_calls(exit_code, roots, max_roots);
	if (calls.why || calls.count > max_roots) {
		TrapPath result;
		result.why = calls.why ? calls.why : "the trap exit makes more calls than okprobe expects";
		return result;
	}
	return reach_trap_path(roots, calls.count, TrapPathStops{}, lookup, facts, calls_jumps_and_callbacks, reached,
			       trap_window_why);
}

} // namespace okp::riscv
