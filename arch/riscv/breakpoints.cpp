// SPDX-License-Identifier: GPL-2.0
// riscv64's breakpoint hooks: a site's decoded instruction and its
// out-of-line slot, ebreak in and out of the text, the hit path's port
// (core/arch_port.hpp) and the trap path's roots. The lifecycle is
// src/core/probe_table.cpp's, the hit path src/core/hit_path.cpp's; the
// jump hooks are optimizer.cpp's.
//
// A site's slot is written before the site is published and given back
// only in release_site(), after the grace periods: a hart may be executing
// the trapping copy (interrupts off) until its post trap arrives.
//
// The registers: riscv reports a breakpoint with epc at the ebreak, so
// handlers see regs->epc == the probed address (include/okprobe.h).
#include "core/code_graph.hpp"
#include "core/core_api.h"
#include "core/handler_path.hpp"
#include "core/probe_table.hpp"
#include "riscv/glue_services.h"
#include "riscv/out_of_line.hpp"
#include "riscv/probe_pools.hpp"
#include "riscv/probe_rules.hpp"
#include "riscv/trap_window.hpp"

#include <okprobe.h>

namespace okp::riscv {

constinit ProbePools probe_pools;

namespace {

uint64_t trapping_copy_of(const Site &site)
{
	return site.arch.slot + slot_half;
}

uint64_t next_instruction_of(const Site &site)
{
	return site.address + site.arch.instruction.length;
}

} // namespace

bool write_slot(Site &site, const uint8_t *original, unsigned scratch)
{
	arch::SiteData &data = site.arch;
	uint8_t bytes[slot_size] = {};
	uint8_t half[slot_half];
	if (!build_copy(original, data.instruction.length, trapping_copy_of(site), next_instruction_of(site),
			SlotEnd::breakpoint, 0, half))
		return false;
	__builtin_memcpy(bytes + slot_half, half, slot_half);
	data.boosted = build_copy(original, data.instruction.length, data.slot, next_instruction_of(site),
				  SlotEnd::jump_back, scratch, half) != 0;
	if (data.boosted)
		__builtin_memcpy(bytes, half, slot_half);
	const okp_text_patch copies = {data.slot, bytes, slot_size};
	okp_glue_code_write_batch(&copies, 1);
	return true;
}

} // namespace okp::riscv

namespace okp::arch {

using namespace okp::riscv;

// ---- Lifecycle ----------------------------------------------------------------

const char *prepare_site(Site &site, const uint8_t (&original)[max_original_bytes])
{
	SiteData &data = site.arch;
	data.instruction = decode_instruction(original, max_original_bytes);
	data.simulated = is_simulated(data.instruction);
	if (data.simulated)
		return nullptr;
	data.slot = probe_pools.slots.take();
	if (!data.slot || !write_slot(site, original, 0)) {
		if (data.slot)
			probe_pools.slots.give_back(data.slot);
		data.slot = 0;
		return "no out-of-line slot within reach";
	}
	return nullptr;
}

void release_site(Site &site)
{
	if (site.arch.slot)
		probe_pools.slots.give_back(site.arch.slot);
	site.arch.slot = 0;
}

const uint8_t *breakpoint_bytes(const Site &site, size_t *length)
{
	*length = site.arch.instruction.length; // never over the next one
	return riscv::breakpoint_bytes(site);
}

size_t instruction_length(const Site &site)
{
	return site.arch.instruction.length;
}

InstructionVerdict probe_rules(const uint8_t *function, size_t size, size_t offset, uint64_t function_address)
{
	return riscv::probe_rules(function, size, offset, function_address);
}

void release_resources()
{
	// Every site is released: nothing runs in a slot or detour any more.
	probe_pools.slots.release_all();
	probe_pools.detours.release_all();
	probe_pools.last_function.clear();
}

// riscv's trap path where no breakpoint may be taken: the exit's calls
// after it sets sscratch (trap_window.hpp).
TrapPath trap_path_functions(const CodeGraphFacts &facts, uint64_t (*lookup)(const char *name, void *context),
			     RangeList &reached)
{
	struct ExitCode {
		uint8_t bytes[1024]; // ret_from_exception to its sret, and more
	};
	TrapPath result;
	const uint64_t exit = lookup("ret_from_exception", facts.context);
	if (!exit) {
		result.why = "no ret_from_exception in this kernel";
		return result;
	}
	const Owned<ExitCode> code = Owned<ExitCode>::make();
	if (!code) {
		result.why = "out of memory";
		return result;
	}
	const size_t read = facts.read_text(exit, code->bytes, sizeof(code->bytes), facts.context);
	return sscratch_window_functions(CodeRange{code->bytes, exit, read}, lookup, facts, reached);
}

// ---- The hit path's port --------------------------------------------------------

OKP_HANDLER_PATH uint64_t trapped_address(const Registers &regs)
{
	return regs.epc; // the ebreak itself
}

OKP_HANDLER_PATH void continue_at(Registers &regs, uint64_t address)
{
	regs.epc = address;
}

OKP_HANDLER_PATH bool emulated(const Site &site)
{
	return site.arch.simulated;
}

OKP_HANDLER_PATH void emulate(const Site &site, Registers &regs)
{
	simulate(site.arch.instruction, site.address, regs);
}

OKP_HANDLER_PATH uint64_t boosted_copy(const Site &site)
{
	return site.arch.boosted ? site.arch.slot : 0;
}

OKP_HANDLER_PATH uint64_t trapping_copy(const Site &site)
{
	return site.arch.slot ? trapping_copy_of(site) : 0;
}

OKP_HANDLER_PATH uint64_t next_instruction(const Site &site)
{
	return next_instruction_of(site);
}

// sret takes the interrupt state from SPIE; the trap returns straight into
// a context with interrupts off (trap_break.S), without the kernel's exit
// work.
OKP_HANDLER_PATH unsigned long block_interrupts(Registers &regs)
{
	const unsigned long saved = regs.status & status_spie;
	regs.status &= ~status_spie;
	return saved;
}

OKP_HANDLER_PATH void restore_interrupts(Registers &regs, unsigned long saved)
{
	regs.status |= saved;
}

OKP_HANDLER_PATH bool breakpoint_in_text(uint64_t address)
{
	alignas(2) uint8_t bytes[4] = {};
	const size_t read = okp_glue_read_trap_text(address, bytes, sizeof(bytes));
	const uint32_t half = bytes[0] | uint32_t(bytes[1]) << 8;
	if (read >= 2 && half == c_ebreak_encoding)
		return true;
	return read == 4 && (half | uint32_t(bytes[2]) << 16 | uint32_t(bytes[3]) << 24) == ebreak_encoding;
}

OKP_HANDLER_PATH void present_optimized_hit(const Site &site, Registers &regs)
{
	regs.epc = site.address; // as at the ebreak
}

OKP_HANDLER_PATH uint64_t program_counter(const Registers &regs)
{
	return regs.epc;
}

OKP_HANDLER_PATH void present_hit_at(Registers &regs, uint64_t address)
{
	regs.epc = address; // as at an ebreak
}

void flow_step(const CodeRange &function, size_t offset, FlowStep &step)
{
	riscv::flow_step(function, offset, step);
}

void exit_step(const CodeRange &code, size_t offset, ExitStep &step)
{
	riscv::exit_step(code, offset, step);
}

} // namespace okp::arch
