// SPDX-License-Identifier: GPL-2.0
// Jump tables recovered from crafted riscv64 functions (GCC's dispatch
// sequences, assembled by riscv64-linux-gnu-as), and every way the
// recovery must refuse: no data to read, an unbounded index, an entry off
// an instruction boundary or outside the function, a jump into the
// dispatch, a bound that may not hold.
#include "riscv/jump_optimization.hpp"

#include "riscv_code.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace {

using namespace okp::riscv;
using namespace okp::riscv::test;

constexpr uint64_t base = 0xffffffff80100000;
constexpr unsigned t1 = 6, a2 = 12;

// Read-only data at one address, as the module's reader gives .rodata.
struct Data {
	uint64_t address = 0;
	std::vector<uint8_t> bytes;
	size_t short_by = 0; // a reader that fails part of the way

	// A table of 32-bit entries, each target - address (GCC's relative
	// tables under medany).
	static Data relative_table(uint64_t address, std::initializer_list<uint64_t> targets)
	{
		Data data;
		data.address = address;
		for (uint64_t target : targets) {
			const int32_t entry = int32_t(target - address);
			const uint8_t *p = reinterpret_cast<const uint8_t *>(&entry);
			data.bytes.insert(data.bytes.end(), p, p + 4);
		}
		return data;
	}
	DataReader reader() const
	{
		return {[](uint64_t at, void *out, size_t size, void *context) -> size_t {
				const Data &data = *static_cast<const Data *>(context);
				const size_t available = data.bytes.size() - data.short_by;
				if (at < data.address || at + size > data.address + available)
					return 0;
				memcpy(out, data.bytes.data() + (at - data.address), size);
				return size;
			},
			const_cast<Data *>(this)};
	}
};

struct Built {
	std::vector<uint8_t> bytes;
	FunctionAnalysis analysis;
	Built(std::initializer_list<Encoding> code, const Data *data, const std::vector<ExtraEdge> &edges = {})
	    : bytes(assemble(code))
	{
		const DataReader reader = data ? data->reader() : DataReader{};
		EXPECT_TRUE(analysis.build({bytes.data(), base, bytes.size()}, nullptr, 0, edges.data(), edges.size(),
					   data ? &reader : nullptr));
	}
	std::vector<uint64_t> entries(uint64_t jump_offset) const
	{
		std::vector<uint64_t> addresses;
		size_t count = 0;
		const uint32_t *entries = analysis.jump_table_entries(analysis.index_of(base + jump_offset), &count);
		for (size_t e = 0; entries && e < count; ++e)
			addresses.push_back(analysis.address_of(entries[e]) - base);
		return addresses;
	}
};

// 0: c.li a5,2; 2: bltu a5,a0,24 (default); 6: auipc a4,0x2; a: c.addi a4,-6
// (the table at base + 0x2000); c: c.slli a0,2; e: c.add a0,a4;
// 10: c.lw a0,0(a0); 12: c.add a0,a4; 14: c.jr a0;
// 16 (case 0): c.mv a1,t1; 18: c.jr ra; 1a (case 1): c.li t1,0; 1c: c.mv a1,t1;
// 1e: c.jr ra; 20 (case 2): c.addi a1,1; 22: c.jr ra; 24 (default): c.li a0,0;
// 26: c.jr ra
#define SWITCH_HEAD c(0x4789), i(0x02a7e163), i(0x00002717), c(0x1769), c(0x050a)
#define SWITCH_DISPATCH c(0x953a), c(0x4108), c(0x953a), c(0x8502)
#define SWITCH_CASES c(0x859a), c(0x8082), c(0x4301), c(0x859a), c(0x8082), c(0x0585), c(0x8082)
constexpr uint64_t table = base + 0x2000;

