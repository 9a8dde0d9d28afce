// SPDX-License-Identifier: GPL-2.0
// What okprobe_events writes of a definition, in the kernel's own forms:
// the text of each error class (error_log's, the kernel's words where it
// has the class), an error_log entry, the canonical line okprobe_events
// reads back, and the format file's field types and print fmt.
// probe_events.hpp says what each gives; probe_events_parts.hpp what the
// grammar's files share.
#include "core/probe_events_parts.hpp"

namespace okp::events {

namespace {

struct ErrorText {
	Error error;
	const char *text;
};

// In Error's order: error_text() indexes it by the error.
constexpr ErrorText error_log_texts[] = {
	{Error::none, "Success"},
	{Error::bad_command, "Unknown command: a probe is p, r or -:"},
	{Error::no_probe_point, "Probe point is not specified"},
	{Error::maxactive_on_probe, "Maxactive is not for kprobe"},
	{Error::bad_maxactive, "Invalid maxactive number"},
	{Error::maxactive_too_big, "Maxactive is too big"},
	{Error::uprobe_syntax, "A uprobe's place (PATH:OFFSET) is not for okprobe"},
	{Error::bad_probe_address, "Invalid probed address or symbol"},
	{Error::not_unique, "The symbol is not unique"},
	{Error::bad_return_probe, "Retprobe address must be an function entry"},
	{Error::bad_address_suffix, "Invalid probed address suffix"},
	{Error::no_group_name, "Group name is not specified"},
	{Error::group_too_long, "Group name is too long"},
	{Error::bad_group_name, "Group name must follow the same rules as C identifiers"},
	{Error::no_event_name, "Event name is not specified"},
	{Error::event_too_long, "Event name is too long"},
	{Error::bad_event_name, "Event name must follow the same rules as C identifiers"},
	{Error::too_many_args, "Too many arguments (at most 128)"},
	{Error::retval_on_probe, "$retval is not available on probe"},
	{Error::bad_stack_number, "Invalid stack number"},
	{Error::bad_argument_number, "Invalid argument number"},
	{Error::bad_variable, "Invalid $-variable specified"},
	{Error::bad_register_name, "Invalid register name"},
	{Error::bad_memory_address, "Invalid memory address"},
	{Error::bad_immediate, "Invalid immediate value"},
	{Error::immediate_string_not_closed, "String is not closed with '\"'"},
	{Error::file_offset_on_kprobe, "File offset is not available with kprobe"},
	{Error::too_many_ops, "Dereference is too much nested"},
	{Error::dereference_needs_brace, "Dereference needs a brace"},
	{Error::bad_dereference_offset, "Invalid dereference offset"},
	{Error::dereference_not_closed, "Dereference brace is not closed"},
	{Error::comm_cannot_dereference, "$comm can not be dereferenced"},
	{Error::bad_fetch_argument, "Invalid fetch argument"},
	{Error::array_not_closed, "Array is not closed"},
	{Error::bad_array_suffix, "Array has wrong suffix"},
	{Error::bad_array_number, "Invalid array size"},
	{Error::array_too_big, "Array number is too big"},
	{Error::bad_type, "Unknown type is specified"},
	{Error::bad_string, "String accepts only memory argument"},
	{Error::bad_symbol_string, "Symbol String doesn't accept data/userdata"},
	{Error::bad_bitfield, "Invalid bitfield"},
	{Error::argument_name_too_long, "Argument name is too long"},
	{Error::no_argument_name, "Argument name is not specified"},
	{Error::bad_argument_name, "Argument name must follow the same rules as C identifiers"},
	{Error::used_argument_name, "This argument name is already used"},
	{Error::argument_too_long, "Argument expression is too long"},
	{Error::no_argument_body, "No argument expression"},
	{Error::event_too_big, "Event too big (too many fields?)"},
	{Error::line_too_long, "Line is too long (at most 4095 bytes)"},
	{Error::trailing_text, "Text after the dereference's closing brace"},
	{Error::no_retval, "This function returns 'void' type"},
	{Error::nosup_btf_argument, "BTF is not available or not supported"},
	{Error::no_btf_argument, "This variable is not found at this probe point"},
	{Error::no_btf_entry, "No BTF entry for this probe point"},
	{Error::nofentry_args, "$arg* can be used only on function entry or exit"},
	{Error::double_args, "$arg* can be used only once in the parameters"},
	{Error::args_too_long, "$arg* failed because the argument list is too long"},
	{Error::no_pointer_to_struct, "This is not a pointer to union/structure."},
	{Error::nosup_data_argument, "Non pointer structure/union argument is not supported."},
	{Error::bad_hyphen, "Failed to parse single hyphen. Forgot '>'?"},
	{Error::no_btf_field, "This field is not found."},
	{Error::bad_btf_type, "Failed to get BTF type info."},
	{Error::bad_type_for_string, "This type does not fit for string."},
	{Error::too_many_nested, "Too many nested typecasts/dereferences"},
	{Error::typecast_required_field, "Typecast requires a field access"},
	{Error::typecast_not_aligned, "Typecast field option is not byte-aligned"},
	{Error::typecast_bad_arrow, "Typecast field option does not support -> operator"},
	{Error::typecast_symbol_offset, "@SYM+/-OFFSET with typecast needs parentheses"},
	{Error::typecast_not_event, "Typecasts are only for eprobe fields"},
	{Error::file_offset_on_kernel_probe, "File offset is not available for kernel probes"},
	{Error::return_entry_arguments, "okprobe's return probes fetch no entry arguments"},
	{Error::btf_bitfield, "okprobe fetches no BTF bitfield member past its type's bytes"},
	{Error::registration_failed, "Failed to register probe event"},
	{Error::instruction_boundary, "Probe point is not an instruction boundary"},
	{Error::event_exists, "Given group/event name is already used by another event"},
	{Error::different_probe_type, "Probe type is different from existing probe"},
	{Error::different_argument, "Argument type or name is different from existing probe"},
	{Error::same_probe, "There is already the exact same probe event"},
};

constexpr bool in_error_order()
{
	for (size_t i = 0; i < sizeof(error_log_texts) / sizeof(error_log_texts[0]); i++)
		if (error_log_texts[i].error != static_cast<Error>(i))
			return false;
	return true;
}
static_assert(sizeof(error_log_texts) / sizeof(error_log_texts[0]) == static_cast<size_t>(Error::count),
	      "a text for every error class");
static_assert(in_error_order(), "the texts in Error's order");

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
	case Kind::character:
		return "'%c'";
	case Kind::hex:
		return wide ? "0x%Lx" : "0x%x";
	default:
		return "0x%x"; // an array of strings: their __data_loc words
	}
}

} // namespace

const char *error_text(Error error)
{
	const size_t index = static_cast<size_t>(error);
	return index < static_cast<size_t>(Error::count) ? error_log_texts[index].text : "Unknown error";
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
