// SPDX-License-Identifier: GPL-2.0
// Every way a registration can be refused, with its errno, against a fake
// kernel; and the accepted cases.
#include "core/core_api.h"
#include "core/registration.hpp"
#include "x86/probe_rules.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

using okp::ProbeRequest;
using okp::Registration;

constexpr uint64_t core_base = 0xffffffff81000000;
constexpr uint64_t traced = core_base;		    // a normal function
constexpr uint64_t nokprobe = core_base + 0x1000;   // blacklisted
constexpr uint64_t garbled = core_base + 0x2000;    // does not decode
constexpr uint64_t kprobed = core_base + 0x2800;    // holds a kernel kprobe
constexpr uint64_t landing = core_base + 0x2900;    // starts with endbr64
constexpr uint64_t pad_only = core_base + 0x2a00;   // nothing but endbr64
constexpr uint64_t sealed = core_base + 0x2b00;	    // starts with a sealed endbr64
constexpr uint64_t sealed_7x = core_base + 0x2b80;  // sealed as 7.x kernels seal it
constexpr uint64_t padding = core_base + 0x2bf0;    // __pfx_ before a function
constexpr uint64_t ibt_traced = core_base + 0x2c00; // endbr64, then its ftrace call site
constexpr uint64_t init_text = 0xffffffff83000000;  // freed after boot

struct Function {
	uint64_t start;
	std::vector<uint8_t> bytes;
};

struct FakeKernel {
	std::map<std::string, uint64_t> symbols = {
		{"traced", traced},	    {"nokprobe_fn", nokprobe}, {"garbled", garbled},
		{"init_fn", init_text},	    {"kprobed", kprobed},      {"landing", landing},
		{"pad_only", pad_only},	    {"sealed", sealed},	       {"__pfx_after_sealed", padding},
		{"ibt_traced", ibt_traced}, {"sealed_7x", sealed_7x}};
	// Whether ftrace saves registers (entry probes go through it) or not
	// (they go past the call site).
	bool ftrace_saves_registers = true;
	std::vector<Function> functions = {
		{traced,
		 {
			 0xe8, 0,    0,	   0,	 0,	  //  0 call __fentry__ (ftrace site)
			 0x55,				  //  5 push %rbp
			 0x48, 0x89, 0xe5,		  //  6 mov %rsp,%rbp
			 0x0f, 0x0b,			  //  9 ud2 (WARN)
			 0xcc,				  // 11 int3 (another tool's)
			 0x48, 0x8b, 0x05, 0x10, 0, 0, 0, // 12 mov 0x10(%rip),%rax
			 0xc3,				  // 19 ret
			 0xcc, 0xcc, 0xcc, 0xcc,	  // 20 padding
		 }},
		{nokprobe, {0x55, 0xc3}},
		{garbled, {0x0f, 0xff, 0x90, 0x90, 0xc3}},
		// The kernel's int3 over push %rbp; mov %rsp,%rbp after it.
		{kprobed, {0xcc, 0x48, 0x89, 0xe5, 0xc3}},
		{init_text, {0x55, 0xc3}},
		// IBT: endbr64, then the ftrace site; another endbr64 inside.
		{landing,
		 {
			 0xf3, 0x0f, 0x1e, 0xfa, //  0 endbr64
			 0x55,			 //  4 push %rbp
			 0xf3, 0x0f, 0x1e, 0xfa, //  5 endbr64 (a computed goto's target)
			 0xc3,			 //  9 ret
		 }},
		{pad_only, {0xf3, 0x0f, 0x1e, 0xfa}},
		// Its pad sealed by the loader: the 4-byte nop kprobes' is_endbr() knows.
		{sealed, {0x66, 0x0f, 0x1f, 0x00, 0x55, 0xc3}},
		// 7.x's poison: nopl -42(%rax).
		{sealed_7x, {0x0f, 0x1f, 0x40, 0xd6, 0x55, 0xc3}},
		// x86's call padding: 16 nops before a function.
		{padding, std::vector<uint8_t>(16, 0x90)},
		{ibt_traced,
		 {
			 0xf3, 0x0f, 0x1e, 0xfa, //  0 endbr64
			 0xe8, 0, 0, 0, 0,	 //  4 call __fentry__ (ftrace site)
			 0x55,			 //  9 push %rbp
			 0xc3,			 // 10 ret
		 }},
	};
};
FakeKernel *fake;