TEST(RiscvJumpTable, ARelativeTableIsRecovered)
{
	const Data data = Data::relative_table(table, {base + 0x16, base + 0x1a, base + 0x20});
	Built f({SWITCH_HEAD, SWITCH_DISPATCH, SWITCH_CASES, c(0x4501), c(0x8082)}, &data);
	ASSERT_EQ(f.analysis.problem(), FunctionProblem::none);
	EXPECT_EQ(f.analysis.jump_table_count(), 1u);
	EXPECT_EQ(f.entries(0x14), (std::vector<uint64_t>{0x16, 0x1a, 0x20}));

	// The entries are jump targets ...
	EXPECT_EQ(f.analysis.target_within(base + 0x15, base + 0x17), base + 0x16);
	EXPECT_EQ(f.analysis.target_within(base + 0x1b, base + 0x21), base + 0x20);
	// ... and the jump's successors: case 0 reads t1, so t1 is live at
	// the dispatch; nothing reads a2.
	EXPECT_TRUE(f.analysis.live_at(base + 0x14) & register_bit(t1));
	EXPECT_TRUE(f.analysis.live_at(base) & register_bit(t1));
	EXPECT_FALSE(f.analysis.live_at(base + 0x14) & register_bit(a2));

	// The function is no longer refused: a window clear of the entries
	// is optimizable, one over an entry is not.
	const OptimizationPlan head = plan_jump_optimization(f.analysis, base + 6);
	EXPECT_EQ(head.refusal, OptimizationRefusal::none) << optimization_refusal_text(head.refusal);
	const OptimizationPlan over = plan_jump_optimization(f.analysis, base + 0x16);
	EXPECT_EQ(over.refusal, OptimizationRefusal::jump_into_window);
	EXPECT_EQ(over.refusal_address, base + 0x1a);

	// Without data to read the jump stays unknown, as before tables.
	Built blind({SWITCH_HEAD, SWITCH_DISPATCH, SWITCH_CASES, c(0x4501), c(0x8082)}, nullptr);
	EXPECT_EQ(blind.analysis.problem(), FunctionProblem::indirect_jump);
	EXPECT_EQ(blind.analysis.problem_address(), base + 0x14);
	EXPECT_EQ(blind.analysis.live_at(base + 0x14), all_registers);
	EXPECT_EQ(plan_jump_optimization(blind.analysis, base + 6).refusal, OptimizationRefusal::indirect_jump);
}

TEST(RiscvJumpTable, AnEntryInsideAnInstructionOrOutsideTheFunctionIsRefused)
{
	// Case 2 is a 4-byte addi at 20: an entry at 22 is inside it.
	// 20: addi a1,a1,1; 24: c.jr ra; 26 (default): c.li a0,0; 28: c.jr ra
	const Data inside = Data::relative_table(table, {base + 0x16, base + 0x1a, base + 0x22});
	Built f({c(0x4789), i(0x02a7e263), i(0x00002717), c(0x1769), c(0x050a), SWITCH_DISPATCH, c(0x859a), c(0x8082),
		 c(0x4301), c(0x859a), c(0x8082), i(0x00158593), c(0x8082), c(0x4501), c(0x8082)},
		&inside);
	EXPECT_EQ(f.analysis.problem(), FunctionProblem::indirect_jump);
	EXPECT_EQ(f.analysis.jump_table_count(), 0u);
	EXPECT_EQ(f.analysis.live_at(base + 0x14), all_registers);

	const Data outside = Data::relative_table(table, {base + 0x16, base + 0x1a, base + 0x100});
	Built g({SWITCH_HEAD, SWITCH_DISPATCH, SWITCH_CASES, c(0x4501), c(0x8082)}, &outside);
	EXPECT_EQ(g.analysis.problem(), FunctionProblem::indirect_jump);
}

TEST(RiscvJumpTable, UnprovenDispatchesStayUnknown)
{
	const Data data = Data::relative_table(table, {base + 0x16, base + 0x1a, base + 0x20});
	// No bound on the index: c.nop, c.nop where the bltu was.
	Built unbounded({c(0x4789), c(0x0001), c(0x0001), i(0x00002717), c(0x1769), c(0x050a), SWITCH_DISPATCH,
			 SWITCH_CASES, c(0x4501), c(0x8082)},
			&data);
	EXPECT_EQ(unbounded.analysis.problem(), FunctionProblem::indirect_jump);
	EXPECT_EQ(unbounded.analysis.problem_address(), base + 0x14);

	// The table cannot be read whole.
	Data short_read = data;
	short_read.short_by = 4;
	Built unreadable({SWITCH_HEAD, SWITCH_DISPATCH, SWITCH_CASES, c(0x4501), c(0x8082)}, &short_read);
	EXPECT_EQ(unreadable.analysis.problem(), FunctionProblem::indirect_jump);

	// The default case jumps back into the dispatch (26: c.j e): the
	// index there is not the bounded one.
	Built entered({SWITCH_HEAD, SWITCH_DISPATCH, SWITCH_CASES, c(0x4501), c(0xb7e5)}, &data);
	EXPECT_EQ(entered.analysis.problem(), FunctionProblem::indirect_jump);
	EXPECT_EQ(entered.analysis.live_at(base + 0x14), all_registers);
}

