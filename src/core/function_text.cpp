// SPDX-License-Identifier: GPL-2.0
#include "core/function_text.hpp"

#include "core/core_api.h"
#include "core/kernel_facts.hpp"

namespace okp {

const char *FunctionText::read(const OriginalText &text, uint64_t start, uint64_t size)
{
	if (size > max_function_walk)
		return "the function is too large to check for jumps into the region";
	bytes = new uint8_t[size];
	if (!bytes)
		return "out of memory";
	if (text.read(start, bytes, size) != size)
		return "the function's text cannot be read";
	range = {bytes, start, size};
	return nullptr;
}

namespace {

// "name" of "name+0x1/0x2 [module]", and its base: up to the first '.'.
void symbol_name(const char *description, char (&name)[128], size_t *base_length)
{
	size_t n = 0;
	while (description[n] && description[n] != '+' && n + 1 < sizeof(name)) {
		name[n] = description[n];
		++n;
	}
	name[n] = 0;
	*base_length = 0;
	while (name[*base_length] && name[*base_length] != '.')
		++*base_length;
}

} // namespace

const char *read_pieces(const OriginalText &text, const char *description, const CodeRange &function,
			const uint64_t *targets, size_t target_count, FunctionText (&pieces)[max_pieces],
			CodeRange (&ranges)[max_pieces], size_t *count)
{
	char name[128];
	size_t base_length;
	symbol_name(description, name, &base_length);
	if (target_count > max_external_targets)
		return "the function jumps to too many other functions to check";
	uint64_t candidates[max_external_targets + 1];
	size_t candidate_count = 0;
	for (size_t i = 0; i < target_count; ++i) {
		char target_description[128], target_name[128];
		size_t target_base;
		okp_glue_describe(targets[i], target_description, sizeof(target_description));
		symbol_name(target_description, target_name, &target_base);
		if (target_base == base_length && __builtin_memcmp(target_name, name, base_length) == 0)
			candidates[candidate_count++] = targets[i];
	}
	if (name[base_length]) { // a piece: its parent too
		char parent[128];
		__builtin_memcpy(parent, name, base_length);
		parent[base_length] = 0;
		if (const uint64_t address = kernel::lookup_symbol(parent))
			candidates[candidate_count++] = address;
	}
	*count = 0;
	for (size_t i = 0; i < candidate_count; ++i) {
		uint64_t start = 0, size = 0;
		if (!kernel::function_of(candidates[i], &start, &size))
			return "a piece of the function has no symbol size";
		bool seen = start == function.address;
		for (size_t p = 0; p < *count && !seen; ++p)
			seen = ranges[p].address == start;
		if (seen)
			continue;
		if (*count == max_pieces)
			return "the function has too many pieces to check";
		// Someone else's probe bytes in a piece: its decode would not
		// read the original instructions.
		if (text.changed_by_others(start, size))
			return "a kernel kprobe is in a piece of the function (.cold/.part)";
		if (const char *why = pieces[*count].read(text, start, size))
			return why;
		ranges[*count] = pieces[*count].range;
		++*count;
	}
	return nullptr;
}

} // namespace okp
