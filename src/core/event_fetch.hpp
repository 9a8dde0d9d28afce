// SPDX-License-Identifier: GPL-2.0
// Runs an okprobe_events argument's fetch program (probe_events.hpp) at a
// hit and stores its field into the event record, as the kernel's
// store_trace_args() does for kprobe events: fixed-size fields at their
// offsets, strings after them as __data_loc (length << 16 | offset from
// the record's start).
//
// Pure but for memory and per-cpu addresses, which the glue reads and
// makes (okp_glue_event_*; the host tests fake them). A read that faults is never fatal: a number's field is 0, a
// string's is empty (length 0, which the event prints as "(fault)"), as the kernel records them.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "probe_events.hpp"

namespace okp::events {

// Where a hit's pt_regs holds what fetch arguments name, as the kernel's
// regs_get_kernel_argument(), kernel_stack_pointer() and
// regs_return_value() read them: byte offsets, from the arch port
// (arch/<arch>/event_registers.hpp).
struct RegisterLayout {
	uint16_t arguments[8] = {}; // the argument registers, in order
	uint8_t argument_count = 0;
	// $argN past those: the words above the stack pointer, as x86's
	// regs_get_kernel_argument() reads them; else 0, as riscv's.
	bool stack_arguments = false;
	uint16_t stack_pointer = 0;
	uint16_t return_value = 0;
};

// What a hit offers the fetch programs: its registers (the pt_regs the
// handler got), where they are, the task's comm and its task_struct
// ($current). Registers are read here; memory and this CPU's per-cpu
// copies through the glue's okp_glue_event_* (glue_services.h), direct
// calls: a hit makes no indirect call to fetch.
struct FetchEnvironment {
	const uint8_t *registers = nullptr;
	const RegisterLayout *layout = nullptr;
	// Set where registers is an argument-only hit's record (layout then
	// the record's, event_record_layout.hpp): the pt_regs layout, by which
	// a register_value step's pt_regs offset finds the record's word.
	const RegisterLayout *regs_layout = nullptr;
	const char *comm = nullptr;
	const void *task = nullptr;
	// An r event's arguments its function's entry saved (nullptr: none).
	const uint64_t *entry_arguments = nullptr;
};

// The size of a task's comm, NUL included (the kernel's TASK_COMM_LEN).
inline constexpr size_t comm_size = 16;

// The longest string a field takes, NUL included (the kernel's
// MAX_STRING_SIZE is PATH_MAX).
inline constexpr size_t max_string = 4096;

// At an r event's entry: the arguments its return will fetch, into to
// (definition.entry_arguments of them).
void save_entry_arguments(const Definition &definition, const FetchEnvironment &environment, uint64_t *to);

// Bytes of strings the definition's arguments will store at this hit, the
// kernel's __get_data_size(): what to reserve after the fixed fields.
size_t dynamic_size(const Definition &definition, const FetchEnvironment &environment);

// Stores every argument: fields at fields + offset, strings from
// fields + record_size on, at most dynamic bytes of them; data_loc
// offsets count from record (the entry's start, its header included).
// The definition's @SYM steps hold resolved addresses (their value).
void store_arguments(const Definition &definition, const FetchEnvironment &environment, uint8_t *record,
		     uint8_t *fields, size_t dynamic);

} // namespace okp::events
