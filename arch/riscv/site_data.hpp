// SPDX-License-Identifier: GPL-2.0
// riscv64's value types for the generic engine (core/arch_port.hpp): what a
// Site holds of the arch, by value.
#pragma once

#include "riscv/instruction_decoder.hpp"
#include "riscv/jump_optimization.hpp"
#include "riscv/out_of_line.hpp"

namespace okp::arch {

using Registers = riscv::Registers;

struct SiteData {
	riscv::Instruction instruction;
	bool simulated = false;
	// Two copies of the instruction (boosted, then trapping); 0 for a
	// simulated instruction.
	uint64_t slot = 0;
	// The slot's first half jumps back by itself: a hit without
	// post_handlers does not trap again.
	bool boosted = false;
	// The jump's plan, when plan_jump allowed one.
	riscv::OptimizationPlan plan;
};

} // namespace okp::arch
