// SPDX-License-Identifier: GPL-2.0
// Executing a probed x86-64 instruction away from its place: the emulation
// the breakpoint handler performs, and the out-of-line slot it jumps to.
#pragma once

#include "x86/instruction_analysis.hpp"

namespace okp::x86 {

// struct pt_regs of x86-64, field for field. The C glue checks the layout
// against the kernel's with BUILD_BUG_ON, so the core can work on the
// handler's registers directly.
struct Registers {
	uint64_t r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	uint64_t ax, cx, dx, si, di, orig_ax;
	uint64_t ip, cs, flags, sp, ss;
};

// EFLAGS bits the emulation reads or writes.
namespace flag {
constexpr uint64_t carry = 1u << 0, parity = 1u << 2, zero = 1u << 6, sign = 1u << 7;
constexpr uint64_t trap = 1u << 8, interrupt = 1u << 9, overflow = 1u << 11;
constexpr uint64_t resume = 1u << 16, virtual_8086 = 1u << 17;
// What popf may change at CPL 0 (not RF, VM, VIF, VIP).
constexpr uint64_t popf_writable = 0x247fd5;
} // namespace flag

// The register with x86 encoding number (0 ax, 1 cx, ... 4 sp, ... 15 r15).
uint64_t &register_by_number(Registers &regs, unsigned number);

// Whether jcc with condition code (low nibble of the opcode) is taken.
bool condition_holds(uint8_t code, uint64_t flags);

// Stack memory for emulated push and pop. A push below the interrupted sp is
// safe in the int3 handler: the kernel's int3 entry leaves a gap there for
// exactly this (see int3_emulate_push()).
struct StackAccess {
	void (*write)(uint64_t address, uint64_t value);
	uint64_t (*read)(uint64_t address);
};

// Emulates an Execution::emulate instruction that was probed at address;
// regs (ip included) end as if it had executed there.
void emulate(const Analysis &analysis, uint64_t address, Registers &regs, const StackAccess &stack);

// An out-of-line slot: the copied instruction and what follows it.
constexpr size_t slot_size = 32;
enum class SlotEnd : uint8_t {
	jump_back,  // jmp rel32 to the next instruction (a "boosted" probe)
	breakpoint, // int3, so a post_handler runs after the instruction
};

// Writes the slot for the instruction (Execution::copy or
// copy_rip_relative) probed at address, for execution at slot_address.
// Returns its length, or 0 when a displacement is out of rel32 reach.
size_t build_slot(const Analysis &analysis, const uint8_t *instruction, uint64_t address, uint64_t slot_address,
		  SlotEnd end, uint8_t (&slot)[slot_size]);

} // namespace okp::x86
