// SPDX-License-Identifier: GPL-2.0
// riscv's register names for okprobe_events (core/arch_port.hpp).
#include "core/arch_port.hpp"
#include "core/event_record_layout.hpp"
#include "core/handler_path.hpp"
#include "riscv/event_registers.hpp"

#include <okprobe.h>

namespace okp::arch {

const events::RegisterName *event_registers(size_t *count)
{
	*count = sizeof(riscv::event_registers) / sizeof(riscv::event_registers[0]);
	return riscv::event_registers;
}

// At every hit.
OKP_HANDLER_PATH const events::RegisterLayout &event_register_layout()
{
	return riscv::event_register_layout;
}

OKP_HANDLER_PATH const events::RegisterLayout &event_record_layout()
{
	static constexpr events::RegisterLayout layout = events::record_layout(riscv::event_register_layout);
	static_assert(events::describes_record<okprobe_args>(layout), "struct okprobe_args");
	return layout;
}

} // namespace okp::arch
