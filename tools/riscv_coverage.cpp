// SPDX-License-Identifier: GPL-2.0
// okprobe's riscv64 coverage: over every function of a vmlinux, how many
// instructions a breakpoint probe can take, how many of those the jump
// optimizer can turn into auipc+jalr or auipc+c.jr (with and without
// relocating PC-relative and control-flow window instructions), and why
// the rest cannot. Run through tools/riscv-coverage.
//
//   okprobe_riscv_coverage VMLINUX SYSTEM.MAP [TITLE]
#include "riscv_kernel.hpp"

#include <iostream>

int main(int argc, char **argv)
{
	if (argc < 3) {
		std::cerr << "usage: " << argv[0] << " VMLINUX SYSTEM.MAP [TITLE]\n";
		return 2;
	}
	okp::riscv::host::Kernel kernel;
	if (!okp::riscv::host::load_kernel(argv[1], argv[2], kernel)) {
		std::cerr << argv[0] << ": " << argv[1] << " is not a riscv64 vmlinux with symbols in " << argv[2]
			  << "\n";
		return 1;
	}
	const okp::riscv::host::Census census = okp::riscv::host::take_census(kernel);
	std::cout << okp::riscv::host::format_census(census, argc > 3 ? argv[3] : argv[1]);
	return census.relocation_failed == 0 ? 0 : 1;
}
