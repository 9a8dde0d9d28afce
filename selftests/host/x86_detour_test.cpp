// SPDX-License-Identifier: GPL-2.0
// Detour buffers run on the host CPU: a function is patched with the
// 5-byte jump exactly as the optimizer will patch kernel text, and the
// detour calls a recording entry with the registers as pt_regs.
#include "x86/detour.hpp"
#include "x86/out_of_line.hpp"

#include "core/core_entry.h"
#include <okprobe.h>

#include "code_page.hpp"

#include <gtest/gtest.h>

#include <asm/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

namespace {

using namespace okp::x86;
using okp::CodeRange;
using okp::DirectHit;

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

extern "C" int pre_elsewhere(okprobe *, Registers *)
{
	return 0;
}

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
		size_t copy_at = 0;
		const size_t length = build_detour(plan, page.at(probe_offset), address, {},
						   page.address(detour_offset), call, detour, sizeof(detour), &copy_at);
		EXPECT_GT(length, copy_at);
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
	size_t copy_at = 0;
	const size_t length =
		build_detour(plan, bytes, address, {}, detour_address, call, detour, sizeof(detour), &copy_at);
	ASSERT_EQ(length, copy_at + 6 + 5) << "frame, mov and add, jmp back";
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
	EXPECT_LT(disable, cpu) << "preemption off before this CPU's state is found";
	EXPECT_LT(cpu, add);
	EXPECT_LT(add, context);
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

// ---- Direct hits -----------------------------------------------------------

// A direct hit (core/direct_hit.hpp) runs here on the host: the page is in
// the first 2 GiB so that ip and the handler (a trampoline on the page) fit
// imm32 and rel32 as kernel addresses do; %gs points at a local
// area holding the preempt count and this_cpu_off, which leads to cpu.
// Its fields' neighbours are not zero, as the real Site's are not, so
// that a compare wider than its field shows.
struct FakeSite {
	unsigned long before = ~0ul;
	okprobe *direct_probe = nullptr; // the gate
	unsigned long first_hits = 0;
	unsigned long after = ~0ul;
};

struct DirectSeen {
	int calls = 0;
	okprobe *probe = nullptr;
	Registers regs{};
	uint64_t active_site = 0; // this CPU's, during the handler
	int preempt_count = 0;	  // during the handler
	uint64_t new_di = 0;	  // nonzero: the handler writes it into regs->di
} direct_seen;

struct GsArea {
	uint64_t unused[2];
	int32_t preempt_count; // at %gs:0x10
	int32_t pad;
	uint64_t this_cpu_off; // at %gs:0x18
};
GsArea gs_area;
okp_cpu_state direct_cpu;

int preempt_schedules = 0;

extern "C" void record_preempt_schedule()
{
	++preempt_schedules;
}

extern "C" int record_direct(okprobe *probe, Registers *regs)
{
	++direct_seen.calls;
	direct_seen.probe = probe;
	direct_seen.regs = *regs;
	direct_seen.active_site = reinterpret_cast<uint64_t>(direct_cpu.active_site);
	direct_seen.preempt_count = gs_area.preempt_count;
	if (direct_seen.new_di)
		regs->di = direct_seen.new_di;
	return 1; // ignored, as opt_pre_handler() ignores it
}

class DirectDetour : public ::testing::Test {
public:
	static constexpr size_t handler_offset = 0x700, schedule_offset = 0x780;
	// x86's preempt count holds PREEMPT_NEED_RESCHED inverted: set, no
	// reschedule is due and the count never drops to 0.
	static constexpr int32_t no_resched_due = INT32_MIN;

