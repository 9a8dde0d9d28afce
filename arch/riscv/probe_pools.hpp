// SPDX-License-Identifier: GPL-2.0
// riscv64's executable memory and breakpoint encodings, shared by its
// breakpoint hooks (breakpoints.cpp, which defines them) and its jump
// hooks (optimizer.cpp). Changed only by the probe table's writer.
#pragma once

#include "core/detour_pool.hpp"
#include "core/probe_table.hpp"
#include "core/slot_pool.hpp"
#include "riscv/detour.hpp"
#include "riscv/out_of_line.hpp"
#include "riscv/site_function.hpp"

namespace okp::riscv {

// Room for more than 10,000 probes (make bench's scale table).
constexpr int max_slot_pages = 512;

struct ProbePools {
	SlotPool<slot_size, max_slot_pages> slots;
	DetourPool detours;
	LastFunction<SiteFunction> last_function;
	// What argument-only detours do the glue's part with (the glue's
	// okp_glue_detour_task, asked once).
	DetourTask detour_task;
	bool detour_task_known = false;
};

extern ProbePools probe_pools;

// c.ebreak over a compressed instruction, ebreak over a full one: the
// breakpoint never covers the next instruction.
inline constexpr uint8_t ebreak_bytes[4] = {0x73, 0x00, 0x10, 0x00};
inline constexpr uint8_t c_ebreak_bytes[2] = {0x02, 0x90};

inline const uint8_t *breakpoint_bytes(const Site &site)
{
	return site.arch.instruction.length == 2 ? c_ebreak_bytes : ebreak_bytes;
}

// Writes the slot's two copies. The first half jumps back when it can
// without a register (jal reach) or through scratch (a register dead after
// the instruction, 0 for none); otherwise the site is not boosted.
bool write_slot(Site &site, const uint8_t *original, unsigned scratch);

} // namespace okp::riscv
