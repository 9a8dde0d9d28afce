// SPDX-License-Identifier: GPL-2.0
// The okprobe_events grammar (src/core/probe_events.cpp) against the
// kernel's kprobe_events: its own selftests' lines
// (tools/testing/selftests/ftrace/test.d/kprobe/*.tc in 6.1), their error
// classes and caret positions, and what the kernel reads back.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "btf_builder.hpp"
#include "core/btf.hpp"
#include "core/probe_events.hpp"
#include "kprobe_syntax_errors_73.hpp"
#include "riscv/event_registers.hpp"
#include "x86/event_registers.hpp"

namespace okp::events {
namespace {

// vfs_read+0 is an entry, vfs_read+N is not, non_exist_func is unknown,
// dup_func is in kallsyms twice: what the kernel would say.
Place fake_place(void *, const Definition &definition)
{
	std::string symbol(definition.line + definition.symbol.start, definition.symbol.length);
	if (symbol == "non_exist_func")
		return Place::unknown_symbol;
	if (symbol == "dup_func")
		return Place::not_unique;
	return definition.offset == 0 ? Place::function_entry : Place::inside_function;
}

ParseContext x86_context()
{
	ParseContext context;
	context.registers = x86::event_registers;
	context.register_count = sizeof(x86::event_registers) / sizeof(x86::event_registers[0]);
	context.place = fake_place;
	return context;
}

struct Parsed {
	std::unique_ptr<Definition> definition = std::make_unique<Definition>();
	ParseResult result;
};

Parsed parse(const std::string &line, const ParseContext &context = x86_context())
{
	Parsed parsed;
	parsed.result = parse_line(line.data(), line.size(), context, *parsed.definition);
	return parsed;
}

std::string canonical(const Definition &definition)
{
	char buffer[max_line + 64];
	size_t length = format_definition(definition, buffer, sizeof(buffer));
	EXPECT_LT(length, sizeof(buffer));
	return buffer;
}

std::string canonical(const std::string &line)
{
	Parsed parsed = parse(line);
	EXPECT_TRUE(parsed.result.ok()) << line << ": " << error_text(parsed.result.error);
	return canonical(*parsed.definition);
}

// The kernel's selftest notation: '^' marks where error_log's caret goes.
struct ErrorCase {
	const char *marked;
	Error error;
	int error_number;
};

// kprobe_syntax_errors.tc, line by line (its kretprobe and $argN parts
// too; not its multiprobe or instruction-boundary parts, which are about
// registration), plus okprobe's own stricter refusals.
const ErrorCase kernel_error_cases[] = {
	{"p^100 vfs_read", Error::maxactive_on_probe, 22},
	{"r^1a111 vfs_read", Error::bad_maxactive, 22},
	{"r^100000 vfs_read", Error::maxactive_too_big, 22},
	{"p ^non_exist_func", Error::bad_probe_address, 2},
	{"p ^hoge-fuga", Error::bad_probe_address, 22},
	{"p ^hoge+1000-1000", Error::bad_probe_address, 22},
	{"r ^vfs_read+10", Error::bad_return_probe, 22},
	{"p:^/bar vfs_read", Error::no_group_name, 22},
	{"p:^12345678901234567890123456789012345678901234567890123456789012345/bar vfs_read", Error::group_too_long,
	 22},
	{"p:^foo.1/bar vfs_read", Error::bad_group_name, 22},
	{"p:^ vfs_read", Error::no_event_name, 22},
	{"p:foo/^12345678901234567890123456789012345678901234567890123456789012345 vfs_read", Error::event_too_long,
	 22},
	{"p:foo/^bar.1 vfs_read", Error::bad_event_name, 22},
	{"p vfs_read ^$retval", Error::retval_on_probe, 22},
	{"p vfs_read ^$stack10000", Error::bad_stack_number, 22},
	{"p vfs_read ^$arg10000", Error::bad_argument_number, 22},
	{"p vfs_read ^$none_var", Error::bad_variable, 22},
	{"p vfs_read ^%none_reg", Error::bad_register_name, 22},
	{"p vfs_read ^@12345678abcde", Error::bad_memory_address, 22},
	{"p vfs_read ^@+10", Error::file_offset_on_kprobe, 22},
	{"p vfs_read arg1=\\^x", Error::bad_immediate, 22},
	{"p vfs_read arg1=\\\"abcd^", Error::immediate_string_not_closed, 22},
	{"p vfs_read ^+0@0)", Error::dereference_needs_brace, 22},
	{"p vfs_read ^+0ab1(@0)", Error::bad_dereference_offset, 22},
	{"p vfs_read +0(+0(@0^)", Error::dereference_not_closed, 22},
	{"p vfs_read +0(^$comm)", Error::comm_cannot_dereference, 22},
	{"p vfs_read ^&1", Error::bad_fetch_argument, 22},
	{"p vfs_read +0(^+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(@0))))))))))))))", Error::too_many_ops, 22},
	{"p vfs_read +0(@11):u8[10^", Error::array_not_closed, 22},
	{"p vfs_read +0(@11):u8[10]^a", Error::bad_array_suffix, 22},
	{"p vfs_read +0(@11):u8[^10a]", Error::bad_array_number, 22},
	{"p vfs_read +0(@11):u8[^256]", Error::array_too_big, 22},
	{"p vfs_read @11:^unknown_type", Error::bad_type, 22},
	{"p vfs_read $stack0:^string", Error::bad_string, 22},
	{"p vfs_read @11:^b10@a/16", Error::bad_bitfield, 22},
	{"p vfs_read ^arg123456789012345678901234567890=@11", Error::argument_name_too_long, 22},
	{"p vfs_read ^=@11", Error::no_argument_name, 22},
	{"p vfs_read ^var.1=@11", Error::bad_argument_name, 22},
	{"p vfs_read var1=@11 ^var1=@12", Error::used_argument_name, 22},
	{"p vfs_read ^+1234567(+1234567(+1234567(+1234567(+1234567(+1234567(@1234))))))", Error::argument_too_long, 22},
	{"p vfs_read arg1=^", Error::no_argument_body, 22},
	{"p vfs_read^%hoge", Error::bad_address_suffix, 22},
	{"p ^vfs_read+10%return", Error::bad_return_probe, 22},
	// okprobe's own.
	{"^x vfs_read", Error::bad_command, 22},
	{"p^x:foo vfs_read", Error::bad_command, 22},
	{"p:foo ^", Error::no_probe_point, 22},
	{"p ^dup_func", Error::not_unique, 99},
	{"p ^dup_func+4", Error::not_unique, 99},
	// A return probe off the entry is refused first, as by the kernel.
	{"r ^dup_func+4", Error::bad_return_probe, 22},
	{"r ^dup_func", Error::not_unique, 99},
	{"p ^/bin/sh:0x10", Error::uprobe_syntax, 22},
	{"p vfs_read +0(%di)^+10", Error::trailing_text, 22},
	{"p vfs_read ^$arg1x", Error::bad_variable, 22},
	{"r vfs_read ^$arg1", Error::bad_variable, 22},
	{"p vfs_read+4 ^$arg1", Error::bad_variable, 22},
	{"p vfs_read $comm:^x64", Error::bad_type, 22},
	{"p vfs_read ^common_pid=%di", Error::used_argument_name, 22},
	{"p vfs_read +0(%di):^b4@30/32", Error::bad_bitfield, 22},
	{"p vfs_read ^-u+8(%di)", Error::bad_dereference_offset, 22},
	{"p vfs_read %di:^symstr[2]", Error::bad_string, 22},
	{"p vfs_read +u0(%di):^u8[4]", Error::bad_string, 22},
	{"p vfs_read \\1:^symstr", Error::bad_symbol_string, 22},
	{"-^x", Error::bad_command, 22},
	{"-:^", Error::no_event_name, 22},
};

TEST(ProbeEvents, KernelSelftestErrorsGetTheKernelsClassAndCaret)
{
	for (const ErrorCase &error_case : kernel_error_cases) {
		std::string marked = error_case.marked;
		size_t caret = marked.find('^');
		ASSERT_NE(caret, std::string::npos) << marked;
		std::string line = marked.substr(0, caret) + marked.substr(caret + 1);
		Parsed parsed = parse(line);
		EXPECT_EQ(parsed.result.error, error_case.error)
			<< marked << ": " << error_text(parsed.result.error) << " at " << parsed.result.column;
		EXPECT_EQ(parsed.result.error_number, error_case.error_number) << marked;
		EXPECT_EQ(parsed.result.column, caret) << marked << ": " << error_text(parsed.result.error);
	}
}

TEST(ProbeEvents, ErrorLogEntryIsTheKernelsShape)
{
	Parsed parsed = parse("p   vfs_read\t$retval  # not a return probe");
	ASSERT_EQ(parsed.result.error, Error::retval_on_probe);
	char buffer[512];
	format_error_log(12, 3456, "okprobe_events", *parsed.definition, parsed.result, buffer, sizeof(buffer));
	// The caret under the $: the prefix's 11 columns, then 11 more.
	EXPECT_EQ(std::string(buffer), "[   12.003456] okprobe_events: error: $retval is not available on probe\n"
				       "  Command: p vfs_read $retval\n" +
					       std::string(11 + 11, ' ') + "^\n");
}

TEST(ProbeEvents, DefaultsAreTheKernels)
{
	Parsed parsed = parse("p vfs_read");
	ASSERT_TRUE(parsed.result.ok());
	const Definition &d = *parsed.definition;
	EXPECT_EQ(d.command, Command::probe);
	EXPECT_FALSE(d.is_return);
	EXPECT_STREQ(d.group, "okprobe");
	EXPECT_STREQ(d.event, "p_vfs_read_0");
	EXPECT_EQ(canonical(d), "p:okprobe/p_vfs_read_0 vfs_read");
	EXPECT_EQ(canonical("r vfs_read"), "r:okprobe/r_vfs_read_0 vfs_read");
	EXPECT_EQ(canonical("p ext4:ext4_file_read_iter+8"),
		  "p:okprobe/p_ext4_ext4_file_read_iter_8 ext4:ext4_file_read_iter+8");
	EXPECT_EQ(canonical("p 0xffffffff81000000"), "p:okprobe/p_0xffffffff81000000 0xffffffff81000000");
	EXPECT_EQ(canonical("p:grp/ vfs_read"), "p:grp/p_vfs_read_0 vfs_read");
	EXPECT_EQ(canonical("p:grp.ev vfs_read"), "p:grp/ev vfs_read");
}

// What the kernel's selftests grep in kprobe_events after writing a line.
TEST(ProbeEvents, KernelSelftestLinesReadBackAsTheKernelsDo)
{
	EXPECT_EQ(canonical("p:testprobe kernel_clone $stack $stack0 +0($stack)"),
		  "p:okprobe/testprobe kernel_clone arg1=$stack arg2=$stack0 arg3=+0($stack)");
	EXPECT_EQ(canonical("p:testprobe kernel_clone comm=$comm "), "p:okprobe/testprobe kernel_clone comm=$comm");
	EXPECT_EQ(canonical("r:testprobe2 kernel_clone $retval"), "r:okprobe/testprobe2 kernel_clone arg1=$retval");
	EXPECT_EQ(canonical("r10:myprobeaccept inet_csk_accept"), "r10:okprobe/myprobeaccept inet_csk_accept");
	EXPECT_EQ(canonical("r inet_csk_accept"), "r:okprobe/r_inet_csk_accept_0 inet_csk_accept");
	EXPECT_EQ(canonical("p:myprobeaccept vfs_read%return"), canonical("r:myprobeaccept vfs_read"));
	EXPECT_EQ(canonical("p:myevent do_sys_open path=+0($arg2):ustring path2=+u0($arg2):string"),
		  "p:okprobe/myevent do_sys_open path=+0($arg2):ustring path2=+u0($arg2):string");
	for (const char *type :
	     {"u64", "u32", "u16", "u8", "s64", "s32", "s16", "s8", "x64", "x32", "x16", "x8", "b8@4/32", "string"}) {
		std::string line = std::string("p:testprobe kernel_clone arg1=@linux_proc_banner:") + type;
		EXPECT_EQ(canonical(line),
			  "p:okprobe/testprobe kernel_clone arg1=@linux_proc_banner:" + std::string(type));
	}
}

// kprobe_args_syntax.tc's good and bad arguments, for x86 (%ax).
TEST(ProbeEvents, KernelSelftestArgumentSyntax)
{
	for (const char *good : {"%ax",
				 "$stack",
				 "$stack0",
				 "$stack1",
				 "@_sdata",
				 "@0xffffffff82000000",
				 "@_sdata+10",
				 "@_sdata-10",
				 "+0(%ax)",
				 "-0(%ax)",
				 "+10($stack)",
				 "+0($stack1)",
				 "+10(@_sdata-10)",
				 "+0(+10(+20($stack)))",
				 "varname=%ax",
				 "%ax:x64",
				 "$comm",
				 "$comm:string",
				 "\\1",
				 "\\-1",
				 "\\\"str\"",
				 "$arg1",
				 "$arg6",
				 "$arg7"}) {
		Parsed parsed = parse(std::string("p vfs_read ") + good);
		EXPECT_TRUE(parsed.result.ok()) << good << ": " << error_text(parsed.result.error);
	}
	for (const char *bad : {"%none",      "@",	 "@_sdata*10x+", "+(%ax)",     "(%ax+10)",
				"-(%ax)",     "(%ax)",	 "+10($comm)",	 "+0(%ax)+10", "varname=varname2=%ax",
				"%ax::x64",   "%ax:x65", "x64:%ax",	 "$comm:x64",  "$stack:string",
				"%ax:string", "$",	 "$stackx",	 "$arg0",      "\\",
				"\\0x"}) {
		Parsed parsed = parse(std::string("p vfs_read ") + bad);
		EXPECT_FALSE(parsed.result.ok()) << bad;
	}
	// Only $retval in a return probe.
	EXPECT_TRUE(parse("r vfs_read $retval").result.ok());
	EXPECT_FALSE(parse("p vfs_read $retval").result.ok());
}

TEST(ProbeEvents, ArgumentsBecomeFetchPrograms)
{
	Parsed parsed = parse("p:grp/ev vfs_read len=%dx buf=+0(%si):string first=+8(+16(%di)):s32 "
			      "name=@init_task+1024:u8[16] who=$comm n=$arg3 u=+u4($stack2):x16");
	ASSERT_TRUE(parsed.result.ok()) << error_text(parsed.result.error);
	const Definition &d = *parsed.definition;
	ASSERT_EQ(d.arg_count, 7);

	const Argument &len = d.args[0];
	EXPECT_STREQ(len.name, "len");
	ASSERT_EQ(len.step_count, 1);
	EXPECT_EQ(len.steps[0].op, Op::register_value);
	EXPECT_EQ(len.steps[0].value, 96); // pt_regs.dx
	EXPECT_EQ(len.store, Store::raw);
	EXPECT_EQ(len.kind, Kind::hex);
	EXPECT_EQ(len.size, 8);
	EXPECT_EQ(len.offset, 0);

	const Argument &buf = d.args[1];
	ASSERT_EQ(buf.step_count, 2);
	EXPECT_EQ(buf.steps[0].op, Op::register_value);
	EXPECT_EQ(buf.steps[0].value, 104); // pt_regs.si
	EXPECT_EQ(buf.steps[1].op, Op::dereference);
	EXPECT_EQ(buf.store, Store::string);
	EXPECT_EQ(buf.size, 4);
	EXPECT_EQ(buf.offset, 8);

	const Argument &first = d.args[2];
	ASSERT_EQ(first.step_count, 3);
	EXPECT_EQ(first.steps[1].op, Op::dereference);
	EXPECT_EQ(first.steps[1].value, 16);
	EXPECT_EQ(first.steps[2].value, 8);
	EXPECT_EQ(first.store, Store::memory);
	EXPECT_EQ(first.kind, Kind::signed_integer);
	EXPECT_EQ(first.size, 4);
	EXPECT_EQ(first.offset, 12);

	const Argument &name = d.args[3];
	ASSERT_EQ(name.step_count, 2);
	EXPECT_EQ(name.steps[0].op, Op::symbol_address);
	EXPECT_EQ(std::string(d.line + name.steps[0].text.start, name.steps[0].text.length), "init_task");
	EXPECT_EQ(name.steps[0].value, 1024);
	EXPECT_EQ(name.store, Store::memory);
	EXPECT_EQ(name.array, 16);
	EXPECT_EQ(name.offset, 16);

	EXPECT_EQ(d.args[4].steps[0].op, Op::comm);
	EXPECT_EQ(d.args[4].store, Store::string);
	EXPECT_EQ(d.args[5].steps[0].op, Op::argument);
	EXPECT_EQ(d.args[5].steps[0].value, 2);

	const Argument &u = d.args[6];
	ASSERT_EQ(u.step_count, 2);
	EXPECT_EQ(u.steps[0].op, Op::stack_entry);
	EXPECT_EQ(u.steps[0].value, 2);
	EXPECT_EQ(u.steps[1].op, Op::user_dereference);
	EXPECT_EQ(u.steps[1].value, 4);
	EXPECT_EQ(u.store, Store::user_memory);
	EXPECT_EQ(d.record_size, 32u + 4 + 8 + 2);
}

TEST(ProbeEvents, RiscvRegisterNames)
{
	ParseContext context;
	context.registers = riscv::event_registers;
	context.register_count = sizeof(riscv::event_registers) / sizeof(riscv::event_registers[0]);
	Parsed parsed = parse("p vfs_read a=%a0 r=%ra s=%s11 e=%epc", context);
	ASSERT_TRUE(parsed.result.ok()) << error_text(parsed.result.error);
	EXPECT_EQ(parsed.definition->args[0].steps[0].value, 80);
	EXPECT_EQ(parsed.definition->args[1].steps[0].value, 8);
	EXPECT_EQ(parsed.definition->args[2].steps[0].value, 216);
	EXPECT_EQ(parsed.definition->args[3].steps[0].value, 0);
	EXPECT_EQ(parse("p vfs_read %di", context).result.error, Error::bad_register_name);
	EXPECT_EQ(parse("p vfs_read %a0").result.error, Error::bad_register_name);
}

TEST(ProbeEvents, BitfieldsAndImmediates)
{
	Parsed parsed = parse("p vfs_read f=+0(%di):b4@2/32 i=\\-1 s=\\\"hi\" x=\\0x10:u8");
	ASSERT_TRUE(parsed.result.ok()) << error_text(parsed.result.error);
	const Definition &d = *parsed.definition;
	EXPECT_EQ(d.args[0].bit_width, 4);
	EXPECT_EQ(d.args[0].bit_offset, 2);
	EXPECT_EQ(d.args[0].size, 4);
	EXPECT_EQ(d.args[0].kind, Kind::unsigned_integer);
	EXPECT_EQ(d.args[1].steps[0].op, Op::immediate);
	EXPECT_EQ(d.args[1].steps[0].value, -1);
	EXPECT_EQ(d.args[2].steps[0].op, Op::immediate_string);
	EXPECT_EQ(std::string(d.line + d.args[2].steps[0].text.start, d.args[2].steps[0].text.length), "hi");
	EXPECT_EQ(d.args[3].steps[0].value, 16);
	EXPECT_EQ(d.args[3].size, 1);
}

TEST(ProbeEvents, RemovalNamesAnEventAGroupOrBoth)
{
	Parsed parsed = parse("-:grp/ev");
	ASSERT_TRUE(parsed.result.ok());
	EXPECT_EQ(parsed.definition->command, Command::remove);
	EXPECT_STREQ(parsed.definition->group, "grp");
	EXPECT_STREQ(parsed.definition->event, "ev");
	parsed = parse("-:ev vfs_read arg1=%di");
	ASSERT_TRUE(parsed.result.ok());
	EXPECT_STREQ(parsed.definition->group, "");
	EXPECT_STREQ(parsed.definition->event, "ev");
	const Span rest = parsed.definition->rest;
	EXPECT_EQ(std::string(parsed.definition->line + rest.start, rest.length), "vfs_read arg1=%di");
	parsed = parse("-:grp/");
	ASSERT_TRUE(parsed.result.ok());
	EXPECT_STREQ(parsed.definition->group, "grp");
	EXPECT_STREQ(parsed.definition->event, "");
	EXPECT_FALSE(parse("-").result.ok());
}

TEST(ProbeEvents, BlankLinesAndCommentsAreNothing)
{
	for (const char *line : {"", "   ", "# p vfs_read", "\t # comment"}) {
		Parsed parsed = parse(line);
		EXPECT_TRUE(parsed.result.ok());
		EXPECT_EQ(parsed.definition->command, Command::empty) << line;
	}
	EXPECT_EQ(canonical("  p:a/b \t vfs_read+0x10   arg=%di   # why"), "p:a/b vfs_read+16 arg=%di");
}

TEST(ProbeEvents, LimitsAreTheKernels)
{
	std::string line = "p vfs_read";
	for (int i = 0; i < 128; i++)
		line += " %di";
	Parsed parsed = parse(line);
	ASSERT_TRUE(parsed.result.ok()) << error_text(parsed.result.error);
	EXPECT_EQ(parsed.definition->arg_count, 128);
	EXPECT_STREQ(parsed.definition->args[127].name, "arg128");
	EXPECT_EQ(parse(line + " %si").result.error, Error::too_many_args);

	EXPECT_TRUE(parse("p vfs_read " + std::string(32, 'n') + "=%di").result.ok());
	EXPECT_TRUE(parse("p:" + std::string(63, 'e') + " vfs_read").result.ok());
	EXPECT_EQ(parse("p:" + std::string(64, 'e') + " vfs_read").result.error, Error::event_too_long);
	EXPECT_TRUE(parse("r4096 vfs_read").result.ok());
	EXPECT_EQ(parse("r4097 vfs_read").result.error, Error::maxactive_too_big);
	EXPECT_EQ(parse("r0 vfs_read").result.error, Error::bad_maxactive);

	// The body: 63 characters; nesting: 15 operations.
	std::string nested = "%di";
	for (int i = 0; i < 14; i++)
		nested = "+0(" + nested + ")";
	EXPECT_TRUE(parse("p vfs_read " + nested).result.ok()) << nested.size();
	EXPECT_EQ(parse("p vfs_read +0(" + nested + ")").result.error, Error::too_many_ops);

	// 3072 bytes of fields: six u64[64] arrays fit, the seventh does not.
	std::string arrays = "p vfs_read";
	for (int i = 0; i < 6; i++)
		arrays += " +0(%di):u64[64]";
	EXPECT_TRUE(parse(arrays).result.ok());
	Parsed big = parse(arrays + " +0(%di):u64[64]");
	EXPECT_EQ(big.result.error, Error::event_too_big);
	EXPECT_EQ(big.result.error_number, 7);

	std::string long_line = "p vfs_read " + std::string(max_line, ' ');
	EXPECT_EQ(parse(long_line).result.error, Error::line_too_long);
}

TEST(ProbeEvents, CanonicalFormParsesToItself)
{
	for (const char *line :
	     {"p:a/b vfs_read+5 len=%dx buf=+0(%si):string", "r7:g/e do_sys_open r=$retval c=$comm:string",
	      "p vfs_read +0(+8($stack)):u8[4] x=@jiffies:x32 b=+0(%di):b1@31/32 u=+u8(%si):u16", "p:x do_exit%return",
	      "p 0x1234 %ax"}) {
		std::string once = canonical(line);
		EXPECT_EQ(canonical(once), once) << line;
	}
}

TEST(ProbeEvents, FieldTypesAreTheKernelsFmttypes)
{
	Parsed parsed = parse("p vfs_read a=%di b=%si:s16 c=+0(%dx):u8[4] d=+0(%dx):string e=+0(%dx):string[2]");
	ASSERT_TRUE(parsed.result.ok());
	char type[32];
	const char *expected[] = {"u64", "s16", "u8[4]", "__data_loc char[]", "__data_loc char[][2]"};
	for (unsigned i = 0; i < 5; i++) {
		field_type(parsed.definition->args[i], type, sizeof(type));
		EXPECT_STREQ(type, expected[i]) << i;
	}
}

TEST(ProbeEvents, PrintFormatIsTheKernelsShape)
{
	Parsed parsed = parse("p vfs_read a=%di:u32 b=%si s=+0(%dx):string c=%cx:s64 w=+0(%di):x16[2] f=%ax:symbol");
	ASSERT_TRUE(parsed.result.ok());
	char buffer[1024];
	format_definition(*parsed.definition, buffer, sizeof(buffer));
	print_format(*parsed.definition, buffer, sizeof(buffer));
	EXPECT_STREQ(buffer, "\"(%lx) a=%u b=0x%Lx s=\\\"%s\\\" c=%Ld w={0x%x,0x%x} f=%pS\", REC->__probe_ip, REC->a, "
			     "REC->b, __get_str(s), REC->c, REC->w[0], REC->w[1], REC->f");
	Parsed r = parse("r vfs_read ret=$retval:s32");
	ASSERT_TRUE(r.result.ok());
	print_format(*r.definition, buffer, sizeof(buffer));
	EXPECT_STREQ(buffer, "\"(%lx <- %lx) ret=%d\", REC->__probe_func, REC->__probe_ret_ip, REC->ret");
}

// A line for an event that exists appends a probe to it, by the kernel's
// rules (6.1's append_trace_kprobe()): same kind, the same arguments by
// name, type and array length; not the same probe twice.
TEST(ProbeEventsAppend, ALikeLineJoinsTheEvent)
{
	Parsed event = parse("p:ev vfs_read a=%di:u32 s=+0(%si):string n=$arg3:b4@2/32");
	for (const char *line : {"p:ev vfs_write a=%dx:u32 s=+8(%si):string n=%cx:u32", "p:ev vfs_read+5 a=%di:u32 "
											"s=+0(%si):string "
											"n=%dx:b3@0/32"}) {
		Parsed added = parse(line);
		ASSERT_TRUE(added.result.ok()) << line;
		EXPECT_TRUE(check_join(*event.definition, *added.definition).ok()) << line;
		EXPECT_FALSE(same_probe(*event.definition, *added.definition)) << line;
	}
}

TEST(ProbeEventsAppend, RefusalsHaveTheKernelsClassAndCaret)
{
	Parsed event = parse("p:ev vfs_read a=%di:u32 b=%si");
	struct {
		const char *line;
		Error error;
		size_t column;
	} cases[] = {
		{"r:ev vfs_read a=$retval:u32 b=%si", Error::different_probe_type, 0},
		{"p:ev vfs_read a=%di:s32 b=%si", Error::different_argument, 14},
		{"p:ev vfs_read a=%di:u32 c=%si", Error::different_argument, 24},
		{"p:ev vfs_read a=%di:u32 b=+0(%si):string", Error::different_argument, 24},
		{"p:ev vfs_read a=%di:u32 b=%si c=%dx", Error::different_argument, 30},
		{"p:ev vfs_read a=%di:u32", Error::different_argument, 24},
		{"p:ev vfs_read a=+0(%di):u32[2] b=%si", Error::different_argument, 14},
		{"p:ev vfs_read a=%di:x32 b=%si", Error::different_argument, 14},
	};
	for (const auto &c : cases) {
		Parsed added = parse(c.line);
		ASSERT_TRUE(added.result.ok()) << c.line;
		ParseResult result = check_join(*event.definition, *added.definition);
		EXPECT_EQ(result.error, c.error) << c.line;
		EXPECT_EQ(result.error_number, 17) << c.line;
		EXPECT_EQ(result.column, c.column) << c.line;
	}
	// Unnamed arguments are argN on both sides.
	Parsed unnamed = parse("p:ev vfs_read %di %si");
	EXPECT_TRUE(check_join(*unnamed.definition, *parse("p:ev vfs_write %dx %cx").definition).ok());
}

TEST(ProbeEventsAppend, TheSameProbeIsItsPlaceAndArgumentsAsTyped)
{
	Parsed event = parse("p:ev vfs_read a=%di:u32");
	EXPECT_TRUE(same_probe(*event.definition, *parse("p:ev vfs_read a=%di:u32").definition));
	EXPECT_TRUE(same_probe(*event.definition, *parse("p:grp/ev vfs_read+0 a=%di:u32").definition));
	EXPECT_FALSE(same_probe(*event.definition, *parse("p:ev vfs_read a=%si:u32").definition));
	EXPECT_FALSE(same_probe(*event.definition, *parse("p:ev vfs_read+4 a=%di:u32").definition));
	EXPECT_FALSE(same_probe(*event.definition, *parse("p:ev m:vfs_read a=%di:u32").definition));
	// The kernel compares an address probe's symbol as "unknown": any two.
	Parsed address = parse("p:ev 0xffffffff81000000 a=%di:u32");
	EXPECT_TRUE(same_probe(*address.definition, *parse("p:ev 0xffffffff81000040 a=%di:u32").definition));
}

} // namespace
} // namespace okp::events

