// SPDX-License-Identifier: GPL-2.0
// x86-64's answer to "may a breakpoint go on this instruction?".
#pragma once

#include "core/registration.hpp"

namespace okp::x86 {

// InstructionRules for x86-64: the offset must be an instruction boundary
// (a linear decode from the function start reaches it), and the
// instruction must be one a breakpoint probe can execute or emulate.
InstructionVerdict probe_rules(const uint8_t *function, size_t size, size_t offset, uint64_t function_address);

} // namespace okp::x86
