// SPDX-License-Identifier: GPL-2.0
// riscv's jump plan, pure C++ over a FunctionAnalysis: which window of
// whole instructions an "auipc; jalr/c.jr" may replace at a probe (one that
// starts at the probe, or at a function's exit one that ends there), which
// dead registers it jumps and returns through, or why not; then the bytes
// of that jump, the relocated copy of the window the detour runs, and the
// encoders both use.
#include "riscv/jump_optimization.hpp"

#include "riscv/code_writer.hpp"

namespace okp::riscv {

// Which dead register to take, in order: temporaries first (nobody expects
// them to survive anything), then arguments, and callee-saved registers
// last (s0 last of all: the frame pointer when there is one). t0 and ra
// come after the other temporaries and arguments: the ISA's return-address
// stack hints take "jalr x0" or "c.jr" through x1 or x5 for a return, and
// a jump through them would pop the predictor's stack on real harts.
static constexpr uint8_t register_preference[] = {6, 7, 28, 29, 30, 31, 17, 16, 15, 14, 13, 12, 11, 10,
						  5, 1, 9,  18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 8};

uint8_t pick_dead_register(RegisterSet candidates)
{
	for (uint8_t n : register_preference)
		if (candidates & register_bit(n))
			return n;
	return 0;
}

namespace {

bool is_unconditional_transfer(const Instruction &insn)
{
	return insn.kind == InstructionClass::direct_jump || insn.kind == InstructionClass::indirect_jump;
}

// The inverse of a branch condition (funct3), and the RVC branches as
// their RVI forms against x0.
unsigned inverted_branch(const Instruction &insn)
{
	switch (insn.operation) {
	case Operation::beq:
		return 1;
	case Operation::bne:
		return 0;
	case Operation::blt:
		return 5;
	case Operation::bge:
		return 4;
	case Operation::bltu:
		return 7;
	case Operation::bgeu:
		return 6;
	case Operation::c_beqz:
		return 1; // taken when rs1 == 0: skip when rs1 != 0
	default:
		return 0; // c.bnez
	}
}

} // namespace

namespace encode {

int32_t high_part(int64_t displacement)
{
	return int32_t((displacement + 0x800) >> 12);
}

int32_t low_part(int64_t displacement)
{
	return int32_t(displacement - (int64_t(high_part(displacement)) << 12));
}

uint32_t auipc(unsigned rd, int32_t upper20)
{
	return (uint32_t(upper20) << 12) | (rd << 7) | 0x17;
}

uint32_t lui(unsigned rd, int32_t upper20)
{
	return (uint32_t(upper20) << 12) | (rd << 7) | 0x37;
}

uint32_t addi(unsigned rd, unsigned rs1, int32_t imm12)
{
	return ((uint32_t(imm12) & 0xfff) << 20) | (rs1 << 15) | (rd << 7) | 0x13;
}

uint32_t jalr(unsigned rd, unsigned rs1, int32_t imm12)
{
	return ((uint32_t(imm12) & 0xfff) << 20) | (rs1 << 15) | (rd << 7) | 0x67;
}

uint32_t jal(unsigned rd, int32_t offset)
{
	const uint32_t o = uint32_t(offset);
	return (((o >> 20) & 1) << 31) | (((o >> 1) & 0x3ff) << 21) | (((o >> 11) & 1) << 20) |
	       (((o >> 12) & 0xff) << 12) | (rd << 7) | 0x6f;
}

uint32_t sd(unsigned source, unsigned base, int32_t offset)
{
	const uint32_t o = uint32_t(offset) & 0xfff;
	return ((o >> 5) << 25) | (source << 20) | (base << 15) | (3u << 12) | ((o & 0x1f) << 7) | 0x23;
}

uint32_t ld(unsigned destination, unsigned base, int32_t offset)
{
	return ((uint32_t(offset) & 0xfff) << 20) | (base << 15) | (3u << 12) | (destination << 7) | 0x03;
}

uint32_t lw(unsigned destination, unsigned base, int32_t offset)
{
	return ((uint32_t(offset) & 0xfff) << 20) | (base << 15) | (2u << 12) | (destination << 7) | 0x03;
}

uint32_t sw(unsigned source, unsigned base, int32_t offset)
{
	const uint32_t o = uint32_t(offset) & 0xfff;
	return ((o >> 5) << 25) | (source << 20) | (base << 15) | (2u << 12) | ((o & 0x1f) << 7) | 0x23;
}

uint32_t slli(unsigned rd, unsigned rs1, unsigned shift)
{
	return ((shift & 0x3f) << 20) | (rs1 << 15) | (1u << 12) | (rd << 7) | 0x13;
}

uint32_t srli(unsigned rd, unsigned rs1, unsigned shift)
{
	return ((shift & 0x3f) << 20) | (rs1 << 15) | (5u << 12) | (rd << 7) | 0x13;
}

uint32_t andi(unsigned rd, unsigned rs1, int32_t imm12)
{
	return ((uint32_t(imm12) & 0xfff) << 20) | (rs1 << 15) | (7u << 12) | (rd << 7) | 0x13;
}

uint32_t add(unsigned rd, unsigned rs1, unsigned rs2)
{
	return (rs2 << 20) | (rs1 << 15) | (rd << 7) | 0x33;
}

uint32_t amoadd_d(unsigned rd, unsigned rs2, unsigned rs1)
{
	return (rs2 << 20) | (rs1 << 15) | (3u << 12) | (rd << 7) | 0x2f;
}

uint16_t c_jr(unsigned rs1)
{
	return uint16_t(0x8002 | (rs1 << 7));
}

uint16_t c_j(int32_t offset)
{
	const uint32_t o = uint32_t(offset);
	return uint16_t(0xa001 | (((o >> 11) & 1) << 12) | (((o >> 4) & 1) << 11) | (((o >> 8) & 3) << 9) |
			(((o >> 10) & 1) << 8) | (((o >> 6) & 1) << 7) | (((o >> 7) & 1) << 6) | (((o >> 1) & 7) << 3) |
			(((o >> 5) & 1) << 2));
}

uint32_t branch(unsigned funct3, unsigned rs1, unsigned rs2, int32_t offset)
{
	const uint32_t o = uint32_t(offset);
	return (((o >> 12) & 1) << 31) | (((o >> 5) & 0x3f) << 25) | (rs2 << 20) | (rs1 << 15) | (funct3 << 12) |
	       (((o >> 1) & 0xf) << 8) | (((o >> 11) & 1) << 7) | 0x63;
}

} // namespace encode

bool within_far_reach(int64_t displacement)
{
	constexpr int64_t limit = int64_t(1) << 31, rounding = int64_t(1) << 11;
	return displacement >= -limit - rounding && displacement < limit - rounding;
}

const char *optimization_refusal_text(OptimizationRefusal refusal)
{
	switch (refusal) {
	case OptimizationRefusal::none:
		return "optimizable";
	case OptimizationRefusal::not_an_instruction:
		return "not an instruction boundary of the function";
	case OptimizationRefusal::function_undecodable:
		return "the function does not decode to its end";
	case OptimizationRefusal::indirect_jump:
		return "the function jumps through a register (jump table?)";
	case OptimizationRefusal::window_past_function:
		return "the function ends inside the jump's window";
	case OptimizationRefusal::window_not_relocatable:
		return "a system, fence.i or illegal instruction in the window";
	case OptimizationRefusal::lr_sc_sequence:
		return "the window is inside an LR/SC sequence";
	case OptimizationRefusal::exception_entry:
		return "a window instruction has an exception-table entry";
	case OptimizationRefusal::call_inside_window:
		return "a call before the window's end would return inside it";
	case OptimizationRefusal::pc_relative_in_window:
		return "auipc in the window";
	case OptimizationRefusal::control_flow_in_window:
		return "a branch, jump, call or return in the window";
	case OptimizationRefusal::jump_into_window:
		return "a jump targets the window's interior";
	case OptimizationRefusal::no_entry_register:
		return "no register is dead at the probe";
	case OptimizationRefusal::no_return_register:
		return "no register is dead where the detour returns";
	case OptimizationRefusal::out_of_memory:
		return "out of memory";
	case OptimizationRefusal::window_before_function:
		return "the exit's window would start before the function";
	}
	return "?";
}

namespace {

// Why insn may not be in a window (none when it may): an instruction that
// traps on purpose cannot run elsewhere; PC-relative and control-flow
// instructions are relocated only under options.relocate, control flow
// only where with_control_flow (an end-anchored window's instructions
// before the probe take none).
OptimizationRefusal window_instruction_refusal(const Instruction &insn, const PlanOptions &options,
					       bool with_control_flow)
{
	switch (insn.kind) {
	case InstructionClass::illegal:
	case InstructionClass::system:
	case InstructionClass::fence_i:
		return OptimizationRefusal::window_not_relocatable;
	case InstructionClass::pc_relative:
		return options.relocate ? OptimizationRefusal::none : OptimizationRefusal::pc_relative_in_window;
	case InstructionClass::direct_jump:
	case InstructionClass::indirect_jump:
	case InstructionClass::conditional_branch:
		if (!options.relocate || !with_control_flow)
			return OptimizationRefusal::control_flow_in_window;
		// Only ra links the way the relocation rebuilds.
		return is_call(insn) && insn.rd != reg::ra ? OptimizationRefusal::window_not_relocatable
							   : OptimizationRefusal::none;
	default:
		return OptimizationRefusal::none;
	}
}

// The window that ends with the probed instruction, an unconditional
// transfer (a return, jump or tail call) at index last: the straight-line
// instructions before it, back to 6 bytes or more. They run in the detour
// before the probe's frame, so they must be plain (no branch, jump or
// call: a call's return would land inside) and relocatable; nothing may
// land inside the window but at its first byte.
OptimizationPlan plan_end_anchored(const FunctionAnalysis &function, uint64_t address, size_t last,
				   const PlanOptions &options)
{
	OptimizationPlan plan;
	const auto refuse = [&plan](OptimizationRefusal refusal, uint64_t where) {
		plan.refusal = refusal;
		plan.refusal_address = where;
		return plan;
	};
	const Instruction exit = function.instruction(last);
	size_t first = last, length = exit.length;
	while (length < short_jump_size) {
		if (first == 0)
			return refuse(OptimizationRefusal::window_before_function, address);
		--first;
		const Instruction insn = function.instruction(first);
		const uint64_t at = function.address_of(first);
		// Indices follow addresses inside one piece only.
		if (at + insn.length != function.address_of(first + 1))
			return refuse(OptimizationRefusal::window_before_function, address);
		if (const OptimizationRefusal why = window_instruction_refusal(insn, options, false);
		    why != OptimizationRefusal::none)
			return refuse(why, at);
		length += insn.length;
	}
	const uint64_t start = address - (length - exit.length);
	for (size_t index = first; index <= last; ++index) {
		const uint64_t at = function.address_of(index);
		if (function.in_lr_sc_sequence(index))
			return refuse(OptimizationRefusal::lr_sc_sequence, at);
		if (function.has_exception_entry(index))
			return refuse(OptimizationRefusal::exception_entry, at);
		const Instruction insn = function.instruction(index);
		if (insn.kind == InstructionClass::pc_relative && insn.rd != reg::zero)
			plan.relocates = true;
		plan.instructions[plan.count++] = {uint8_t(at - start), insn};
	}
	plan.window_length = uint8_t(length);
	plan.behind = uint8_t(address - start);
	plan.copied = plan.count;
	plan.ends_in_transfer = true;
	if (const uint64_t target = function.target_within(start + 1, address + exit.length))
		return refuse(OptimizationRefusal::jump_into_window, target);

	plan.entry_candidates = ~function.live_before(first) & ~options.forbidden & all_registers;
	if (!plan.entry_candidates)
		return refuse(OptimizationRefusal::no_entry_register, start);
	if (exit.kind == InstructionClass::direct_jump) {
		// A tail call, relocated as a far jump: through a register the
		// callee does not read.
		if (!options.relocate)
			return refuse(OptimizationRefusal::control_flow_in_window, address);
		plan.relocates = true;
		plan.return_candidates =
			~function.live_at_jump_target(address + exit.immediate) & ~options.forbidden & all_registers;
		if (!plan.return_candidates)
			return refuse(OptimizationRefusal::no_return_register, address);
		const RegisterSet both = plan.entry_candidates & plan.return_candidates;
		plan.entry_register = pick_dead_register(both ? both : plan.entry_candidates);
		plan.return_register = pick_dead_register(both ? both : plan.return_candidates);
	} else {
		// A return or a jump through a register: copied as it is.
		plan.entry_register = pick_dead_register(plan.entry_candidates);
	}
	return plan;
}

OptimizationPlan plan_start_anchored(const FunctionAnalysis &function, uint64_t address, const PlanOptions &options);

} // namespace

OptimizationPlan plan_jump_optimization(const FunctionAnalysis &function, uint64_t address, const PlanOptions &options)
{
	const OptimizationPlan plan = plan_start_anchored(function, address, options);
	switch (plan.refusal) {
	case OptimizationRefusal::none:
	case OptimizationRefusal::not_an_instruction:
	case OptimizationRefusal::function_undecodable:
	case OptimizationRefusal::indirect_jump:
	case OptimizationRefusal::out_of_memory:
		return plan;
	default:
		break;
	}
	// At a return, jump or tail call the window from the probe runs past
	// the function, or over code reached only by jumps into it: one that
	// ends with the probe may fit. Its refusal is the one that tells.
	if (!options.end_anchored)
		return plan;
	const long index = function.index_of(address);
	const Instruction probed = function.instruction(size_t(index));
	if (!is_unconditional_transfer(probed) || is_call(probed))
		return plan;
	return plan_end_anchored(function, address, size_t(index), options);
}

namespace {

// Records why plan is refused and where: false, for the steps below.
bool refuse_plan(OptimizationPlan &plan, OptimizationRefusal refusal, uint64_t where)
{
	plan.refusal = refusal;
	plan.refusal_address = where;
	return false;
}

// The window from the probed instruction (first, at address): whole
// instructions covering the 6 bytes of the shorter jump (8 when they
// cover 8), each one the detour may run, and nothing landing inside but
// at its first byte. False when refused.
bool take_start_window(const FunctionAnalysis &function, size_t first, uint64_t address, const PlanOptions &options,
		       OptimizationPlan &plan)
{
	size_t length = 0;
	for (size_t index = first; length < short_jump_size; ++index) {
		if (index >= function.count())
			return refuse_plan(plan, OptimizationRefusal::window_past_function, address + length);
		const Instruction insn = function.instruction(index);
		const uint64_t at = address + length;
		if (const OptimizationRefusal why = window_instruction_refusal(insn, options, true);
		    why != OptimizationRefusal::none)
			return refuse_plan(plan, why, at);
		if (function.in_lr_sc_sequence(index))
			return refuse_plan(plan, OptimizationRefusal::lr_sc_sequence, at);
		if (function.has_exception_entry(index))
			return refuse_plan(plan, OptimizationRefusal::exception_entry, at);
		plan.instructions[plan.count++] = {uint8_t(length), insn};
		length += insn.length;
	}
	plan.window_length = uint8_t(length);
	if (const uint64_t target = function.target_within(address + 1, address + length))
		return refuse_plan(plan, OptimizationRefusal::jump_into_window, target);
	return true;
}

// Where the detour of a window leaves for, and what its relocated call
// needs.
struct WindowExits {
	RegisterSet dead = all_registers; // dead at every place the detour leaves for
	bool any = false;		  // it leaves for some (not only by a return or call)
	bool has_call = false;		  // the copy ends in a call
	RegisterSet call_candidates = 0;  // for the relocated call's jump
};

// What the detour runs of the window and where it leaves for: the copy
// ends after the first jump, return or call; a branch leaves for its
// target, a tail call for its callee, a copy that does not end in a
// transfer for the window's end. False when refused.
bool trace_window_exits(const FunctionAnalysis &function, size_t first, uint64_t address, OptimizationPlan &plan,
			WindowExits &exits)
{
	const auto exit_to = [&](uint64_t target) {
		exits.dead &= ~function.live_at(target);
		exits.any = true;
	};
	for (uint8_t n = 0; n < plan.count; ++n) {
		const Instruction &insn = plan.instructions[n].instruction;
		const uint64_t at = address + plan.instructions[n].offset;
		plan.copied = uint8_t(n + 1);
		if (insn.kind == InstructionClass::pc_relative && insn.rd != reg::zero)
			plan.relocates = true;
		if (insn.kind == InstructionClass::conditional_branch) {
			plan.relocates = true;
			exit_to(at + insn.immediate);
			continue;
		}
		if (!is_unconditional_transfer(insn))
			continue;
		if (is_call(insn)) {
			// The callee returns to the original text after the
			// call: that must be the window's end.
			if (n + 1 != plan.count)
				return refuse_plan(plan, OptimizationRefusal::call_inside_window, at);
			exits.has_call = true;
			const uint8_t call_target_register =
				insn.kind == InstructionClass::indirect_jump ? insn.rs1 : 0;
			plan.relocates = true;
			// The relocated call jumps through a temporary dead at
			// the call: one the callee may clobber (under the
			// psABI every temporary but the call's target; under
			// strict liveness, where a call reads every register,
			// none). Only "jalr ra, off(rs)" with rs not ra needs
			// none.
			exits.call_candidates = temporary_registers & ~function.live_before(first + n);
			if (!exits.call_candidates && (call_target_register == 0 || call_target_register == reg::ra))
				return refuse_plan(plan, OptimizationRefusal::window_not_relocatable, at);
		} else if (insn.kind == InstructionClass::direct_jump) {
			// A tail call's target needs what the callee reads.
			exits.dead &= ~function.live_at_jump_target(at + insn.immediate);
			exits.any = true;
			plan.relocates = true;
		}
		// A return is copied as it is.
		plan.ends_in_transfer = true;
		break;
	}
	if (!plan.ends_in_transfer)
		exit_to(address + plan.window_length);
	return true;
}

// The registers: the entry one dead at the probe, the return one dead
// wherever the detour leaves for (one register for both when possible),
// and the relocated call's. False when refused.
bool choose_window_registers(const FunctionAnalysis &function, size_t first, uint64_t address,
			     const PlanOptions &options, const WindowExits &exits, OptimizationPlan &plan)
{
	plan.entry_candidates = ~function.live_before(first) & ~options.forbidden & all_registers;
	plan.return_candidates = exits.any ? exits.dead & ~options.forbidden & all_registers : 0;
	if (!plan.entry_candidates)
		return refuse_plan(plan, OptimizationRefusal::no_entry_register, address);
	if (exits.any && !plan.return_candidates)
		return refuse_plan(plan, OptimizationRefusal::no_return_register, address + plan.window_length);
	if (exits.any) {
		const RegisterSet both = plan.entry_candidates & plan.return_candidates;
		plan.entry_register = pick_dead_register(both ? both : plan.entry_candidates);
		plan.return_register = pick_dead_register(both ? both : plan.return_candidates);
	} else {
		plan.entry_register = pick_dead_register(plan.entry_candidates);
	}
	if (exits.has_call)
		plan.call_register = (exits.call_candidates & register_bit(plan.return_register))
					     ? plan.return_register
					     : pick_dead_register(exits.call_candidates);
	return true;
}

// The window that starts with the probed instruction: refused on a
// function the analysis cannot vouch for, else taken, traced and given
// its registers.
OptimizationPlan plan_start_anchored(const FunctionAnalysis &function, uint64_t address, const PlanOptions &options)
{
	OptimizationPlan plan;
	const auto refuse = [&plan](OptimizationRefusal refusal, uint64_t where) {
		refuse_plan(plan, refusal, where);
		return plan;
	};
	switch (function.problem()) {
	case FunctionProblem::out_of_memory:
		return refuse(OptimizationRefusal::out_of_memory, address);
	case FunctionProblem::undecodable:
	case FunctionProblem::target_inside:
		return refuse(OptimizationRefusal::function_undecodable, function.problem_address());
	default:
		break;
	}
	const long first = function.index_of(address);
	if (first < 0)
		return refuse(OptimizationRefusal::not_an_instruction, address);
	if (function.problem() == FunctionProblem::indirect_jump)
		return refuse(OptimizationRefusal::indirect_jump, function.problem_address());

	WindowExits exits;
	if (take_start_window(function, size_t(first), address, options, plan) &&
	    trace_window_exits(function, size_t(first), address, plan, exits))
		choose_window_registers(function, size_t(first), address, options, exits, plan);
	return plan;
}

} // namespace

size_t encode_window_jump(const OptimizationPlan &plan, uint64_t address, uint64_t target, uint8_t out[max_window_size])
{
	if (plan.refusal != OptimizationRefusal::none)
		return 0;
	CodeWriter writer(out, max_window_size, address);
	switch (plan.window_length) {
	case long_jump_size:
		writer.far_jump(plan.entry_register, target);
		return writer.length();
	case short_jump_size: {
		const int64_t displacement = int64_t(target - address);
		if (plan.entry_register == 0 || displacement % int64_t(landing_alignment) ||
		    !within_far_reach(displacement))
			return 0;
		writer.put32(encode::auipc(plan.entry_register, int32_t(displacement >> 12)));
		writer.put16(encode::c_jr(plan.entry_register));
		return writer.length();
	}
	default:
		return 0;
	}
}

uint64_t window_jump_register_value(const OptimizationPlan &plan, uint64_t address, uint64_t target)
{
	if (plan.needs_landing())
		return target;
	return target - uint64_t(int64_t(encode::low_part(int64_t(target - address))));
}

size_t relocate_window(const OptimizationPlan &plan, uint64_t address, uint64_t copy_address, uint8_t *out,
		       size_t capacity)
{
	return relocate_instructions(plan, address, 0, plan.copied, !plan.ends_in_transfer, copy_address, out,
				     capacity);
}

size_t relocate_instructions(const OptimizationPlan &plan, uint64_t address, uint8_t first, uint8_t end, bool jump_back,
			     uint64_t copy_address, uint8_t *out, size_t capacity)
{
	if (plan.refusal != OptimizationRefusal::none || end > plan.copied || first >= end)
		return 0;
	CodeWriter writer(out, capacity, copy_address);
	for (uint8_t n = first; n < end; ++n) {
		const Instruction &insn = plan.instructions[n].instruction;
		const uint64_t at = address + plan.instructions[n].offset;
		const uint64_t next = at + insn.length;
		switch (insn.kind) {
		case InstructionClass::pc_relative:
			if (insn.rd == reg::zero)
				writer.copy(insn); // a hint
			else
				writer.materialise(insn.rd, at + insn.immediate);
			break;
		case InstructionClass::conditional_branch:
			// Not taken: skip the far jump (4 + 8 bytes on).
			writer.put32(encode::branch(inverted_branch(insn), insn.rs1, insn.rs2, 12));
			writer.far_jump(plan.return_register, at + insn.immediate);
			break;
		case InstructionClass::direct_jump:
			if (insn.rd == reg::ra)
				writer.materialise(reg::ra, next); // returns to the original text
			writer.far_jump(insn.rd == reg::ra ? plan.call_register : plan.return_register,
					at + insn.immediate);
			break;
		case InstructionClass::indirect_jump: {
			if (insn.rd == reg::zero) {
				writer.copy(insn); // a return
				break;
			}
			unsigned base = insn.rs1;
			int32_t offset = int32_t(insn.immediate);
			if (base == reg::ra) { // the target is computed before ra changes
				if (plan.call_register == 0)
					return 0;
				writer.put32(encode::addi(plan.call_register, reg::ra, offset));
				base = plan.call_register;
				offset = 0;
			}
			writer.materialise(reg::ra, next);
			writer.put32(encode::jalr(reg::zero, base, offset));
			break;
		}
		default:
			writer.copy(insn);
			break;
		}
	}
	if (jump_back)
		writer.jump(plan.return_register, address + plan.window_length);
	return writer.length();
}

} // namespace okp::riscv
