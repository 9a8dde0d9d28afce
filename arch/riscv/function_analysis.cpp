// SPDX-License-Identifier: GPL-2.0
// FunctionAnalysis's building: decoding the function into its instruction
// list, the jump targets its bytes, its .cold pieces and the caller's extra
// edges show, the auipc + jalr pairs that are direct transfers, lr/sc
// sequences and the problems that make the optimizer refuse the function;
// then, in order, the jump tables (function_jump_tables.cpp) and the
// liveness (function_liveness.cpp). Also the lookups every later step and
// the jump planner ask: an address's instruction, the jump targets in a
// range, whether a target leaves the function.
#include "riscv/function_analysis.hpp"

#include "core/owned.hpp"
#include "core/sort.hpp"

namespace okp::riscv {

namespace {

bool is_padding(const uint8_t *bytes, size_t size)
{
	// The linker pads with zeros (c.unimp) between functions.
	for (size_t i = 0; i < size; ++i)
		if (bytes[i] != 0)
			return false;
	return true;
}

} // namespace

void FunctionAnalysis::clear()
{
	offsets_ = {};
	instructions_ = {};
	live_ = {};
	flags_ = {};
	targets_.reset();
	pieces_ = {};
	tables_ = {};
	entries_.reset();
	links_ = {};
	visits_ = {};
	table_count_ = link_count_ = 0;
	walk_ = 0;
	count_ = decoded_size_ = 0;
	problem_ = FunctionProblem::none;
	problem_address_ = 0;
	sweeps_ = 0;
	kept_call_ = -1;
	if (strict_)
		psabi_ = true; // what the caller asked for
	strict_ = false;
}

long FunctionAnalysis::index_of(uint64_t address) const
{
	if (address < function_.address || address >= function_.address + decoded_size_)
		return -1;
	const uint32_t offset = uint32_t(address - function_.address);
	size_t low = 0, high = count_;
	while (low < high) {
		const size_t middle = (low + high) / 2;
		if (offsets_[middle] < offset)
			low = middle + 1;
		else
			high = middle;
	}
	return low < count_ && offsets_[low] == offset ? long(low) : -1;
}

bool FunctionAnalysis::leaves_function(uint64_t target) const
{
	if (target - function_.address < function_.size)
		return false;
	for (size_t p = 0; p < pieces_.size(); ++p)
		if (target - pieces_[p].address < pieces_[p].size)
			return false;
	return true;
}

uint64_t FunctionAnalysis::target_within(uint64_t start, uint64_t end) const
{
	size_t low = 0, high = targets_.size();
	while (low < high) {
		const size_t middle = (low + high) / 2;
		if (targets_[middle] < start)
			low = middle + 1;
		else
			high = middle;
	}
	return low < targets_.size() && targets_[low] < end ? targets_[low] : 0;
}

void FunctionAnalysis::add_target(uint64_t target)
{
	if (targets_.size() < targets_.capacity())
		targets_.push(target); // cannot fail: within the reserved room
}

void FunctionAnalysis::scan_piece(const CodeRange &piece)
{
	for (size_t at = 0; at < piece.size;) {
		const Instruction insn = decode_instruction(piece.bytes + at, piece.size - at);
		if (insn.length == 0)
			break;
		const uint64_t target = piece.address + at + insn.immediate;
		if (has_direct_target(insn) && target >= function_.address &&
		    target < function_.address + function_.size) {
			add_target(target);
			const long index = index_of(target);
			if (index >= 0)
				flags_[index] |= flag_entry_point;
		}
		at += insn.length;
	}
}

uint64_t FunctionAnalysis::far_jump_target(size_t index) const
{
	const Instruction auipc = instruction(index - 1), jalr = instruction(index);
	return address_of(index - 1) + auipc.immediate + jalr.immediate;
}

void FunctionAnalysis::pair_far_jumps()
{
	// "auipc rX, hi; jalr rd, lo(rX)" is a direct call or jump out of
	// jal's +-1 MiB reach (the assembler's call and tail): its target
	// is in the bytes, unless something jumps to the jalr alone.
	bool added = false;
	for (size_t i = 0; i < count_; ++i) {
		const Instruction insn = instruction(i);
		if (insn.kind != InstructionClass::indirect_jump)
			continue;
		if (i > 0 && insn.operation == Operation::jalr && insn.rs1 != reg::zero) {
			const Instruction previous = instruction(i - 1);
			if (previous.operation == Operation::auipc && previous.rd == insn.rs1 &&
			    !target_within(address_of(i), address_of(i) + 1)) {
				flags_[i] |= flag_far_jump;
				const uint64_t target = far_jump_target(i);
				if (insn.rd == reg::zero && index_of(target) >= 0) {
					add_target(target);
					added = true;
				}
			}
		}
	}
	if (added)
		sort_addresses(targets_.get(), targets_.size());
}

void FunctionAnalysis::set_problem(FunctionProblem problem, uint64_t address)
{
	if (problem_ != FunctionProblem::none)
		return;
	problem_ = problem;
	problem_address_ = address;
}

void FunctionAnalysis::mark_lr_sc_sequences()
{
	for (size_t i = 0; i < count_; ++i) {
		if (instruction(i).operation != Operation::lr)
			continue;
		size_t end = i;
		for (size_t j = i + 1; j < count_ && j <= i + lr_sc_reach; ++j) {
			if (instruction(j).operation == Operation::sc) {
				end = j;
				break;
			}
		}
		for (size_t j = i; j <= end; ++j)
			flags_[j] |= flag_lr_sc;
	}
}

size_t FunctionAnalysis::count_instructions(const CodeRange *pieces, size_t piece_count, size_t *targets)
{
	// The instructions up to the first bytes that do not decode (the
	// function's problem unless they are padding), and every jump
	// target the function's bytes and its pieces' may show.
	size_t count = 0, at = 0;
	while (at < function_.size) {
		const Instruction insn = decode_instruction(function_.bytes + at, function_.size - at);
		if (insn.length == 0) {
			if (!is_padding(function_.bytes + at, function_.size - at)) {
				problem_ = FunctionProblem::undecodable;
				problem_address_ = function_.address + at;
			}
			break;
		}
		++count;
		*targets += has_direct_target(insn) || insn.kind == InstructionClass::indirect_jump;
		at += insn.length;
	}
	decoded_size_ = at;
	for (size_t p = 0; p < piece_count; ++p)
		for (size_t off = 0; off < pieces[p].size;) {
			const Instruction insn = decode_instruction(pieces[p].bytes + off, pieces[p].size - off);
			if (insn.length == 0)
				break;
			*targets += has_direct_target(insn);
			off += insn.length;
		}
	return count;
}

void FunctionAnalysis::find_target_inside_instruction()
{
	// A jump into the middle of an instruction means the bytes are not
	// what the linear decode says: trust nothing about the function.
	for (size_t t = 0; t < targets_.size(); ++t) {
		const uint64_t target = targets_[t];
		if (target >= function_.address && target < function_.address + decoded_size_ && index_of(target) < 0 &&
		    problem_ == FunctionProblem::none) {
			problem_ = FunctionProblem::target_inside;
			problem_address_ = target;
		}
	}
}

bool FunctionAnalysis::build(const CodeRange &function, const CodeRange *pieces, size_t piece_count,
			     const ExtraEdge *edges, size_t edge_count, const DataReader *data)
{
	clear();
	function_ = function;
	if (piece_count) {
		pieces_ = OwnedArray<Piece>::make(piece_count);
		if (!pieces_) {
			problem_ = FunctionProblem::out_of_memory;
			return false;
		}
		for (size_t p = 0; p < piece_count; ++p)
			pieces_[p] = {pieces[p].address, pieces[p].size};
	}

	// First pass: how many instructions and jump targets.
	size_t targets = edge_count;
	const size_t count = count_instructions(pieces, piece_count, &targets);
	count_ = count;
	offsets_ = OwnedArray<uint32_t>::make(count ? count : 1);
	instructions_ = OwnedArray<Instruction>::make(count ? count : 1);
	live_ = OwnedArray<RegisterSet>::make(count ? count : 1);
	flags_ = OwnedArray<uint8_t>::make(count ? count : 1);
	if (!offsets_ || !instructions_ || !live_ || !flags_ || !targets_.reserve(targets)) {
		clear();
		problem_ = FunctionProblem::out_of_memory;
		return false;
	}

	// Second pass: offsets, targets, jumps through registers.
	size_t at = 0;
	for (size_t i = 0; i < count; ++i) {
		const Instruction insn = decode_instruction(function.bytes + at, function.size - at);
		offsets_[i] = uint32_t(at);
		instructions_[i] = insn;
		flags_[i] = 0;
		if (has_direct_target(insn))
			add_target(function.address + at + insn.immediate);
		at += insn.length;
	}
	for (size_t p = 0; p < piece_count; ++p)
		scan_piece(pieces[p]);
	for (size_t e = 0; e < edge_count; ++e) {
		add_target(edges[e].to);
		const long from = index_of(edges[e].from);
		if (from >= 0)
			flags_[from] |= edges[e].kind == ExtraEdge::Kind::exception_fixup ? flag_exception_entry
											  : flag_jump_label;
		const long to = index_of(edges[e].to);
		if (to >= 0)
			flags_[to] |= flag_entry_point; // a fixup may change registers
	}
	sort_addresses(targets_.get(), targets_.size());
	pair_far_jumps();
	resolve_indirect_jumps(data);
	find_target_inside_instruction();
	mark_lr_sc_sequences();
	if (psabi_) {
		if (!find_temporary_kept_across_call()) {
			clear();
			problem_ = FunctionProblem::out_of_memory;
			return false;
		}
		if (kept_call_ >= 0) {
			psabi_ = false;
			strict_ = true;
		}
	}
	solve(edges, edge_count);
	return true;
}

} // namespace okp::riscv
