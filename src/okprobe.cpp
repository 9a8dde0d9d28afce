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

#if defined(__x86_64__)
#include "x86/instruction_decoder.cpp"
#include "x86/instruction_analysis.cpp"
#include "x86/out_of_line.cpp"
#include "x86/jump_optimization.cpp"
#include "x86/detour.cpp"
#include "x86/probe_rules.cpp"
#include "x86/trap_path.cpp"
// Before the arch's handlers, so that their fast paths can inline it.
#include "core/probe_table.cpp"
#include "x86/breakpoint_probes.cpp"
#include "core/probe_api.cpp"
#elif defined(__riscv)
#include "riscv/instruction_decoder.cpp"
#include "riscv/probe_rules.cpp"
#include "riscv/function_analysis.cpp"
#include "riscv/jump_optimization.cpp"
#include "riscv/detour.cpp"
#include "riscv/out_of_line.cpp"
#include "riscv/trap_window.cpp"
#include "core/probe_table.cpp"
#include "riscv/breakpoint_probes.cpp"
#include "core/probe_api.cpp"
#endif
