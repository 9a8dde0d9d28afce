// SPDX-License-Identifier: GPL-2.0
// The fetch arguments of an okprobe_events line, [NAME=]FETCHARG[:TYPE],
// as the kernel's traceprobe_parse_probe_arg() and parse_probe_arg() parse
// them (6.1's trace_probe.c, and 7.3's where ParseContext says the kernel
// has its grammar): the argument's name, its type (an array, a bitfield, a
// string), its fetch program (registers, $-variables, memory, immediates,
// nested dereferences; 7.3's $current, this_cpu_read() and this_cpu_ptr()
// and its limit of 8 nested levels) and what the record stores. Each step
// refuses with the kernel's error class and caret column.
// probe_events_parts.hpp says what the grammar's files share.
#include "core/probe_events_parts.hpp"

namespace okp::events {

namespace {

// A type name: its kind and size; false when the kernel has none such.
bool find_type(Text type, Kind &kind, uint8_t &size)
{
	struct Named {
		const char *name;
		Kind kind;
		uint8_t size;
	};
	static constexpr Named types[] = {
		{"string", Kind::string, 4},
		{"ustring", Kind::user_string, 4},
		{"symstr", Kind::symbol_string, 4},
		{"u8", Kind::unsigned_integer, 1},
		{"u16", Kind::unsigned_integer, 2},
		{"u32", Kind::unsigned_integer, 4},
		{"u64", Kind::unsigned_integer, 8},
		{"s8", Kind::signed_integer, 1},
		{"s16", Kind::signed_integer, 2},
		{"s32", Kind::signed_integer, 4},
		{"s64", Kind::signed_integer, 8},
		{"x8", Kind::hex, 1},
		{"x16", Kind::hex, 2},
		{"x32", Kind::hex, 4},
		{"x64", Kind::hex, 8},
		{"symbol", Kind::symbol, 8},
		{"char", Kind::character, 1},
	};
	if (type.data == nullptr) {
		kind = Kind::hex;
		size = 8;
		return true;
	}
	if (type[0] == 'b') {
		size_t slash = type.find('/');
		uint64_t bits;
		if (slash == type.length || !parse_unsigned(type.from(slash + 1), 0, bits))
			return false;
		if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
			return false;
		kind = Kind::unsigned_integer;
		size = static_cast<uint8_t>(bits / 8);
		return true;
	}
	for (const Named &named : types)
		if (type.equals(named.name)) {
			kind = named.kind;
			size = named.size;
			return true;
		}
	return false;
}

constexpr const char *reserved_field_names[] = {
	"common_type", "common_flags", "common_preempt_count", "common_pid",
	"common_tgid", "__probe_ip",   "__probe_ret_ip",       "__probe_func",
};

// Takes one more slot of the kernel's code buffer (FETCH_INSN_MAX entries,
// the last END): false when there is none.
bool next_fetch_slot(int &last)
{
	return ++last < static_cast<int>(max_fetch_steps) - 1;
}

} // namespace

// [NAME=]BODY: traceprobe_parse_probe_arg().
ParseResult Parser::parse_argument(Text word, unsigned index)
{
	size_t column = column_of(word);
	Argument &argument = out_.args[index];
	argument = Argument{};
	argument.word_start = static_cast<uint16_t>(column);
	out_.arg_count = static_cast<uint16_t>(index + 1);
	size_t equals = word.find('=');
	Text body = word;
	if (equals < word.length) {
		if (equals > max_arg_name)
			return invalid(Error::argument_name_too_long, column);
		if (equals == 0)
			return invalid(Error::no_argument_name, column);
		copy_name(argument.name, sizeof(argument.name), word.first(equals));
		body = word.from(equals + 1);
	} else if (Text named = word.first(word.find(':'));
		   context_.btf_arguments && named.length <= max_arg_name && is_good_name(named.data, named.length)) {
		// 6.6 and later: what it fetches, where that is a name.
		copy_name(argument.name, sizeof(argument.name), named);
	} else {
		Writer writer(argument.name, sizeof(argument.name));
		writer.put("arg");
		writer.number(index + 1);
		writer.finish();
	}
	Text name{argument.name, Text{argument.name, sizeof(argument.name)}.find('\0')};
	if (!is_good_name(name.data, name.length))
		return invalid(Error::bad_argument_name, column);
	for (const char *reserved : reserved_field_names)
		if (name.equals(reserved))
			return invalid(Error::used_argument_name, column);
	for (unsigned i = 0; i < index; i++)
		if (name.equals(out_.args[i].name))
			return invalid(Error::used_argument_name, column);
	return parse_body(body, argument);
}

// FETCHARG[:TYPE[[N]]]: traceprobe_parse_probe_arg_body().
ParseResult Parser::parse_body(Text body, Argument &argument)
{
	size_t column = column_of(body);
	if (body.length > (context_.nested_arguments ? max_arg_text_7x : max_arg_text))
		return invalid(Error::argument_too_long, column);
	if (body.length == 0)
		return invalid(Error::no_argument_body, column);
	argument.body = span_of(body);
	size_t colon = body.find(':');
	Text arg = body.first(colon);
	Text type{};
	unsigned count = 0;
	if (colon < body.length) {
		type = body.from(colon + 1);
		ParseResult result = parse_array_suffix(type, count);
		if (!result.ok())
			return result;
		argument.type_text = span_of(type);
	}
	size_t type_column = type.data ? column_of(type) : column;
	ParseResult result = choose_type(arg, type, count, type_column, argument);
	if (!result.ok())
		return result;
	argument.array = static_cast<uint8_t>(count);
	// 6.1 counts the field's bytes before its fetch, 6.6 and later after
	// (the BTF may type it).
	if (!context_.btf_arguments && !(result = account_field(argument, column)).ok())
		return result;

	int last = -1;
	last_type_ = nullptr;
	depth_ = 0;
	result = parse_fetch(arg, argument, last);
	if (!result.ok())
		return result;
	if (context_.btf_arguments && last_type_ && !(result = type_from_btf(type, argument, last)).ok())
		return result;
	if (context_.btf_arguments && !(result = account_field(argument, column)).ok())
		return result;
	result = choose_store(argument, last, column, type_column);
	if (!result.ok())
		return result;
	if (type.data && type[0] == 'b') {
		result = parse_bitfield(type, argument, last, type_column);
		if (!result.ok())
			return result;
	}
	if (count) {
		bool memory = argument.store == Store::memory || argument.store == Store::string ||
			      argument.store == Store::user_string;
		if (!memory)
			return invalid(Error::bad_string, type_column);
		if (!next_fetch_slot(last))
			return invalid(Error::too_many_ops, column);
	}
	return ParseResult{};
}

// An r event's fetch of argument index, saved at the function's entry.
ParseResult Parser::save_entry_argument(Argument &argument, int &last, unsigned index, size_t column)
{
	if (index >= max_entry_arguments)
		return invalid(Error::bad_argument_number, column);
	push(argument, last, Op::entry_argument, index);
	if (index + 1 > out_.entry_arguments)
		out_.entry_arguments = static_cast<uint16_t>(index + 1);
	return ParseResult{};
}

// The argument's field in the record, after the others.
ParseResult Parser::account_field(Argument &argument, size_t column)
{
	argument.offset = static_cast<uint16_t>(out_.record_size);
	out_.record_size += argument.size * (argument.array ? argument.array : 1);
	if (out_.record_size > max_event_size)
		return fail(e2big, Error::event_too_big, column);
	return ParseResult{};
}

// TYPE[N]: an array of N elements; type is left without its [N].
ParseResult Parser::parse_array_suffix(Text &type, unsigned &count)
{
	size_t open = type.find('[');
	if (open == type.length)
		return ParseResult{};
	Text number = type.from(open + 1);
	size_t close = number.find(']');
	if (close == number.length)
		return invalid(Error::array_not_closed, column_of(number) + number.length);
	if (close + 1 != number.length)
		return invalid(Error::bad_array_suffix, column_of(number) + close + 1);
	uint64_t n;
	if (!parse_unsigned(number.first(close), 0, n) || n == 0 || n > 0xffffffffu)
		return invalid(Error::bad_array_number, column_of(number));
	if (n > max_array)
		return invalid(Error::array_too_big, column_of(number));
	count = static_cast<unsigned>(n);
	type = type.first(open);
	return ParseResult{};
}

// The argument's kind and element size from its TYPE (type.data null: none
// given), and from the fetch argument when it is the comm or a string.
ParseResult Parser::choose_type(Text arg, Text type, unsigned count, size_t type_column, Argument &argument)
{
	bool comm_or_string = arg.equals("$comm") || arg.equals("$COMM") || arg.starts_with("\\\"");
	if (comm_or_string) {
		// The kernel refuses these without a log line; okprobe says why.
		if (count || (type.data && !type.equals("string")))
			return invalid(Error::bad_type, type_column);
		argument.kind = Kind::string;
		argument.size = 4;
	} else if (!find_type(type, argument.kind, argument.size) ||
		   (argument.kind == Kind::character && !context_.char_type)) {
		return invalid(Error::bad_type, type_column);
	}
	return ParseResult{};
}

// What the record stores of the fetch program's value, for the argument's
// kind: the store replaces a last dereference, or takes one more slot.
ParseResult Parser::choose_store(Argument &argument, int &last, size_t column, size_t type_column)
{
	Op op = argument.steps[argument.step_count - 1].op;
	bool dereference = op == Op::dereference || op == Op::user_dereference;
	bool string = argument.kind == Kind::string || argument.kind == Kind::user_string ||
		      argument.kind == Kind::symbol_string;
	if (string) {
		if (argument.kind == Kind::symbol_string) {
			if (op != Op::register_value && op != Op::stack_entry && op != Op::return_value &&
			    op != Op::argument && op != Op::dereference)
				return invalid(Error::bad_symbol_string, type_column);
		} else if (!dereference && op != Op::immediate && op != Op::comm && op != Op::immediate_string) {
			return invalid(Error::bad_string, type_column);
		}
		if (argument.kind == Kind::symbol_string || op == Op::immediate || op == Op::comm ||
		    op == Op::immediate_string || argument.array) {
			if (!next_fetch_slot(last))
				return invalid(Error::too_many_ops, column);
		}
		if (argument.kind == Kind::user_string || op == Op::user_dereference)
			argument.store = Store::user_string;
		else if (argument.kind == Kind::symbol_string)
			argument.store = Store::symbol_string;
		else
			argument.store = Store::string;
	} else if (dereference) {
		argument.store = op == Op::dereference ? Store::memory : Store::user_memory;
	} else {
		if (!next_fetch_slot(last))
			return invalid(Error::too_many_ops, column);
		argument.store = Store::raw;
	}
	return ParseResult{};
}

// b<WIDTH>@<OFFSET>/<CONTAINER>: __parse_bitfield_probe_arg().
ParseResult Parser::parse_bitfield(Text type, Argument &argument, int &last, size_t type_column)
{
	size_t end;
	uint64_t width = leading_unsigned(type.from(1), end);
	Text rest = type.from(1 + end);
	if (width == 0 || rest[0] != '@')
		return invalid(Error::bad_bitfield, type_column);
	rest = rest.from(1);
	uint64_t bit = leading_unsigned(rest, end);
	if (end == 0 || rest[end] != '/' || !next_fetch_slot(last) || width + bit > argument.size * 8u)
		return invalid(Error::bad_bitfield, type_column);
	argument.bit_width = static_cast<uint8_t>(width);
	argument.bit_offset = static_cast<uint8_t>(bit);
	return ParseResult{};
}

// One fetch argument, recursively: parse_probe_arg() (7.3:
// parse_probe_arg_nested(), parse_probe_arg_leaf() and
// unwind_parse_states()).
ParseResult Parser::parse_fetch(Text arg, Argument &argument, int &last)
{
	const bool this_cpu =
		context_.nested_arguments && (arg.starts_with("this_cpu_ptr(") || arg.starts_with("this_cpu_read("));
	if (context_.nested_arguments && (arg[0] == '+' || arg[0] == '-' || arg[0] == '(' || this_cpu)) {
		// Each nested level counts, checked before it is read.
		if (depth_ >= max_nested)
			return fail(e2big, Error::too_many_nested, column_of(arg));
		depth_++;
	}
	if (this_cpu)
		return parse_this_cpu(arg, argument, last);
	switch (arg[0]) {
	case '$':
		return parse_variable(arg, argument, last);
	case '%':
		return parse_register(arg, argument, last);
	case '@':
		return parse_memory(arg, argument, last);
	case '+':
	case '-':
		return parse_dereference(arg, argument, last);
	case '\\':
		if (arg[1] == '"')
			return parse_immediate_string(arg, argument, last);
		return parse_immediate(arg, argument, last);
	case '(':
		// 7.3: a typecast; without the BTF grammar's (handle_typecast()'s
		// stub) EOPNOTSUPP. Before 7.3 an argument like any other.
		if (context_.typecasts)
			return parse_typecast(arg, argument, last);
		if (context_.nested_arguments)
			return fail(eopnotsupp, Error::nosup_btf_argument, column_of(arg));
		if (context_.eprobe_typecasts)
			return invalid(Error::typecast_not_event, column_of(arg));
		return invalid(Error::bad_fetch_argument, column_of(arg));
	default:
		// 6.6 and later: a name the BTF knows (a parameter, its members).
		if (context_.btf_arguments && (is_alpha(arg[0]) || arg[0] == '_')) {
			if (!at_entry_ && !out_.is_return)
				return invalid(Error::nosup_btf_argument, column_of(arg));
			return parse_btf_argument(arg, argument, last);
		}
		return invalid(Error::bad_fetch_argument, column_of(arg));
	}
}

// %REG, by the arch's names.
ParseResult Parser::parse_register(Text arg, Argument &argument, int &last)
{
	for (size_t i = 0; i < context_.register_count; i++)
		if (arg.from(1).equals(context_.registers[i].name)) {
			push(argument, last, Op::register_value, context_.registers[i].offset);
			return ParseResult{};
		}
	return invalid(Error::bad_register_name, column_of(arg));
}

// @ADDR, @SYM[+|-OFFS]: the value at an address.
ParseResult Parser::parse_memory(Text arg, Argument &argument, int &last)
{
	size_t column = column_of(arg);
	if (is_digit(arg[1])) {
		uint64_t address;
		if (!parse_unsigned(arg.from(1), 0, address))
			return invalid(Error::bad_memory_address, column);
		push(argument, last, Op::immediate, static_cast<int64_t>(address));
	} else if (arg[1] == '+') {
		// 7.3 words it anew (with its nested parser: the README says
		// nothing of it).
		return invalid(context_.nested_arguments ? Error::file_offset_on_kernel_probe
							 : Error::file_offset_on_kprobe,
			       column);
	} else {
		// @SYM[+|-OFFS]: resolved when the probe is made.
		Text symbol;
		int64_t offset;
		if (!split_symbol_offset(arg.from(1), symbol, offset) || symbol.length == 0)
			return invalid(Error::bad_memory_address, column);
		// The kernel spends two slots: the symbol, then its address.
		push(argument, last, Op::symbol_address, offset, symbol);
		if (++last >= static_cast<int>(max_fetch_steps) - 1)
			return invalid(Error::too_many_ops, column);
	}
	if (!push(argument, last, Op::dereference, 0))
		return invalid(Error::too_many_ops, column);
	return ParseResult{};
}

// [+|-][u]OFFS(FETCHARG): a load at the inner argument's value plus OFFS.
ParseResult Parser::parse_dereference(Text arg, Argument &argument, int &last)
{
	size_t column = column_of(arg);
	bool user = arg[1] == 'u';
	Text offset_text = user ? arg.from(2) : arg.from(arg[0] == '+' ? 1 : 0);
	size_t open = offset_text.find('(');
	if (open == offset_text.length)
		return invalid(Error::dereference_needs_brace, column);
	int64_t offset;
	Text number = offset_text.first(open);
	if (user && arg[0] == '-') {
		// -uOFFS: kstrtol() of "-OFFS", the sign before the u.
		uint64_t magnitude;
		if (number[0] == '+' || number[0] == '-' || !parse_unsigned(number, 0, magnitude) ||
		    magnitude > (uint64_t{1} << 63))
			return invalid(Error::bad_dereference_offset, column);
		offset = static_cast<int64_t>(0 - magnitude);
	} else if (!parse_signed(number, 0, offset)) {
		return invalid(Error::bad_dereference_offset, column);
	}
	Text inner = offset_text.from(open + 1);
	size_t close = inner.find_last(')');
	if (close == inner.length)
		return invalid(Error::dereference_not_closed, column_of(inner) + inner.length);
	if (close + 1 != inner.length)
		return invalid(Error::trailing_text, column_of(inner) + close + 1);
	inner = inner.first(close);
	ParseResult result = parse_fetch(inner, argument, last);
	if (!result.ok())
		return result;
	// What BTF said of the inner value is not the loaded one's type.
	last_type_ = nullptr;
	Op op = argument.steps[argument.step_count - 1].op;
	if (op == Op::comm || op == Op::immediate_string)
		return invalid(Error::comm_cannot_dereference, column_of(inner));
	if (!push(argument, last, user ? Op::user_dereference : Op::dereference, offset))
		return invalid(Error::too_many_ops, column_of(inner));
	return ParseResult{};
}

// \"STR": the string, kept in the definition's immediates.
ParseResult Parser::parse_immediate_string(Text arg, Argument &argument, int &last)
{
	Text string = arg.from(2);
	if (string.length == 0 || string[string.length - 1] != '"')
		return invalid(Error::immediate_string_not_closed, column_of(arg) + 2 + string.length);
	Text text = string.first(string.length - 1);
	push(argument, last, Op::immediate_string, out_.immediates_length, text);
	for (size_t i = 0; i < text.length; i++)
		out_.immediates[out_.immediates_length++] = text[i];
	out_.immediates[out_.immediates_length++] = '\0';
	return ParseResult{};
}

// \IMM: str_to_immediate().
ParseResult Parser::parse_immediate(Text arg, Argument &argument, int &last)
{
	Text number = arg.from(1);
	uint64_t value = 0;
	int64_t signed_value = 0;
	bool parsed = false;
	if (is_digit(number[0]))
		parsed = parse_unsigned(number, 0, value);
	else if (number[0] == '-' && (parsed = parse_signed(number, 0, signed_value)))
		value = static_cast<uint64_t>(signed_value);
	else if (number[0] == '+' && (parsed = parse_signed(number.from(1), 0, signed_value)))
		value = static_cast<uint64_t>(signed_value);
	if (!parsed)
		return invalid(Error::bad_immediate, column_of(arg) + 1);
	push(argument, last, Op::immediate, static_cast<int64_t>(value));
	return ParseResult{};
}

// $retval, $stack, $stackN, $comm, $argN, 7.3's $current: parse_probe_vars().
ParseResult Parser::parse_variable(Text arg, Argument &argument, int &last)
{
	size_t column = column_of(arg);
	Text name = arg.from(1);
	uint64_t n;
	if (context_.btf_arguments && name.starts_with("retval")) {
		// 6.6 and later: $retval typed by the function's BTF, and its members.
		if (!out_.is_return)
			return invalid(Error::retval_on_probe, column);
		return parse_btf_argument(arg, argument, last);
	} else if (name.equals("retval")) {
		if (!out_.is_return)
			return invalid(Error::retval_on_probe, column);
		push(argument, last, Op::return_value, 0);
	} else if (name.starts_with("stack")) {
		Text number = name.from(5);
		if (number.length == 0) {
			push(argument, last, Op::stack_address, 0);
		} else if (is_digit(number[0])) {
			if (!parse_unsigned(number, 10, n))
				return invalid(Error::bad_variable, column);
			if (n > context_.max_stack_index)
				return invalid(Error::bad_stack_number, column);
			push(argument, last, Op::stack_entry, static_cast<int64_t>(n));
		} else {
			return invalid(Error::bad_variable, column);
		}
	} else if (name.equals("comm") || name.equals("COMM")) {
		push(argument, last, Op::comm, 0);
	} else if (context_.current_task && name.starts_with("current")) {
		// 7.3's parse_probe_var_current(): $current, or with the BTF
		// grammar $current->FIELD...; nothing else after it.
		const Text rest = name.from(7);
		if (rest[0] == '-' && context_.btf_arguments)
			return parse_btf_argument(arg, argument, last);
		if (rest.length)
			return invalid(Error::bad_variable, column);
		push(argument, last, Op::current_task, 0);
	} else if (name.starts_with("arg") && ((at_entry_ && !out_.is_return && !out_.has_address) ||
					       (out_.is_return && context_.return_arguments))) {
		if (!parse_unsigned(name.from(3), 10, n))
			return invalid(Error::bad_variable, column);
		if (n == 0 || n > context_.max_stack_index)
			return invalid(Error::bad_argument_number, column);
		if (out_.is_return)
			return save_entry_argument(argument, last, static_cast<unsigned>(n - 1), column);
		push(argument, last, Op::argument, static_cast<int64_t>(n - 1));
	} else {
		return invalid(Error::bad_variable, column);
	}
	return ParseResult{};
}

} // namespace okp::events

