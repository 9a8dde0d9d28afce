// SPDX-License-Identifier: GPL-2.0
// The okprobe_events control file's language: the kernel's kprobe_events
// grammar (Documentation/trace/kprobetrace.rst), parsed into a value the
// events layer turns into a probe and a trace event.
//
//   p[:[GRP/|GRP.][EVENT]] [MOD:]SYM[+OFFS]|ADDR [FETCHARGS]
//   r[MAXACTIVE][:[GRP/][EVENT]] [MOD:]SYM[+0] [FETCHARGS]
//   p[:[GRP/][EVENT]] [MOD:]SYM[+0]%return [FETCHARGS]
//   -:[GRP/][EVENT] [SYM [FETCHARGS]]
//
// FETCHARGS are [NAME=]FETCHARG[:TYPE], FETCHARG one of %REG, $argN,
// $stackN, $stack, $retval, $comm, @ADDR, @SYM[+|-OFFS], \IMM, \"STR",
// [+|-][u]OFFS(FETCHARG); TYPE one of u8..u64, s8..s64, x8..x64, string,
// ustring, symstr, symbol, b<WIDTH>@<OFFSET>/<CONTAINER>, each but the
// bitfield optionally an array [N]. Where the running kernel's grammar
// has them (ParseContext): the BTF grammar's NAME[->FIELD...] and $arg*
// (6.6), char (6.5), %pd/%pD (6.10); 7.3's $current[->FIELD...],
// this_cpu_read(FETCHARG), this_cpu_ptr(FETCHARG) and typecasts
// (STRUCT[,FIELD])NAME->FIELD... and (STRUCT[,FIELD])(FETCHARG)->FIELD...
//
// The rules, limits, error classes and error positions are the kernel's
// (6.1's, 6.12's and 7.3's kernel/trace/trace_kprobe.c and trace_probe.c,
// as ParseContext says which), so that a line
// means here what it means to kprobe_events; where the kernel silently
// ignores part of a line (text after a dereference's closing brace, a
// 129th argument, letters between "p" and ":") okprobe refuses it.
//
// Pure: no allocation, no kernel header. A Definition is a value (about
// 40 KB: the glue allocates it); every name and text it refers to is in its
// own copy of the line.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace okp::btf {
class Types;
}