	void SetUp() override
	{
		ASSERT_TRUE(page.ok());
		ASSERT_LT(page.address(0), 1ull << 31);
		ASSERT_EQ(syscall(SYS_arch_prctl, ARCH_GET_GS, &saved_gs), 0);
		page.put(0, function);
		put_trampoline(trampoline_offset, reinterpret_cast<uint64_t>(&record_entry));
		put_trampoline(handler_offset, reinterpret_cast<uint64_t>(&record_direct));
		put_trampoline(schedule_offset, reinterpret_cast<uint64_t>(&record_preempt_schedule));
		reset();
	}
	// Everything the detour reads and the handlers record, as at the start.
	void reset()
	{
		seen = Seen{};
		direct_seen = DirectSeen{};
		direct_cpu = okp_cpu_state{};
		gs_area = GsArea{};
		gs_area.this_cpu_off = reinterpret_cast<uint64_t>(&direct_cpu);
		gs_area.preempt_count = no_resched_due;
		preempt_schedules = 0;
		site = FakeSite{};
		site.direct_probe = &probe;
		probe = okprobe{};
		probe.pre_handler = reinterpret_cast<okprobe_pre_handler_t>(page.address(handler_offset));
	}
	void TearDown() override { syscall(SYS_arch_prctl, ARCH_SET_GS, saved_gs); }

	// push %rbp; mov %rsp,%rbp; and $-16,%rsp; movabs $target,%rax;
	// call *%rax; leave; ret
	void put_trampoline(size_t offset, uint64_t target)
	{
		std::vector<uint8_t> code = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xe4, 0xf0, 0x48, 0xb8};
		for (int i = 0; i < 8; ++i)
			code.push_back(static_cast<uint8_t>(target >> (8 * i)));
		code.insert(code.end(), {0xff, 0xd0, 0xc9, 0xc3});
		page.put(offset, code);
	}

	DetourCall call_with_direct(bool direct)
	{
		DetourCall call;
		call.entry = page.address(trampoline_offset);
		call.context = 0xc0ffee;
		call.cpu_states = 0; // + this_cpu_off = &direct_cpu
		call.this_cpu_off = offsetof(GsArea, this_cpu_off);
		call.preempt_count = offsetof(GsArea, preempt_count);
		call.preempt_schedule = page.address(schedule_offset);
		if (direct) {
			DirectHit &hit = call.direct;
			hit.site = reinterpret_cast<uint64_t>(&site);
			hit.probe = reinterpret_cast<uint64_t>(&probe);
			hit.handler = page.address(handler_offset);
			hit.direct_probe = offsetof(FakeSite, direct_probe);
			hit.first_hits = offsetof(FakeSite, first_hits);
			hit.probe_handler = offsetof(okprobe, pre_handler);
		}
		return call;
	}

	size_t optimize(bool direct = true)
	{
		const uint64_t address = page.address(probe_offset);
		const CodeRange range{page.at(0), page.address(0), function.size()};
		const OptimizationPlan plan = plan_jump_optimization(range, nullptr, 0, address, {}, nullptr, nullptr);
		EXPECT_EQ(plan.refusal, OptimizationRefusal::none);
		uint8_t detour[max_detour_size];
		size_t copy_at = 0;
		const size_t length =
			build_detour(plan, page.at(probe_offset), address, {}, page.address(detour_offset),
				     call_with_direct(direct), detour, sizeof(detour), &copy_at);
		EXPECT_GT(length, copy_at);
		EXPECT_LE(copy_at, max_detour_frame_size);
		patch_in(page, detour, length, probe_offset);
		return length;
	}

	// The function through the detour, with %gs on gs_area.
	uint64_t call_function()
	{
		EXPECT_EQ(syscall(SYS_arch_prctl, ARCH_SET_GS, reinterpret_cast<uint64_t>(&gs_area)), 0);
		const uint64_t result = page.call(0);
		syscall(SYS_arch_prctl, ARCH_SET_GS, saved_gs);
		return result;
	}

	CodePage page{8192, true};
	FakeSite site;
	okprobe probe{};
	unsigned long saved_gs = 0;
};

