// SPDX-License-Identifier: GPL-2.0
// An okprobe_events event on the argument-only record: where struct
// okprobe_args keeps what fetch arguments name, as a RegisterLayout, so
// that the same fetch programs (event_fetch.hpp) run on the record an
// argument-only hit gives as on a handler's pt_regs; and whether an
// event's fetch programs read nothing else, which is what lets its probe
// take the argument-only detour (probe_events_call.c asks).
//
// The record is the argument registers, the return value register where
// it is not one of them (x86's ax), the probed address and the stack
// pointer, a word each in that order (include/okprobe.h; the glue asserts
// the offsets against the struct). A register_value step holds a pt_regs
// offset; on the record it reads the word of the same register, found by
// where the arch's pt_regs layout has it. $argN, $stackN, $stack and
// $retval read through the layout either way.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "event_fetch.hpp"
#include "handler_path.hpp"
#include "probe_events.hpp"

namespace okp::events {

// The record's layout, for an arch whose pt_regs layout is regs.
constexpr RegisterLayout record_layout(const RegisterLayout &regs)
{
	RegisterLayout record;
	constexpr uint16_t word = sizeof(uint64_t);
	uint16_t at = 0;
	record.argument_count = regs.argument_count;
	for (unsigned i = 0; i < regs.argument_count; i++, at += word)
		record.arguments[i] = at;
	// riscv returns in a0, x86 in ax, a word of its own after them.
	record.return_value = at;
	for (unsigned i = 0; i < regs.argument_count; i++)
		if (regs.return_value == regs.arguments[i])
			record.return_value = record.arguments[i];
	if (record.return_value == at)
		at += word;
	at += word; // the probed address
	record.stack_pointer = at;
	record.stack_arguments = regs.stack_arguments;
	return record;
}

// Whether record (record_layout()'s) is where Record, struct okprobe_args
// as include/okprobe.h defines it for the arch being built, holds the
// registers. Another arch's layout (host tests build both) has another
// argument count and is not judged.
template <typename Record> constexpr bool describes_record(const RegisterLayout &record)
{
	if (record.argument_count != sizeof(Record::arg) / sizeof(Record::arg[0]))
		return true;
	size_t return_value = offsetof(Record, arg);
	if constexpr (requires(Record args) { args.ax; })
		return_value = offsetof(Record, ax);
	return record.arguments[0] == offsetof(Record, arg) && record.stack_pointer == offsetof(Record, sp) &&
	       record.return_value == return_value;
}

// The record's offset of the register at pt_regs offset regs_offset, or
// -1 where the record does not hold that register.
OKP_HANDLER_PATH [[gnu::always_inline]] constexpr int record_offset(const RegisterLayout &regs,
								    const RegisterLayout &record, uint64_t regs_offset)
{
	for (unsigned i = 0; i < regs.argument_count; i++)
		if (regs.arguments[i] == regs_offset)
			return record.arguments[i];
	if (regs.stack_pointer == regs_offset)
		return record.stack_pointer;
	if (regs.return_value == regs_offset)
		return record.return_value;
	return -1;
}

// Whether every fetch program of definition reads only what the record
// holds: registers it has, and what its words lead to (memory, the
// stack); an r event never (its handler gets pt_regs at the return).
constexpr bool reads_only_record(const Definition &definition, const RegisterLayout &regs)
{
	if (definition.is_return)
		return false;
	const RegisterLayout record = record_layout(regs);
	for (unsigned a = 0; a < definition.arg_count; a++) {
		const Argument &argument = definition.args[a];
		for (unsigned s = 0; s < argument.step_count; s++) {
			const FetchStep &step = argument.steps[s];
			if (step.op == Op::entry_argument)
				return false;
			if (step.op == Op::register_value &&
			    (step.value < 0 || record_offset(regs, record, static_cast<uint64_t>(step.value)) < 0))
				return false;
		}
	}
	return true;
}

} // namespace okp::events