namespace okp::events {

inline constexpr size_t max_line = 4096;       // a line (the kernel's WRITE_BUFSIZE)
inline constexpr size_t max_args = 128;	       // MAX_TRACE_ARGS
inline constexpr size_t max_name = 64;	       // MAX_EVENT_NAME_LEN, with the NUL
inline constexpr size_t max_arg_name = 32;     // MAX_ARG_NAME_LEN
inline constexpr size_t max_arg_text = 63;     // MAX_ARGSTR_LEN (to 7.2)
inline constexpr size_t max_arg_text_7x = 255; // MAX_ARGSTR_LEN (7.3)
// TRACEPROBE_MAX_NESTED_LEVEL (7.3): dereferences, typecasts and this_cpu_*()
// nested in one argument.
inline constexpr unsigned max_nested = 8;
inline constexpr size_t max_fetch_steps = 16;	 // FETCH_INSN_MAX
inline constexpr unsigned max_array = 64;	 // MAX_ARRAY_LEN
inline constexpr unsigned max_event_size = 3072; // MAX_PROBE_EVENT_SIZE
inline constexpr unsigned max_maxactive = 4096;	 // KRETPROBE_MAXACTIVE_MAX
// The most arguments an r event's entry saves (an okretprobe's 4096 bytes
// of data); the kernel saves each one named, and takes more.
inline constexpr unsigned max_entry_arguments = 512;

// Why a line was refused: the kernel's error classes (its texts, for
// error_log), and okprobe's own where it is stricter.
enum class Error : uint8_t {
	none,
	bad_command,	// not p, r or -
	no_probe_point, // p or r without a place
	maxactive_on_probe,
	bad_maxactive,
	maxactive_too_big,
	uprobe_syntax, // PATH:OFFSET is a uprobe's
	bad_probe_address,
	not_unique,
	bad_return_probe, // not a function's entry
	bad_address_suffix,
	no_group_name,
	group_too_long,
	bad_group_name,
	no_event_name,
	event_too_long,
	bad_event_name,
	too_many_args,
	retval_on_probe,
	bad_stack_number,
	bad_argument_number,
	bad_variable,
	bad_register_name,
	bad_memory_address,
	bad_immediate,
	immediate_string_not_closed,
	file_offset_on_kprobe,
	too_many_ops,
	dereference_needs_brace,
	bad_dereference_offset,
	dereference_not_closed,
	comm_cannot_dereference,
	bad_fetch_argument,
	array_not_closed,
	bad_array_suffix,
	bad_array_number,
	array_too_big,
	bad_type,
	bad_string,
	bad_symbol_string,
	bad_bitfield,
	argument_name_too_long,
	no_argument_name,
	bad_argument_name,
	used_argument_name,
	argument_too_long,
	no_argument_body,
	event_too_big,
	line_too_long,
	trailing_text, // after a dereference's closing brace
	// The BTF grammar's (6.6 and later: trace_probe.h's texts).
	no_retval,
	nosup_btf_argument,
	no_btf_argument,
	no_btf_entry,
	nofentry_args,
	double_args,
	args_too_long,
	no_pointer_to_struct,
	nosup_data_argument,
	bad_hyphen,
	no_btf_field,
	bad_btf_type,
	bad_type_for_string,
	// 7.3's nested grammar: typecasts, this_cpu_*(), $current.
	too_many_nested,
	typecast_required_field,
	typecast_not_aligned,
	typecast_bad_arrow,
	typecast_symbol_offset,
	typecast_not_event,
	file_offset_on_kernel_probe, // 7.3's text for file_offset_on_kprobe
	// Where okprobe has less than the kernel's BTF grammar.
	return_entry_arguments,
	btf_bitfield,
	// What the events layer finds once the line parsed.
	registration_failed,
	instruction_boundary,
	event_exists,
	// A line for an event that exists (appended to it, as the kernel's).
	different_probe_type,
	different_argument,
	same_probe,
	count, // not an error: how many there are
};

// The line error_log shows for error.
const char *error_text(Error error);

// A piece of Definition::line.
struct Span {
	uint16_t start = 0;
	uint16_t length = 0;
};

// One step of an argument's fetch program, run in order on a value.
enum class Op : uint8_t {
	register_value, // value: the register's byte offset in pt_regs
	argument,	// value: the function argument's index, from 0
	stack_entry,	// value: the stack entry's index
	stack_address,
	return_value,
	comm,		  // the task's comm (a string)
	immediate,	  // value
	immediate_string, // text: the string, without its quotes
	symbol_address,	  // text: the symbol; value: the offset added
	dereference,	  // value: the offset added before the load
	user_dereference, // the same from user memory
	entry_argument,	  // value: the argument's index, saved at the entry (r)
	current_task,	  // the task's task_struct (7.3's $current)
	cpu_pointer,	  // this CPU's copy of the per-cpu value (this_cpu_ptr())
};

struct FetchStep {
	Op op = Op::immediate;
	Span text;
	int64_t value = 0;
};

// How a field shows: the kernel's basic types and its special ones.
enum class Kind : uint8_t {
	unsigned_integer,
	signed_integer,
	hex,
	symbol,
	string,
	user_string,
	symbol_string,
	character
};

// What is stored into the event record. The fetch program's last step
// gives a value (raw); for memory and every string store but the comm and
// an immediate string, it is a dereference, and the store reads at its
// address (previous value + offset) instead of loading a pointer there.
enum class Store : uint8_t { raw, memory, user_memory, string, user_string, symbol_string };

// Whether store puts a __data_loc string into the record.
constexpr bool stores_string(Store store)
{
	return store == Store::string || store == Store::user_string || store == Store::symbol_string;
}

struct Argument {
	char name[max_arg_name + 1] = {};
	uint16_t word_start = 0; // of [NAME=]FETCHARG[:TYPE] in the line
	Span body;		 // FETCHARG[:TYPE] as typed
	Span type_text;		 // TYPE as typed, empty for the default
	Kind kind = Kind::hex;
	Store store = Store::raw;
	uint8_t size = 8;      // bytes of one element (a string's: its u32 __data_loc)
	uint8_t array = 0;     // elements, 0 for a scalar
	uint8_t bit_width = 0; // a bitfield when nonzero
	uint8_t bit_offset = 0;
	uint16_t offset = 0; // in the event record's fields
	uint8_t step_count = 0;
	FetchStep steps[max_fetch_steps];
};

enum class Command : uint8_t { empty, probe, remove };

struct Definition {
	// The line as the kernel's error_log shows it: comment dropped, words
	// joined by one space. Every Span points into it.
	char line[max_line] = {};
	uint16_t line_length = 0;
	Command command = Command::empty;
	bool is_return = false;
	unsigned maxactive = 0;
	// Group and event; a removal may leave either empty (any).
	char group[max_name] = {};
	char event[max_name] = {};
	bool has_address = false;
	uint64_t address = 0;
	Span symbol; // [MOD:]SYM
	uint32_t offset = 0;
	// The words after the place, for a removal that names them.
	Span rest;
	uint16_t arg_count = 0;
	uint32_t record_size = 0; // bytes of every argument's field
	// An r event's: the function arguments its entry saves for the
	// return's fetch (entry_argument steps read them), from the first.
	uint16_t entry_arguments = 0;
	// The immediate strings (\"STR\"), NUL-terminated: an immediate_string
	// step's value is its offset here.
	uint16_t immediates_length = 0;
	char immediates[max_line] = {};
	// Last: a definition can be copied without its unused arguments
	// (compact_size()).
	Argument args[max_args];
};

// The bytes of definition up to its last argument: a copy of that many
// is the same definition.
size_t compact_size(const Definition &definition);

// A register's name after % and its byte offset in the arch's pt_regs.
struct RegisterName {
	const char *name;
	uint16_t offset;
};

// What the kernel says of a probe place (kprobe_on_func_entry() and
// kallsyms), asked once the place is parsed.
enum class Place : uint8_t { function_entry, inside_function, unknown_symbol, not_unique };

struct ParseContext {
	const RegisterName *registers = nullptr;
	size_t register_count = 0;
	// The deepest $stackN and $argN (the kernel's PARAM_MAX_STACK).
	unsigned max_stack_index = 2048;
	const char *default_group = "okprobe";
	// The kernel's kprobe_events reads BTF (6.6 and later; its tracefs
	// README lists "<argname>"): arguments by name and member, $arg*,
	// $argN as the parameter's name, $retval typed, unnamed arguments
	// named by what they fetch. btf: the kernel's types, where a
	// function's prototype is looked up (nullptr: none to read).
	bool btf_arguments = false;
	const btf::Types *btf = nullptr;
	// A module's BTF, asked for a function btf has not (the kernel's
	// bpf_find_btf_id() looks in each module's after vmlinux's): split
	// on btf, valid until the parse ends; nullptr: none. Takes cookie.
	const btf::Types *(*module_btf)(void *cookie, const char *function) = nullptr;
	// The kernel validates a symbol before the rest of the place (6.8
	// and later: validate_probe_symbol()): an unknown or ambiguous one,
	// and a MOD:SYM its loaded module lacks, are EINVAL, before a return
	// probe's place is checked.
	bool validate_symbols = false;
	// The kernel has the char type (its README lists it: 6.5 and later):
	// a u8 in the record that prints as a character.
	bool char_type = false;
	// The kernel has the %pd and %pD types (README: 6.10 and later): a
	// dentry's or a file's name, read as the kernel rewrites them, through
	// struct dentry's d_name.name (and struct file's f_path.dentry), whose
	// offsets okprobe takes from btf.
	bool dentry_types = false;
	// The kernel's r events fetch the function's arguments (README:
	// "kernel return probes support: $retval, $arg<N>", 6.9 and later),
	// saved at the entry, by number and by BTF name.
	bool return_arguments = false;
	// 7.3's parser of nested arguments (its README lists
	// "this_cpu_read("): this_cpu_read(FETCHARG) and this_cpu_ptr(FETCHARG),
	// at most max_nested dereferences, typecasts and this_cpu_*() in one
	// argument (TOO_MANY_NESTED, E2BIG, before TOO_MANY_OPS can be),
	// arguments of up to 255 characters (max_arg_text_7x), and 7.3's text
	// for a file offset (file_offset_on_kernel_probe).
	bool nested_arguments = false;
	// 7.3's typecasts (README: "[(structname"; with nested_arguments):
	// (STRUCT[,FIELD])NAME->FIELD... and (STRUCT[,FIELD])(FETCHARG)->FIELD...
	bool typecasts = false;
	// 7.3's $current (README: "$current"): the task's task_struct, typed
	// by the BTF so that $current->FIELD... reads its members.
	bool current_task = false;
	// A kernel whose parser has typecasts for eprobes only (7.2: its
	// error texts have "Typecasts are only for eprobe fields", its README
	// no "[(structname"): a kprobe argument's '(' is TYPECAST_NOT_EVENT.
	bool eprobe_typecasts = false;
	// Where the parsed place is (symbol or address, offset); nullptr: every
	// place is a function's entry.
	Place (*place)(void *cookie, const Definition &definition) = nullptr;
	void *cookie = nullptr;
};

struct ParseResult {
	int error_number = 0; // a positive errno, 0 when parsed
	Error error = Error::none;
	uint16_t column = 0; // in Definition::line, where error_log's caret goes

