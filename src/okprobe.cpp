// SPDX-License-Identifier: GPL-2.0
// The module's single C++ translation unit.
//
// Every C++ source of the core is compiled here as one unit: with several C++
// objects linked by ld -r, inline functions and template instances emitted in
// more than one object were deduplicated while __mcount_loc and objtool's
// .return_sites still referenced the discarded copies. The host tests compile
// the same files one by one.
#include "core/runtime.cpp"
#include "core/core_state.cpp"
#include "core/range_list.cpp"
#include "core/symbol_description.cpp"
#include "core/symbol_resolver.cpp"
#include "core/registration.cpp"
#include "core/function_text.cpp"
#include "core/code_graph.cpp"
#include "core/basic_blocks.cpp"
#include "core/function_exits.cpp"
#include "core/probe_events.cpp"
#include "core/probe_events_arguments.cpp"
#include "core/probe_events_format.cpp"
#include "core/probe_events_btf.cpp"
#include "core/btf.cpp"
#include "core/event_fetch.cpp"

// The arch's pure analysis (decoders, rules, planners) from
// arch/$(SRCARCH)/analysis_sources.inc, then the generic engine (lifecycle
// and hit path), then the arch's hooks it calls
// (arch/$(SRCARCH)/probe_sources.inc).
#include "analysis_sources.inc"
#include "core/probe_table.cpp"
#include "core/site_arming.cpp"
#include "core/jump_optimizer.cpp"
#include "core/ftrace_sites.cpp"
#include "core/lost_text.cpp"
#include "core/hit_path.cpp"
#include "probe_sources.inc"
#include "core/probe_api.cpp"
#include "core/return_plan.cpp"
#include "core/return_exits.cpp"
#include "core/events_api.cpp"
