// SPDX-License-Identifier: GPL-2.0
// The writer's last decoded function (src/core/function_cache.hpp): kept
// only while the function's bytes are the same, and heap sort of addresses
// (src/core/sort.hpp).
#include "core/function_cache.hpp"
#include "core/sort.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

struct Decoded {
	int decodes = 0;
};

TEST(LastFunction, KeepsADecodeWhileTheBytesAreTheSame)
{
	std::vector<uint8_t> text = {0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3, 0xcc, 0xcc, 0x90};
	okp::LastFunction<Decoded> last;
	const okp::TextKey key = okp::TextKey::of(text.data(), text.size(), 0x1000);
	EXPECT_EQ(last.find(key), nullptr);
	Decoded *decoded = last.replace(key);
	ASSERT_NE(decoded, nullptr);
	decoded->decodes = 1;
	EXPECT_EQ(last.find(okp::TextKey::of(text.data(), text.size(), 0x1000)), decoded);
	// Another address, another length, one byte changed (a breakpoint):
	// each is a different function's text.
	EXPECT_EQ(last.find(okp::TextKey::of(text.data(), text.size(), 0x2000)), nullptr);
	EXPECT_EQ(last.find(okp::TextKey::of(text.data(), text.size() - 1, 0x1000)), nullptr);
	for (size_t i = 0; i < text.size(); ++i) {
		std::vector<uint8_t> changed = text;
		changed[i] ^= 0xcc ^ 0x55;
		EXPECT_EQ(last.find(okp::TextKey::of(changed.data(), changed.size(), 0x1000)), nullptr) << "byte " << i;
	}
	last.clear();
	EXPECT_EQ(last.find(key), nullptr);
}

TEST(SortAddresses, SortsAnyOrder)
{
	for (size_t count : {0u, 1u, 2u, 3u, 17u, 1000u}) {
		std::vector<uint64_t> values(count);
		uint64_t x = 0x9e3779b97f4a7c15ull;
		for (auto &v : values)
			v = (x = x * 6364136223846793005ull + 1442695040888963407ull) % 97;
		std::vector<uint64_t> expected = values;
		std::sort(expected.begin(), expected.end());
		okp::sort_addresses(values.data(), values.size());
		EXPECT_EQ(values, expected) << count;
	}
}

} // namespace
