// SPDX-License-Identifier: GPL-2.0
// Emulation and out-of-line slots, checked against the CPU itself: jcc
// conditions and rebased slots run as real machine code on the host.
#include "x86/out_of_line.hpp"

#include "code_page.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <sys/mman.h>
#include <vector>

namespace {

using namespace okp::x86;

constexpr uint64_t at = 0xffffffff81000000;

// ---- Conditions -----------------------------------------------------------

TEST(X86OutOfLine, ConditionsMatchTheCpu)
{
	CodePage page;
	ASSERT_TRUE(page.ok());
	const uint64_t bits[] = {flag::carry, flag::parity, flag::zero, flag::sign, flag::overflow};
	for (unsigned code = 0; code < 16; ++code) {
		for (unsigned combination = 0; combination < 32; ++combination) {
			uint32_t flags = 0x2; // bit 1 is always set
			for (int b = 0; b < 5; ++b)
				if (combination & (1u << b))
					flags |= static_cast<uint32_t>(bits[b]);
			// push $flags; popf; jcc taken; xor %eax,%eax; ret; taken: mov $1,%eax; ret
			page.put(0, {0x68,
				     uint8_t(flags),
				     uint8_t(flags >> 8),
				     0,
				     0,
				     0x9d,
				     0x0f,
				     uint8_t(0x80 | code),
				     3,
				     0,
				     0,
				     0,
				     0x31,
				     0xc0,
				     0xc3,
				     0xb8,
				     1,
				     0,
				     0,
				     0,
				     0xc3});
			EXPECT_EQ(page.call(0) == 1, condition_holds(code, flags))
				<< "condition " << code << " flags " << std::hex << flags;
		}
	}
}

// ---- Emulation ------------------------------------------------------------

std::map<uint64_t, uint64_t> *memory;
void write_memory(uint64_t address, uint64_t value)
{
	(*memory)[address] = value;
}
uint64_t read_memory(uint64_t address)
{
	return (*memory)[address];
}
const StackAccess stack = {write_memory, read_memory};

class Emulation : public ::testing::Test {
protected:
	void SetUp() override
	{
		memory = &stack_memory;
		regs.sp = 0x10000;
		regs.flags = 0x246; // IF, ZF, PF
	}
	Analysis analysis(std::vector<uint8_t> bytes)
	{
		Thunks thunks;
		thunks.return_thunk = 0xffffffff82000000;
		thunks.indirect_thunk[11] = 0xffffffff82000100;
		return analyze_instruction(bytes.data(), bytes.size(), at, thunks);
	}
	std::map<uint64_t, uint64_t> stack_memory;
	Registers regs = {};
};

TEST_F(Emulation, JumpsAndConditionalJumps)
{
	emulate(analysis({0xeb, 0x10}), at, regs, stack);
	EXPECT_EQ(regs.ip, at + 0x12);
	emulate(analysis({0x74, 0x10}), at, regs, stack); // je, ZF set: taken
	EXPECT_EQ(regs.ip, at + 0x12);
	emulate(analysis({0x75, 0x10}), at, regs, stack); // jne: not taken
	EXPECT_EQ(regs.ip, at + 2);
	EXPECT_EQ(regs.sp, 0x10000u);
}

TEST_F(Emulation, CallPushesTheReturnAddress)
{
	emulate(analysis({0xe8, 0x00, 0x01, 0x00, 0x00}), at, regs, stack);
	EXPECT_EQ(regs.ip, at + 5 + 0x100);
	EXPECT_EQ(regs.sp, 0x10000u - 8);
	EXPECT_EQ(stack_memory[0x10000 - 8], at + 5);
}

TEST_F(Emulation, ThunkCallUsesTheRegister)
{
	regs.r11 = 0xffffffff81234567;
	// cs call __x86_indirect_thunk_r11 at `at`: rel32 = thunk - (at + 6)
	const uint32_t rel = static_cast<uint32_t>(0xffffffff82000100 - (at + 6));
	emulate(analysis({0x2e, 0xe8, uint8_t(rel), uint8_t(rel >> 8), uint8_t(rel >> 16), uint8_t(rel >> 24)}), at,
		regs, stack);
	EXPECT_EQ(regs.ip, 0xffffffff81234567u);
	EXPECT_EQ(stack_memory[regs.sp], at + 6);
}

TEST_F(Emulation, CallThroughStackPointerUsesTheOldValue)
{
	emulate(analysis({0xff, 0xd4}), at, regs, stack); // call *%rsp
	EXPECT_EQ(regs.ip, 0x10000u);
	EXPECT_EQ(regs.sp, 0x10000u - 8);
}

TEST_F(Emulation, ReturnsPopTheReturnAddress)
{
	stack_memory[0x10000] = 0xffffffff81abcdef;
	emulate(analysis({0xc2, 0x10, 0x00}), at, regs, stack); // ret $0x10
	EXPECT_EQ(regs.ip, 0xffffffff81abcdefu);
	EXPECT_EQ(regs.sp, 0x10000u + 8 + 0x10);

	regs.sp = 0x10000;
	const uint32_t rel = static_cast<uint32_t>(0xffffffff82000000 - (at + 5));
	emulate(analysis({0xe9, uint8_t(rel), uint8_t(rel >> 8), uint8_t(rel >> 16), uint8_t(rel >> 24)}), at, regs,
		stack); // jmp __x86_return_thunk
	EXPECT_EQ(regs.ip, 0xffffffff81abcdefu);
	EXPECT_EQ(regs.sp, 0x10008u);
}

TEST_F(Emulation, Loops)
{
	regs.cx = 2;
	emulate(analysis({0xe2, 0xfe}), at, regs, stack); // loop .
	EXPECT_EQ(regs.cx, 1u);
	EXPECT_EQ(regs.ip, at);
	emulate(analysis({0xe2, 0xfe}), at, regs, stack);
	EXPECT_EQ(regs.cx, 0u);
	EXPECT_EQ(regs.ip, at + 2);
	emulate(analysis({0xe3, 0x05}), at, regs, stack); // jrcxz
	EXPECT_EQ(regs.ip, at + 7);
	regs.cx = 5;
	regs.flags &= ~flag::zero;
	emulate(analysis({0xe1, 0x05}), at, regs, stack); // loope, ZF clear: not taken
	EXPECT_EQ(regs.cx, 4u);
	EXPECT_EQ(regs.ip, at + 2);
}

TEST_F(Emulation, FlagInstructions)
{
	emulate(analysis({0xfa}), at, regs, stack); // cli
	EXPECT_FALSE(regs.flags & flag::interrupt);
	EXPECT_EQ(regs.ip, at + 1);
	emulate(analysis({0xfb}), at, regs, stack); // sti
	EXPECT_TRUE(regs.flags & flag::interrupt);

	regs.flags |= flag::resume;
	emulate(analysis({0x9c}), at, regs, stack); // pushf
	EXPECT_EQ(regs.sp, 0x10000u - 8);
	EXPECT_EQ(stack_memory[regs.sp], 0x246u); // RF is not pushed

	stack_memory[regs.sp] = 0x2 | flag::carry | flag::virtual_8086; // VM is not writable
	emulate(analysis({0x9d}), at, regs, stack);			// popf
	EXPECT_EQ(regs.sp, 0x10000u);
	EXPECT_EQ(regs.flags, 0x2u | flag::carry | flag::resume);
}

// ---- Slots run on the CPU ---------------------------------------------------

// The "kernel" instruction sits on page 0 followed by ret; its slot is
// built on page 1 and called as a function: the slot runs the copy and jumps
// back to the ret, so the function returns what the instruction computed.
class Slot : public ::testing::Test {
protected:
	uint64_t run_slot(std::vector<uint8_t> instruction)
	{
		page.put(0, instruction);
		page.put(instruction.size(), {0xc3});
		const Analysis a = analyze_instruction(page.at(0), 15, page.address(0), Thunks{});
		EXPECT_NE(a.execution, Execution::refuse);
		uint8_t slot[slot_size];
		const size_t length =
			build_slot(a, page.at(0), page.address(0), page.address(4096), SlotEnd::jump_back, slot);
		EXPECT_EQ(length, instruction.size() + 5);
		memcpy(page.at(4096), slot, slot_size);
		return page.call(4096);
	}
	CodePage page;
};

TEST_F(Slot, RipRelativeLoadReadsTheOriginalTarget)
{
	ASSERT_TRUE(page.ok());
	const uint64_t value = 0x1122334455667788;
	memcpy(page.at(0x800), &value, 8);
	// mov 0x800-7(%rip),%rax
	const uint32_t disp = 0x800 - 7;
	EXPECT_EQ(run_slot({0x48, 0x8b, 0x05, uint8_t(disp), uint8_t(disp >> 8), 0, 0}), value);
}

TEST_F(Slot, RipRelativeLeaComputesTheOriginalAddress)
{
	ASSERT_TRUE(page.ok());
	// lea 0x100(%rip),%rax
	EXPECT_EQ(run_slot({0x48, 0x8d, 0x05, 0x00, 0x01, 0, 0}), page.address(7 + 0x100));
}

TEST_F(Slot, PlainInstructionRunsUnchanged)
{
	ASSERT_TRUE(page.ok());
	// movabs $0x0123456789abcdef,%rax
	EXPECT_EQ(run_slot({0x48, 0xb8, 0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01}), 0x0123456789abcdefu);
}

TEST(SlotLayout, BreakpointEndAndReach)
{
	const uint8_t lea[] = {0x48, 0x8d, 0x05, 0x10, 0, 0, 0};
	const Analysis a = analyze_instruction(lea, sizeof(lea), at, Thunks{});
	uint8_t slot[slot_size];
	ASSERT_EQ(build_slot(a, lea, at, at + 0x1000, SlotEnd::breakpoint, slot), 8u);
	EXPECT_EQ(slot[7], 0xcc);
	int32_t disp;
	memcpy(&disp, slot + 3, 4);
	EXPECT_EQ(at + 0x1000 + 7 + disp, at + 7 + 0x10); // still addresses the original operand
	// A slot 3 GiB away can reach neither the operand nor the way back.
	EXPECT_EQ(build_slot(a, lea, at, at - (3ull << 30), SlotEnd::breakpoint, slot), 0u);
	const uint8_t mov[] = {0x48, 0x89, 0xf8};
	const Analysis plain = analyze_instruction(mov, sizeof(mov), at, Thunks{});
	EXPECT_EQ(build_slot(plain, mov, at, at - (3ull << 30), SlotEnd::jump_back, slot), 0u);
	EXPECT_EQ(build_slot(plain, mov, at, at - (3ull << 30), SlotEnd::breakpoint, slot), 4u);
}

} // namespace
