// SPDX-License-Identifier: GPL-2.0
// An okprobe_events line, as the kernel's trace_kprobe.c and trace_probe.c
// parse it (6.1): the line normalized as error_log shows it, its command
// (p, r, -), its place (SYM+OFFS, ADDR, %return) and what the kernel says
// of it, its group and event names; then each argument in turn
// (probe_events_arguments.cpp). Also the kernel's number parsers the
// grammar's files share. probe_events.hpp says what and why;
// probe_events_parts.hpp what the grammar's files share.
#include "core/probe_events_parts.hpp"

namespace okp::events {

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

namespace {

bool is_good_system_name(Text name)
{
	if (name.length == 0 || (!is_alpha(name[0]) && name[0] != '_' && name[0] != '-'))
		return false;
	for (size_t i = 1; i < name.length; i++)
		if (!is_alpha(name[i]) && !is_digit(name[i]) && name[i] != '_' && name[i] != '-')
			return false;
	return true;
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
	out.entry_arguments = 0;
	out.immediates_length = 0;
}

} // namespace

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
	if (context_.btf_arguments && next < out_.line_length) {
		result = expand_btf_arguments(next);
		if (!result.ok())
			return result;
	}
	if (context_.dentry_types && next < out_.line_length) {
		result = expand_dentry_arguments(next);
		if (!result.ok())
			return result;
	}
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
	// 6.8 and later validate the symbol first (validate_probe_symbol()),
	// and refuse with EINVAL.
	if (context_.validate_symbols && where == Place::not_unique)
		return invalid(Error::not_unique, column);
	if (context_.validate_symbols && where == Place::unknown_symbol)
		return invalid(Error::bad_probe_address, column);
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

bool is_good_name(const char *name, size_t length)
{
	if (length == 0 || (!is_alpha(name[0]) && name[0] != '_'))
		return false;
	for (size_t i = 1; i < length; i++)
		if (!is_alpha(name[i]) && !is_digit(name[i]) && name[i] != '_')
			return false;
	return true;
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

namespace {

Text span_text(const Definition &definition, Span span)
{
	return Text{definition.line + span.start, span.length};
}

bool same_text(Text a, Text b)
{
	if (a.length != b.length)
		return false;
	for (size_t i = 0; i < a.length; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

// The kernel's fetch type: its name, hence its kind and element size.
bool same_type(const Argument &a, const Argument &b)
{
	return a.kind == b.kind && a.size == b.size && a.array == b.array;
}

bool same_name(const Argument &a, const Argument &b)
{
	return same_text(Text{a.name, Text{a.name, sizeof(a.name)}.find('\0')},
			 Text{b.name, Text{b.name, sizeof(b.name)}.find('\0')});
}

ParseResult refused(Error error, size_t column)
{
	ParseResult result;
	result.error_number = eexist;
	result.error = error;
	result.column = static_cast<uint16_t>(column);
	return result;
}

} // namespace

ParseResult check_join(const Definition &event, const Definition &added)
{
	if (event.is_return != added.is_return)
		return refused(Error::different_probe_type, 0);
	// trace_probe_compare_arg_type(): the first index that differs; when
	// added has fewer, the caret goes one past its end, where the kernel's
	// __trace_probe_log_err() puts one past the last word.
	const unsigned shared = event.arg_count < added.arg_count ? event.arg_count : added.arg_count;
	for (unsigned i = 0; i < shared; i++)
		if (!same_type(event.args[i], added.args[i]) || !same_name(event.args[i], added.args[i]))
			return refused(Error::different_argument, added.args[i].word_start);
	if (event.arg_count != added.arg_count)
		return refused(Error::different_argument,
			       added.arg_count > shared ? added.args[shared].word_start : added.line_length + 1u);
	return ParseResult{};
}

bool same_probe(const Definition &probe, const Definition &added)
{
	if (!same_text(span_text(probe, probe.symbol), span_text(added, added.symbol)) ||
	    probe.offset != added.offset || probe.arg_count != added.arg_count)
		return false;
	for (unsigned i = 0; i < probe.arg_count; i++)
		if (!same_text(span_text(probe, probe.args[i].body), span_text(added, added.args[i].body)))
			return false;
	return true;
}

} // namespace okp::events
