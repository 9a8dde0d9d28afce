// SPDX-License-Identifier: GPL-2.0
// The riscv64 decoder on hand-assembled encodings (riscv64-linux-gnu-as
// -march=rv64gc, objdump -M no-aliases): every class, the RVC register
// fields and immediates, and the cases 6.1.0's kprobes decoder got wrong.
#include "riscv/instruction_decoder.hpp"

#include "riscv_code.hpp"

#include <gtest/gtest.h>

namespace {

using namespace okp::riscv;

Instruction decode32(uint32_t value)
{
	const uint8_t bytes[4] = {uint8_t(value), uint8_t(value >> 8), uint8_t(value >> 16), uint8_t(value >> 24)};
	return decode_instruction(bytes, 4);
}

Instruction decode16(uint16_t value)
{
	const uint8_t bytes[2] = {uint8_t(value), uint8_t(value >> 8)};
	return decode_instruction(bytes, 2);
}

RegisterSet regs(std::initializer_list<unsigned> numbers)
{
	RegisterSet set = 0;
	for (unsigned n : numbers)
		set |= register_bit(n);
	return set;
}

constexpr unsigned ra = 1, sp = 2, t0 = 5, t1 = 6, s0 = 8, s1 = 9, a0 = 10, a1 = 11, a2 = 12, a3 = 13, a4 = 14, a5 = 15,
		   a6 = 16, a7 = 17;

struct Case {
	uint32_t encoding;
	bool compressed;
	Operation operation;
	InstructionClass kind;
	RegisterSet reads, writes;
	int64_t immediate;
};

TEST(RiscvDecoder, EveryClassWithRegistersAndImmediates)
{
	using C = InstructionClass;
	using O = Operation;
	const Case cases[] = {
		{0xffb58513, false, O::addi, C::plain, regs({a1}), regs({a0}), -5},
		{0x123457b7, false, O::lui, C::plain, 0, regs({a5}), 0x12345000},
		{0x00001317, false, O::auipc, C::pc_relative, 0, regs({t1}), 0x1000},
		{0x001000ef, false, O::jal, C::direct_jump, 0, regs({ra}), 0x800},
		{0xff1ff06f, false, O::jal, C::direct_jump, 0, 0, -16},
		{0x00008067, false, O::jalr, C::indirect_jump, regs({ra}), 0, 0},
		{0x008780e7, false, O::jalr, C::indirect_jump, regs({a5}), regs({ra}), 8},
		{0x00b50863, false, O::beq, C::conditional_branch, regs({a0, a1}), 0, 16},
		{0xfed67ce3, false, O::bgeu, C::conditional_branch, regs({a2, a3}), 0, -8},
		{0x01013503, false, O::ld, C::load, regs({sp}), regs({a0}), 16},
		{0xffc4a283, false, O::lw, C::load, regs({s1}), regs({t0}), -4},
		{0x00113423, false, O::sd, C::store, regs({sp, ra}), 0, 8},
		{0x00b501a3, false, O::sb, C::store, regs({a0, a1}), 0, 3},
		{0x1405a52f, false, O::lr, C::amo, regs({a1}), regs({a0}), 0},
		{0x1ad7362f, false, O::sc, C::amo, regs({a3, a4}), regs({a2}), 0},
		{0x0108b7af, false, O::amoadd, C::amo, regs({a6, a7}), regs({a5}), 0},
		{0x0330000f, false, O::fence, C::plain, 0, 0, 0},
		{0x0000100f, false, O::fence_i, C::fence_i, 0, 0, 0},
		{0x00100073, false, O::ebreak, C::system, 0, 0, 0},
		{0x10200073, false, O::sret, C::system, 0, 0, 0},
		{0x10500073, false, O::wfi, C::system, 0, 0, 0},
		{0x12b50073, false, O::sfence_vma, C::system, regs({a0, a1}), 0, 0},
		{0x16b50073, false, O::sfence_vma, C::system, regs({a0, a1}), 0, 0}, // sinval.vma (Svinval)
		{0x18000073, false, O::sfence_vma, C::system, 0, 0, 0},		     // sfence.w.inval
		{0x1005a573, false, O::csrrs, C::system, regs({a1}), regs({a0}), 0},
		{0x10017073, false, O::csrrci, C::system, 0, 0, 0},
		{0x02c58533, false, O::mul, C::plain, regs({a1, a2}), regs({a0}), 0},
		{0x02f756bb, false, O::divuw, C::plain, regs({a4, a5}), regs({a3}), 0},
		{0x00853507, false, O::fld, C::load, regs({a0}), 0, 8},
		{0x00b13827, false, O::fsd, C::store, regs({sp}), 0, 16},
		{0x02c5f553, false, O::fp_compute, C::plain, 0, 0, 0},
		{0xc2257553, false, O::fp_to_integer, C::plain, 0, regs({a0}), 0},
		{0xf2058553, false, O::integer_to_fp, C::plain, regs({a1}), 0, 0},
		{0x6ac5f543, false, O::fp_fused, C::plain, 0, 0, 0},
		{0x0015051b, false, O::addiw, C::plain, regs({a0}), regs({a0}), 1},
		{0x4036559b, false, O::sraiw, C::plain, regs({a2}), regs({a1}), 3},
		{0x43f75693, false, O::srai, C::plain, regs({a4}), regs({a3}), 63},
		// RVC: rs1'/rs2'/rd' are x8..x15.
		{0x0800, true, O::c_addi4spn, C::plain, regs({sp}), regs({s0}), 16},
		{0x41c8, true, O::c_lw, C::load, regs({a1}), regs({a0}), 4},
		{0x6690, true, O::c_ld, C::load, regs({a3}), regs({a2}), 8},
		{0xeb98, true, O::c_sd, C::store, regs({a5, a4}), 0, 16},
		{0x2488, true, O::c_fld, C::load, regs({s1}), 0, 8},
		{0x0001, true, O::c_nop, C::plain, 0, 0, 0},
		{0x157d, true, O::c_addi, C::plain, regs({a0}), regs({a0}), -1},
		{0x2585, true, O::c_addiw, C::plain, regs({a1}), regs({a1}), 1},
		{0x4615, true, O::c_li, C::plain, 0, regs({a2}), 5},
		{0x7139, true, O::c_addi16sp, C::plain, regs({sp}), regs({sp}), -64},
		{0x6785, true, O::c_lui, C::plain, 0, regs({a5}), 0x1000},
		{0x800d, true, O::c_srli, C::plain, regs({s0}), regs({s0}), 3},
		{0x94fd, true, O::c_srai, C::plain, regs({s1}), regs({s1}), 63},
		{0x893d, true, O::c_andi, C::plain, regs({a0}), regs({a0}), 15},
		{0x8d0d, true, O::c_sub, C::plain, regs({a0, a1}), regs({a0}), 0},
		{0x9f3d, true, O::c_addw, C::plain, regs({a4, a5}), regs({a4}), 0},
		{0xa801, true, O::c_j, C::direct_jump, 0, 0, 16},
		{0xdd65, true, O::c_beqz, C::conditional_branch, regs({a0}), 0, -8},
		{0xec99, true, O::c_bnez, C::conditional_branch, regs({s1}), 0, 30},
		{0x050a, true, O::c_slli, C::plain, regs({a0}), regs({a0}), 2},
		{0x4532, true, O::c_lwsp, C::load, regs({sp}), regs({a0}), 12},
		{0x60a2, true, O::c_ldsp, C::load, regs({sp}), regs({ra}), 8},
		{0xc22a, true, O::c_swsp, C::store, regs({sp, a0}), 0, 4},
		{0xe022, true, O::c_sdsp, C::store, regs({sp, s0}), 0, 0},
		{0x8082, true, O::c_jr, C::indirect_jump, regs({ra}), 0, 0},
		{0x8782, true, O::c_jr, C::indirect_jump, regs({a5}), 0, 0},
		{0x9782, true, O::c_jalr, C::indirect_jump, regs({a5}), regs({ra}), 0},
		{0x9002, true, O::c_ebreak, C::system, 0, 0, 0},
	};
	for (const Case &expected : cases) {
		const Instruction insn =
			expected.compressed ? decode16(uint16_t(expected.encoding)) : decode32(expected.encoding);
		SCOPED_TRACE(testing::Message()
			     << std::hex << expected.encoding << " " << operation_name(expected.operation));
		EXPECT_EQ(insn.length, expected.compressed ? 2 : 4);
		EXPECT_EQ(insn.operation, expected.operation) << operation_name(insn.operation);
		EXPECT_EQ(insn.kind, expected.kind) << instruction_class_name(insn.kind);
		EXPECT_EQ(insn.reads, expected.reads);
		EXPECT_EQ(insn.writes, expected.writes);
		EXPECT_EQ(insn.immediate, expected.immediate);
	}
}

TEST(RiscvDecoder, EcallIsAnSbiCall)
{
	const Instruction ecall = decode32(0x00000073);
	EXPECT_EQ(ecall.operation, Operation::ecall);
	EXPECT_EQ(ecall.kind, InstructionClass::system);
	EXPECT_EQ(ecall.reads, argument_registers);
	EXPECT_EQ(ecall.writes, regs({a0, a1}));
}

// 6.1.0's kprobes matched c.jr and c.jalr with masks that ignored rs2, so
// c.mv and c.add were taken for jumps; the fixed masks check every field.
TEST(RiscvDecoder, CompressedJumpRegisterFieldsAreCheckedWhole)
{
	const Instruction mv = decode16(0x853e); // c.mv a0, a5: funct4 1000, rs2 != 0
	EXPECT_EQ(mv.operation, Operation::c_mv);
	EXPECT_EQ(mv.kind, InstructionClass::plain);
	EXPECT_EQ(mv.reads, regs({a5}));
	EXPECT_EQ(mv.writes, regs({a0}));

	const Instruction add = decode16(0x952e); // c.add a0, a1: funct4 1001, rs2 != 0
	EXPECT_EQ(add.operation, Operation::c_add);
	EXPECT_EQ(add.kind, InstructionClass::plain);
	EXPECT_EQ(add.reads, regs({a0, a1}));

	EXPECT_EQ(decode16(0x8282).operation, Operation::c_jr); // c.jr t0
	EXPECT_EQ(decode16(0x8282).reads, regs({t0}));
	EXPECT_EQ(decode16(0x8002).kind, InstructionClass::illegal); // c.jr x0: reserved
	EXPECT_EQ(decode16(0x9002).operation, Operation::c_ebreak);  // funct4 1001, rs1 = rs2 = 0
	EXPECT_EQ(decode16(0x9082).operation, Operation::c_jalr);    // c.jalr ra
	EXPECT_EQ(decode16(0x9082).reads, regs({ra}));		     // reads ra before linking
	EXPECT_EQ(decode16(0x9082).writes, regs({ra}));
	EXPECT_TRUE(is_call(decode16(0x9082)));
	EXPECT_FALSE(is_call(decode16(0x8782)));
	EXPECT_TRUE(is_return(decode16(0x8082)));
	EXPECT_FALSE(is_return(decode16(0x8782)));
	// c.mv with rd = x0 is a hint: it writes nothing.
	EXPECT_EQ(decode16(0x803e).operation, Operation::c_mv);
	EXPECT_EQ(decode16(0x803e).writes, 0u);
}

// jalr a0, 0(a0): the target comes from a0 before a0 is linked (6.1.0's
// simulation wrote rd first and jumped to the return address).
TEST(RiscvDecoder, JalrWithRdEqualToRs1ReadsBeforeItWrites)
{
	const Instruction insn = decode32(0x00050567);
	EXPECT_EQ(insn.operation, Operation::jalr);
	EXPECT_EQ(insn.rd, a0);
	EXPECT_EQ(insn.rs1, a0);
	EXPECT_EQ(insn.reads, regs({a0}));
	EXPECT_EQ(insn.writes, regs({a0}));
	EXPECT_TRUE(is_call(insn));
}

TEST(RiscvDecoder, AddiSixteenSpAndLuiShareAnOpcode)
{
	// funct3 011 of quadrant 1: rd = sp is c.addi16sp, others c.lui.
	EXPECT_EQ(decode16(0x7139).operation, Operation::c_addi16sp);
	EXPECT_EQ(decode16(0x6785).operation, Operation::c_lui);
	EXPECT_EQ(decode16(0x6105).operation, Operation::c_addi16sp); // c.addi16sp sp, 32
	EXPECT_EQ(decode16(0x6105).immediate, 32);
	EXPECT_EQ(decode16(0x7179).immediate, -48);	// c.addi16sp sp, -48
	EXPECT_EQ(decode16(0x7fd5).immediate, -0xb000); // c.lui t6, 0xffff5: sign-extended
	// Zero immediates are reserved for both.
	EXPECT_EQ(decode16(0x6101).kind, InstructionClass::illegal);
	EXPECT_EQ(decode16(0x6781).kind, InstructionClass::illegal);
}

TEST(RiscvDecoder, ReservedAndHintEncodings)
{
	EXPECT_EQ(decode16(0x0000).kind, InstructionClass::illegal);	      // c.addi4spn with 0: the defined illegal
	EXPECT_EQ(decode16(0x4002).kind, InstructionClass::illegal);	      // c.lwsp x0
	EXPECT_EQ(decode16(0x6002).kind, InstructionClass::illegal);	      // c.ldsp x0
	EXPECT_EQ(decode16(0x2001).kind, InstructionClass::illegal);	      // c.addiw x0 (c.jal is rv32 only)
	EXPECT_EQ(decode16(0x9c41).kind, InstructionClass::illegal);	      // quadrant 1, 100 111 10: reserved
	EXPECT_EQ(decode16(0x8000 | 0x0000).kind, InstructionClass::illegal); // quadrant 0, funct3 100
	// Hints decode (and write nothing).
	EXPECT_EQ(decode16(0x4001).operation, Operation::c_li); // c.li x0, 0
	EXPECT_EQ(decode16(0x4001).writes, 0u);
	EXPECT_EQ(decode16(0x0002).operation, Operation::c_slli); // c.slli x0, 0 (and c.slli64)
	EXPECT_EQ(decode16(0x0005).operation, Operation::c_nop);  // c.nop 1
	// Cut short, or longer than 32 bits.
	const uint8_t half[] = {0x13, 0x05};
	EXPECT_EQ(decode_instruction(half, 2).length, 0);
	const uint8_t long_encoding[] = {0x1f, 0x00, 0x00, 0x00};
	EXPECT_EQ(decode_instruction(long_encoding, 4).length, 0);
	EXPECT_EQ(decode32(0x00001067).kind, InstructionClass::illegal); // jalr funct3 != 0
	EXPECT_EQ(decode32(0x00002063).kind, InstructionClass::illegal); // branch funct3 010
}

// What Debian's stock riscv64 kernel adds to RV64GC (its alternatives and
// kernel-mode vector code): found by the census of its Image, which did
// not decode 622 functions to their end before. Encodings from
// riscv64-linux-gnu-as -march=rv64gcv_zba_zbb_zbc_zbs_zicbom_zicboz_zawrs.
TEST(RiscvDecoder, TheExtensionsOfDebiansKernel)
{
	using C = InstructionClass;
	using O = Operation;
	const Case cases[] = {
		{0x60071713, false, O::bitmanip, C::plain, regs({a4}), regs({a4}), 0},	   // clz a4,a4
		{0x60269613, false, O::bitmanip, C::plain, regs({a3}), regs({a2}), 0},	   // cpop a2,a3
		{0x60559513, false, O::bitmanip, C::plain, regs({a1}), regs({a0}), 0},	   // sext.h a0,a1
		{0x6007979b, false, O::bitmanip, C::plain, regs({a5}), regs({a5}), 0},	   // clzw a5,a5
		{0x6215d513, false, O::bitmanip, C::plain, regs({a1}), regs({a0}), 0},	   // rori a0,a1,33
		{0x6035d51b, false, O::bitmanip, C::plain, regs({a1}), regs({a0}), 0},	   // roriw a0,a1,3
		{0x28775e13, false, O::bitmanip, C::plain, regs({a4}), regs({28}), 0},	   // orc.b t3,a4
		{0x6b85d513, false, O::bitmanip, C::plain, regs({a1}), regs({a0}), 0},	   // rev8 a0,a1
		{0x40c5f533, false, O::bitmanip, C::plain, regs({a1, a2}), regs({a0}), 0}, // andn
		{0x0ac5c533, false, O::bitmanip, C::plain, regs({a1, a2}), regs({a0}), 0}, // min
		{0x60c5d533, false, O::bitmanip, C::plain, regs({a1, a2}), regs({a0}), 0}, // ror
		{0x60c5953b, false, O::bitmanip, C::plain, regs({a1, a2}), regs({a0}), 0}, // rolw
		{0x0805c53b, false, O::bitmanip, C::plain, regs({a1}), regs({a0}), 0},	   // zext.h a0,a1
		{0x20c5e533, false, O::bitmanip, C::plain, regs({a1, a2}), regs({a0}), 0}, // sh3add
		{0x08c5853b, false, O::bitmanip, C::plain, regs({a1, a2}), regs({a0}), 0}, // add.uw
		{0x0855951b, false, O::bitmanip, C::plain, regs({a1}), regs({a0}), 0},	   // slli.uw a0,a1,5
		{0x0aa796b3, false, O::bitmanip, C::plain, regs({a5, a0}), regs({a3}), 0}, // clmul
		{0x48c5d533, false, O::bitmanip, C::plain, regs({a1, a2}), regs({a0}), 0}, // bext
		{0x2bf59513, false, O::bitmanip, C::plain, regs({a1}), regs({a0}), 0},	   // bseti a0,a1,63
		// Zbkb and Zbkx, as 7.x's alternatives hold them (pack after fput_close)
		{0x08f54533, false, O::bitmanip, C::plain, regs({a0, a5}), regs({a0}), 0}, // pack a0,a0,a5
		{0x08c5f533, false, O::bitmanip, C::plain, regs({a1, a2}), regs({a0}), 0}, // packh
		{0x08c5c53b, false, O::bitmanip, C::plain, regs({a1, a2}), regs({a0}), 0}, // packw
		{0x68765613, false, O::bitmanip, C::plain, regs({a2}), regs({a2}), 0},	   // brev8 a2,a2
		{0x28c5c533, false, O::bitmanip, C::plain, regs({a1, a2}), regs({a0}), 0}, // xperm8
		{0x0ec5d533, false, O::czero, C::plain, regs({a1, a2}), regs({a0}), 0},	   // czero.eqz a0,a1,a2
		{0x0025200f, false, O::cbo, C::store, regs({a0}), 0, 0},		   // cbo.flush (a0)
		{0x0045200f, false, O::cbo, C::store, regs({a0}), 0, 0},		   // cbo.zero (a0)
		{0x00d00073, false, O::wrs, C::system, 0, 0, 0},			   // wrs.nto
		{0x0c0572d7, false, O::vsetvl, C::plain, regs({a0}), regs({t0}), 0},	   // vsetvli t0,a0,...
		{0xcd12f2d7, false, O::vsetvl, C::plain, 0, regs({t0}), 0},		   // vsetivli t0,5,...
		{0x80b572d7, false, O::vsetvl, C::plain, regs({a0, a1}), regs({t0}), 0},   // vsetvl t0,a0,a1
		{0x02050087, false, O::vector_load, C::load, regs({a0}), 0, 0},		   // vle8.v v1,(a0)
		{0x0ac56107, false, O::vector_load, C::load, regs({a0, a2}), 0, 0},	   // vlse32.v v2,(a0),a2
		{0x020580a7, false, O::vector_store, C::store, regs({a1}), 0, 0},	   // vse8.v v1,(a1)
		{0x0226c0d7, false, O::vector, C::plain, regs({a3, 2}), 0, 0},		   // vadd.vx v1,v2,a3
		// VWXUNARY0 writes a scalar (tools/decoder-diff found it left out)
		{0x42282557, false, O::vector, C::plain, regs({2, 16}), regs({a0}), 0}, // vcpop.m a0,v2
		{0x42202557, false, O::vector, C::plain, regs({2}), regs({a0}), 0},	// vmv.x.s a0,v2
		{0x4228a557, false, O::vector, C::plain, regs({2, 17}), regs({a0}), 0}, // vfirst.m a0,v2
	};
	for (const Case &c : cases) {
		const Instruction insn = decode32(c.encoding);
		EXPECT_EQ(insn.length, 4) << std::hex << c.encoding;
		EXPECT_EQ(insn.operation, c.operation) << std::hex << c.encoding;
		EXPECT_EQ(insn.kind, c.kind) << std::hex << c.encoding;
		EXPECT_EQ(insn.reads, c.reads) << std::hex << c.encoding;
		EXPECT_EQ(insn.writes, c.writes) << std::hex << c.encoding;
	}
	// Neighbouring encodings no extension defines stay illegal.
	EXPECT_EQ(decode32(0x60359513).kind, InstructionClass::illegal); // OP-IMM funct12 0x603
	EXPECT_EQ(decode32(0x0ec5c533).kind, InstructionClass::illegal); // funct7 0x07, funct3 4
	EXPECT_EQ(decode32(0x0035200f).kind, InstructionClass::illegal); // cbo 3
	EXPECT_EQ(decode32(0x00e00073).kind, InstructionClass::illegal); // SYSTEM imm 0xe
	EXPECT_EQ(decode32(0x0000500f).kind, InstructionClass::illegal); // MISC-MEM funct3 5
}

TEST(RiscvDecoder, LinksAndFallThrough)
{
	EXPECT_TRUE(falls_through(decode32(0x001000ef)));  // jal ra: the callee returns
	EXPECT_FALSE(falls_through(decode32(0xff1ff06f))); // j
	EXPECT_FALSE(falls_through(decode16(0x8082)));	   // ret
	EXPECT_TRUE(falls_through(decode16(0xdd65)));	   // c.beqz
	EXPECT_FALSE(falls_through(decode32(0x10200073))); // sret
	EXPECT_TRUE(falls_through(decode32(0x00000073)));  // ecall returns
}

TEST(RiscvDecoder, InstructionBoundariesOfMixedLengths)
{
	// addi (4), c.li (2), c.jr ra (2), jal (4)
	const std::vector<uint8_t> code =
		okp::riscv::test::assemble({okp::riscv::test::i(0xffb58513), okp::riscv::test::c(0x4615),
					    okp::riscv::test::c(0x8082), okp::riscv::test::i(0x001000ef)});
	EXPECT_EQ(check_instruction_boundary(code.data(), code.size(), 0), Boundary::instruction_start);
	EXPECT_EQ(check_instruction_boundary(code.data(), code.size(), 2), Boundary::inside_instruction);
	EXPECT_EQ(check_instruction_boundary(code.data(), code.size(), 4), Boundary::instruction_start);
	EXPECT_EQ(check_instruction_boundary(code.data(), code.size(), 6), Boundary::instruction_start);
	EXPECT_EQ(check_instruction_boundary(code.data(), code.size(), 8), Boundary::instruction_start);
	EXPECT_EQ(check_instruction_boundary(code.data(), code.size(), 10), Boundary::inside_instruction);
	EXPECT_EQ(check_instruction_boundary(code.data(), code.size(), 12), Boundary::past_end);
	const uint8_t bad[] = {0x00, 0x00, 0x01, 0x00};
	EXPECT_EQ(check_instruction_boundary(bad, sizeof(bad), 2), Boundary::undecodable);
}

TEST(RiscvDecoder, EveryOperationHasAName)
{
	for (size_t n = 0; n < size_t(Operation::count); ++n)
		EXPECT_STRNE(operation_name(Operation(n)), "?");
	EXPECT_STREQ(operation_name(Operation::c_jalr), "c.jalr");
	EXPECT_STREQ(operation_name(Operation::fence_i), "fence.i");
}

} // namespace
