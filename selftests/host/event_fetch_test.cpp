// SPDX-License-Identifier: GPL-2.0
// okprobe_events fetch programs at a hit (src/core/event_fetch.cpp), over
// fake registers and memory: the fields and strings of the event record.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/event_fetch.hpp"
#include "core/event_record_layout.hpp"
#include "riscv/event_registers.hpp"
#include "x86/event_registers.hpp"

namespace okp::events {
namespace {

// A hit: registers by pt_regs offset, memory as mapped ranges.
struct FakeHit {
	std::map<unsigned, uint64_t> registers;
	std::map<uint64_t, std::vector<uint8_t>> memory; // start -> bytes
	std::map<uint64_t, std::vector<uint8_t>> user_memory;
	uint64_t stack[8] = {};
	uint64_t stack_pointer = 0x7000;
	uint64_t return_value = 0;
	const char *comm = "okptest";
	// current (a fake task_struct's address) and this CPU's per-cpu
	// offset, which this_cpu_ptr() adds.
	uint64_t task = 0;
	uint64_t per_cpu_offset = 0;
	// The pt_regs the fetch programs read (x86's: 21 words).
	uint64_t pt_regs[40] = {};

	bool read(uint64_t address, void *to, size_t size, bool user) const
	{
		// The host's own memory (a definition's immediate strings):
		// user-space addresses of this test process.
		if (!user && address >= 0x500000000000ull && address < 0x800000000000ull) {
			std::memcpy(to, reinterpret_cast<const void *>(address), size);
			return true;
		}
		for (const auto &[start, bytes] : user ? user_memory : memory)
			if (address >= start && address + size <= start + bytes.size()) {
				std::memcpy(to, bytes.data() + (address - start), size);
				return true;
			}
		return false;
	}
};

// The hit the fake glue reads memory for.
FakeHit *current_hit;

FetchEnvironment environment_of(FakeHit &hit, const RegisterLayout &layout = x86::event_register_layout)
{
	current_hit = &hit;
	for (const auto &[offset, value] : hit.registers)
		hit.pt_regs[offset / 8] = value;
	hit.pt_regs[layout.stack_pointer / 8] = hit.stack_pointer;
	if (hit.return_value)
		hit.pt_regs[layout.return_value / 8] = hit.return_value;
	FetchEnvironment env;
	env.registers = reinterpret_cast<const uint8_t *>(hit.pt_regs);
	env.layout = &layout;
	env.comm = hit.comm;
	env.task = reinterpret_cast<const void *>(hit.task);
	return env;
}

} // namespace
} // namespace okp::events

// The glue's memory reads (glue_services.h), over the current fake hit.
using okp::events::current_hit;

extern "C" int okp_glue_event_read(unsigned long address, void *to, unsigned long size, int user)
{
	return current_hit->read(address, to, size, user);
}

extern "C" unsigned long okp_glue_event_read_string(unsigned long address, char *to, unsigned long size, int user)
{
	std::string text;
	for (;; address++) {
		char byte;
		if (!current_hit->read(address, &byte, 1, user))
			return 0;
		if (!byte)
			break;
		text += byte;
	}
	size_t length = text.size() + 1;
	if (size == 0)
		return length;
	if (length > size)
		length = size;
	std::memcpy(to, text.data(), length - 1);
	to[length - 1] = '\0';
	return length;
}

extern "C" unsigned long okp_glue_event_symbol_string(unsigned long address, char *to, unsigned long size)
{
	std::string text = "sym+0x" + std::to_string(address & 0xf) + "/0x10";
	if (size == 0)
		return text.size() + 1;
	std::strncpy(to, text.c_str(), size);
	return text.size() + 1 <= size ? text.size() + 1 : size;
}

extern "C" unsigned long okp_glue_event_cpu_pointer(unsigned long address)
{
	return address + current_hit->per_cpu_offset;
}

extern "C" unsigned long okp_glue_event_stack_word(unsigned long stack_pointer, unsigned int index)
{
	if (stack_pointer != current_hit->stack_pointer || index >= 8)
		return 0;
	return current_hit->stack[index];
}

namespace okp::events {
namespace {

std::vector<uint8_t> cstring(const std::string &s)
{
	std::vector<uint8_t> v(s.begin(), s.end());
	v.push_back(0);
	return v;
}

template <typename T> std::vector<uint8_t> raw(const T &value)
{
	std::vector<uint8_t> v(sizeof(T));
	std::memcpy(v.data(), &value, sizeof(T));
	return v;
}

struct Record {
	std::vector<uint8_t> bytes;
	size_t header = 16; // a trace_entry and the probe's ip, say

