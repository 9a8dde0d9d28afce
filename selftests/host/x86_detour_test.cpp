// SPDX-License-Identifier: GPL-2.0
// Detour buffers run on the host CPU: a function is patched with the
// 5-byte jump exactly as the optimizer will patch kernel text, and the
// detour calls a recording entry with the registers as pt_regs.
#include "x86/detour.hpp"
#include "x86/out_of_line.hpp"

#include "code_page.hpp"

#include <gtest/gtest.h>

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
		memcpy(page.at(detour_offset), detour, length);
		uint8_t jump[jump_size];
		EXPECT_TRUE(build_jump(address, page.address(detour_offset), jump));
		memcpy(page.at(probe_offset), jump, jump_size);
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

} // namespace
