// SPDX-License-Identifier: GPL-2.0
#include "x86/out_of_line.hpp"

#include "core/handler_path.hpp"

namespace okp::x86 {
namespace {

bool fits_rel32(int64_t value)
{
	return value >= -2147483648LL && value <= 2147483647LL;
}

void put_le32(uint8_t *where, uint32_t value)
{
	for (int i = 0; i < 4; ++i)
		where[i] = static_cast<uint8_t>(value >> (8 * i));
}

void push(Registers &regs, const StackAccess &stack, uint64_t value)
{
	regs.sp -= 8;
	stack.write(regs.sp, value);
}

uint64_t pop(Registers &regs, const StackAccess &stack)
{
	const uint64_t value = stack.read(regs.sp);
	regs.sp += 8;
	return value;
}

bool transfer_taken(const Analysis &analysis, Registers &regs)
{
	switch (analysis.condition) {
	case Condition::always:
		return true;
	case Condition::flags:
		return condition_holds(analysis.condition_code, regs.flags);
	case Condition::loop:
		return --regs.cx != 0;
	case Condition::loope:
		return --regs.cx != 0 && (regs.flags & flag::zero);
	case Condition::loopne:
		return --regs.cx != 0 && !(regs.flags & flag::zero);
	case Condition::jrcxz:
		return regs.cx == 0;
	}
	return false;
}

} // namespace

OKP_HANDLER_PATH uint64_t &register_by_number(Registers &regs, unsigned number)
{
	uint64_t *const by_number[16] = {&regs.ax,  &regs.cx,  &regs.dx,  &regs.bx, &regs.sp,  &regs.bp,
					 &regs.si,  &regs.di,  &regs.r8,  &regs.r9, &regs.r10, &regs.r11,
					 &regs.r12, &regs.r13, &regs.r14, &regs.r15};
	return *by_number[number & 15];
}

OKP_HANDLER_PATH bool condition_holds(uint8_t code, uint64_t flags)
{
	const bool carry = flags & flag::carry, zero = flags & flag::zero;
	const bool sign = flags & flag::sign, overflow = flags & flag::overflow;
	const bool parity = flags & flag::parity;
	bool holds = false;
	switch ((code >> 1) & 7) {
	case 0: // o
		holds = overflow;
		break;
	case 1: // b
		holds = carry;
		break;
	case 2: // e
		holds = zero;
		break;
	case 3: // be
		holds = carry || zero;
		break;
	case 4: // s
		holds = sign;
		break;
	case 5: // p
		holds = parity;
		break;
	case 6: // l
		holds = sign != overflow;
		break;
	case 7: // le
		holds = zero || sign != overflow;
		break;
	}
	return (code & 1) ? !holds : holds; // odd codes negate
}

OKP_HANDLER_PATH void emulate(const Analysis &analysis, uint64_t address, Registers &regs, const StackAccess &stack)
{
	const uint64_t next = address + analysis.length;
	regs.ip = next;

	switch (analysis.flag_operation) {
	case FlagOperation::none:
		break;
	case FlagOperation::pushf:
		push(regs, stack, regs.flags & ~(flag::resume | flag::virtual_8086));
		return;
	case FlagOperation::popf:
		regs.flags = (regs.flags & ~flag::popf_writable) | (pop(regs, stack) & flag::popf_writable);
		return;
	case FlagOperation::cli:
		regs.flags &= ~flag::interrupt;
		return;
	case FlagOperation::sti:
		regs.flags |= flag::interrupt;
		return;
	}

	if (!transfer_taken(analysis, regs))
		return;
	switch (analysis.transfer) {
	case Transfer::none:
		break;
	case Transfer::jump:
		regs.ip = analysis.target;
		break;
	case Transfer::call:
		push(regs, stack, next);
		regs.ip = analysis.target;
		break;
	case Transfer::ret:
		regs.ip = pop(regs, stack);
		regs.sp += analysis.ret_pop;
		break;
	case Transfer::jump_register:
		regs.ip = register_by_number(regs, analysis.reg);
		break;
	case Transfer::call_register: {
		// The target is read before the push: call *%rsp uses the old sp.
		const uint64_t target = register_by_number(regs, analysis.reg);
		push(regs, stack, next);
		regs.ip = target;
		break;
	}
	}
}

size_t build_slot(const Analysis &analysis, const uint8_t *instruction, uint64_t address, uint64_t slot_address,
		  SlotEnd end, uint8_t (&slot)[slot_size])
{
	const size_t length = analysis.length;
	for (size_t i = 0; i < slot_size; ++i)
		slot[i] = 0xcc; // anything past the end traps
	for (size_t i = 0; i < length; ++i)
		slot[i] = instruction[i];

	if (analysis.execution == Execution::copy_rip_relative) {
		const int64_t displacement = static_cast<int64_t>(analysis.target - (slot_address + length));
		if (!fits_rel32(displacement))
			return 0;
		put_le32(slot + analysis.disp_offset, static_cast<uint32_t>(displacement));
	}
	if (end == SlotEnd::breakpoint)
		return length + 1;

	const int64_t back = static_cast<int64_t>((address + length) - (slot_address + length + 5));
	if (!fits_rel32(back))
		return 0;
	slot[length] = 0xe9;
	put_le32(slot + length + 1, static_cast<uint32_t>(back));
	return length + 5;
}

} // namespace okp::x86
