// SPDX-License-Identifier: GPL-2.0
// Detour buffers run on the host CPU: a function is patched with the
// 5-byte jump exactly as the optimizer will patch kernel text, and the
// detour calls a recording entry with the registers as pt_regs.
#include "x86/detour.hpp"
#include "x86/out_of_line.hpp"

#include "code_page.hpp"

#include <gtest/gtest.h>

#include <asm/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace {

using namespace okp::x86;
using okp::CodeRange;

// 0: mov $0x1234,%edi; 5: stc; 6: lea 1(%rdi),%eax  <- probed; 9: lea 2(%rax),%eax
// 12: setc %dl; 15: movzbl %dl,%edx; 18: add %edx,%eax; 20: ret
// Returns di + 3 + CF: the region (both leas) leaves the flags alone, so a
// detour that loses CF shows.
const std::vector<uint8_t> function = {0xbf, 0x34, 0x12, 0x00, 0x00, 0xf9, 0x8d, 0x47, 0x01, 0x8d, 0x40,
				       0x02, 0x0f, 0x92, 0xc2, 0x0f, 0xb6, 0xd2, 0x01, 0xd0, 0xc3};
constexpr size_t probe_offset = 6;
constexpr size_t detour_offset = 4096, trampoline_offset = 0x600;

// Copies the detour to detour_offset and patches the jump to it in at
// offset, as the optimizer does in the kernel.
void patch_in(CodePage &page, const uint8_t *detour, size_t length, size_t offset)
{
	memcpy(page.at(detour_offset), detour, length);
	uint8_t jump[jump_size];
	EXPECT_TRUE(build_jump(page.address(offset), page.address(detour_offset), jump));
	memcpy(page.at(offset), jump, jump_size);
}

struct Seen {
	int calls = 0;
	uint64_t context = 0, di = 0, flags = 0, sp = 0, regs_address = 0;
	uint64_t new_di = 0; // nonzero: the entry writes it into regs->di
} seen;

extern "C" void record_entry(uint64_t context, Registers *regs)
{
	++seen.calls;
	seen.context = context;
	seen.di = regs->di;
	seen.flags = regs->flags;
	seen.sp = regs->sp;
	seen.regs_address = reinterpret_cast<uint64_t>(regs);
	if (seen.new_di)
		regs->di = seen.new_di;
}

class Detour : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(page.ok());
		seen = Seen{};
		page.put(0, function);
		// The entry is reached through a trampoline on the page (a
		// rel32 call cannot reach the test binary), which also aligns
		// the stack for the host ABI: push %rbp; mov %rsp,%rbp;
		// and $-16,%rsp; movabs $record_entry,%rax; call *%rax; leave; ret
		std::vector<uint8_t> trampoline = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xe4, 0xf0, 0x48, 0xb8};
		const uint64_t entry = reinterpret_cast<uint64_t>(&record_entry);
		for (int i = 0; i < 8; ++i)
			trampoline.push_back(static_cast<uint8_t>(entry >> (8 * i)));
		trampoline.insert(trampoline.end(), {0xff, 0xd0, 0xc9, 0xc3});
		page.put(trampoline_offset, trampoline);
	}

	// Plans, builds the detour, patches the jump in; the detour's length.
	size_t optimize()
	{
		const uint64_t address = page.address(probe_offset);
		const CodeRange range{page.at(0), page.address(0), function.size()};
		const OptimizationPlan plan = plan_jump_optimization(range, nullptr, 0, address, {}, nullptr, nullptr);
		EXPECT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
		uint8_t detour[max_detour_size];
		DetourCall call;
		call.entry = page.address(trampoline_offset);
		call.context = 0xc0ffee;
		const size_t length = build_detour(plan, page.at(probe_offset), address, {},
						   page.address(detour_offset), call, detour, sizeof(detour));
		EXPECT_GT(length, detour_frame_size(call));
		patch_in(page, detour, length, probe_offset);
		return length;
	}

	CodePage page;
};

TEST_F(Detour, TheOptimizedFunctionComputesTheSameAndTheEntrySeesPtRegs)
{
	ASSERT_EQ(page.call(0), 0x1234u + 3 + 1) << "unpatched";
	const size_t length = optimize();
	EXPECT_LE(length, 160u) << "the issue's size target";
	EXPECT_EQ(page.call(0), 0x1234u + 3 + 1) << "through the detour";
	EXPECT_EQ(seen.calls, 1);
	EXPECT_EQ(seen.context, 0xc0ffeeu);
	EXPECT_EQ(seen.di, 0x1234u);
	EXPECT_TRUE(seen.flags & flag::carry) << "regs->flags is the probed code's";
	EXPECT_EQ(seen.sp, seen.regs_address + pt_regs_size) << "pt_regs sits right below the probed code's sp";
	EXPECT_EQ(page.call(0), 0x1234u + 3 + 1);
	EXPECT_EQ(seen.calls, 2);
}

