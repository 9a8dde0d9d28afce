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

namespace {

uint32_t lw(unsigned destination, unsigned base, int32_t offset)
{
	return ((uint32_t(offset) & 0xfff) << 20) | (base << 15) | (2u << 12) | (destination << 7) | 0x03;
}

uint32_t slli(unsigned rd, unsigned rs1, unsigned shift)
{
	return ((shift & 0x3f) << 20) | (rs1 << 15) | (1u << 12) | (rd << 7) | 0x13;
}

uint32_t add(unsigned rd, unsigned rs1, unsigned rs2)
{
	return (rs2 << 20) | (rs1 << 15) | (rd << 7) | 0x33;
}

// amoadd.d rd, rs2, (rs1)
uint32_t amoadd_d(unsigned rd, unsigned rs2, unsigned rs1)
{
	return (rs2 << 20) | (rs1 << 15) | (3u << 12) | (rd << 7) | 0x2f;
}

} // namespace

unsigned counting_second_register(const OptimizationPlan &plan)
{
	constexpr uint8_t preference[] = {6, 7, 28, 29, 30, 31, 17, 16, 15, 14, 13, 12, 11, 10, 5};
	for (uint8_t n : preference)
		if (n != plan.entry_register && (plan.entry_candidates & register_bit(n)))
			return n;
	return 0;
}

size_t build_counting_detour(const OptimizationPlan &plan, uint64_t address, uint64_t detour_address,
			     const CounterCall &counter, uint8_t *out, size_t capacity)
{
	const unsigned entry = plan.entry_register, second = counting_second_register(plan);
	if (plan.refusal != OptimizationRefusal::none || (detour_address & 7) || !entry || !second ||
	    capacity < counting_prologue_size || counter.cpu_offset < -2048 || counter.cpu_offset > 2047)
		return 0;
	const size_t copy = relocate_window(plan, address, detour_address + counting_prologue_size,
					    out + counting_prologue_size, capacity - counting_prologue_size);
	if (!copy)
		return 0;
	const size_t literal = (counting_prologue_size + copy + 7) & ~size_t(7);
	CodeWriter code(out, capacity, detour_address);
	code.put32(lw(second, reg::tp, counter.cpu_offset));
	code.put32(slli(second, second, counter.stride_shift));
	const size_t literal_load = code.length();
	code.put32(encode::auipc(entry, 0));
	code.put32(encode::ld(entry, entry, int32_t(literal - literal_load)));
	code.put32(add(entry, entry, second));
	code.put32(encode::addi(second, reg::zero, 1));
	code.put32(amoadd_d(reg::zero, second, entry));
	if (code.length() != counting_prologue_size)
		return 0;
	code.skip(copy);
	while (code.length() && code.length() < literal)
		code.put16(encode::c_nop); // never run: the copy ends in a jump
	code.put64(counter.cells);
	return code.length() == literal + 8 ? code.length() : 0;
}

} // namespace okp::riscv
