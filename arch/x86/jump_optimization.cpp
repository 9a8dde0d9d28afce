// SPDX-License-Identifier: GPL-2.0
#include "x86/jump_optimization.hpp"

#include "x86/instruction_decoder.hpp"
#include "x86/plain_instructions.hpp"

#include "core/sort.hpp"

namespace okp::x86 {
namespace {

OptimizationPlan refused(OptimizationRefusal refusal, uint64_t address)
{
	OptimizationPlan plan;
	plan.refusal = refusal;
	plan.refusal_address = address;
	return plan;
}

// A jmp or ret: the instruction after it is not reached by falling through.
bool ends_flow(const Analysis &analysis)
{
	if (analysis.condition != Condition::always)
		return false;
	return analysis.transfer == Transfer::jump || analysis.transfer == Transfer::ret ||
	       analysis.transfer == Transfer::jump_register;
}

} // namespace

bool relocatable_in_detour(const Analysis &analysis)
{
	switch (analysis.execution) {
	case Execution::copy:
	case Execution::copy_rip_relative:
		return true;
	case Execution::refuse:
		return false;
	case Execution::emulate:
		break;
	}
	// Emulated at a breakpoint, but they run natively in a detour: flag
	// instructions as copies, branches re-encoded with rel32 targets.
	if (analysis.flag_operation != FlagOperation::none)
		return true;
	switch (analysis.condition) {
	case Condition::always:
	case Condition::flags:
		break;
	case Condition::loop:
	case Condition::loope:
	case Condition::loopne:
	case Condition::jrcxz:
		return false; // rel8 only: no rel32 form to re-encode to
	}
	return analysis.transfer != Transfer::none;
}

void FunctionMap::refuse(OptimizationRefusal refusal, uint64_t address)
{
	if (refusal_ == OptimizationRefusal::none) {
		refusal_ = refusal;
		refusal_address_ = address;
	}
}

// Decodes code linearly, once: its direct branch targets and what refuses
// the whole function; for the function itself (not a piece) also where
// instructions start, where someone else's int3 stands, and the jumps out.
bool FunctionMap::scan(const CodeRange &code, const Thunks &thunks, bool function)
{
	size_t previous = 0;
	unsigned previous_length = 0;
	for (size_t offset = 0; offset < code.size;) {
		const uint64_t at = code.address + offset;
		const size_t left = code.size - offset;
		// Most instructions need no analysis here: their length is all.
		const unsigned plain = plain_instruction_length(code.bytes + offset, left);
		Analysis a;
		if (!plain) {
			a = analyze_instruction(code.bytes + offset,
						left < max_instruction_length ? left : max_instruction_length, at,
						thunks);
			if (a.length == 0 || a.refusal == Refusal::undecodable) {
				if (function)
					undecodable_at_ = offset;
				// int3 padding after the last instruction is not code.
				bool padding = true;
				for (size_t i = offset; i < code.size && padding; ++i)
					padding = code.bytes[i] == 0xcc;
				if (!padding)
					refuse(OptimizationRefusal::function_undecodable, at);
				break;
			}
		}
		const unsigned length = plain ? plain : a.length;
		if (function) {
			starts_[offset / 8] |= uint8_t(1u << (offset % 8));
			if (code.bytes[offset] == 0xcc && previous_length && foreign_breakpoint_at_ == none &&
			    falls_through(code.bytes + previous, previous_length))
				foreign_breakpoint_at_ = offset;
			previous = offset;
			previous_length = length;
		}
		if (plain) {
			offset += plain;
			continue;
		}
		if (a.transfer == Transfer::jump_register)
			refuse(OptimizationRefusal::indirect_jump, at);
		if (a.refusal == Refusal::unsupported_relative)
			refuse(OptimizationRefusal::unanalysable_branch, at);
		if ((a.transfer == Transfer::jump || a.transfer == Transfer::call) && a.target &&
		    !targets_.push(a.target))
			return false;
		if (function && a.relative_branch && a.transfer == Transfer::jump &&
		    (a.target < code.address || a.target >= code.address + code.size)) {
			bool known = false;
			for (size_t i = 0; i < external_.size() && !known; ++i)
				known = external_[i] == a.target;
			if (!known && !external_.push(a.target))
				return false;
		}
		offset += a.length;
	}
	return true;
}

bool FunctionMap::decode(const CodeRange &function, const Thunks &thunks)
{
	starts_ = OwnedArray<uint8_t>::make(function.size / 8 + 1);
	if (!starts_)
		return false;
	for (size_t i = 0; i < starts_.size(); ++i)
		starts_[i] = 0;
	address_ = function.address;
	size_ = function.size;
	return scan(function, thunks, true);
}

bool FunctionMap::add_piece(const CodeRange &piece, const Thunks &thunks)
{
	return scan(piece, thunks, false);
}

void FunctionMap::finish()
{
	sort_addresses(targets_.get(), targets_.size());
}

bool FunctionMap::build(const CodeRange &function, const CodeRange *pieces, size_t piece_count, const Thunks &thunks,
			ExceptionEntryQuery has_exception_entry, void *context)
{
	if (!decode(function, thunks))
		return false;
	// Exception entries matter only in the function itself (a fixup
	// resumes in the faulting function).
	if (has_exception_entry)
		for (size_t offset = 0; offset < size_; ++offset)
			if (starts_at(offset) && has_exception_entry(address_ + offset, context))
				add_exception_entry(address_ + offset);
	for (size_t i = 0; i < piece_count; ++i)
		if (!add_piece(pieces[i], thunks))
			return false;
	finish();
	return true;
}

Boundary FunctionMap::boundary(size_t offset) const
{
	if (offset >= size_)
		return Boundary::past_end;
	// The walk from the first byte meets whichever comes first.
	const size_t stop = undecodable_at_ < foreign_breakpoint_at_ ? undecodable_at_ : foreign_breakpoint_at_;
	if (stop < offset)
		return stop == undecodable_at_ ? Boundary::undecodable : Boundary::foreign_breakpoint;
	// The walk also reaches where the decode stopped (its bytes are then
	// the instruction rules' to refuse).
	return starts_at(offset) || offset == undecodable_at_ ? Boundary::instruction_start
							      : Boundary::inside_instruction;
}

size_t FunctionMap::external_jump_targets(uint64_t *targets, size_t capacity) const
{
	for (size_t i = 0; i < external_.size() && i < capacity; ++i)
		targets[i] = external_[i];
	return external_.size();
}

uint64_t FunctionMap::target_within(uint64_t start, uint64_t end) const
{
	const uint64_t *targets = targets_.get();
	size_t low = 0, high = targets_.size();
	while (low < high) {
		const size_t middle = low + (high - low) / 2;
		if (targets[middle] < start)
			low = middle + 1;
		else
			high = middle;
	}
	return low < targets_.size() && targets[low] < end ? targets[low] : 0;
}

OptimizationPlan plan_jump_optimization(const CodeRange &function, const FunctionMap &map, uint64_t address,
					const Thunks &thunks)
{
	if (address < function.address || address >= function.address + function.size)
		return refused(OptimizationRefusal::region_past_function, address);

	// The DCR: whole instructions from address covering jump_size bytes.
	OptimizationPlan plan;
	bool copying = true;
	size_t offset = address - function.address;
	while (plan.region_length < jump_size) {
		const uint64_t at = function.address + offset;
		if (offset >= function.size)
			return refused(OptimizationRefusal::region_past_function, at);
		const size_t left = function.size - offset;
		const Analysis a =
			analyze_instruction(function.bytes + offset,
					    left < max_instruction_length ? left : max_instruction_length, at, thunks);
		if (a.length == 0 || a.refusal == Refusal::undecodable)
			return refused(OptimizationRefusal::function_undecodable, at);
		if (offset + a.length > function.size)
			return refused(OptimizationRefusal::region_past_function, at);
		// An indirect branch may land on an endbr64, even one after the
		// region's last copied instruction: the jump must not cover it.
		if (a.refusal == Refusal::landing_pad)
			return refused(OptimizationRefusal::region_not_relocatable, at);
		if (copying) {
			if (!relocatable_in_detour(a))
				return refused(OptimizationRefusal::region_not_relocatable, at);
			RegionInstruction &insn = plan.instructions[plan.count++];
			insn.offset = plan.region_length;
			insn.analysis = a;
			plan.copied_length = static_cast<uint8_t>(plan.copied_length + a.length);
			if (ends_flow(a)) {
				copying = false;
				plan.ends_in_transfer = true;
			}
		}
		plan.region_length = static_cast<uint8_t>(plan.region_length + a.length);
		offset += a.length;
	}
	if (map.function_refusal() != OptimizationRefusal::none)
		return refused(map.function_refusal(), map.function_refusal_address());
	// Only addr+1 ... addr+4 matter: every other instruction boundary of
	// the DCR lies before addr+5, and bytes past it are not overwritten.
	if (const uint64_t target = map.target_within(address + 1, address + jump_size))
		return refused(OptimizationRefusal::jump_into_region, target);
	return plan;
}

OptimizationPlan plan_jump_optimization(const CodeRange &function, const CodeRange *pieces, size_t piece_count,
					uint64_t address, const Thunks &thunks, ExceptionEntryQuery has_exception_entry,
					void *context)
{
	FunctionMap map;
	if (!map.build(function, pieces, piece_count, thunks, has_exception_entry, context))
		return refused(OptimizationRefusal::out_of_memory, address);
	return plan_jump_optimization(function, map, address, thunks);
}

namespace {

// Appends bytes to the copy being built; fails once capacity runs out.
class CopyWriter {
public:
	CopyWriter(uint8_t *out, size_t capacity, uint64_t runtime) : out_(out), capacity_(capacity), runtime_(runtime)
	{}
	bool ok() const { return ok_; }
	size_t length() const { return length_; }
	uint64_t here() const { return runtime_ + length_; }

