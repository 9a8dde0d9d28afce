// SPDX-License-Identifier: GPL-2.0
// The riscv decoder's entry, decode_instruction (by the low two bits: to
// the RVC decoder in compressed_decoder.cpp, or to the 32-bit decoder
// here, for every extension instruction_decoder.hpp lists), and what the
// analyses ask of a decoded instruction: its names, whether it calls,
// returns or falls through, and the generic core's flow_step and
// exit_step.
#include "riscv/instruction_decoder.hpp"
#include "riscv/decoding.hpp"

namespace okp::riscv {

namespace {

constexpr const char *operation_names[] = {
#define OKP_RISCV_OPERATION_NAME(name, text) text,
	OKP_RISCV_OPERATIONS(OKP_RISCV_OPERATION_NAME)
#undef OKP_RISCV_OPERATION_NAME
};
static_assert(sizeof(operation_names) / sizeof(operation_names[0]) == size_t(Operation::count));

} // namespace

// The 32-bit decoder, in the namespace of the parts it shares with the
// RVC one.
namespace decoding {

namespace {

// Zba/Zbb/Zbc/Zbs and the scalar crypto's Zbkb/Zbkx register-register
// forms in OP (0x33) and OP-32 (0x3b), and Zicond's czero: known encodings
// only (funct7, funct3). 7.x's alternatives hold pack (Zbkb).
Operation bitmanip_register_operation(unsigned opcode, unsigned funct7, unsigned funct3)
{
	if (opcode == 0x33) {
		switch (funct7) {
		case 0x05: // clmul, clmulr, clmulh; min, minu, max, maxu
			return funct3 != 0 ? Operation::bitmanip : Operation::illegal;
		case 0x07: // czero.eqz, czero.nez
			return funct3 == 5 || funct3 == 7 ? Operation::czero : Operation::illegal;
		case 0x04: // pack, packh
			return funct3 == 4 || funct3 == 7 ? Operation::bitmanip : Operation::illegal;
		case 0x10: // sh1add, sh2add, sh3add
			return funct3 == 2 || funct3 == 4 || funct3 == 6 ? Operation::bitmanip : Operation::illegal;
		case 0x14: // bset; xperm4, xperm8
			return funct3 == 1 || funct3 == 2 || funct3 == 4 ? Operation::bitmanip : Operation::illegal;
		case 0x34: // binv
			return funct3 == 1 ? Operation::bitmanip : Operation::illegal;
		case 0x20: // xnor, orn, andn
			return funct3 == 4 || funct3 == 6 || funct3 == 7 ? Operation::bitmanip : Operation::illegal;
		case 0x24: // bclr, bext
		case 0x30: // rol, ror
			return funct3 == 1 || funct3 == 5 ? Operation::bitmanip : Operation::illegal;
		default:
			return Operation::illegal;
		}
	}
	switch (funct7) { // OP-32
	case 0x04:	  // add.uw; packw (zext.h when rs2 is zero)
		return funct3 == 0 || funct3 == 4 ? Operation::bitmanip : Operation::illegal;
	case 0x10: // sh1add.uw, sh2add.uw, sh3add.uw
		return funct3 == 2 || funct3 == 4 || funct3 == 6 ? Operation::bitmanip : Operation::illegal;
	case 0x30: // rolw, rorw
		return funct3 == 1 || funct3 == 5 ? Operation::bitmanip : Operation::illegal;
	default:
		return Operation::illegal;
	}
}

// Zbb/Zbs immediate forms in OP-IMM (0x13) and OP-IMM-32 (0x1b) whose
// funct3 is a shift's: funct6 (RV64's 6-bit shift amount) and the whole
// funct12 for the unary ones.
bool is_bitmanip_immediate(unsigned opcode, unsigned funct3, unsigned funct12)
{
	const unsigned funct6 = funct12 >> 6, funct7 = funct12 >> 5;
	if (opcode == 0x13) {
		if (funct3 == 1) // clz, ctz, cpop, sext.b, sext.h; bclri, bseti, binvi
			return (funct12 >= 0x600 && funct12 <= 0x602) || funct12 == 0x604 || funct12 == 0x605 ||
			       funct6 == 0x12 || funct6 == 0x0a || funct6 == 0x1a;
		// funct3 5: rori, bexti, orc.b, rev8, brev8 (Zbkb)
		return funct6 == 0x18 || funct6 == 0x12 || funct12 == 0x287 || funct12 == 0x6b8 || funct12 == 0x687;
	}
	if (funct3 == 1) // clzw, ctzw, cpopw; slli.uw
		return (funct12 >= 0x600 && funct12 <= 0x602) || funct6 == 0x02;
	return funct7 == 0x30; // roriw
}

Instruction decode_standard(uint32_t i)
{
	Builder b(i, 4);
	const unsigned opcode = bits(i, 6, 0), rd = bits(i, 11, 7), funct3 = bits(i, 14, 12), rs1 = bits(i, 19, 15),
		       rs2 = bits(i, 24, 20), funct7 = bits(i, 31, 25);
	const int64_t i_immediate = sign_extend(bits(i, 31, 20), 12);
	const int64_t s_immediate = sign_extend((bits(i, 31, 25) << 5) | bits(i, 11, 7), 12);

	switch (opcode) {
	case 0x03: { // LOAD
		static constexpr Operation ops[] = {Operation::lb,  Operation::lh,  Operation::lw,  Operation::ld,
						    Operation::lbu, Operation::lhu, Operation::lwu, Operation::illegal};
		if (ops[funct3] == Operation::illegal)
			return illegal(i);
		return b.is(ops[funct3], InstructionClass::load).rd(rd).rs1(rs1).immediate(i_immediate).done();
	}
	case 0x07:				// LOAD-FP: flw, fld (the destination is an fp register)
		if (funct3 == 0 || funct3 >= 5) // V: unit-stride, strided (rs2), indexed
			return b.is(Operation::vector_load, InstructionClass::load).rs1(rs1).rs2(rs2).done();
		if (funct3 != 2 && funct3 != 3)
			return illegal(i);
		return b.is(funct3 == 2 ? Operation::flw : Operation::fld, InstructionClass::load)
			.rs1(rs1)
			.immediate(i_immediate)
			.done();
	case 0x0f: // MISC-MEM
		if (funct3 == 0)
			return b.is(Operation::fence, InstructionClass::plain).done();
		if (funct3 == 1)
			return b.is(Operation::fence_i, InstructionClass::fence_i).done();
		// cbo.inval, cbo.clean, cbo.flush, cbo.zero: a block at rs1
		if (funct3 == 2 && rd == 0 && (bits(i, 31, 20) <= 2 || bits(i, 31, 20) == 4))
			return b.is(Operation::cbo, InstructionClass::store).rs1(rs1).done();
		return illegal(i);
	case 0x13: { // OP-IMM
		const unsigned funct6 = bits(i, 31, 26);
		Operation op;
		switch (funct3) {
		case 0:
			op = Operation::addi;
			break;
		case 1:
			op = funct6 == 0					      ? Operation::slli
			     : is_bitmanip_immediate(opcode, funct3, bits(i, 31, 20)) ? Operation::bitmanip
										      : Operation::illegal;
			break;
		case 2:
			op = Operation::slti;
			break;
		case 3:
			op = Operation::sltiu;
			break;
		case 4:
			op = Operation::xori;
			break;
		case 5:
			op = funct6 == 0					      ? Operation::srli
			     : funct6 == 0x10					      ? Operation::srai
			     : is_bitmanip_immediate(opcode, funct3, bits(i, 31, 20)) ? Operation::bitmanip
										      : Operation::illegal;
			break;
		case 6:
			op = Operation::ori;
			break;
		default:
			op = Operation::andi;
			break;
		}
		if (op == Operation::illegal)
			return illegal(i);
		const bool shift = funct3 == 1 || funct3 == 5;
		return b.is(op, InstructionClass::plain)
			.rd(rd)
			.rs1(rs1)
			.immediate(shift ? int64_t(bits(i, 25, 20)) : i_immediate)
			.done();
	}
	case 0x17:
		return b.is(Operation::auipc, InstructionClass::pc_relative)
			.rd(rd)
			.immediate(sign_extend(i & 0xfffff000u, 32))
			.done();
	case 0x1b: { // OP-IMM-32
		Operation op = Operation::illegal;
		if (funct3 == 0)
			op = Operation::addiw;
		else if (funct3 == 1 && funct7 == 0)
			op = Operation::slliw;
		else if (funct3 == 5 && funct7 == 0)
			op = Operation::srliw;
		else if (funct3 == 5 && funct7 == 0x20)
			op = Operation::sraiw;
		else if ((funct3 == 1 || funct3 == 5) && is_bitmanip_immediate(opcode, funct3, bits(i, 31, 20)))
			op = Operation::bitmanip;
		if (op == Operation::illegal)
			return illegal(i);
		return b.is(op, InstructionClass::plain)
			.rd(rd)
			.rs1(rs1)
			.immediate(funct3 == 0 ? i_immediate : int64_t(rs2))
			.done();
	}
	case 0x23: { // STORE
		static constexpr Operation ops[] = {Operation::sb, Operation::sh, Operation::sw, Operation::sd};
		if (funct3 > 3)
			return illegal(i);
		return b.is(ops[funct3], InstructionClass::store).rs1(rs1).rs2(rs2).immediate(s_immediate).done();
	}
	case 0x27:				// STORE-FP: the source is an fp register
		if (funct3 == 0 || funct3 >= 5) // V: unit-stride, strided (rs2), indexed
			return b.is(Operation::vector_store, InstructionClass::store).rs1(rs1).rs2(rs2).done();
		if (funct3 != 2 && funct3 != 3)
			return illegal(i);
		return b.is(funct3 == 2 ? Operation::fsw : Operation::fsd, InstructionClass::store)
			.rs1(rs1)
			.immediate(s_immediate)
			.done();
	case 0x2f: { // AMO
		if (funct3 != 2 && funct3 != 3)
			return illegal(i);
		Operation op;
		switch (bits(i, 31, 27)) {
		case 0x00:
			op = Operation::amoadd;
			break;
		case 0x01:
			op = Operation::amoswap;
			break;
		case 0x02:
			op = rs2 == 0 ? Operation::lr : Operation::illegal;
			break;
		case 0x03:
			op = Operation::sc;
			break;
		case 0x04:
			op = Operation::amoxor;
			break;
		case 0x08:
			op = Operation::amoor;
			break;
		case 0x0c:
			op = Operation::amoand;
			break;
		case 0x10:
			op = Operation::amomin;
			break;
		case 0x14:
			op = Operation::amomax;
			break;
		case 0x18:
			op = Operation::amominu;
			break;
		case 0x1c:
			op = Operation::amomaxu;
			break;
		default:
			op = Operation::illegal;
			break;
		}
		if (op == Operation::illegal)
			return illegal(i);
		b.is(op, InstructionClass::amo).rd(rd).rs1(rs1);
		if (op != Operation::lr)
			b.rs2(rs2);
		return b.done();
	}
	case 0x33: { // OP
		static constexpr Operation base[] = {Operation::add,  Operation::sll, Operation::slt, Operation::sltu,
						     Operation::xor_, Operation::srl, Operation::or_, Operation::and_};
		static constexpr Operation multiply[] = {Operation::mul,   Operation::mulh, Operation::mulhsu,
							 Operation::mulhu, Operation::div,  Operation::divu,
							 Operation::rem,   Operation::remu};
		Operation op = Operation::illegal;
		if (funct7 == 0)
			op = base[funct3];
		else if (funct7 == 1)
			op = multiply[funct3];
		else if (funct7 == 0x20 && funct3 == 0)
			op = Operation::sub;
		else if (funct7 == 0x20 && funct3 == 5)
			op = Operation::sra;
		else
			op = bitmanip_register_operation(opcode, funct7, funct3);
		if (op == Operation::illegal)
			return illegal(i);
		return b.is(op, InstructionClass::plain).rd(rd).rs1(rs1).rs2(rs2).done();
	}
	case 0x37:
		return b.is(Operation::lui, InstructionClass::plain)
			.rd(rd)
			.immediate(sign_extend(i & 0xfffff000u, 32))
			.done();
	case 0x3b: { // OP-32
		Operation op = Operation::illegal;
		if (funct7 == 0 && funct3 == 0)
			op = Operation::addw;
		else if (funct7 == 0 && funct3 == 1)
			op = Operation::sllw;
		else if (funct7 == 0 && funct3 == 5)
			op = Operation::srlw;
		else if (funct7 == 0x20 && funct3 == 0)
			op = Operation::subw;
		else if (funct7 == 0x20 && funct3 == 5)
			op = Operation::sraw;
		else if (funct7 == 1) {
			static constexpr Operation ops[] = {Operation::mulw,	Operation::illegal, Operation::illegal,
							    Operation::illegal, Operation::divw,    Operation::divuw,
							    Operation::remw,	Operation::remuw};
			op = ops[funct3];
		} else {
			op = bitmanip_register_operation(opcode, funct7, funct3);
		}
		if (op == Operation::illegal)
			return illegal(i);
		return b.is(op, InstructionClass::plain).rd(rd).rs1(rs1).rs2(rs2).done();
	}
	case 0x43:
	case 0x47:
	case 0x4b:
	case 0x4f: // fmadd, fmsub, fnmsub, fnmadd: fp registers only
		if (bits(i, 26, 25) > 1)
			return illegal(i); // only the S and D formats
		return b.is(Operation::fp_fused, InstructionClass::plain).done();
	case 0x53: { // OP-FP: only conversions and moves touch integer registers
		if (bits(i, 26, 25) > 1)
			return illegal(i);
		switch (bits(i, 31, 27)) {
		case 0x00: // fadd, fsub, fmul, fdiv, fsgnj*, fmin/fmax, fcvt.s.d/d.s, fsqrt
		case 0x01:
		case 0x02:
		case 0x03:
		case 0x04:
		case 0x05:
		case 0x08:
		case 0x0b:
			return b.is(Operation::fp_compute, InstructionClass::plain).done();
		case 0x14: // feq, flt, fle
		case 0x18: // fcvt.{w,wu,l,lu}.{s,d}
		case 0x1c: // fmv.x.{w,d}, fclass
			return b.is(Operation::fp_to_integer, InstructionClass::plain).rd(rd).done();
		case 0x1a: // fcvt.{s,d}.{w,wu,l,lu}
		case 0x1e: // fmv.{w,d}.x
			return b.is(Operation::integer_to_fp, InstructionClass::plain).rs1(rs1).done();
		default:
			return illegal(i);
		}
	}
	case 0x57: // OP-V
		if (funct3 == 7) {
			// vsetvli (rs1: the length), vsetivli (its field is an
			// immediate), vsetvl (rs1, rs2): rd gets the length.
			b.is(Operation::vsetvl, InstructionClass::plain).rd(rd);
			if (bits(i, 31, 30) != 3)
				b.rs1(rs1);
			if (bits(i, 31, 25) == 0x40)
				b.rs2(rs2);
			else if (bits(i, 31, 31) && bits(i, 31, 30) != 3)
				return illegal(i);
			return b.done();
		}
		// Vector arithmetic: .vx/.vf forms read a scalar at rs1;
		// VWXUNARY0 (OPMVV, funct6 010000: vmv.x.s, vcpop.m,
		// vfirst.m) writes a scalar rd.
		b.is(Operation::vector, InstructionClass::plain).rs1(rs1).rs2(rs2);
		if (funct3 == 2 && bits(i, 31, 26) == 0x10)
			b.rd(rd);
		return b.done();
	case 0x63: { // BRANCH
		static constexpr Operation ops[] = {Operation::beq,	Operation::bne, Operation::illegal,
						    Operation::illegal, Operation::blt, Operation::bge,
						    Operation::bltu,	Operation::bgeu};
		if (ops[funct3] == Operation::illegal)
			return illegal(i);
		const int64_t offset = sign_extend((bits(i, 31, 31) << 12) | (bits(i, 7, 7) << 11) |
							   (bits(i, 30, 25) << 5) | (bits(i, 11, 8) << 1),
						   13);
		return b.is(ops[funct3], InstructionClass::conditional_branch)
			.rs1(rs1)
			.rs2(rs2)
			.immediate(offset)
			.done();
	}
	case 0x67: // JALR: rs1 is read before rd is written (rd == rs1 is valid)
		if (funct3 != 0)
			return illegal(i);
		return b.is(Operation::jalr, InstructionClass::indirect_jump)
			.rs1(rs1)
			.rd(rd)
			.immediate(i_immediate)
			.done();
	case 0x6f: {
		const int64_t offset = sign_extend((bits(i, 31, 31) << 20) | (bits(i, 19, 12) << 12) |
							   (bits(i, 20, 20) << 11) | (bits(i, 30, 21) << 1),
						   21);
		return b.is(Operation::jal, InstructionClass::direct_jump).rd(rd).immediate(offset).done();
	}
	case 0x73: { // SYSTEM
		switch (funct3) {
		case 0:
			switch (i) {
			case 0x00000073:
				// ecall from the kernel is an SBI call: arguments
				// in a0-a5, function and extension in a6/a7,
				// error and value back in a0/a1.
				b.is(Operation::ecall, InstructionClass::system);
				b.insn.reads = argument_registers;
				b.insn.writes = register_bit(reg::a0) | register_bit(reg::a0 + 1);
				return b.done();
			case 0x00100073:
				return b.is(Operation::ebreak, InstructionClass::system).done();
			case 0x10200073:
				return b.is(Operation::sret, InstructionClass::system).done();
			case 0x30200073:
				return b.is(Operation::mret, InstructionClass::system).done();
			case 0x10500073:
				return b.is(Operation::wfi, InstructionClass::system).done();
			case 0x00d00073: // wrs.nto
			case 0x01d00073: // wrs.sto
				return b.is(Operation::wrs, InstructionClass::system).done();
			case 0x18000073: // sfence.w.inval (Svinval)
			case 0x18100073: // sfence.inval.ir
				return b.is(Operation::sfence_vma, InstructionClass::system).done();
			default:
				// sfence.vma, and Svinval's sinval.vma (7.x's TLB
				// flushes use it where the CPU has it)
				if ((funct7 == 0x09 || funct7 == 0x0b) && rd == 0)
					return b.is(Operation::sfence_vma, InstructionClass::system)
						.rs1(rs1)
						.rs2(rs2)
						.done();
				return illegal(i);
			}
		case 1:
			return b.is(Operation::csrrw, InstructionClass::system).rd(rd).rs1(rs1).done();
		case 2:
			return b.is(Operation::csrrs, InstructionClass::system).rd(rd).rs1(rs1).done();
		case 3:
			return b.is(Operation::csrrc, InstructionClass::system).rd(rd).rs1(rs1).done();
		case 5:
			return b.is(Operation::csrrwi, InstructionClass::system).rd(rd).done();
		case 6:
			return b.is(Operation::csrrsi, InstructionClass::system).rd(rd).done();
		case 7:
			return b.is(Operation::csrrci, InstructionClass::system).rd(rd).done();
		default:
			return illegal(i);
		}
	}
	default:
		return illegal(i);
	}
}

} // namespace

} // namespace decoding

Instruction decode_instruction(const uint8_t *bytes, size_t available)
{
	if (available < 2)
		return Instruction{};
	const uint32_t low = uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8;
	if ((low & 3) != 3)
		return decoding::decode_compressed(low);
	if ((low & 0x1c) == 0x1c || available < 4)
		return decoding::illegal(low); // 48-bit and longer encodings, or cut short
	return decoding::decode_standard(low | uint32_t(bytes[2]) << 16 | uint32_t(bytes[3]) << 24);
}

const char *operation_name(Operation operation)
{
	return size_t(operation) < size_t(Operation::count) ? operation_names[size_t(operation)] : "?";
}

const char *instruction_class_name(InstructionClass kind)
{
	switch (kind) {
	case InstructionClass::illegal:
		return "illegal";
	case InstructionClass::plain:
		return "plain";
	case InstructionClass::load:
		return "load";
	case InstructionClass::store:
		return "store";
	case InstructionClass::amo:
		return "amo";
	case InstructionClass::pc_relative:
		return "pc-relative";
	case InstructionClass::direct_jump:
		return "direct jump";
	case InstructionClass::indirect_jump:
		return "indirect jump";
	case InstructionClass::conditional_branch:
		return "conditional branch";
	case InstructionClass::system:
		return "system";
	case InstructionClass::fence_i:
		return "fence.i";
	}
	return "?";
}

bool is_call(const Instruction &instruction)
{
	return (instruction.kind == InstructionClass::direct_jump ||
		instruction.kind == InstructionClass::indirect_jump) &&
	       instruction.rd != 0;
}

bool is_return(const Instruction &instruction)
{
	return instruction.kind == InstructionClass::indirect_jump && instruction.rd == 0 &&
	       instruction.rs1 == reg::ra && instruction.immediate == 0;
}

bool falls_through(const Instruction &instruction)
{
	switch (instruction.kind) {
	case InstructionClass::illegal:
		return false;
	case InstructionClass::direct_jump:
	case InstructionClass::indirect_jump:
		return is_call(instruction); // the callee returns to the next one
	case InstructionClass::system:
		return instruction.operation != Operation::sret && instruction.operation != Operation::mret;
	default:
		return true;
	}
}

Boundary check_instruction_boundary(const uint8_t *function, size_t function_size, size_t offset)
{
	if (offset >= function_size)
		return Boundary::past_end;
	size_t at = 0;
	while (at < offset) {
		const Instruction insn = decode_instruction(function + at, function_size - at);
		if (insn.length == 0)
			return Boundary::undecodable;
		at += insn.length;
	}
	return at == offset ? Boundary::instruction_start : Boundary::inside_instruction;
}

void flow_step(const CodeRange &function, size_t offset, FlowStep &step)
{
	step = FlowStep{};
	if (offset >= function.size)
		return;
	const Instruction insn = decode_instruction(function.bytes + offset, function.size - offset);
	if (!insn.length || insn.kind == InstructionClass::illegal)
		return;
	step.length = insn.length;
	const uint64_t here = function.address + offset;
	switch (insn.kind) {
	case InstructionClass::conditional_branch:
		step.kind = FlowKind::branch;
		step.target = here + uint64_t(insn.immediate);
		return;
	case InstructionClass::direct_jump:
		// A jal that links is a call: it returns here.
		step.kind = insn.rd ? FlowKind::next : FlowKind::jump;
		step.target = insn.rd ? 0 : here + uint64_t(insn.immediate);
		return;
	case InstructionClass::indirect_jump:
		step.kind = insn.rd ? FlowKind::next : FlowKind::stop;
		return;
	case InstructionClass::system:
		// ebreak (a BUG) and sret end the block; csr* and the rest go on.
		step.kind = insn.operation == Operation::ebreak || insn.operation == Operation::c_ebreak ||
					    insn.operation == Operation::sret || insn.operation == Operation::mret
				    ? FlowKind::stop
				    : FlowKind::next;
		return;
	default:
		step.kind = FlowKind::next;
		return;
	}
}

void exit_step(const CodeRange &code, size_t offset, ExitStep &step)
{
	step = ExitStep{};
	if (offset >= code.size)
		return;
	const Instruction insn = decode_instruction(code.bytes + offset, code.size - offset);
	if (!insn.length || insn.kind == InstructionClass::illegal)
		return;
	step.length = insn.length;
	const uint64_t here = code.address + offset;
	constexpr uint8_t ra = 1;
	switch (insn.kind) {
	case InstructionClass::conditional_branch:
		step.flow = ExitFlow::branch;
		step.target = here + uint64_t(insn.immediate);
		return;
	case InstructionClass::direct_jump:
		step.flow = insn.rd ? ExitFlow::call : ExitFlow::jump;
		step.target = insn.rd ? 0 : here + uint64_t(insn.immediate);
		return;
	case InstructionClass::indirect_jump:
		if (insn.rd) {
			step.flow = ExitFlow::call;
		} else if (insn.rs1 == ra && insn.immediate == 0) {
			step.flow = ExitFlow::returns;
		} else {
			step.flow = ExitFlow::indirect_jump; // a jump table, unless:
			// "auipc t, hi; jalr x0, lo(t)": a far tail call (a module's
			// "tail", or one beyond jal's reach), if the auipc is the
			// instruction before (the census checks).
			// Never through ra: the auipc overwrote the return
			// address the hook would replace.
			if (offset >= 4 && insn.length == 4 && insn.rs1 != 0 && insn.rs1 != ra) {
				const Instruction auipc = decode_instruction(code.bytes + offset - 4, 4);
				if (auipc.length == 4 && auipc.operation == Operation::auipc && auipc.rd == insn.rs1) {
					step.flow = ExitFlow::jump;
					step.target = here - 4 + uint64_t(auipc.immediate) + uint64_t(insn.immediate);
					step.computed_by = 4;
				}
			}
		}
		return;
	case InstructionClass::system:
		if (insn.operation == Operation::ebreak || insn.operation == Operation::c_ebreak)
			step.flow = ExitFlow::trap;
		else if (insn.operation == Operation::sret || insn.operation == Operation::mret)
			step.flow = ExitFlow::indirect_jump;
		else
			step.flow = ExitFlow::next;
		return;
	default:
		step.flow = insn.operation == Operation::c_nop || (insn.operation == Operation::addi && insn.rd == 0 &&
								   insn.rs1 == 0 && insn.immediate == 0)
				    ? ExitFlow::padding
				    : ExitFlow::next;
		return;
	}
}

} // namespace okp::riscv
