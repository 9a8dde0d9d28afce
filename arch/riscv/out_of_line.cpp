// SPDX-License-Identifier: GPL-2.0
#include "riscv/out_of_line.hpp"

#include "riscv/function_analysis.hpp"
#include "riscv/jump_optimization.hpp"
#include "riscv/probe_rules.hpp"

#include "core/handler_path.hpp"

namespace okp::riscv {

namespace {

constexpr int64_t jal_reach = int64_t(1) << 20; // jal: +-1 MiB

bool within_jal_reach(int64_t displacement)
{
	return displacement >= -jal_reach && displacement < jal_reach;
}

void put32(uint8_t *out, uint32_t word)
{
	for (int i = 0; i < 4; ++i)
		out[i] = uint8_t(word >> (8 * i));
}

bool branch_taken(const Instruction &insn, uint64_t a, uint64_t b)
{
	switch (insn.operation) {
	case Operation::beq:
	case Operation::c_beqz:
		return a == b;
	case Operation::bne:
	case Operation::c_bnez:
		return a != b;
	case Operation::blt:
		return int64_t(a) < int64_t(b);
	case Operation::bge:
		return int64_t(a) >= int64_t(b);
	case Operation::bltu:
		return a < b;
	case Operation::bgeu:
		return a >= b;
	default:
		return false;
	}
}

} // namespace

uint64_t read_register(const Registers &regs, unsigned number)
{
	return number == 0 || number > 31 ? 0 : regs.x[number - 1];
}

void write_register(Registers &regs, unsigned number, uint64_t value)
{
	if (number != 0 && number <= 31)
		regs.x[number - 1] = value;
}

bool is_simulated(const Instruction &instruction)
{
	switch (instruction.kind) {
	case InstructionClass::pc_relative:
	case InstructionClass::direct_jump:
	case InstructionClass::indirect_jump:
	case InstructionClass::conditional_branch:
		return true;
	default:
		return false;
	}
}

OKP_HANDLER_PATH void simulate(const Instruction &insn, uint64_t address, Registers &regs)
{
	const uint64_t next = address + insn.length;
	switch (insn.kind) {
	case InstructionClass::pc_relative: // auipc
		write_register(regs, insn.rd, address + uint64_t(insn.immediate));
		regs.epc = next;
		return;
	case InstructionClass::direct_jump: // jal, c.j
		write_register(regs, insn.rd, next);
		regs.epc = address + uint64_t(insn.immediate);
		return;
	case InstructionClass::indirect_jump: { // jalr, c.jr, c.jalr
		// The base first: jalr ra, 0(ra) and c.jalr ra jump to the old ra.
		const uint64_t target = (read_register(regs, insn.rs1) + uint64_t(insn.immediate)) & ~uint64_t(1);
		write_register(regs, insn.rd, next);
		regs.epc = target;
		return;
	}
	case InstructionClass::conditional_branch: {
		// c.beqz/c.bnez compare rs1 with x0 (rs2 is 0).
		const bool taken = branch_taken(insn, read_register(regs, insn.rs1), read_register(regs, insn.rs2));
		regs.epc = taken ? address + uint64_t(insn.immediate) : next;
		return;
	}
	default:
		regs.epc = next; // not simulated: nothing to do but move on
		return;
	}
}

bool can_jump_back(uint64_t copy_address, size_t length, uint64_t return_address, unsigned scratch)
{
	const int64_t displacement = int64_t(return_address - (copy_address + length));
	if (within_jal_reach(displacement))
		return true;
	return scratch != 0 && within_far_reach(displacement);
}

size_t build_copy(const uint8_t *original, size_t length, uint64_t copy_address, uint64_t return_address, SlotEnd end,
		  unsigned scratch, uint8_t (&out)[slot_half])
{
	if (length != 2 && length != 4)
		return 0;
	for (size_t i = 0; i < length; ++i)
		out[i] = original[i];
	if (end == SlotEnd::breakpoint) {
		put32(out + length, ebreak_encoding);
		return length + 4;
	}
	const uint64_t jump_at = copy_address + length;
	const int64_t displacement = int64_t(return_address - jump_at);
	if (within_jal_reach(displacement)) {
		put32(out + length, encode::jal(reg::zero, int32_t(displacement)));
		return length + 4;
	}
	if (!scratch || !within_far_reach(displacement))
		return 0;
	put32(out + length, encode::auipc(scratch, encode::high_part(displacement)));
	put32(out + length + 4, encode::jalr(reg::zero, scratch, encode::low_part(displacement)));
	return length + 8;
}

unsigned dead_register(RegisterSet live_after)
{
	// t0-t2, t3-t6 first: the registers compilers keep live the least.
	// Never ra or s0: an unwinder interrupting the copy reads them as the
	// return address and the frame pointer.
	static constexpr uint8_t preference[] = {5,  6,	 7, 28, 29, 30, 31, 17, 16, 15, 14, 13, 12,
						 11, 10, 9, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27};
	for (uint8_t candidate : preference)
		if (!(live_after & register_bit(candidate)) && !(never_free & register_bit(candidate)))
			return candidate;
	return 0;
}

} // namespace okp::riscv