namespace okp::events {

// this_cpu_ptr(FETCHARG), this_cpu_read(FETCHARG): 7.3's parse_this_cpu()
// and its unwind. This CPU's copy of the per-cpu address FETCHARG gives
// (@SYM's: the symbol's address itself, the load it would be replaced),
// and for this_cpu_read() a load there. Text after the last ')' the kernel
// ignores; okprobe refuses it, as after a dereference's.
ParseResult Parser::parse_this_cpu(Text arg, Argument &argument, int &last)
{
	const bool read = arg.starts_with("this_cpu_read(");
	Text inner = arg.from(read ? sizeof("this_cpu_read(") - 1 : sizeof("this_cpu_ptr(") - 1);
	const size_t column = column_of(inner);
	const size_t close = inner.find_last(')');
	if (close == inner.length)
		return invalid(Error::dereference_not_closed, column + inner.length);
	if (close + 1 != inner.length)
		return invalid(Error::trailing_text, column + close + 1);
	inner = inner.first(close);
	ParseResult result = parse_fetch(inner, argument, last);
	if (!result.ok())
		return result;
	FetchStep &step = argument.steps[argument.step_count - 1];
	if (step.op == Op::comm || step.op == Op::immediate_string)
		return invalid(Error::comm_cannot_dereference, column);
	if (inner[0] == '@')
		step = FetchStep{Op::cpu_pointer, {}, 0};
	else if (!push(argument, last, Op::cpu_pointer, 0))
		return invalid(Error::too_many_ops, column);
	last_type_ = nullptr;
	if (read && !push(argument, last, Op::dereference, 0))
		return invalid(Error::too_many_ops, column);
	return ParseResult{};
}

} // namespace okp::events
