// SPDX-License-Identifier: GPL-2.0
// x86's register names for okprobe_events (core/arch_port.hpp).
#include "core/arch_port.hpp"
#include "core/event_record_layout.hpp"
#include "core/handler_path.hpp"
#include "x86/event_registers.hpp"

#include <okprobe.h>

namespace okp::arch {

const events::RegisterName *event_registers(size_t *count)
{
	*count = sizeof(x86::event_registers) / sizeof(x86::event_registers[0]);
	return x86::event_registers;
}

// At every hit.
OKP_HANDLER_PATH const events::RegisterLayout &event_register_layout()
{
	return x86::event_register_layout;
}

OKP_HANDLER_PATH const events::RegisterLayout &event_record_layout()
{
	static constexpr events::RegisterLayout layout = events::record_layout(x86::event_register_layout);
	static_assert(events::describes_record<okprobe_args>(layout), "struct okprobe_args");
	return layout;
}

} // namespace okp::arch