TEST_F(DirectDetour, TheHandlerRunsWithBreakpointRegistersAndTheHitIsCounted)
{
	optimize();
	EXPECT_EQ(call_function(), 0x1234u + 3 + 1) << "the region ran with the flags kept";
	EXPECT_EQ(direct_seen.calls, 1);
	EXPECT_EQ(seen.calls, 0) << "the core's entry is not called";
	EXPECT_EQ(direct_seen.probe, &probe);
	EXPECT_EQ(direct_seen.regs.ip, page.address(probe_offset) + 1) << "as after the int3";
	EXPECT_EQ(direct_seen.regs.cs, 0x10u);
	EXPECT_EQ(direct_seen.regs.orig_ax, ~0ull);
	EXPECT_EQ(direct_seen.regs.di, 0x1234u);
	EXPECT_TRUE(direct_seen.regs.flags & flag::carry);
	EXPECT_EQ(direct_seen.regs.ss, 0x18u);
	EXPECT_EQ(direct_seen.active_site, reinterpret_cast<uint64_t>(&site)) << "nested hits are missed";
	EXPECT_EQ(direct_seen.preempt_count, no_resched_due + 1) << "preemption off in the handler";
	EXPECT_EQ(site.first_hits, 1u);
	EXPECT_EQ(direct_cpu.active_site, nullptr);
	EXPECT_EQ(gs_area.preempt_count, no_resched_due);
	EXPECT_EQ(preempt_schedules, 0);
	EXPECT_EQ(call_function(), 0x1234u + 3 + 1);
	EXPECT_EQ(site.first_hits, 2u);
	gs_area.preempt_count = 0; // a reschedule is due
	EXPECT_EQ(call_function(), 0x1234u + 3 + 1);
	EXPECT_EQ(preempt_schedules, 1) << "the preemption point on the way out";
	EXPECT_EQ(direct_seen.calls, 3);
}

// The bytes the host run cannot tell apart: the hit is counted with a
// locked add.
TEST_F(DirectDetour, TheHitIsCountedWithALockedAdd)
{
	const uint64_t address = page.address(probe_offset);
	const CodeRange range{page.at(0), page.address(0), function.size()};
	const OptimizationPlan plan = plan_jump_optimization(range, nullptr, 0, address, {}, nullptr, nullptr);
	uint8_t detour[max_detour_size];
	const DetourCall call = call_with_direct(true);
	const size_t length = build_detour(plan, page.at(probe_offset), address, {}, page.address(detour_offset), call,
					   detour, sizeof(detour));
	ASSERT_GT(length, 0u);
	const uint8_t lock_incq[] = {0xf0, 0x48, 0xff, 0x80, static_cast<uint8_t>(call.direct.first_hits), 0, 0, 0};
	EXPECT_NE(std::search(detour, detour + length, std::begin(lock_incq), std::end(lock_incq)), detour + length);
	EXPECT_EQ(build_detour(plan, page.at(probe_offset), address, {}, page.address(detour_offset), call, detour,
			       max_detour_frame_size + max_detour_general_size - 1),
		  0u)
		<< "too small a buffer is refused, not overrun";
}

// A handler out of imm32 reach (or any address the direct hit compares
// with an immediate) gives the ordinary detour, which calls the entry.
TEST_F(DirectDetour, AnAddressBeyondImm32GivesTheOrdinaryDetour)
{
	const uint64_t address = page.address(probe_offset);
	const CodeRange range{page.at(0), page.address(0), function.size()};
	const OptimizationPlan plan = plan_jump_optimization(range, nullptr, 0, address, {}, nullptr, nullptr);
	uint8_t direct[max_detour_size], ordinary[max_detour_size];
	DetourCall call = call_with_direct(true);
	const size_t direct_length = build_detour(plan, page.at(probe_offset), address, {}, page.address(detour_offset),
						  call, direct, sizeof(direct));
	call.direct.handler = page.address(handler_offset) + (1ull << 40); // beyond imm32
	size_t copy_at = 0;
	const size_t ordinary_length =
		build_detour(plan, page.at(probe_offset), address, {}, page.address(detour_offset), call, ordinary,
			     sizeof(ordinary), &copy_at);
	EXPECT_LT(ordinary_length, direct_length);
	patch_in(page, ordinary, ordinary_length, probe_offset);
	EXPECT_EQ(call_function(), 0x1234u + 3 + 1);
	EXPECT_EQ(seen.calls, 1);
	EXPECT_EQ(direct_seen.calls, 0);
}

TEST_F(DirectDetour, TheHandlersRegisterChangesAreWhatTheCodeContinuesWith)
{
	optimize();
	direct_seen.new_di = 0x2000;
	EXPECT_EQ(call_function(), 0x2000u + 3 + 1);
}

