// SPDX-License-Identifier: GPL-2.0
// Where an okretprobe goes, decided from plain facts about the request:
// refused (an errno and the one line okretprobe_register() logs), at the
// function's exits (tried first; the glue falls back to the entry when the
// exit census cannot prove them), or at the entry with the return address
// hooked by the kernel's rethook. Also GCC's .cold naming rule, which both
// this planner and the exit census (return_exits.cpp) follow. Pure: the C
// glue (src/kernel/return_probes.c) gathers the facts and carries out the
// plan; host tests drive it directly.
#pragma once

#include "core/result.hpp"
#include "core/text.hpp"

#include <stdint.h>

namespace okp {

// What okretprobe.data_size may be.
constexpr uint64_t max_return_data = 4096;

// The refusals' lines, as okretprobe_register() logs them.
namespace return_refusal {
constexpr const char *no_probe = "the probe is NULL";
constexpr const char *registered = "the probe is already registered (or okp_private is not zero)";
constexpr const char *no_rethook = "this kernel has no rethook (CONFIG_RETHOOK), which okprobe's return probes use";
constexpr const char *data_size = "data_size is more than 4096";
constexpr const char *not_entry = "a return probe goes at a function's entry (offset 0)";
constexpr const char *cold_piece = "a function's split-off piece (.cold) has no entry of its own";
} // namespace return_refusal

// The facts of one okretprobe_register() call.
struct ReturnRequest {
	bool registered = false;  // okp_private set, or the probe is listed
	bool has_rethook = false; // the kernel has CONFIG_RETHOOK
	uint64_t data_size = 0;
	bool has_entry_handler = false;
	uint64_t offset = 0;	// kp.offset
	unsigned int flags = 0; // kp.flags but okprobe's own OKPROBE_FLAG_RETURN_EXITS
	bool has_symbol_name = false;
	// Without symbol_name: whether kp.addr is where a function starts (its
	// first byte, past an IBT landing pad, its ftrace call site or the
	// instruction past it).
	bool at_function_start = true;
	// The symbol kp names, as the kernel names it (empty: not known, and
	// kp's own registration says why).
	Text name;
};

enum class ReturnStrategy {
	// kp at the entry: its pre_handler hooks the return address.
	at_entry,
	// Probes at every exit, if the census proves them and each can be a
	// jump; else as at_entry.
	at_exits,
};

// Refuses, or chooses the strategy, in the order okretprobe_register()
// checks: registered, rethook, data_size, entry, .cold.
Result<ReturnStrategy> plan_return(const ReturnRequest &request);

// GCC's name for a piece it splits off a function (entered by a jump from
// the function's body, so no entry and no return address of its own):
// ".cold" is in the name, "name.cold" or "name.cold.N".
constexpr Text cold_marker = Text(".cold", 5);

// Whether name is such a piece (".cold" anywhere in it).
constexpr bool names_cold_piece(Text name)
{
	for (size_t i = 0; i + cold_marker.size <= name.size; ++i)
		if (name.drop(i).starts_with(cold_marker))
			return true;
	return false;
}

// Whether target is a piece split off function: "function.cold" or
// "function.cold.N".
constexpr bool cold_piece_of(Text function, Text target)
{
	if (!target.starts_with(function) || !target.drop(function.size).starts_with(cold_marker))
		return false;
	const Text rest = target.drop(function.size + cold_marker.size);
	return rest.empty() || rest[0] == '.';
}

} // namespace okp
