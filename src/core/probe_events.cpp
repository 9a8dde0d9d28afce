// SPDX-License-Identifier: GPL-2.0
// The kprobe_events grammar, as the kernel's trace_kprobe.c and
// trace_probe.c parse it (6.1): probe_events.hpp says what and why.
#include "probe_events.hpp"

namespace okp::events {

namespace {

constexpr int enoent = 2, e2big = 7, einval = 22, eaddrnotavail = 99;

constexpr bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
constexpr bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}
constexpr bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
constexpr bool is_xdigit(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
constexpr char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// A view of part of the line: the kernel's NUL-terminated strings.
struct Text {
	const char *data = nullptr;
	size_t length = 0;

	constexpr char operator[](size_t i) const { return i < length ? data[i] : '\0'; }
	constexpr Text from(size_t i) const { return i < length ? Text{data + i, length - i} : Text{data + length, 0}; }
	constexpr Text first(size_t n) const { return Text{data, n < length ? n : length}; }
	// strchr: the first c's index, or length.
	constexpr size_t find(char c) const
	{
		for (size_t i = 0; i < length; i++)
			if (data[i] == c)
				return i;
		return length;
	}
	constexpr size_t find_last(char c) const
	{
		for (size_t i = length; i > 0; i--)
			if (data[i - 1] == c)
				return i - 1;
		return length;
	}
	constexpr bool equals(const char *s) const
	{
		size_t i = 0;
		for (; i < length; i++)
			if (s[i] != data[i])
				return false;
		return s[i] == '\0';
	}
	constexpr bool starts_with(const char *s) const
	{
		size_t i = 0;
		for (; s[i]; i++)
			if (i >= length || s[i] != data[i])
				return false;
		return true;
	}
};

// The kernel's _parse_integer_fixup_radix() for base 0 (and 16).
size_t radix_prefix(Text text, unsigned &base)
{
	if (base == 0) {
		if (text[0] == '0' && lower(text[1]) == 'x' && is_xdigit(text[2]))
			base = 16;
		else if (text[0] == '0')
			base = 8;
		else
			base = 10;
	}
	if (base == 16 && text[0] == '0' && lower(text[1]) == 'x')
		return 2;
	return 0;
}

// Digits from the start: how many, the value, whether it overflowed.
size_t parse_digits(Text text, unsigned base, uint64_t &value, bool &overflow)
{
	size_t i = 0;
	value = 0;
	overflow = false;
	for (; i < text.length; i++) {
		char c = lower(text[i]);
		unsigned digit;
		if (is_digit(c))
			digit = static_cast<unsigned>(c - '0');
		else if (c >= 'a' && c <= 'f')
			digit = static_cast<unsigned>(c - 'a' + 10);
		else
			break;
		if (digit >= base)
			break;
		if (value > (~uint64_t{0} - digit) / base)
			overflow = true;
		value = value * base + digit;
	}
	return i;
}

// kstrtoull(): all of text, an optional '+', base 0 prefixes.
bool parse_unsigned(Text text, unsigned base, uint64_t &value)
{
	if (text[0] == '+')
		text = text.from(1);
	text = text.from(radix_prefix(text, base));
	bool overflow;
	size_t used = parse_digits(text, base, value, overflow);
	return used > 0 && used == text.length && !overflow;
}

// kstrtoll().
bool parse_signed(Text text, unsigned base, int64_t &value)
{
	uint64_t magnitude;
	if (text[0] == '-') {
		Text rest = text.from(1);
		unsigned b = base;
		rest = rest.from(radix_prefix(rest, b));
		bool overflow;
		size_t used = parse_digits(rest, b, magnitude, overflow);
		if (used == 0 || used != rest.length || overflow || magnitude > (uint64_t{1} << 63))
			return false;
		value = static_cast<int64_t>(0 - magnitude);
		return true;
	}
	if (!parse_unsigned(text, base, magnitude) || magnitude > (~uint64_t{0} >> 1))
		return false;
	value = static_cast<int64_t>(magnitude);
	return true;
}

// simple_strtoul(): the value of the digits at the start, and where they end.
uint64_t leading_unsigned(Text text, size_t &end)
{
	unsigned base = 0;
	size_t prefix = radix_prefix(text, base);
	uint64_t value;
	bool overflow;
	end = prefix + parse_digits(text.from(prefix), base, value, overflow);
	return value;
}

// traceprobe_split_symbol_offset(): the first + or - starts the offset.
// The symbol part, and false when the offset is not a number.
bool split_symbol_offset(Text text, Text &symbol, int64_t &offset)
{
	size_t sign = text.length;
	for (size_t i = 0; i < text.length; i++)
		if (text[i] == '+' || text[i] == '-') {
			sign = i;
			break;
		}
	symbol = text.first(sign);
	offset = 0;
	return sign == text.length || parse_signed(text.from(sign), 0, offset);
}

void copy_name(char *to, size_t capacity, Text from)
{
	size_t n = from.length < capacity - 1 ? from.length : capacity - 1;
	for (size_t i = 0; i < n; i++)
		to[i] = from.data[i];
	to[n] = '\0';
}

bool is_good_system_name(Text name)
{
	if (name.length == 0 || (!is_alpha(name[0]) && name[0] != '_' && name[0] != '-'))
		return false;
	for (size_t i = 1; i < name.length; i++)
		if (!is_alpha(name[i]) && !is_digit(name[i]) && name[i] != '_' && name[i] != '-')
			return false;
	return true;
}

constexpr const char *reserved_field_names[] = {
	"common_type", "common_flags", "common_preempt_count", "common_pid",
	"common_tgid", "__probe_ip",   "__probe_ret_ip",       "__probe_func",
};

// Appends to a bounded buffer, counting what did not fit too.
class Writer {
public:
	Writer(char *buffer, size_t size) : buffer_(buffer), size_(size) {}
	void put(char c)
	{
		if (used_ + 1 < size_)
			buffer_[used_] = c;
		used_++;
	}
	void put(const char *s)
	{
		while (*s)
			put(*s++);
	}
	void put(Text t)
	{
		for (size_t i = 0; i < t.length; i++)
			put(t.data[i]);
	}
	void number(uint64_t value, unsigned base = 10, unsigned width = 0, char pad = ' ')
	{
		char digits[24];
		unsigned n = 0;
		do {
			unsigned d = static_cast<unsigned>(value % base);
			digits[n++] = static_cast<char>(d < 10 ? '0' + d : 'a' + d - 10);
			value /= base;
		} while (value);
		for (unsigned i = n; i < width; i++)
			put(pad);
		while (n)
			put(digits[--n]);
	}
	size_t finish()
	{
		if (size_)
			buffer_[used_ < size_ ? used_ : size_ - 1] = '\0';
		return used_;
	}

private:
	char *buffer_;
	size_t size_;
	size_t used_ = 0;
};

class Parser {
public:
	Parser(const ParseContext &context, Definition &out) : context_(context), out_(out) {}

	ParseResult run(const char *text, size_t length);

private:
	ParseResult fail(int error_number, Error error, size_t column)
	{
		return ParseResult{error_number, error, static_cast<uint16_t>(column)};
	}
	ParseResult invalid(Error error, size_t column) { return fail(einval, error, column); }

	Text at(Span span) const { return Text{out_.line + span.start, span.length}; }
	size_t column_of(Text t) const { return static_cast<size_t>(t.data - out_.line); }
	Span span_of(Text t) const
	{
		return Span{static_cast<uint16_t>(column_of(t)), static_cast<uint16_t>(t.length)};
	}
	// The word starting at column, and where the next one starts.
	Text word(size_t column) const
	{
		size_t end = column;
		while (end < out_.line_length && out_.line[end] != ' ')
			end++;
		return Text{out_.line + column, end - column};
	}

	ParseResult normalize(const char *text, size_t length);
	ParseResult parse_removal(Text command);
	ParseResult parse_head(Text command, Text place, size_t &next);
	ParseResult parse_place(Text place);
	ParseResult parse_event_name(Text command, size_t colon);
	ParseResult parse_argument(Text word, unsigned index);
	ParseResult parse_body(Text body, Argument &argument);
	ParseResult parse_fetch(Text arg, Argument &argument, int &last);
	ParseResult parse_variable(Text arg, Argument &argument, int &last);
	bool push(Argument &argument, int &last, Op op, int64_t value, Text text = {})
	{
		// The kernel's code buffer: FETCH_INSN_MAX entries, the last END.
		if (last + 1 >= static_cast<int>(max_fetch_steps) - 1)
			return false;
		last++;
		FetchStep &step = argument.steps[argument.step_count++];
		step.op = op;
		step.value = value;
		step.text = text.data ? span_of(text) : Span{};
		return true;
	}

	const ParseContext &context_;
	Definition &out_;
	bool at_entry_ = false;
};

ParseResult Parser::normalize(const char *text, size_t length)
{
	if (length >= max_line)
		return invalid(Error::line_too_long, 0);
	size_t used = 0;
	bool in_word = false;
	for (size_t i = 0; i < length && text[i] != '#'; i++) {
		if (is_space(text[i]) || text[i] == '\0') {
			in_word = false;
			continue;
		}
		if (!in_word && used)
			out_.line[used++] = ' ';
		in_word = true;
		out_.line[used++] = text[i];
	}
	out_.line[used] = '\0';
	out_.line_length = static_cast<uint16_t>(used);
	return ParseResult{};
}

// Clears out for a new line, in place: a Definition is too large for a
// temporary on a kernel stack.
void reset(Definition &out)
{
	out.line[0] = '\0';
	out.line_length = 0;
	out.command = Command::empty;
	out.is_return = false;
	out.maxactive = 0;
	out.group[0] = '\0';
	out.event[0] = '\0';
	out.has_address = false;
	out.address = 0;
	out.symbol = Span{};
	out.offset = 0;
	out.rest = Span{};
	out.arg_count = 0;
	out.record_size = 0;
	out.immediates_length = 0;
}

ParseResult Parser::run(const char *text, size_t length)
{
	reset(out_);
	ParseResult result = normalize(text, length);
	if (!result.ok() || out_.line_length == 0)
		return result;
	Text command = word(0);
	if (command[0] == '-')
		return parse_removal(command);
	if (command[0] != 'p' && command[0] != 'r')
		return invalid(Error::bad_command, 0);
	out_.command = Command::probe;
	size_t next = command.length + 1;
	if (next > out_.line_length)
		return invalid(Error::no_probe_point, out_.line_length + 1);
	Text place = word(next);
	result = parse_head(command, place, next);
	if (!result.ok())
		return result;
	for (unsigned index = 0; next < out_.line_length; index++) {
		Text argument = word(next);
		if (index >= max_args)
			return invalid(Error::too_many_args, next);
		result = parse_argument(argument, index);
		if (!result.ok())
			return result;
		next += argument.length + 1;
	}
	return ParseResult{};
}

// -:[GRP/][EVENT] [what it must match]: dyn_event_release().
ParseResult Parser::parse_removal(Text command)
{
	out_.command = Command::remove;
	if (command[1] != ':')
		return invalid(Error::bad_command, 1);
	Text name = command.from(2);
	size_t slash = name.find('/');
	Text event = name;
	if (slash < name.length) {
		Text group = name.first(slash);
		if (group.length >= max_name)
			return invalid(Error::group_too_long, 2);
		copy_name(out_.group, max_name, group);
		event = name.from(slash + 1);
	}
	if (event.length >= max_name)
		return invalid(Error::event_too_long, column_of(event));
	if (slash == name.length && event.length == 0)
		return invalid(Error::no_event_name, 2);
	copy_name(out_.event, max_name, event);
	size_t rest = command.length + 1;
	if (rest < out_.line_length)
		out_.rest = Span{static_cast<uint16_t>(rest), static_cast<uint16_t>(out_.line_length - rest)};
	return ParseResult{};
}

ParseResult Parser::parse_head(Text command, Text place, size_t &next)
{
	out_.is_return = command[0] == 'r';
	size_t colon = command.find(':');
	Text between = command.first(colon).from(1);
	if (between.length) {
		// The kernel skips what is not digits here; okprobe refuses it.
		if (!is_digit(between[0]))
			return invalid(Error::bad_command, 1);
		if (!out_.is_return)
			return invalid(Error::maxactive_on_probe, 1);
		uint64_t maxactive;
		if (between.length > max_name - 1 || !parse_unsigned(between, 0, maxactive) || maxactive == 0 ||
		    maxactive > 0xffffffffu)
			return invalid(Error::bad_maxactive, 1);
		if (maxactive > max_maxactive)
			return invalid(Error::maxactive_too_big, 1);
		out_.maxactive = static_cast<unsigned>(maxactive);
	}
	ParseResult result = parse_place(place);
	if (!result.ok())
		return result;
	if (colon < command.length) {
		result = parse_event_name(command, colon);
		if (!result.ok())
			return result;
	}
	if (!out_.group[0])
		copy_name(out_.group, max_name,
			  Text{context_.default_group, Text{context_.default_group, 64}.find('\0')});
	if (!out_.event[0]) {
		// "%c_%s_%ld" or "%c_0x%lx", cut at 63. The kernel makes ':' and
		// '.' '_'; okprobe every character a name cannot have, so that
		// the name reads back (a real symbol has no other).
		char name[max_name];
		Writer writer(name, sizeof(name));
		writer.put(out_.is_return ? 'r' : 'p');
		writer.put('_');
		if (out_.has_address) {
			writer.put("0x");
			writer.number(out_.address, 16);
		} else {
			writer.put(at(out_.symbol));
			writer.put('_');
			writer.number(out_.offset);
		}
		writer.finish();
		for (char *c = name + 1; *c; c++)
			if (!is_alpha(*c) && !is_digit(*c))
				*c = '_';
		copy_name(out_.event, max_name, Text{name, Text{name, max_name}.find('\0')});
	}
	next = column_of(place) + place.length + 1;
	return ParseResult{};
}

ParseResult Parser::parse_place(Text place)
{
	size_t column = column_of(place);
	uint64_t address;
	if (parse_unsigned(place, 0, address)) {
		out_.has_address = true;
		out_.address = address;
		return ParseResult{};
	}
	if (place.find('/') < place.length && place.find(':') < place.length)
		return invalid(Error::uprobe_syntax, column);
	Text symbol = place;
	size_t percent = place.find('%');
	if (percent < place.length) {
		if (!place.from(percent).equals("%return"))
			return invalid(Error::bad_address_suffix, column + percent);
		out_.is_return = true;
		symbol = place.first(percent);
	}
	int64_t offset;
	if (!split_symbol_offset(symbol, symbol, offset))
		return invalid(Error::bad_probe_address, column);
	// No symbol starts with a digit: one would read back as an address.
	if (offset < 0 || offset > 0xffffffffll || symbol.length == 0 || is_digit(symbol[0]))
		return invalid(Error::bad_probe_address, column);
	out_.symbol = span_of(symbol);
	out_.offset = static_cast<uint32_t>(offset);
	Place where = context_.place ? context_.place(context_.cookie, out_) : Place::function_entry;
	// As the kernel: a return probe off a function's entry is refused
	// before the name's uniqueness is looked at.
	if (out_.is_return && (where == Place::inside_function || (where == Place::not_unique && out_.offset)))
		return invalid(Error::bad_return_probe, column);
	if (where == Place::not_unique)
		return fail(eaddrnotavail, Error::not_unique, column);
	if (where == Place::unknown_symbol)
		return fail(enoent, Error::bad_probe_address, column);
	at_entry_ = where == Place::function_entry;
	return ParseResult{};
}

// [GRP/|GRP.][EVENT] after the colon: traceprobe_parse_event_name().
ParseResult Parser::parse_event_name(Text command, size_t colon)
{
	Text name = command.from(colon + 1);
	size_t column = column_of(name);
	size_t slash = name.find('/');
	if (slash == name.length)
		slash = name.find('.');
	Text event = name;
	if (slash < name.length) {
		if (slash == 0)
			return invalid(Error::no_group_name, column);
		if (slash + 1 > max_name)
			return invalid(Error::group_too_long, column);
		Text group = name.first(slash);
		if (!is_good_system_name(group))
			return invalid(Error::bad_group_name, column);
		copy_name(out_.group, max_name, group);
		event = name.from(slash + 1);
		column += slash + 1;
	}
	if (event.length == 0)
		return slash < name.length ? ParseResult{} : invalid(Error::no_event_name, column);
	if (event.length >= max_name)
		return invalid(Error::event_too_long, column);
	if (!is_good_name(event.data, event.length))
		return invalid(Error::bad_event_name, column);
	copy_name(out_.event, max_name, event);
	return ParseResult{};
}

// [NAME=]BODY: traceprobe_parse_probe_arg().
ParseResult Parser::parse_argument(Text word, unsigned index)
{
	size_t column = column_of(word);
	Argument &argument = out_.args[index];
	argument = Argument{};
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

// FETCHARG[:TYPE[[N]]]: traceprobe_parse_probe_arg_body().
ParseResult Parser::parse_body(Text body, Argument &argument)
{
	size_t column = column_of(body);
	if (body.length > max_arg_text)
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
		size_t open = type.find('[');
		if (open < type.length) {
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
		}
		argument.type_text = span_of(type);
	}
	size_t type_column = type.data ? column_of(type) : column;
	bool comm_or_string = arg.equals("$comm") || arg.equals("$COMM") || arg.starts_with("\\\"");
	if (comm_or_string) {
		// The kernel refuses these without a log line; okprobe says why.
		if (count || (type.data && !type.equals("string")))
			return invalid(Error::bad_type, type_column);
		argument.kind = Kind::string;
		argument.size = 4;
	} else if (!find_type(type, argument.kind, argument.size)) {
		return invalid(Error::bad_type, type_column);
	}
	argument.array = static_cast<uint8_t>(count);
	argument.offset = static_cast<uint16_t>(out_.record_size);
	out_.record_size += argument.size * (count ? count : 1);
	if (out_.record_size > max_event_size)
		return fail(e2big, Error::event_too_big, column);

	int last = -1;
	ParseResult result = parse_fetch(arg, argument, last);
	if (!result.ok())
		return result;
	Op op = argument.steps[argument.step_count - 1].op;
	bool dereference = op == Op::dereference || op == Op::user_dereference;
	// The store: replaces a last dereference, or takes one more slot.
	auto next_slot = [&] { return ++last < static_cast<int>(max_fetch_steps) - 1; };
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
		    op == Op::immediate_string || count) {
			if (!next_slot())
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
		if (!next_slot())
			return invalid(Error::too_many_ops, column);
		argument.store = Store::raw;
	}
	if (type.data && type[0] == 'b') {
		// b<WIDTH>@<OFFSET>/<CONTAINER>: __parse_bitfield_probe_arg().
		size_t end;
		uint64_t width = leading_unsigned(type.from(1), end);
		Text rest = type.from(1 + end);
		if (width == 0 || rest[0] != '@')
			return invalid(Error::bad_bitfield, type_column);
		rest = rest.from(1);
		uint64_t bit = leading_unsigned(rest, end);
		if (end == 0 || rest[end] != '/' || !next_slot() || width + bit > argument.size * 8u)
			return invalid(Error::bad_bitfield, type_column);
		argument.bit_width = static_cast<uint8_t>(width);
		argument.bit_offset = static_cast<uint8_t>(bit);
	}
	if (count) {
		bool memory = argument.store == Store::memory || argument.store == Store::string ||
			      argument.store == Store::user_string;
		if (!memory)
			return invalid(Error::bad_string, type_column);
		if (!next_slot())
			return invalid(Error::too_many_ops, column);
	}
	return ParseResult{};
}

// One fetch argument, recursively: parse_probe_arg().
ParseResult Parser::parse_fetch(Text arg, Argument &argument, int &last)
{
	size_t column = column_of(arg);
	switch (arg[0]) {
	case '$':
		return parse_variable(arg, argument, last);
	case '%':
		for (size_t i = 0; i < context_.register_count; i++)
			if (arg.from(1).equals(context_.registers[i].name)) {
				push(argument, last, Op::register_value, context_.registers[i].offset);
				return ParseResult{};
			}
		return invalid(Error::bad_register_name, column);
	case '@':
		if (is_digit(arg[1])) {
			uint64_t address;
			if (!parse_unsigned(arg.from(1), 0, address))
				return invalid(Error::bad_memory_address, column);
			push(argument, last, Op::immediate, static_cast<int64_t>(address));
		} else if (arg[1] == '+') {
			return invalid(Error::file_offset_on_kprobe, column);
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
	case '+':
	case '-': {
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
		Op op = argument.steps[argument.step_count - 1].op;
		if (op == Op::comm || op == Op::immediate_string)
			return invalid(Error::comm_cannot_dereference, column_of(inner));
		if (!push(argument, last, user ? Op::user_dereference : Op::dereference, offset))
			return invalid(Error::too_many_ops, column_of(inner));
		return ParseResult{};
	}
	case '\\':
		if (arg[1] == '"') {
			Text string = arg.from(2);
			if (string.length == 0 || string[string.length - 1] != '"')
				return invalid(Error::immediate_string_not_closed, column + 2 + string.length);
			Text text = string.first(string.length - 1);
			push(argument, last, Op::immediate_string, out_.immediates_length, text);
			for (size_t i = 0; i < text.length; i++)
				out_.immediates[out_.immediates_length++] = text[i];
			out_.immediates[out_.immediates_length++] = '\0';
			return ParseResult{};
		} else {
			// str_to_immediate().
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
				return invalid(Error::bad_immediate, column + 1);
			push(argument, last, Op::immediate, static_cast<int64_t>(value));
			return ParseResult{};
		}
	default:
		return invalid(Error::bad_fetch_argument, column);
	}
}

// $retval, $stack, $stackN, $comm, $argN: parse_probe_vars().
ParseResult Parser::parse_variable(Text arg, Argument &argument, int &last)
{
	size_t column = column_of(arg);
	Text name = arg.from(1);
	uint64_t n;
	if (name.equals("retval")) {
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
	} else if (at_entry_ && !out_.is_return && !out_.has_address && name.starts_with("arg")) {
		if (!parse_unsigned(name.from(3), 10, n))
			return invalid(Error::bad_variable, column);
		if (n == 0 || n > context_.max_stack_index)
			return invalid(Error::bad_argument_number, column);
		push(argument, last, Op::argument, static_cast<int64_t>(n - 1));
	} else {
		return invalid(Error::bad_variable, column);
	}
	return ParseResult{};
}

} // namespace

bool is_good_name(const char *name, size_t length)
{
	if (length == 0 || (!is_alpha(name[0]) && name[0] != '_'))
		return false;
	for (size_t i = 1; i < length; i++)
		if (!is_alpha(name[i]) && !is_digit(name[i]) && name[i] != '_')
			return false;
	return true;
}

const char *error_text(Error error)
{
	switch (error) {
	case Error::none:
		return "Success";
	case Error::bad_command:
		return "Unknown command: a probe is p, r or -:";
	case Error::no_probe_point:
		return "Probe point is not specified";
	case Error::maxactive_on_probe:
		return "Maxactive is not for kprobe";
	case Error::bad_maxactive:
		return "Invalid maxactive number";
	case Error::maxactive_too_big:
		return "Maxactive is too big";
	case Error::uprobe_syntax:
		return "A uprobe's place (PATH:OFFSET) is not for okprobe";
	case Error::bad_probe_address:
		return "Invalid probed address or symbol";
	case Error::not_unique:
		return "The symbol is not unique";
	case Error::bad_return_probe:
		return "Retprobe address must be an function entry";
	case Error::bad_address_suffix:
		return "Invalid probed address suffix";
	case Error::no_group_name:
		return "Group name is not specified";
	case Error::group_too_long:
		return "Group name is too long";
	case Error::bad_group_name:
		return "Group name must follow the same rules as C identifiers";
	case Error::no_event_name:
		return "Event name is not specified";
	case Error::event_too_long:
		return "Event name is too long";
	case Error::bad_event_name:
		return "Event name must follow the same rules as C identifiers";
	case Error::too_many_args:
		return "Too many arguments (at most 128)";
	case Error::retval_on_probe:
		return "$retval is not available on probe";
	case Error::bad_stack_number:
		return "Invalid stack number";
	case Error::bad_argument_number:
		return "Invalid argument number";
	case Error::bad_variable:
		return "Invalid $-variable specified";
	case Error::bad_register_name:
		return "Invalid register name";
	case Error::bad_memory_address:
		return "Invalid memory address";
	case Error::bad_immediate:
		return "Invalid immediate value";
	case Error::immediate_string_not_closed:
		return "String is not closed with '\"'";
	case Error::file_offset_on_kprobe:
		return "File offset is not available with kprobe";
	case Error::too_many_ops:
		return "Dereference is too much nested";
	case Error::dereference_needs_brace:
		return "Dereference needs a brace";
	case Error::bad_dereference_offset:
		return "Invalid dereference offset";
	case Error::dereference_not_closed:
		return "Dereference brace is not closed";
	case Error::comm_cannot_dereference:
		return "$comm can not be dereferenced";
	case Error::bad_fetch_argument:
		return "Invalid fetch argument";
	case Error::array_not_closed:
		return "Array is not closed";
	case Error::bad_array_suffix:
		return "Array has wrong suffix";
	case Error::bad_array_number:
		return "Invalid array size";
	case Error::array_too_big:
		return "Array number is too big";
	case Error::bad_type:
		return "Unknown type is specified";
	case Error::bad_string:
		return "String accepts only memory argument";
	case Error::bad_symbol_string:
		return "Symbol String doesn't accept data/userdata";
	case Error::bad_bitfield:
		return "Invalid bitfield";
	case Error::argument_name_too_long:
		return "Argument name is too long";
	case Error::no_argument_name:
		return "Argument name is not specified";
	case Error::bad_argument_name:
		return "Argument name must follow the same rules as C identifiers";
	case Error::used_argument_name:
		return "This argument name is already used";
	case Error::argument_too_long:
		return "Argument expression is too long";
	case Error::no_argument_body:
		return "No argument expression";
	case Error::event_too_big:
		return "Event too big (too many fields?)";
	case Error::line_too_long:
		return "Line is too long (at most 4095 bytes)";
	case Error::trailing_text:
		return "Text after the dereference's closing brace";
	case Error::registration_failed:
		return "Failed to register probe event";
	case Error::instruction_boundary:
		return "Probe point is not an instruction boundary";
	case Error::event_exists:
		return "Given group/event name is already used by another event";
	case Error::count:
		break;
	}
	return "Unknown error";
}

size_t compact_size(const Definition &definition)
{
	return static_cast<size_t>(reinterpret_cast<const char *>(definition.args + definition.arg_count) -
				   reinterpret_cast<const char *>(&definition));
}

ParseResult parse_line(const char *text, size_t length, const ParseContext &context, Definition &out)
{
	return Parser(context, out).run(text, length);
}

size_t format_definition(const Definition &definition, char *buffer, size_t size)
{
	Writer writer(buffer, size);
	if (definition.command != Command::probe)
		return writer.finish();
	writer.put(definition.is_return ? 'r' : 'p');
	if (definition.is_return && definition.maxactive)
		writer.number(definition.maxactive);
	writer.put(':');
	writer.put(definition.group);
	writer.put('/');
	writer.put(definition.event);
	writer.put(' ');
	if (definition.has_address) {
		writer.put("0x");
		writer.number(definition.address, 16);
	} else {
		writer.put(Text{definition.line + definition.symbol.start, definition.symbol.length});
		if (definition.offset) {
			writer.put('+');
			writer.number(definition.offset);
		}
	}
	for (unsigned i = 0; i < definition.arg_count; i++) {
		const Argument &argument = definition.args[i];
		writer.put(' ');
		writer.put(argument.name);
		writer.put('=');
		writer.put(Text{definition.line + argument.body.start, argument.body.length});
	}
	return writer.finish();
}

namespace {

bool single_string(const Argument &argument)
{
	return argument.array == 0 && stores_string(argument.store);
}

// An element's printf format (the kernel's PRINT_TYPE_FMT_NAME()).
const char *element_format(const Argument &argument)
{
	const bool wide = argument.size == 8;
	switch (argument.kind) {
	case Kind::unsigned_integer:
		return wide ? "%Lu" : "%u";
	case Kind::signed_integer:
		return wide ? "%Ld" : "%d";
	case Kind::symbol:
		return "%pS";
	case Kind::hex:
		return wide ? "0x%Lx" : "0x%x";
	default:
		return "0x%x"; // an array of strings: their __data_loc words
	}
}

} // namespace

size_t field_type(const Argument &argument, char *buffer, size_t size)
{
	static const char *const unsigned_names[] = {"", "u8", "u16", "", "u32", "", "", "", "u64"};
	static const char *const signed_names[] = {"", "s8", "s16", "", "s32", "", "", "", "s64"};
	Writer writer(buffer, size);
	if (stores_string(argument.store))
		writer.put("__data_loc char[]");
	else
		writer.put(argument.kind == Kind::signed_integer ? signed_names[argument.size]
								 : unsigned_names[argument.size]);
	if (argument.array) {
		writer.put('[');
		writer.number(argument.array);
		writer.put(']');
	}
	return writer.finish();
}

size_t print_format(const Definition &definition, char *buffer, size_t size)
{
	Writer writer(buffer, size);
	// A return probe's record has the function and where it returned to.
	writer.put(definition.is_return ? "\"(%lx <- %lx)" : "\"(%lx)");
	for (unsigned i = 0; i < definition.arg_count; i++) {
		const Argument &argument = definition.args[i];
		writer.put(' ');
		writer.put(argument.name);
		writer.put('=');
		if (single_string(argument)) {
			writer.put("\\\"%s\\\"");
			continue;
		}
		if (!argument.array) {
			writer.put(element_format(argument));
			continue;
		}
		writer.put('{');
		for (unsigned e = 0; e < argument.array; e++) {
			if (e)
				writer.put(',');
			writer.put(element_format(argument));
		}
		writer.put('}');
	}
	writer.put(definition.is_return ? "\", REC->__probe_func, REC->__probe_ret_ip" : "\", REC->__probe_ip");
	for (unsigned i = 0; i < definition.arg_count; i++) {
		const Argument &argument = definition.args[i];
		if (single_string(argument)) {
			writer.put(", __get_str(");
			writer.put(argument.name);
			writer.put(')');
		} else if (!argument.array) {
			writer.put(", REC->");
			writer.put(argument.name);
		} else {
			for (unsigned e = 0; e < argument.array; e++) {
				writer.put(", REC->");
				writer.put(argument.name);
				writer.put('[');
				writer.number(e);
				writer.put(']');
			}
		}
	}
	return writer.finish();
}

size_t format_error_log(uint64_t seconds, uint32_t microseconds, const char *location, const Definition &definition,
			const ParseResult &result, char *buffer, size_t size)
{
	static constexpr char command_prefix[] = "  Command: ";
	Writer writer(buffer, size);
	writer.put('[');
	writer.number(seconds, 10, 5);
	writer.put('.');
	writer.number(microseconds, 10, 6, '0');
	writer.put("] ");
	writer.put(location);
	writer.put(": error: ");
	writer.put(error_text(result.error));
	writer.put('\n');
	writer.put(command_prefix);
	writer.put(Text{definition.line, definition.line_length});
	writer.put('\n');
	for (size_t i = 0; i + 1 < sizeof(command_prefix) + result.column; i++)
		writer.put(' ');
	writer.put("^\n");
	return writer.finish();
}

} // namespace okp::events
