// SPDX-License-Identifier: GPL-2.0
#include "riscv/detour.hpp"

namespace okp::riscv {
namespace {

constexpr unsigned a1 = 11; // the entry's second argument

uint32_t store_double(unsigned source, unsigned base, int32_t offset)
{
	const uint32_t o = uint32_t(offset) & 0xfff;
	return ((o >> 5) << 25) | (source << 20) | (base << 15) | (3u << 12) | ((o & 0x1f) << 7) | 0x23;
}

uint32_t load_double(unsigned destination, unsigned base, int32_t offset)
{
	return ((uint32_t(offset) & 0xfff) << 20) | (base << 15) | (3u << 12) | (destination << 7) | 0x03;
}

class Out {
public:
	Out(uint8_t *out, size_t capacity) : out_(out), capacity_(capacity) {}
	size_t length() const { return length_; }
	bool failed() const { return failed_; }
	void put32(uint32_t value)
	{
		if (length_ + 4 > capacity_) {
			failed_ = true;
			return;
		}
		for (int i = 0; i < 4; ++i)
			out_[length_++] = uint8_t(value >> (8 * i));
	}
	void put64(uint64_t value)
	{
		put32(uint32_t(value));
		put32(uint32_t(value >> 32));
	}
	void skip(size_t bytes)
	{
		if (length_ + bytes > capacity_)
			failed_ = true;
		else
			length_ += bytes;
	}

private:
	uint8_t *out_;
	size_t capacity_, length_ = 0;
	bool failed_ = false;
};

} // namespace

size_t build_detour(const OptimizationPlan &plan, uint64_t address, uint64_t detour_address, uint64_t entry,
		    uint64_t context, uint8_t *out, size_t capacity)
{
	if (plan.refusal != OptimizationRefusal::none || (detour_address & 7))
		return 0;
	Out code(out, capacity);
	code.put32(encode::addi(reg::sp, reg::sp, -int32_t(pt_regs_size)));
	for (unsigned n = 1; n < 32; ++n)
		if (n != reg::sp)
			code.put32(store_double(n, reg::sp, int32_t(n * 8)));
	code.put32(encode::addi(reg::t0, reg::sp, int32_t(pt_regs_size)));
	code.put32(store_double(reg::t0, reg::sp, reg::sp * 8));
	// a0 = the literal; its offset is known once the copy's length is.
	const size_t literal_load = code.length();
	code.skip(8);
	code.put32(encode::addi(a1, reg::sp, 0));
	const int64_t to_entry = int64_t(entry - (detour_address + code.length()));
	if (!within_far_reach(to_entry))
		return 0;
	code.put32(encode::auipc(reg::ra, encode::high_part(to_entry)));
	code.put32(encode::jalr(reg::ra, reg::ra, encode::low_part(to_entry)));
	for (unsigned n = 1; n < 32; ++n)
		if (n != reg::sp)
			code.put32(load_double(n, reg::sp, int32_t(n * 8)));
	code.put32(encode::addi(reg::sp, reg::sp, int32_t(pt_regs_size)));
	if (code.failed() || code.length() != detour_frame_size)
		return 0;

	const size_t copy = relocate_window(plan, address, detour_address + detour_frame_size, out + detour_frame_size,
					    capacity - detour_frame_size);
	if (!copy)
		return 0;
	Out tail(out + detour_frame_size + copy, capacity - detour_frame_size - copy);
	const size_t literal = (detour_frame_size + copy + 7) & ~size_t(7);
	tail.skip(literal - detour_frame_size - copy);
	tail.put64(context);
	if (tail.failed())
		return 0;
	for (size_t at = detour_frame_size + copy; at < literal; at += 2) {
		out[at] = uint8_t(encode::c_nop); // never run: the copy ends in a jump
		out[at + 1] = uint8_t(encode::c_nop >> 8);
	}
	// auipc a0, 0; ld a0, (literal - auipc)(a0)
	Out load(out + literal_load, 8);
	load.put32(encode::auipc(reg::a0, 0));
	load.put32(load_double(reg::a0, reg::a0, int32_t(literal - literal_load)));
	return literal + 8;
}

} // namespace okp::riscv
