// SPDX-License-Identifier: GPL-2.0
// x86-64's breakpoint hooks: a site's analysed instruction and its
// out-of-line slot, int3 in and out of the text, and the hit path's port
// (core/arch_port.hpp). The lifecycle is src/core/probe_table.cpp's, the
// hit path src/core/hit_path.cpp's; the jump hooks are optimizer.cpp's.
//
// A site's slot is written before the site is published and given back
// only in release_site(), after the grace periods: a CPU may be executing
// the trapping copy (interrupts off) until its post trap arrives.
#include "core/core_api.h"
#include "core/handler_path.hpp"
#include "core/probe_table.hpp"
#include "x86/glue_services.h"
#include "x86/out_of_line.hpp"
#include "x86/probe_pools.hpp"
#include "x86/probe_rules.hpp"
#include "x86/trap_path.hpp"

#include <okprobe.h>

namespace okp::x86 {

constinit ProbePools probe_pools;

namespace {

constexpr uint64_t kernel_code_segment = 0x10; // __KERNEL_CS

// indirect_jump_thunk_prefixes[variant] + the register's name, or 0.
uint64_t lookup_variant(size_t variant, int reg)
{
	const char *name = indirect_thunk_symbols[reg];
	if (!name)
		return 0;
	char full[64];
	size_t n = 0;
	for (const char *c = indirect_jump_thunk_prefixes[variant]; *c && n + 1 < sizeof(full); ++c)
		full[n++] = *c;
	for (const char *c = name + sizeof(indirect_thunk_prefix) - 1; *c && n + 1 < sizeof(full); ++c)
		full[n++] = *c;
	full[n] = 0;
	return okp_glue_lookup_symbol(full);
}

void resolve_thunks()
{
	if (probe_pools.thunks_resolved)
		return;
	probe_pools.thunks.return_thunk = okp_glue_lookup_symbol(return_thunk_symbol);
	for (int reg = 0; reg < 16; ++reg) {
		const char *name = indirect_thunk_symbols[reg];
		probe_pools.thunks.indirect_thunk[reg] = name ? okp_glue_lookup_symbol(name) : 0;
	}
	for (size_t i = 0; i < return_thunk_variant_count; ++i)
		probe_pools.thunks.return_thunk_variants[i] = okp_glue_lookup_symbol(return_thunk_variant_symbols[i]);
	for (size_t v = 0; v < indirect_jump_thunk_variant_count; ++v)
		for (int reg = 0; reg < 16; ++reg)
			probe_pools.thunks.indirect_jump_thunk_variants[v][reg] = lookup_variant(v, reg);
	bound_thunks(probe_pools.thunks);
	okp_detour_percpu percpu = {};
	okp_glue_detour_percpu(&percpu);
	DetourCall &call = probe_pools.detour_call;
	call.entry = reinterpret_cast<uint64_t>(&okp_core_optimized_hit);
	probe_pools.args_entry = reinterpret_cast<uint64_t>(&okp_core_args_hit);
	call.cpu_states = percpu.cpu_states;
	call.this_cpu_off = static_cast<int32_t>(percpu.this_cpu_off);
	call.preempt_count = static_cast<int32_t>(percpu.preempt_count);
	call.preempt_schedule = percpu.preempt_schedule;
	probe_pools.thunks_resolved = true;
}

// Builds both copies of the instruction in the site's slot.
bool write_slot(Site &site, const uint8_t *original)
{
	arch::SiteData &data = site.arch;
	if (data.analysis.execution == Execution::emulate)
		return true;
	data.slot = probe_pools.slots.take();
	if (!data.slot)
		return false;
	// Both copies side by side, written at once (one text_poke).
	uint8_t copies[2][slot_size];
	static_assert(sizeof(copies) == slot_bytes);
	if (!build_slot(data.analysis, original, site.address, data.slot, SlotEnd::jump_back, copies[0]) ||
	    !build_slot(data.analysis, original, site.address, data.slot + slot_size, SlotEnd::breakpoint, copies[1])) {
		probe_pools.slots.give_back(data.slot);
		data.slot = 0;
		return false;
	}
	const okp_text_patch patch = {data.slot, copies, slot_bytes};
	okp_glue_code_write_batch(&patch, 1);
	return true;
}

OKP_HANDLER_PATH uint64_t read_stack(uint64_t address)
{
	return *reinterpret_cast<const uint64_t *>(address);
}

OKP_HANDLER_PATH void write_stack(uint64_t address, uint64_t value)
{
	*reinterpret_cast<uint64_t *>(address) = value;
}

const StackAccess stack = {write_stack, read_stack};

} // namespace

DecodedFunction *decoded_function(const uint8_t *bytes, size_t size, uint64_t address)
{
	const TextKey key = TextKey::of(bytes, size, address);
	if (DecodedFunction *decoded = probe_pools.last_function.find(key))
		return decoded;
	resolve_thunks(); // the map sees thunk jumps as what they stand for
	DecodedFunction *decoded = probe_pools.last_function.replace(key);
	if (!decoded || !decoded->map.decode({bytes, address, size}, probe_pools.thunks)) {
		probe_pools.last_function.clear();
		return nullptr;
	}
	return decoded;
}

} // namespace okp::x86

