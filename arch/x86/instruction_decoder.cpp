// SPDX-License-Identifier: GPL-2.0
#include "x86/instruction_decoder.hpp"

#include <Zydis/Decoder.h>

namespace okp::x86 {

unsigned instruction_length(const uint8_t *bytes, size_t available)
{
	ZydisDecoder decoder;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return 0;
	// Operands are not decoded (no context): the instruction record alone is
	// 328 bytes, and this may run on the small stacks of atomic contexts.
	ZydisDecodedInstruction instruction;
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, nullptr, bytes, available, &instruction)))
		return 0;
	return instruction.length;
}

Boundary check_instruction_boundary(const uint8_t *function, size_t function_size, size_t offset)
{
	if (offset >= function_size)
		return Boundary::past_end;
	size_t position = 0;
	while (position < offset) {
		const unsigned length = instruction_length(function + position, function_size - position);
		if (length == 0)
			return Boundary::undecodable;
		position += length;
	}
	return position == offset ? Boundary::instruction_start : Boundary::inside_instruction;
}

} // namespace okp::x86
