// SPDX-License-Identifier: GPL-2.0
// riscv64 code written into a buffer that will run at a known address: the
// jump optimizer's relocated windows and the detours around them. Writes
// past capacity or out of reach fail the whole writer (length() 0).
#pragma once

#include "riscv/jump_optimization.hpp"

namespace okp::riscv {

class CodeWriter {
public:
	CodeWriter(uint8_t *out, size_t capacity, uint64_t address) : out_(out), capacity_(capacity), address_(address)
	{}
	uint64_t pc() const { return address_ + length_; }
	size_t length() const { return failed_ ? 0 : length_; }
	bool failed() const { return failed_; }
	void fail() { failed_ = true; }
	void put16(uint16_t value)
	{
		if (length_ + 2 > capacity_) {
			failed_ = true;
			return;
		}
		out_[length_++] = uint8_t(value);
		out_[length_++] = uint8_t(value >> 8);
	}
	void put32(uint32_t value)
	{
		put16(uint16_t(value));
		put16(uint16_t(value >> 16));
	}
	void put64(uint64_t value)
	{
		put32(uint32_t(value));
		put32(uint32_t(value >> 32));
	}
	// Rewrites the 4 bytes at offset, written before (a forward branch
	// once its target is known).
	void patch32(size_t offset, uint32_t value)
	{
		if (failed_)
			return;
		if (offset + 4 > length_) {
			failed_ = true;
			return;
		}
		for (unsigned n = 0; n < 4; ++n)
			out_[offset + n] = uint8_t(value >> (8 * n));
	}
	// Steps over bytes written by someone else.
	void skip(size_t bytes)
	{
		if (length_ + bytes > capacity_)
			failed_ = true;
		else
			length_ += bytes;
	}
	void copy(const Instruction &insn)
	{
		if (insn.length == 2)
			put16(uint16_t(insn.raw));
		else
			put32(insn.raw);
	}
	// rd = value: absolute (lui + addi) when value is a sign-extended
	// 32-bit address, as kernel and module text and data are on riscv64
	// (then the detour's distance does not matter), else PC-relative.
	void materialise(unsigned rd, uint64_t value)
	{
		if (within_far_reach(int64_t(value))) {
			put32(encode::lui(rd, encode::high_part(int64_t(value))));
			put32(encode::addi(rd, rd, encode::low_part(int64_t(value))));
			return;
		}
		const int64_t displacement = int64_t(value - pc());
		if (!within_far_reach(displacement))
			return fail();
		put32(encode::auipc(rd, encode::high_part(displacement)));
		put32(encode::addi(rd, rd, encode::low_part(displacement)));
	}
	// auipc tmp, hi; jalr link, lo(tmp): a jump, or with link a call
	void far_jump(unsigned tmp, uint64_t target, unsigned link = reg::zero)
	{
		const int64_t displacement = int64_t(target - pc());
		if (tmp == 0 || !within_far_reach(displacement))
			return fail();
		put32(encode::auipc(tmp, encode::high_part(displacement)));
		put32(encode::jalr(link, tmp, encode::low_part(displacement)));
	}

	// A jump (no link) to target: one jal where it reaches (+-1 MiB, as
	// between a module's text and a detour page near it), else far_jump
	// through tmp.
	void jump(unsigned tmp, uint64_t target)
	{
		const int64_t displacement = int64_t(target - pc());
		if (displacement >= -(int64_t(1) << 20) && displacement < (int64_t(1) << 20) && !(displacement & 1))
			return put32(encode::jal(reg::zero, int32_t(displacement)));
		far_jump(tmp, target);
	}

private:
	uint8_t *out_;
	size_t capacity_, length_ = 0;
	uint64_t address_;
	bool failed_ = false;
};

} // namespace okp::riscv
