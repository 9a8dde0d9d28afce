// SPDX-License-Identifier: GPL-2.0
// Bytes of kernel text and the address they were read from: what every
// architecture's decoders and planners walk.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace okp {

struct CodeRange {
	const uint8_t *bytes = nullptr;
	uint64_t address = 0;
	size_t size = 0;
};

} // namespace okp
