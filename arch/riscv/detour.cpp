// SPDX-License-Identifier: GPL-2.0
#include "riscv/detour.hpp"

#include "riscv/code_writer.hpp"

namespace okp::riscv {

namespace {

// A detour's layout: a frame of frame_size bytes, the window's copy behind
// it (written first: the frame loads the literal that follows it), then
// the 8-byte literal, aligned.
struct Layout {
	size_t frame, copy, literal;
};

// Writes plan's window copy, from its instruction first on, behind the
// frame (the frame at detour_address, out); false when it cannot. The
// layout's offsets are from the frame. The literal is 8-byte aligned in
// memory.
bool relocate_behind(const OptimizationPlan &plan, uint64_t address, uint8_t first, uint64_t detour_address,
		     size_t frame_size, uint8_t *out, size_t capacity, Layout &layout)
{
	if (plan.refusal != OptimizationRefusal::none || (detour_address & 1) || capacity < frame_size)
		return false;
	layout.frame = frame_size;
	layout.copy = relocate_instructions(plan, address, first, plan.copied, !plan.ends_in_transfer,
					    detour_address + frame_size, out + frame_size, capacity - frame_size);
	const uint64_t literal = (detour_address + frame_size + layout.copy + 7) & ~uint64_t(7);
	layout.literal = size_t(literal - detour_address);
	return layout.copy != 0;
}

// After the frame: the copy, never-run nops up to the literal, the
// literal. The detour's length, or 0 when the frame came out another size
// or something did not fit.
size_t finish_detour(CodeWriter &code, const Layout &layout, uint64_t literal)
{
	if (code.length() != layout.frame)
		return 0;
	code.skip(layout.copy);
	while (code.length() && code.length() < layout.literal)
		code.put16(encode::c_nop); // never run: the copy ends in a jump
	code.put64(literal);
	return code.length();
}

// An end-anchored window's instructions before the probed one run first,
// ahead of the frame: their copy at the detour's start, its length in
// prefix (0 for another window). False when the plan or the detour's
// alignment refuses, or the copy does not fit.
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

} // namespace

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

namespace {

// The temporaries an argument-only detour saves above the record, with ra.
constexpr uint8_t args_saved[] = {reg::ra, reg::t0,	reg::t0 + 1, reg::t0 + 2,
				  reg::t3, reg::t3 + 1, reg::t3 + 2, reg::t3 + 3};
static_assert(args_record_size + sizeof(args_saved) * 8 == args_frame_bytes);

} // namespace

size_t build_args_detour(const OptimizationPlan &plan, uint64_t address, uint64_t detour_address, const ArgsCall &call,
			 uint8_t *out, size_t capacity, size_t *copy_offset)
{
	const uint8_t before = plan.before_frame();
	size_t prefix = 0;
	if (!relocate_prefix(plan, address, detour_address, out, capacity, prefix))
		return 0;
	Layout layout;
	if (capacity < prefix + 8 ||
	    !relocate_behind(plan, address, before, detour_address + prefix, args_detour_frame_size, out + prefix,
			     capacity - prefix - 8, layout))
		return 0;
	const int32_t frame = int32_t(args_frame_bytes);
	CodeWriter code(out + prefix, capacity - prefix, detour_address + prefix);
	code.put32(encode::addi(reg::sp, reg::sp, -frame));
	for (unsigned n = 0; n < 8; ++n)
		code.put32(encode::sd(reg::a0 + n, reg::sp, int32_t(n * 8)));
	for (unsigned n = 0; n < sizeof(args_saved); ++n)
		code.put32(encode::sd(args_saved[n], reg::sp, int32_t(args_record_size + n * 8)));
	code.put32(encode::addi(reg::t0, reg::sp, frame));
	code.put32(encode::sd(reg::t0, reg::sp, 9 * 8));
	// The literals: the context, then the probed address.
	const size_t literal_load = code.length();
	code.put32(encode::auipc(reg::a0, 0));
	code.put32(encode::ld(reg::a1, reg::a0, int32_t(layout.literal + 8 - literal_load)));
	code.put32(encode::sd(reg::a1, reg::sp, 8 * 8));
	code.put32(encode::ld(reg::a0, reg::a0, int32_t(layout.literal - literal_load)));
	code.put32(encode::addi(reg::a1, reg::sp, 0));
	code.far_jump(reg::ra, call.entry, reg::ra);
	for (unsigned n = 0; n < 8; ++n)
		code.put32(encode::ld(reg::a0 + n, reg::sp, int32_t(n * 8)));
	for (unsigned n = 0; n < sizeof(args_saved); ++n)
		code.put32(encode::ld(args_saved[n], reg::sp, int32_t(args_record_size + n * 8)));
	code.put32(encode::addi(reg::sp, reg::sp, frame));
	if (!finish_detour(code, layout, call.context))
		return 0;
	code.put64(call.probed);
	const size_t length = code.length();
	if (!length)
		return 0;
	if (copy_offset)
		*copy_offset = prefix + args_detour_frame_size;
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