	template <typename T> T field(const Argument &argument, unsigned index = 0) const
	{
		T value;
		std::memcpy(&value, bytes.data() + header + argument.offset + sizeof(T) * index, sizeof(T));
		return value;
	}
	// A __data_loc string field's text; "(fault)" for an empty one.
	std::string string(const Argument &argument, unsigned index = 0) const
	{
		uint32_t loc = field<uint32_t>(argument, index);
		if ((loc >> 16) == 0)
			return "(fault)";
		return std::string(reinterpret_cast<const char *>(bytes.data() + (loc & 0xffff)));
	}
};

struct Hit {
	std::unique_ptr<Definition> definition = std::make_unique<Definition>();
	Record record;
};

ParseContext x86_context()
{
	ParseContext context;
	context.registers = x86::event_registers;
	context.register_count = sizeof(x86::event_registers) / sizeof(x86::event_registers[0]);
	return context;
}

Hit hit(const std::string &line, FakeHit &fake, bool is_return = false, const ParseContext &context = x86_context())
{
	Hit result;
	std::string text = (is_return ? "r " : "p ") + std::string("vfs_read ") + line;
	ParseResult parsed = parse_line(text.data(), text.size(), context, *result.definition);
	EXPECT_TRUE(parsed.ok()) << text << ": " << error_text(parsed.error);
	const Definition &d = *result.definition;
	FetchEnvironment env = environment_of(fake);
	size_t dynamic = dynamic_size(d, env);
	result.record.bytes.assign(result.record.header + d.record_size + dynamic, 0xee);
	store_arguments(d, env, result.record.bytes.data(), result.record.bytes.data() + result.record.header, dynamic);
	return result;
}

TEST(EventFetch, RegistersArgumentsStackAndReturnValue)
{
	FakeHit fake;
	fake.registers[96] = 0x1122334455667788; // dx
	fake.registers[112] = 7;		 // di, the first argument
	fake.stack[2] = 0xabc;
	Hit h = hit("len=%dx small=%dx:u8 neg=%dx:s16 a=$arg1 s=$stack2 sp=$stack", fake);
	const Argument *a = h.definition->args;
	EXPECT_EQ(h.record.field<uint64_t>(a[0]), 0x1122334455667788u);
	EXPECT_EQ(h.record.field<uint8_t>(a[1]), 0x88);
	EXPECT_EQ(h.record.field<int16_t>(a[2]), static_cast<int16_t>(0x7788));
	EXPECT_EQ(h.record.field<uint64_t>(a[3]), 7u);
	EXPECT_EQ(h.record.field<uint64_t>(a[4]), 0xabcu);
	EXPECT_EQ(h.record.field<uint64_t>(a[5]), 0x7000u);

	FakeHit returned;
	returned.return_value = static_cast<uint64_t>(-2);
	Hit r = hit("ret=$retval:s32", returned, true);
	EXPECT_EQ(r.record.field<int32_t>(r.definition->args[0]), -2);
}

// $argN past the argument registers: x86's regs_get_kernel_argument()
// reads the stack above the return address, riscv's gives 0.
TEST(EventFetch, ArgumentsPastTheRegistersAsEachArchReadsThem)
{
	FakeHit fake;
	fake.registers[64] = 6; // r9, the sixth argument
	fake.stack[1] = 7;	// the seventh, above the return address
	fake.stack[2] = 8;
	Hit h = hit("six=$arg6 seven=$arg7 eight=$arg8", fake);
	const Argument *a = h.definition->args;
	EXPECT_EQ(h.record.field<uint64_t>(a[0]), 6u);
	EXPECT_EQ(h.record.field<uint64_t>(a[1]), 7u);
	EXPECT_EQ(h.record.field<uint64_t>(a[2]), 8u);

	ParseContext context;
	context.registers = riscv::event_registers;
	context.register_count = sizeof(riscv::event_registers) / sizeof(riscv::event_registers[0]);
	auto d = std::make_unique<Definition>();
	std::string text = "p f first=$arg1 eighth=$arg8 ninth=$arg9 sp=$stack word=$stack1 t0=%t0";
	ASSERT_TRUE(parse_line(text.data(), text.size(), context, *d).ok());
	FakeHit rv;
	rv.registers[80] = 1;	   // a0
	rv.registers[136] = 8;	   // a7
	rv.registers[40] = 0x7777; // t0
	rv.stack[1] = 0x5151;
	FetchEnvironment env = environment_of(rv, riscv::event_register_layout);
	std::vector<uint8_t> record(d->record_size, 0xee);
	store_arguments(*d, env, record.data(), record.data(), 0);
	uint64_t fields[6];
	std::memcpy(fields, record.data(), sizeof(fields));
	EXPECT_EQ(fields[0], 1u);
	EXPECT_EQ(fields[1], 8u);
	EXPECT_EQ(fields[2], 0u);
	EXPECT_EQ(fields[3], 0x7000u); // sp, at riscv's offset 16
	EXPECT_EQ(fields[4], 0x5151u);
	EXPECT_EQ(fields[5], 0x7777u);
}

// 7.3's $current and this_cpu_*(): the task's task_struct, and this CPU's
// copy of a per-cpu address (this_cpu_ptr() adds the CPU's offset); of
// @ADDR the address itself, not what is there.
TEST(EventFetch, CurrentAndThisCpuAsTheKernelFetchesThem)
{
	ParseContext context = x86_context();
	context.nested_arguments = true;
	context.current_task = true;
	FakeHit fake;
	fake.task = 0x4000;
	fake.per_cpu_offset = 0x100;
	fake.registers[112] = 0x1000; // di: a per-cpu address
	fake.memory[0x1100] = raw<uint64_t>(0x1122334455667788);
	fake.memory[0x4000] = raw<uint64_t>(0xfffffffb00000000ull); // +4: -5 as s32
	Hit h = hit("task=$current pid=+4($current):s32 ptr=this_cpu_ptr(%di) word=this_cpu_read(%di) "
		    "half=this_cpu_read(%di):u16 sym=this_cpu_ptr(@0x1000) val=this_cpu_read(@0x1000) "
		    "far=this_cpu_read(+8(%di))",
		    fake, false, context);
	const Argument *a = h.definition->args;
	EXPECT_EQ(h.record.field<uint64_t>(a[0]), 0x4000u);
	EXPECT_EQ(h.record.field<int32_t>(a[1]), -5);
	EXPECT_EQ(h.record.field<uint64_t>(a[2]), 0x1100u);
	EXPECT_EQ(h.record.field<uint64_t>(a[3]), 0x1122334455667788u);
	EXPECT_EQ(h.record.field<uint16_t>(a[4]), 0x7788u);
	EXPECT_EQ(h.record.field<uint64_t>(a[5]), 0x1100u);
	EXPECT_EQ(h.record.field<uint64_t>(a[6]), 0x1122334455667788u);
	// +8(%di) loads from 0x1008, which is not there: a fault, 0.
	EXPECT_EQ(h.record.field<uint64_t>(a[7]), 0u);
}

TEST(EventFetch, DereferencesReadMemoryAndStringsGoAfterTheFields)
{
	FakeHit fake;
	fake.registers[104] = 0x1000; // si -> "hello"
	fake.registers[112] = 0x2000; // di -> struct { ..., +16: pointer to 0x3000 }
	fake.memory[0x1000] = cstring("hello");
	fake.memory[0x2000] = std::vector<uint8_t>(16, 0);
	auto pointer = raw<uint64_t>(0x3000);
	fake.memory[0x2000].insert(fake.memory[0x2000].end(), pointer.begin(), pointer.end());
	fake.memory[0x3000] = raw<uint64_t>(0x00000000fffffffbull); // +0: -5 as s32, +4: 0
	Hit h = hit("buf=+0(%si):string first=+0(+16(%di)):s32 who=$comm tail=+1(%si):string", fake);
	const Argument *a = h.definition->args;
	EXPECT_EQ(h.record.string(a[0]), "hello");
	EXPECT_EQ(h.record.field<int32_t>(a[1]), -5);
	EXPECT_EQ(h.record.string(a[2]), "okptest");
	EXPECT_EQ(h.record.string(a[3]), "ello");
	// The strings follow the fields, in argument order.
	const uint32_t first = h.record.field<uint32_t>(a[0]);
	EXPECT_EQ(first & 0xffff, h.record.header + h.definition->record_size);
	EXPECT_EQ(first >> 16, 6u);
	EXPECT_EQ(h.record.bytes.size(), h.record.header + h.definition->record_size + 6 + 8 + 5);
}

// $comm is copied from the task as it is: never past TASK_COMM_LEN - 1
// bytes, and cut to what was reserved.
TEST(EventFetch, CommIsTheTasksAtMostFifteenBytes)
{
	FakeHit fake;
	fake.comm = "a-name-longer-than-sixteen";
	Hit h = hit("who=$comm", fake);
	EXPECT_EQ(h.record.string(h.definition->args[0]), "a-name-longer-t");
	EXPECT_EQ(h.record.bytes.size(), h.record.header + h.definition->record_size + 16);
}

TEST(EventFetch, FaultsAreZeroAndEmptyStrings)
{
	FakeHit fake;
	fake.registers[112] = 0xdead0000; // unmapped
	Hit h = hit("n=+8(%di):u32 p=+0(+0(%di)):u64 s=+0(%di):string", fake);
	const Argument *a = h.definition->args;
	EXPECT_EQ(h.record.field<uint32_t>(a[0]), 0u);
	EXPECT_EQ(h.record.field<uint64_t>(a[1]), 0u);
	EXPECT_EQ(h.record.string(a[2]), "(fault)");
}

TEST(EventFetch, UserMemoryIsReadAsUserMemory)
{
	FakeHit fake;
	fake.registers[104] = 0x4000;
	fake.user_memory[0x4000] = cstring("/etc/passwd");
	fake.memory[0x4000] = cstring("kernel side");
	Hit h = hit("path=+u0(%si):string p2=+0(%si):ustring first=+u0(%si):u8", fake);
	const Argument *a = h.definition->args;
	EXPECT_EQ(h.record.string(a[0]), "/etc/passwd");
	EXPECT_EQ(h.record.string(a[1]), "/etc/passwd");
	EXPECT_EQ(h.record.field<uint8_t>(a[2]), '/');
}

TEST(EventFetch, BitfieldsArraysAndSymbolStrings)
{
	FakeHit fake;
	fake.registers[112] = 0x5000;
	fake.registers[80] = 0xffffffff81000003; // ax
	fake.memory[0x5000] = raw<uint64_t>(0x0004000300020001ull | 0x3c);
	fake.memory[0x6000] = cstring("one");
	fake.memory[0x6100] = cstring("two");
	auto strings = raw<uint64_t>(0x6000);
	auto second = raw<uint64_t>(0x6100);
	strings.insert(strings.end(), second.begin(), second.end());
	fake.memory[0x7000] = strings;
	fake.registers[104] = 0x7000;
	Hit i = hit("s=\\\"hi_there\" n=\\7", fake);
	EXPECT_EQ(i.record.string(i.definition->args[0]), "hi_there");
	EXPECT_EQ(i.record.field<uint64_t>(i.definition->args[1]), 7u);
	Hit h = hit("bits=+0(%di):b4@2/32 words=+2(%di):u16[3] names=+0(%si):string[2] where=%ax:symstr", fake);
	const Argument *a = h.definition->args;
	EXPECT_EQ(h.record.field<uint32_t>(a[0]), 0xfu); // bits 2..5 of 0x3d
	EXPECT_EQ(h.record.field<uint16_t>(a[1], 0), 2);
	EXPECT_EQ(h.record.field<uint16_t>(a[1], 1), 3);
	EXPECT_EQ(h.record.field<uint16_t>(a[1], 2), 4);
	EXPECT_EQ(h.record.string(a[2], 0), "one");
	EXPECT_EQ(h.record.string(a[2], 1), "two");
	EXPECT_EQ(h.record.string(a[3]), "sym+0x3/0x10");
}

TEST(EventFetch, StringsNeverOverrunTheReservedSpace)
{
	FakeHit fake;
	fake.registers[104] = 0x1000;
	fake.memory[0x1000] = cstring(std::string(100, 'x'));
	ParseContext context;
	context.registers = x86::event_registers;
	context.register_count = sizeof(x86::event_registers) / sizeof(x86::event_registers[0]);
	auto d = std::make_unique<Definition>();
	std::string text = "p f s=+0(%si):string";
	ASSERT_TRUE(parse_line(text.data(), text.size(), context, *d).ok());
	FetchEnvironment env = environment_of(fake);
	EXPECT_EQ(dynamic_size(*d, env), 101u);
	// The string grew between the measure and the store: 10 bytes reserved.
	std::vector<uint8_t> record(4 + d->record_size + 10 + 16, 0xee);
	store_arguments(*d, env, record.data(), record.data() + 4, 10);
	uint32_t loc;
	std::memcpy(&loc, record.data() + 4, 4);
	EXPECT_EQ(loc >> 16, 10u);
	EXPECT_EQ(record[4 + 4 + 9], 0); // cut, still NUL-terminated
	for (size_t i = 4 + 4 + 10; i < record.size(); i++)
		EXPECT_EQ(record[i], 0xee) << i;
}

} // namespace
} // namespace okp::events

