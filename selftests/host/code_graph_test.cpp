// SPDX-License-Identifier: GPL-2.0
// The walk over code references (src/core/code_graph.hpp) on a made-up
// call graph, and riscv's trap-exit window (arch/riscv/trap_window.hpp) on
// hand-assembled exit code.
#include "code_graph.hpp"
#include "riscv/function_analysis.hpp"
#include "riscv/trap_window.hpp"
#include "riscv_code.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace okp;
using namespace okp::riscv::test;

// Functions of 0x100 bytes at 0x1000, 0x2000, ...; each refers to the
// addresses listed for it.
struct Graph {
	std::map<uint64_t, std::vector<uint64_t>> references;
	std::set<uint64_t> stops;
	uint64_t huge = 0; // a function too large to walk

	static Graph &of(void *context) { return *static_cast<Graph *>(context); }
	CodeGraphFacts facts()
	{
		CodeGraphFacts f{};
		f.function_of = [](uint64_t address, uint64_t *start, uint64_t *size, void *context) {
			const uint64_t base = address & ~0xfffull;
			if (!of(context).references.count(base) || (address & 0xfff) >= 0x100)
				return false;
			*start = base;
			*size = base == of(context).huge ? 1 << 20 : 0x100;
			return true;
		};
		f.read_text = [](uint64_t, uint8_t *buffer, size_t size, void *) {
			for (size_t i = 0; i < size; ++i)
				buffer[i] = 0;
			return size;
		};
		f.stops_at = [](uint64_t function, void *context) -> const char * {
			return of(context).stops.count(function) ? "stop" : nullptr;
		};
		f.context = this;
		return f;
	}
};

Graph *scanned_graph;
size_t scan_graph(const CodeRange &function, const HiddenEntries &, uint64_t *targets, size_t capacity)
{
	const std::vector<uint64_t> &list = scanned_graph->references.at(function.address);
	for (size_t i = 0; i < list.size() && i < capacity; ++i)
		targets[i] = list[i];
	return list.size();
}

std::set<uint64_t> starts(const RangeList &list)
{
	std::set<uint64_t> result;
	for (size_t i = 0; i < list.size(); ++i)
		result.insert(list[i].start);
	return result;
}

TEST(CodeGraph, FollowsCallsIntoFunctionMiddlesThroughCyclesAndStopsWhereTold)
{
	Graph graph;
	graph.references = {{0x1000, {0x2000, 0x3010}}, // a call, a jump into a middle
			    {0x2000, {0x1000, 0x9000}}, // back to the root; not code
			    {0x3000, {0x4000}},		// a stop
			    {0x4000, {0x5000}},		// what the stop calls
			    {0x5000, {}},		//
			    {0x6000, {0x1000}}};	// calls the root, not reached
	graph.stops = {0x4000};
	scanned_graph = &graph;
	RangeList reached;
	const uint64_t roots[] = {0x1004};
	const ReachResult result = reach_functions(roots, 1, graph.facts(), scan_graph, reached, "why");
	EXPECT_EQ(result.error, 0);
	EXPECT_EQ(starts(reached), (std::set<uint64_t>{0x1000, 0x2000, 0x3000, 0x4000}));
	for (size_t i = 0; i < reached.size(); ++i) {
		EXPECT_EQ(reached[i].end - reached[i].start, 0x100u);
		EXPECT_STREQ(reached[i].why, "why");
	}
	reached.clear();
}

TEST(CodeGraph, FailsRatherThanReturnAPartialSet)
{
	Graph graph;
	graph.references = {{0x1000, {0x2000}}, {0x2000, {0x3000}}, {0x3000, {}}};
	scanned_graph = &graph;
	RangeList reached;
	const uint64_t outside[] = {0x7000};
	EXPECT_EQ(reach_functions(outside, 1, graph.facts(), scan_graph, reached, "why").error, 22)
		<< "a root that is no function";
	reached.clear();

	CodeGraphLimits two;
	two.max_functions = 2;
	const uint64_t roots[] = {0x1000};
	const ReachResult limited = reach_functions(roots, 1, graph.facts(), scan_graph, reached, "why", two);
	EXPECT_EQ(limited.error, 7);
	EXPECT_EQ(limited.culprit, 0x3000u);
	reached.clear();

	graph.huge = 0x2000;
	const ReachResult huge = reach_functions(roots, 1, graph.facts(), scan_graph, reached, "why");
	EXPECT_EQ(huge.error, 7);
	EXPECT_EQ(huge.culprit, 0x2000u);
	reached.clear();

	graph.huge = 0;
	graph.references[0x1000] = std::vector<uint64_t>(600, 0x2000);
	CodeGraphLimits few;
	few.max_references = 16;
	EXPECT_EQ(reach_functions(roots, 1, graph.facts(), scan_graph, reached, "why", few).error, 7)
		<< "more references than the scanner could return";
	reached.clear();
}

