// SPDX-License-Identifier: GPL-2.0
// okp_core_function_exits: the exit census (core/function_exits.hpp) over a
// kernel function as okprobe reads it (its bytes before okprobe's own
// patches, its .cold pieces, its jump labels and exception fixups), and
// whether a jump may replace the breakpoint at each exit. The glue's probe
// mutex is held.
#include "core/core_api.h"
#include "core/function_exits.hpp"
#include "core/function_text.hpp"
#include "core/kernel_facts.hpp"
#include "core/owned.hpp"
#include "core/probe_table.hpp"
#include "core/return_plan.hpp"
#include "core/symbol_description.hpp"

namespace okp {
namespace {

static_assert(OKP_FUNCTION_EXITS_MAX == max_function_exits, "the glue's buffer holds every exit the census reports");

// Room for a kernel symbol's name (KSYM_NAME_LEN) and what follows it.
constexpr size_t exit_description_size = 512 + 64;

struct ExitContext {
	char function_description[exit_description_size];
	char target_description[exit_description_size];
	Text name; // the function's, in function_description
	FunctionText pieces[max_exit_pieces];
	size_t piece_count = 0;
	const char *why = nullptr; // a piece that could not be read
};

// The symbol okprobe's description of address names, whole (a name cut
// short parses as no description at all): false when there is none.
bool describe(uint64_t address, char (&buffer)[exit_description_size], SymbolDescription &out)
{
	okp_glue_describe(address, buffer, sizeof(buffer));
	return parse_symbol_description(Text::of(buffer), out);
}

ExitPlace place(uint64_t target, CodeRange *piece, void *opaque)
{
	ExitContext &context = *static_cast<ExitContext *>(opaque);
	uint64_t start = 0, size = 0;
	const TextKind kind = kernel::text_kind(target);
	if ((kind != TextKind::core_kernel && kind != TextKind::module) || !kernel::function_of(target, &start, &size))
		return ExitPlace::elsewhere;
	SymbolDescription target_symbol;
	if (!describe(start, context.target_description, target_symbol))
		return ExitPlace::elsewhere;
	if (cold_piece_of(context.name, target_symbol.name)) {
		*piece = CodeRange{};
		if (context.piece_count == max_exit_pieces)
			return ExitPlace::piece; // the census refuses: too many
		const TableText text(registered_probes);
		FunctionText &read = context.pieces[context.piece_count];
		const char *why = text.changed_by_others(start, size);
		if (!why)
			why = read.read(text, start, size);
		if (why) {
			context.why = why;
			return ExitPlace::piece; // empty: the census refuses
		}
		++context.piece_count;
		*piece = read.range;
		return ExitPlace::piece;
	}
	return start == target ? ExitPlace::function_start : ExitPlace::elsewhere;
}

} // namespace

// Jump labels' targets and exception fixups: edges the decoder cannot see.
long kernel_hidden_targets(const CodeRange &range, uint64_t *targets, size_t capacity, void *)
{
	size_t count = 0;
	const kernel::HiddenEdges read = kernel::hidden_edges_within<max_hidden_edges>(
		range.address, range.size, [&](const kernel::HiddenEdge &e) {
			if (count == capacity)
				return false;
			targets[count++] = e.to;
			return true;
		});
	// An unknown table is a refusal here: the census must see every exit.
	return read == kernel::HiddenEdges::read ? long(count) : -1;
}

} // namespace okp

using namespace okp;

extern "C" long okp_core_function_exits(const struct okprobe *probe, const char *symbol_name, unsigned long *entry,
					struct okp_function_exit *exits, unsigned long capacity, const char **why,
					unsigned long *where)
{
	// Where the entry probe would go, found as its registration would.
	ProbeRequest request;
	request.symbol_name = symbol_name;
	request.offset = probe->offset;
	request.address = reinterpret_cast<uint64_t>(probe->addr);
	request.has_pre_handler = true;
	const TableText text(registered_probes);
	const Result<Registration> checked = check_registration(request, text, arch::probe_rules);
	if (!checked) {
		*why = checked.why();
		*where = request.address;
		return -checked.error();
	}
	const uint64_t start = checked.value().function, size = checked.value().function_size;
	*entry = checked.value().address;
	*where = start;
	if (request.offset) {
		*why = return_refusal::not_entry;
		return -error::einval;
	}
	FunctionText bytes;
	*why = text.changed_by_others(start, size);
	if (!*why)
		*why = bytes.read(text, start, size);
	if (*why)
		return -error::ebusy;
	// Two descriptions of up to KSYM_NAME_LEN: off the stack.
	Owned<ExitContext> context_storage = Owned<ExitContext>::make();
	if (!context_storage) {
		*why = "out of memory";
		return -error::enomem;
	}
	ExitContext &context = *context_storage;
	SymbolDescription function_symbol;
	if (!describe(start, context.function_description, function_symbol)) {
		*why = "the function's name is too long to tell its pieces";
		return -error::eopnotsupp;
	}
	context.name = function_symbol.name;
	const ExitFacts facts{place, kernel_hidden_targets, &context};
	OwnedArray<FunctionExit> found = OwnedArray<FunctionExit>::make(max_function_exits);
	if (!found) {
		*why = "out of memory";
		return -error::enomem;
	}
	const ExitCensus census = census_exits(bytes.range, arch::exit_step, facts, &found[0], max_function_exits);
	if (census.refusal != ExitRefusal::none) {
		*why = context.why ? context.why : exit_refusal_text(census.refusal);
		*where = census.at ? census.at : start;
		return -error::eopnotsupp;
	}
	if (census.count > capacity) {
		*why = exit_refusal_text(ExitRefusal::too_many_exits);
		return -error::e2big;
	}
	for (size_t i = 0; i < census.count; ++i) {
		// The exits' probes are only worth it as jumps: a breakpoint
		// at an exit costs more than the kernel's return trampoline.
		if (const char *refusal = registered_probes.planned_jump_refusal(found[i].address)) {
			*why = refusal;
			*where = found[i].address;
			return -error::eopnotsupp;
		}
		exits[i].address = found[i].address;
		exits[i].target = found[i].target;
		exits[i].tail_call = found[i].kind == ExitKind::tail_call;
	}
	return long(census.count);
}
