// SPDX-License-Identifier: GPL-2.0
#include "riscv/detour.hpp"

#include "riscv/code_writer.hpp"

namespace okp::riscv {

size_t build_detour(const OptimizationPlan &plan, uint64_t address, uint64_t detour_address, uint64_t entry,
		    uint64_t context, uint8_t *out, size_t capacity)
{
	if (plan.refusal != OptimizationRefusal::none || (detour_address & 7) || capacity < detour_frame_size)
		return 0;
	// The window's copy first: the frame loads the literal that follows it.
	const size_t copy = relocate_window(plan, address, detour_address + detour_frame_size, out + detour_frame_size,
					    capacity - detour_frame_size);
	if (!copy)
		return 0;
	const size_t literal = (detour_frame_size + copy + 7) & ~size_t(7);

	CodeWriter code(out, capacity, detour_address);
	code.put32(encode::addi(reg::sp, reg::sp, -int32_t(pt_regs_size)));
	for (unsigned n = 1; n < 32; ++n)
		if (n != reg::sp)
			code.put32(encode::sd(n, reg::sp, int32_t(n * 8)));
	code.put32(encode::addi(reg::t0, reg::sp, int32_t(pt_regs_size)));
	code.put32(encode::sd(reg::t0, reg::sp, reg::sp * 8));
	// a0 = the literal: auipc a0, 0; ld a0, (literal - auipc)(a0)
	const size_t literal_load = code.length();
	code.put32(encode::auipc(reg::a0, 0));
	code.put32(encode::ld(reg::a0, reg::a0, int32_t(literal - literal_load)));
	code.put32(encode::addi(reg::a1, reg::sp, 0));
	code.far_jump(reg::ra, entry, reg::ra);
	for (unsigned n = 1; n < 32; ++n)
		if (n != reg::sp)
			code.put32(encode::ld(n, reg::sp, int32_t(n * 8)));
	code.put32(encode::addi(reg::sp, reg::sp, int32_t(pt_regs_size)));
	if (code.length() != detour_frame_size)
		return 0;
	code.skip(copy);
	while (code.length() && code.length() < literal)
		code.put16(encode::c_nop); // never run: the copy ends in a jump
	code.put64(context);
	return code.length();
}

} // namespace okp::riscv