const Function *function_at(uint64_t address)
{
	for (const Function &f : fake->functions)
		if (f.start <= address && address < f.start + f.bytes.size())
			return &f;
	return nullptr;
}

} // namespace

// The fake kernel's answers, linked in place of the glue's.
extern "C" unsigned long okp_glue_lookup_symbol(const char *name)
{
	auto it = fake->symbols.find(name);
	return it == fake->symbols.end() ? 0 : it->second;
}

extern "C" int okp_glue_function_of(unsigned long address, unsigned long *start, unsigned long *size)
{
	const Function *f = function_at(address);
	if (!f)
		return 0;
	*start = f->start;
	*size = f->bytes.size();
	return 1;
}

extern "C" okp_text_kind okp_glue_text_kind(unsigned long address)
{
	if (address >= init_text && address < init_text + 0x1000)
		return OKP_TEXT_INIT_AFTER_BOOT;
	if (address >= core_base && address < core_base + 0x3000)
		return OKP_TEXT_CORE;
	return OKP_TEXT_NONE;
}

extern "C" const char *okp_glue_kernel_blacklisted(unsigned long address)
{
	return address >= nokprobe && address < nokprobe + 2 ? "NOKPROBE_SYMBOL(nokprobe_fn)" : nullptr;
}

extern "C" const char *okp_glue_padding_symbol(unsigned long address)
{
	return address >= padding && address < padding + 16 ? "padding (a __pfx_ symbol)" : nullptr;
}

extern "C" const char *okp_glue_reserved(unsigned long address, unsigned long length)
{
	return address < traced + 5 && address + length > traced ? "an ftrace call site" : nullptr;
}

// As ftrace_location(): a call site for any of its bytes, and for its
// function's first byte.
extern "C" unsigned long okp_glue_ftrace_site(unsigned long address, unsigned long *length)
{
	*length = 5;
	if (address >= traced && address < traced + 5)
		return traced;
	if (address == ibt_traced || (address >= ibt_traced + 4 && address < ibt_traced + 9))
		return ibt_traced + 4;
	*length = 0;
	return 0;
}

extern "C" int okp_glue_ftrace_supported(void)
{
	return fake->ftrace_saves_registers;
}

extern "C" int okp_glue_has_exception_entry(unsigned long address)
{
	return address == traced + 6; // mov %rsp,%rbp "may fault"
}

