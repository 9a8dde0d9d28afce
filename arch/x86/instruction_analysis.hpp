// SPDX-License-Identifier: GPL-2.0
// What a breakpoint probe must do with the instruction it displaces (x86-64).
//
// Every probed instruction is either run out of line (a copy in an
// executable slot, RIP-relative displacements rebased to the slot), emulated
// in the breakpoint handler (everything that changes ip or IF), or refused
// with a reason. Pure C++ on bytes: the module decides with it at
// registration, the host tests check it on kernel encodings.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/code_range.hpp"
#include "core/function_exits.hpp"

namespace okp::x86 {

// How the probe executes the displaced instruction.
enum class Execution : uint8_t {
	copy,		   // a copy runs out of line
	copy_rip_relative, // a copy runs out of line, its disp32 rebased
	emulate,	   // the breakpoint handler emulates it
	refuse,		   // not probeable: see Refusal
};

enum class Refusal : uint8_t {
	none,
	undecodable,		  // not a valid instruction
	breakpoint,		  // int3: someone else's breakpoint or padding
	interrupt,		  // int n, into, int1: a deliberate trap
	undefined_opcode,	  // ud0/ud1/ud2: BUG()/WARN() sites
	privileged_flow,	  // hlt, iret, sysret, sysexit, syscall, sysenter
	far_transfer,		  // far jmp/call/ret: segment changes
	interrupt_shadow,	  // mov ss / pop ss: block interrupts for one insn
	indirect_through_memory,  // call/jmp [mem]: target from memory (no retpoline)
	rip_relative_unreachable, // rebased disp32 out of reach of the slot
	unsupported_prefix,	  // 16/32-bit operand or address size on a branch
	unsupported_relative,	  // other ip-relative forms (xbegin)
	landing_pad,		  // endbr64/endbr32: where indirect branches land under IBT
	emulate_prefix,		  // ud2 "xen"/"kvm" + an instruction: the hypervisor emulates it
};

// Control transfers the handler emulates.
enum class Transfer : uint8_t {
	none,
	jump,	       // to target
	call,	       // push the return address, go to target
	ret,	       // pop ip (and ret_pop bytes); also jmp __x86_return_thunk
	jump_register, // jmp *%reg, also jmp __x86_indirect_thunk_reg
	call_register, // call *%reg, also call __x86_indirect_thunk_reg
};

// When the transfer happens.
enum class Condition : uint8_t {
	always,
	flags,	// jcc: condition_code over EFLAGS
	loop,	// dec rcx; taken if rcx != 0
	loope,	// dec rcx; taken if rcx != 0 && ZF
	loopne, // dec rcx; taken if rcx != 0 && !ZF
	jrcxz,	// taken if rcx == 0
};

// Flag instructions the handler emulates, because IF must not change behind
// the handler's back.
enum class FlagOperation : uint8_t { none, pushf, popf, cli, sti };

// Branch thunks that stand for plain instructions under retpoline/rethunk
// kernels. Addresses are 0 where the kernel has none.
// Their symbol names: the return thunk, and the indirect thunks by
// register number (none for rsp).
constexpr const char *return_thunk_symbol = "__x86_return_thunk";
constexpr const char *indirect_thunk_symbols[16] = {"__x86_indirect_thunk_rax",
						    "__x86_indirect_thunk_rcx",
						    "__x86_indirect_thunk_rdx",
						    "__x86_indirect_thunk_rbx",
						    nullptr,
						    "__x86_indirect_thunk_rbp",
						    "__x86_indirect_thunk_rsi",
						    "__x86_indirect_thunk_rdi",
						    "__x86_indirect_thunk_r8",
						    "__x86_indirect_thunk_r9",
						    "__x86_indirect_thunk_r10",
						    "__x86_indirect_thunk_r11",
						    "__x86_indirect_thunk_r12",
						    "__x86_indirect_thunk_r13",
						    "__x86_indirect_thunk_r14",
						    "__x86_indirect_thunk_r15"};

// The other return thunks a boot may send every return to instead of
// __x86_return_thunk (call depth tracking, SRSO, ITS, retbleed's IBPB):
// the exit census (core/function_exits.hpp) takes a jump to any of them for
// a return. Detours keep such a jump as it is.
constexpr size_t return_thunk_variant_count = 5;
constexpr const char *return_thunk_variant_symbols[return_thunk_variant_count] = {
	"call_depth_return_thunk", "srso_return_thunk", "srso_alias_return_thunk", "its_return_thunk",
	"retbleed_return_thunk"};

// The thunks a boot may send a retpoline's indirect jump to instead of
// __x86_indirect_thunk_<reg>: call depth tracking's (retbleed=stuff) and
// ITS'. Such a jump is as indirect as the retpoline: a tail call through a
// pointer, or a computed goto inside the function.
constexpr size_t indirect_jump_thunk_variant_count = 2;
constexpr const char *indirect_jump_thunk_prefixes[indirect_jump_thunk_variant_count] = {"__x86_indirect_jump_thunk_",
											 "__x86_indirect_its_thunk_"};
// What follows the prefix: indirect_thunk_symbols[reg] past this.
constexpr const char indirect_thunk_prefix[] = "__x86_indirect_thunk_";

struct Thunks {
	uint64_t return_thunk = 0;	  // __x86_return_thunk
	uint64_t indirect_thunk[16] = {}; // __x86_indirect_thunk_<reg>, by register number
	uint64_t return_thunk_variants[return_thunk_variant_count] = {}; // by return_thunk_variant_symbols
	// By indirect_jump_thunk_prefixes, then register number.
	uint64_t indirect_jump_thunk_variants[indirect_jump_thunk_variant_count][16] = {};
	// Every thunk above lies within [lowest, highest] (bound_thunks): a
	// branch elsewhere, nearly every one, skips the tables' 53 compares.
	// The defaults filter nothing.
	uint64_t lowest = 0, highest = ~uint64_t(0);
};

// Sets thunks' bounds from the addresses it holds.
void bound_thunks(Thunks &thunks);

struct Analysis {
	uint8_t length = 0;
	Execution execution = Execution::refuse;
	Refusal refusal = Refusal::undecodable;
	// Also set on a refused indirect_through_memory branch (jump or call).
	Transfer transfer = Transfer::none;
	Condition condition = Condition::always;
	FlagOperation flag_operation = FlagOperation::none;
	uint8_t condition_code = 0;   // Condition::flags: the jcc's low nibble
	uint8_t reg = 0;	      // *_register: x86 register number 0-15
	uint8_t disp_offset = 0;      // copy_rip_relative: offset of the disp32
	uint16_t ret_pop = 0;	      // ret imm16
	bool relative_branch = false; // a jmp/jcc/call/loop with an ip-relative target
	uint64_t target = 0;	      // jump/call targets; copy_rip_relative: the operand's address
};

// Analyses the instruction at bytes, which sits at address in the kernel.
Analysis analyze_instruction(const uint8_t *bytes, size_t available, uint64_t address, const Thunks &thunks);

// The same through Zydis alone, without analyze_instruction's fast path
// for plain branches: the reference the host tests hold that path to.
Analysis analyze_instruction_by_zydis(const uint8_t *bytes, size_t available, uint64_t address, const Thunks &thunks);

const char *refusal_text(Refusal refusal);

// The instruction at code.bytes + offset as the exit census sees it
// (core/function_exits.hpp): a jump to any return thunk is a return.
void exit_step(const CodeRange &code, size_t offset, const Thunks &thunks, ExitStep &step);

} // namespace okp::x86