namespace okp::events {
namespace {

// An r event's $argN (6.9 and later): the entry saves the arguments, the
// return fetches them from what it saved, not from its own registers.
TEST(EventFetch, ReturnEventsFetchWhatTheEntrySaved)
{
	ParseContext context;
	context.registers = x86::event_registers;
	context.register_count = sizeof(x86::event_registers) / sizeof(x86::event_registers[0]);
	context.return_arguments = true;
	auto definition = std::make_unique<Definition>();
	const std::string line = "r vfs_read count=$arg3:u64 fd=$arg1:s32 ret=$retval:s64";
	ASSERT_TRUE(parse_line(line.data(), line.size(), context, *definition).ok());
	EXPECT_EQ(definition->entry_arguments, 3);
	EXPECT_EQ(definition->args[0].steps[0].op, Op::entry_argument);

	FakeHit entry;
	entry.registers[112] = static_cast<uint64_t>(-5); // di
	entry.registers[104] = 0x1000;			  // si
	entry.registers[96] = 4093;			  // dx
	uint64_t saved[3] = {};
	save_entry_arguments(*definition, environment_of(entry), saved);
	EXPECT_EQ(saved[0], static_cast<uint64_t>(-5));
	EXPECT_EQ(saved[2], 4093u);

	// At the return the argument registers hold something else.
	FakeHit returned;
	returned.registers[96] = 1;
	returned.return_value = 17;
	FetchEnvironment env = environment_of(returned);
	env.entry_arguments = saved;
	Record record;
	record.bytes.assign(record.header + definition->record_size, 0xee);
	store_arguments(*definition, env, record.bytes.data(), record.bytes.data() + record.header, 0);
	EXPECT_EQ(record.field<uint64_t>(definition->args[0]), 4093u);
	EXPECT_EQ(record.field<int32_t>(definition->args[1]), -5);
	EXPECT_EQ(record.field<int64_t>(definition->args[2]), 17);

	// A kernel whose r events fetch no arguments (6.1): refused.
	context.return_arguments = false;
	EXPECT_EQ(parse_line(line.data(), line.size(), context, *definition).error, Error::bad_variable);
}

} // namespace
} // namespace okp::events

