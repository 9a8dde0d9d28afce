// SPDX-License-Identifier: GPL-2.0
// Fetch programs at a hit: event_fetch.hpp says what and why.
#include "event_fetch.hpp"
#include "event_record_layout.hpp"
#include "glue_services.h"
#include "handler_path.hpp"

namespace okp::events {

namespace {

// Where a step leaves the program: a value, or, when the store reads at
// the last dereference's address instead of loading there, that address.
struct Fetched {
	uint64_t value = 0;
	bool faulted = false;
};

// Whether the store reads at the last dereference's address (memory, and
// a plain string) rather than what it loads.
OKP_HANDLER_PATH bool stores_at_address(const Argument &argument)
{
	const Op last = argument.steps[argument.step_count - 1].op;
	const bool dereference = last == Op::dereference || last == Op::user_dereference;
	if (argument.store == Store::memory || argument.store == Store::user_memory)
		return true;
	return (argument.store == Store::string || argument.store == Store::user_string) && dereference &&
	       argument.array == 0;
}

OKP_HANDLER_PATH uint64_t register_at(const FetchEnvironment &env, unsigned offset)
{
	uint64_t value;
	__builtin_memcpy(&value, env.registers + offset, sizeof(value));
	return value;
}

// %REG: the register at its pt_regs offset, or the record's word of it
// (reads_only_record() let only those on it; 0 for any other).
OKP_HANDLER_PATH uint64_t named_register(const FetchEnvironment &env, int64_t regs_offset)
{
	if (!env.regs_layout)
		return register_at(env, static_cast<unsigned>(regs_offset));
	const int offset = record_offset(*env.regs_layout, *env.layout, static_cast<uint64_t>(regs_offset));
	return offset < 0 ? 0 : register_at(env, static_cast<unsigned>(offset));
}

OKP_HANDLER_PATH uint64_t argument(const FetchEnvironment &env, unsigned index)
{
	const RegisterLayout &layout = *env.layout;
	if (index < layout.argument_count)
		return register_at(env, layout.arguments[index]);
	if (!layout.stack_arguments)
		return 0;
	// x86: the seventh argument is the word above the return address.
	return okp_glue_event_stack_word(register_at(env, layout.stack_pointer), index - layout.argument_count + 1);
}

// Runs the steps, all but a last dereference the store reads at.
OKP_HANDLER_PATH Fetched run(const Definition &definition, const Argument &argument, const FetchEnvironment &env)
{
	Fetched fetched;
	const bool at_address = stores_at_address(argument);
	unsigned count = argument.step_count;
	if (at_address)
		count--;
	for (unsigned i = 0; i < count && !fetched.faulted; i++) {
		const FetchStep &step = argument.steps[i];
		switch (step.op) {
		case Op::register_value:
			fetched.value = named_register(env, step.value);
			break;
		case Op::argument:
			fetched.value = events::argument(env, static_cast<unsigned>(step.value));
			break;
		case Op::entry_argument:
			fetched.value = env.entry_arguments ? env.entry_arguments[step.value] : 0;
			break;
		case Op::stack_entry:
			fetched.value = okp_glue_event_stack_word(register_at(env, env.layout->stack_pointer),
								  static_cast<unsigned>(step.value));
			break;
		case Op::stack_address:
			fetched.value = register_at(env, env.layout->stack_pointer);
			break;
		case Op::return_value:
			fetched.value = register_at(env, env.layout->return_value);
			break;
		case Op::comm:
			fetched.value = reinterpret_cast<uintptr_t>(env.comm);
			break;
		case Op::current_task:
			fetched.value = reinterpret_cast<uintptr_t>(env.task);
			break;
		case Op::cpu_pointer:
			fetched.value = okp_glue_event_cpu_pointer(fetched.value);
			break;
		case Op::immediate:
		case Op::symbol_address: // the glue resolved it into value
			fetched.value = static_cast<uint64_t>(step.value);
			break;
		case Op::immediate_string:
			fetched.value = reinterpret_cast<uintptr_t>(definition.immediates + step.value);
			break;
		case Op::dereference:
		case Op::user_dereference: {
			uint64_t loaded = 0;
			fetched.faulted =
				!okp_glue_event_read(fetched.value + static_cast<uint64_t>(step.value), &loaded,
						     sizeof(loaded), step.op == Op::user_dereference);
			fetched.value = loaded;
			break;
		}
		}
	}
	if (at_address && !fetched.faulted)
		fetched.value += static_cast<uint64_t>(argument.steps[argument.step_count - 1].value);
	return fetched;
}

OKP_HANDLER_PATH bool user_store(const Argument &argument)
{
	return argument.store == Store::user_memory || argument.store == Store::user_string;
}

// One string element's bytes (NUL included), 0 on a fault; to == nullptr:
// only its length.
OKP_HANDLER_PATH size_t string_element(const Argument &argument, const FetchEnvironment &env, uint64_t address,
				       char *to, size_t size)
{
	if (argument.store == Store::symbol_string)
		return okp_glue_event_symbol_string(address, to, size);
	// $comm is the task's own memory: copied as it is, without a nofault
	// copy's setup.
	if (!user_store(argument) && env.comm && address == reinterpret_cast<uintptr_t>(env.comm)) {
		size_t length = 0;
		while (length < comm_size - 1 && env.comm[length])
			length++;
		if (to) {
			if (size == 0)
				return 0;
			if (length > size - 1)
				length = size - 1;
			for (size_t i = 0; i < length; i++)
				to[i] = env.comm[i];
			to[length] = '\0';
		}
		return length + 1;
	}
	size_t limit = size < max_string ? size : max_string;
	return okp_glue_event_read_string(address, to, to ? limit : 0, user_store(argument));
}

// The element addresses of a string field: itself, or (an array of
// strings) the pointers at base, base + 8, ...
OKP_HANDLER_PATH bool string_address(const Definition &definition, const Argument &argument,
				     const FetchEnvironment &env, const Fetched &fetched, unsigned index,
				     uint64_t &address)
{
	if (argument.array == 0) {
		address = fetched.value;
		return true;
	}
	// An array of strings: the last dereference loaded the first pointer;
	// the others follow it in memory.
	if (index == 0) {
		address = fetched.value;
		return true;
	}
	const FetchStep &last = argument.steps[argument.step_count - 1];
	Argument shorter = argument;
	shorter.step_count--;
	shorter.store = Store::memory;
	shorter.array = 0;
	shorter.steps[shorter.step_count++] = FetchStep{last.op, {}, last.value};
	Fetched base = run(definition, shorter, env);
	return !base.faulted && okp_glue_event_read(base.value + index * sizeof(uint64_t), &address, sizeof(address),
						    last.op == Op::user_dereference);
}

OKP_HANDLER_PATH void put_u32(uint8_t *to, uint32_t value)
{
	for (int i = 0; i < 4; i++)
		to[i] = static_cast<uint8_t>(value >> (8 * i));
}

// A raw field: value's size bytes, little-endian as both arches are. One
// store where the field is aligned for it (the common case: a u64 at an
// 8-byte offset), bytes where not (riscv traps on a misaligned store).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
OKP_HANDLER_PATH void put_raw(uint8_t *field, uint64_t value, unsigned size)
{
	const bool aligned = (reinterpret_cast<uintptr_t>(field) & (size - 1)) == 0;
	if (aligned && size == 8) {
		__builtin_memcpy(__builtin_assume_aligned(field, 8), &value, 8);
		return;
	}
	if (aligned && size == 4) {
		const uint32_t low = static_cast<uint32_t>(value);
		__builtin_memcpy(__builtin_assume_aligned(field, 4), &low, 4);
		return;
	}
	for (unsigned i = 0; i < size; i++)
		field[i] = static_cast<uint8_t>(value >> (8 * i));
}

OKP_HANDLER_PATH void zero(uint8_t *to, size_t size)
{
	for (size_t i = 0; i < size; i++)
		to[i] = 0;
}

// A bitfield: the bits [offset, offset + width) of the element, low.
OKP_HANDLER_PATH void extract_bits(const Argument &argument, uint8_t *element)
{
	uint64_t value = 0;
	for (unsigned i = 0; i < argument.size; i++)
		value |= static_cast<uint64_t>(element[i]) << (8 * i);
	const unsigned bits = argument.size * 8u;
	value <<= 64 - bits + (bits - argument.bit_width - argument.bit_offset);
	value >>= 64 - argument.bit_width;
	for (unsigned i = 0; i < argument.size; i++)
		element[i] = static_cast<uint8_t>(value >> (8 * i));
}

} // namespace

OKP_HANDLER_PATH void save_entry_arguments(const Definition &definition, const FetchEnvironment &env, uint64_t *to)
{
	for (unsigned i = 0; i < definition.entry_arguments; i++)
		to[i] = argument(env, i);
}

OKP_HANDLER_PATH size_t dynamic_size(const Definition &definition, const FetchEnvironment &env)
{
	size_t total = 0;
	for (unsigned a = 0; a < definition.arg_count; a++) {
		const Argument &argument = definition.args[a];
		if (!stores_string(argument.store))
			continue;
		Fetched fetched = run(definition, argument, env);
		unsigned elements = argument.array ? argument.array : 1;
		for (unsigned i = 0; i < elements && !fetched.faulted; i++) {
			uint64_t address;
			if (string_address(definition, argument, env, fetched, i, address))
				total += string_element(argument, env, address, nullptr, 0);
		}
	}
	return total;
}

OKP_HANDLER_PATH void store_arguments(const Definition &definition, const FetchEnvironment &env, uint8_t *record,
				      uint8_t *fields, size_t dynamic)
{
	uint8_t *strings = fields + definition.record_size;
	for (unsigned a = 0; a < definition.arg_count; a++) {
		const Argument &argument = definition.args[a];
		uint8_t *field = fields + argument.offset;
		const unsigned elements = argument.array ? argument.array : 1;
		Fetched fetched = run(definition, argument, env);
		if (stores_string(argument.store)) {
			for (unsigned i = 0; i < elements; i++) {
				uint64_t address;
				size_t length = 0;
				if (!fetched.faulted &&
				    string_address(definition, argument, env, fetched, i, address) && dynamic)
					length = string_element(argument, env, address,
								reinterpret_cast<char *>(strings), dynamic);
				if (length > dynamic)
					length = 0;
				const uint32_t offset = static_cast<uint32_t>(strings - record);
				put_u32(field + 4 * i, static_cast<uint32_t>(length) << 16 | (offset & 0xffff));
				strings += length;
				dynamic -= length;
			}
			continue;
		}
		if (argument.store == Store::raw) {
			put_raw(field, fetched.faulted ? 0 : fetched.value, argument.size);
		} else if (fetched.faulted ||
			   !okp_glue_event_read(fetched.value, field, argument.size * elements, user_store(argument))) {
			zero(field, argument.size * elements);
		}
		if (argument.bit_width)
			for (unsigned i = 0; i < elements; i++)
				extract_bits(argument, field + argument.size * i);
	}
}

} // namespace okp::events
