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
static_assert(sizeof(save) + sizeof(call_setup) + 8 + 5 + sizeof(restore) == detour_frame_size);

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

size_t build_detour(const OptimizationPlan &plan, const uint8_t *region, uint64_t address, const Thunks &thunks,
		    uint64_t detour_address, uint64_t entry, uint64_t context, uint8_t *out, size_t capacity)
{
	if (plan.refusal != OptimizationRefusal::none || capacity < detour_frame_size)
		return 0;
	size_t at = 0;
	for (uint8_t byte : save)
		out[at++] = byte;
	for (uint8_t byte : call_setup)
		out[at++] = byte;
	for (int i = 0; i < 8; ++i)
		out[at++] = static_cast<uint8_t>(context >> (8 * i));
	out[at++] = 0xe8; // call entry
	if (!rel32_from(detour_address + at + 4, entry, out + at))
		return 0;
	at += 4;
	for (uint8_t byte : restore)
		out[at++] = byte;
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
