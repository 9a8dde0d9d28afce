// SPDX-License-Identifier: GPL-2.0
// x86-64 instruction decoding for the safety checker, on top of Zydis.
//
// Pure C++: used by the module and by the host tests on real kernel bytes.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/basic_blocks.hpp"

namespace okp::x86 {

// The longest legal x86 instruction.
constexpr size_t max_instruction_length = 15;

// The Xen and KVM emulate prefixes (the kernel's emulate_prefix.h): ud2
// and the ASCII "xen" or "kvm" before an instruction (cpuid) the
// hypervisor's #UD handler emulates, going on past it. The kernel's insn
// decoder reads prefix and instruction as one, and kprobes refuse it; so
// does okprobe (Refusal::emulate_prefix), and its walks step over the whole.
constexpr size_t emulate_prefix_length = 5;
bool has_emulate_prefix(const uint8_t *bytes, size_t available);

// Length of the 64-bit-mode instruction at bytes, or 0 when the bytes do not
// decode as one within available bytes.
unsigned instruction_length(const uint8_t *bytes, size_t available);

// Whether b is one of x86-64's legacy prefixes: operand and address size,
// lock, the two repeats and the segment overrides (not REX, 40-4f, which
// must come last).
constexpr bool is_legacy_prefix(uint8_t b)
{
	return b == 0x66 || b == 0x67 || b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x3e || b == 0x26 ||
	       b == 0x36 || b == 0x64 || b == 0x65;
}

// Whether execution may go on to the next instruction: false after ret,
// jmp, call (GCC ends a function with a call of a noreturn function),
// int3 and ud2. From the bytes, past legacy and REX prefixes.
bool falls_through(const uint8_t *insn, unsigned length);

enum class Boundary {
	instruction_start, // offset is where an instruction begins
	inside_instruction,
	undecodable, // the walk from the start met bytes that do not decode
	past_end,    // offset is not inside the function
	// before offset, an int3 where the instruction before it falls
	// through: someone else's breakpoint over an instruction's first
	// byte (padding and SLS int3s follow a ret, jmp or call), and the
	// decode after it may be out of step
	foreign_breakpoint,
};

// Proves whether offset is an instruction boundary by decoding the function
// linearly from its first byte, as the kernel's kprobes do.
Boundary check_instruction_boundary(const uint8_t *function, size_t function_size, size_t offset);

// The control flow of the instruction at function.bytes + offset, for
// core/basic_blocks.hpp: rel8/rel32 jcc, jrcxz and loop are branches,
// jmp rel a jump; indirect jmp, ret, int3, ud2 stop; calls go on.
void flow_step(const CodeRange &function, size_t offset, FlowStep &step);

// The status flags a detour clobbers: those an inc changes (OF, SF, ZF,
// AF, PF; a counting detour's incq keeps CF), or those and CF (a call: an
// argument-only detour's handler).
enum class ClobberedFlags { inc, call };

// Whether the clobbered status flags are dead at offset, the start of an
// instruction of the function: on the straight
// path from there, an instruction writes (or leaves undefined) all of them
// before any instruction tests one, and before a jump, call, return or the
// function's end, where the answer is "live" (a callee or caller written
// in assembly may pass results in flags: the kernel's
// this_cpu_cmpxchg16b_emu returns ZF). From Zydis's flag tables.
bool status_flags_dead(const uint8_t *function, size_t function_size, size_t offset,
		       ClobberedFlags clobbered = ClobberedFlags::inc);

} // namespace okp::x86