TEST_F(Detour, RegistersTheEntryChangesAreWhatTheCodeContinuesWith)
{
	optimize();
	seen.new_di = 0x2000;
	EXPECT_EQ(page.call(0), 0x2000u + 3 + 1);
}

TEST(DetourReach, OutOfReachFails)
{
	uint8_t jump[jump_size];
	EXPECT_FALSE(build_jump(0xffffffff81000000ull, 0xffffffff81000000ull - (3ull << 30), jump));
	EXPECT_TRUE(build_jump(0xffffffff81000000ull, 0xffffffffc0000000ull, jump));
	EXPECT_EQ(jump[0], 0xe9);
}

// The module's detour brackets the call with the per-CPU work of
// preempt_disable_notrace()/this_cpu_ptr()/preempt_enable_notrace(); the
// host cannot run %gs-relative code, so the bytes are checked instead.
TEST(X86DetourPerCpu, TheCallIsBracketedByThePreemptCountAndItsPreemptionPoint)
{
	const uint8_t bytes[] = {0x48, 0x89, 0xf8, 0x48, 0x01, 0xf0, 0xc3}; // mov; add; ret
	const uint64_t address = 0xffffffff81000000ull;
	const CodeRange range{bytes, address, sizeof(bytes)};
	const OptimizationPlan plan = plan_jump_optimization(range, nullptr, 0, address, {}, nullptr, nullptr);
	ASSERT_EQ(plan.refusal, OptimizationRefusal::none);
	DetourCall call;
	call.entry = address + 0x1000;
	call.context = 0x1122334455667788ull;
	call.cpu_states = 0x0000000000028f00ull;
	call.this_cpu_off = 0x1f0e0;
	call.preempt_count = 0x1f0c8;
	call.preempt_schedule = address + 0x2000;
	const uint64_t detour_address = address + 0x40000000;
	uint8_t detour[max_detour_size];
	const size_t length = build_detour(plan, bytes, address, {}, detour_address, call, detour, sizeof(detour));
	ASSERT_EQ(detour_frame_size(call), max_detour_frame_size);
	ASSERT_EQ(length, detour_frame_size(call) + 6 + 5) << "frame, mov and add, jmp back";
	const std::vector<uint8_t> code(detour, detour + length);
	auto find = [&](std::vector<uint8_t> needle) {
		return std::search(code.begin(), code.end(), needle.begin(), needle.end()) - code.begin();
	};
	const long cpu = find({0x48, 0xba, 0x00, 0x8f, 0x02, 0, 0, 0, 0, 0});
	const long add = find({0x65, 0x48, 0x03, 0x14, 0x25, 0xe0, 0xf0, 0x01, 0x00});
	const long disable = find({0x65, 0xff, 0x04, 0x25, 0xc8, 0xf0, 0x01, 0x00});
	const long context = find({0x48, 0xbf, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11});
	const long enable = find({0x65, 0xff, 0x0c, 0x25, 0xc8, 0xf0, 0x01, 0x00});
	ASSERT_LT(enable, static_cast<long>(length));
	EXPECT_LT(cpu, add);
	EXPECT_LT(add, disable);
	EXPECT_LT(disable, context);
	EXPECT_EQ(code[context + 10], 0xe8) << "call entry right after the context";
	int32_t entry_rel;
	memcpy(&entry_rel, &code[context + 11], 4);
	EXPECT_EQ(detour_address + context + 15 + entry_rel, call.entry);
	EXPECT_EQ(enable, context + 15) << "the count drops right after the call";
	EXPECT_EQ(code[enable + 8], 0x75) << "jnz over the preemption point";
	EXPECT_EQ(code[enable + 9], 0x05);
	EXPECT_EQ(code[enable + 10], 0xe8);
	int32_t schedule_rel;
	memcpy(&schedule_rel, &code[enable + 11], 4);
	EXPECT_EQ(detour_address + enable + 15 + schedule_rel, call.preempt_schedule);
}

// ---- Counting detours ----------------------------------------------------

// A counting detour's incq %gs:cell runs here with the GS base set to a
// local array, so that %gs:cell is an element of it (as this_cpu_inc's
// %gs:ptr is this CPU's copy in the kernel).
class CountingDetour : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(page.ok());
		ASSERT_EQ(syscall(SYS_arch_prctl, ARCH_GET_GS, &saved_gs), 0);
	}
	void TearDown() override { syscall(SYS_arch_prctl, ARCH_SET_GS, saved_gs); }

	// Puts function on the page, builds the counting detour of the probe at
	// offset with cell, patches the jump in; the detour's length.
	size_t optimize(const std::vector<uint8_t> &code, size_t offset, uint64_t cell)
	{
		page.put(0, code);
		const uint64_t address = page.address(offset);
		const CodeRange range{page.at(0), page.address(0), code.size()};
		const OptimizationPlan plan = plan_jump_optimization(range, nullptr, 0, address, {}, nullptr, nullptr);
		EXPECT_EQ(plan.refusal, OptimizationRefusal::none) << optimization_refusal_text(plan.refusal);
		CounterCall counter;
		counter.cell = cell;
		counter.flags_dead = status_flags_dead(code.data(), code.size(), offset);
		flags_dead = counter.flags_dead;
		uint8_t detour[max_detour_size];
		const size_t length =
			build_counting_detour(plan, page.at(offset), address, {}, page.address(detour_offset), counter,
					      detour, sizeof(detour));
		EXPECT_GT(length, counting_prologue_size(counter));
		patch_in(page, detour, length, offset);
		return length;
	}

	// %gs:cell is cells[1].
	void point_gs_at_cells(uint64_t cell)
	{
		const uint64_t base = reinterpret_cast<uint64_t>(&cells[1]) - cell;
		ASSERT_EQ(syscall(SYS_arch_prctl, ARCH_SET_GS, base), 0);
	}

	CodePage page;
	uint64_t cells[3] = {};
	unsigned long saved_gs = 0;
	bool flags_dead = false;
};