	constexpr bool ok() const { return error_number == 0; }
};

// Parses one line (no newline) into out.
ParseResult parse_line(const char *text, size_t length, const ParseContext &context, Definition &out);

// Whether added may join the event whose probes are like event (one
// line of another event's name appends a probe to it), by the kernel's
// register_trace_kprobe() and append_trace_kprobe(): refused (EEXIST)
// when one is an r probe and the other not (the caret at the line's
// start), and when their arguments differ in number, name, type or array
// length (the caret under added's first argument that differs, one past
// the line's end when added has fewer).
ParseResult check_join(const Definition &event, const Definition &added);

// Whether added is the same probe as probe (EEXIST when appended): the
// same symbol as typed and offset (an address probe's symbol counts as
// "unknown", so any two with the same arguments are, as in the kernel),
// and each argument's FETCHARG[:TYPE] as typed. Asked after check_join().
bool same_probe(const Definition &probe, const Definition &added);

// The definition as okprobe_events reads it back, the kernel's canonical
// form ("p:GRP/EVENT SYM+OFFS NAME=FETCHARG ..."), NUL-terminated. The
// length it needs (without the NUL), even when it did not fit.
size_t format_definition(const Definition &definition, char *buffer, size_t size);

// The event's print fmt for its format file, as the kernel's
// __set_print_fmt() writes one: "\"(%lx) a=0x%Lx s=\\\"%s\\\"\", REC->__probe_ip,
// REC->a, __get_str(s)"; a return probe's starts "\"(%lx <- %lx)" with
// REC->__probe_func, REC->__probe_ret_ip. The length it needs, as
// format_definition().
size_t print_format(const Definition &definition, char *buffer, size_t size);

// The field's type for trace_define_field(), the kernel's fmttype: "u32",
// "s8[4]", "__data_loc char[]", "__data_loc char[][2]". Its length.
size_t field_type(const Argument &argument, char *buffer, size_t size);

// One entry of error_log, as the kernel's tracing_log_err() shows one:
//   [   12.345678] LOCATION: error: TEXT
//     Command: LINE
//                  ^
size_t format_error_log(uint64_t seconds, uint32_t microseconds, const char *location, const Definition &definition,
			const ParseResult &result, char *buffer, size_t size);

// The kernel's is_good_name(): a C identifier.
bool is_good_name(const char *name, size_t length);

} // namespace okp::events
