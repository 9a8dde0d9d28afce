// SPDX-License-Identifier: GPL-2.0
// Hand-assembled riscv64 functions for the host tests: each entry is one
// encoding (16-bit values are RVC instructions, the rest 32-bit).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace okp::riscv::test {

struct Encoding {
	uint32_t value;
	bool compressed;
};
// c(0x8082) is c.jr ra; i(0x00008067) is jalr zero, 0(ra).
inline Encoding c(uint16_t value)
{
	return {value, true};
}
inline Encoding i(uint32_t value)
{
	return {value, false};
}

inline std::vector<uint8_t> assemble(std::initializer_list<Encoding> encodings)
{
	std::vector<uint8_t> bytes;
	for (const Encoding &e : encodings)
		for (int n = 0; n < (e.compressed ? 2 : 4); ++n)
			bytes.push_back(uint8_t(e.value >> (8 * n)));
	return bytes;
}

inline uint32_t word_at(const uint8_t *bytes)
{
	return uint32_t(bytes[0]) | uint32_t(bytes[1]) << 8 | uint32_t(bytes[2]) << 16 | uint32_t(bytes[3]) << 24;
}

} // namespace okp::riscv::test