	void bytes(const uint8_t *from, size_t count)
	{
		if (!room(count))
			return;
		for (size_t i = 0; i < count; ++i)
			out_[length_++] = from[i];
	}

	// opcode bytes, then rel32 to target measured from the end of the
	// instruction.
	void branch(const uint8_t *opcode, size_t opcode_length, uint64_t target)
	{
		const uint64_t end = here() + opcode_length + 4;
		const int64_t relative = static_cast<int64_t>(target - end);
		if (relative < INT32_MIN || relative > INT32_MAX) {
			ok_ = false;
			return;
		}
		bytes(opcode, opcode_length);
		put32(static_cast<uint32_t>(relative));
	}

	// A copy whose disp32 at disp_offset is rebased to reach target.
	void rebased(const uint8_t *insn, size_t length, size_t disp_offset, uint64_t target)
	{
		const int64_t relative = static_cast<int64_t>(target - (here() + length));
		if (relative < INT32_MIN || relative > INT32_MAX || disp_offset + 4 > length) {
			ok_ = false;
			return;
		}
		const size_t start = length_;
		bytes(insn, length);
		if (!ok_)
			return;
		for (int i = 0; i < 4; ++i)
			out_[start + disp_offset + i] =
				static_cast<uint8_t>(static_cast<uint32_t>(relative) >> (8 * i));
	}

private:
	bool room(size_t count)
	{
		if (length_ + count > capacity_)
			ok_ = false;
		return ok_;
	}
	void put32(uint32_t value)
	{
		const uint8_t le[4] = {uint8_t(value), uint8_t(value >> 8), uint8_t(value >> 16), uint8_t(value >> 24)};
		bytes(le, 4);
	}

