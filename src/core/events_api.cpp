// SPDX-License-Identifier: GPL-2.0
// okprobe_events as the C glue sees it (events_entry.h): the grammar and
// the fetch programs over C types.
#include "core/arch_port.hpp"
#include "core/assert.hpp"
#include "core/btf.hpp"
#include "core/errno.hpp"
#include "core/event_fetch.hpp"
#include "core/event_record_layout.hpp"
#include "core/events_entry.h"
#include "glue_services.h"
#include "core/handler_path.hpp"
#include "core/probe_events.hpp"

using namespace okp::events;

namespace {

Definition &definition_of(struct okp_event_definition *event)
{
	return *reinterpret_cast<Definition *>(event);
}

const Definition &definition_of(const struct okp_event_definition *event)
{
	return *reinterpret_cast<const Definition *>(event);
}

enum okp_event_place (*glue_place)(const struct okp_event_place_query *query);

Place ask_glue(void *, const Definition &definition)
{
	const okp_event_place_query query{definition.line + definition.symbol.start, definition.symbol.length,
					  definition.offset};
	switch (glue_place(&query)) {
	case OKP_EVENT_FUNCTION_ENTRY:
		return Place::function_entry;
	case OKP_EVENT_INSIDE_FUNCTION:
		return Place::inside_function;
	case OKP_EVENT_UNKNOWN_SYMBOL:
		return Place::unknown_symbol;
	case OKP_EVENT_NOT_UNIQUE:
		return Place::not_unique;
	}
	return Place::unknown_symbol;
}

// The running kernel's grammar (okp_core_event_grammar()); the BTF's index
// is owned here, made at load and freed at unload.
okp_event_grammar grammar;
okp::btf::Types *vmlinux_btf;

// A module's BTF for the line being parsed: its bytes (the glue's) and
// their index, made when the parser asks (ParseContext::module_btf) and
// dropped when the parse ends. One parse at a time (the events mutex).
struct LineModuleBtf {
	void *raw = nullptr;
	okp::btf::Types *types = nullptr;

	LineModuleBtf() = default;
	LineModuleBtf(const LineModuleBtf &) = delete;
	LineModuleBtf &operator=(const LineModuleBtf &) = delete;
	~LineModuleBtf()
	{
		delete types;
		if (raw)
			okp_glue_module_btf_free(raw);
	}
};

const okp::btf::Types *module_btf_of(void *cookie, const char *function)
{
	LineModuleBtf &line = *static_cast<LineModuleBtf *>(cookie);
	if (line.types || line.raw)
		return nullptr; // asked once a line, as the prototype is
	unsigned long size = 0;
	line.raw = okp_glue_module_btf(function, &size);
	if (!line.raw)
		return nullptr;
	line.types = new okp::btf::Types();
	if (line.types && line.types->load(static_cast<const uint8_t *>(line.raw), size, vmlinux_btf) != 0) {
		delete line.types;
		line.types = nullptr;
	}
	return line.types;
}

constexpr unsigned error_count = static_cast<unsigned>(Error::count);
const char *error_texts[error_count + 1]; // NULL-terminated

// The hit's environment: its registers where this arch keeps them.
OKP_HANDLER_PATH FetchEnvironment environment_of(const okp_event_environment *env)
{
	FetchEnvironment fetch;
	fetch.registers = static_cast<const uint8_t *>(env->regs);
	fetch.layout = &okp::arch::event_register_layout();
	if (env->args_record) {
		fetch.regs_layout = fetch.layout;
		fetch.layout = &okp::arch::event_record_layout();
	}
	fetch.comm = env->comm;
	fetch.task = env->task;
	// unsigned long is the u64 of both 64-bit arches.
	fetch.entry_arguments = reinterpret_cast<const uint64_t *>(env->entry_arguments);
	return fetch;
}

} // namespace

extern "C" unsigned long okp_core_event_size(void)
{
	return sizeof(Definition);
}

extern "C" unsigned long okp_core_event_compact_size(const struct okp_event_definition *event)
{
	return compact_size(definition_of(event));
}

