// SPDX-License-Identifier: GPL-2.0
// What every path to an instruction agrees on, for the jump-table proofs
// (function_jump_tables.cpp): the control-flow graph walked backwards
// (link_jumps, walk_back), a register's constant value (a table's address
// or bound, set before a loop) and the bound on an index (a bltu/bgeu it
// passes or takes, an andi). A path from outside the bytes (the entry, a
// piece, a fixup) or through a call that may change the register knows
// nothing, so the answer is "unknown" unless every path gives it.
#include "riscv/function_analysis.hpp"

#include "core/owned.hpp"
#include "core/sort.hpp"

namespace okp::riscv {

bool FunctionAnalysis::link_jumps()
{
	size_t count = entries_.size();
	for (size_t i = 0; i < count_; ++i) {
		const Instruction insn = instruction(i);
		count += has_direct_target(insn) || (flags_[i] & flag_far_jump);
	}
	links_ = {}; // the old graph goes before the new one is allocated
	links_ = OwnedArray<uint64_t>::make(count ? count : 1);
	if (!visits_) {
		visits_ = OwnedArray<uint32_t>::make(3 * count_);
		for (size_t i = 0; i < visits_.size(); ++i)
			visits_[i] = 0;
	}
	link_count_ = 0;
	if (!links_ || !visits_)
		return false;
	const auto link = [this](uint64_t target, size_t from) {
		const long to = index_of(target);
		if (to >= 0)
			links_[link_count_++] = uint64_t(to) << 32 | from;
	};
	for (size_t i = 0; i < count_; ++i) {
		const Instruction insn = instruction(i);
		if (has_direct_target(insn))
			link(address_of(i) + insn.immediate, i);
		else if ((flags_[i] & flag_far_jump) && insn.rd == reg::zero)
			link(far_jump_target(i), i);
	}
	for (size_t t = 0; t < table_count_; ++t)
		for (size_t e = 0; e < tables_[t].count; ++e)
			links_[link_count_++] = uint64_t(entries_[tables_[t].first + e]) << 32 | tables_[t].jump;
	sort_addresses(links_.get(), link_count_);
	return true;
}

bool FunctionAnalysis::constant_definition(size_t index, unsigned n, uint64_t *value) const
{
	const Instruction insn = instruction(index);
	switch (insn.operation) {
	case Operation::lui:
	case Operation::c_lui:
	case Operation::c_li:
		*value = uint64_t(insn.immediate);
		return true;
	case Operation::auipc:
		*value = address_of(index) + insn.immediate;
		return true;
	case Operation::addi:
	case Operation::addiw:
	case Operation::c_addi:
	case Operation::c_addiw: {
		// li, or the second half of lui/auipc + addi when nothing
		// jumps between the two.
		uint64_t base = 0;
		if (insn.rs1 == reg::zero)
			base = 0;
		else if (insn.rs1 != n || index == 0 || target_within(address_of(index), address_of(index) + 1) ||
			 (flags_[index] & flag_entry_point))
			return false;
		else {
			const Instruction high = instruction(index - 1);
			if (high.rd != n || (high.operation != Operation::lui && high.operation != Operation::c_lui &&
					     high.operation != Operation::auipc))
				return false;
			constant_definition(index - 1, n, &base);
		}
		*value = base + insn.immediate;
		if (insn.operation == Operation::addiw || insn.operation == Operation::c_addiw)
			*value = uint64_t(int64_t(int32_t(uint32_t(*value))));
		return true;
	}
	default:
		return false;
	}
}

template <typename Decide> bool FunctionAnalysis::walk_back(size_t index, Decide &&decide) const
{
	struct Pending {
		uint32_t at;
		uint8_t edge;
	};
	Pending pending[64];
	size_t depth = 0, steps = 0;
	const uint32_t walk = ++walk_;
	const auto push = [&](size_t at, uint8_t edge) {
		uint32_t &seen = visits_[3 * at + edge];
		if (seen == walk)
			return true;
		if (depth == sizeof(pending) / sizeof(pending[0]))
			return false;
		seen = walk;
		pending[depth++] = {uint32_t(at), edge};
		return true;
	};
	// The predecessors of at; none known from outside the bytes.
	const auto reach = [&](size_t at) {
		if (at == 0 || (flags_[at] & flag_entry_point))
			return false;
		const Instruction previous = instruction(at - 1);
		const bool both = previous.kind == InstructionClass::conditional_branch &&
				  address_of(at - 1) + previous.immediate == address_of(at);
		if (falls_through(previous) && !push(at - 1, both ? 2 : 0))
			return false;
		size_t low = 0, high = link_count_;
		while (low < high) {
			const size_t middle = (low + high) / 2;
			if ((links_[middle] >> 32) < at)
				low = middle + 1;
			else
				high = middle;
		}
		for (; low < link_count_ && (links_[low] >> 32) == at; ++low) {
			const size_t from = uint32_t(links_[low]);
			if (!(both && from == at - 1) && !push(from, 1))
				return false;
		}
		return true;
	};
	if (!reach(index))
		return false;
	while (depth > 0) {
		const Pending next = pending[--depth];
		if (++steps > max_constant_search)
			return false;
		switch (decide(size_t(next.at), next.edge)) {
		case Step::fail:
			return false;
		case Step::found:
			break;
		case Step::back:
			if (!reach(next.at))
				return false;
			break;
		}
	}
	return true;
}

bool FunctionAnalysis::constant_before(size_t index, unsigned n, uint64_t *value) const
{
	// Every path to index must meet a definition of register n by a
	// constant, all the same; a path from outside (the entry, a piece,
	// a fixup) or through a call that may change n leaves it unknown.
	if (n == reg::zero) {
		*value = 0;
		return true;
	}
	const RegisterSet bit = register_bit(n);
	bool known = false;
	const bool walked = walk_back(index, [&](size_t at, uint8_t) {
		const Instruction insn = instruction(at);
		if (is_call(insn)) // the callee keeps callee-saved registers (psABI)
			return insn.rd == reg::ra && !(bit & caller_saved_registers) ? Step::back : Step::fail;
		if (!(insn.writes & bit))
			return Step::back;
		uint64_t defined = 0;
		if (!constant_definition(at, n, &defined) || (known && defined != *value))
			return Step::fail;
		*value = defined;
		known = true;
		return Step::found;
	});
	return walked && known;
}

uint32_t FunctionAnalysis::branch_bound(size_t index, bool taken, unsigned n) const
{
	// bltu x, y goes on when x >= y, jumps when x < y; bgeu the other
	// way round. A bound is "n < C" or "C >= n", C a constant.
	const Instruction insn = instruction(index);
	const bool less = (insn.operation == Operation::bltu) == taken; // else x >= y
	const unsigned other = less ? insn.rs2 : insn.rs1;
	if ((less ? insn.rs1 : insn.rs2) != n || other == n)
		return 0;
	uint64_t constant = 0;
	if (!constant_before(index, other, &constant) || constant >= max_jump_table_entries)
		return 0;
	return uint32_t(less ? constant : constant + 1);
}

uint32_t FunctionAnalysis::bound_before(size_t index, unsigned n) const
{
	// Every path to index must bound register n, by a branch it takes
	// or passes (bltu/bgeu against a constant) or by the instruction
	// that sets it (andi with a small mask, li of a small number), and
	// not change it since. How many entries it may select, or 0.
	const RegisterSet bit = register_bit(n);
	uint32_t most = 0;
	const bool walked = walk_back(index, [&](size_t at, uint8_t edge) {
		const Instruction insn = instruction(at);
		if (is_call(insn))
			return insn.rd == reg::ra && !(bit & caller_saved_registers) ? Step::back : Step::fail;
		uint32_t bound = 0;
		if (edge != 2 && (insn.operation == Operation::bltu || insn.operation == Operation::bgeu))
			bound = branch_bound(at, edge == 1, n);
		else if (insn.writes & bit) {
			const bool mask = insn.operation == Operation::andi || insn.operation == Operation::c_andi;
			const bool number = insn.operation == Operation::c_li ||
					    (insn.operation == Operation::addi && insn.rs1 == reg::zero);
			if ((mask || number) && insn.immediate >= 0 &&
			    uint64_t(insn.immediate) < max_jump_table_entries)
				bound = uint32_t(insn.immediate + 1);
			else
				return Step::fail;
		}
		if (!bound)
			return Step::back;
		most = bound > most ? bound : most;
		return Step::found;
	});
	return walked ? most : 0;
}

} // namespace okp::riscv
