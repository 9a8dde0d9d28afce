// SPDX-License-Identifier: GPL-2.0
// The arch port: everything the generic engine (probe_table.cpp's lifecycle,
// hit_path.cpp's hits) asks of an architecture. One arch per build: its
// value types come from "site_data.hpp" (arch/<arch>/site_data.hpp, found
// through -I arch/$(SRCARCH); the host lifecycle tests use
// selftests/host/fake_arch/), its hooks are these declarations, defined in
// arch/<arch>/breakpoints.cpp (breakpoint and hit hooks) and
// arch/<arch>/optimizer.cpp (jump hooks), like Linux's
// arch/*/kernel/kprobes/core.c and opt.c.
//
// site_data.hpp provides:
//   arch::Registers  the trap's struct pt_regs, as the arch lays it out
//   arch::SiteData   what the arch keeps per site (decoded instruction,
//                    out-of-line slot, jump plan); Site holds it by value
#pragma once

#include "core/basic_blocks.hpp"
#include "core/code_graph.hpp"
#include "core/direct_hit.hpp"
#include "core/function_exits.hpp"
#include "core/registration.hpp"

#include "site_data.hpp"

#include <stddef.h>
#include <stdint.h>

namespace okp {

namespace events {
struct RegisterName;
struct RegisterLayout;
} // namespace events

struct Site;
struct Detour;
class RangeList;

// How many bytes of text a site keeps as they were before okprobe.
constexpr size_t max_original_bytes = 16;
// The most an end-anchored jump's region starts before its site
// (Site::jump_region_behind).
constexpr size_t max_jump_region_behind = 8;

namespace arch {

// The names okprobe_events' %REG takes, with their pt_regs offsets
// (arch/<arch>/event_registers.hpp), and how many.
const events::RegisterName *event_registers(size_t *count);
// Where pt_regs holds the arguments, stack pointer and return value.
const events::RegisterLayout &event_register_layout();
// Where an argument-only hit's record (struct okprobe_args) holds them:
// events::record_layout() of the above (core/event_record_layout.hpp).
const events::RegisterLayout &event_record_layout();

// The control flow of one instruction, for the basic blocks
// okprobe-cover counts (core/basic_blocks.hpp; x86::flow_step,
// riscv::flow_step).
void flow_step(const CodeRange &function, size_t offset, FlowStep &step);
// The instruction as the exit census sees it (core/function_exits.hpp;
// x86::exit_step, riscv::exit_step).
void exit_step(const CodeRange &code, size_t offset, ExitStep &step);

// ---- Lifecycle (the probe table's writer: probe mutex held, may sleep) ----

// Prepares site.arch for the instruction at site.address (original: the
// first bytes of text there, okprobe's own patches undone): decoded, its
// out-of-line copies written. Not armed. nullptr, or why it cannot.
const char *prepare_site(Site &site, const uint8_t (&original)[max_original_bytes]);
// After the grace periods (no CPU or task can reach the site or its
// copies): gives back what prepare_site took.
void release_site(Site &site);
// The breakpoint written over the site's instruction (x86: int3, one
// byte; riscv: ebreak or c.ebreak, the instruction's length) and its
// length; the instruction's length.
const uint8_t *breakpoint_bytes(const Site &site, size_t *length);
size_t instruction_length(const Site &site);
// May a breakpoint go on the instruction at offset of function?
InstructionVerdict probe_rules(const uint8_t *function, size_t size, size_t offset, uint64_t function_address);
// Module exit, after the last site is released: frees the pools.
void release_resources();
// Fills reached with the functions on the arch's trap path where a
// breakpoint cannot be taken (it would re-enter the trap before okprobe's
// handler, or land where the trap frame is not the kernel's), found by
// walking the kernel's own code from the path's roots.
TrapPath trap_path_functions(const CodeGraphFacts &facts, uint64_t (*lookup)(const char *name, void *context),
			     RangeList &reached);

// ---- Jump optimization (the writer) ----

// Whether a jump may ever replace the site's breakpoint, from the text (read
// as the original, okprobe's own patches undone) and the kernel's reserved
// ranges: nullptr and site.jump_region_length set (and
// site.jump_region_behind, when the region starts before the site), or
// why not. Asked once, when the site is created.
const char *plan_jump(Site &site, const OriginalText &text);
// Builds the planned site's detour code and fills detour (not yet
// published); direct says whether its one probe's handler may be called
// from the detour itself (core/direct_hit.hpp; an arch may ignore it).
// detour.args_record asks for an argument-only detour (its frame struct
// okprobe_args, its entry okp_core_args_hit), only where
// has_args_detour(). nullptr, or why it cannot (no memory within reach).
const char *build_detour(Site &site, const DirectHit &direct, Detour &detour);
// Whether build_detour builds argument-only detours.
bool has_args_detour();
// After the grace periods (no CPU or task is inside it): gives the
// detour's code back.
void release_detour(const Detour &detour);
// Armed, waiting sites whose region no task is inside: the breakpoint
// becomes the jump, in one breakpoint-first pass for all of them.
void optimize(Site *const *sites, size_t count);
// Optimized sites: the jump becomes the breakpoint again, in one pass.
void unoptimize(Site *const *sites, size_t count);

// ---- The hit path (handler context: no lock, no allocation) ----

// The address of the breakpoint a trap reports (x86: ip - 1, after int3).
uint64_t trapped_address(const Registers &regs);
// Where the CPU goes on when the trap returns.
void continue_at(Registers &regs, uint64_t address);
// Whether the site's instruction is computed on regs (emulate) rather than
// run from a copy.
bool emulated(const Site &site);
void emulate(const Site &site, Registers &regs);
// The copy that jumps back by itself (no post trap), or 0 when the site has
// none.
uint64_t boosted_copy(const Site &site);
// The copy that ends in a breakpoint (the post trap, right after the
// copied instruction), or 0 for an emulated site.
uint64_t trapping_copy(const Site &site);
// The address after the probed instruction.
uint64_t next_instruction(const Site &site);
// The trapping copy runs with interrupts off until its post trap: clears
// them in the state the trap returns to and says what to give back.
unsigned long block_interrupts(Registers &regs);
void restore_interrupts(Registers &regs, unsigned long saved);
// Whether any breakpoint (okprobe's or another tool's) is in the text at
// address now.
bool breakpoint_in_text(uint64_t address);
// An optimized hit: regs as a breakpoint hit at the site presents them.
void present_optimized_hit(const Site &site, Registers &regs);
// The pc in regs, and regs' pc set as a breakpoint hit at address shows
// it (x86: address + 1; riscv: address): what ftrace entry presents.
uint64_t program_counter(const Registers &regs);
void present_hit_at(Registers &regs, uint64_t address);

} // namespace arch
} // namespace okp
