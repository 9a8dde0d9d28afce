// SPDX-License-Identifier: GPL-2.0
// Kernel text as okprobe's proofs must read it. Registration and the jump
// planners decode functions that may already hold okprobe's breakpoints and
// jumps; they must see the bytes those replaced, and must refuse a function
// whose bytes someone else changed. The probe table answers both in the
// module (ProbeTable's TableText); host tests answer from tables.
//
// Everything else the core asks of the kernel is a link-time okp_glue_*
// call (glue_services.h, typed in kernel_facts.hpp): this is not a second
// way to reach the kernel but the table's view of the text.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace okp {

class OriginalText {
public:
	// Copies up to size bytes of text at address, okprobe's own patches
	// read as the bytes they replaced; returns how many.
	virtual size_t read(uint64_t address, uint8_t *buffer, size_t size) const = 0;
	// Why bytes of the function [start, start + size) are not the
	// original and no proof may read them (a kernel kprobe is in it, or
	// someone changed what okprobe wrote), or nullptr.
	virtual const char *changed_by_others(uint64_t start, uint64_t size) const = 0;

protected:
	OriginalText() = default;
	~OriginalText() = default;
};

} // namespace okp