constexpr uint64_t base = 0xffffffff80003000;

TEST(RiscvCodeReferences, SortsCallsJumpsAndTakenAddressesAndSkipsItsOwnBody)
{
	const std::vector<uint8_t> code = assemble({
		i(0x100000ef), // 0: jal ra, +0x100           call
		i(0x2000006f), // 4: jal zero, +0x200         jump (tail)
		c(0xc119),     // 8: c.beqz a0, +6            inside the function
		i(0x00001517), // a: auipc a0, 0x1
		i(0x01050513), // e: addi a0, a0, 16          taken: base + 0x101a
		i(0x00002317), // 12: auipc t1, 0x2
		i(0x008300e7), // 16: jalr ra, 8(t1)          call: base + 0x201a
		c(0x8082),     // 1a: c.jr ra
	});
	const CodeRange range{code.data(), base, code.size()};
	uint64_t targets[8];
	ASSERT_EQ(riscv::code_references(range, okp::references::calls, targets, 8), 2u);
	EXPECT_EQ(targets[0], base + 0x100);
	EXPECT_EQ(targets[1], base + 0x2012 + 8);
	ASSERT_EQ(riscv::code_references(range, okp::references::jumps, targets, 8), 1u);
	EXPECT_EQ(targets[0], base + 4 + 0x200);
	ASSERT_EQ(riscv::code_references(range, okp::references::taken_address, targets, 8), 1u);
	EXPECT_EQ(targets[0], base + 0xa + 0x1000 + 16);
	EXPECT_EQ(riscv::code_references(range, 7, targets, 1), 4u) << "the count, past the capacity";
}

// 7.x's alternatives leave replacement code after a file's last function,
// inside its kallsyms range: never run there, its jumps lead elsewhere.
// Only the code reached from the entry and the hidden entries counts.
TEST(RiscvCodeReferences, FollowOnlyTheCodeThatRuns)
{
	const std::vector<uint8_t> code = assemble({
		c(0xc111),     // 0: c.beqz a0, +4       inside
		i(0x100000ef), // 2: jal ra, +0x100      call
		c(0x8082),     // 6: c.jr ra             return
		i(0x2000006f), // 8: jal zero, +0x200    reached by nothing: not run
		i(0x3000006f), // c: jal zero, +0x300    a jump label's target
		c(0x8082),     // 10: c.jr ra
	});
	const CodeRange range{code.data(), base, code.size()};
	uint64_t targets[8];
	ASSERT_EQ(riscv::code_references(range, okp::references::jumps, targets, 8), 2u) << "every byte";
	const uint64_t none[1] = {};
	EXPECT_EQ(riscv::reachable_code_references(range, none, 0, okp::references::jumps, targets, 8), 0u);
	ASSERT_EQ(riscv::reachable_code_references(range, none, 0, okp::references::calls, targets, 8), 1u);
	EXPECT_EQ(targets[0], base + 2 + 0x100);
	const uint64_t label[] = {base + 0xc, base + 0x5000 /* outside: ignored */};
	ASSERT_EQ(riscv::reachable_code_references(range, label, 2, okp::references::jumps, targets, 8), 1u);
	EXPECT_EQ(targets[0], base + 0xc + 0x300);
	// A jump table: the flow cannot be followed, every byte counts.
	const std::vector<uint8_t> table = assemble({c(0x8282) /* c.jr t0 */, i(0x2000006f)});
	EXPECT_EQ(riscv::reachable_code_references({table.data(), base, table.size()}, none, 0, okp::references::jumps,
						   targets, 8),
		  1u);
}

