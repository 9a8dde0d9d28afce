// SPDX-License-Identifier: GPL-2.0
// An argument-only probe's handler (okprobe.args_handler) called where a
// hit has the registers as struct pt_regs: a breakpoint hit, a detour that
// saved them all (another kind of probe shares the site, or the site's
// detour predates the probe), an entry through ftrace. The record
// (struct okprobe_args) is made from pt_regs through the arch's register
// layout, the one okprobe_events reads arguments by, and what the handler
// may change (the argument and return value registers) is written back, so
// the handler sees and does the same as from its own detour, which builds
// the record from the registers themselves.
//
// Handler context: no lock, no allocation.
#pragma once

#include "core/arch_port.hpp"
#include "core/event_fetch.hpp"
#include "core/handler_path.hpp"

#include <okprobe.h>

namespace okp {

// x86's record has the return value register apart (ax); riscv's return
// value is arg[0] (a0).
template <typename Record>
concept ReturnValueApart = requires(Record record)
{
	record.ax;
};

namespace args_record {

OKP_HANDLER_PATH [[gnu::always_inline]] inline unsigned long &word_at(arch::Registers &regs, uint16_t offset)
{
	return *reinterpret_cast<unsigned long *>(reinterpret_cast<uint8_t *>(&regs) + offset);
}

// The return value register's own field, where the record has one
// (templates, so that the other arch's record is never asked for it).
template <typename Record>
OKP_HANDLER_PATH [[gnu::always_inline]] inline void load_return_value(arch::Registers &regs, uint16_t offset,
								      Record &record)
{
	if constexpr (ReturnValueApart<Record>)
		record.ax = word_at(regs, offset);
}

template <typename Record>
OKP_HANDLER_PATH [[gnu::always_inline]] inline void store_return_value(const Record &record, arch::Registers &regs,
								       uint16_t offset)
{
	if constexpr (ReturnValueApart<Record>)
		word_at(regs, offset) = record.ax;
}

} // namespace args_record

// The record of the registers regs holds, the probed address being address.
OKP_HANDLER_PATH [[gnu::always_inline]] inline void make_args_record(arch::Registers &regs, uint64_t address,
								     okprobe_args &record)
{
	const events::RegisterLayout &layout = arch::event_register_layout();
	for (int i = 0; i < OKPROBE_ARG_REGS; ++i)
		record.arg[i] = i < layout.argument_count ? args_record::word_at(regs, layout.arguments[i]) : 0;
	args_record::load_return_value(regs, layout.return_value, record);
	record.ip = address;
	record.sp = args_record::word_at(regs, layout.stack_pointer);
}

// What a handler may change, back into regs; ip and sp are read-only.
OKP_HANDLER_PATH [[gnu::always_inline]] inline void write_back_args_record(const okprobe_args &record,
									   arch::Registers &regs)
{
	const events::RegisterLayout &layout = arch::event_register_layout();
	for (int i = 0; i < OKPROBE_ARG_REGS && i < layout.argument_count; ++i)
		args_record::word_at(regs, layout.arguments[i]) = record.arg[i];
	args_record::store_return_value(record, regs, layout.return_value);
}

// Runs probe's args_handler over regs at address.
OKP_HANDLER_PATH [[gnu::always_inline]] inline void run_args_handler(okprobe *probe, arch::Registers &regs,
								     uint64_t address)
{
	okprobe_args record;
	make_args_record(regs, address, record);
	probe->args_handler(probe, &record);
	write_back_args_record(record, regs);
}

} // namespace okp