namespace {

// The fake kernel's text, as registration reads it.
class FakeText final : public okp::OriginalText {
public:
	size_t read(uint64_t address, uint8_t *buffer, size_t size) const override
	{
		const Function *f = function_at(address);
		if (!f)
			return 0;
		const size_t n = std::min(size, f->bytes.size() - static_cast<size_t>(address - f->start));
		memcpy(buffer, f->bytes.data() + (address - f->start), n);
		return n;
	}
	const char *changed_by_others(uint64_t start, uint64_t size) const override
	{
		return start <= kprobed && kprobed < start + size ? "a kernel kprobe is in the function" : nullptr;
	}
};
const FakeText kernel_text;

struct Case {
	const char *what;
	ProbeRequest request;
	int error;
	const char *why_contains;
};

ProbeRequest at_symbol(const char *name, uint64_t offset, bool post = false)
{
	ProbeRequest r;
	r.symbol_name = name;
	r.offset = offset;
	r.has_pre_handler = true;
	r.has_post_handler = post;
	return r;
}

ProbeRequest at_address(uint64_t address)
{
	ProbeRequest r;
	r.address = address;
	r.has_pre_handler = true;
	return r;
}

TEST(Registration, EveryRefusalHasItsErrnoAndReason)
{
	FakeKernel kernel;
	fake = &kernel;
	ProbeRequest no_handler = at_symbol("traced", 5);
	no_handler.has_pre_handler = false;
	ProbeRequest both = at_symbol("traced", 5);
	both.address = traced;
	ProbeRequest neither = at_symbol(nullptr, 5);

	const Case cases[] = {
		{"no handler", no_handler, EINVAL, "pre_handler or a post_handler"},
		{"symbol and addr", both, EINVAL, "not both"},
		{"neither symbol nor addr", neither, EINVAL, "symbol_name or addr"},
		{"unknown symbol", at_symbol("no_such_function", 0), ENOENT, "no such kernel symbol"},
		{"no symbol there", at_address(0xffff888000001000), ENOENT, "no symbol holds the address"},
		{"init text after boot", at_symbol("init_fn", 0), EPERM, "init text"},
		{"offset past the function, into no function", at_symbol("traced", 24), ENOENT, "no function contains"},
		{"offset wraps", at_symbol("traced", ~0ull), ENOENT, "wraps"},
		{"blacklisted", at_symbol("nokprobe_fn", 0), EPERM, "NOKPROBE_SYMBOL"},
		{"inside an instruction", at_symbol("traced", 7), EILSEQ, "inside an instruction"},
		{"undecodable before the address", at_symbol("garbled", 3), EILSEQ, "does not decode"},
		{"ud2", at_symbol("traced", 9), EPERM, "ud2"},
		{"someone else's int3", at_symbol("traced", 11), EBUSY, "int3"},
		{"inside the ftrace call site", at_symbol("traced", 2), EILSEQ, "inside an instruction"},
		{"a kernel kprobe's function", at_symbol("kprobed", 1), EBUSY, "kernel kprobe"},
		{"a kernel kprobe's address", at_symbol("kprobed", 0), EBUSY, "kernel kprobe"},
		{"exception-table entry", at_symbol("traced", 6), EPERM, "exception-table entry"},
		{"an endbr64 inside a function", at_symbol("landing", 5), EPERM, "endbr"},
		{"a function of nothing but its endbr64", at_symbol("pad_only", 0), EINVAL, "past the end"},
		{"a function's padding", at_symbol("__pfx_after_sealed", 0), EINVAL, "padding"},
		{"inside a function's padding", at_address(padding + 7), EINVAL, "padding"},
	};
	for (const Case &c : cases) {
		const okp::Result<Registration> r =
			okp::check_registration(c.request, kernel_text, okp::x86::probe_rules);
		EXPECT_EQ(r.error(), c.error) << c.what << ": " << r.why();
		EXPECT_NE(std::string(r.why()).find(c.why_contains), std::string::npos) << c.what << ": " << r.why();
		EXPECT_FALSE(r.ok()) << c.what;
	}
}

TEST(Registration, AcceptedProbesKnowTheirInstruction)
{
	FakeKernel kernel;
	fake = &kernel;
	const okp::Result<Registration> push =
		okp::check_registration(at_symbol("traced", 5, true), kernel_text, okp::x86::probe_rules);
	EXPECT_EQ(push.error(), 0) << push.why();
	EXPECT_EQ(push->address, traced + 5);
	EXPECT_EQ(push->length, 1);
	EXPECT_EQ(push->function, traced);
	EXPECT_EQ(push->function_size, 24u);

	const okp::Result<Registration> rip =
		okp::check_registration(at_symbol("traced", 12), kernel_text, okp::x86::probe_rules);
	EXPECT_EQ(rip.error(), 0) << rip.why();
	EXPECT_EQ(rip->length, 7);

	const okp::Result<Registration> by_address =
		okp::check_registration(at_address(traced + 12), kernel_text, okp::x86::probe_rules);
	EXPECT_EQ(by_address.error(), 0) << by_address.why();
	EXPECT_EQ(by_address->address, traced + 12);

	const okp::Result<Registration> ret =
		okp::check_registration(at_symbol("traced", 19), kernel_text, okp::x86::probe_rules);
	EXPECT_EQ(ret.error(), 0) << ret.why();
}

// register_kprobe()'s rule, and kprobe_events' SYM+OFFS: an offset past the
// symbol's end probes the instruction there, in the function that holds it.
TEST(Registration, AnOffsetPastTheSymbolProbesTheNextFunction)
{
	FakeKernel kernel;
	fake = &kernel;
	// sealed (6 bytes) + 0x81: the second instruction of sealed_7x.
	const okp::Result<Registration> next = okp::check_registration(at_symbol("sealed", sealed_7x - sealed + 4),
								       kernel_text, okp::x86::probe_rules);
	EXPECT_EQ(next.error(), 0) << next.why();
	EXPECT_EQ(next->address, sealed_7x + 4);
	EXPECT_EQ(next->function, sealed_7x);
	EXPECT_EQ(next->length, 1);

	// The next function's first byte is its entry, with its entry's rules.
	const okp::Result<Registration> entry =
		okp::check_registration(at_symbol("__pfx_after_sealed", 16), kernel_text, okp::x86::probe_rules);
	EXPECT_EQ(entry.error(), 0) << entry.why();
	EXPECT_EQ(entry->function, ibt_traced);
	EXPECT_TRUE(entry->via_ftrace);
	EXPECT_EQ(entry->address, ibt_traced + 4);

	// Into the middle of the next function's instruction: not a boundary.
	const okp::Result<Registration> inside = okp::check_registration(at_symbol("sealed", sealed_7x - sealed + 1),
									 kernel_text, okp::x86::probe_rules);
	EXPECT_EQ(inside.error(), EILSEQ) << inside.why();
}

// kprobes' rule on IBT kernels: symbol+0 (or the function's address) is
// the instruction after the endbr64, which stays as it is.
TEST(Registration, AFunctionsEntryLandingPadIsSteppedOver)
{
	FakeKernel kernel;
	fake = &kernel;
	for (const ProbeRequest &request : {at_symbol("landing", 0), at_address(landing)}) {
		const okp::Result<Registration> entry =
			okp::check_registration(request, kernel_text, okp::x86::probe_rules);
		ASSERT_EQ(entry.error(), 0) << entry.why();
		EXPECT_EQ(entry->address, landing + 4);
		EXPECT_EQ(entry->length, 1) << "push %rbp";
	}
	const okp::Result<Registration> sealed_entry =
		okp::check_registration(at_symbol("sealed", 0), kernel_text, okp::x86::probe_rules);
	ASSERT_EQ(sealed_entry.error(), 0) << sealed_entry.why();
	EXPECT_EQ(sealed_entry->address, sealed + 4);
	const okp::Result<Registration> sealed_7x_entry =
		okp::check_registration(at_symbol("sealed_7x", 0), kernel_text, okp::x86::probe_rules);
	ASSERT_EQ(sealed_7x_entry.error(), 0) << sealed_7x_entry.why();
	EXPECT_EQ(sealed_7x_entry->address, sealed_7x + 4);
	EXPECT_EQ(sealed_7x_entry->length, 1) << "push %rbp";
	// Inside the pad is inside an instruction, as anywhere else.
	const okp::Result<Registration> inside =
		okp::check_registration(at_symbol("landing", 2), kernel_text, okp::x86::probe_rules);
	EXPECT_EQ(inside.error(), EILSEQ) << inside.why();
}

// kprobes on ftrace: a function's first byte and its ftrace call site are
// the entry ftrace calls the handlers at; where ftrace saves no registers
// the probe goes to the first instruction past the site.
TEST(Registration, AFunctionsEntryGoesThroughFtraceOrPastItsCallSite)
{
	FakeKernel kernel;
	fake = &kernel;
	const ProbeRequest entries[] = {at_symbol("traced", 0), at_address(traced)};
	for (const ProbeRequest &request : entries) {
		const okp::Result<Registration> entry =
			okp::check_registration(request, kernel_text, okp::x86::probe_rules);
		ASSERT_EQ(entry.error(), 0) << entry.why();
		EXPECT_TRUE(entry->via_ftrace);
		EXPECT_EQ(entry->address, traced);
		EXPECT_EQ(entry->length, 5);
		EXPECT_EQ(entry->function, traced);
	}
	// Past an IBT landing pad, as ftrace_location() maps sym+0; the call
	// site itself too.
	for (const ProbeRequest &request : {at_symbol("ibt_traced", 0), at_symbol("ibt_traced", 4)}) {
		const okp::Result<Registration> entry =
			okp::check_registration(request, kernel_text, okp::x86::probe_rules);
		ASSERT_EQ(entry.error(), 0) << entry.why();
		EXPECT_TRUE(entry->via_ftrace);
		EXPECT_EQ(entry->address, ibt_traced + 4);
	}
	// Any other byte of the call site is inside an instruction.
	EXPECT_EQ(okp::check_registration(at_symbol("ibt_traced", 6), kernel_text, okp::x86::probe_rules).error(),
		  EILSEQ);

	kernel.ftrace_saves_registers = false;
	for (const ProbeRequest &request : entries) {
		const okp::Result<Registration> past =
			okp::check_registration(request, kernel_text, okp::x86::probe_rules);
		ASSERT_EQ(past.error(), 0) << past.why();
		EXPECT_FALSE(past->via_ftrace);
		EXPECT_TRUE(past->past_ftrace);
		EXPECT_EQ(past->address, traced + 5) << "push %rbp, the first instruction after the call site";
		EXPECT_EQ(past->length, 1);
		EXPECT_EQ(past->requested, traced);
		// A recheck with the proof in hand lands at the same place.
		const okp::Result<Registration> again =
			okp::check_registration(request, kernel_text, okp::x86::probe_rules, &past.value());
		ASSERT_EQ(again.error(), 0) << again.why();
		EXPECT_EQ(again->address, traced + 5);
	}
	const okp::Result<Registration> ibt =
		okp::check_registration(at_symbol("ibt_traced", 0), kernel_text, okp::x86::probe_rules);
	ASSERT_EQ(ibt.error(), 0) << ibt.why();
	EXPECT_EQ(ibt->address, ibt_traced + 9);
	// A probe asked for past the site is an ordinary one.
	const okp::Result<Registration> push =
		okp::check_registration(at_symbol("traced", 5), kernel_text, okp::x86::probe_rules);
	ASSERT_EQ(push.error(), 0) << push.why();
	EXPECT_FALSE(push->via_ftrace || push->past_ftrace);
}

int rules_calls = 0;

okp::InstructionVerdict counted_rules(const uint8_t *function, size_t size, size_t offset, uint64_t address)
{
	++rules_calls;
	return okp::x86::probe_rules(function, size, offset, address);
}

TEST(Registration, ARecheckOnTheSameBytesReusesTheProofAndChangedBytesAreWalkedAgain)
{
	FakeKernel kernel;
	fake = &kernel;
	const ProbeRequest request = at_symbol("traced", 12);
	rules_calls = 0;
	const okp::Result<Registration> first = okp::check_registration(request, kernel_text, counted_rules);
	ASSERT_EQ(first.error(), 0) << first.why();
	EXPECT_EQ(rules_calls, 1);
	const okp::Result<Registration> again =
		okp::check_registration(request, kernel_text, counted_rules, &first.value());
	EXPECT_EQ(again.error(), 0) << again.why();
	EXPECT_EQ(again->length, first->length);
	EXPECT_EQ(rules_calls, 1) << "the same bytes: no second walk";
	// Someone's int3 appears before the address meanwhile: walked again,
	// and refused.
	kernel.functions[0].bytes[6] = 0xcc;
	const okp::Result<Registration> changed =
		okp::check_registration(request, kernel_text, counted_rules, &first.value());
	EXPECT_EQ(rules_calls, 2);
	EXPECT_EQ(changed.error(), EBUSY) << changed.why();
	// Other facts are asked again whatever the bytes: a blacklisted
	// address stays refused with a proof in hand.
	kernel.functions[0].bytes[6] = 0x48;
	ProbeRequest listed = at_symbol("nokprobe_fn", 0);
	const okp::Result<Registration> refused =
		okp::check_registration(listed, kernel_text, counted_rules, &first.value());
	EXPECT_EQ(refused.error(), EPERM);
}

TEST(Registration, ARecheckAtAnEntryPadKeepsTheMoveWithoutASecondWalk)
{
	FakeKernel kernel;
	fake = &kernel;
	rules_calls = 0;
	const okp::Result<Registration> first =
		okp::check_registration(at_symbol("landing", 0), kernel_text, counted_rules);
	ASSERT_EQ(first.error(), 0) << first.why();
	const int walks = rules_calls;
	const okp::Result<Registration> again =
		okp::check_registration(at_symbol("landing", 0), kernel_text, counted_rules, &first.value());
	ASSERT_EQ(again.error(), 0) << again.why();
	EXPECT_EQ(again->address, landing + 4);
	EXPECT_EQ(rules_calls, walks) << "the same bytes: no second walk";
}

} // namespace