// The walk hands each function's hidden entries to the scanner.
TEST(CodeGraph, HandsTheScannerEachFunctionsHiddenEntries)
{
	Graph graph;
	graph.references = {{0x1000, {0x2000}}, {0x2000, {}}};
	CodeGraphFacts facts = graph.facts();
	facts.hidden_targets = [](const CodeRange &range, uint64_t *targets, size_t, void *) -> long {
		if (range.address == 0x2000)
			return -1; // unknown
		targets[0] = range.address + 0x40;
		return 1;
	};
	static std::map<uint64_t, HiddenEntries> seen;
	static uint64_t first_entry;
	seen.clear();
	scanned_graph = &graph;
	const auto scan = [](const CodeRange &function, const HiddenEntries &entries, uint64_t *targets,
			     size_t capacity) {
		seen[function.address] = entries;
		if (entries.count)
			first_entry = entries.addresses[0];
		return scan_graph(function, entries, targets, capacity);
	};
	RangeList reached;
	const uint64_t roots[] = {0x1000};
	ASSERT_EQ(reach_functions(roots, 1, facts, scan, reached, "why").error, 0);
	reached.clear();
	ASSERT_TRUE(seen[0x1000].known);
	EXPECT_EQ(seen[0x1000].count, 1u);
	EXPECT_EQ(first_entry, 0x1040u);
	EXPECT_FALSE(seen[0x2000].known);
}

constexpr uint32_t csrw_sscratch_tp = 0x14021073, sret = 0x10200073;

TEST(RiscvTrapWindow, CollectsOnlyTheCallsAfterSscratchIsWritten)
{
	const std::vector<uint8_t> exit = assemble({
		i(0x040000ef),	     // 0: jal ra, +0x40      before the window
		i(csrw_sscratch_tp), // 4
		c(0xc119),	     // 8: c.beqz a0, +6
		i(0x080000ef),	     // a: jal ra, +0x80      __trace_hardirqs_on
		c(0xa011),	     // e: c.j +4
		i(0x100000ef),	     // 10: jal ra, +0x100    __trace_hardirqs_off
		i(sret),	     // 14
		i(0x200000ef),	     // 18: after sret: another path
	});
	uint64_t calls[4];
	const riscv::TrapWindowCalls found = riscv::sscratch_window_calls({exit.data(), base, exit.size()}, calls, 4);
	ASSERT_EQ(found.why, nullptr);
	ASSERT_EQ(found.count, 2u);
	EXPECT_EQ(calls[0], base + 0xa + 0x80);
	EXPECT_EQ(calls[1], base + 0x10 + 0x100);
}

TEST(RiscvTrapWindow, RefusesExitCodeItDoesNotUnderstand)
{
	uint64_t calls[4];
	const std::vector<uint8_t> no_csrw = assemble({i(0x080000ef), i(sret)});
	EXPECT_NE(riscv::sscratch_window_calls({no_csrw.data(), base, no_csrw.size()}, calls, 4).why, nullptr);
	const std::vector<uint8_t> indirect = assemble({i(csrw_sscratch_tp), c(0x9282) /* c.jalr t0 */, i(sret)});
	EXPECT_NE(riscv::sscratch_window_calls({indirect.data(), base, indirect.size()}, calls, 4).why, nullptr);
	const std::vector<uint8_t> no_sret = assemble({i(csrw_sscratch_tp), i(0x080000ef)});
	EXPECT_NE(riscv::sscratch_window_calls({no_sret.data(), base, no_sret.size()}, calls, 4).why, nullptr);
	// Without calls in the window (no CONFIG_TRACE_IRQFLAGS): nothing to refuse.
	const std::vector<uint8_t> quiet = assemble({i(csrw_sscratch_tp), c(0x4501), i(sret)});
	const riscv::TrapWindowCalls none = riscv::sscratch_window_calls({quiet.data(), base, quiet.size()}, calls, 4);
	EXPECT_EQ(none.why, nullptr);
	EXPECT_EQ(none.count, 0u);
}

} // namespace
