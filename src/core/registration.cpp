// SPDX-License-Identifier: GPL-2.0
// The checks of a registration (registration.hpp says which and why), in
// the order register_kprobe() makes them: the request, the function that
// holds the address, the ftrace call site at its entry, the text's other
// owners, then the instruction boundary proved by decoding from the
// function's first byte.
#include "registration.hpp"

#include "errno.hpp"
#include "function_cache.hpp"
#include "kernel_facts.hpp"
#include "owned.hpp"

namespace okp {

namespace {

// The function a probe goes into, as the kernel's facts have it.
struct ProbedFunction {
	uint64_t address = 0, size = 0;
};

// The request's own checks, and the address it asks for.
Result<uint64_t> requested_address(const ProbeRequest &request)
{
	if (!request.has_pre_handler && !request.has_post_handler && !request.has_args_handler && !request.counter)
		return refuse(error::einval, "a probe needs a pre_handler or a post_handler, an args_handler, or "
					     "OKPROBE_FLAG_COUNTER and none");
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
	// No symbol holds a wrapped address: ENOENT, as register_kprobe().
	if (target < base)
		return refuse(error::enoent, "the offset wraps around the address space");
	return target;
}

// The function that holds target, and whether its text may be probed at
// all: kernel or module text, live, no padding, not blacklisted.
Result<ProbedFunction> function_to_probe(uint64_t target)
{
	// The function is the one that holds the target, whatever symbol named
	// it: an offset past the symbol's end probes the next function's
	// instruction there, as register_kprobe() (and kprobe_events'
	// SYM+OFFS) does.
	ProbedFunction function;
	const TextKind kind = kernel::text_kind(target);
	// No symbol there at all: register_kprobe()'s ENOENT (its
	// kallsyms_lookup_size_offset() fails); a symbol that is not text is
	// EINVAL below.
	if (!kernel::function_of(target, &function.address, &function.size))
		return refuse(error::enoent, kind == TextKind::none ? "no symbol holds the address"
								    : "no function contains the address");
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
	return function;
}

// Where the probe goes at the function's entry, where ftrace has its call
// site: ftrace calls the handlers there (via_ftrace), or the probe goes
// past the site (past_ftrace). Elsewhere it stays at target.
struct EntryPlace {
	uint64_t target = 0;
	uint64_t ftrace_length = 0;
	bool via_ftrace = false;
	bool past_ftrace = false;
};

Result<EntryPlace> place_at_ftrace_site(uint64_t target, const ProbedFunction &function)
{
	EntryPlace place;
	place.target = target;
	uint64_t ftrace_site = 0, ftrace_length = 0;
	if (!kernel::ftrace_site(target, &ftrace_site, &ftrace_length) ||
	    !(ftrace_site == target || target == function.address) || ftrace_site - function.address >= function.size)
		return place;
	if (ftrace_site != target)
		if (const char *why = kernel::blacklisted(ftrace_site))
			return refuse(error::eperm, why);
	if (kernel::ftrace_entry_supported()) {
		place.target = ftrace_site;
		place.ftrace_length = ftrace_length;
		place.via_ftrace = true;
		return place;
	}
	place.target = ftrace_site + ftrace_length;
	place.past_ftrace = true;
	if (place.target - function.address >= function.size)
		return refuse(error::einval, "the function ends at its ftrace call site");
	if (const char *why = kernel::blacklisted(place.target))
		return refuse(error::eperm, why);
	return place;
}

// An instruction boundary proved at target: where the probe goes (past a
// landing pad), its instruction's length, the digest of the bytes walked.
struct ProvenBoundary {
	uint64_t target = 0;
	uint8_t length = 0;
	uint64_t text_digest = 0;
};

// Decodes from the function's first byte up to the probe (and its
// instruction): anything less cannot prove an instruction boundary.
Result<ProvenBoundary> prove_boundary(const OriginalText &text, InstructionRules rules, const Registration *earlier,
				      uint64_t requested, const ProbedFunction &function, uint64_t target)
{
	size_t offset = target - function.address;
	if (offset >= max_function_walk)
		return refuse(error::eilseq, "the function is too large to prove an instruction boundary");
	const size_t wanted = function.size < max_function_walk ? function.size : max_function_walk;
	// The copy of the function's bytes for the boundary walk.
	const OwnedArray<uint8_t> bytes = OwnedArray<uint8_t>::make(wanted);
	if (!bytes)
		return refuse(error::enomem, "out of memory");
	const size_t read = text.read(function.address, bytes.get(), bytes.size());
	if (read <= offset)
		return refuse(error::einval, "the function's text cannot be read");
	const uint64_t digest = text_digest(bytes.get(), read);
	InstructionVerdict verdict;
	if (earlier && earlier->requested == requested && earlier->function == function.address &&
	    earlier->function_size == function.size && earlier->text_digest == digest) {
		// The same bytes: the same proof, landing pad included.
		target = earlier->address;
		offset = target - function.address;
		verdict.length = earlier->length;
		if (target != requested)
			if (const char *why = kernel::blacklisted(target))
				return refuse(error::eperm, why);
	} else {
		verdict = rules(bytes.get(), read, offset, function.address);
	}
	if (verdict.landing_pad && !verdict.error) {
		// The entry's landing pad stays: probe what follows it.
		target += verdict.landing_pad;
		offset += verdict.landing_pad;
		if (offset >= read)
			return refuse(error::einval, "the offset is past the end of the function");
		if (const char *why = kernel::blacklisted(target))
			return refuse(error::eperm, why);
		verdict = rules(bytes.get(), read, offset, function.address);
	}
	if (verdict.error)
		return refuse(verdict.error, verdict.why);
	ProvenBoundary boundary;
	boundary.target = target;
	boundary.length = verdict.length;
	boundary.text_digest = digest;
	return boundary;
}

} // namespace

Result<Registration> check_registration(const ProbeRequest &request, const OriginalText &text, InstructionRules rules,
					const Registration *earlier)
{
	const Result<uint64_t> requested = requested_address(request);
	if (!requested)
		return requested.refusal();
	const Result<ProbedFunction> function = function_to_probe(requested.value());
	if (!function)
		return function.refusal();
	const Result<EntryPlace> entry = place_at_ftrace_site(requested.value(), function.value());
	if (!entry)
		return entry.refusal();

	Registration registration;
	registration.requested = requested.value();
	registration.function = function->address;
	registration.function_size = function->size;
	if (entry->via_ftrace) {
		registration.address = entry->target;
		registration.length = static_cast<uint8_t>(entry->ftrace_length);
		registration.via_ftrace = true;
		return registration;
	}
	if (const char *why = text.changed_by_others(function->address, function->size))
		return refuse(error::ebusy, why);

	const Result<ProvenBoundary> boundary =
		prove_boundary(text, rules, earlier, requested.value(), function.value(), entry->target);
	if (!boundary)
		return boundary.refusal();
	if (kernel::has_exception_entry(boundary->target))
		return refuse(error::eperm, "the instruction has an exception-table entry");
	if (const char *why = kernel::reserved(boundary->target, boundary->length))
		return refuse(error::ebusy, why);

	registration.address = boundary->target;
	registration.length = boundary->length;
	registration.text_digest = boundary->text_digest;
	registration.past_ftrace = entry->past_ftrace;
	return registration;
}

} // namespace okp
