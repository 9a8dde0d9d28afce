// SPDX-License-Identifier: GPL-2.0
// Whether, and where, a probe may be registered: the checks of
// register_kprobe() (check_kprobe_address_safe, arch_prepare_kprobe) as one
// function over the kernel's facts (kernel_facts.hpp, link-time glue; fakes
// in host tests) and its original text.
//
// Every refusal has an errno and a one-line reason. The errnos, as in
// Documentation/api.md:
//   EINVAL  malformed request: no handler, both or neither of symbol_name
//           and addr, an address whose symbol is not kernel or module
//           text
//   ENOENT  unknown symbol; an address no symbol holds (one an offset
//           wrapped to, or past the last function), as register_kprobe()
//   EILSEQ  not an instruction boundary, or bytes that do not decode
//   EPERM   an address okprobe refuses on principle: its own code, the
//           kprobe blacklist and the sections it covers, init text after
//           boot, an instruction that cannot be probed (ud2, int, ...), an
//           instruction with an exception-table entry
//   EBUSY   the address belongs to another patching mechanism: someone
//           else's int3, a jump label, static call or alternative; or
//           the function holds a kernel kprobe
// A function's first byte and its ftrace call site are its entry: ftrace
// calls the handlers there (via_ftrace) where it saves registers, else the
// probe goes to the first instruction past the site (past_ftrace). Any
// other byte of the site is inside an instruction (EILSEQ), or, where the
// site is several instructions (riscv), reserved by ftrace (EBUSY).
#pragma once

#include "core/original_text.hpp"
#include "core/result.hpp"

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
	bool has_args_handler = false; // okprobe.args_handler
	bool counter = false;	       // OKPROBE_FLAG_COUNTER: no handler, by design
};

// The per-architecture instruction rules (arch/*/probe_rules.cpp).
struct InstructionVerdict {
	int error = 0;	      // 0, EILSEQ or EPERM (or EBUSY for an existing breakpoint)
	const char *why = ""; // the reason for a nonzero error
	uint8_t length = 0;   // length of the probed instruction when error == 0
	// At a function's first byte: the length of its indirect-branch
	// landing pad (x86 IBT's endbr64), which a probe never replaces; the
	// probe moves to the instruction after it. length is then unset.
	uint8_t landing_pad = 0;
};
// Decides on the instruction at offset within function (bytes of the whole
// function from its start, as far as read).
using InstructionRules = InstructionVerdict (*)(const uint8_t *function, size_t size, size_t offset,
						uint64_t function_address);

// An accepted registration.
struct Registration {
	uint64_t address = 0;	// the probed instruction
	uint64_t requested = 0; // what was asked for (before a landing pad)
	uint64_t function = 0, function_size = 0;
	uint8_t length = 0;
	// A digest of the function's bytes the boundary walk proved on.
	uint64_t text_digest = 0;
	// The function's entry: ftrace calls the handlers at its call site
	// (address; length is the site's), or the probe went past the site
	// on a kernel whose ftrace saves no registers.
	bool via_ftrace = false;
	bool past_ftrace = false;
};

// The largest function okprobe walks to prove an instruction boundary.
constexpr size_t max_function_walk = 64 * 1024;

// Checks the request against the kernel's facts, its original text and the
// arch's rules. earlier, if
// not null, is a successful check of the same request a moment ago: when
// the function's bytes are still the ones it walked (same digest), its
// boundary proof is reused instead of decoding the function again; every
// other fact is asked again.
Result<Registration> check_registration(const ProbeRequest &request, const OriginalText &text, InstructionRules rules,
					const Registration *earlier = nullptr);

} // namespace okp