	uint8_t *out_;
	size_t capacity_, length_ = 0;
	uint64_t runtime_;
	bool ok_ = true;
};

constexpr uint8_t jmp_rel32 = 0xe9;

// A call re-encoded as "push the return address; jmp rel32 target": the
// callee returns into the original text (the call is the region's last
// instruction, so that is the first byte after the region), never into the
// detour. A task asleep in the callee then holds no detour address, and
// the detour can be freed after an rcu-tasks grace period.
void write_call(CopyWriter &copy, uint64_t return_address, uint64_t target)
{
	const uint32_t low = static_cast<uint32_t>(return_address), high = static_cast<uint32_t>(return_address >> 32);
	if (static_cast<int64_t>(static_cast<int32_t>(low)) == static_cast<int64_t>(return_address)) {
		const uint8_t push_imm32[5] = {0x68, uint8_t(low), uint8_t(low >> 8), uint8_t(low >> 16),
					       uint8_t(low >> 24)};
		copy.bytes(push_imm32, sizeof(push_imm32));
	} else {
		// lea -8(%rsp),%rsp; movl $low,(%rsp); movl $high,4(%rsp): no
		// flags change, any address.
		const uint8_t lea[5] = {0x48, 0x8d, 0x64, 0x24, 0xf8};
		const uint8_t store_low[7] = {
			0xc7, 0x04, 0x24, uint8_t(low), uint8_t(low >> 8), uint8_t(low >> 16), uint8_t(low >> 24)};
		const uint8_t store_high[8] = {0xc7,
					       0x44,
					       0x24,
					       0x04,
					       uint8_t(high),
					       uint8_t(high >> 8),
					       uint8_t(high >> 16),
					       uint8_t(high >> 24)};
		copy.bytes(lea, sizeof(lea));
		copy.bytes(store_low, sizeof(store_low));
		copy.bytes(store_high, sizeof(store_high));
	}
	copy.branch(&jmp_rel32, 1, target);
}

// A jmp or jcc re-encoded with a rel32 target.
void write_branch(CopyWriter &copy, const Analysis &a, uint64_t target)
{
	if (a.condition == Condition::flags) {
		const uint8_t jcc[2] = {0x0f, static_cast<uint8_t>(0x80 | a.condition_code)};
		copy.branch(jcc, 2, target);
	} else {
		copy.branch(&jmp_rel32, 1, target);
	}
}

} // namespace

size_t relocate_region(const OptimizationPlan &plan, const uint8_t *region, uint64_t address, const Thunks &thunks,
		       uint64_t copy_address, uint8_t *out, size_t capacity)
{
	if (plan.refusal != OptimizationRefusal::none)
		return 0;
	CopyWriter copy(out, capacity, copy_address);
	bool returns_to_text = plan.ends_in_transfer;
	for (int n = 0; n < plan.count && copy.ok(); ++n) {
		const Analysis &a = plan.instructions[n].analysis;
		const uint8_t *insn = region + plan.instructions[n].offset;
		const uint64_t next = address + plan.instructions[n].offset + a.length;
		// Branches with an ip-relative target are re-encoded, whatever
		// their prefixes: GCC's retpoline calls are "cs call thunk"
		// (2e e8), which a copy would send rel32 off from the detour.
		// The others (ret, call *%reg, flag instructions, plain
		// copies) run as they are.
		const bool relative = a.relative_branch;
		if (a.execution == Execution::copy_rip_relative) {
			copy.rebased(insn, a.length, a.disp_offset, a.target);
		} else if (a.execution == Execution::copy || !relative) {
			copy.bytes(insn, a.length);
		} else if (a.transfer == Transfer::ret) { // jmp/jcc __x86_return_thunk
			write_branch(copy, a, thunks.return_thunk);
		} else if (a.transfer == Transfer::call_register) { // call __x86_indirect_thunk_<reg>
			write_call(copy, next, thunks.indirect_thunk[a.reg & 15]);
			returns_to_text = true;
		} else if (a.transfer == Transfer::call) {
			write_call(copy, next, a.target);
			returns_to_text = true;
		} else if (a.transfer == Transfer::jump) {
			write_branch(copy, a, a.target);
		} else {
			return 0; // indirect jumps never reach a plan
		}
	}
	if (!returns_to_text)
		copy.branch(&jmp_rel32, 1, address + plan.region_length);
	return copy.ok() ? copy.length() : 0;
}

size_t code_references(const CodeRange &function, const Thunks &thunks, unsigned kinds, uint64_t *targets,
		       size_t capacity)
{
	ExternalReferences found{function, targets, capacity};
	size_t offset = 0, last = 0;
	bool transfers = false;
	while (offset < function.size) {
		const size_t left = function.size - offset;
		const Analysis a = analyze_instruction(function.bytes + offset,
						       left < max_instruction_length ? left : max_instruction_length,
						       function.address + offset, thunks);
		if (a.length == 0 || a.refusal == Refusal::undecodable)
			break;
		last = offset;
		offset += a.length;
		transfers |= a.transfer != Transfer::none || a.refusal == Refusal::breakpoint;
		const bool wanted =
			a.relative_branch
				? (a.transfer == Transfer::jump && (kinds & references::jumps)) ||
					  (a.transfer == Transfer::call && (kinds & references::calls))
				: a.execution == Execution::copy_rip_relative && (kinds & references::taken_address);
		if (wanted)
			found.add(a.target);
	}
	// Padding: straight-line code (nops, or call depth accounting) that
	// runs into what follows. A function's own alignment nops after its
	// last return are not: the function transfers control before them.
	if ((kinds & references::falls_through) && !transfers && offset == function.size && function.size &&
	    falls_through(function.bytes + last, unsigned(offset - last)))
		found.add(function.address + function.size);
	return found.count;
}

size_t external_jump_targets(const CodeRange &function, const Thunks &thunks, uint64_t *targets, size_t capacity)
{
	return code_references(function, thunks, references::jumps, targets, capacity);
}

const char *optimization_refusal_text(OptimizationRefusal refusal)
{
	switch (refusal) {
	case OptimizationRefusal::none:
		return "optimizable";
	case OptimizationRefusal::function_undecodable:
		return "the function does not decode to its end";
	case OptimizationRefusal::region_past_function:
		return "the function ends within 5 bytes";
	case OptimizationRefusal::region_not_relocatable:
		return "an instruction in the jump's region cannot be relocated";
	case OptimizationRefusal::indirect_jump:
		return "the function jumps indirectly";
	case OptimizationRefusal::jump_into_region:
		return "a branch targets the inside of the jump";
	case OptimizationRefusal::unanalysable_branch:
		return "the function has a branch okprobe cannot follow";
	case OptimizationRefusal::exception_entry:
		return "the function has an exception-table entry";
	case OptimizationRefusal::out_of_memory:
		return "out of memory";
	}
	return "?";
}

} // namespace okp::x86
