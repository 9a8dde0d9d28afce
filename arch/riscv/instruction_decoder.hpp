// SPDX-License-Identifier: GPL-2.0
// RV64GC instruction decoding for okprobe's riscv64 backend: every RV64I, M,
// A, Zicsr, Zifencei and C (RVC) instruction, the F/D loads and stores and
// enough of the F/D arithmetic to know its length and integer registers;
// and what Debian's stock kernels add where the CPU has it (alternatives,
// kernel-mode vector): Zba, Zbb, Zbc, Zbs, Zbkb, Zbkx, Zicond,
// Zicbom/Zicboz, Zawrs, Svinval and V, by class and integer registers (a
// vector operation's register fields count as integer reads whichever file
// they name: more reads only make the liveness more careful).
//
// For each instruction: its length (2 or 4 bytes), the integer registers it
// reads and writes (x0 never counts as written), its class and, for
// branches and jumps, its target offset. The liveness analysis, the probe
// rules and the jump optimizer decide on nothing else.
//
// Pure C++: no kernel headers, used by the module and by the host tests on
// the test kernels' bytes.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/basic_blocks.hpp"
#include "core/function_exits.hpp"

namespace okp::riscv {

// The longest instruction okprobe decodes (48-bit and longer encodings are
// not used by the kernel and decode as illegal).
constexpr size_t max_instruction_length = 4;

// How far an sc may follow its lr: the constrained LR/SC loops the ISA
// guarantees progress for have at most 16 instructions.
constexpr unsigned lr_sc_reach = 16;

// Integer register numbers the analysis names.
namespace reg {
constexpr uint8_t zero = 0, ra = 1, sp = 2, gp = 3, tp = 4, t0 = 5, t1 = 6, t2 = 7, s0 = 8, s1 = 9, a0 = 10, a1 = 11,
		  a7 = 17, t3 = 28, t6 = 31;
} // namespace reg

// A set of integer registers: bit n is xn.
using RegisterSet = uint32_t;
constexpr RegisterSet register_bit(unsigned n)
{
	return n == 0 ? 0 : RegisterSet(1) << n;
}
constexpr RegisterSet all_registers = 0xfffffffe; // x1..x31
// The psABI's argument registers a0-a7, its temporaries t0-t6, and the
// registers a call may clobber: ra, the temporaries and the arguments.
constexpr RegisterSet argument_registers = 0xffu << reg::a0;
constexpr RegisterSet temporary_registers = (0x7u << reg::t0) | (0xfu << reg::t3);
constexpr RegisterSet caller_saved_registers = register_bit(reg::ra) | temporary_registers | argument_registers;

enum class InstructionClass : uint8_t {
	illegal,	    // undecodable or reserved: not an instruction okprobe knows
	plain,		    // computes registers only (also fence, fp arithmetic)
	load,		    // integer or fp load
	store,		    // integer or fp store
	amo,		    // lr, sc, amo*: atomic memory operations
	pc_relative,	    // auipc: its result depends on where it runs
	direct_jump,	    // jal, c.j: pc + offset (a call when it links)
	indirect_jump,	    // jalr, c.jr, c.jalr: returns, indirect calls and jumps
	conditional_branch, // beq..bgeu, c.beqz, c.bnez: pc + offset when taken
	system,		    // ecall, ebreak, c.ebreak, csr*, sret, mret, wfi, sfence.vma
	fence_i,	    // instruction-stream fence
};

// Every operation the decoder tells apart (X-macro: the enum and its
// mnemonics, as objdump -M no-aliases spells them).
// clang-format off
#define OKP_RISCV_OPERATIONS(X) \
	X(illegal, "illegal") \
	X(lui, "lui") X(auipc, "auipc") X(jal, "jal") X(jalr, "jalr") \
	X(beq, "beq") X(bne, "bne") X(blt, "blt") X(bge, "bge") X(bltu, "bltu") X(bgeu, "bgeu") \
	X(lb, "lb") X(lh, "lh") X(lw, "lw") X(ld, "ld") X(lbu, "lbu") X(lhu, "lhu") X(lwu, "lwu") \
	X(sb, "sb") X(sh, "sh") X(sw, "sw") X(sd, "sd") \
	X(addi, "addi") X(slti, "slti") X(sltiu, "sltiu") X(xori, "xori") X(ori, "ori") X(andi, "andi") \
	X(slli, "slli") X(srli, "srli") X(srai, "srai") \
	X(add, "add") X(sub, "sub") X(sll, "sll") X(slt, "slt") X(sltu, "sltu") X(xor_, "xor") X(srl, "srl") \
	X(sra, "sra") X(or_, "or") X(and_, "and") \
	X(addiw, "addiw") X(slliw, "slliw") X(srliw, "srliw") X(sraiw, "sraiw") \
	X(addw, "addw") X(subw, "subw") X(sllw, "sllw") X(srlw, "srlw") X(sraw, "sraw") \
	X(fence, "fence") X(fence_i, "fence.i") \
	X(ecall, "ecall") X(ebreak, "ebreak") X(sret, "sret") X(mret, "mret") X(wfi, "wfi") \
	X(sfence_vma, "sfence.vma") \
	X(csrrw, "csrrw") X(csrrs, "csrrs") X(csrrc, "csrrc") X(csrrwi, "csrrwi") X(csrrsi, "csrrsi") \
	X(csrrci, "csrrci") \
	X(mul, "mul") X(mulh, "mulh") X(mulhsu, "mulhsu") X(mulhu, "mulhu") X(div, "div") X(divu, "divu") \
	X(rem, "rem") X(remu, "remu") X(mulw, "mulw") X(divw, "divw") X(divuw, "divuw") X(remw, "remw") \
	X(remuw, "remuw") \
	X(lr, "lr") X(sc, "sc") X(amoswap, "amoswap") X(amoadd, "amoadd") X(amoxor, "amoxor") \
	X(amoand, "amoand") X(amoor, "amoor") X(amomin, "amomin") X(amomax, "amomax") X(amominu, "amominu") \
	X(amomaxu, "amomaxu") \
	X(flw, "flw") X(fld, "fld") X(fsw, "fsw") X(fsd, "fsd") \
	X(fp_compute, "fp-compute") X(fp_fused, "fp-fused") X(fp_to_integer, "fp-to-integer") \
	X(integer_to_fp, "integer-to-fp") \
	X(c_addi4spn, "c.addi4spn") X(c_fld, "c.fld") X(c_lw, "c.lw") X(c_ld, "c.ld") X(c_fsd, "c.fsd") \
	X(c_sw, "c.sw") X(c_sd, "c.sd") X(c_nop, "c.nop") X(c_addi, "c.addi") X(c_addiw, "c.addiw") \
	X(c_li, "c.li") X(c_addi16sp, "c.addi16sp") X(c_lui, "c.lui") X(c_srli, "c.srli") X(c_srai, "c.srai") \
	X(c_andi, "c.andi") X(c_sub, "c.sub") X(c_xor, "c.xor") X(c_or, "c.or") X(c_and, "c.and") \
	X(c_subw, "c.subw") X(c_addw, "c.addw") X(c_j, "c.j") X(c_beqz, "c.beqz") X(c_bnez, "c.bnez") \
	X(c_slli, "c.slli") X(c_fldsp, "c.fldsp") X(c_lwsp, "c.lwsp") X(c_ldsp, "c.ldsp") X(c_jr, "c.jr") \
	X(c_mv, "c.mv") X(c_ebreak, "c.ebreak") X(c_jalr, "c.jalr") X(c_add, "c.add") X(c_fsdsp, "c.fsdsp") \
	X(c_swsp, "c.swsp") X(c_sdsp, "c.sdsp") \
	X(bitmanip, "zb*") X(czero, "czero") X(cbo, "cbo") X(wrs, "wrs") X(vsetvl, "vsetvl") \
	X(vector, "vector") X(vector_load, "vector-load") X(vector_store, "vector-store")
// clang-format on

enum class Operation : uint8_t {
#define OKP_RISCV_OPERATION_ENUM(name, text) name,
	OKP_RISCV_OPERATIONS(OKP_RISCV_OPERATION_ENUM)
#undef OKP_RISCV_OPERATION_ENUM
		count
};

struct Instruction {
	uint8_t length = 0; // 2 or 4; 0 when illegal or not enough bytes
	InstructionClass kind = InstructionClass::illegal;
	Operation operation = Operation::illegal;
	// Register fields as architectural numbers (rs1'/rs2'/rd' of RVC
	// already mapped to x8..x15); 0 when the instruction has none.
	uint8_t rd = 0, rs1 = 0, rs2 = 0;
	RegisterSet reads = 0, writes = 0; // integer registers; never x0
	// Branch and jump offset from the instruction; auipc and lui: the
	// upper immediate (imm20 << 12); loads, stores, addi-likes: the
	// immediate; jalr: its offset.
	int64_t immediate = 0;
	uint32_t raw = 0; // the encoding (16 bits for RVC)
};

// Decodes the instruction at bytes (little-endian, 2-byte aligned in the
// kernel). available: how many bytes may be read; RVC needs 2, the rest 4.
Instruction decode_instruction(const uint8_t *bytes, size_t available);

// The control flow of the instruction at function.bytes + offset, for
// core/basic_blocks.hpp: conditional branches branch; jal/c.j without a
// link jump, with one (a call) go on; jalr and c.jr without a link stop
// (with one, a call, they go on); ebreak, c.ebreak, sret and mret stop,
// other system instructions go on; an illegal one ends the walk.
void flow_step(const CodeRange &function, size_t offset, FlowStep &step);

// The instruction at code.bytes + offset as the exit census sees it
// (core/function_exits.hpp): a jump through ra with no link is a return;
// any other jump through a register without a link, indirect.
void exit_step(const CodeRange &code, size_t offset, ExitStep &step);

const char *operation_name(Operation operation);
const char *instruction_class_name(InstructionClass kind);

// jal/jalr/c.jalr that link (rd != x0): calls.
bool is_call(const Instruction &instruction);
// jalr x0, 0(ra) and c.jr ra: the function returns.
bool is_return(const Instruction &instruction);
// A branch or jump whose target is known from the bytes (jal, c.j, b*,
// c.beqz, c.bnez).
inline bool has_direct_target(const Instruction &instruction)
{
	return instruction.kind == InstructionClass::direct_jump ||
	       instruction.kind == InstructionClass::conditional_branch;
}
// Whether execution can continue with the next instruction (false for
// jumps, returns and the trap returns sret/mret).
bool falls_through(const Instruction &instruction);

enum class Boundary {
	instruction_start, // offset is where an instruction begins
	inside_instruction,
	undecodable, // the walk from the start met bytes that do not decode
	past_end,    // offset is not inside the function
};

// Proves whether offset is an instruction boundary by decoding the function
// linearly from its first byte, as the kernel's kprobes do (since 6.1.y).
Boundary check_instruction_boundary(const uint8_t *function, size_t function_size, size_t offset);

} // namespace okp::riscv
