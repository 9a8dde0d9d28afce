// SPDX-License-Identifier: GPL-2.0
// The probe table as the C glue sees it: okp_core_* entry points over the
// module's one ProbeTable, with registration facts answered by the kernel.
// Every entry point but okp_core_breakpoint (arch) is called with the
// glue's probe mutex held.
#include "core/core_api.h"
#include "core/probe_table.hpp"

namespace okp {

constinit ProbeTable registered_probes;

namespace {

KernelFacts kernel_facts()
{
	KernelFacts facts;
	facts.lookup_symbol = [](const char *name, void *) -> uint64_t { return okp_glue_lookup_symbol(name); };
	facts.function_of = [](uint64_t address, uint64_t *start, uint64_t *size, void *) {
		unsigned long s = 0, n = 0;
		const bool found = okp_glue_function_of(address, &s, &n);
		*start = s;
		*size = n;
		return found;
	};
	facts.text_kind = [](uint64_t address, void *) {
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
	};
	facts.blacklisted = [](uint64_t address, void *) {
		const char *why = okp_core_blacklist_find(address);
		return why ? why : okp_glue_kernel_blacklisted(address);
	};
	facts.foreign_probe = [](uint64_t start, uint64_t size, void *) { return okp_glue_foreign_probe(start, size); };
	facts.reserved = [](uint64_t address, size_t length, void *) { return okp_glue_reserved(address, length); };
	facts.has_exception_entry = [](uint64_t address, void *) { return okp_glue_has_exception_entry(address) != 0; };
	facts.read_text = [](uint64_t address, uint8_t *buffer, size_t size, void *) -> size_t {
		return okp_glue_read_text(address, buffer, size);
	};
	facts.context = nullptr;
	return facts;
}

} // namespace
} // namespace okp

using namespace okp;

extern "C" int okp_core_register(struct okprobe *probe, const char *symbol_name, const char **why)
{
	return registered_probes.register_probe(probe, symbol_name, kernel_facts(), arch::probe_rules, why);
}

extern "C" unsigned long okp_core_unregister_many(struct okprobe **probes, unsigned long count)
{
	return registered_probes.unregister_probes(probes, count);
}

extern "C" int okp_core_set_probe_enabled(struct okprobe *probe, int enabled)
{
	return registered_probes.set_probe_enabled(probe, enabled != 0);
}

extern "C" int okp_core_probes_enabled(void)
{
	return registered_probes.all_enabled();
}

extern "C" void okp_core_set_probes_enabled(int enabled)
{
	registered_probes.set_all_enabled(enabled != 0);
}

extern "C" void okp_core_text_gone(unsigned long start, unsigned long end)
{
	registered_probes.text_gone(start, end);
}

extern "C" unsigned long okp_core_probes_within(unsigned long start, unsigned long end, struct okprobe **found,
						unsigned long capacity)
{
	return registered_probes.probes_within(start, end, found, capacity);
}

extern "C" void okp_core_list(void (*emit)(const struct okp_list_line *line, void *context), void *context)
{
	registered_probes.for_each_line([&](const ListLine &line) {
		const okp_list_line out = {line.address, line.description, line.hits,
					   line.missed,	 line.flags,	   line.optimized};
		emit(&out, context);
	});
}

extern "C" void okp_core_jumps(void (*emit)(const struct okp_jump_line *line, void *context), void *context)
{
	registered_probes.for_each_jump([&](const JumpLine &line) {
		const char *state = line.lost				 ? "lost"
				    : line.state == JumpState::optimized ? "optimized"
				    : line.state == JumpState::waiting	 ? "waiting"
									 : "breakpoint";
		const okp_jump_line out = {line.address, line.description,   state,
					   line.why,	 line.region_length, line.detour_size};
		emit(&out, context);
	});
}

extern "C" void okp_core_optimization_changed(void)
{
	registered_probes.optimization_changed();
}

extern "C" unsigned long okp_core_optimizer_begin(void)
{
	return registered_probes.optimizer_begin();
}

extern "C" void okp_core_optimizer_finish(unsigned long generation)
{
	registered_probes.optimizer_finish(generation);
}

extern "C" void okp_core_probes_exit(void)
{
	registered_probes.clear();
	arch::release_resources();
}

extern "C" long okp_core_refuse_trap_path(const char **why, unsigned long *culprit)
{
	// The registration's facts, restricted to text that stays: not init
	// text, freed after boot, whatever still refers to it.
	CodeGraphFacts facts{};
	facts.function_of = [](uint64_t address, uint64_t *start, uint64_t *size, void *) {
		const TextKind kind = kernel_facts().text_kind(address, nullptr);
		return (kind == TextKind::core_kernel || kind == TextKind::module) &&
		       kernel_facts().function_of(address, start, size, nullptr);
	};
	facts.read_text = kernel_facts().read_text;
	const auto lookup = kernel_facts().lookup_symbol;
	RangeList reached;
	const TrapPath path = arch::trap_path_functions(facts, lookup, reached);
	long result = long(reached.size());
	*culprit = 0;
	if (path.why) {
		*why = path.why;
		*culprit = path.walk.culprit;
		result = -(path.walk.error ? path.walk.error : error::einval);
	}
	for (size_t i = 0; i < reached.size() && result >= 0; ++i)
		if (okp_core_blacklist_add(reached[i].start, reached[i].end, reached[i].why)) {
			*why = "out of memory";
			result = -error::enomem;
		}
	reached.clear();
	return result;
}
