// SPDX-License-Identifier: GPL-2.0
// The okprobe_events grammar's BTF part, as 6.6 and later kernels read
// kprobe_events lines (6.12's trace_probe.c: traceprobe_expand_meta_args(),
// parse_btf_arg(), parse_btf_field(), the BTF typing of
// traceprobe_parse_probe_arg_body()): $arg* and $argN rewritten to the
// function's parameter names, a parameter by name and its members through
// "->" and ".", $retval typed by the function's return type, an untyped
// argument typed by what it fetches, char pointers and arrays as strings,
// %pd and %pD rewritten with the BTF's offsets, an untyped bitfield member
// cut out of its loaded bytes (parse_btf_bitfield()). And 7.3's
// (trace_probe.c: handle_typecast(), parse_btf_casttype(),
// get_bitoffset_of_field(), parse_btf_field()): typecasts,
// (STRUCT[,FIELD])NAME->FIELD... and (STRUCT[,FIELD])(FETCHARG)->FIELD...,
// whose first field is STRUCT's, less FIELD's offset; $current->FIELD...,
// the task's task_struct. Each refusal has the kernel's error class, errno
// and caret column.
//
// What the kernel's grammar has and okprobe's not: a bitfield member whose
// bits reach past its type's bytes (the kernel shifts 8 bytes of the
// record, the next field's among them), refused with okprobe's own error
// class; a typecast to a struct only another module's BTF has (the
// kernel's bpf_find_btf_id() looks in every module's, okprobe in
// vmlinux's and the probed function's module's); and, where the kernel's
// r events fetch no arguments (before 6.9), a name in an r event is
// okprobe's refusal too.
#include "core/owned.hpp"
#include "core/probe_events_parts.hpp"