namespace okp::events {
namespace {

// A kernel's BTF for vfs_read and two more, as 6.6 and later read it.
struct FakeKernelBtf {
	host::BtfBuilder b;
	std::vector<uint32_t> bytes;
	btf::Types types;

	FakeKernelBtf()
	{
		const uint32_t uchar = b.integer("unsigned char", 1, false);
		const uint32_t u32 = b.integer("unsigned int", 4, false);
		const uint32_t u64 = b.integer("long unsigned int", 8, false);
		const uint32_t s64 = b.integer("long long int", 8, true);
		const uint32_t index = b.integer("int", 4, true);
		const uint32_t qstr =
			b.structure("qstr", 16, {{"hash_len", u64, 0}, {"name", b.pointer(b.const_(uchar)), 64}});
		const uint32_t dentry =
			b.structure("dentry", 96, {{"d_name", qstr, 256}, {"d_iname", b.array(uchar, index, 32), 512}});
		const uint32_t path =
			b.structure("path", 16, {{"mnt", b.pointer(u64), 0}, {"dentry", b.pointer(dentry), 64}});
		// f_bits: a 3-bit bitfield at bit 5 of byte 32 (kind_flag: the
		// members' bitfield sizes in their offsets' top byte).
		const uint32_t file = b.structure("file", 64,
						  {{"f_mode", u32, 0},
						   {"f_pos", s64, 64},
						   {"f_path", path, 128},
						   {"f_bits", u32, 3u << 24 | 261}},
						  false, true);
		const uint32_t ssize_t_ = b.typedef_("ssize_t", s64);
		b.function("vfs_read", ssize_t_,
			   {{"file", b.pointer(file)},
			    {"buf", b.pointer(uchar)},
			    {"count", b.typedef_("size_t", u64)},
			    {"pos", b.pointer(s64)}});
		b.function("void_fn", 0, {{"x", index}});
		b.function("no_params", index, {});
		// 7.3's typecasts and $current read a task_struct: in_execve a
		// bitfield (bit 33), se.group_node at byte 16, tasks at 80, pid at
		// 96, real_parent (a pointer to task_struct) at 104, comm at 112.
		const uint32_t list_head =
			b.structure("list_head", 16, {{"next", b.pointer(u64), 0}, {"prev", b.pointer(u64), 64}});
		const uint32_t sched_entity =
			b.structure("sched_entity", 64, {{"load", u64, 0}, {"group_node", list_head, 64}});
		const uint32_t comm = b.array(uchar, index, 16);
		const uint32_t task_pointer = b.pointer(b.last_id() + 2); // the next type's
		b.structure("task_struct", 256,
			    {{"__state", u32, 0},
			     {"in_execve", u32, 1u << 24 | 33},
			     {"se", sched_entity, 64},
			     {"tasks", list_head, 640},
			     {"pid", index, 768},
			     {"tgid", index, 800},
			     {"real_parent", task_pointer, 832},
			     {"comm", comm, 896}},
			    false, true);
		bytes = b.bytes();
		EXPECT_EQ(types.load(reinterpret_cast<const uint8_t *>(bytes.data()), b.size()), 0);
	}
};

FakeKernelBtf &kernel_btf()
{
	static FakeKernelBtf btf;
	return btf;
}

ParseContext btf_context()
{
	ParseContext context = x86_context();
	context.btf_arguments = true;
	context.btf = &kernel_btf().types;
	return context;
}

Parsed parse_btf(const std::string &line)
{
	return parse(line, btf_context());
}

TEST(ProbeEventsBtf, ParametersByNameAreTypedFromTheBtf)
{
	Parsed count = parse_btf("p vfs_read count");
	ASSERT_TRUE(count.result.ok()) << error_text(count.result.error);
	EXPECT_EQ(canonical(*count.definition), "p:okprobe/p_vfs_read_0 vfs_read count=count");
	const Argument &a = count.definition->args[0];
	EXPECT_EQ(a.kind, Kind::unsigned_integer);
	EXPECT_EQ(a.size, 8);
	ASSERT_EQ(a.step_count, 1);
	EXPECT_EQ(a.steps[0].op, Op::argument);
	EXPECT_EQ(a.steps[0].value, 2);
	EXPECT_EQ(a.store, Store::raw);

	// $argN is the parameter's name, its type kept; $arg* all of them.
	Parsed rewritten = parse_btf("p vfs_read $arg3:x32 $arg1");
	ASSERT_TRUE(rewritten.result.ok()) << error_text(rewritten.result.error);
	EXPECT_EQ(canonical(*rewritten.definition), "p:okprobe/p_vfs_read_0 vfs_read count=count:x32 file=file");
	Parsed all = parse_btf("p vfs_read $arg*");
	ASSERT_TRUE(all.result.ok());
	EXPECT_EQ(canonical(*all.definition), "p:okprobe/p_vfs_read_0 vfs_read file=file buf=buf count=count pos=pos");
	EXPECT_EQ(all.definition->args[0].kind, Kind::hex); // a pointer
	EXPECT_EQ(all.definition->args[2].kind, Kind::unsigned_integer);

	// Named as typed; a name given wins.
	Parsed named = parse_btf("p vfs_read n=count:s32");
	ASSERT_TRUE(named.result.ok());
	EXPECT_EQ(named.definition->args[0].kind, Kind::signed_integer);
	EXPECT_EQ(named.definition->args[0].size, 4);

	Parsed ret = parse_btf("r vfs_read $retval");
	ASSERT_TRUE(ret.result.ok());
	EXPECT_EQ(ret.definition->args[0].kind, Kind::signed_integer); // ssize_t
	EXPECT_EQ(ret.definition->args[0].size, 8);
	EXPECT_STREQ(ret.definition->args[0].name, "arg1");
}

// A module's split BTF (on the fake kernel's), with a function vmlinux's
// BTF has not; the parser asks for it through ParseContext::module_btf.
struct FakeModuleBtf {
	host::BtfBuilder b;
	std::vector<uint32_t> bytes;
	btf::Types types;
	std::vector<std::string> asked;