extern "C" int okp_core_event_grammar(const struct okp_event_grammar *kernel)
{
	grammar = *kernel;
	grammar.btf = nullptr;
	if (!(kernel->btf_arguments || kernel->dentry_types) || !kernel->btf)
		return 0;
	okp::btf::Types *types = new okp::btf::Types();
	if (!types)
		return -okp::error::enomem;
	if (const int error = types->load(static_cast<const uint8_t *>(kernel->btf), kernel->btf_size)) {
		delete types;
		return -error;
	}
	vmlinux_btf = types;
	return 0;
}

extern "C" void okp_core_event_grammar_exit(void)
{
	delete vmlinux_btf;
	vmlinux_btf = nullptr;
}

extern "C" int okp_core_event_parse(struct okp_event_definition *event, const char *line, unsigned long length,
				    enum okp_event_place (*place)(const struct okp_event_place_query *query),
				    struct okp_event_error *error)
{
	ParseContext context;
	context.registers = okp::arch::event_registers(&context.register_count);
	context.validate_symbols = grammar.validate_symbols;
	context.btf_arguments = grammar.btf_arguments;
	context.char_type = grammar.char_type;
	context.dentry_types = grammar.dentry_types;
	context.return_arguments = grammar.return_arguments;
	context.nested_arguments = grammar.nested_arguments;
	context.typecasts = grammar.typecasts;
	context.current_task = grammar.current_task;
	context.eprobe_typecasts = grammar.eprobe_typecasts;
	context.btf = vmlinux_btf;
	LineModuleBtf module_btf;
	context.cookie = &module_btf;
	if (vmlinux_btf && grammar.btf_arguments)
		context.module_btf = module_btf_of;
	// Under the glue's events mutex: one parse at a time.
	glue_place = place;
	if (place)
		context.place = ask_glue;
	const ParseResult result = parse_line(line, length, context, definition_of(event));
	error->index = static_cast<unsigned>(result.error);
	error->column = result.column;
	return -result.error_number;
}

extern "C" const char **okp_core_event_error_texts(void)
{
	for (unsigned i = 0; i < error_count; i++)
		error_texts[i] = error_text(static_cast<Error>(i));
	return error_texts;
}

extern "C" unsigned int okp_core_event_glue_error(enum okp_event_glue_error error)
{
	switch (error) {
	case OKP_EVENT_ERROR_REGISTRATION:
		return static_cast<unsigned>(Error::registration_failed);
	case OKP_EVENT_ERROR_INSTRUCTION_BOUNDARY:
		return static_cast<unsigned>(Error::instruction_boundary);
	case OKP_EVENT_ERROR_BAD_PLACE:
		return static_cast<unsigned>(Error::bad_probe_address);
	case OKP_EVENT_ERROR_EXISTS:
		return static_cast<unsigned>(Error::event_exists);
	case OKP_EVENT_ERROR_BAD_MEMORY:
		return static_cast<unsigned>(Error::bad_memory_address);
	case OKP_EVENT_ERROR_SAME_PROBE:
		return static_cast<unsigned>(Error::same_probe);
	}
	return static_cast<unsigned>(Error::registration_failed);
}

extern "C" int okp_core_event_check_join(const struct okp_event_definition *event,
					 const struct okp_event_definition *added, struct okp_event_error *error)
{
	const ParseResult result = check_join(definition_of(event), definition_of(added));
	error->index = static_cast<unsigned>(result.error);
	error->column = result.column;
	return -result.error_number;
}

extern "C" int okp_core_event_same_probe(const struct okp_event_definition *probe,
					 const struct okp_event_definition *added)
{
	return same_probe(definition_of(probe), definition_of(added));
}

extern "C" void okp_core_event_set_maxactive(struct okp_event_definition *event, unsigned int maxactive)
{
	definition_of(event).maxactive = maxactive;
}

extern "C" void okp_core_event_summary(const struct okp_event_definition *event, struct okp_event_summary *summary)
{
	const Definition &d = definition_of(event);
	summary->command = d.command == Command::probe	  ? OKP_EVENT_PROBE
			   : d.command == Command::remove ? OKP_EVENT_REMOVE
							  : OKP_EVENT_EMPTY;
	summary->line = d.line;
	summary->group = d.group;
	summary->event = d.event;
	summary->is_return = d.is_return;
	summary->maxactive = d.maxactive;
	summary->has_address = d.has_address;
	summary->address = d.address;
	summary->symbol = d.line + d.symbol.start;
	summary->symbol_length = d.symbol.length;
	summary->offset = d.offset;
	summary->rest = d.line + d.rest.start;
	summary->rest_length = d.rest.length;
	summary->arg_count = d.arg_count;
	summary->record_size = d.record_size;
	summary->entry_arguments = d.entry_arguments;
}

