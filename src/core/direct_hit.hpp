// SPDX-License-Identifier: GPL-2.0
// What an optimized site's detour needs to run its one probe's handler by
// itself: the core's entry (okp_core_optimized_hit, okp_core_args_hit)
// does the same for any number of probes, with a loop, its checks and an
// indirect call, about 50 instructions of a 106-instruction hit on x86
// (tools/trace-hit).
//
// The core decides when the detour is built (ProbeTable::direct_hit): a
// site with exactly one active probe that has a pre_handler and no
// post_handler, or (for an argument-only detour) an args_handler.
// Everything that can change after that is checked live at every hit, in
// this order, and any difference takes the core's entry:
//   this CPU is inside no other hit (okp_cpu_state::active_site == 0)
//   site->probe_slots == 1 and site->probes[0] == probe
//   site->lost == nullptr and the table's all_enabled byte is set
//   !(probe->flags & inactive_flags) and the handler field == handler
// then, as the core would: active_site = site; site->hits[0] += 1
// (atomically); handler(probe, regs or record); active_site = 0. The
// handler is called directly (a call rel32), a pre_handler's return value
// ignored as opt_pre_handler() does.
#pragma once

#include <stdint.h>

namespace okp {

struct DirectHit {
	uint64_t site = 0; // 0: the detour always calls the core's entry
	uint64_t probe = 0;
	uint64_t handler = 0;
	uint64_t all_enabled = 0; // the address of a bool
	// Offsets in struct Site.
	int32_t slots = 0;	 // probe_slots, one byte
	int32_t first_probe = 0; // probes[0], a pointer
	int32_t first_hits = 0;	 // hits[0], an unsigned long
	int32_t lost = 0;	 // lost, a pointer
	// Offsets in struct okprobe.
	int32_t probe_flags = 0;   // flags, an unsigned int
	int32_t probe_handler = 0; // pre_handler, or args_handler
	uint8_t inactive_flags = 0;

	bool wanted() const { return site != 0; }
};

} // namespace okp