// Returns (di == si): ZF of the cmp is live across the probed lea.
// 0: xor %eax,%eax; 2: cmp %rsi,%rdi; 5: lea 1(%rdi),%rdx <- probed;
// 9: lea 2(%rdx),%rdx; 13: sete %al; 16: ret
const std::vector<uint8_t> equal_function = {0x31, 0xc0, 0x48, 0x39, 0xf7, 0x48, 0x8d, 0x57, 0x01,
					     0x48, 0x8d, 0x52, 0x02, 0x0f, 0x94, 0xc0, 0xc3};

uint64_t call_with(CodePage &page, uint64_t di, uint64_t si)
{
	return reinterpret_cast<uint64_t (*)(uint64_t, uint64_t)>(page.at(0))(di, si);
}

TEST_F(CountingDetour, CountsEveryCallAndKeepsTheCarryAnIncLeavesAlone)
{
	// CF is live at the probe (setc), but an inc does not touch CF and
	// the add after it writes the rest: the flags count as dead there.
	const uint64_t cell = 8;
	const size_t length = optimize(function, probe_offset, cell);
	EXPECT_TRUE(flags_dead);
	EXPECT_LE(length, 9u + 8 + 5) << "incq %gs:disp32, the region, the jump back";
	point_gs_at_cells(cell);
	for (int i = 0; i < 5; ++i)
		EXPECT_EQ(page.call(0), 0x1234u + 3 + 1);
	EXPECT_EQ(cells[1], 5u);
	EXPECT_EQ(cells[0] + cells[2], 0u);
}

TEST_F(CountingDetour, LiveFlagsAreSavedAroundTheIncrement)
{
	const uint64_t cell = 16;
	optimize(equal_function, 5, cell);
	EXPECT_FALSE(flags_dead) << "sete reads ZF";
	point_gs_at_cells(cell);
	EXPECT_EQ(call_with(page, 7, 7), 1u) << "ZF of the cmp survived";
	EXPECT_EQ(call_with(page, 7, 8), 0u);
	EXPECT_EQ(cells[1], 2u);
}

TEST_F(CountingDetour, ACellBeyondADisp32GoesThroughRaxAndRaxSurvives)
{
	const uint64_t cell = 0x100000008ull;
	CounterCall counter;
	counter.cell = cell;
	EXPECT_GT(counting_prologue_size(counter), 9u + 2) << "push, movabs, incq (%rax), pop";
	optimize(equal_function, 5, cell);
	point_gs_at_cells(cell);
	EXPECT_EQ(call_with(page, 3, 3), 1u);
	EXPECT_EQ(cells[1], 1u);
}

TEST(StatusFlags, DeadOnlyWhenWrittenBeforeTestedOnTheStraightPath)
{
	// add writes all of them: dead.
	const uint8_t add_first[] = {0x48, 0x01, 0xf0, 0xc3}; // add %rsi,%rax; ret
	EXPECT_TRUE(status_flags_dead(add_first, sizeof(add_first), 0));
	// a jcc tests them first: live.
	const uint8_t jcc_first[] = {0x74, 0x00, 0xc3}; // je; ret
	EXPECT_FALSE(status_flags_dead(jcc_first, sizeof(jcc_first), 0));
	// a ret before any write: live (an assembly callee may return in ZF).
	const uint8_t ret_first[] = {0xc3};
	EXPECT_FALSE(status_flags_dead(ret_first, sizeof(ret_first), 0));
	// a call before any write: live.
	const uint8_t call_first[] = {0xe8, 0, 0, 0, 0, 0x48, 0x01, 0xf0};
	EXPECT_FALSE(status_flags_dead(call_first, sizeof(call_first), 0));
	// adc reads CF only, which inc leaves alone, and writes the rest.
	const uint8_t adc_first[] = {0x48, 0x11, 0xf0, 0xc3}; // adc %rsi,%rax
	EXPECT_TRUE(status_flags_dead(adc_first, sizeof(adc_first), 0));
	// the function's end before a write: live.
	const uint8_t mov_only[] = {0x48, 0x89, 0xf0};
	EXPECT_FALSE(status_flags_dead(mov_only, sizeof(mov_only), 0));
}

} // namespace
