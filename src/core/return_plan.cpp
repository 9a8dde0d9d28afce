// SPDX-License-Identifier: GPL-2.0
// The return-probe planner (return_plan.hpp) and its C entry,
// okp_core_plan_return(), which src/kernel/return_probes.c calls with the
// facts of each okretprobe_register() request.
#include "core/return_plan.hpp"

#include "core/core_api.h"
#include "core/errno.hpp"

#include <okprobe.h>

namespace okp {

Result<ReturnStrategy> plan_return(const ReturnRequest &request)
{
	if (request.registered)
		return refuse(error::einval, return_refusal::registered);
	if (!request.has_rethook)
		return refuse(error::eopnotsupp, return_refusal::no_rethook);
	if (request.data_size > max_return_data)
		return refuse(error::einval, return_refusal::data_size);
	if (request.offset || (!request.has_symbol_name && !request.at_function_start))
		return refuse(error::einval, return_refusal::not_entry);
	if (names_cold_piece(request.name))
		return refuse(error::einval, return_refusal::cold_piece);
	// Nothing to carry from the entry to the return (no entry_handler, no
	// data), and the client did not ask for the return address to be
	// hooked (OKPROBE_FLAG_RETURN_RETHOOK; other flags are kp's
	// registration's to refuse).
	const bool carries_nothing = !request.has_entry_handler && !request.data_size;
	if (carries_nothing && !(request.flags & ~static_cast<unsigned int>(OKPROBE_FLAG_DISABLED)))
		return ReturnStrategy::at_exits;
	return ReturnStrategy::at_entry;
}

} // namespace okp

using namespace okp;

extern "C" int okp_core_plan_return(const struct okp_return_request *request, enum okp_return_strategy *strategy,
				    const char **why)
{
	if (!request) {
		*why = return_refusal::no_probe;
		return -error::einval;
	}
	ReturnRequest facts;
	facts.registered = request->registered;
	facts.has_rethook = request->has_rethook;
	facts.data_size = request->data_size;
	facts.has_entry_handler = request->has_entry_handler;
	facts.offset = request->offset;
	facts.flags = request->flags;
	facts.has_symbol_name = request->has_symbol_name;
	facts.at_function_start = request->at_function_start;
	facts.name = Text::of(request->name);
	const Result<ReturnStrategy> planned = plan_return(facts);
	if (!planned) {
		*why = planned.why();
		return -planned.error();
	}
	*strategy = planned.value() == ReturnStrategy::at_exits ? OKP_RETURN_AT_EXITS : OKP_RETURN_AT_ENTRY;
	return 0;
}
