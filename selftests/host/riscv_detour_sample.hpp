// SPDX-License-Identifier: GPL-2.0
// The riscv64 detour tests' sample: a small function at base, the plan of
// a jump at base + 2, and where the detour and what it calls would be.
#pragma once

#include "riscv/function_analysis.hpp"
#include "riscv/jump_optimization.hpp"

#include "riscv_code.hpp"

#include <gtest/gtest.h>

namespace okp::riscv::test {

constexpr uint64_t base = 0xffffffff80100000;
constexpr uint64_t detour = 0xffffffff017a4000;
constexpr uint64_t entry = 0xffffffff017a9a32; // in the module's text
constexpr uint64_t site = 0xffffaf8001234560;  // a kmalloc'd struct

// The plan at +2 of the sample function at base:
// 0: c.li t0, 1; 2: addi a0, a1, -5; 6: addi a0, a0, 1; a: c.li t1, 0;
// c: c.li t0, 0; e: c.jr ra
inline OptimizationPlan sample_plan()
{
	const std::vector<uint8_t> bytes =
		assemble({c(0x4285), i(0xffb58513), i(0x00150513), c(0x4301), c(0x4281), c(0x8082)});
	FunctionAnalysis analysis;
	EXPECT_TRUE(analysis.build({bytes.data(), base, bytes.size()}, nullptr, 0, nullptr, 0));
	return plan_jump_optimization(analysis, base + 2);
}

} // namespace okp::riscv::test
