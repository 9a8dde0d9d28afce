// SPDX-License-Identifier: GPL-2.0
// The kernel facts registration and the jump planners ask for, typed over
// the glue's C calls (glue_services.h). Link-time functions are the one
// way the core reaches the kernel; host tests link fakes of them.
#pragma once

#include "core/core_api.h"

#include <stddef.h>
#include <stdint.h>

namespace okp {

enum class TextKind : uint8_t { none, core_kernel, module, init_after_boot };

// Why address is in okprobe's own blacklist (okp_core_blacklist_add: its
// own code and trap path, the sections the arch refuses), or nullptr.
const char *own_blacklist_find(uint64_t address);

namespace kernel {

// The symbol's address, or 0.
inline uint64_t lookup_symbol(const char *name)
{
	return okp_glue_lookup_symbol(name);
}

// The function containing address: its start and size; false if none.
inline bool function_of(uint64_t address, uint64_t *start, uint64_t *size)
{
	unsigned long s = 0, n = 0;
	const bool found = okp_glue_function_of(address, &s, &n);
	*start = s;
	*size = n;
	return found;
}

inline TextKind text_kind(uint64_t address)
{
	switch (okp_glue_text_kind(address)) {
	case OKP_TEXT_CORE:
		return TextKind::core_kernel;
	case OKP_TEXT_MODULE:
		return TextKind::module;
	case OKP_TEXT_INIT_AFTER_BOOT:
		return TextKind::init_after_boot;
	case OKP_TEXT_NONE:
		break;
	}
	return TextKind::none;
}

// Why address is blacklisted (okprobe's own code and trap path, NOKPROBE,
// the sections the kernel's blacklist covers), or nullptr.
inline const char *blacklisted(uint64_t address)
{
	const char *why = own_blacklist_find(address);
	return why ? why : okp_glue_kernel_blacklisted(address);
}

// Why address is a function's padding (a __pfx_ or __cfi_ symbol) rather
// than its code, or nullptr.
inline const char *padding(uint64_t address)
{
	return okp_glue_padding_symbol(address);
}

// Why [address, address + length) is reserved by another patching
// mechanism (ftrace, jump label, static call, alternative), or nullptr.
inline const char *reserved(uint64_t address, size_t length)
{
	return okp_glue_reserved(address, length);
}

// The ftrace call site address is, or leads to (a function's first byte),
// and its length; false when there is none.
inline bool ftrace_site(uint64_t address, uint64_t *site, uint64_t *length)
{
	unsigned long n = 0;
	*site = okp_glue_ftrace_site(address, &n);
	*length = n;
	return *site != 0;
}

// Whether probes at an ftrace call site go through ftrace (the kernel's
// ftrace saves registers) rather than past the site.
inline bool ftrace_entry_supported()
{
	return okp_glue_ftrace_supported() != 0;
}

// True when the instruction at address has an exception-table entry: a
// fault in its out-of-line copy would find no fixup (x86 page faults do
// not pass through die notifiers, so a module cannot redirect them as
// kprobes' fault handler does).
inline bool has_exception_entry(uint64_t address)
{
	return okp_glue_has_exception_entry(address) != 0;
}

// An edge of a function's control flow its bytes do not show: a jump
// label's jump (its nop becomes a jmp when the key flips) or an exception
// fixup (a fault resumes there).
struct HiddenEdge {
	enum class Kind : uint8_t { jump_label, exception_fixup };
	uint64_t from = 0, to = 0;
	Kind kind = Kind::jump_label;
};

enum class HiddenEdges : uint8_t {
	read,		    // every one went to add
	labels_unknown,	    // the kernel's jump table cannot be read
	exceptions_unknown, // its exception table cannot (labels were read)
	too_many,	    // more than Max of a kind, or add said stop
};

// Hands the jump labels, then the exception-table entries, whose site lies
// in [start, start + size) to add(const HiddenEdge &), which returns false
// to stop; at most Max of each kind. One reading for the return-exit census
// and riscv's jump planner, which differ in what an unknown table means.
template <size_t Max, typename Add> HiddenEdges hidden_edges_within(uint64_t start, uint64_t size, Add add)
{
	{ // each buffer in its own scope: they share the frame
		okp_jump_label labels[Max];
		const long found = okp_glue_jump_labels_within(start, start + size, labels, Max);
		if (found < 0)
			return HiddenEdges::labels_unknown;
		if (size_t(found) > Max)
			return HiddenEdges::too_many;
		for (long i = 0; i < found; ++i)
			if (!add(HiddenEdge{labels[i].code, labels[i].target, HiddenEdge::Kind::jump_label}))
				return HiddenEdges::too_many;
	}
	okp_exception_entry entries[Max];
	const long found = okp_glue_exception_entries_within(start, start + size, entries, Max);
	if (found < 0)
		return HiddenEdges::exceptions_unknown;
	if (size_t(found) > Max)
		return HiddenEdges::too_many;
	for (long i = 0; i < found; ++i)
		if (!add(HiddenEdge{entries[i].insn, entries[i].fixup, HiddenEdge::Kind::exception_fixup}))
			return HiddenEdges::too_many;
	return HiddenEdges::read;
}

} // namespace kernel
} // namespace okp
