// SPDX-License-Identifier: GPL-2.0
#include "symbol_description.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using okp::SymbolDescription;
using okp::Text;

std::string str(Text text)
{
	return std::string(text.data, text.size);
}

bool parse(const char *text, SymbolDescription &out)
{
	return okp::parse_symbol_description(Text::of(text), out);
}

TEST(SymbolDescription, CoreKernelFunction)
{
	SymbolDescription d;
	ASSERT_TRUE(parse("kallsyms_lookup_name+0x0/0xd0", d));
	EXPECT_EQ(str(d.name), "kallsyms_lookup_name");
	EXPECT_EQ(d.offset, 0u);
	EXPECT_EQ(d.size, 0xd0u);
	EXPECT_TRUE(d.module.empty());
}

TEST(SymbolDescription, ModuleSymbolWithOffset)
{
	SymbolDescription d;
	ASSERT_TRUE(parse("okprobe_test_warn_init+0x11/0x1000 [okprobe_test_warn]", d));
	EXPECT_EQ(str(d.name), "okprobe_test_warn_init");
	EXPECT_EQ(d.offset, 0x11u);
	EXPECT_EQ(d.size, 0x1000u);
	EXPECT_EQ(str(d.module), "okprobe_test_warn");
}

TEST(SymbolDescription, ModuleWithBuildId)
{
	SymbolDescription d;
	ASSERT_TRUE(parse("foo+0x4/0x20 [bar 0123456789abcdef]", d));
	EXPECT_EQ(str(d.module), "bar");
}

TEST(SymbolDescription, NamesWithDotsAndPlus)
{
	// GCC clones: foo.cold, foo.isra.0, foo.constprop.0.
	SymbolDescription d;
	ASSERT_TRUE(parse("__do_sys_foo.isra.0+0x1a/0x40", d));
	EXPECT_EQ(str(d.name), "__do_sys_foo.isra.0");
	EXPECT_EQ(d.offset, 0x1au);
}

TEST(SymbolDescription, LargestValues)
{
	SymbolDescription d;
	ASSERT_TRUE(parse("x+0xffffffffffffffff/0xFFFFFFFFFFFFFFFF", d));
	EXPECT_EQ(d.offset, ~0ull);
	EXPECT_EQ(d.size, ~0ull);
}

TEST(SymbolDescription, RejectsWhatIsNotADescription)
{
	SymbolDescription d;
	// sprint_symbol prints the bare address where no symbol is known.
	EXPECT_FALSE(parse("0xffffffff81000000", d));
	EXPECT_FALSE(parse("", d));
	EXPECT_FALSE(parse("+0x0/0x10", d));
	EXPECT_FALSE(parse("foo+0x0", d));
	EXPECT_FALSE(parse("foo+0x/0x10", d));
	EXPECT_FALSE(parse("foo+0x0/10", d));
	EXPECT_FALSE(parse("foo+0xg/0x10", d));
	EXPECT_FALSE(parse("foo+0x0/0x10 [mod", d));
	EXPECT_FALSE(parse("foo+0x0/0x10 []", d));
	EXPECT_FALSE(parse("foo+0x10000000000000000/0x10", d));
}

} // namespace
