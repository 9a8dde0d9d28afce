// SPDX-License-Identifier: GPL-2.0
// FunctionAnalysis's liveness: which registers may be read before being
// written on some path from each instruction, the backward dataflow over
// the function's control-flow graph with the psABI's rules at calls,
// returns and tail calls (function_analysis.hpp's opening comment says
// why they hold), and the check that the function's own code does not
// break them (a temporary read after a call that nothing wrote since).
#include "riscv/function_analysis.hpp"

#include "core/owned.hpp"

namespace okp::riscv {

RegisterSet FunctionAnalysis::live_at(uint64_t address) const
{
	const long index = index_of(address);
	return index < 0 ? all_registers : live_[index];
}

RegisterSet FunctionAnalysis::live_at_jump_target(uint64_t target) const
{
	if (!leaves_function(target))
		return live_at(target);
	return psabi_ ? read_at_tail_call : all_registers;
}

RegisterSet FunctionAnalysis::live_out(size_t index, const Instruction &insn, const ExtraEdge *edges,
				       size_t edge_count) const
{
	const uint64_t address = address_of(index);
	const RegisterSet next = index + 1 < count_ ? live_[index + 1] : all_registers;
	RegisterSet out;
	switch (insn.kind) {
	case InstructionClass::illegal:
		return all_registers;
	case InstructionClass::system:
		if (insn.operation == Operation::sret || insn.operation == Operation::mret)
			return all_registers;
		out = next;
		break;
	case InstructionClass::direct_jump:
		if (insn.rd == reg::zero)
			out = live_at_jump_target(address + insn.immediate);
		else if (insn.rd == reg::ra)
			out = next;
		else
			return all_registers; // an unknown linkage (t0: millicode)
		break;
	case InstructionClass::indirect_jump:
		if (flags_[index] & flag_jump_table) {
			size_t count = 0;
			const uint32_t *entries = jump_table_entries(index, &count);
			out = 0;
			for (size_t e = 0; e < count; ++e)
				out |= live_[entries[e]];
		} else if (insn.rd == reg::zero && (flags_[index] & flag_far_jump))
			out = live_at_jump_target(far_jump_target(index));
		else if (is_return(insn))
			out = psabi_ ? read_at_return : all_registers;
		else if (insn.rd != reg::ra)
			return all_registers; // jump table, pointer tail call, odd link
		else
			out = next;
		break;
	case InstructionClass::conditional_branch:
		out = next | live_at(address + insn.immediate);
		break;
	default:
		out = next;
		break;
	}
	if (flags_[index] & (flag_exception_entry | flag_jump_label)) {
		for (size_t e = 0; e < edge_count; ++e)
			if (edges[e].from == address)
				out |= live_at(edges[e].to);
	}
	return out;
}

void FunctionAnalysis::solve(const ExtraEdge *edges, size_t edge_count)
{
	for (size_t i = 0; i < count_; ++i)
		live_[i] = 0;
	// Liveness only grows from the empty start, so sweeping backwards
	// until nothing changes reaches the least fixed point; a sweep
	// carries facts through every forward edge at once, so loops cost
	// one sweep per nesting level.
	bool changed = true;
	while (changed) {
		changed = false;
		++sweeps_;
		for (size_t i = count_; i-- > 0;) {
			const Instruction insn = instruction(i);
			const RegisterSet out = live_out(i, insn, edges, edge_count);
			RegisterSet in;
			if (is_call(insn) && insn.rd == reg::ra && psabi_)
				in = (out & ~caller_saved_registers) | argument_registers | insn.reads;
			else if (is_call(insn))
				in = all_registers;
			else
				in = insn.reads | (out & ~insn.writes);
			if (in != live_[i]) {
				live_[i] = in;
				changed = true;
			}
		}
	}
}

// Liveness of what the bytes themselves read (no psABI at calls' returns,
// returns and tail calls, and nothing where control leaves the bytes or
// is unknown), then the calls whose return reaches a read of a temporary.
// An ebreak ends a path: BUG()'s never returns, and unrelated code
// follows it. False only when out of memory.
bool FunctionAnalysis::find_temporary_kept_across_call()
{
	kept_call_ = -1;
	const OwnedArray<RegisterSet> reads = OwnedArray<RegisterSet>::make(count_ + 1);
	if (!reads)
		return false;
	for (size_t i = 0; i <= count_; ++i)
		reads[i] = 0;
	const auto at = [&](uint64_t address) {
		const long index = index_of(address);
		return index < 0 ? RegisterSet(0) : reads[index];
	};
	for (bool changed = true; changed;) {
		changed = false;
		for (size_t i = count_; i-- > 0;) {
			const Instruction insn = instruction(i);
			const uint64_t address = address_of(i);
			RegisterSet out = reads[i + 1];
			if (insn.operation == Operation::ebreak || insn.operation == Operation::c_ebreak) {
				out = 0;
			} else if (insn.kind == InstructionClass::direct_jump && insn.rd == reg::zero) {
				out = at(address + insn.immediate);
			} else if (insn.kind == InstructionClass::conditional_branch) {
				out |= at(address + insn.immediate);
			} else if (insn.kind == InstructionClass::indirect_jump && insn.rd == reg::zero) {
				out = 0;
				if (flags_[i] & flag_far_jump)
					out = at(far_jump_target(i));
				size_t entries = 0;
				const uint32_t *table = jump_table_entries(i, &entries);
				for (size_t e = 0; table && e < entries; ++e)
					out |= reads[table[e]];
			}
			const RegisterSet in = is_call(insn) ? (out & ~caller_saved_registers) | insn.reads
							     : insn.reads | (out & ~insn.writes);
			if (in != reads[i]) {
				reads[i] = in;
				changed = true;
			}
		}
	}
	for (size_t i = 0; i + 1 < count_ && kept_call_ < 0; ++i) {
		const Instruction insn = instruction(i);
		if (is_call(insn) && insn.rd == reg::ra && (reads[i + 1] & temporary_registers))
			kept_call_ = long(i);
	}
	return true;
}

} // namespace okp::riscv
