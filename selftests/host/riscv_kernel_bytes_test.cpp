// SPDX-License-Identifier: GPL-2.0
// The riscv64 analysis over every function of a riscv test kernel (vmlinux
// with symbols, and its System.map): decodes each function to its end and
// prints a census of breakpoint probes and jump optimization.
//
// Needs OKPROBE_RISCV_VMLINUX (and OKPROBE_RISCV_SYSTEM_MAP, default: the
// System.map next to it), e.g. a directory of ~/.cache/okprobe/riscv-kernel.
#include "riscv_kernel.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

namespace {

using namespace okp::riscv;
using namespace okp::riscv::host;

const Kernel *load()
{
	static Kernel kernel;
	static bool loaded = false, ok = false;
	if (loaded)
		return ok ? &kernel : nullptr;
	loaded = true;
	const char *vmlinux = std::getenv("OKPROBE_RISCV_VMLINUX");
	if (!vmlinux)
		return nullptr;
	const char *map = std::getenv("OKPROBE_RISCV_SYSTEM_MAP");
	std::string system_map = map ? map : std::string(vmlinux);
	if (!map)
		system_map = system_map.substr(0, system_map.rfind('/') + 1) + "System.map";
	ok = load_kernel(vmlinux, system_map, kernel);
	EXPECT_TRUE(ok) << vmlinux << " / " << system_map;
	return ok ? &kernel : nullptr;
}

TEST(RiscvKernelBytes, EveryFunctionDecodesAndTheCensusAddsUp)
{
	if (!std::getenv("OKPROBE_RISCV_VMLINUX"))
		GTEST_SKIP() << "OKPROBE_RISCV_VMLINUX not set";
	const Kernel *kernel = load();
	ASSERT_NE(kernel, nullptr) << "the vmlinux named by OKPROBE_RISCV_VMLINUX did not load";
	const Census census = take_census(*kernel);
	std::cout << format_census(census, std::string("riscv64 census of ") + std::getenv("OKPROBE_RISCV_VMLINUX"));

	EXPECT_GT(census.functions, 10000);
	// Function bodies are code: all but the PE/COFF header's data decode.
	EXPECT_GE(census.fully_decoded * 1000, census.functions * 999);
	EXPECT_LE(census.undecodable_at.size(), 10u);
	EXPECT_GT(census.instructions, 500000);
	EXPECT_EQ(census.classes.count("illegal"), 0u) << "only padding fails to decode";
	// The kernel is RVC: most of it is compressed, and every class shows.
	long compressed = 0;
	for (const auto &[name, count] : census.operations)
		if (name.rfind("c.", 0) == 0)
			compressed += count;
	EXPECT_GT(compressed * 2, census.instructions);
	for (const char *kind : {"plain", "load", "store", "amo", "pc-relative", "direct jump", "indirect jump",
				 "conditional branch", "system", "fence.i"})
		EXPECT_GT(census.classes.count(kind) ? census.classes.at(kind) : 0, 0) << kind;
	// Nearly everything takes a breakpoint; BUG()/WARN() ebreaks do not.
	EXPECT_GT(census.probeable * 100, census.instructions * 95);
	EXPECT_GT(census.breakpoint_refusals.at("an ebreak: someone else's breakpoint or a bug/warning trap"), 1000);
	// Every plan relocates, within the detour's bound, from the lowest
	// module address.
	EXPECT_EQ(census.relocation_failed, 0);
	EXPECT_LE(census.relocated_bytes_max, max_relocated_window);
	// Relocating the window is the lever: it must win a lot.
	EXPECT_GT(census.optimizable, census.optimizable_without_relocation * 3 / 2);
	EXPECT_GT(census.optimizable * 2, census.probeable);
	EXPECT_GT(census.same_register * 2, census.optimizable);
	for (OptimizationRefusal refusal :
	     {OptimizationRefusal::indirect_jump, OptimizationRefusal::window_past_function,
	      OptimizationRefusal::window_not_relocatable, OptimizationRefusal::call_inside_window,
	      OptimizationRefusal::jump_into_window, OptimizationRefusal::no_entry_register,
	      OptimizationRefusal::no_return_register, OptimizationRefusal::lr_sc_sequence})
		EXPECT_GT(census.refusals.count(optimization_refusal_text(refusal)), 0u)
			<< optimization_refusal_text(refusal);
}

} // namespace
