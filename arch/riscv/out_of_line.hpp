// SPDX-License-Identifier: GPL-2.0
// How a riscv64 breakpoint probe runs the instruction it displaced: control
// flow and auipc are simulated on the trap's registers; everything else runs
// as a copy in an out-of-line slot, followed either by a jump back to the
// next instruction (boosted: no second trap) or by an ebreak (the post trap,
// for post_handlers, or when no jump back is possible).
//
// A jump back needs no register when the slot is within jal reach (+-1 MiB)
// of the next instruction; otherwise it is "auipc r; jalr x0, lo(r)" through
// a register r that liveness proved dead after the instruction. Without
// either the copy always traps back, as the kernel's kprobes do.
//
// Pure C++: the module and the host tests use it.
#pragma once

#include "riscv/instruction_decoder.hpp"

namespace okp::riscv {

// struct pt_regs of riscv64 (arch/riscv/include/asm/ptrace.h): epc, then
// x1..x31 in order, then the CSRs. The glue checks the layout.
struct Registers {
	uint64_t epc;
	uint64_t x[31]; // x[n - 1] is register xn
	uint64_t status, badaddr, cause, orig_a0;
};

// sstatus.SPIE: interrupts are enabled again by the trap's sret.
constexpr uint64_t status_spie = 1u << 5;

uint64_t read_register(const Registers &regs, unsigned number);
void write_register(Registers &regs, unsigned number, uint64_t value);

// Whether a breakpoint probe computes the instruction's effect rather than
// running a copy: jal, jalr, auipc, branches and their RVC forms.
bool is_simulated(const Instruction &instruction);

// Applies a simulated instruction that was at address to regs, epc
// included. jalr/c.jalr read their base register before they link (rd may
// equal rs1; c.jalr's base may be ra).
void simulate(const Instruction &instruction, uint64_t address, Registers &regs);

// Each slot holds two copies of the instruction: [0, 16) ends in a jump
// back (boosted), [16, 32) in an ebreak (the post trap).
constexpr size_t slot_half = 16;
constexpr size_t slot_size = 2 * slot_half;

enum class SlotEnd : uint8_t { jump_back, breakpoint };

// Whether a jump back from a copy at copy_address to return_address can be
// built with register scratch (0: only a jal in reach will do).
bool can_jump_back(uint64_t copy_address, size_t length, uint64_t return_address, unsigned scratch);

// Writes the copy of the length-byte instruction original, run at
// copy_address, and its end. Returns the bytes written (at most
// slot_half), or 0 when the jump back cannot be built.
size_t build_copy(const uint8_t *original, size_t length, uint64_t copy_address, uint64_t return_address, SlotEnd end,
		  unsigned scratch, uint8_t (&out)[slot_half]);

// A register the copy's jump back may clobber: not in live_after, never
// x0/sp/gp/tp; temporaries first. 0 when there is none.
unsigned dead_register(RegisterSet live_after);

} // namespace okp::riscv
