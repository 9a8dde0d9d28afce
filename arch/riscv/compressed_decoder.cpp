// SPDX-License-Identifier: GPL-2.0
// The RVC decoder: every 16-bit encoding of RV64C (the quadrants 00, 01
// and 10) as the Instruction of the 32-bit form it expands to (its
// registers, class and target offset), with the RVC HINTs read as the
// architecture defines them and the reserved encodings illegal.
#include "riscv/decoding.hpp"

namespace okp::riscv::decoding {

namespace {

// rs1', rs2', rd' of the RVC CIW/CL/CS/CA/CB formats: x8..x15.
constexpr uint8_t compressed_register(uint32_t field)
{
	return uint8_t(8 + (field & 7));
}

} // namespace

Instruction decode_compressed(uint32_t c)
{
	Builder b(c, 2);
	const uint32_t funct3 = bits(c, 15, 13);
	const uint8_t rd_full = uint8_t(bits(c, 11, 7)), rs2_full = uint8_t(bits(c, 6, 2));
	const uint8_t rd_short = compressed_register(bits(c, 9, 7)), rs2_short = compressed_register(bits(c, 4, 2));
	// CI immediates: imm[5] at bit 12, imm[4:0] at 6:2.
	const int64_t ci_immediate = sign_extend((bits(c, 12, 12) << 5) | bits(c, 6, 2), 6);
	const uint32_t shift = (bits(c, 12, 12) << 5) | bits(c, 6, 2);
	// CL/CS offsets of 8-byte accesses (c.ld, c.sd, c.fld, c.fsd).
	const uint32_t double_offset = (bits(c, 12, 10) << 3) | (bits(c, 6, 5) << 6);
	const uint32_t word_offset = (bits(c, 12, 10) << 3) | (bits(c, 6, 6) << 2) | (bits(c, 5, 5) << 6);

	switch (c & 3) {
	case 0:
		switch (funct3) {
		case 0: { // c.addi4spn rd', sp, nzuimm; all-zero is the defined illegal instruction
			const uint32_t offset = (bits(c, 12, 11) << 4) | (bits(c, 10, 7) << 6) | (bits(c, 6, 6) << 2) |
						(bits(c, 5, 5) << 3);
			if (offset == 0)
				return illegal(c);
			return b.is(Operation::c_addi4spn, InstructionClass::plain)
				.rd(rs2_short)
				.rs1(reg::sp)
				.immediate(offset)
				.done();
		}
		case 1:
			return b.is(Operation::c_fld, InstructionClass::load)
				.rs1(rd_short)
				.immediate(double_offset)
				.done();
		case 2:
			return b.is(Operation::c_lw, InstructionClass::load)
				.rd(rs2_short)
				.rs1(rd_short)
				.immediate(word_offset)
				.done();
		case 3:
			return b.is(Operation::c_ld, InstructionClass::load)
				.rd(rs2_short)
				.rs1(rd_short)
				.immediate(double_offset)
				.done();
		case 5:
			return b.is(Operation::c_fsd, InstructionClass::store)
				.rs1(rd_short)
				.immediate(double_offset)
				.done();
		case 6:
			return b.is(Operation::c_sw, InstructionClass::store)
				.rs1(rd_short)
				.rs2(rs2_short)
				.immediate(word_offset)
				.done();
		case 7:
			return b.is(Operation::c_sd, InstructionClass::store)
				.rs1(rd_short)
				.rs2(rs2_short)
				.immediate(double_offset)
				.done();
		default:
			return illegal(c); // 100: reserved
		}
	case 1:
		switch (funct3) {
		case 0: // c.addi; rd = x0 is c.nop (nonzero imm: a hint)
			if (rd_full == 0)
				return b.is(Operation::c_nop, InstructionClass::plain).immediate(ci_immediate).done();
			return b.is(Operation::c_addi, InstructionClass::plain)
				.rd(rd_full)
				.rs1(rd_full)
				.immediate(ci_immediate)
				.done();
		case 1: // c.addiw on RV64 (c.jal is RV32 only); rd = x0 reserved
			if (rd_full == 0)
				return illegal(c);
			return b.is(Operation::c_addiw, InstructionClass::plain)
				.rd(rd_full)
				.rs1(rd_full)
				.immediate(ci_immediate)
				.done();
		case 2: // c.li (rd = x0: a hint)
			return b.is(Operation::c_li, InstructionClass::plain)
				.rd(rd_full)
				.immediate(ci_immediate)
				.done();
		case 3:
			if (rd_full == reg::sp) { // c.addi16sp: nzimm[9|4|6|8:7|5]
				const int64_t offset = sign_extend((bits(c, 12, 12) << 9) | (bits(c, 6, 6) << 4) |
									   (bits(c, 5, 5) << 6) | (bits(c, 4, 3) << 7) |
									   (bits(c, 2, 2) << 5),
								   10);
				if (offset == 0)
					return illegal(c);
				return b.is(Operation::c_addi16sp, InstructionClass::plain)
					.rd(reg::sp)
					.rs1(reg::sp)
					.immediate(offset)
					.done();
			}
			// c.lui: nzimm[17|16:12]; zero is reserved, rd = x0 a hint
			if (ci_immediate == 0)
				return illegal(c);
			return b.is(Operation::c_lui, InstructionClass::plain)
				.rd(rd_full)
				.immediate(ci_immediate * 4096)
				.done();
		case 4:
			switch (bits(c, 11, 10)) {
			case 0:
				return b.is(Operation::c_srli, InstructionClass::plain)
					.rd(rd_short)
					.rs1(rd_short)
					.immediate(shift)
					.done();
			case 1:
				return b.is(Operation::c_srai, InstructionClass::plain)
					.rd(rd_short)
					.rs1(rd_short)
					.immediate(shift)
					.done();
			case 2:
				return b.is(Operation::c_andi, InstructionClass::plain)
					.rd(rd_short)
					.rs1(rd_short)
					.immediate(ci_immediate)
					.done();
			default: {
				static constexpr Operation word_ops[] = {Operation::c_subw, Operation::c_addw,
									 Operation::illegal, Operation::illegal};
				static constexpr Operation ops[] = {Operation::c_sub, Operation::c_xor, Operation::c_or,
								    Operation::c_and};
				const Operation op = bits(c, 12, 12) ? word_ops[bits(c, 6, 5)] : ops[bits(c, 6, 5)];
				if (op == Operation::illegal)
					return illegal(c);
				return b.is(op, InstructionClass::plain)
					.rd(rd_short)
					.rs1(rd_short)
					.rs2(rs2_short)
					.done();
			}
			}
		case 5: { // c.j: offset[11|4|9:8|10|6|7|3:1|5]
			const int64_t offset =
				sign_extend((bits(c, 12, 12) << 11) | (bits(c, 11, 11) << 4) | (bits(c, 10, 9) << 8) |
						    (bits(c, 8, 8) << 10) | (bits(c, 7, 7) << 6) |
						    (bits(c, 6, 6) << 7) | (bits(c, 5, 3) << 1) | (bits(c, 2, 2) << 5),
					    12);
			return b.is(Operation::c_j, InstructionClass::direct_jump).immediate(offset).done();
		}
		default: { // c.beqz, c.bnez: offset[8|4:3] rs1' offset[7:6|2:1|5]
			const int64_t offset =
				sign_extend((bits(c, 12, 12) << 8) | (bits(c, 11, 10) << 3) | (bits(c, 6, 5) << 6) |
						    (bits(c, 4, 3) << 1) | (bits(c, 2, 2) << 5),
					    9);
			return b.is(funct3 == 6 ? Operation::c_beqz : Operation::c_bnez,
				    InstructionClass::conditional_branch)
				.rs1(rd_short)
				.immediate(offset)
				.done();
		}
		}
	default: // quadrant 2
		switch (funct3) {
		case 0: // c.slli (rd = x0 or shamt = 0: hints)
			return b.is(Operation::c_slli, InstructionClass::plain)
				.rd(rd_full)
				.rs1(rd_full)
				.immediate(shift)
				.done();
		case 1:
			return b.is(Operation::c_fldsp, InstructionClass::load)
				.rs1(reg::sp)
				.immediate((bits(c, 12, 12) << 5) | (bits(c, 6, 5) << 3) | (bits(c, 4, 2) << 6))
				.done();
		case 2: // c.lwsp: rd = x0 reserved
			if (rd_full == 0)
				return illegal(c);
			return b.is(Operation::c_lwsp, InstructionClass::load)
				.rd(rd_full)
				.rs1(reg::sp)
				.immediate((bits(c, 12, 12) << 5) | (bits(c, 6, 4) << 2) | (bits(c, 3, 2) << 6))
				.done();
		case 3: // c.ldsp: rd = x0 reserved
			if (rd_full == 0)
				return illegal(c);
			return b.is(Operation::c_ldsp, InstructionClass::load)
				.rd(rd_full)
				.rs1(reg::sp)
				.immediate((bits(c, 12, 12) << 5) | (bits(c, 6, 5) << 3) | (bits(c, 4, 2) << 6))
				.done();
		case 4:
			// funct4 1000: c.jr (rs2 = 0, rs1 != 0) or c.mv (rs2 != 0);
			// funct4 1001: c.ebreak (rs1 = rs2 = 0), c.jalr (rs2 = 0,
			// rs1 != 0) or c.add (rs2 != 0). 6.1.0's kprobes masks
			// (0xf07f) tested only part of rs2 and took some c.mv and
			// c.add for jumps: every field is checked here.
			if (bits(c, 12, 12) == 0) {
				if (rs2_full != 0)
					return b.is(Operation::c_mv, InstructionClass::plain)
						.rd(rd_full)
						.rs2(rs2_full)
						.done();
				if (rd_full == 0)
					return illegal(c); // c.jr x0 is reserved
				return b.is(Operation::c_jr, InstructionClass::indirect_jump).rs1(rd_full).done();
			}
			if (rs2_full != 0)
				return b.is(Operation::c_add, InstructionClass::plain)
					.rd(rd_full)
					.rs1(rd_full)
					.rs2(rs2_full)
					.done();
			if (rd_full == 0)
				return b.is(Operation::c_ebreak, InstructionClass::system).done();
			// c.jalr: reads rs1 before it writes ra (c.jalr ra is valid)
			return b.is(Operation::c_jalr, InstructionClass::indirect_jump).rs1(rd_full).rd(reg::ra).done();
		case 5:
			return b.is(Operation::c_fsdsp, InstructionClass::store)
				.rs1(reg::sp)
				.immediate((bits(c, 12, 10) << 3) | (bits(c, 9, 7) << 6))
				.done();
		case 6:
			return b.is(Operation::c_swsp, InstructionClass::store)
				.rs1(reg::sp)
				.rs2(rs2_full)
				.immediate((bits(c, 12, 9) << 2) | (bits(c, 8, 7) << 6))
				.done();
		default:
			return b.is(Operation::c_sdsp, InstructionClass::store)
				.rs1(reg::sp)
				.rs2(rs2_full)
				.immediate((bits(c, 12, 10) << 3) | (bits(c, 9, 7) << 6))
				.done();
		}
	}
}

} // namespace okp::riscv::decoding
