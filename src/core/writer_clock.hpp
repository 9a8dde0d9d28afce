// SPDX-License-Identifier: GPL-2.0
// Where the writer's time goes: nanoseconds and counts per step of a
// registration (and of the optimizer's passes and unregistration), summed
// since the module loaded. debugfs okprobe/writer_steps shows them; make
// bench turns them into microseconds per registration, and times one
// optimizer pass for one more probe after each scale pass, so the cost of
// each step (the decode above all, under QEMU) is measured in every run,
// not argued. Writer only (probe mutex held): plain integers.
#pragma once

#include "core/core_api.h"

#include <stddef.h>
#include <stdint.h>

namespace okp {

enum class WriterStep : uint8_t {
	register_probe,	  // the whole of ProbeTable::register_probe
	proof,		  // check_registration before the claim
	claim,		  // okp_glue_claim_function
	recheck,	  // check_registration after the claim
	plan,		  // arch::plan_jump (the whole function decoded)
	arm,		  // the breakpoint written (or noted, in an arm batch)
	arm_batch,	  // an arm batch written: its breakpoints, its entries into ftrace
	detour,		  // a detour built and published
	optimize,	  // the optimizer's jumps written
	unregister,	  // the whole of ProbeTable::unregister_probes
	optimizer_begin,  // the whole of ProbeTable::optimizer_begin
	optimizer_finish, // the whole of ProbeTable::optimizer_finish
	count
};

constexpr const char *writer_step_name(WriterStep step)
{
	constexpr const char *names[] = {"register", "proof",	   "claim",	      "recheck",
					 "plan",     "arm",	   "arm_batch",	      "detour",
					 "optimize", "unregister", "optimizer_begin", "optimizer_finish"};
	static_assert(sizeof(names) / sizeof(names[0]) == size_t(WriterStep::count));
	return names[size_t(step)];
}

struct WriterClock {
	uint64_t ns[size_t(WriterStep::count)] = {};
	uint64_t times[size_t(WriterStep::count)] = {};
};

// Adds the time from its construction to its end to step.
class StepTimer {
public:
	StepTimer(WriterClock &clock, WriterStep step) : clock_(clock), step_(step), start_(okp_glue_now_ns()) {}
	~StepTimer()
	{
		clock_.ns[size_t(step_)] += okp_glue_now_ns() - start_;
		++clock_.times[size_t(step_)];
	}
	StepTimer(const StepTimer &) = delete;
	StepTimer &operator=(const StepTimer &) = delete;

private:
	WriterClock &clock_;
	WriterStep step_;
	uint64_t start_;
};

} // namespace okp
