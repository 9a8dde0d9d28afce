// SPDX-License-Identifier: GPL-2.0
// What an optimized site's detour needs to run its one probe's handler by
// itself: the core's entry (okp_core_optimized_hit, okp_core_args_hit)
// does the same for any number of probes, with a loop, its checks and an
// indirect call, about 50 instructions of a 106-instruction hit on x86
// (tools/trace-hit).
//
// The core decides when the detour is built (ProbeTable::direct_hit): a
// site with exactly one active probe that has a pre_handler and no
// post_handler, or (for an argument-only detour) an args_handler. What
// can change after that is summed up by the writer in one word of the
// site, Site::direct_probe: the probe while it is still all the site has,
// active, the text okprobe's and the table enabled, else nullptr
// (ProbeTable::refresh_direct_probe). At every hit the detour checks, and
// any difference takes the core's entry:
//   this CPU is inside no other hit (okp_cpu_state::active_site == 0)
//   site->direct_probe == probe
//   the probe's handler field is still handler (a client may replace a
//   registered probe's handler; okprobe_selftest_lifecycle does)
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
	// Offsets in struct Site.
	int32_t direct_probe = 0; // the gate, a pointer
	int32_t first_hits = 0;	  // hits[0], an unsigned long
	// Offset in struct okprobe of the handler called: pre_handler, or
	// args_handler.
	int32_t probe_handler = 0;

	bool wanted() const { return site != 0; }
};

} // namespace okp