TEST(RiscvJumpTable, EveryPathToTheDispatchBoundsTheIndex)
{
	// 0: c.beqz a1,26; 2: c.li a5,2; 4: bltu a5,a0,22 (default), falling
	// into 8: auipc a4,0x2 (the table at base + 0x2008); c: c.slli a0,2;
	// e: c.add a0,a4; 10: c.lw a0,0(a0); 12: c.add a0,a4; 14: c.jr a0;
	// 16, 1a, 1e: cases; 22: default; 26: c.li a5,1; 28: bgeu a5,a0,8
	// (a0 <= 1 when taken); 2c: c.j 22
	const Data data = Data::relative_table(base + 0x2008, {base + 0x16, base + 0x1a, base + 0x1e});
	Built both({c(0xc19d), c(0x4789), i(0x00a7ef63), i(0x00002717), c(0x050a),     c(0x953a), c(0x4108),
		    c(0x953a), c(0x8502), c(0x4505),	 c(0x8082),	c(0x4509),     c(0x8082), c(0x450d),
		    c(0x8082), c(0x4501), c(0x8082),	 c(0x4785),	i(0xfea7f0e3), c(0xbfdd)},
		   &data);
	ASSERT_EQ(both.analysis.problem(), FunctionProblem::none);
	EXPECT_EQ(both.entries(0x14), (std::vector<uint64_t>{0x16, 0x1a, 0x1e}));

	// 28: bltu a5,a0,8 jumps when a0 > 1: nothing bounds it on that path.
	Built one({c(0xc19d), c(0x4789), i(0x00a7ef63), i(0x00002717), c(0x050a),     c(0x953a), c(0x4108),
		   c(0x953a), c(0x8502), c(0x4505),	c(0x8082),     c(0x4509),     c(0x8082), c(0x450d),
		   c(0x8082), c(0x4501), c(0x8082),	c(0x4785),     i(0xfea7e0e3), c(0xbfdd)},
		  &data);
	EXPECT_EQ(one.analysis.problem(), FunctionProblem::indirect_jump);
}

TEST(RiscvJumpTable, TheSameMaskOfTheSameValueIsOneIndex)
{
	// 0: andi a3,a0,255; 4: c.li a4,2; 6: andi a5,a0,255; a: bltu a4,a3,28;
	// e: auipc a4,0x2 (the table at base + 0x200e); 12: c.slli a5,2;
	// 14: c.add a5,a4; 16: c.lw a5,0(a5); 18: c.add a5,a4; 1a: c.jr a5;
	// 1c, 20, 24: cases; 28: default. The bound is on a3, the index a5.
	const Data data = Data::relative_table(base + 0x200e, {base + 0x1c, base + 0x20, base + 0x24});
	Built f({i(0x0ff57693), c(0x4709), i(0x0ff57793), i(0x00d76f63), i(0x00002717), c(0x078a), c(0x97ba), c(0x439c),
		 c(0x97ba), c(0x8782), c(0x4505), c(0x8082), c(0x4509), c(0x8082), c(0x450d), c(0x8082), c(0x4501),
		 c(0x8082)},
		&data);
	ASSERT_EQ(f.analysis.problem(), FunctionProblem::none);
	EXPECT_EQ(f.entries(0x1a), (std::vector<uint64_t>{0x1c, 0x20, 0x24}));
}

// 0: c.li s1,2; 2: jal ra,+0x400; 6: addiw a5,a0,-1; a: sext.w a4,a5;
// e: bltu s1,a4,30 (default); 12: c.slli a5,32; 14: c.srli a5,30 (the
// index zero-extended); 16: auipc a3,0x2; 1a: c.mv a3,a3 (the table at
// base + 0x2016); 1c: c.add a5,a3; 1e: c.lw a5,0(a5); 20: c.add a5,a3;
// 22: c.jr a5; 24, 28, 2c: c.li a0,N; c.jr ra; 30: c.li a0,0; c.jr ra
#define ZERO_EXTENDED_DISPATCH                                                                                         \
	i(0xfff5079b), i(0x0007871b), i(0x02e4e163), c(0x1782), c(0x83f9), i(0x00002697), c(0x86b6), c(0x97b6),        \
		c(0x439c), c(0x97b6), c(0x8782), c(0x4505), c(0x8082), c(0x4509), c(0x8082), c(0x450d), c(0x8082),     \
		c(0x4501), c(0x8082)