namespace okp::events {

namespace {

// The first "->" or "." in text (split_next_field()): where the next
// field starts, and whether it was an arrow. A '-' without '>' is
// returned as bad_at.
struct FieldSplit {
	Text head;
	Text rest; // data null: no field after head
	bool arrow = false;
	size_t bad_at = 0;
	bool bad = false;
};

FieldSplit split_field(Text text)
{
	FieldSplit split;
	split.head = text;
	for (size_t i = 0; i < text.length; i++) {
		if (text[i] == '.') {
			split.head = text.first(i);
			split.rest = text.from(i + 1);
			return split;
		}
		if (text[i] == '-') {
			if (text[i + 1] != '>') {
				split.bad = true;
				split.bad_at = i;
				return split;
			}
			split.head = text.first(i);
			split.rest = text.from(i + 2);
			split.arrow = true;
			return split;
		}
	}
	return split;
}

bool is_char(const btf::Types &types, uint32_t id)
{
	const btf::Type *t = types.skip_modifiers(id);
	if (!t || t->kind() != btf::Kind::integer)
		return false;
	const btf::Integer integer = btf::Types::integer(*t);
	return !integer.is_signed && integer.bits == 8;
}

} // namespace

// The line, its arguments rewritten (length bytes at expanded).
ParseResult Parser::replace_line(const char *expanded, size_t length, size_t first)
{
	if (length >= max_line)
		return fail(e2big, Error::args_too_long, first);
	for (size_t i = 0; i <= length; i++)
		out_.line[i] = expanded[i];
	out_.line_length = static_cast<uint16_t>(length);
	return ParseResult{};
}

const btf::Type *Parser::function_proto()
{
	if (proto_asked_)
		return proto_;
	proto_asked_ = true;
	// The kernel asks for the place's symbol as typed: "MOD:SYM" or an
	// address names no function in its BTF.
	if (!context_.btf || out_.has_address || out_.symbol.length >= 512)
		return nullptr;
	char name[512];
	copy_name(name, sizeof(name), at(out_.symbol));
	proto_ = btf_->function_proto(name);
	// Else a module's (not for MOD:SYM, as above).
	const Text symbol = at(out_.symbol);
	if (!proto_ && context_.module_btf && symbol.find(':') == symbol.length) {
		const btf::Types *module = context_.module_btf(context_.cookie, name);
		proto_ = module ? module->function_proto(name) : nullptr;
		if (proto_)
			btf_ = module;
	}
	return proto_;
}

// $arg* and unnamed $argN[:TYPE]: the parameters' names.
ParseResult Parser::expand_btf_arguments(size_t first)
{
	int star = -1, index = 0;
	bool found = false;
	size_t last_column = first;
	for (size_t next = first; next < out_.line_length; index++) {
		const Text w = word(next);
		next += w.length + 1;
		if (!w.starts_with("$arg"))
			continue;
		last_column = column_of(w);
		if (!at_entry_ && !out_.is_return)
			return invalid(Error::nofentry_args, last_column);
		found = true;
		if (is_digit(w[4]))
			continue;
		if (w[4] != '*')
			return invalid(Error::bad_variable, last_column);
		if (star >= 0)
			return invalid(Error::double_args, last_column);
		star = index;
	}
	if (!found)
		return ParseResult{};
	const btf::Type *proto = function_proto();
	if (!proto || proto->vlen() == 0) {
		if (star >= 0)
			return fail(eopnotsupp, Error::nosup_btf_argument, last_column);
		return ParseResult{};
	}
	const btf::Param *params = btf::Types::params(*proto);
	// The new line, off the stack (a kernel stack has no room for it).
	const OwnedArray<char> expanded = OwnedArray<char>::make(max_line);
	if (!expanded)
		return fail(e2big, Error::args_too_long, first);
	Writer writer(expanded.get(), max_line);
	writer.put(Text{out_.line, first});
	index = 0;
	for (size_t next = first; next < out_.line_length; index++) {
		const Text w = word(next);
		const size_t column = next;
		next += w.length + 1;
		if (index == star) {
			for (unsigned i = 0; i < proto->vlen(); i++) {
				writer.put(btf_->name(params[i].name_off));
				writer.put(i + 1 < proto->vlen() ? " " : "");
			}
		} else if (w.starts_with("$arg")) {
			size_t digits = 4;
			uint64_t n = 0;
			while (digits < w.length && is_digit(w[digits]) && n < 100000)
				n = n * 10 + static_cast<unsigned>(w[digits++] - '0');
			const Text type = w.from(digits);
			if (type.length && type[0] != ':')
				return fail(enoent, Error::bad_variable, column);
			if (n == 0)
				return invalid(Error::bad_argument_number, column);
			if (n > proto->vlen())
				return fail(enoent, Error::no_btf_argument, column);
			writer.put(btf_->name(params[n - 1].name_off));
			writer.put(type);
		} else {
			writer.put(w);
		}
		writer.put(next < out_.line_length ? " " : "");
	}
	return replace_line(expanded.get(), writer.finish(), first);
}

namespace {

// The byte offset of holder.first.second (struct holder's member first,
// a struct, and its member second), from the BTF; false when it has none
// such.
bool member_offset(const btf::Types &types, const char *holder, const char *first, const char *second, uint64_t &offset)
{
	const btf::Type *type = types.type(types.find(holder, btf::Kind::structure));
	uint64_t bits = 0;
	const char *const path[] = {first, second};
	for (const char *name : path) {
		if (!type || !btf::is_struct(type))
			return false;
		const btf::FoundMember found = types.member(*type, name);
		if (!found.member)
			return false;
		bits += btf::Types::bit_offset(found);
		type = types.skip_modifiers(found.member->type);
	}
	offset = bits / 8;
	return true;
}

// 'd' or 'D' where word is ARG:%pd or ARG:%pD (glob_match("*:%p[dD]")),
// else 0.
char dentry_type(Text word)
{
	if (word.length < 4 || !word.from(word.length - 4).starts_with(":%p"))
		return 0;
	const char last = word[word.length - 1];
	return last == 'd' || last == 'D' ? last : 0;
}

} // namespace

// ARG:%pd and ARG:%pD (traceprobe_expand_dentry_args()): the dentry's
// name, +0x0(+0xNAME(ARG)):string, and the file's, through its dentry.
ParseResult Parser::expand_dentry_arguments(size_t first)
{
	bool found = false;
	for (size_t next = first; next < out_.line_length && !found;) {
		const Text w = word(next);
		next += w.length + 1;
		found = dentry_type(w) != 0;
	}
	if (!found)
		return ParseResult{};
	uint64_t name = 0, dentry = 0;
	if (!context_.btf || !member_offset(*btf_, "dentry", "d_name", "name", name) ||
	    !member_offset(*btf_, "file", "f_path", "dentry", dentry))
		return invalid(Error::bad_type, first);
	const OwnedArray<char> expanded = OwnedArray<char>::make(max_line);
	if (!expanded)
		return fail(e2big, Error::args_too_long, first);
	Writer writer(expanded.get(), max_line);
	writer.put(Text{out_.line, first});
	for (size_t next = first; next < out_.line_length;) {
		const Text w = word(next);
		next += w.length + 1;
		const char type = dentry_type(w);
		if (!type) {
			writer.put(w);
		} else {
			const size_t equals = w.find('=');
			const Text fetched = w.first(w.length - 4).from(equals < w.length ? equals + 1 : 0);
			if (equals < w.length)
				writer.put(w.first(equals + 1));
			writer.put("+0x0(+0x");
			writer.number(name, 16);
			writer.put('(');
			if (type == 'D') {
				writer.put("+0x");
				writer.number(dentry, 16);
				writer.put('(');
			}
			writer.put(fetched);
			writer.put(type == 'D' ? "))):string" : ")):string");
		}
		writer.put(next < out_.line_length ? " " : "");
	}
	return replace_line(expanded.get(), writer.finish(), first);
}

// NAME[->FIELD[.FIELD|->FIELD...]] or $retval[->FIELD...]: parse_btf_arg().
ParseResult Parser::parse_btf_argument(Text arg, Argument &argument, int &last)
{
	const size_t column = column_of(arg);
	const FieldSplit split = split_field(arg);
	if (split.bad)
		return invalid(Error::bad_hyphen, column + split.bad_at);
	if (!split.arrow && split.rest.data)
		return fail(eopnotsupp, Error::nosup_data_argument, column_of(split.rest));
	uint32_t type_id = 0;
	if (context_.current_task && split.head.equals("$current")) {
		// 7.3: the task's task_struct, the struct itself (not a
		// pointer): its first field is a member of it.
		push(argument, last, Op::current_task, 0);
		const btf::Type *task = btf_ ? btf_->type(btf_->find("task_struct", btf::Kind::structure)) : nullptr;
		if (!task)
			return fail(enoent, Error::no_btf_entry, column);
		last_type_ = task;
		last_bitsize_ = last_bitoffs_ = 0;
		btf_column_ = column;
		if (split.rest.data)
			return parse_btf_fields(split.rest, task, argument, last, column_of(split.rest), true);
		return ParseResult{};
	}
	if (out_.is_return && split.head.equals("$retval")) {
		push(argument, last, Op::return_value, 0);
		const btf::Type *proto = function_proto();
		if (!proto) {
			if (split.rest.data)
				return fail(enoent, Error::no_btf_entry, column_of(split.rest));
			return ParseResult{};
		}
		if (proto->size_or_type == 0)
			return fail(enoent, Error::no_retval, column);
		type_id = proto->size_or_type;
	} else {
		const btf::Type *proto = function_proto();
		if (!proto || proto->vlen() == 0)
			return fail(enoent, Error::no_btf_entry, column);
		const btf::Param *params = btf::Types::params(*proto);
		unsigned i = 0;
		while (i < proto->vlen() && !split.head.equals(btf_->name(params[i].name_off)))
			i++;
		if (i == proto->vlen())
			return fail(enoent, Error::no_btf_argument, column);
		if (out_.is_return && !context_.return_arguments)
			return fail(eopnotsupp, Error::return_entry_arguments, column);
		if (out_.is_return) {
			const ParseResult saved = save_entry_argument(argument, last, i, column);
			if (!saved.ok())
				return saved;
		} else {
			push(argument, last, Op::argument, i);
		}
		type_id = params[i].type;
	}
	const btf::Type *type = btf_->skip_modifiers(type_id);
	if (!type)
		return invalid(Error::bad_btf_type, column);
	last_type_ = type;
	last_bitsize_ = last_bitoffs_ = 0;
	btf_column_ = column;
	if (split.rest.data)
		return parse_btf_fields(split.rest, type, argument, last, column_of(split.rest));
	return ParseResult{};
}

// The "."-joined members at the start of fields, in struct type
// (get_bitoffset_of_field()): their bit offset added to bits, type left
// the last one's, fields what follows an "->" (data null: nothing),
// column where the last member's name starts (past an "->": where what
// follows it starts).
ParseResult Parser::member_bits(Text &fields, const btf::Type *&type, size_t &column, uint32_t &bits)
{
	bool arrow = false;
	do {
		const FieldSplit split = split_field(fields);
		if (split.bad)
			return invalid(Error::bad_hyphen, column + split.bad_at);
		arrow = split.arrow;
		if (!btf::is_struct(type))
			return invalid(Error::bad_btf_type, column);
		copy_name(name_, sizeof(name_), split.head);
		const btf::FoundMember found = btf_->member(*type, name_);
		if (!found.member)
			return fail(enoent, Error::no_btf_field, column);
		bits += btf::Types::bit_offset(found);
		last_bitsize_ = btf::Types::member_bitfield_size(*found.holder, *found.member);
		type = btf_->skip_modifiers(found.member->type);
		if (!type)
			return invalid(Error::bad_btf_type, column);
		if (split.rest.data)
			column = column_of(split.rest);
		fields = split.rest;
	} while (!arrow && fields.data);
	return ParseResult{};
}

// The members after a parameter: each "->" a load, "."s adding up
// (parse_btf_field()). in_struct: type is the struct the first members
// are of (7.3's typecast and $current), not a pointer to it, and the
// first load's offset is less prefix (a typecast's FIELD's).
ParseResult Parser::parse_btf_fields(Text fields, const btf::Type *type, Argument &argument, int &last, size_t column,
				     bool in_struct, int64_t prefix)
{
	bool first = true;
	while (fields.data) {
		if (!(first && in_struct)) {
			if (type->kind() != btf::Kind::pointer)
				return invalid(Error::no_pointer_to_struct, column);
			type = btf_->skip_modifiers(type->size_or_type);
			if (!type)
				return invalid(Error::bad_btf_type, column);
		}
		uint32_t bits = 0;
		const ParseResult result = member_bits(fields, type, column, bits);
		if (!result.ok())
			return result;
		const int64_t offset = static_cast<int64_t>(bits / 8) - (first && in_struct ? prefix : 0);
		if (!push(argument, last, Op::dereference, offset))
			return invalid(Error::too_many_ops, column);
		last_bitoffs_ = bits % 8;
		last_type_ = type;
		first = false;
	}
	btf_column_ = column;
	return ParseResult{};
}

namespace {

// find_matched_close_paren(): the ')' that closes the '(' text starts
// with, or text.length.
size_t matched_close(Text text)
{
	int count = 0;
	for (size_t i = 0; i < text.length; i++) {
		if (text[i] == '(') {
			count++;
		} else if (text[i] == ')' && --count == 0) {
			return i;
		}
	}
	return text.length;
}

} // namespace

// (STRUCT[,FIELD])REST: 7.3's handle_typecast() (where the inner argument
// and the fields are), the inner argument, then its unwind:
// parse_btf_casttype() (STRUCT in the BTF, FIELD's byte offset in it) and
// parse_btf_field() (the fields from STRUCT's, the first less FIELD's
// offset). REST is NAME->FIELD..., (FETCHARG)->FIELD..., or a dereference
// or this_cpu_*() followed by ->FIELD...
ParseResult Parser::parse_typecast(Text arg, Argument &argument, int &last)
{
	const size_t column = column_of(arg);
	if (!at_entry_ && !out_.is_return)
		return fail(eopnotsupp, Error::nosup_btf_argument, column);
	const size_t cast_end = arg.find(')');
	if (cast_end == arg.length)
		return invalid(Error::dereference_not_closed, column + arg.length);
	const Text cast = arg.first(cast_end).from(1);
	const Text rest = arg.from(cast_end + 1);
	const size_t rest_column = column_of(rest);
	Text inner, fields;
	if (rest[0] == '(') {
		const size_t close = matched_close(rest);
		if (close == rest.length)
			return invalid(Error::dereference_not_closed, rest_column);
		if (rest[close + 1] != '-' || rest[close + 2] != '>')
			return invalid(Error::typecast_required_field, rest_column + close + 1);
		inner = rest.first(close).from(1);
		fields = rest.from(close + 3);
	} else if (rest[0] == '+' || rest[0] == '-' || rest.starts_with("this_cpu_ptr(") ||
		   rest.starts_with("this_cpu_read(")) {
		// A dereference may have a field access inside it.
		const size_t open = 1 + rest.from(1).find('(');
		if (open >= rest.length)
			return invalid(Error::dereference_needs_brace, rest_column);
		size_t close = matched_close(rest.from(open));
		if (close == rest.length - open)
			return invalid(Error::dereference_not_closed, rest_column + rest.length);
		close += open + 1;
		if (rest[close] != '-' || rest[close + 1] != '>')
			return invalid(Error::typecast_required_field, rest_column + close);
		inner = rest.first(close);
		fields = rest.from(close + 2);
	} else {
		if (rest[0] == '@') {
			// @SYM+OFFS only in parentheses: its - would end the name.
			size_t sign = 0;
			while (sign < rest.length && rest[sign] != '+' && rest[sign] != '-')
				sign++;
			if (sign < rest.length && is_digit(rest[sign + 1]))
				return invalid(Error::typecast_symbol_offset, rest_column);
		}
		const size_t hyphen = rest.find('-');
		if (hyphen == rest.length || rest[hyphen + 1] != '>')
			return invalid(Error::typecast_required_field, rest_column + rest.length);
		inner = rest.first(hyphen);
		fields = rest.from(hyphen + 2);
	}
	ParseResult result = parse_fetch(inner, argument, last);
	if (!result.ok())
		return result;

	// The unwind: STRUCT, in the BTF the line reads (vmlinux's, or the
	// probed function's module's split on it).
	const size_t comma = cast.find(',');
	copy_name(name_, sizeof(name_), cast.first(comma));
	const btf::Type *structure = btf_ ? btf_->type(btf_->find(name_, btf::Kind::structure)) : nullptr;
	if (!structure)
		return invalid(Error::no_pointer_to_struct, column + 1);
	int64_t prefix = 0;
	if (comma < cast.length) {
		// FIELD: "."-joined members of STRUCT, byte-aligned, no "->".
		Text option = cast.from(comma + 1);
		size_t option_column = column_of(option);
		const btf::Type *type = structure;
		uint32_t bits = 0;
		if (!(result = member_bits(option, type, option_column, bits)).ok())
			return result;
		if (bits % 8)
			return invalid(Error::typecast_not_aligned, option_column);
		if (option.data)
			return invalid(Error::typecast_bad_arrow, option_column - 2);
		prefix = bits / 8;
	}
	last_bitsize_ = last_bitoffs_ = 0;
	return parse_btf_fields(fields, structure, argument, last, column_of(fields), true, prefix);
}

// After the fetch: an untyped argument takes what the BTF says it is
// (fetch_type_from_btf_type()); a string reads through a char pointer.
ParseResult Parser::type_from_btf(Text type, Argument &argument, int &last)
{
	if (!type.data) {
		// An enum is s32 (s64), a pointer x64, an integer its own
		// sign and size; anything else keeps the default (x64).
		switch (last_type_->kind()) {
		case btf::Kind::enumeration:
		case btf::Kind::enumeration64:
			argument.kind = Kind::signed_integer;
			argument.size = last_type_->kind() == btf::Kind::enumeration ? 4 : 8;
			break;
		case btf::Kind::pointer:
			argument.kind = Kind::hex;
			argument.size = 8;
			break;
		case btf::Kind::integer: {
			const btf::Integer integer = btf::Types::integer(*last_type_);
			if (integer.bits == 8 || integer.bits == 16 || integer.bits == 32 || integer.bits == 64) {
				argument.kind = integer.is_signed ? Kind::signed_integer : Kind::unsigned_integer;
				argument.size = static_cast<uint8_t>(integer.bits / 8);
			} else if (!integer.is_signed) {
				// A bitfield whose width the integer type holds: a u64,
				// its bits from the type's offset on. (A signed one
				// keeps the default.)
				argument.kind = Kind::unsigned_integer;
				argument.size = 8;
				last_bitsize_ = integer.bits;
				last_bitoffs_ += integer.bit_offset;
			}
			break;
		}
		default:
			break;
		}
		// parse_btf_bitfield(): a bitfield member is the bits [bitoffs,
		// bitoffs + bitsize) of the loaded bytes, shifted down.
		if (last_bitsize_ % 8 || last_bitoffs_) {
			if (last_bitsize_ == 0 || last_bitsize_ + last_bitoffs_ > argument.size * 8u)
				return fail(eopnotsupp, Error::btf_bitfield, btf_column_);
			// parse_btf_bitfield()'s FETCH_OP_MOD_BF takes a slot of
			// the code buffer: none left is TOO_MANY_OPS.
			if (++last >= static_cast<int>(max_fetch_steps) - 1)
				return fail(einval, Error::too_many_ops, btf_column_);
			argument.bit_width = static_cast<uint8_t>(last_bitsize_);
			argument.bit_offset = static_cast<uint8_t>(last_bitoffs_);
		}
		return ParseResult{};
	}
	if (argument.kind != Kind::string && argument.kind != Kind::user_string)
		return ParseResult{};
	// check_prepare_btf_string_fetch(): char[] is read where it is, char *
	// through one more load; nothing else is a string.
	if (last_type_->kind() == btf::Kind::array && is_char(*btf_, btf::Types::array(*last_type_)->type))
		return ParseResult{};
	// The kernel's btf_type_is_char_ptr() does not look at the kind: what
	// a non-pointer's size names as a type id counts too (6.12's quirk,
	// kept so that the same line does the same).
	if (is_char(*btf_, last_type_->size_or_type)) {
		if (!push(argument, last, argument.kind == Kind::user_string ? Op::user_dereference : Op::dereference,
			  0))
			return fail(e2big, Error::too_many_ops, btf_column_);
		return ParseResult{};
	}
	return invalid(Error::bad_type_for_string, btf_column_);
}

} // namespace okp::events
