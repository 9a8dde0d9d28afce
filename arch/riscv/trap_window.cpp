// SPDX-License-Identifier: GPL-2.0
#include "riscv/trap_window.hpp"

#include "core/errno.hpp"
#include "riscv/function_analysis.hpp"
#include "riscv/instruction_decoder.hpp"

namespace okp::riscv {
namespace {

constexpr uint32_t csr_sscratch = 0x140;

bool writes_tp_to_sscratch(const Instruction &insn)
{
	return insn.operation == Operation::csrrw && insn.rd == reg::zero && insn.rs1 == reg::tp &&
	       (insn.raw >> 20) == csr_sscratch;
}

constexpr size_t stop_count = sizeof(trap_window_stops) / sizeof(trap_window_stops[0]);

struct Stops {
	uint64_t functions[stop_count];
	const CodeGraphFacts *facts;
};

size_t calls_jumps_and_callbacks(const CodeRange &function, uint64_t *targets, size_t capacity)
{
	return code_references(function, references::jumps | references::calls | references::taken_address, targets,
			       capacity);
}

} // namespace

TrapWindowCalls sscratch_window_calls(const CodeRange &exit_code, uint64_t *calls, size_t capacity)
{
	TrapWindowCalls result;
	bool inside = false;
	Instruction previous;
	uint64_t previous_address = 0;
	for (size_t at = 0; at < exit_code.size;) {
		const Instruction insn = decode_instruction(exit_code.bytes + at, exit_code.size - at);
		if (insn.length == 0) {
			result.why = "undecodable bytes before the trap exit's sret";
			return result;
		}
		const uint64_t address = exit_code.address + at;
		if (writes_tp_to_sscratch(insn)) {
			inside = true;
		} else if (insn.operation == Operation::sret) {
			if (!inside)
				result.why = "the trap exit reaches sret without writing sscratch";
			return result;
		} else if (inside && is_call(insn)) {
			uint64_t target = 0;
			if (has_direct_target(insn))
				target = address + insn.immediate;
			else if (insn.operation == Operation::jalr && previous.operation == Operation::auipc &&
				 previous.rd == insn.rs1 && insn.rs1 != reg::zero)
				target = previous_address + previous.immediate + insn.immediate;
			else {
				result.why = "an indirect call in the trap exit after sscratch is written";
				return result;
			}
			if (result.count < capacity)
				calls[result.count] = target;
			++result.count;
		}
		previous = insn;
		previous_address = address;
		at += insn.length;
	}
	result.why = "no sret in the trap exit code read";
	return result;
}

TrapWindowFunctions sscratch_window_functions(const CodeRange &exit_code,
					      uint64_t (*lookup)(const char *name, void *context),
					      const CodeGraphFacts &facts, RangeList &reached)
{
	constexpr size_t max_roots = 8;
	TrapWindowFunctions result;
	uint64_t roots[max_roots];
	const TrapWindowCalls calls = sscratch_window_calls(exit_code, roots, max_roots);
	if (calls.why || calls.count > max_roots) {
		result.why = calls.why ? calls.why : "the trap exit makes more calls than okprobe expects";
		return result;
	}
	Stops stops{};
	stops.facts = &facts;
	for (size_t i = 0; i < stop_count; ++i)
		stops.functions[i] = lookup(trap_window_stops[i], facts.context);
	CodeGraphFacts walk_facts = facts;
	walk_facts.stops_at = [](uint64_t function, void *context) -> const char * {
		const Stops &list = *static_cast<const Stops *>(context);
		for (size_t i = 0; i < stop_count; ++i)
			if (list.functions[i] == function)
				return trap_window_stops[i];
		return nullptr;
	};
	// The walk's callbacks get the stops; the caller's keep their context.
	walk_facts.function_of = [](uint64_t address, uint64_t *start, uint64_t *size, void *context) {
		const CodeGraphFacts &outer = *static_cast<const Stops *>(context)->facts;
		return outer.function_of(address, start, size, outer.context);
	};
	walk_facts.read_text = [](uint64_t address, uint8_t *buffer, size_t size, void *context) {
		const CodeGraphFacts &outer = *static_cast<const Stops *>(context)->facts;
		return outer.read_text(address, buffer, size, outer.context);
	};
	walk_facts.context = &stops;
	result.walk =
		reach_functions(roots, calls.count, walk_facts, calls_jumps_and_callbacks, reached, trap_window_why);
	switch (result.walk.error) {
	case 0:
		break;
	case error::e2big:
		result.why = "what the trap exit calls passed okprobe's limits";
		break;
	case error::eio:
		result.why = "unreadable text in what the trap exit calls";
		break;
	case error::enomem:
		result.why = "out of memory";
		break;
	default:
		result.why = "a call of the trap exit leads outside the kernel's functions";
		break;
	}
	return result;
}

} // namespace okp::riscv