TEST(RiscvJumpTable, ASignExtendedBoundAndAConstantKeptAcrossACall)
{
	const Data data = Data::relative_table(base + 0x2016, {base + 0x24, base + 0x28, base + 0x2c});
	// The bound is in s1, set before a call: the callee keeps it.
	Built kept({c(0x4489), i(0x400000ef), ZERO_EXTENDED_DISPATCH}, &data);
	ASSERT_EQ(kept.analysis.problem(), FunctionProblem::none);
	EXPECT_EQ(kept.entries(0x22), (std::vector<uint64_t>{0x24, 0x28, 0x2c}));

	// 0: c.beqz a1,4 skips the c.li s1,2 on one path: no bound.
	const Data shifted = Data::relative_table(base + 0x2018, {base + 0x26, base + 0x2a, base + 0x2e});
	Built bypassed({c(0xc191), c(0x4489), i(0x400000ef), ZERO_EXTENDED_DISPATCH}, &shifted);
	EXPECT_EQ(bypassed.analysis.problem(), FunctionProblem::indirect_jump);

	// An exception fixup lands on the call, after the c.li s1,2: the
	// registers there are the fault's, unknown.
	Built fixed({c(0x4489), i(0x400000ef), ZERO_EXTENDED_DISPATCH}, &data,
		    {{base + 0x30, base + 2, ExtraEdge::Kind::exception_fixup}});
	EXPECT_EQ(fixed.analysis.problem(), FunctionProblem::indirect_jump);

	// In t1 (0: c.li t1,2; e: bltu t1,a4) the call may change it.
	Built clobbered({c(0x4309), i(0x400000ef), i(0xfff5079b), i(0x0007871b), i(0x02e36163), c(0x1782),
			 c(0x83f9), i(0x00002697), c(0x86b6),	  c(0x97b6),	 c(0x439c),	c(0x97b6),
			 c(0x8782), c(0x4505),	   c(0x8082),	  c(0x4509),	 c(0x8082),	c(0x450d),
			 c(0x8082), c(0x4501),	   c(0x8082)},
			&data);
	EXPECT_EQ(clobbered.analysis.problem(), FunctionProblem::indirect_jump);
}

TEST(RiscvJumpTable, TheBoundOnOneLoadHoldsForAReloadWithNoStoreBetween)
{
	// 0: c.lw a3,0(a0); 2: c.li a5,2; 4: bltu a5,a3,28; 8: lwu a5,0(a0);
	// c: lui a4,0x80200; 10: c.mv a4,a4; 12: c.slli a5,2; 14: c.add a5,a4;
	// 16: c.lw a5,0(a5); 18: c.add a5,a4; 1a: c.jr a5; 1c, 20, 24: cases;
	// 28: default
	const uint64_t absolute_table = 0xffffffff80200000;
	const Data data = Data::relative_table(absolute_table, {base + 0x1c, base + 0x20, base + 0x24});
	Built reloaded({c(0x4114), c(0x4789), i(0x02d7e263), i(0x00056783), i(0x80200737), c(0x873a), c(0x078a),
			c(0x97ba), c(0x439c), c(0x97ba), c(0x8782), c(0x4505), c(0x8082), c(0x4509), c(0x8082),
			c(0x450d), c(0x8082), c(0x4501), c(0x8082)},
		       &data);
	ASSERT_EQ(reloaded.analysis.problem(), FunctionProblem::none);
	EXPECT_EQ(reloaded.entries(0x1a), (std::vector<uint64_t>{0x1c, 0x20, 0x24}));

	// 8: c.sw a5,0(a1) may write the word between the loads.
	Built stored({c(0x4114), c(0x4789), i(0x02d7e263), c(0xc19c), i(0x00056783), i(0x80200737), c(0x078a),
		      c(0x97ba), c(0x439c), c(0x97ba), c(0x8782), c(0x4505), c(0x8082), c(0x4509), c(0x8082), c(0x450d),
		      c(0x8082), c(0x4501), c(0x8082)},
		     &data);
	EXPECT_EQ(stored.analysis.problem(), FunctionProblem::indirect_jump);
}

} // namespace