namespace okp::arch {

using namespace okp::x86;

// ---- Lifecycle ----------------------------------------------------------------

const char *prepare_site(Site &site, const uint8_t (&original)[max_original_bytes])
{
	resolve_thunks();
	site.arch.analysis = analyze_instruction(original, max_original_bytes, site.address, probe_pools.thunks);
	if (!write_slot(site, original))
		return "no out-of-line slot within reach";
	return nullptr;
}

void release_site(Site &site)
{
	if (site.arch.slot)
		probe_pools.slots.give_back(site.arch.slot);
	site.arch.slot = 0;
}

const uint8_t *breakpoint_bytes(const Site &, size_t *length)
{
	*length = 1; // only the first byte changes
	return &int3;
}

size_t instruction_length(const Site &site)
{
	return site.arch.analysis.length;
}

InstructionVerdict probe_rules(const uint8_t *function, size_t size, size_t offset, uint64_t function_address)
{
	const DecodedFunction *decoded = decoded_function(function, size, function_address);
	const Boundary boundary =
		decoded ? decoded->map.boundary(offset) : check_instruction_boundary(function, size, offset);
	return x86::probe_rules(boundary, function, size, offset, function_address);
}

void release_resources()
{
	// Every site is released: nothing runs in a slot or detour any more.
	probe_pools.slots.release_all();
	probe_pools.detours.release_all();
	probe_pools.last_function.clear();
	probe_pools.thunks_resolved = false;
}

TrapPath trap_path_functions(const CodeGraphFacts &facts, uint64_t (*lookup)(const char *name, void *context),
			     RangeList &reached)
{
	return int3_path_functions(facts, lookup, reached);
}

// ---- The hit path's port --------------------------------------------------------

OKP_HANDLER_PATH uint64_t trapped_address(const Registers &regs)
{
	return regs.ip - 1; // int3 has executed
}

OKP_HANDLER_PATH void continue_at(Registers &regs, uint64_t address)
{
	regs.ip = address;
}

OKP_HANDLER_PATH bool emulated(const Site &site)
{
	return site.arch.analysis.execution == Execution::emulate;
}

OKP_HANDLER_PATH void emulate(const Site &site, Registers &regs)
{
	x86::emulate(site.arch.analysis, site.address, regs, stack);
}

OKP_HANDLER_PATH uint64_t boosted_copy(const Site &site)
{
	return site.arch.slot; // every copied instruction boosts
}

OKP_HANDLER_PATH uint64_t trapping_copy(const Site &site)
{
	return site.arch.slot ? site.arch.slot + slot_size : 0;
}

OKP_HANDLER_PATH uint64_t next_instruction(const Site &site)
{
	return site.address + site.arch.analysis.length;
}

OKP_HANDLER_PATH unsigned long block_interrupts(Registers &regs)
{
	const unsigned long saved = regs.flags & flag::interrupt;
	regs.flags &= ~flag::interrupt;
	return saved;
}

OKP_HANDLER_PATH void restore_interrupts(Registers &regs, unsigned long saved)
{
	regs.flags |= saved;
}

OKP_HANDLER_PATH bool breakpoint_in_text(uint64_t address)
{
	// The trap came from this byte: it is mapped.
	return *reinterpret_cast<const volatile uint8_t *>(address) == int3;
}

OKP_HANDLER_PATH void present_optimized_hit(const Site &site, Registers &regs)
{
	regs.ip = site.address + 1; // as after the int3
	regs.cs = kernel_code_segment;
	regs.orig_ax = ~0ull;
}

OKP_HANDLER_PATH uint64_t program_counter(const Registers &regs)
{
	return regs.ip;
}

OKP_HANDLER_PATH void present_hit_at(Registers &regs, uint64_t address)
{
	regs.ip = address + 1; // as after an int3
}

void flow_step(const CodeRange &function, size_t offset, FlowStep &step)
{
	x86::flow_step(function, offset, step);
}

void exit_step(const CodeRange &code, size_t offset, ExitStep &step)
{
	resolve_thunks();
	x86::exit_step(code, offset, probe_pools.thunks, step);
}

} // namespace okp::arch
