// SPDX-License-Identifier: GPL-2.0
// The resolver against a fake kallsyms: what it accepts, what it refuses,
// and what it reports about the first failure.
#include "core_api.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

namespace {

// A fake kernel: names to addresses, addresses to sprint_symbol() text.
struct FakeKernel {
	std::map<std::string, unsigned long> addresses;
	std::map<unsigned long, std::string> descriptions;
	int lookups = 0;
};
FakeKernel *kernel;

unsigned long fake_lookup(const char *name)
{
	++kernel->lookups;
	auto it = kernel->addresses.find(name);
	return it == kernel->addresses.end() ? 0 : it->second;
}

void fake_describe(unsigned long address, char *buffer, unsigned long size)
{
	auto it = kernel->descriptions.find(address);
	std::string text = it == kernel->descriptions.end() ? "0x" + std::to_string(address) : it->second;
	snprintf(buffer, size, "%s", text.c_str());
}

const okp_symbol_ops ops = {fake_lookup, fake_describe};

class Resolver : public ::testing::Test {
protected:
	void SetUp() override
	{
		kernel = &fake;
		fake.addresses = {{"text_poke", 0xffffffff81000100}, {"text_mutex", 0xffffffff82000000}};
		fake.descriptions = {{0xffffffff81000100, "text_poke+0x0/0x80"},
				     {0xffffffff82000000, "text_mutex+0x0/0x20"}};
	}
	FakeKernel fake;
	okp_symbol_failure failure = {};
};

TEST(CheckSymbol, Verdicts)
{
	EXPECT_EQ(okp_core_check_symbol("f", 0x1000, "f+0x0/0x10"), OKP_SYMBOL_OK);
	EXPECT_EQ(okp_core_check_symbol("f", 0, "f+0x0/0x10"), OKP_SYMBOL_NOT_FOUND);
	EXPECT_EQ(okp_core_check_symbol("f", 0x1000, "0x1000"), OKP_SYMBOL_UNDESCRIBED);
	EXPECT_EQ(okp_core_check_symbol("f", 0x1000, "g+0x0/0x10"), OKP_SYMBOL_NAME_MISMATCH);
	EXPECT_EQ(okp_core_check_symbol("f", 0x1002, "f+0x2/0x10"), OKP_SYMBOL_NOT_AT_START);
	EXPECT_EQ(okp_core_check_symbol("f", 0x1000, "f+0x0/0x10 [m]"), OKP_SYMBOL_IN_MODULE);
	// A longer name sharing the prefix is another symbol.
	EXPECT_EQ(okp_core_check_symbol("f", 0x1000, "f2+0x0/0x10"), OKP_SYMBOL_NAME_MISMATCH);
}

TEST(CheckSymbol, EveryVerdictHasText)
{
	for (int v = OKP_SYMBOL_OK; v <= OKP_SYMBOL_IN_MODULE; ++v)
		EXPECT_STRNE(okp_core_symbol_verdict_text(static_cast<okp_symbol_verdict>(v)), "unknown verdict");
}

TEST_F(Resolver, ResolvesEveryRequest)
{
	unsigned long poke = 1, mutex = 1;
	okp_symbol_request requests[] = {{"text_poke", &poke, 1}, {"text_mutex", &mutex, 1}};
	EXPECT_EQ(okp_core_resolve_symbols(requests, 2, &ops, &failure), 0);
	EXPECT_EQ(poke, 0xffffffff81000100ul);
	EXPECT_EQ(mutex, 0xffffffff82000000ul);
}

TEST_F(Resolver, ReportsTheFirstMissingRequiredSymbol)
{
	unsigned long a = 1, b = 1, c = 1;
	okp_symbol_request requests[] = {{"text_poke", &a, 1}, {"no_such_one", &b, 1}, {"no_such_two", &c, 1}};
	EXPECT_EQ(okp_core_resolve_symbols(requests, 3, &ops, &failure), 2);
	EXPECT_STREQ(failure.name, "no_such_one");
	EXPECT_EQ(failure.verdict, OKP_SYMBOL_NOT_FOUND);
	EXPECT_EQ(a, 0xffffffff81000100ul);
	EXPECT_EQ(b, 0ul);
	EXPECT_EQ(c, 0ul);
}

TEST_F(Resolver, OptionalSymbolsMayBeMissing)
{
	unsigned long a = 1;
	okp_symbol_request requests[] = {{"static_call_text_reserved", &a, 0}};
	EXPECT_EQ(okp_core_resolve_symbols(requests, 1, &ops, &failure), 0);
	EXPECT_EQ(a, 0ul);
}

TEST_F(Resolver, RefusesAnAddressInsideASymbol)
{
	fake.addresses["set_memory_x"] = 0xffffffff81000104;
	fake.descriptions[0xffffffff81000104] = "text_poke+0x4/0x80";
	unsigned long a = 1;
	okp_symbol_request requests[] = {{"set_memory_x", &a, 1}};
	EXPECT_EQ(okp_core_resolve_symbols(requests, 1, &ops, &failure), 1);
	// The alias rule does not apply inside a symbol.
	EXPECT_EQ(failure.verdict, OKP_SYMBOL_NAME_MISMATCH);
	EXPECT_EQ(failure.address, 0xffffffff81000104ul);
	EXPECT_STREQ(failure.description, "text_poke+0x4/0x80");
	EXPECT_EQ(a, 0ul);
}

TEST_F(Resolver, RefusesASymbolOfAModule)
{
	fake.addresses["core_kernel_text"] = 0xffffffffc0001000;
	fake.descriptions[0xffffffffc0001000] = "core_kernel_text+0x0/0x10 [rootkit]";
	unsigned long a = 1;
	okp_symbol_request requests[] = {{"core_kernel_text", &a, 1}};
	EXPECT_EQ(okp_core_resolve_symbols(requests, 1, &ops, &failure), 1);
	EXPECT_EQ(failure.verdict, OKP_SYMBOL_IN_MODULE);
}

TEST_F(Resolver, AcceptsAnAliasAtTheSameAddress)
{
	// A section marker shares its address with the first function there;
	// kallsyms describes the address by the function's name.
	fake.addresses["__entry_text_start"] = 0xffffffff81e00000;
	fake.addresses["entry_SYSCALL_64"] = 0xffffffff81e00000;
	fake.descriptions[0xffffffff81e00000] = "entry_SYSCALL_64+0x0/0x100";
	unsigned long a = 1;
	okp_symbol_request requests[] = {{"__entry_text_start", &a, 1}};
	EXPECT_EQ(okp_core_resolve_symbols(requests, 1, &ops, &failure), 0);
	EXPECT_EQ(a, 0xffffffff81e00000ul);
}

TEST_F(Resolver, RefusesAMismatchThatIsNoAlias)
{
	// The described name looks up elsewhere: not an alias but a wrong address.
	fake.addresses["set_memory_ro"] = 0xffffffff81000100;
	unsigned long a = 1;
	okp_symbol_request requests[] = {{"set_memory_ro", &a, 1}};
	fake.addresses["text_poke"] = 0xffffffff81999999;
	EXPECT_EQ(okp_core_resolve_symbols(requests, 1, &ops, &failure), 1);
	EXPECT_EQ(failure.verdict, OKP_SYMBOL_NAME_MISMATCH);
}

TEST_F(Resolver, TruncatesALongDescription)
{
	std::string long_name(400, 'x');
	fake.addresses["victim"] = 0x1000;
	fake.descriptions[0x1000] = long_name + "+0x8/0x10";
	unsigned long a = 1;
	okp_symbol_request requests[] = {{"victim", &a, 1}};
	EXPECT_EQ(okp_core_resolve_symbols(requests, 1, &ops, &failure), 1);
	EXPECT_EQ(std::strlen(failure.description), sizeof(failure.description) - 1);
}

} // namespace
