// SPDX-License-Identifier: GPL-2.0
#include "riscv/detour.hpp"

#include "riscv/code_writer.hpp"
#include "riscv/detour_layout.hpp"

namespace okp::riscv {

bool relocate_behind(const OptimizationPlan &plan, uint64_t address, uint8_t first, uint64_t detour_address,
		     size_t frame_size, uint8_t *out, size_t capacity, Layout &layout, size_t tail_size)
{
	if (plan.refusal != OptimizationRefusal::none || (detour_address & 1) || capacity < frame_size)
		return false;
	layout.frame = frame_size;
	layout.copy = relocate_instructions(plan, address, first, plan.copied, !plan.ends_in_transfer,
					    detour_address + frame_size, out + frame_size, capacity - frame_size);
	layout.tail = frame_size + layout.copy;
	// The literals 8-byte aligned in memory.
	const uint64_t literal = (detour_address + layout.tail + tail_size + 7) & ~uint64_t(7);
	layout.literal = size_t(literal - detour_address);
	return layout.copy != 0;
}

bool skip_to_tail(CodeWriter &code, const Layout &layout)
{
	if (code.length() != layout.frame)
		return false;
	code.skip(layout.copy);
	return code.length() != 0;
}

size_t finish_literals(CodeWriter &code, const Layout &layout, uint64_t literal)
{
	if (code.length() > layout.literal)
		return 0;
	while (code.length() && code.length() < layout.literal)
		code.put16(encode::c_nop); // never run: the copy ends in a jump
	code.put64(literal);
	return code.length();
}

size_t finish_detour(CodeWriter &code, const Layout &layout, uint64_t literal)
{
	return skip_to_tail(code, layout) ? finish_literals(code, layout, literal) : 0;
}

bool relocate_prefix(const OptimizationPlan &plan, uint64_t address, uint64_t detour_address, uint8_t *out,
		     size_t capacity, size_t &prefix)
{
	const uint8_t before = plan.before_frame();
	prefix = 0;
	if (plan.refusal != OptimizationRefusal::none || (detour_address & 7))
		return false;
	if (before)
		prefix = relocate_instructions(plan, address, 0, before, false, detour_address, out, capacity);
	return !before || prefix;
}

size_t build_detour(const OptimizationPlan &plan, uint64_t address, uint64_t detour_address, uint64_t entry,
		    uint64_t context, uint8_t *out, size_t capacity, size_t *copy_offset)
{
	const uint8_t before = plan.before_frame();
	size_t prefix = 0;
	if (!relocate_prefix(plan, address, detour_address, out, capacity, prefix))
		return 0;
	Layout layout;
	if (!relocate_behind(plan, address, before, detour_address + prefix, detour_frame_size, out + prefix,
			     capacity - prefix, layout))
		return 0;
	CodeWriter code(out + prefix, capacity - prefix, detour_address + prefix);
	code.put32(encode::addi(reg::sp, reg::sp, -int32_t(pt_regs_size)));
	for (unsigned n = 1; n < 32; ++n)
		if (n != reg::sp)
			code.put32(encode::sd(n, reg::sp, int32_t(n * 8)));
	code.put32(encode::addi(reg::t0, reg::sp, int32_t(pt_regs_size)));
	code.put32(encode::sd(reg::t0, reg::sp, reg::sp * 8));
	// a0 = the literal: auipc a0, 0; ld a0, (literal - auipc)(a0)
	const size_t literal_load = code.length();
	code.put32(encode::auipc(reg::a0, 0));
	code.put32(encode::ld(reg::a0, reg::a0, int32_t(layout.literal - literal_load)));
	code.put32(encode::addi(reg::a1, reg::sp, 0));
	code.far_jump(reg::ra, entry, reg::ra);
	for (unsigned n = 1; n < 32; ++n)
		if (n != reg::sp)
			code.put32(encode::ld(n, reg::sp, int32_t(n * 8)));
	code.put32(encode::addi(reg::sp, reg::sp, int32_t(pt_regs_size)));
	const size_t length = finish_detour(code, layout, context);
	if (!length)
		return 0;
	if (copy_offset)
		*copy_offset = prefix + detour_frame_size;
	return prefix + length;
}

unsigned counting_second_register(const OptimizationPlan &plan)
{
	return pick_dead_register(plan.entry_candidates & ~register_bit(plan.entry_register));
}

namespace {

// The counting detour with the literal found from E's value on arrival
// (short) or by an auipc of its own; 0 when the short one cannot reach.
size_t build_counting(const OptimizationPlan &plan, uint64_t address, uint64_t detour_address,
		      const CounterCall &counter, uint8_t *out, size_t capacity, bool short_prologue)
{
	const unsigned entry = plan.entry_register, second = counting_second_register(plan);
	const size_t prologue = short_prologue ? short_counting_prologue_size : counting_prologue_size;
	Layout layout;
	if (!entry || !second || counter.cpu_offset < -2048 || counter.cpu_offset > 2047 ||
	    (short_prologue && !counter.arrival) || plan.behind || (detour_address & 7) ||
	    !relocate_behind(plan, address, 0, detour_address, prologue, out, capacity, layout))
		return 0;
	CodeWriter code(out, capacity, detour_address);
	code.put32(encode::lw(second, reg::tp, counter.cpu_offset));
	code.put32(encode::slli(second, second, counter.stride_shift));
	if (short_prologue) {
		const int64_t reach = int64_t(detour_address + layout.literal - counter.arrival);
		if (reach < -2048 || reach > 2047)
			return 0;
		code.put32(encode::ld(entry, entry, int32_t(reach)));
	} else {
		const size_t literal_load = code.length();
		code.put32(encode::auipc(entry, 0));
		code.put32(encode::ld(entry, entry, int32_t(layout.literal - literal_load)));
	}
	code.put32(encode::add(entry, entry, second));
	code.put32(encode::addi(second, reg::zero, 1));
	code.put32(encode::amoadd_d(reg::zero, second, entry));
	return finish_detour(code, layout, counter.cells);
}

} // namespace

size_t build_counting_detour(const OptimizationPlan &plan, uint64_t address, uint64_t detour_address,
			     const CounterCall &counter, uint8_t *out, size_t capacity, size_t *prologue)
{
	const bool attempts[] = {true, false};
	for (const bool short_prologue : attempts) {
		const size_t length =
			build_counting(plan, address, detour_address, counter, out, capacity, short_prologue);
		if (length) {
			*prologue = short_prologue ? short_counting_prologue_size : counting_prologue_size;
			return length;
		}
	}
	return 0;
}

} // namespace okp::riscv
