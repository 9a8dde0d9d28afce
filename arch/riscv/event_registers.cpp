// SPDX-License-Identifier: GPL-2.0
// riscv's register names for okprobe_events (core/arch_port.hpp).
#include "core/arch_port.hpp"
#include "riscv/event_registers.hpp"

namespace okp::arch {

const events::RegisterName *event_registers(size_t *count)
{
	*count = sizeof(riscv::event_registers) / sizeof(riscv::event_registers[0]);
	return riscv::event_registers;
}

} // namespace okp::arch
