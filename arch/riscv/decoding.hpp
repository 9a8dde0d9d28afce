// SPDX-License-Identifier: GPL-2.0
// What riscv's two decoders share (instruction_decoder.cpp's 32-bit one and
// compressed_decoder.cpp's RVC one): taking an encoding's fields apart,
// the Builder that fills an Instruction with its registers, the illegal
// instruction, and the RVC decoder's entry for decode_instruction. Only
// the decoders include it.
#pragma once

#include "riscv/instruction_decoder.hpp"

namespace okp::riscv::decoding {

constexpr int64_t sign_extend(uint64_t value, unsigned bits)
{
	const uint64_t sign = uint64_t(1) << (bits - 1);
	value &= (sign << 1) - 1;
	return int64_t(value ^ sign) - int64_t(sign);
}

constexpr uint32_t bits(uint32_t value, unsigned high, unsigned low)
{
	return (value >> low) & ((uint32_t(1) << (high - low + 1)) - 1);
}

struct Builder {
	Instruction insn;

	Builder(uint32_t raw, uint8_t length)
	{
		insn.raw = raw;
		insn.length = length;
	}
	Builder &is(Operation operation, InstructionClass kind)
	{
		insn.operation = operation;
		insn.kind = kind;
		return *this;
	}
	Builder &rd(unsigned n)
	{
		insn.rd = uint8_t(n);
		insn.writes |= register_bit(n);
		return *this;
	}
	Builder &rs1(unsigned n)
	{
		insn.rs1 = uint8_t(n);
		insn.reads |= register_bit(n);
		return *this;
	}
	Builder &rs2(unsigned n)
	{
		insn.rs2 = uint8_t(n);
		insn.reads |= register_bit(n);
		return *this;
	}
	Builder &immediate(int64_t value)
	{
		insn.immediate = value;
		return *this;
	}
	Instruction done() const { return insn; }
};

inline Instruction illegal(uint32_t raw)
{
	Instruction insn;
	insn.raw = raw;
	return insn;
}

// A 16-bit (RVC) encoding c, whose low two bits are not 11.
Instruction decode_compressed(uint32_t c);

} // namespace okp::riscv::decoding