// Each of the live checks, failed, takes the core's entry, which gets the
// same registers; nothing of the direct hit's bookkeeping happens. The
// gate (Site::direct_probe) is the writer's summary of the rest: closed
// (nullptr) for a second probe, a disabled or gone one, lost text or
// everything disarmed (ProbeTableTest.TheDirectGate...).
TEST_F(DirectDetour, AnyFailedCheckCallsTheCoresEntryInstead)
{
	const struct {
		const char *what;
		void (*change)(DirectDetour &);
	} cases[] = {
		{"inside another hit", [](DirectDetour &t) { direct_cpu.active_site = &t.site; }},
		{"the gate closed", [](DirectDetour &t) { t.site.direct_probe = nullptr; }},
		{"the gate open for another probe",
		 [](DirectDetour &t) { t.site.direct_probe = reinterpret_cast<okprobe *>(&t.site); }},
		{"the gate's high half differs",
		 [](DirectDetour &t) {
			 t.site.direct_probe =
				 reinterpret_cast<okprobe *>(reinterpret_cast<uint64_t>(&t.probe) ^ (1ull << 40));
		 }},
		{"another handler",
		 [](DirectDetour &t) { t.probe.pre_handler = reinterpret_cast<okprobe_pre_handler_t>(pre_elsewhere); }},
	};
	optimize();
	for (const auto &change : cases) {
		SCOPED_TRACE(change.what);
		reset();
		change.change(*this);
		void *active = direct_cpu.active_site;
		EXPECT_EQ(call_function(), 0x1234u + 3 + 1);
		EXPECT_EQ(direct_seen.calls, 0);
		EXPECT_EQ(seen.calls, 1);
		EXPECT_EQ(seen.context, 0xc0ffeeu);
		EXPECT_EQ(seen.di, 0x1234u);
		EXPECT_TRUE(seen.flags & flag::carry);
		EXPECT_EQ(site.first_hits, 0u);
		EXPECT_EQ(direct_cpu.active_site, active);
		EXPECT_EQ(gs_area.preempt_count, no_resched_due);
		EXPECT_EQ(preempt_schedules, 0);
	}
}