extern "C" void okp_core_event_field(const struct okp_event_definition *event, unsigned int index,
				     struct okp_event_field *field)
{
	OKP_ASSERT(index < definition_of(event).arg_count);
	const Argument &argument = definition_of(event).args[index];
	field_type(argument, field->type, sizeof(field->type));
	field->name = argument.name;
	field->offset = argument.offset;
	field->element_size = argument.size;
	field->count = argument.array;
	field->size = argument.size * (argument.array ? argument.array : 1u);
	// The kernel's string types are "signed" (its fetch_type table says 1).
	field->is_signed = argument.kind == Kind::signed_integer || stores_string(argument.store);
	switch (argument.kind) {
	case Kind::unsigned_integer:
		field->kind = OKP_FIELD_UNSIGNED;
		break;
	case Kind::signed_integer:
		field->kind = OKP_FIELD_SIGNED;
		break;
	case Kind::hex:
		field->kind = OKP_FIELD_HEX;
		break;
	case Kind::symbol:
		field->kind = OKP_FIELD_SYMBOL;
		break;
	case Kind::character:
		field->kind = OKP_FIELD_CHAR;
		break;
	default:
		field->kind = OKP_FIELD_STRING;
		break;
	}
}

// The n-th symbol_address step, in argument then step order.
static FetchStep *nth_symbol(Definition &d, unsigned n)
{
	for (unsigned a = 0; a < d.arg_count; a++)
		for (unsigned s = 0; s < d.args[a].step_count; s++)
			if (d.args[a].steps[s].op == Op::symbol_address && n-- == 0)
				return &d.args[a].steps[s];
	return nullptr;
}

extern "C" int okp_core_event_symbol(const struct okp_event_definition *event, unsigned int n, const char **name,
				     unsigned long *length)
{
	Definition &d = const_cast<Definition &>(definition_of(event));
	const FetchStep *step = nth_symbol(d, n);
	if (!step)
		return 0;
	*name = d.line + step->text.start;
	*length = step->text.length;
	return 1;
}

extern "C" void okp_core_event_set_symbol(struct okp_event_definition *event, unsigned int n, unsigned long address)
{
	FetchStep *step = nth_symbol(definition_of(event), n);
	if (step) {
		// From here on the step is the address itself.
		step->op = Op::immediate;
		step->value += static_cast<int64_t>(address);
	}
}

extern "C" unsigned long okp_core_event_format(const struct okp_event_definition *event, char *buffer,
					       unsigned long size)
{
	return format_definition(definition_of(event), buffer, size);
}

extern "C" unsigned long okp_core_event_print_fmt(const struct okp_event_definition *event, char *buffer,
						  unsigned long size)
{
	return print_format(definition_of(event), buffer, size);
}

extern "C" int okp_core_event_reads_only_args(const struct okp_event_definition *event)
{
	return reads_only_record(definition_of(event), okp::arch::event_register_layout());
}

extern "C" OKP_HANDLER_PATH unsigned long okp_core_event_dynamic_size(const struct okp_event_definition *event,
								      const struct okp_event_environment *environment)
{
	return dynamic_size(definition_of(event), environment_of(environment));
}

extern "C" OKP_HANDLER_PATH void okp_core_event_store(const struct okp_event_definition *event,
						      const struct okp_event_environment *environment, void *record,
						      void *fields, unsigned long dynamic)
{
	store_arguments(definition_of(event), environment_of(environment), static_cast<uint8_t *>(record),
			static_cast<uint8_t *>(fields), dynamic);
}

extern "C" OKP_HANDLER_PATH void okp_core_event_save_entry(const struct okp_event_definition *event,
							   const struct okp_event_environment *environment,
							   unsigned long *to)
{
	save_entry_arguments(definition_of(event), environment_of(environment), reinterpret_cast<uint64_t *>(to));
}
