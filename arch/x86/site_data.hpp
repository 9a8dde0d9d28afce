// SPDX-License-Identifier: GPL-2.0
// x86-64's value types for the generic engine (core/arch_port.hpp): what a
// Site holds of the arch, by value.
#pragma once

#include "x86/instruction_analysis.hpp"
#include "x86/jump_optimization.hpp"
#include "x86/out_of_line.hpp"

namespace okp::arch {

using Registers = x86::Registers;

struct SiteData {
	x86::Analysis analysis;
	// Two copies of the instruction (boosted, then trapping); 0 for an
	// emulated instruction.
	uint64_t slot = 0;
	// The jump's plan, when plan_jump allowed one, and the original bytes
	// of its region (up to 4 + 15).
	x86::OptimizationPlan plan;
	// The status flags are dead at the probe (a counting detour's incq
	// needs no pushfq/popfq around it).
	bool flags_dead = false;
	// And CF too: an argument-only detour's handler call clobbers them all.
	bool call_flags_dead = false;
	uint8_t region[x86::jump_size - 1 + x86::max_instruction_length] = {};
};

} // namespace okp::arch
