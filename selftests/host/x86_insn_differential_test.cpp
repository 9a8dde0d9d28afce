// SPDX-License-Identifier: GPL-2.0
// okprobe's x86 relocation rules against the kernel's own insn.c over
// seeded random instructions (x86_insn_differential.hpp says what is
// compared); the kernel-bytes test does the same over every instruction of
// each x86 kernel.
#include "x86_insn_differential.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <iterator>
#include <random>

namespace {

using namespace okp::x86;

// Random instructions shaped like x86's: legacy prefixes, a REX, one of
// the opcode maps, then random ModRM, SIB, displacement and immediate bytes.
// The opcode byte is never a REX (0x40-0x4f are REX prefixes in 64-bit
// mode) or a legacy prefix: a REX would then come before another prefix,
// which the CPU ignores and insn.c reads as the opcode, and no compiler
// emits one.
void random_instruction(std::mt19937_64 &rng, uint8_t (&bytes)[15])
{
	static const uint8_t prefixes[] = {0x66, 0x67, 0xf2, 0xf3, 0x2e, 0x3e, 0x26, 0x64, 0x65, 0x36, 0xf0};
	size_t n = 0;
	for (unsigned p = rng() % 4; p > 0 && rng() % 3 == 0; --p)
		bytes[n++] = prefixes[rng() % sizeof(prefixes)];
	if (rng() % 2)
		bytes[n++] = uint8_t(0x40 + rng() % 16);
	switch (rng() % 10) {
	case 0:
	case 1:
	case 2:
		bytes[n++] = 0x0f;
		break;
	case 3:
		bytes[n++] = 0x0f;
		bytes[n++] = rng() % 2 ? 0x38 : 0x3a;
		break;
	default:
		do
			bytes[n] = uint8_t(rng());
		while ((bytes[n] & 0xf0) == 0x40 || std::count(prefixes, std::end(prefixes), bytes[n]));
		++n;
		break;
	}
	while (n < sizeof(bytes))
		bytes[n++] = uint8_t(rng());
}

TEST(X86InsnDifferential, RelocationRulesAgreeWithTheKernelsDecoderOnRandomInstructions)
{
	std::mt19937_64 rng(1);
	differential::Tally tally;
	const Thunks thunks;
	for (int i = 0; i < 1000000; ++i) {
		uint8_t bytes[15];
		random_instruction(rng, bytes);
		const uint64_t address = 0xffffffff81000000 + (rng() & 0xffffff);
		tally.add(bytes, sizeof(bytes), address, thunks, "random");
	}
	EXPECT_EQ(tally.report(std::cout, "1000000 random instructions, seed 1"), 0);
	// The comparison must have compared: most shapes decode on both sides.
	EXPECT_GT(tally.agreed, 500000);
}

} // namespace
