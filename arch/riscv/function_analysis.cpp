// SPDX-License-Identifier: GPL-2.0
#include "riscv/function_analysis.hpp"

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

void sift_down(uint64_t *values, size_t root, size_t count)
{
	for (size_t child; (child = 2 * root + 1) < count; root = child) {
		if (child + 1 < count && values[child + 1] > values[child])
			++child;
		if (values[root] >= values[child])
			return;
		const uint64_t swap = values[root];
		values[root] = values[child];
		values[child] = swap;
	}
}

// Heap sort: the core has no <algorithm>, and a large function has
// thousands of targets.
void sort(uint64_t *values, size_t count)
{
	for (size_t i = count / 2; i-- > 0;)
		sift_down(values, i, count);
	for (size_t end = count; end-- > 1;) {
		const uint64_t swap = values[0];
		values[0] = values[end];
		values[end] = swap;
		sift_down(values, 0, end);
	}
}

} // namespace

FunctionAnalysis::~FunctionAnalysis()
{
	clear();
}

void FunctionAnalysis::clear()
{
	delete[] offsets_;
	delete[] live_;
	delete[] flags_;
	delete[] targets_;
	delete[] pieces_;
	pieces_ = nullptr;
	piece_count_ = 0;
	offsets_ = nullptr;
	live_ = nullptr;
	flags_ = nullptr;
	targets_ = nullptr;
	count_ = decoded_size_ = target_count_ = target_capacity_ = 0;
	problem_ = FunctionProblem::none;
	problem_address_ = 0;
	sweeps_ = 0;
}

Instruction FunctionAnalysis::instruction(size_t index) const
{
	const size_t offset = offsets_[index];
	return decode_instruction(function_.bytes + offset, decoded_size_ - offset);
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

RegisterSet FunctionAnalysis::live_at(uint64_t address) const
{
	const long index = index_of(address);
	return index < 0 ? all_registers : live_[index];
}

bool FunctionAnalysis::leaves_function(uint64_t target) const
{
	if (target - function_.address < function_.size)
		return false;
	for (size_t p = 0; p < piece_count_; ++p)
		if (target - pieces_[p].address < pieces_[p].size)
			return false;
	return true;
}

RegisterSet FunctionAnalysis::live_at_jump_target(uint64_t target) const
{
	return leaves_function(target) ? read_at_tail_call : live_at(target);
}

uint64_t FunctionAnalysis::target_within(uint64_t start, uint64_t end) const
{
	size_t low = 0, high = target_count_;
	while (low < high) {
		const size_t middle = (low + high) / 2;
		if (targets_[middle] < start)
			low = middle + 1;
		else
			high = middle;
	}
	return low < target_count_ && targets_[low] < end ? targets_[low] : 0;
}

void FunctionAnalysis::add_target(uint64_t target)
{
	if (target_count_ < target_capacity_)
		targets_[target_count_++] = target;
}

void FunctionAnalysis::scan_piece(const CodeRange &piece)
{
	for (size_t at = 0; at < piece.size;) {
		const Instruction insn = decode_instruction(piece.bytes + at, piece.size - at);
		if (insn.length == 0)
			break;
		const uint64_t target = piece.address + at + insn.immediate;
		if (has_direct_target(insn) && target >= function_.address &&
		    target < function_.address + function_.size)
			add_target(target);
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
				continue;
			}
		}
		if (insn.rd == reg::zero && !is_return(insn) && problem_ == FunctionProblem::none) {
			problem_ = FunctionProblem::indirect_jump;
			problem_address_ = address_of(i);
		}
	}
	if (added)
		sort(targets_, target_count_);
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
		if (insn.rd == reg::zero && (flags_[index] & flag_far_jump))
			out = live_at_jump_target(far_jump_target(index));
		else if (is_return(insn))
			out = read_at_return;
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
			if (is_call(insn) && insn.rd == reg::ra)
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

bool FunctionAnalysis::build(const CodeRange &function, const CodeRange *pieces, size_t piece_count,
			     const ExtraEdge *edges, size_t edge_count)
{
	clear();
	function_ = function;
	if (piece_count) {
		pieces_ = new Piece[piece_count];
		if (!pieces_) {
			problem_ = FunctionProblem::out_of_memory;
			return false;
		}
		piece_count_ = piece_count;
		for (size_t p = 0; p < piece_count; ++p)
			pieces_[p] = {pieces[p].address, pieces[p].size};
	}

	// First pass: how many instructions and jump targets.
	size_t count = 0, targets = edge_count;
	size_t at = 0;
	while (at < function.size) {
		const Instruction insn = decode_instruction(function.bytes + at, function.size - at);
		if (insn.length == 0) {
			if (!is_padding(function.bytes + at, function.size - at)) {
				problem_ = FunctionProblem::undecodable;
				problem_address_ = function.address + at;
			}
			break;
		}
		++count;
		targets += has_direct_target(insn) || insn.kind == InstructionClass::indirect_jump;
		at += insn.length;
	}
	decoded_size_ = at;
	for (size_t p = 0; p < piece_count; ++p)
		for (size_t off = 0; off < pieces[p].size;) {
			const Instruction insn = decode_instruction(pieces[p].bytes + off, pieces[p].size - off);
			if (insn.length == 0)
				break;
			targets += has_direct_target(insn);
			off += insn.length;
		}

	count_ = count;
	offsets_ = new uint32_t[count ? count : 1];
	live_ = new RegisterSet[count ? count : 1];
	flags_ = new uint8_t[count ? count : 1];
	target_capacity_ = targets;
	targets_ = new uint64_t[targets ? targets : 1];
	if (!offsets_ || !live_ || !flags_ || !targets_) {
		clear();
		problem_ = FunctionProblem::out_of_memory;
		return false;
	}

	// Second pass: offsets, targets, jumps through registers.
	at = 0;
	for (size_t i = 0; i < count; ++i) {
		const Instruction insn = decode_instruction(function.bytes + at, function.size - at);
		offsets_[i] = uint32_t(at);
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
	}
	sort(targets_, target_count_);
	pair_far_jumps();

	// A jump into the middle of an instruction means the bytes are not
	// what the linear decode says: trust nothing about the function.
	for (size_t t = 0; t < target_count_; ++t) {
		const uint64_t target = targets_[t];
		if (target >= function.address && target < function.address + decoded_size_ && index_of(target) < 0 &&
		    problem_ == FunctionProblem::none) {
			problem_ = FunctionProblem::target_inside;
			problem_address_ = target;
		}
	}
	mark_lr_sc_sequences();
	solve(edges, edge_count);
	return true;
}

} // namespace okp::riscv
