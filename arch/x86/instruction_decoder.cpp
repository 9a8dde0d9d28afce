// SPDX-License-Identifier: GPL-2.0
#include "x86/instruction_decoder.hpp"

#include "x86/plain_instructions.hpp"
#include "x86/zydis_decode.hpp"

namespace okp::x86 {

bool has_emulate_prefix(const uint8_t *bytes, size_t available)
{
	static constexpr uint8_t xen[emulate_prefix_length] = {0x0f, 0x0b, 'x', 'e', 'n'};
	static constexpr uint8_t kvm[emulate_prefix_length] = {0x0f, 0x0b, 'k', 'v', 'm'};
	// Asked of every instruction a function decode meets: ud2 first.
	if (available < emulate_prefix_length || bytes[0] != 0x0f || bytes[1] != 0x0b)
		return false;
	bool is_xen = true, is_kvm = true;
	for (size_t i = 0; i < emulate_prefix_length; ++i) {
		is_xen &= bytes[i] == xen[i];
		is_kvm &= bytes[i] == kvm[i];
	}
	return is_xen || is_kvm;
}

bool decode_instruction(const uint8_t *bytes, size_t available, ZydisDecodedInstruction *instruction)
{
	// An emulate prefix and its instruction are one: the instruction's
	// fields, the raw offsets counted from the prefix.
	const size_t prefix = has_emulate_prefix(bytes, available) ? emulate_prefix_length : 0;
	ZydisDecoder decoder;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) ||
	    !ZYAN_SUCCESS(ZydisDecoderEnableMode(&decoder, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE)) ||
	    !ZYAN_SUCCESS(
		    ZydisDecoderDecodeInstruction(&decoder, nullptr, bytes + prefix, available - prefix, instruction)))
		return false;
	if (prefix) {
		instruction->length += prefix;
		instruction->raw.rex.offset += prefix;
		instruction->raw.modrm.offset += prefix;
		instruction->raw.sib.offset += prefix;
		instruction->raw.disp.offset += prefix;
		instruction->raw.imm[0].offset += prefix;
		instruction->raw.imm[1].offset += prefix;
	}
	return true;
}

void flow_step(const CodeRange &function, size_t offset, FlowStep &step)
{
	ZydisDecodedInstruction instruction;
	step = FlowStep{};
	if (offset >= function.size ||
	    !decode_instruction(function.bytes + offset, function.size - offset, &instruction))
		return;
	step.length = instruction.length;
	const uint64_t next = function.address + offset + instruction.length;
	const bool relative = instruction.raw.imm[0].is_relative;
	const uint64_t target = next + static_cast<uint64_t>(instruction.raw.imm[0].value.s);
	switch (instruction.meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
		step.kind = FlowKind::branch;
		step.target = relative ? target : 0;
		return;
	case ZYDIS_CATEGORY_UNCOND_BR:
		step.kind = relative ? FlowKind::jump : FlowKind::stop;
		step.target = relative ? target : 0;
		return;
	default:
		step.kind = falls_through(function.bytes + offset, instruction.length) ||
					    instruction.meta.category == ZYDIS_CATEGORY_CALL
				    ? FlowKind::next
				    : FlowKind::stop;
		return;
	}
}

bool status_flags_dead(const uint8_t *function, size_t function_size, size_t offset, ClobberedFlags clobbered)
{
	const ZydisAccessedFlagsMask status = ZYDIS_CPUFLAG_OF | ZYDIS_CPUFLAG_SF | ZYDIS_CPUFLAG_ZF |
					      ZYDIS_CPUFLAG_AF | ZYDIS_CPUFLAG_PF |
					      (clobbered == ClobberedFlags::call ? ZYDIS_CPUFLAG_CF : 0);
	// A few instructions are enough: compilers set flags right before
	// they use them.
	constexpr int max_instructions = 16;
	ZydisDecoder decoder;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return false;
	ZydisAccessedFlagsMask unwritten = status;
	for (int n = 0; n < max_instructions && offset < function_size; ++n) {
		ZydisDecodedInstruction instruction;
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, nullptr, function + offset,
								function_size - offset, &instruction)) ||
		    !instruction.cpu_flags)
			return false;
		const ZydisAccessedFlags &flags = *instruction.cpu_flags;
		if (flags.tested & unwritten)
			return false;
		unwritten &= ~(flags.modified | flags.set_0 | flags.set_1 | flags.undefined);
		if (!unwritten)
			return true;
		if (instruction.meta.branch_type != ZYDIS_BRANCH_TYPE_NONE ||
		    !falls_through(function + offset, instruction.length))
			return false;
		offset += instruction.length;
	}
	return false;
}

unsigned instruction_length(const uint8_t *bytes, size_t available)
{
	// Most instructions' lengths need no Zydis (plain_instructions.hpp).
	if (const unsigned plain = plain_instruction_length(bytes, available))
		return plain;
	ZydisDecodedInstruction instruction;
	return decode_instruction(bytes, available, &instruction) ? instruction.length : 0;
}

bool falls_through(const uint8_t *insn, unsigned length)
{
	// The hypervisor emulates the instruction after an emulate prefix.
	if (length > emulate_prefix_length && has_emulate_prefix(insn, length))
		return falls_through(insn + emulate_prefix_length, length - emulate_prefix_length);
	unsigned at = 0;
	while (at < length && is_legacy_prefix(insn[at]))
		++at;
	if (at < length && (insn[at] & 0xf0) == 0x40)
		++at;
	if (at >= length)
		return true;
	const uint8_t opcode = insn[at];
	switch (opcode) {
	case 0xc3: // ret
	case 0xc2: // ret imm16
	case 0xe9: // jmp rel32
	case 0xeb: // jmp rel8
	case 0xe8: // call rel32
	case 0xcc: // int3
		return false;
	case 0x0f:
		return !(at + 1 < length && insn[at + 1] == 0x0b); // ud2
	case 0xff: {						   // jmp/call through a register or memory: /2 to /5
		if (at + 1 >= length)
			return true;
		const unsigned reg = (insn[at + 1] >> 3) & 7;
		return reg < 2 || reg > 5;
	}
	default:
		return true;
	}
}

Boundary check_instruction_boundary(const uint8_t *function, size_t function_size, size_t offset)
{
	if (offset >= function_size)
		return Boundary::past_end;
	size_t position = 0;
	size_t previous = 0;
	unsigned previous_length = 0;
	while (position < offset) {
		const unsigned length = instruction_length(function + position, function_size - position);
		if (length == 0)
			return Boundary::undecodable;
		if (function[position] == 0xcc && previous_length &&
		    falls_through(function + previous, previous_length))
			return Boundary::foreign_breakpoint;
		previous = position;
		previous_length = length;
		position += length;
	}
	return position == offset ? Boundary::instruction_start : Boundary::inside_instruction;
}

} // namespace okp::x86
