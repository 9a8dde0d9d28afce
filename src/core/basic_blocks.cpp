// SPDX-License-Identifier: GPL-2.0
#include "core/basic_blocks.hpp"

#include "core/assert.hpp"
#include "core/owned.hpp"

namespace okp {

long block_starts(const CodeRange &function, FlowDecoder decode, uint32_t *offsets, size_t capacity)
{
	OKP_ASSERT(offsets || !capacity);
	// Per byte: bit 0 an instruction starts here, bit 1 a block leads here.
	constexpr uint8_t starts = 1, leads = 2;
	OwnedArray<uint8_t> marks = OwnedArray<uint8_t>::make(function.size);
	if (function.size && !marks)
		return -1;
	for (size_t i = 0; i < function.size; ++i)
		marks[i] = 0;
	const auto lead = [&](uint64_t address) {
		if (address >= function.address && address < function.address + function.size)
			marks[address - function.address] |= leads;
	};
	if (function.size)
		marks[0] |= leads;
	for (size_t offset = 0; offset < function.size;) {
		FlowStep step;
		decode(function, offset, step);
		if (step.kind == FlowKind::undecodable || !step.length || offset + step.length > function.size)
			break;
		marks[offset] |= starts;
		const size_t next = offset + step.length;
		if (step.kind == FlowKind::branch || step.kind == FlowKind::jump)
			lead(step.target);
		if (step.kind == FlowKind::branch)
			lead(function.address + next);
		offset = next;
	}
	long count = 0;
	for (size_t offset = 0; offset < function.size; ++offset) {
		if (marks[offset] != (starts | leads))
			continue;
		if (size_t(count) < capacity)
			offsets[count] = uint32_t(offset);
		++count;
	}
	return count;
}

} // namespace okp
