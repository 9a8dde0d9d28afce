// SPDX-License-Identifier: GPL-2.0
// Runs an okprobe_events argument's fetch program (probe_events.hpp) at a
// hit and stores its field into the event record, as the kernel's
// store_trace_args() does for kprobe events: fixed-size fields at their
// offsets, strings after them as __data_loc (length << 16 | offset from
// the record's start).
//
// Pure: the environment reads registers and memory. A read that faults is
// never fatal: a number's field is 0, a string's is empty (length 0, which
// the event prints as "(fault)"), as the kernel records them.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "probe_events.hpp"

namespace okp::events {

// What a hit offers the fetch programs (the glue's, on pt_regs and the
// kernel's nofault accessors); every function may be called at a hit, so
// each must be safe there (NOKPROBE, notrace).
struct FetchEnvironment {
	void *context = nullptr;
	uint64_t (*register_value)(void *context, unsigned offset) = nullptr;
	uint64_t (*argument)(void *context, unsigned index) = nullptr;
	uint64_t (*stack_entry)(void *context, unsigned index) = nullptr;
	uint64_t (*stack_address)(void *context) = nullptr;
	uint64_t (*return_value)(void *context) = nullptr;
	const char *(*comm)(void *context) = nullptr;
	// size bytes at address into to; false when the read faulted.
	bool (*read)(void *context, uint64_t address, void *to, size_t size, bool user) = nullptr;
	// The string at address into to (at most size bytes, NUL included): its
	// length with the NUL; 0 when it faulted. With size 0, only the length.
	size_t (*read_string)(void *context, uint64_t address, char *to, size_t size, bool user) = nullptr;
	// "symbol+0x1/0x20" for address into to, as read_string.
	size_t (*symbol_string)(void *context, uint64_t address, char *to, size_t size) = nullptr;
};

// The longest string a field takes, NUL included (the kernel's
// MAX_STRING_SIZE is PATH_MAX).
inline constexpr size_t max_string = 4096;

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