	FakeModuleBtf() : b(kernel_btf().types.count(), kernel_btf().b.string_bytes())
	{
		const uint32_t u32 = 2; // the base's "unsigned int"
		const uint32_t device = b.structure("okp_device", 8, {{"flags", u32, 0}, {"id", u32, 32}});
		b.function("okp_probe", u32, {{"dev", b.pointer(device)}, {"count", u32}});
		bytes = b.bytes();
		EXPECT_EQ(types.load(reinterpret_cast<const uint8_t *>(bytes.data()), b.size(), &kernel_btf().types),
			  0);
	}
	static const btf::Types *of(void *cookie, const char *function)
	{
		FakeModuleBtf &module = *static_cast<FakeModuleBtf *>(cookie);
		module.asked.push_back(function);
		return &module.types;
	}
};

TEST(ProbeEventsBtf, AFunctionVmlinuxLacksIsLookedUpInItsModulesBtf)
{
	FakeModuleBtf module;
	ParseContext context = btf_context();
	context.module_btf = FakeModuleBtf::of;
	context.cookie = &module;
	Parsed parsed = parse("p okp_probe count dev->id", context);
	ASSERT_TRUE(parsed.result.ok()) << error_text(parsed.result.error);
	EXPECT_EQ(canonical(*parsed.definition), "p:okprobe/p_okp_probe_0 okp_probe count=count arg2=dev->id");
	ASSERT_EQ(parsed.definition->args[1].step_count, 2);
	EXPECT_EQ(parsed.definition->args[1].steps[1].value, 4); // okp_device's id
	EXPECT_EQ(module.asked, std::vector<std::string>{"okp_probe"});

	// vmlinux's functions are vmlinux's; MOD:SYM names no function in any
	// BTF, as the kernel asks for the symbol as typed; without the
	// callback a module's function has no BTF.
	module.asked.clear();
	EXPECT_TRUE(parse("p vfs_read count", context).result.ok());
	Parsed typed = parse("p okp_mod:okp_probe count", context);
	EXPECT_EQ(typed.result.error, Error::no_btf_entry);
	EXPECT_TRUE(module.asked.empty());
	EXPECT_EQ(parse("p okp_probe count", btf_context()).result.error, Error::no_btf_entry);
}

TEST(ProbeEventsBtf, MembersAreLoadsAtTheirOffsets)
{
	Parsed pos = parse_btf("p vfs_read file->f_pos");
	ASSERT_TRUE(pos.result.ok()) << error_text(pos.result.error);
	const Argument &a = pos.definition->args[0];
	EXPECT_STREQ(a.name, "arg1");
	ASSERT_EQ(a.step_count, 2);
	EXPECT_EQ(a.steps[1].op, Op::dereference);
	EXPECT_EQ(a.steps[1].value, 8);
	EXPECT_EQ(a.kind, Kind::signed_integer);
	EXPECT_EQ(a.store, Store::memory);

	// A char pointer as a string: one more load; a char array where it is.
	Parsed name = parse_btf("p vfs_read name=file->f_path.dentry->d_name.name:string");
	ASSERT_TRUE(name.result.ok()) << error_text(name.result.error);
	const Argument &n = name.definition->args[0];
	ASSERT_EQ(n.step_count, 4);
	EXPECT_EQ(n.steps[1].value, 24); // f_path.dentry: 128 + 64 bits
	EXPECT_EQ(n.steps[2].value, 40); // d_name.name: 256 + 64 bits
	EXPECT_EQ(n.steps[3].op, Op::dereference);
	EXPECT_EQ(n.steps[3].value, 0);
	EXPECT_EQ(n.store, Store::string);
	Parsed iname = parse_btf("p vfs_read file->f_path.dentry->d_iname:string");
	ASSERT_TRUE(iname.result.ok());
	ASSERT_EQ(iname.definition->args[0].step_count, 3);
	EXPECT_EQ(iname.definition->args[0].steps[2].value, 64);
	EXPECT_EQ(parse_btf("p vfs_read buf:string").definition->args[0].step_count, 2);
	// +OFFS() of a member: the loaded value has no BTF type.
	Parsed deref = parse_btf("p vfs_read +0(file->f_pos)");
	ASSERT_TRUE(deref.result.ok());
	EXPECT_EQ(deref.definition->args[0].kind, Kind::hex);
}

// 6.5 and later's char type: a u8 field that prints as a character.
TEST(ProbeEventsGrammar, TheCharTypeWhereTheKernelHasIt)
{
	ParseContext context = x86_context();
	context.char_type = true;
	Parsed c = parse("p vfs_read c=+0(%si):char d=+0(%si):char[2]", context);
	ASSERT_TRUE(c.result.ok()) << error_text(c.result.error);
	EXPECT_EQ(c.definition->args[0].kind, Kind::character);
	EXPECT_EQ(c.definition->args[0].size, 1);
	char buffer[512];
	field_type(c.definition->args[0], buffer, sizeof(buffer));
	EXPECT_STREQ(buffer, "u8"); // the kernel's alias of u8
	print_format(*c.definition, buffer, sizeof(buffer));
	EXPECT_STREQ(buffer, "\"(%lx) c='%c' d={'%c','%c'}\", REC->__probe_ip, REC->c, REC->d[0], REC->d[1]");
	// A kernel without it: an unknown type.
	Parsed old = parse("p vfs_read c=+0(%si):char");
	EXPECT_EQ(old.result.error, Error::bad_type);
	EXPECT_EQ(old.result.column, 21);
}

// 6.10 and later's %pd and %pD: rewritten as the kernel rewrites them,
// with struct dentry's and struct file's offsets from the BTF.
TEST(ProbeEventsBtf, DentryTypesAreTheKernelsRewrite)
{
	ParseContext context = btf_context();
	context.dentry_types = true;
	Parsed names = parse("p vfs_read n=file:%pD $arg1:%pd", context);
	ASSERT_TRUE(names.result.ok()) << error_text(names.result.error);
	EXPECT_EQ(canonical(*names.definition), "p:okprobe/p_vfs_read_0 vfs_read n=+0x0(+0x28(+0x18(file))):string "
						"arg2=+0x0(+0x28(file)):string");
	EXPECT_EQ(names.definition->args[0].store, Store::string);
	// Without the type in the kernel's grammar: an unknown type.
	EXPECT_EQ(parse_btf("p vfs_read n=file:%pD").result.error, Error::bad_type);
}

// 6.9 and later: an r event fetches the function's arguments by name too,
// saved at the entry.
TEST(ProbeEventsBtf, ReturnEventsNameTheArgumentsTheEntrySaves)
{
	ParseContext context = btf_context();
	context.return_arguments = true;
	Parsed r = parse("r vfs_read count $retval", context);
	ASSERT_TRUE(r.result.ok()) << error_text(r.result.error);
	EXPECT_EQ(r.definition->entry_arguments, 3);
	EXPECT_EQ(r.definition->args[0].steps[0].op, Op::entry_argument);
	EXPECT_EQ(r.definition->args[0].kind, Kind::unsigned_integer);
	Parsed all = parse("r vfs_read $arg*", context);
	ASSERT_TRUE(all.result.ok());
	EXPECT_EQ(all.definition->entry_arguments, 4);
	EXPECT_EQ(canonical(*all.definition), "r:okprobe/r_vfs_read_0 vfs_read file=file buf=buf count=count pos=pos");
}

TEST(ProbeEventsBtf, RefusalsHaveTheKernelsClassErrnoAndCaret)
{
	struct {
		const char *line;
		Error error;
		int error_number;
		size_t column;
	} cases[] = {
		{"p vfs_read nosuch", Error::no_btf_argument, 2, 11},
		{"p vfs_read file.f_pos", Error::nosup_data_argument, 95, 16},
		{"p vfs_read file-f_pos", Error::bad_hyphen, 22, 15},
		{"p vfs_read count->x", Error::no_pointer_to_struct, 22, 18},
		{"p vfs_read file->nosuch", Error::no_btf_field, 2, 17},
		{"p vfs_read file->f_path->dentry", Error::no_pointer_to_struct, 22, 25},
		{"p vfs_read $arg5", Error::no_btf_argument, 2, 11},
		{"p vfs_read $arg0", Error::bad_argument_number, 22, 11},
		{"p vfs_read $arg1x", Error::bad_variable, 2, 11},
		{"p vfs_read $arg* $arg*", Error::double_args, 22, 17},
		{"p vfs_read $argx", Error::bad_variable, 22, 11},
		{"p vfs_read+4 $arg1", Error::nofentry_args, 22, 13},
		{"p vfs_read+4 count", Error::nosup_btf_argument, 22, 13},
		{"p non_btf_fn $arg*", Error::nosup_btf_argument, 95, 13},
		{"p no_params $arg*", Error::nosup_btf_argument, 95, 12},
		{"p non_btf_fn count", Error::no_btf_entry, 2, 13},
		{"p vfs_read file:string", Error::bad_type_for_string, 22, 11},
		{"r void_fn $retval", Error::no_retval, 2, 10},
		{"r vfs_read count", Error::return_entry_arguments, 95, 11}, // a kernel before 6.9
	};
	for (const auto &c : cases) {
		Parsed parsed = parse_btf(c.line);
		EXPECT_EQ(parsed.result.error, c.error) << c.line << ": " << error_text(parsed.result.error);
		EXPECT_EQ(parsed.result.error_number, c.error_number) << c.line;
		EXPECT_EQ(parsed.result.column, c.column) << c.line;
	}
	// A function without BTF keeps $argN as the register it is.
	Parsed plain = parse_btf("p non_btf_fn $arg1");
	ASSERT_TRUE(plain.result.ok());
	EXPECT_EQ(canonical(*plain.definition), "p:okprobe/p_non_btf_fn_0 non_btf_fn arg1=$arg1");
	// 6.1's grammar has none of it.
	EXPECT_EQ(parse("p vfs_read count").result.error, Error::bad_fetch_argument);
}

// 7.3's grammar: typecasts, $current, this_cpu_*(), its nesting limit and
// 255-character arguments (the README's "this_cpu_read(", "[(structname"
// and "$current").
ParseContext context_73()
{
	ParseContext context = btf_context();
	context.return_arguments = true;
	context.nested_arguments = true;
	context.typecasts = true;
	context.current_task = true;
	return context;
}

void expect_marked(const ErrorCase &error_case, const ParseContext &context)
{
	std::string marked = error_case.marked;
	size_t caret = marked.find('^');
	ASSERT_NE(caret, std::string::npos) << marked;
	std::string line = marked.substr(0, caret) + marked.substr(caret + 1);
	Parsed parsed = parse(line, context);
	EXPECT_EQ(parsed.result.error, error_case.error)
		<< marked << ": " << error_text(parsed.result.error) << " at " << parsed.result.column;
	EXPECT_EQ(parsed.result.error_number, error_case.error_number) << marked;
	EXPECT_EQ(parsed.result.column, caret) << marked << ": " << error_text(parsed.result.error);
}

std::string long_dereference(unsigned levels)
{
	std::string line;
	for (unsigned i = 0; i < levels; i++)
		line += "+1234567(";
	line += "@1234";
	for (unsigned i = 0; i < levels; i++)
		line += ")";
	return line;
}

// 7.3's kprobe_syntax_errors.tc: its typecast block line by line, and the
// lines it changed (the nesting limit, a longer argument).
TEST(ProbeEvents73, KernelSelftestErrorsGetTheKernelsClassAndCaret)
{
	for (const host::SyntaxErrorCase &c : host::kprobe_syntax_typecast_errors_73)
		expect_marked({c.marked, c.error, c.error_number}, context_73());
	const ErrorCase cases[] = {
		{"p vfs_read +0(+0(+0(+0(+0(+0(+0(+0(^+0(@0)))))))))", Error::too_many_nested, 7},
		{"p vfs_read +0(+0(+0(+0(+0(+0(+0(+0(^+0(+0(+0(+0(+0(+0(@0))))))))))))))", Error::too_many_nested, 7},
		// The rest of its lines mean what they meant to 6.12, but for
		// FILE_ON_KPROBE's new text.
		{"p vfs_read ^@+10", Error::file_offset_on_kernel_probe, 22},
		{"p vfs_read +0(^$comm)", Error::comm_cannot_dereference, 22},
		{"p vfs_read +0(+0(@0^)", Error::dereference_not_closed, 22},
		{"p vfs_read ^hoge", Error::no_btf_argument, 2},
		{"p vfs_read ^&1", Error::bad_fetch_argument, 22},
	};
	for (const ErrorCase &error_case : cases)
		expect_marked(error_case, context_73());
	// ARG_TOO_LONG (its line: 26 dereferences), at 256 characters; 255
	// are an argument (and 64 were too many before).
	Parsed too_long = parse("p vfs_read " + long_dereference(26), context_73());
	EXPECT_EQ(too_long.result.error, Error::argument_too_long);
	EXPECT_EQ(too_long.result.column, 11);
	const std::string longest = "a=\\0x" + std::string(251, '0') + "1"; // 255 after the '='
	ASSERT_EQ(longest.size(), 257u);
	Parsed taken = parse("p vfs_read " + longest, context_73());
	ASSERT_TRUE(taken.result.ok()) << error_text(taken.result.error);
	EXPECT_EQ(taken.definition->args[0].steps[0].value, 1);
	EXPECT_EQ(parse("p vfs_read a=\\0x" + std::string(252, '0') + "1", context_73()).result.error,
		  Error::argument_too_long);
	EXPECT_EQ(parse("p vfs_read a=\\0x" + std::string(60, '0') + "1", btf_context()).result.error,
		  Error::argument_too_long);
}

// A typecast's fetch: the inner argument, then a load per "->" from
// STRUCT's members on, the first less the FIELD option's offset; typed by
// the last member.
TEST(ProbeEvents73, TypecastsLoadFromTheStructsMembers)
{
	struct {
		const char *line;
		std::vector<std::pair<Op, int64_t>> steps;
		Kind kind;
		uint8_t size;
		Store store;
	} cases[] = {
		{"p vfs_read (task_struct)file->pid",
		 {{Op::argument, 0}, {Op::dereference, 96}},
		 Kind::signed_integer,
		 4,
		 Store::memory},
		// file points at a task_struct's tasks, or at its se.group_node.
		{"p vfs_read (task_struct,tasks)file->pid",
		 {{Op::argument, 0}, {Op::dereference, 16}},
		 Kind::signed_integer,
		 4,
		 Store::memory},
		{"p vfs_read (task_struct,se.group_node)file->tgid",
		 {{Op::argument, 0}, {Op::dereference, 84}},
		 Kind::signed_integer,
		 4,
		 Store::memory},
		{"p vfs_read (task_struct,pid)file->tasks.prev",
		 {{Op::argument, 0}, {Op::dereference, -8}},
		 Kind::hex,
		 8,
		 Store::memory},
		{"p vfs_read (task_struct)file->real_parent->comm:string",
		 {{Op::argument, 0}, {Op::dereference, 104}, {Op::dereference, 112}},
		 Kind::string,
		 4,
		 Store::string},
		// (FETCHARG): a member, a register, a dereference, this_cpu_read().
		{"p vfs_read (task_struct)(file->f_path.dentry)->pid",
		 {{Op::argument, 0}, {Op::dereference, 24}, {Op::dereference, 96}},
		 Kind::signed_integer,
		 4,
		 Store::memory},
		{"p vfs_read (task_struct)%di->se.group_node.prev",
		 {{Op::register_value, 112}, {Op::dereference, 24}},
		 Kind::hex,
		 8,
		 Store::memory},
		{"p vfs_read (task_struct)+8(%di)->pid",
		 {{Op::register_value, 112}, {Op::dereference, 8}, {Op::dereference, 96}},
		 Kind::signed_integer,
		 4,
		 Store::memory},
		{"p vfs_read (task_struct)this_cpu_read(@current_task)->pid",
		 {{Op::symbol_address, 0}, {Op::cpu_pointer, 0}, {Op::dereference, 0}, {Op::dereference, 96}},
		 Kind::signed_integer,
		 4,
		 Store::memory},
		{"p vfs_read (task_struct)((task_struct)file->real_parent)->tgid",
		 {{Op::argument, 0}, {Op::dereference, 104}, {Op::dereference, 100}},
		 Kind::signed_integer,
		 4,
		 Store::memory},
		{"p vfs_read (task_struct)(@current_task+8)->pid",
		 {{Op::symbol_address, 8}, {Op::dereference, 0}, {Op::dereference, 96}},
		 Kind::signed_integer,
		 4,
		 Store::memory},
		// An r event's: $retval and the entry's arguments.
		{"r vfs_read (task_struct)$retval->pid",
		 {{Op::return_value, 0}, {Op::dereference, 96}},
		 Kind::signed_integer,
		 4,
		 Store::memory},
		{"r vfs_read (task_struct)file->pid",
		 {{Op::entry_argument, 0}, {Op::dereference, 96}},
		 Kind::signed_integer,
		 4,
		 Store::memory},
	};
	for (const auto &c : cases) {
		Parsed parsed = parse(c.line, context_73());
		ASSERT_TRUE(parsed.result.ok())
			<< c.line << ": " << error_text(parsed.result.error) << " at " << parsed.result.column;
		const Argument &a = parsed.definition->args[0];
		EXPECT_STREQ(a.name, "arg1") << c.line;
		ASSERT_EQ(a.step_count, c.steps.size()) << c.line;
		for (size_t i = 0; i < c.steps.size(); i++) {
			EXPECT_EQ(a.steps[i].op, c.steps[i].first) << c.line << " step " << i;
			EXPECT_EQ(a.steps[i].value, c.steps[i].second) << c.line << " step " << i;
		}
		EXPECT_EQ(a.kind, c.kind) << c.line;
		EXPECT_EQ(a.size, c.size) << c.line;
		EXPECT_EQ(a.store, c.store) << c.line;
	}
	// The canonical form is the line as typed.
	Parsed named = parse("p vfs_read p=(task_struct,tasks)file->pid:u32", context_73());
	ASSERT_TRUE(named.result.ok());
	EXPECT_EQ(canonical(*named.definition), "p:okprobe/p_vfs_read_0 vfs_read p=(task_struct,tasks)file->pid:u32");
}

// Where each typecast refusal goes that the kernel's selftest does not
// try, by handle_typecast()'s and the unwind's rules.
TEST(ProbeEvents73, TypecastRefusalsHaveTheKernelsClassErrnoAndCaret)
{
	const ErrorCase cases[] = {
		{"p vfs_read arg1=(task_struct^", Error::dereference_not_closed, 22},
		{"p vfs_read arg1=(task_struct)^(file->pid", Error::dereference_not_closed, 22},
		{"p vfs_read arg1=(task_struct)(file)^pid", Error::typecast_required_field, 22},
		{"p vfs_read arg1=(task_struct)^+8file->pid", Error::dereference_needs_brace, 22},
		{"p vfs_read arg1=(task_struct)+8(file->pid^", Error::dereference_not_closed, 22},
		{"p vfs_read arg1=(task_struct)+8(file)^.pid", Error::typecast_required_field, 22},
		{"p vfs_read arg1=(task_struct)file-^", Error::typecast_required_field, 22},
		// "-" after the cast starts a dereference.
		{"p vfs_read arg1=(task_struct)^->pid", Error::dereference_needs_brace, 22},
		{"p vfs_read arg1=(task_struct)^nosuch->pid", Error::no_btf_argument, 2},
		{"p vfs_read arg1=(task_struct)+0(^$comm)->pid", Error::comm_cannot_dereference, 22},
		{"p vfs_read arg1=(task_struct)file->^nosuch", Error::no_btf_field, 2},
		{"p vfs_read arg1=(task_struct)file->pid->^x", Error::no_pointer_to_struct, 22},
		{"p vfs_read arg1=(task_struct)file->se^-x", Error::bad_hyphen, 22},
		{"p vfs_read arg1=(task_struct,in_execve->^x)file->pid", Error::typecast_not_aligned, 22},
		{"p vfs_read arg1=(^file_operations)file->pid", Error::no_pointer_to_struct, 22},
		// Off a function's entry, no BTF grammar (EOPNOTSUPP).
		{"p vfs_read+4 arg1=^(task_struct)%di->pid", Error::nosup_btf_argument, 95},
		// The inner argument's refusal comes before the struct's.
		{"p vfs_read arg1=(task_struct1234)^%none->pid", Error::bad_register_name, 22},
	};
	for (const ErrorCase &error_case : cases)
		expect_marked(error_case, context_73());
	// The README without "[(structname" (no BTF grammar): EOPNOTSUPP.
	ParseContext no_typecasts = context_73();
	no_typecasts.typecasts = false;
	expect_marked({"p vfs_read arg1=^(task_struct)file->pid", Error::nosup_btf_argument, 95}, no_typecasts);
}

// $current: the task_struct; with BTF, its members, the first read in the
// struct itself. Anywhere a kernel probe is, without the function's BTF.
TEST(ProbeEvents73, CurrentIsTheTasksTaskStruct)
{
	Parsed plain = parse("p vfs_read+4 $current", context_73());
	ASSERT_TRUE(plain.result.ok()) << error_text(plain.result.error);
	const Argument &task = plain.definition->args[0];
	ASSERT_EQ(task.step_count, 1);
	EXPECT_EQ(task.steps[0].op, Op::current_task);
	EXPECT_EQ(task.kind, Kind::hex);
	EXPECT_EQ(task.store, Store::raw);
	EXPECT_STREQ(task.name, "arg1");

	Parsed pid = parse("p vfs_read+4 $current->pid", context_73());
	ASSERT_TRUE(pid.result.ok()) << error_text(pid.result.error);
	const Argument &p = pid.definition->args[0];
	ASSERT_EQ(p.step_count, 2);
	EXPECT_EQ(p.steps[1].op, Op::dereference);
	EXPECT_EQ(p.steps[1].value, 96);
	EXPECT_EQ(p.kind, Kind::signed_integer);
	EXPECT_EQ(p.size, 4);
	EXPECT_EQ(p.store, Store::memory);

	// A bitfield member's shift takes one more slot of the code buffer
	// (7.3's parse_btf_bitfield()): 14 steps and the bitfield fit, 15
	// and the bitfield do not (TOO_MANY_OPS, EINVAL).
	std::string chain = "p vfs_read+4 $current";
	for (int i = 0; i < 12; i++)
		chain += "->real_parent";
	Parsed fits = parse(chain + "->in_execve", context_73());
	ASSERT_TRUE(fits.result.ok()) << error_text(fits.result.error);
	EXPECT_EQ(fits.definition->args[0].step_count, 14);
	EXPECT_EQ(fits.definition->args[0].bit_width, 1);
	Parsed full = parse(chain + "->real_parent->in_execve", context_73());
	EXPECT_EQ(full.result.error, Error::too_many_ops);
	EXPECT_EQ(full.result.error_number, 22); // EINVAL
	ASSERT_TRUE(parse(chain + "->real_parent->pid", context_73()).result.ok()) << "15 steps without a bitfield fit";

	Parsed comm = parse("r vfs_read c=$current->real_parent->comm:string", context_73());
	ASSERT_TRUE(comm.result.ok()) << error_text(comm.result.error);
	const Argument &c = comm.definition->args[0];
	ASSERT_EQ(c.step_count, 3);
	EXPECT_EQ(c.steps[1].value, 104);
	EXPECT_EQ(c.steps[2].value, 112);
	EXPECT_EQ(c.store, Store::string);
	EXPECT_TRUE(parse("p 0xffffffff81000000 $current->pid", context_73()).result.ok());

	// A bitfield member: its bits of the u32 loaded at its byte.
	Parsed bit = parse("p vfs_read $current->in_execve", context_73());
	ASSERT_TRUE(bit.result.ok()) << error_text(bit.result.error);
	EXPECT_EQ(bit.definition->args[0].steps[1].value, 4);
	EXPECT_EQ(bit.definition->args[0].kind, Kind::unsigned_integer);
	EXPECT_EQ(bit.definition->args[0].size, 4);
	EXPECT_EQ(bit.definition->args[0].bit_width, 1);
	EXPECT_EQ(bit.definition->args[0].bit_offset, 1);
	EXPECT_TRUE(parse("p vfs_read +0($current):u32", context_73()).result.ok());

	const ErrorCase cases[] = {
		{"p vfs_read ^$current.comm", Error::bad_variable, 22},
		{"p vfs_read ^$currentx", Error::bad_variable, 22},
		{"p vfs_read $current^-x", Error::bad_hyphen, 22},
		{"p vfs_read $current->^nosuch", Error::no_btf_field, 2},
		{"p vfs_read $current->pid->^x", Error::no_pointer_to_struct, 22},
		{"p vfs_read $current:^string", Error::bad_string, 22},
	};
	for (const ErrorCase &error_case : cases)
		expect_marked(error_case, context_73());
	// Without the BTF grammar: $current only.
	ParseContext no_btf = x86_context();
	no_btf.current_task = true;
	no_btf.nested_arguments = true;
	EXPECT_TRUE(parse("p vfs_read $current", no_btf).result.ok());
	expect_marked({"p vfs_read ^$current->pid", Error::bad_variable, 22}, no_btf);
	// The BTF grammar, but no vmlinux BTF to read.
	ParseContext unread = context_73();
	unread.btf = nullptr;
	expect_marked({"p vfs_read ^$current->pid", Error::no_btf_entry, 2}, unread);
}

// this_cpu_ptr(): this CPU's copy of a per-cpu address (of @SYM the
// symbol's address, in place of its load); this_cpu_read() a load there.
TEST(ProbeEvents73, ThisCpuReadsAPerCpuCopy)
{
	struct {
		const char *line;
		std::vector<std::pair<Op, int64_t>> steps;
		Store store;
		uint8_t size;
	} cases[] = {
		{"p vfs_read this_cpu_ptr(@runqueues)", {{Op::symbol_address, 0}, {Op::cpu_pointer, 0}}, Store::raw, 8},
		{"p vfs_read this_cpu_read(@current_task)",
		 {{Op::symbol_address, 0}, {Op::cpu_pointer, 0}, {Op::dereference, 0}},
		 Store::memory,
		 8},
		{"p vfs_read this_cpu_read(%di):u32",
		 {{Op::register_value, 112}, {Op::cpu_pointer, 0}, {Op::dereference, 0}},
		 Store::memory,
		 4},
		{"p vfs_read this_cpu_ptr(+8(%di))",
		 {{Op::register_value, 112}, {Op::dereference, 8}, {Op::cpu_pointer, 0}},
		 Store::raw,
		 8},
		{"p vfs_read +16(this_cpu_read(@x)):u16",
		 {{Op::symbol_address, 0}, {Op::cpu_pointer, 0}, {Op::dereference, 0}, {Op::dereference, 16}},
		 Store::memory,
		 2},
	};
	for (const auto &c : cases) {
		Parsed parsed = parse(c.line, context_73());
		ASSERT_TRUE(parsed.result.ok()) << c.line << ": " << error_text(parsed.result.error);
		const Argument &a = parsed.definition->args[0];
		ASSERT_EQ(a.step_count, c.steps.size()) << c.line;
		for (size_t i = 0; i < c.steps.size(); i++) {
			EXPECT_EQ(a.steps[i].op, c.steps[i].first) << c.line << " step " << i;
			EXPECT_EQ(a.steps[i].value, c.steps[i].second) << c.line << " step " << i;
		}
		EXPECT_EQ(a.store, c.store) << c.line;
		EXPECT_EQ(a.size, c.size) << c.line;
	}
	const ErrorCase refused[] = {
		{"p vfs_read this_cpu_ptr(%di^", Error::dereference_not_closed, 22},
		{"p vfs_read this_cpu_read(^$comm)", Error::comm_cannot_dereference, 22},
		{"p vfs_read this_cpu_ptr(%di)^x", Error::trailing_text, 22},
		{"p vfs_read this_cpu_ptr(^%none)", Error::bad_register_name, 22},
		{"p vfs_read this_cpu_ptr(%di):^string", Error::bad_string, 22},
		{"p vfs_read ^this_cpu_pointer(%di)", Error::no_btf_argument, 2},
		// Eight levels nest, this_cpu_*() among them; a ninth is refused.
		{"p vfs_read +0(+0(this_cpu_read(+0(+0(+0(+0(+0(^this_cpu_ptr(%di)))))))))", Error::too_many_nested, 7},
	};
	for (const ErrorCase &error_case : refused)
		expect_marked(error_case, context_73());
	EXPECT_TRUE(parse("p vfs_read +0(+0(this_cpu_read(+0(+0(+0(+0(+0(%di))))))))", context_73()).result.ok());
}

// 6.12's grammar (no "this_cpu_read(", "[(structname", "$current" in its
// README): each 7.3 form refused as 6.12 refuses it, its limits its own.
TEST(ProbeEvents73, WithoutTheGrammarEach73FormIsRefusedAs612Does)
{
	const ErrorCase cases[] = {
		{"p vfs_read arg1=^(task_struct)file->pid", Error::bad_fetch_argument, 22},
		{"p vfs_read ^$current", Error::bad_variable, 22},
		{"p vfs_read ^$current->pid", Error::bad_variable, 22},
		{"p vfs_read ^this_cpu_read(@current_task)", Error::no_btf_argument, 2},
		{"p vfs_read +0(^+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(+0(@0))))))))))))))", Error::too_many_ops, 22},
	};
	for (const ErrorCase &error_case : cases)
		expect_marked(error_case, btf_context());
	// Nine dereferences are not too many.
	EXPECT_TRUE(parse("p vfs_read +0(+0(+0(+0(+0(+0(+0(+0(+0(@0)))))))))", btf_context()).result.ok());
	// Without the BTF grammar (6.1): not a fetch argument.
	expect_marked({"p vfs_read ^this_cpu_ptr(%di)", Error::bad_fetch_argument, 22}, x86_context());
	// 7.2: typecasts for eprobes only, a kprobe's '(' refused by their text.
	ParseContext eprobes_only = btf_context();
	eprobes_only.eprobe_typecasts = true;
	expect_marked({"p vfs_read arg1=^(task_struct)file->pid", Error::typecast_not_event, 22}, eprobes_only);
	expect_marked({"p vfs_read ^$current", Error::bad_variable, 22}, eprobes_only);
}

// A bitfield member (6.6 and later: parse_btf_bitfield()): its type's
// bytes loaded at the byte it starts in, its bits shifted out of them.
TEST(ProbeEventsBtf, BitfieldMembersAreTheirBits)
{
	Parsed bits = parse_btf("p vfs_read file->f_bits");
	ASSERT_TRUE(bits.result.ok()) << error_text(bits.result.error);
	const Argument &a = bits.definition->args[0];
	ASSERT_EQ(a.step_count, 2);
	EXPECT_EQ(a.steps[1].value, 32);
	EXPECT_EQ(a.kind, Kind::unsigned_integer);
	EXPECT_EQ(a.size, 4);
	EXPECT_EQ(a.bit_width, 3);
	EXPECT_EQ(a.bit_offset, 5);
	EXPECT_EQ(a.store, Store::memory);
	// Typed: the type's bytes as they are, as the kernel's.
	Parsed typed = parse_btf("p vfs_read file->f_bits:u32");
	ASSERT_TRUE(typed.result.ok());
	EXPECT_EQ(typed.definition->args[0].bit_width, 0);
}

} // namespace
} // namespace okp::events
