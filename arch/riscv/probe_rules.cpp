// SPDX-License-Identifier: GPL-2.0
#include "riscv/probe_rules.hpp"

#include "core/errno.hpp"

namespace okp::riscv {

namespace {

bool simulated(const Instruction &insn)
{
	switch (insn.kind) {
	case InstructionClass::pc_relative:
	case InstructionClass::direct_jump:
	case InstructionClass::indirect_jump:
	case InstructionClass::conditional_branch:
		return true;
	default:
		return false;
	}
}

BreakpointPlan refuse(BreakpointPlan plan, int error, const char *why)
{
	plan.verdict.error = error;
	plan.verdict.why = why;
	plan.execution = Execution::refuse;
	return plan;
}

// A linear decode from the function's start up to offset, as the kernel
// does, remembering an lr whose sc has not come yet.
struct WalkTo {
	bool decodes = false;  // every instruction before offset decodes
	bool boundary = false; // offset is where one starts
	bool open_lr = false;  // an lr before offset has no sc yet
};

WalkTo walk_to(const uint8_t *function, size_t size, size_t offset)
{
	WalkTo walk;
	size_t at = 0;
	unsigned since_open_lr = 0; // instructions since an unmatched lr, 0: none
	while (at < offset) {
		const Instruction insn = decode_instruction(function + at, size - at);
		if (insn.length == 0)
			return walk;
		if (insn.operation == Operation::lr)
			since_open_lr = 1;
		else if (insn.operation == Operation::sc || (since_open_lr && ++since_open_lr > lr_sc_reach))
			since_open_lr = 0;
		at += insn.length;
	}
	walk.decodes = true;
	walk.boundary = at == offset;
	walk.open_lr = since_open_lr != 0;
	return walk;
}

} // namespace

bool in_lr_sc_sequence(const uint8_t *function, size_t size, size_t offset)
{
	if (offset >= size)
		return false;
	const WalkTo walk = walk_to(function, size, offset);
	return walk.boundary &&
	       (walk.open_lr || decode_instruction(function + offset, size - offset).operation == Operation::lr);
}

BreakpointPlan plan_breakpoint(const uint8_t *function, size_t size, size_t offset)
{
	BreakpointPlan plan;
	if (offset & 1)
		return refuse(plan, error::eilseq, "the address is odd: no riscv instruction starts there");
	if (offset >= size)
		return refuse(plan, error::eilseq, "the function does not decode up to the address");
	const WalkTo walk = walk_to(function, size, offset);
	if (!walk.decodes)
		return refuse(plan, error::eilseq, "the function does not decode up to the address");
	if (!walk.boundary)
		return refuse(plan, error::eilseq, "the address is inside an instruction");

	plan.instruction = decode_instruction(function + offset, size - offset);
	const Instruction &insn = plan.instruction;
	if (insn.length == 0)
		return refuse(plan, error::eilseq, "the bytes at the address do not decode");
	if (walk.open_lr || insn.operation == Operation::lr)
		return refuse(plan, error::eperm, "inside an LR/SC sequence: a trap makes its sc fail forever");
	if (insn.operation == Operation::ebreak || insn.operation == Operation::c_ebreak)
		return refuse(plan, error::ebusy, "an ebreak: someone else's breakpoint or a bug/warning trap");
	if (insn.kind == InstructionClass::system)
		return refuse(plan, error::eperm, "a system instruction (ecall, csr*, sret, wfi, sfence.vma)");
	if (insn.kind == InstructionClass::fence_i)
		return refuse(plan, error::eperm, "fence.i");
	plan.verdict.length = insn.length;
	plan.execution = simulated(insn) ? Execution::simulate : Execution::out_of_line;
	plan.breakpoint = insn.length == 2 ? c_ebreak_encoding : ebreak_encoding;
	return plan;
}

InstructionVerdict probe_rules(const uint8_t *function, size_t size, size_t offset, uint64_t function_address)
{
	// A function starts at an even address in RVC text; an odd start
	// makes every address in it odd.
	if (function_address & 1) {
		InstructionVerdict verdict;
		verdict.error = error::eilseq;
		verdict.why = "the address is odd: no riscv instruction starts there";
		return verdict;
	}
	return plan_breakpoint(function, size, offset).verdict;
}

} // namespace okp::riscv