TEST_F(DirectDetour, WithoutADirectHitTheEntryIsCalledWithTheCpuState)
{
	optimize(false);
	EXPECT_EQ(call_function(), 0x1234u + 3 + 1);
	EXPECT_EQ(seen.calls, 1);
	EXPECT_EQ(direct_seen.calls, 0);
	EXPECT_EQ(gs_area.preempt_count, no_resched_due);
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

TEST(StatusFlags, ACallClobbersCarryTooSoAnAdcKeepsThemLive)
{
	// adc reads CF: dead for an inc, live for a call.
	const uint8_t adc_first[] = {0x48, 0x11, 0xf0, 0xc3}; // adc %rsi,%rax
	EXPECT_FALSE(status_flags_dead(adc_first, sizeof(adc_first), 0, ClobberedFlags::call));
	// sort_r's choice of a swap (6.1): cmp; mov $1,%edx; sbb $-1,%rdx.
	// A probe on the mov sits between the cmp's CF and the sbb's read.
	const uint8_t sort_r_swap[] = {0xba, 0x01, 0x00, 0x00, 0x00, 0x48, 0x83, 0xda, 0xff, 0xc3};
	EXPECT_TRUE(status_flags_dead(sort_r_swap, sizeof(sort_r_swap), 0));
	EXPECT_FALSE(status_flags_dead(sort_r_swap, sizeof(sort_r_swap), 0, ClobberedFlags::call));
	// add writes all six: dead for both.
	const uint8_t add_first[] = {0x48, 0x01, 0xf0, 0xc3};
	EXPECT_TRUE(status_flags_dead(add_first, sizeof(add_first), 0, ClobberedFlags::call));
	// inc keeps CF: not enough before a call's clobber of it.
	const uint8_t inc_then_adc[] = {0x48, 0xff, 0xc0, 0x48, 0x11, 0xf0, 0xc3}; // inc %rax; adc
	EXPECT_FALSE(status_flags_dead(inc_then_adc, sizeof(inc_then_adc), 0, ClobberedFlags::call));
}

// ---- Argument-only detours (build_args_detour) -------------------------------

struct ArgsSeen {
	int calls = 0;
	uint64_t context = 0;
	okprobe_args record{};
	uint64_t record_address = 0;
	okp_cpu_state *cpu = nullptr;
	int preempt_count = 0;
	uint64_t new_arg0 = 0; // nonzero: the entry writes it into arg[0]
} args_seen;

extern "C" void record_args_entry(uint64_t context, okprobe_args *record, okp_cpu_state *cpu)
{
	++args_seen.calls;
	args_seen.context = context;
	args_seen.record = *record;
	args_seen.record_address = reinterpret_cast<uint64_t>(record);
	args_seen.cpu = cpu;
	args_seen.preempt_count = gs_area.preempt_count;
	if (args_seen.new_arg0)
		record->arg[0] = args_seen.new_arg0;
	record->ip = 0xbad; // read-only: dropped
	record->sp = 0xbad;
}

// An args_handler the detour calls directly.
struct ArgsDirectSeen {
	int calls = 0;
	okprobe *probe = nullptr;
	okprobe_args record{};
	uint64_t active_site = 0;
	uint64_t new_arg1 = 0; // nonzero: the handler writes it into arg[1]
} args_direct_seen;

extern "C" void record_args_direct(okprobe *probe, okprobe_args *record)
{
	++args_direct_seen.calls;
	args_direct_seen.probe = probe;
	args_direct_seen.record = *record;
	args_direct_seen.active_site = reinterpret_cast<uint64_t>(direct_cpu.active_site);
	if (args_direct_seen.new_arg1)
		record->arg[1] = args_direct_seen.new_arg1;
}

class ArgsDetour : public DirectDetour {
public:
	static constexpr size_t args_entry_offset = 0x800, args_handler_offset = 0x880;

	void SetUp() override
	{
		DirectDetour::SetUp();
		put_trampoline(args_entry_offset, reinterpret_cast<uint64_t>(&record_args_entry));
		put_trampoline(args_handler_offset, reinterpret_cast<uint64_t>(&record_args_direct));
		args_seen = ArgsSeen{};
		args_direct_seen = ArgsDirectSeen{};
		probe.pre_handler = nullptr;
		probe.args_handler = reinterpret_cast<okprobe_args_handler_t>(page.address(args_handler_offset));
	}

	size_t build_args(bool flags_dead, uint8_t (&detour)[max_detour_size], bool direct = false)
	{
		const uint64_t address = page.address(probe_offset);
		const CodeRange range{page.at(0), page.address(0), function.size()};
		const OptimizationPlan plan = plan_jump_optimization(range, nullptr, 0, address, {}, nullptr, nullptr);
		EXPECT_EQ(plan.refusal, OptimizationRefusal::none);
		ArgsCall args;
		args.call = call_with_direct(direct);
		args.call.entry = page.address(args_entry_offset);
		if (direct) {
			args.call.direct.handler = page.address(args_handler_offset);
			args.call.direct.probe_handler = offsetof(okprobe, args_handler);
		}
		args.flags_dead = flags_dead;
		size_t copy_at = 0;
		const size_t length =
			build_args_detour(plan, page.at(probe_offset), address, {}, page.address(detour_offset), args,
					  detour, sizeof(detour), &copy_at);
		EXPECT_GT(length, copy_at);
		return length;
	}

	void optimize_args(bool direct = false)
	{
		uint8_t detour[max_detour_size];
		patch_in(page, detour, build_args(false, detour, direct), probe_offset);
	}
};

TEST_F(ArgsDetour, TheEntryGetsTheRecordAndTheFunctionItsFlagsBack)
{
	optimize_args();
	EXPECT_EQ(call_function(), 0x1234u + 3 + 1) << "CF survives the call: the flags are saved";
	ASSERT_EQ(args_seen.calls, 1);
	EXPECT_EQ(args_seen.context, 0xc0ffeeu);
	EXPECT_EQ(args_seen.record.arg[0], 0x1234u) << "di";
	EXPECT_EQ(args_seen.record.ip, page.address(probe_offset)) << "the probed address";
	EXPECT_EQ(args_seen.record.sp, args_seen.record_address + sizeof(okprobe_args))
		<< "the record lies right below the probed code's sp, its last word";
	EXPECT_EQ(args_seen.cpu, &direct_cpu) << "this CPU's state, as the full detour finds it";
	EXPECT_EQ(args_seen.preempt_count, no_resched_due + 1) << "preemption off around the call";
	EXPECT_EQ(gs_area.preempt_count, no_resched_due);
}

TEST_F(ArgsDetour, WhatTheEntryWritesToAnArgumentIsWhatTheCodeContinuesWith)
{
	optimize_args();
	args_seen.new_arg0 = 0x2000;
	EXPECT_EQ(call_function(), 0x2000u + 3 + 1);
}

TEST_F(ArgsDetour, WithTheFlagsDeadItSavesNoFlags)
{
	uint8_t with_flags[max_detour_size], without[max_detour_size];
	const size_t long_one = build_args(false, with_flags), short_one = build_args(true, without);
	EXPECT_EQ(long_one, short_one + 2) << "pushfq and popfq, one byte each";
	// push %rsp (1), push $ip (5), the record's registers (9): then pushfq.
	EXPECT_EQ(with_flags[15], 0x9c);
	EXPECT_EQ(without[15], 0x41) << "push %r10 at once";
}

// The sole args_handler, called by the detour itself: the same record,
// the hit counted, nested hits missed, a written argument kept, the flags
// and %rbx (saved for the CPU state) the function's again.
TEST_F(ArgsDetour, ASoleArgsHandlerIsCalledDirectlyWithTheRecord)
{
	optimize_args(true);
	EXPECT_EQ(call_function(), 0x1234u + 3 + 1) << "CF survives";
	ASSERT_EQ(args_direct_seen.calls, 1);
	EXPECT_EQ(args_seen.calls, 0) << "the core's entry is not called";
	EXPECT_EQ(args_direct_seen.probe, &probe);
	EXPECT_EQ(args_direct_seen.record.arg[0], 0x1234u);
	EXPECT_EQ(args_direct_seen.record.ip, page.address(probe_offset));
	EXPECT_EQ(args_direct_seen.active_site, reinterpret_cast<uint64_t>(&site));
	EXPECT_EQ(site.first_hits, 1u);
	EXPECT_EQ(direct_cpu.active_site, nullptr);
	EXPECT_EQ(gs_area.preempt_count, no_resched_due);
	args_direct_seen.new_arg1 = 0x55;
	EXPECT_EQ(call_function(), 0x1234u + 3 + 1) << "arg[1] (si) is not what the function adds";
	EXPECT_EQ(site.first_hits, 2u);
}

TEST_F(ArgsDetour, AFailedCheckCallsTheArgsEntryWithTheRecord)
{
	optimize_args(true);
	site.direct_probe = nullptr; // the writer closed the gate
	EXPECT_EQ(call_function(), 0x1234u + 3 + 1);
	EXPECT_EQ(args_direct_seen.calls, 0);
	ASSERT_EQ(args_seen.calls, 1);
	EXPECT_EQ(args_seen.record.arg[0], 0x1234u);
	EXPECT_EQ(args_seen.record.sp, args_seen.record_address + sizeof(okprobe_args));
	args_seen.new_arg0 = 0x3000;
	EXPECT_EQ(call_function(), 0x3000u + 3 + 1) << "the entry's write kept";
	EXPECT_EQ(site.first_hits, 0u);
	reset();
	probe.pre_handler = nullptr;
	probe.args_handler = reinterpret_cast<okprobe_args_handler_t>(page.address(args_handler_offset));
	args_seen.new_arg0 = 0;
	direct_cpu.active_site = &site; // inside another hit
	EXPECT_EQ(call_function(), 0x1234u + 3 + 1);
	EXPECT_EQ(args_direct_seen.calls, 0);
	EXPECT_EQ(args_seen.calls, 3);
}

} // namespace
