// SPDX-License-Identifier: GPL-2.0
// libFuzzer target for the okprobe_events parser (src/core/probe_events.cpp),
// built with clang and ASan/UBSan (CMakeLists.txt beside). Any input must
// parse or be refused without a sanitizer report, and what it gives must
// hold together: spans inside the line, limits kept, a caret inside the
// line or just past it, and a parsed probe whose canonical form parses to
// the same canonical form. Inputs of odd length parse by the grammar of 6.6
// and later, over a small BTF.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <vector>

#include "../btf_builder.hpp"
#include "core/btf.hpp"
#include "core/probe_events.hpp"
#include "x86/event_registers.hpp"

using namespace okp::events;

namespace {

Place place(void *, const Definition &definition)
{
	// Deterministic and varied: by the symbol's length and the offset.
	if (definition.symbol.length % 7 == 3)
		return Place::unknown_symbol;
	if (definition.symbol.length % 11 == 5)
		return Place::not_unique;
	return definition.offset == 0 ? Place::function_entry : Place::inside_function;
}

void check(bool condition)
{
	if (!condition)
		__builtin_trap();
}

void check_span(const Definition &definition, Span span)
{
	check(span.start + span.length <= definition.line_length);
}

// A kernel's BTF for the grammar of 6.6 and later: vfs_read's parameters,
// struct file and struct dentry as the %pd/%pD rewrite and members want.
const okp::btf::Types &kernel_btf()
{
	static okp::host::BtfBuilder b;
	static std::vector<uint32_t> bytes;
	static okp::btf::Types types;
	if (bytes.empty()) {
		const uint32_t uchar = b.integer("unsigned char", 1, false);
		const uint32_t u64 = b.integer("long unsigned int", 8, false);
		const uint32_t s64 = b.integer("long long int", 8, true);
		const uint32_t qstr = b.structure("qstr", 16, {{"hash_len", u64, 0}, {"name", b.pointer(uchar), 64}});
		const uint32_t dentry = b.structure("dentry", 64, {{"d_name", qstr, 256}});
		const uint32_t path =
			b.structure("path", 16, {{"mnt", b.pointer(u64), 0}, {"dentry", b.pointer(dentry), 64}});
		const uint32_t file = b.structure("file", 64, {{"f_pos", s64, 64}, {"f_path", path, 128}});
		b.function("vfs_read", s64,
			   {{"file", b.pointer(file)},
			    {"buf", b.pointer(uchar)},
			    {"count", u64},
			    {"pos", b.pointer(s64)}});
		// 7.3's typecasts and $current: a task_struct, a bitfield in it.
		const uint32_t comm = b.array(uchar, u64, 16);
		const uint32_t task_pointer = b.pointer(b.last_id() + 2); // the next type's
		b.structure("task_struct", 64,
			    {{"flags", u64, 0},
			     {"bits", u64, 3u << 24 | 69},
			     {"parent", task_pointer, 128},
			     {"tasks", path, 192},
			     {"comm", comm, 320}},
			    false, true);
		bytes = b.bytes();
		check(types.load(reinterpret_cast<const uint8_t *>(bytes.data()), b.size()) == 0);
	}
	return types;
}

Definition first, second;
char canonical[max_line + 8192], again[max_line + 8192], log[max_line * 2 + 256];

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ParseContext context;
	context.registers = okp::x86::event_registers;
	context.register_count = sizeof(okp::x86::event_registers) / sizeof(okp::x86::event_registers[0]);
	context.place = place;
	// Odd lengths: a kernel with every grammar of 6.6 and later; one in
	// four: 7.3's too.
	if (size % 2) {
		context.btf_arguments = context.validate_symbols = context.char_type = true;
		context.dentry_types = context.return_arguments = true;
		context.btf = &kernel_btf();
		context.nested_arguments = context.typecasts = context.current_task = size % 4 == 1;
	}
	ParseResult result = parse_line(reinterpret_cast<const char *>(data), size, context, first);
	check(first.line_length < max_line && strlen(first.line) == first.line_length);
	if (!result.ok()) {
		check(result.error != Error::none);
		check(result.column <= first.line_length + 1);
		check(format_error_log(1, 2, "fuzz", first, result, log, sizeof(log)) < sizeof(log));
		return 0;
	}
	check(result.error == Error::none);
	check(first.arg_count <= max_args && first.record_size <= max_event_size);
	check_span(first, first.symbol);
	check_span(first, first.rest);
	for (unsigned i = 0; i < first.arg_count; i++) {
		const Argument &argument = first.args[i];
		check(argument.step_count >= 1 && argument.step_count < max_fetch_steps);
		check(argument.array <= max_array && argument.offset < max_event_size);
		check(is_good_name(argument.name, strlen(argument.name)));
		check_span(first, argument.body);
		for (unsigned s = 0; s < argument.step_count; s++)
			check_span(first, argument.steps[s].text);
	}
	if (first.command != Command::probe)
		return 0;
	size_t length = format_definition(first, canonical, sizeof(canonical));
	check(length < sizeof(canonical));
	ParseResult reparsed = parse_line(canonical, length, context, second);
	check(reparsed.ok());
	check(format_definition(second, again, sizeof(again)) == length);
	check(memcmp(canonical, again, length) == 0);
	return 0;
}