namespace okp::events {
namespace {

ParseContext riscv_context()
{
	ParseContext context;
	context.registers = riscv::event_registers;
	context.register_count = sizeof(riscv::event_registers) / sizeof(riscv::event_registers[0]);
	return context;
}

std::unique_ptr<Definition> parsed(const std::string &line, const ParseContext &context)
{
	auto d = std::make_unique<Definition>();
	EXPECT_TRUE(parse_line(line.data(), line.size(), context, *d).ok()) << line;
	return d;
}

// The record an argument-only hit gives at the same registers as fake's
// pt_regs: its words where record_layout() says.
std::vector<uint64_t> record_of(const FakeHit &fake, const RegisterLayout &regs, uint64_t ip)
{
	const RegisterLayout record = record_layout(regs);
	std::vector<uint64_t> words(record.stack_pointer / 8 + 1, 0xdead);
	for (unsigned i = 0; i < regs.argument_count; i++)
		words[record.arguments[i] / 8] = fake.pt_regs[regs.arguments[i] / 8];
	words[record.return_value / 8] = fake.pt_regs[regs.return_value / 8];
	words[record.stack_pointer / 8 - 1] = ip;
	words[record.stack_pointer / 8] = fake.pt_regs[regs.stack_pointer / 8];
	return words;
}

// The fields and strings one definition stores from env.
std::vector<uint8_t> stored(const Definition &d, const FetchEnvironment &env)
{
	size_t dynamic = dynamic_size(d, env);
	std::vector<uint8_t> bytes(16 + d.record_size + dynamic, 0xee);
	store_arguments(d, env, bytes.data(), bytes.data() + 16, dynamic);
	return bytes;
}

} // namespace

// struct okprobe_args as a register layout: the argument registers, x86's
// ax apart (riscv's return value is a0, the first argument), the probed
// address, the stack pointer, a word each. (The module asserts these
// against the struct itself.)
TEST(EventRecord, TheRecordsLayoutIsStructOkprobeArgs)
{
	struct Expected {
		const RegisterLayout *regs;
		unsigned arguments, return_value, stack_pointer;
		bool stack_arguments;
	};
	for (const Expected &arch : {Expected{&x86::event_register_layout, 6, 48, 64, true},
				     Expected{&riscv::event_register_layout, 8, 0, 72, false}}) {
		const RegisterLayout record = record_layout(*arch.regs);
		EXPECT_EQ(record.argument_count, arch.arguments);
		for (unsigned i = 0; i < arch.arguments; i++)
			EXPECT_EQ(record.arguments[i], 8 * i);
		EXPECT_EQ(record.return_value, arch.return_value);
		EXPECT_EQ(record.stack_pointer, arch.stack_pointer);
		EXPECT_EQ(record.stack_arguments, arch.stack_arguments);
	}
}

// The lines whose fetch programs read only registers the record holds
// (and memory and the stack through them) take the argument-only path;
// any other register, or an r event, keeps pt_regs.
TEST(EventRecord, OnlyLinesOfTheRecordsRegistersReadOnlyTheRecord)
{
	struct Lines {
		ParseContext context;
		const RegisterLayout *regs;
		std::vector<const char *> record_only, not_record_only;
	};
	const Lines arches[] = {
		{x86_context(),
		 &x86::event_register_layout,
		 {"p f", "p f a=%di b=%si c=%dx d=%cx e=%r8 f=%r9 ax=%ax sp=%sp",
		  "p f a=$arg1 g=$arg7 s=$stack3 st=$stack c=$comm n=+8(+16(%di)):u32 t=+0(%si):string",
		  "p f x=@jiffies k=\\\"text\" y=\\16"},
		 {"p f b=%bx", "p f ip=%ip", "p f f=%flags", "p f a=%di bp=+8(%bp)", "p f r=%r10", "r f ret=$retval",
		  "r f sp=%sp"}},
		{riscv_context(),
		 &riscv::event_register_layout,
		 {"p f a=%a0 h=%a7 sp=%sp n=+4(%a1):s32 a9=$arg9 s=$stack2"},
		 {"p f t=%t0", "p f s=%s0", "p f ra=%ra", "p f pc=%epc", "r f ret=$retval"}},
	};
	for (const Lines &arch : arches) {
		for (const char *line : arch.record_only)
			EXPECT_TRUE(reads_only_record(*parsed(line, arch.context), *arch.regs)) << line;
		for (const char *line : arch.not_record_only)
			EXPECT_FALSE(reads_only_record(*parsed(line, arch.context), *arch.regs)) << line;
	}
}

// The same line stores the same fields from the record as from pt_regs
// holding the same registers: names, $argN (x86's past the registers from
// the stack), $stackN, memory and strings through them.
TEST(EventRecord, FieldsFromTheRecordAreFieldsFromPtRegs)
{
	struct Case {
		const char *line;
		ParseContext context;
		const RegisterLayout *regs;
	};
	const Case cases[] = {
		{"p f a=%di b=%si:s32 c=%dx d=%cx e=%r8 f=%r9 ax=%ax sp=%sp a1=$arg1 a7=$arg7 s2=$stack2 st=$stack "
		 "n=+8(%si):u16 t=+0(%dx):string",
		 x86_context(), &x86::event_register_layout},
		{"p f a=%a0 b=%a1 h=%a7 sp=%sp a8=$arg8 a9=$arg9 s1=$stack1 n=+8(%a1):u16 t=+0(%a2):string",
		 riscv_context(), &riscv::event_register_layout},
	};
	for (const Case &c : cases) {
		auto d = parsed(c.line, c.context);
		ASSERT_TRUE(reads_only_record(*d, *c.regs)) << c.line;
		FakeHit fake;
		for (unsigned i = 0; i < c.regs->argument_count; i++)
			fake.registers[c.regs->arguments[i]] = 0x1000 + i * 0x100;
		fake.return_value = 0x4242;
		fake.memory[0x1108] = raw<uint16_t>(0xbeef);
		fake.memory[0x1200] = cstring("from a register");
		fake.stack[1] = 0x77;
		fake.stack[2] = 0x88;
		const std::vector<uint8_t> from_regs = stored(*d, environment_of(fake, *c.regs));

		std::vector<uint64_t> record = record_of(fake, *c.regs, 0xffffffff81000000);
		FetchEnvironment env = environment_of(fake, *c.regs);
		const RegisterLayout record_registers = record_layout(*c.regs);
		env.registers = reinterpret_cast<const uint8_t *>(record.data());
		env.regs_layout = c.regs;
		env.layout = &record_registers;
		EXPECT_EQ(stored(*d, env), from_regs) << c.line;
	}
}

} // namespace okp::events
