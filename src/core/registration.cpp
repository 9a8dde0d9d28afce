// SPDX-License-Identifier: GPL-2.0
#include "registration.hpp"

#include "errno.hpp"
#include "function_cache.hpp"
#include "kernel_facts.hpp"
#include "owned.hpp"

namespace okp {

Result<Registration> check_registration(const ProbeRequest &request, const OriginalText &text, InstructionRules rules,
					const Registration *earlier)
{
	if (!request.has_pre_handler && !request.has_post_handler && !request.counter)
		return refuse(error::einval,
			      "a probe needs a pre_handler or a post_handler (or OKPROBE_FLAG_COUNTER and neither)");
	if (request.symbol_name && request.address)
		return refuse(error::einval, "give symbol_name or addr, not both");
	if (!request.symbol_name && !request.address)
		return refuse(error::einval, "give symbol_name or addr");

	uint64_t base = request.address;
	if (request.symbol_name) {
		base = kernel::lookup_symbol(request.symbol_name);
		if (!base)
			return refuse(error::enoent, "no such kernel symbol");
	}
	uint64_t target = base + request.offset;
	if (target < base)
		return refuse(error::einval, "the offset wraps around the address space");

	// The function is the symbol's when one is named, so an offset past its
	// end is reported as such rather than as whatever lies beyond.
	const uint64_t anchor = request.symbol_name ? base : target;
	uint64_t function = 0, size = 0;
	const TextKind kind = kernel::text_kind(target);
	if (!kernel::function_of(anchor, &function, &size))
		return refuse(error::einval, kind == TextKind::none ? "the address is not kernel or module text"
								    : "no function contains the address");
	if (target < function || target - function >= size)
		return refuse(error::einval, "the offset is past the end of the function");
	switch (kind) {
	case TextKind::none:
		return refuse(error::einval, "the address is not kernel or module text");
	case TextKind::init_after_boot:
		return refuse(error::eperm, "the address is init text, freed after boot");
	case TextKind::core_kernel:
	case TextKind::module:
		break;
	}
	// Nops the kernel may rewrite (call depth accounting, FineIBT), not
	// a function's code: kprobes refuse them with EINVAL too.
	if (const char *why = kernel::padding(target))
		return refuse(error::einval, why);
	if (const char *why = kernel::blacklisted(target))
		return refuse(error::eperm, why);

	// The function's entry, where ftrace has its call site: ftrace calls
	// the handlers (kprobes on ftrace), or the probe goes past the site.
	const uint64_t requested = target;
	uint64_t ftrace_site = 0, ftrace_length = 0;
	bool past_ftrace = false;
	if (kernel::ftrace_site(target, &ftrace_site, &ftrace_length) &&
	    (ftrace_site == target || target == function) && ftrace_site - function < size) {
		if (ftrace_site != target)
			if (const char *why = kernel::blacklisted(ftrace_site))
				return refuse(error::eperm, why);
		if (kernel::ftrace_entry_supported()) {
			Registration registration;
			registration.address = ftrace_site;
			registration.requested = requested;
			registration.function = function;
			registration.function_size = size;
			registration.length = static_cast<uint8_t>(ftrace_length);
			registration.via_ftrace = true;
			return registration;
		}
		target = ftrace_site + ftrace_length;
		past_ftrace = true;
		if (target - function >= size)
			return refuse(error::einval, "the function ends at its ftrace call site");
		if (const char *why = kernel::blacklisted(target))
			return refuse(error::eperm, why);
	}
	if (const char *why = text.changed_by_others(function, size))
		return refuse(error::ebusy, why);

	// Decode from the function's first byte up to the probe (and its
	// instruction): anything less cannot prove an instruction boundary.
	size_t offset = target - function;
	if (offset >= max_function_walk)
		return refuse(error::eilseq, "the function is too large to prove an instruction boundary");
	const size_t wanted = size < max_function_walk ? size : max_function_walk;
	// The copy of the function's bytes for the boundary walk.
	const OwnedArray<uint8_t> bytes = OwnedArray<uint8_t>::make(wanted);
	if (!bytes)
		return refuse(error::enomem, "out of memory");
	const size_t read = text.read(function, bytes.get(), bytes.size());
	if (read <= offset)
		return refuse(error::einval, "the function's text cannot be read");
	const uint64_t digest = text_digest(bytes.get(), read);
	InstructionVerdict verdict;
	if (earlier && earlier->requested == requested && earlier->function == function &&
	    earlier->function_size == size && earlier->text_digest == digest) {
		// The same bytes: the same proof, landing pad included.
		target = earlier->address;
		offset = target - function;
		verdict.length = earlier->length;
		if (target != requested)
			if (const char *why = kernel::blacklisted(target))
				return refuse(error::eperm, why);
	} else {
		verdict = rules(bytes.get(), read, offset, function);
	}
	if (verdict.landing_pad && !verdict.error) {
		// The entry's landing pad stays: probe what follows it.
		target += verdict.landing_pad;
		offset += verdict.landing_pad;
		if (offset >= read)
			return refuse(error::einval, "the offset is past the end of the function");
		if (const char *why = kernel::blacklisted(target))
			return refuse(error::eperm, why);
		verdict = rules(bytes.get(), read, offset, function);
	}
	if (verdict.error)
		return refuse(verdict.error, verdict.why);
	if (kernel::has_exception_entry(target))
		return refuse(error::eperm, "the instruction has an exception-table entry");
	if (const char *why = kernel::reserved(target, verdict.length))
		return refuse(error::ebusy, why);

	Registration registration;
	registration.address = target;
	registration.requested = requested;
	registration.function = function;
	registration.function_size = size;
	registration.length = verdict.length;
	registration.text_digest = digest;
	registration.past_ftrace = past_ftrace;
	return registration;
}

} // namespace okp
