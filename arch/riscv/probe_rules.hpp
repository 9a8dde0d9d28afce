// SPDX-License-Identifier: GPL-2.0
// riscv64's answer to "may a breakpoint go on this instruction, and how is
// the instruction then executed?".
//
// As the kernel's kprobes (6.1.y, with the fixes after 6.1.0): the address
// must be even and an instruction boundary of a linear decode from the
// function start; system-opcode instructions (ecall, ebreak, csr*, sret,
// wfi, sfence.vma, ...) and fence.i are refused. Beyond them: the RVC
// control flow the kernel refuses (c.j, c.jr, c.jalr, c.beqz, c.bnez) is
// simulated like its RVI form, fence is run out of line (it only orders
// memory), and an LR/SC sequence is refused: the kernel's trap return
// clears the load reservation, so a breakpoint between an lr and its sc
// (or on either) makes the sc fail on every retry.
#pragma once

#include "core/registration.hpp"
#include "riscv/instruction_decoder.hpp"

namespace okp::riscv {

// How a breakpoint probe executes the instruction it displaces.
enum class Execution : uint8_t {
	out_of_line, // a copy runs in a slot, followed by a jump back or ebreak
	simulate,    // the handler computes its effect: jal, jalr, auipc, branches and their RVC forms
	refuse,
};

struct BreakpointPlan {
	InstructionVerdict verdict; // error, why, length
	Execution execution = Execution::refuse;
	Instruction instruction;
	// The breakpoint written over it: c.ebreak for RVC, ebreak otherwise.
	uint32_t breakpoint = 0;
};

constexpr uint32_t ebreak_encoding = 0x00100073;
constexpr uint16_t c_ebreak_encoding = 0x9002;

BreakpointPlan plan_breakpoint(const uint8_t *function, size_t size, size_t offset);

// Whether a trap at the instruction at offset breaks an LR/SC sequence (it
// is the lr, the sc or between them): the kernel's own kprobes take such
// an instruction, and the loop around it then never ends. False when
// offset is no boundary of a linear decode.
bool in_lr_sc_sequence(const uint8_t *function, size_t size, size_t offset);

// InstructionRules for riscv64 (the registration core's signature).
InstructionVerdict probe_rules(const uint8_t *function, size_t size, size_t offset, uint64_t function_address);

} // namespace okp::riscv
