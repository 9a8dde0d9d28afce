// SPDX-License-Identifier: GPL-2.0
// The fake architecture's value types for the generic engine's host tests
// (probe_table_test.cpp defines its hooks): one-byte instructions in a fake
// text, a program counter and an interrupt flag, and registers for an
// argument-only probe's record (its event_register_layout()).
#pragma once

#include <stdint.h>

namespace okp::arch {

struct Registers {
	uint64_t pc;
	uint64_t interrupts; // 1: enabled in the context the trap returns to
	uint64_t arguments[8] = {};
	uint64_t stack_pointer = 0;
	uint64_t return_value = 0;
};

struct SiteData {
	// Where the fake slot's copies are (0: emulated, as x86's emulated
	// instructions and riscv's simulated ones).
	uint64_t slot = 0;
	bool boosted = true; // false: as riscv's sites without a way back
};

} // namespace okp::arch
