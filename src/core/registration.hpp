// SPDX-License-Identifier: GPL-2.0
// Whether, and where, a probe may be registered: the checks of
// register_kprobe() (check_kprobe_address_safe, arch_prepare_kprobe) as a
// pure function over facts the glue gathers from the kernel.
//
// Every refusal has an errno and a one-line reason. The errnos, as in
// Documentation/api.md:
//   EINVAL  malformed request: no handler, both or neither of symbol_name
//           and addr, an offset past the end of the function, an address
//           that is not kernel or module text
//   ENOENT  unknown symbol
//   EILSEQ  not an instruction boundary, or bytes that do not decode
//   EPERM   an address okprobe refuses on principle: its own code, the
//           kprobe blacklist and the sections it covers, init text after
//           boot, an instruction that cannot be probed (ud2, int, ...), an
//           instruction with an exception-table entry
//   EBUSY   the address belongs to another patching mechanism: someone
//           else's int3, an ftrace call site, a jump label, static call or
//           alternative; or the function holds a kernel kprobe
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace okp {

// What the client asked for (struct okprobe's public fields).
struct ProbeRequest {
	const char *symbol_name = nullptr;
	uint64_t offset = 0;
	uint64_t address = 0; // okprobe.addr
	bool has_pre_handler = false;
	bool has_post_handler = false;
};

enum class TextKind : uint8_t { none, core_kernel, module, init_after_boot };

// Kernel facts, asked for one address at a time. Function pointers so the
// glue can answer from kallsyms, the module list and the kernel's reserved
// ranges, and host tests from tables.
struct KernelFacts {
	// The symbol's address, or 0.
	uint64_t (*lookup_symbol)(const char *name, void *context);
	// The function containing address: its start and size; false if none.
	bool (*function_of)(uint64_t address, uint64_t *start, uint64_t *size, void *context);
	TextKind (*text_kind)(uint64_t address, void *context);
	// Why address is blacklisted (okprobe, NOKPROBE, sections), or nullptr.
	const char *(*blacklisted)(uint64_t address, void *context);
	// Why someone else's probe (a kernel kprobe) owns bytes of the
	// function [start, start + size), or nullptr: its text is not the
	// original, and no proof may read it.
	const char *(*foreign_probe)(uint64_t start, uint64_t size, void *context);
	// Why [address, address + length) is reserved by another patching
	// mechanism (ftrace, jump label, static call, alternative), or nullptr.
	const char *(*reserved)(uint64_t address, size_t length, void *context);
	// True when the instruction at address has an exception-table entry:
	// a fault in its out-of-line copy would find no fixup (x86 page
	// faults do not pass through die notifiers, so a module cannot
	// redirect them as kprobes' fault handler does).
	bool (*has_exception_entry)(uint64_t address, void *context);
	// Copies up to size bytes of text at address; returns how many.
	size_t (*read_text)(uint64_t address, uint8_t *buffer, size_t size, void *context);
	void *context;
};

// The per-architecture instruction rules (arch/*/probe_rules.cpp).
struct InstructionVerdict {
	int error = 0;	      // 0, EILSEQ or EPERM (or EBUSY for an existing breakpoint)
	const char *why = ""; // the reason for a nonzero error
	uint8_t length = 0;   // length of the probed instruction when error == 0
};
// Decides on the instruction at offset within function (bytes of the whole
// function from its start, as far as read).
using InstructionRules = InstructionVerdict (*)(const uint8_t *function, size_t size, size_t offset,
						uint64_t function_address);

struct Registration {
	int error = 0;	      // 0 or a positive errno
	const char *why = ""; // one line, for the log and debugfs
	uint64_t address = 0; // the probed instruction when error == 0
	uint64_t function = 0, function_size = 0;
	uint8_t length = 0;
	// A digest of the function's bytes the boundary walk proved on.
	uint64_t text_digest = 0;
};

// The largest function okprobe walks to prove an instruction boundary.
constexpr size_t max_function_walk = 64 * 1024;

// Checks the request against the facts and the arch's rules. earlier, if
// not null, is a successful check of the same request a moment ago: when
// the function's bytes are still the ones it walked (same digest), its
// boundary proof is reused instead of decoding the function again; every
// other fact is asked again.
Registration check_registration(const ProbeRequest &request, const KernelFacts &facts, InstructionRules rules,
				const Registration *earlier = nullptr);

} // namespace okp
