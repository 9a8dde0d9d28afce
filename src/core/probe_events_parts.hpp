// SPDX-License-Identifier: GPL-2.0
// What the okprobe_events grammar's own files share and nothing else
// includes: a view of part of the line (Text), the kernel's number parsers
// it needs, a bounded writer, and the parser of one line, whose steps are
// split by concern: probe_events.cpp (the numbers, the line, its command,
// place, group and event), probe_events_arguments.cpp (each fetch argument:
// its name, type, fetch program and store) and probe_events_format.cpp
// (what okprobe_events writes: the canonical form, the format file's
// fields and print fmt, error_log's texts and entries).
#pragma once

#include "core/probe_events.hpp"
#include "core/btf.hpp"

namespace okp::events {

inline constexpr int enoent = 2, e2big = 7, eexist = 17, einval = 22, eopnotsupp = 95, eaddrnotavail = 99;

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
size_t radix_prefix(Text text, unsigned &base);
// Digits from the start: how many, the value, whether it overflowed.
size_t parse_digits(Text text, unsigned base, uint64_t &value, bool &overflow);
// kstrtoull(): all of text, an optional '+', base 0 prefixes.
bool parse_unsigned(Text text, unsigned base, uint64_t &value);
// kstrtoll().
bool parse_signed(Text text, unsigned base, int64_t &value);
// simple_strtoul(): the value of the digits at the start, and where they end.
uint64_t leading_unsigned(Text text, size_t &end);
// traceprobe_split_symbol_offset(): the first + or - starts the offset.
// The symbol part, and false when the offset is not a number.
bool split_symbol_offset(Text text, Text &symbol, int64_t &offset);

// from, cut to fit capacity with its NUL.
inline void copy_name(char *to, size_t capacity, Text from)
{
	size_t n = from.length < capacity - 1 ? from.length : capacity - 1;
	for (size_t i = 0; i < n; i++)
		to[i] = from.data[i];
	to[n] = '\0';
}

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

// One line's parse into a Definition (run()), in the steps the kernel's
// parser takes. 7.3's parser of nested arguments reads a chain of
// dereferences, typecasts and this_cpu_*() outside in, the innermost
// argument, then each level inside out (parse_probe_arg_nested(), its
// leaf, unwind_parse_states()); okprobe's recursion does the same in the
// same order, so that the first refusal is the kernel's.
class Parser {
public:
	Parser(const ParseContext &context, Definition &out) : context_(context), out_(out), btf_(context.btf) {}

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
	ParseResult parse_array_suffix(Text &type, unsigned &count);
	ParseResult account_field(Argument &argument, size_t column);
	ParseResult save_entry_argument(Argument &argument, int &last, unsigned index, size_t column);
	ParseResult choose_type(Text arg, Text type, unsigned count, size_t type_column, Argument &argument);
	ParseResult choose_store(Argument &argument, int &last, size_t column, size_t type_column);
	ParseResult parse_bitfield(Text type, Argument &argument, int &last, size_t type_column);
	ParseResult parse_fetch(Text arg, Argument &argument, int &last);
	ParseResult parse_register(Text arg, Argument &argument, int &last);
	ParseResult parse_memory(Text arg, Argument &argument, int &last);
	ParseResult parse_dereference(Text arg, Argument &argument, int &last);
	ParseResult parse_immediate_string(Text arg, Argument &argument, int &last);
	ParseResult parse_immediate(Text arg, Argument &argument, int &last);
	ParseResult parse_variable(Text arg, Argument &argument, int &last);
	ParseResult parse_this_cpu(Text arg, Argument &argument, int &last);
	// The BTF grammar (probe_events_btf.cpp).
	ParseResult expand_btf_arguments(size_t first);
	ParseResult expand_dentry_arguments(size_t first);
	ParseResult replace_line(const char *expanded, size_t length, size_t first);
	ParseResult parse_btf_argument(Text arg, Argument &argument, int &last);
	ParseResult parse_btf_fields(Text fields, const btf::Type *type, Argument &argument, int &last, size_t column,
				     bool in_struct = false, int64_t prefix = 0);
	ParseResult member_bits(Text &fields, const btf::Type *&type, size_t &column, uint32_t &bits);
	ParseResult parse_typecast(Text arg, Argument &argument, int &last);
	ParseResult type_from_btf(Text type, Argument &argument, int &last);
	const btf::Type *function_proto();
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
	// The types the line reads: vmlinux's, or the module's (split on
	// vmlinux's) whose function the place is.
	const btf::Types *btf_;
	// The BTF grammar's state: the function's prototype, asked once; the
	// type the last fetch step gives (null past a +OFFS() dereference),
	// its bits within the loaded bytes; the column fields reached.
	const btf::Type *proto_ = nullptr;
	bool proto_asked_ = false;
	const btf::Type *last_type_ = nullptr;
	uint32_t last_bitsize_ = 0, last_bitoffs_ = 0;
	size_t btf_column_ = 0;
	// 7.3's nesting: the dereferences, typecasts and this_cpu_*() the
	// argument's fetch is inside (one chain: each has one inner argument).
	unsigned depth_ = 0;
	// A member's or struct's name as BTF lookups take it (NUL-ended): one
	// buffer, filled and read between recursions, not one in each of up to
	// 8 nested typecasts' frames of the tracefs write's kernel stack.
	char name_[max_arg_text_7x + 1];
};

} // namespace okp::events
