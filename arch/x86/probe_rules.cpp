// SPDX-License-Identifier: GPL-2.0
#include "x86/probe_rules.hpp"

#include "x86/instruction_analysis.hpp"
#include "x86/instruction_decoder.hpp"

namespace okp::x86 {

InstructionVerdict probe_rules(const uint8_t *function, size_t size, size_t offset, uint64_t function_address)
{
	return probe_rules(check_instruction_boundary(function, size, offset), function, size, offset,
			   function_address);
}

InstructionVerdict probe_rules(Boundary boundary, const uint8_t *function, size_t size, size_t offset,
			       uint64_t function_address)
{
	constexpr int error_eperm = 1, error_ebusy = 16, error_eilseq = 84;
	InstructionVerdict verdict;
	switch (boundary) {
	case Boundary::instruction_start:
		break;
	case Boundary::inside_instruction:
		verdict.error = error_eilseq;
		verdict.why = "the address is inside an instruction";
		return verdict;
	case Boundary::foreign_breakpoint:
		verdict.error = error_ebusy;
		verdict.why = "someone else's int3 in the function before the address: its decode is not the original";
		return verdict;
	case Boundary::undecodable:
	case Boundary::past_end:
		verdict.error = error_eilseq;
		verdict.why = "the function does not decode up to the address";
		return verdict;
	}
	// A sealed entry pad: where IBT kernels know no indirect call lands,
	// apply_seal_endbr() overwrites the endbr64 with a 4-byte nop
	// (gen_endbr_poison): osp nopl (%rax) on 6.1 and 6.12, nopl -42(%rax)
	// on 7.x, a nop no compiler emits. kprobes' is_endbr() counts it as the pad,
	// so symbol+0 means the same instruction to both.
	static constexpr uint8_t sealed_pads[][4] = {{0x66, 0x0f, 0x1f, 0x00}, {0x0f, 0x1f, 0x40, 0xd6}};
	for (const auto &pad : sealed_pads) {
		if (offset == 0 && size >= sizeof(pad) && function[0] == pad[0] && function[1] == pad[1] &&
		    function[2] == pad[2] && function[3] == pad[3]) {
			verdict.landing_pad = sizeof(pad);
			return verdict;
		}
	}
	const size_t available = size - offset < max_instruction_length ? size - offset : max_instruction_length;
	const Analysis analysis =
		analyze_instruction(function + offset, available, function_address + offset, Thunks{});
	switch (analysis.refusal) {
	case Refusal::none:
		verdict.length = analysis.length;
		return verdict;
	case Refusal::undecodable:
	case Refusal::emulate_prefix: // as kprobes' can_probe() refuses it
		verdict.error = error_eilseq;
		break;
	case Refusal::breakpoint:
		verdict.error = error_ebusy; // someone else's int3 (or padding)
		break;
	case Refusal::landing_pad:
		// A function's entry pad: the probe goes on the instruction
		// after it, as kprobes' arch_adjust_kprobe_addr() does.
		if (offset == 0) {
			verdict.landing_pad = analysis.length;
			return verdict;
		}
		verdict.error = error_eperm;
		break;
	default:
		verdict.error = error_eperm;
		break;
	}
	verdict.why = refusal_text(analysis.refusal);
	return verdict;
}

} // namespace okp::x86
