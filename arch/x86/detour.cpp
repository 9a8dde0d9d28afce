// SPDX-License-Identifier: GPL-2.0
#include "x86/detour.hpp"

namespace okp::x86 {
namespace {

// push $0x18 (__KERNEL_DS); push %rsp; pushfq; addq $8,8(%rsp) (the pushed
// sp is the probed code's once the ss slot is counted; the add comes after
// pushfq because it changes the flags); sub $24,%rsp; then push di, si, dx,
// cx, ax, r8-r11, bx, bp, r12-r15 (pt_regs from the top down).
constexpr uint8_t save[] = {0x6a, 0x18, 0x54, 0x9c, 0x48, 0x83, 0x44, 0x24, 0x08, 0x08, 0x48, 0x83, 0xec,
			    0x18, 0x57, 0x56, 0x52, 0x51, 0x50, 0x41, 0x50, 0x41, 0x51, 0x41, 0x52, 0x41,
			    0x53, 0x53, 0x55, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57};
// mov %rsp,%rsi; movabs $context,%rdi (imm64 follows)
constexpr uint8_t call_setup[] = {0x48, 0x89, 0xe6, 0x48, 0xbf};
// pop r15-r12, bp, bx, r11-r8, ax, cx, dx, si, di; add $24,%rsp; popfq;
// lea 16(%rsp),%rsp
constexpr uint8_t restore[] = {0x41, 0x5f, 0x41, 0x5e, 0x41, 0x5d, 0x41, 0x5c, 0x5d, 0x5b, 0x41,
			       0x5b, 0x41, 0x5a, 0x41, 0x59, 0x41, 0x58, 0x58, 0x59, 0x5a, 0x5e,
			       0x5f, 0x48, 0x83, 0xc4, 0x18, 0x9d, 0x48, 0x8d, 0x64, 0x24, 0x10};
constexpr size_t plain_frame_size = sizeof(save) + sizeof(call_setup) + 8 + 5 + sizeof(restore);
static_assert(plain_frame_size == 88);

bool fast_path(const DetourCall &call)
{
	return call.preempt_count != 0;
}

// movabs $cpu_states,%rdx; add %gs:this_cpu_off,%rdx; incl %gs:preempt_count
constexpr size_t per_cpu_before = 10 + 9 + 8;
// decl %gs:preempt_count [; jnz 1f; call preempt_schedule]
size_t per_cpu_after(const DetourCall &call)
{
	return 8 + (call.preempt_schedule ? 2 + 5 : 0);
}

bool rel32_from(uint64_t end, uint64_t target, uint8_t *where)
{
	const int64_t relative = static_cast<int64_t>(target - end);
	if (relative < INT32_MIN || relative > INT32_MAX)
		return false;
	for (int i = 0; i < 4; ++i)
		where[i] = static_cast<uint8_t>(static_cast<uint32_t>(relative) >> (8 * i));
	return true;
}

} // namespace

size_t detour_frame_size(const DetourCall &call)
{
	return plain_frame_size + (fast_path(call) ? per_cpu_before + per_cpu_after(call) : 2);
}

namespace {

template <size_t count> void put_bytes(uint8_t *out, size_t &at, const uint8_t (&bytes)[count])
{
	for (uint8_t byte : bytes)
		out[at++] = byte;
}

constexpr uint8_t movabs_rdx[] = {0x48, 0xba};
constexpr uint8_t add_gs_rdx[] = {0x65, 0x48, 0x03, 0x14, 0x25}; // disp32 follows
constexpr uint8_t incl_gs[] = {0x65, 0xff, 0x04, 0x25};		 // disp32 follows
constexpr uint8_t decl_gs[] = {0x65, 0xff, 0x0c, 0x25};		 // disp32 follows
constexpr uint8_t xor_edx[] = {0x31, 0xd2};
constexpr uint8_t jnz_over_call[] = {0x75, 0x05, 0xe8}; // rel32 follows

void put_le(uint8_t *out, size_t &at, uint64_t value, int bytes)
{
	for (int i = 0; i < bytes; ++i)
		out[at++] = static_cast<uint8_t>(value >> (8 * i));
}

} // namespace

size_t build_detour(const OptimizationPlan &plan, const uint8_t *region, uint64_t address, const Thunks &thunks,
		    uint64_t detour_address, const DetourCall &call, uint8_t *out, size_t capacity)
{
	if (plan.refusal != OptimizationRefusal::none || capacity < detour_frame_size(call))
		return 0;
	size_t at = 0;
	for (uint8_t byte : save)
		out[at++] = byte;
	if (fast_path(call)) {
		put_bytes(out, at, movabs_rdx); // movabs $cpu_states,%rdx
		put_le(out, at, call.cpu_states, 8);
		put_bytes(out, at, add_gs_rdx); // add %gs:this_cpu_off,%rdx
		put_le(out, at, static_cast<uint32_t>(call.this_cpu_off), 4);
		put_bytes(out, at, incl_gs); // incl %gs:__preempt_count
		put_le(out, at, static_cast<uint32_t>(call.preempt_count), 4);
	} else {
		put_bytes(out, at, xor_edx); // no CPU state
	}
	for (uint8_t byte : call_setup)
		out[at++] = byte;
	put_le(out, at, call.context, 8);
	out[at++] = 0xe8; // call entry
	if (!rel32_from(detour_address + at + 4, call.entry, out + at))
		return 0;
	at += 4;
	if (fast_path(call)) {
		put_bytes(out, at, decl_gs); // decl %gs:__preempt_count
		put_le(out, at, static_cast<uint32_t>(call.preempt_count), 4);
		if (call.preempt_schedule) {
			put_bytes(out, at, jnz_over_call); // jnz 1f; call preempt_schedule
			if (!rel32_from(detour_address + at + 4, call.preempt_schedule, out + at))
				return 0;
			at += 4;
		}
	}
	for (uint8_t byte : restore)
		out[at++] = byte;
	const size_t region_length =
		relocate_region(plan, region, address, thunks, detour_address + at, out + at, capacity - at);
	return region_length ? at + region_length : 0;
}

namespace {

bool fits_disp32(uint64_t value)
{
	const int64_t signed_value = static_cast<int64_t>(value);
	return signed_value >= INT32_MIN && signed_value <= INT32_MAX;
}

constexpr uint8_t incq_gs_absolute[] = {0x65, 0x48, 0xff, 0x04, 0x25}; // disp32 follows
constexpr uint8_t push_rax = 0x50, pop_rax = 0x58, pushfq = 0x9c, popfq = 0x9d;
constexpr uint8_t movabs_rax[] = {0x48, 0xb8};		       // imm64 follows
constexpr uint8_t incq_gs_at_rax[] = {0x65, 0x48, 0xff, 0x00}; // incq %gs:(%rax)

} // namespace

size_t counting_prologue_size(const CounterCall &counter)
{
	const size_t flags = counter.flags_dead ? 0 : 2;
	return flags + (fits_disp32(counter.cell) ? sizeof(incq_gs_absolute) + 4
						  : 1 + sizeof(movabs_rax) + 8 + sizeof(incq_gs_at_rax) + 1);
}

size_t build_counting_detour(const OptimizationPlan &plan, const uint8_t *region, uint64_t address,
			     const Thunks &thunks, uint64_t detour_address, const CounterCall &counter, uint8_t *out,
			     size_t capacity)
{
	if (plan.refusal != OptimizationRefusal::none || capacity < counting_prologue_size(counter))
		return 0;
	size_t at = 0;
	if (!counter.flags_dead)
		out[at++] = pushfq;
	if (fits_disp32(counter.cell)) {
		put_bytes(out, at, incq_gs_absolute);
		put_le(out, at, counter.cell, 4);
	} else {
		out[at++] = push_rax;
		put_bytes(out, at, movabs_rax);
		put_le(out, at, counter.cell, 8);
		put_bytes(out, at, incq_gs_at_rax);
		out[at++] = pop_rax;
	}
	if (!counter.flags_dead)
		out[at++] = popfq;
	const size_t region_length =
		relocate_region(plan, region, address, thunks, detour_address + at, out + at, capacity - at);
	return region_length ? at + region_length : 0;
}

bool build_jump(uint64_t address, uint64_t detour_address, uint8_t (&jump)[jump_size])
{
	jump[0] = 0xe9;
	return rel32_from(address + jump_size, detour_address, jump + 1);
}

} // namespace okp::x86
