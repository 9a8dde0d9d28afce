// SPDX-License-Identifier: GPL-2.0
// x86-64's answer to "may a breakpoint go on this instruction?".
#pragma once

#include "core/registration.hpp"
#include "x86/instruction_decoder.hpp"

namespace okp::x86 {

// InstructionRules for x86-64: the offset must be an instruction boundary
// (a linear decode from the function start reaches it), and the
// instruction must be one a breakpoint probe can execute or emulate.
InstructionVerdict probe_rules(const uint8_t *function, size_t size, size_t offset, uint64_t function_address);
// The same, with the boundary already proven (FunctionMap::boundary() of
// the same bytes: the writer decodes a function once for all its probes).
InstructionVerdict probe_rules(Boundary boundary, const uint8_t *function, size_t size, size_t offset,
			       uint64_t function_address);

} // namespace okp::x86
