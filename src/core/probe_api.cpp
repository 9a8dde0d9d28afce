// SPDX-License-Identifier: GPL-2.0
// The probe table as the C glue sees it: okp_core_* entry points over the
// module's one ProbeTable.
// Every entry point but okp_core_breakpoint (arch) is called with the
// glue's probe mutex held.
#include "core/basic_blocks.hpp"
#include "core/core_api.h"
#include "core/function_exits.hpp"
#include "core/owned.hpp"
#include "core/kernel_facts.hpp"
#include "core/probe_table.hpp"

namespace okp {

constinit ProbeTable registered_probes;

} // namespace okp

using namespace okp;

namespace {

// An okretprobe's own misses (no instance, or its handler not run), which
// the glue counts in okretprobe.nmissed; probe is its kp.
unsigned long return_probe_missed(const okprobe *probe)
{
	static_assert(__builtin_offsetof(okretprobe, kp) == 0, "an okretprobe starts with its kp");
	const okretprobe *returns = reinterpret_cast<const okretprobe *>(probe);
	return AtomicRef<const unsigned long>(returns->nmissed).load(Order::relaxed);
}

} // namespace

extern "C" int okp_core_register(struct okprobe *probe, const char *symbol_name, const char **why)
{
	const Status registered = registered_probes.register_probe(probe, symbol_name, arch::probe_rules);
	if (!registered)
		*why = registered.why();
	return -registered.error();
}

extern "C" void okp_core_begin_arm_batch(void)
{
	registered_probes.begin_arm_batch();
}

extern "C" int okp_core_end_arm_batch(const char **where, const char **why)
{
	return -registered_probes.end_arm_batch(where, why);
}

extern "C" unsigned long okp_core_unregister_many(struct okprobe **probes, unsigned long count)
{
	return registered_probes.unregister_probes(probes, count);
}

extern "C" int okp_core_set_probe_enabled(struct okprobe *probe, int enabled)
{
	return registered_probes.set_probe_enabled(probe, enabled != 0);
}

extern "C" int okp_core_disable_probes(struct okprobe **probes, unsigned long count)
{
	return registered_probes.disable_probes(probes, count);
}

extern "C" int okp_core_read_count(struct okprobe *probe, unsigned long long *count)
{
	return registered_probes.read_count(probe, count);
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
		// Return probes are known by their pre_handlers (glue_services.h).
		const bool return_entry = line.probe->pre_handler == okp_glue_return_entry_hit;
		const bool return_exit = line.probe->pre_handler == okp_glue_return_exit_hit;
		// An okretprobe's entry: its misses and its instances'.
		const unsigned long missed = line.missed + (return_entry ? return_probe_missed(line.probe) : 0);
		const okp_list_line out = {line.address,   line.description, line.hits,	 missed,       line.flags,
					   line.optimized, line.past_ftrace, line.probe, return_entry, return_exit};
		emit(&out, context);
	});
}

extern "C" void okp_core_jumps(void (*emit)(const struct okp_jump_line *line, void *context), void *context)
{
	registered_probes.for_each_jump([&](const JumpLine &line) {
		const char *state = line.lost				 ? "lost"
				    : line.ftrace			 ? "ftrace"
				    : line.state == JumpState::optimized ? "optimized"
				    : line.state == JumpState::waiting	 ? "waiting"
									 : "breakpoint";
		const okp_jump_line out = {line.address,       line.description,   state,
					   line.why,	       line.region_length, line.detour_size,
					   line.region_behind, line.args_detour};
		emit(&out, context);
	});
}

extern "C" void okp_core_writer_steps(void (*emit)(const char *step, unsigned long times, unsigned long ns,
						   void *context),
				      void *context)
{
	const WriterClock &clock = registered_probes.writer_clock();
	for (size_t i = 0; i < size_t(WriterStep::count); ++i)
		emit(writer_step_name(WriterStep(i)), clock.times[i], clock.ns[i], context);
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
		const TextKind kind = kernel::text_kind(address);
		return (kind == TextKind::core_kernel || kind == TextKind::module) &&
		       kernel::function_of(address, start, size);
	};
	facts.read_text = [](uint64_t address, uint8_t *buffer, size_t size, void *) -> size_t {
		return okp_glue_read_text(address, buffer, size);
	};
	facts.hidden_targets = kernel_hidden_targets;
	const auto lookup = [](const char *name, void *) { return kernel::lookup_symbol(name); };
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

// The largest function okprobe-cover decodes (a byte of marks per byte).
constexpr uint64_t max_covered_function = 1 << 20;

extern "C" long okp_core_block_starts(unsigned long address, unsigned long *start, unsigned long *size,
				      unsigned int *offsets, unsigned long capacity)
{
	uint64_t function = 0, length = 0;
	if (!kernel::function_of(address, &function, &length) || !length)
		return -error::enoent;
	if (length > max_covered_function)
		return -error::e2big;
	OwnedArray<uint8_t> bytes = OwnedArray<uint8_t>::make(length);
	if (!bytes)
		return -error::enomem;
	// The text as it was before okprobe's breakpoints and jumps.
	if (registered_probes.read_original_text(function, &bytes[0], length) != length)
		return -error::eio;
	*start = function;
	*size = length;
	const long count = block_starts(CodeRange{&bytes[0], function, length}, arch::flow_step, offsets, capacity);
	return count < 0 ? -error::enomem : count;
}
