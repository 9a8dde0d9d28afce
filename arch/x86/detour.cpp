// SPDX-License-Identifier: GPL-2.0
#include "x86/detour.hpp"

namespace okp::x86 {
namespace {

// push $0x18 (__KERNEL_DS); push %rsp; pushfq; addq $8,8(%rsp) (the pushed
// sp is the probed code's once the ss slot is counted; the add comes after
// pushfq because it changes the flags).
constexpr uint8_t save_top[] = {0x6a, 0x18, 0x54, 0x9c, 0x48, 0x83, 0x44, 0x24, 0x08, 0x08};
// sub $24,%rsp: cs, ip and orig_ax, which the core's entry fills.
constexpr uint8_t leave_cs_ip_orig_ax[] = {0x48, 0x83, 0xec, 0x18};
// push $0x10 (__KERNEL_CS); push $ip (imm32 follows); push $-1 (orig_ax)
constexpr uint8_t push_cs[] = {0x6a, 0x10};
constexpr uint8_t push_imm32 = 0x68;
constexpr uint8_t push_orig_ax[] = {0x6a, 0xff};
// push di, si, dx, cx, ax, r8-r11, bx, bp, r12-r15 (pt_regs from the top
// down).
constexpr uint8_t save_registers[] = {0x57, 0x56, 0x52, 0x51, 0x50, 0x41, 0x50, 0x41, 0x51, 0x41, 0x52, 0x41,
				      0x53, 0x53, 0x55, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57};
// pop r15-r12, bp, bx, r11-r8, ax, cx, dx, si, di; add $24,%rsp; popfq;
// lea 16(%rsp),%rsp
constexpr uint8_t restore[] = {0x41, 0x5f, 0x41, 0x5e, 0x41, 0x5d, 0x41, 0x5c, 0x5d, 0x5b, 0x41,
			       0x5b, 0x41, 0x5a, 0x41, 0x59, 0x41, 0x58, 0x58, 0x59, 0x5a, 0x5e,
			       0x5f, 0x48, 0x83, 0xc4, 0x18, 0x9d, 0x48, 0x8d, 0x64, 0x24, 0x10};

bool fast_path(const DetourCall &call)
{
	return call.preempt_count != 0;
}

constexpr uint8_t movabs_rdx[] = {0x48, 0xba};
constexpr uint8_t movabs_rax[] = {0x48, 0xb8};
constexpr uint8_t movabs_rdi[] = {0x48, 0xbf};
constexpr uint8_t add_gs_rdx[] = {0x65, 0x48, 0x03, 0x14, 0x25}; // disp32 follows
constexpr uint8_t incl_gs[] = {0x65, 0xff, 0x04, 0x25};		 // disp32 follows
constexpr uint8_t decl_gs[] = {0x65, 0xff, 0x0c, 0x25};		 // disp32 follows
constexpr uint8_t xor_edx[] = {0x31, 0xd2};
constexpr uint8_t jnz_over_call[] = {0x75, 0x05, 0xe8}; // rel32 follows
constexpr uint8_t call_opcode = 0xe8, jump_opcode = 0xe9;
// The direct hit's checks and bookkeeping (core/direct_hit.hpp), with the
// CPU state in %rdx, the site in %rax and the probe in %rdi.
constexpr uint8_t cmpq_0_at_rdx[] = {0x48, 0x83, 0x3a, 0x00};
constexpr uint8_t jne_rel32[] = {0x0f, 0x85};
constexpr uint8_t cmp_rdi_at_rax[] = {0x48, 0x39, 0xb8};    // disp32 follows
constexpr uint8_t cmpq_imm32_at_rdi[] = {0x48, 0x81, 0xbf}; // disp32, imm32 follow
constexpr uint8_t mov_rax_to_at_rdx[] = {0x48, 0x89, 0x02};
constexpr uint8_t mov_rdx_to_rbx[] = {0x48, 0x89, 0xd3};
constexpr uint8_t lock_incq_at_rax[] = {0xf0, 0x48, 0xff, 0x80}; // disp32 follows
constexpr uint8_t mov_rsp_to_rsi[] = {0x48, 0x89, 0xe6};
constexpr uint8_t movq_0_to_at_rbx[] = {0x48, 0xc7, 0x03, 0x00, 0x00, 0x00, 0x00};

// Whether value is a sign-extended 32-bit one (an imm32, a disp32, a rel32).
bool fits_int32(uint64_t value)
{
	const int64_t signed_value = static_cast<int64_t>(value);
	return signed_value >= INT32_MIN && signed_value <= INT32_MAX;
}

bool rel32_from(uint64_t end, uint64_t target, uint8_t *where)
{
	const uint64_t relative = target - end;
	if (!fits_int32(relative))
		return false;
	for (int i = 0; i < 4; ++i)
		where[i] = static_cast<uint8_t>(static_cast<uint32_t>(relative) >> (8 * i));
	return true;
}

// The detour calls its probe's handler itself when the core asks for it,
// the probed address and the handler fit an imm32 (kernel and module text
// lie in the top 2 GiB) and the handler's call reaches (a few hundred
// bytes in, far less than the margin).
bool direct_path(const DetourCall &call, uint64_t address, uint64_t detour_address)
{
	const DirectHit &direct = call.direct;
	constexpr uint64_t margin = 4096;
	return fast_path(call) && direct.wanted() && fits_int32(address + 1) && fits_int32(direct.handler) &&
	       fits_int32(direct.handler - detour_address + margin) &&
	       fits_int32(direct.handler - detour_address - margin);
}

// Writes code into out from at, keeping at; knows where it is running.
struct Emitter {
	uint8_t *out;
	size_t at;
	uint64_t base;
	bool reached = true;

	template <size_t count> void bytes(const uint8_t (&code)[count])
	{
		for (uint8_t byte : code)
			out[at++] = byte;
	}
	void byte(uint8_t value) { out[at++] = value; }
	void le(uint64_t value, int count)
	{
		for (int i = 0; i < count; ++i)
			out[at++] = static_cast<uint8_t>(value >> (8 * i));
	}
	// A rel32 to target, as the last 4 bytes of its instruction.
	void rel32(uint64_t target)
	{
		reached = rel32_from(base + at + 4, target, out + at) && reached;
		at += 4;
	}
	// A rel32 patched later by land(); returns where it is.
	size_t forward()
	{
		at += 4;
		return at - 4;
	}
	void land(size_t where) { reached = rel32_from(base + where + 4, base + at, out + where) && reached; }
};

void emit_per_cpu_enter(Emitter &code, const DetourCall &call)
{
	// Preemption first: the CPU state must be the CPU's that runs the
	// rest.
	code.bytes(incl_gs); // incl %gs:__preempt_count
	code.le(static_cast<uint32_t>(call.preempt_count), 4);
	code.bytes(movabs_rdx); // movabs $cpu_states,%rdx
	code.le(call.cpu_states, 8);
	code.bytes(add_gs_rdx); // add %gs:this_cpu_off,%rdx
	code.le(static_cast<uint32_t>(call.this_cpu_off), 4);
}

void emit_per_cpu_leave(Emitter &code, const DetourCall &call)
{
	code.bytes(decl_gs); // decl %gs:__preempt_count
	code.le(static_cast<uint32_t>(call.preempt_count), 4);
	if (call.preempt_schedule) {
		code.bytes(jnz_over_call); // jnz 1f; call preempt_schedule; 1:
		code.rel32(call.preempt_schedule);
	}
}

constexpr uint8_t lea_rsp_disp8_to_rsi[] = {0x48, 0x8d, 0x74, 0x24}; // disp8 follows

// %rsi = the frame the handlers see: pt_regs at the stack pointer (offset
// 0), or an argument-only detour's record above what it saved below it.
void emit_frame_argument(Emitter &code, uint8_t offset)
{
	if (!offset) {
		code.bytes(mov_rsp_to_rsi);
		return;
	}
	code.bytes(lea_rsp_disp8_to_rsi);
	code.byte(offset);
}

void emit_entry_call(Emitter &code, const DetourCall &call, uint8_t frame_offset = 0)
{
	emit_frame_argument(code, frame_offset); // entry(context, frame, cpu)
	code.bytes(movabs_rdi);
	code.le(call.context, 8);
	code.byte(call_opcode); // call entry
	code.rel32(call.entry);
}

// The direct hit's checks: this CPU in no other hit, the site's gate, the
// probe's handler.
constexpr size_t direct_checks = 3;

// The direct hit (core/direct_hit.hpp); every jne of a failed check is
// recorded in general[] for the caller to land on the entry's call. %rbx
// is the detour's to use (saved below the frame).
size_t emit_direct_hit(Emitter &code, const DirectHit &direct, size_t (&general)[direct_checks], uint8_t frame_offset)
{
	size_t checks = 0;
	auto otherwise = [&](const uint8_t(&jump)[2]) {
		code.bytes(jump);
		general[checks++] = code.forward();
	};
	code.bytes(movabs_rax); // movabs $site,%rax
	code.le(direct.site, 8);
	code.bytes(movabs_rdi); // movabs $probe,%rdi
	code.le(direct.probe, 8);
	code.bytes(cmpq_0_at_rdx); // cmpq $0,(%rdx): inside another hit?
	otherwise(jne_rel32);
	code.bytes(cmp_rdi_at_rax); // cmp %rdi,direct_probe(%rax): the gate
	code.le(static_cast<uint32_t>(direct.direct_probe), 4);
	otherwise(jne_rel32);
	code.bytes(cmpq_imm32_at_rdi); // cmpq $handler,handler(%rdi)
	code.le(static_cast<uint32_t>(direct.probe_handler), 4);
	code.le(direct.handler, 4);
	otherwise(jne_rel32);
	code.bytes(mov_rax_to_at_rdx); // active_site = site
	code.bytes(mov_rdx_to_rbx);    // the CPU state, kept across the call
	code.bytes(lock_incq_at_rax);  // lock incq hits(%rax)
	code.le(static_cast<uint32_t>(direct.first_hits), 4);
	emit_frame_argument(code, frame_offset); // handler(probe, regs or record)
	code.byte(call_opcode);
	code.rel32(direct.handler);
	code.bytes(movq_0_to_at_rbx); // active_site = 0
	return checks;
}

// With the frame saved: the per-CPU enter, then the direct hit (its checks'
// jumps in general[], their count returned) or the entry's call.
size_t emit_hit_call(Emitter &code, const DetourCall &call, bool direct, size_t (&general)[direct_checks],
		     uint8_t frame_offset)
{
	if (fast_path(call))
		emit_per_cpu_enter(code, call);
	else
		code.bytes(xor_edx); // no CPU state
	if (direct)
		return emit_direct_hit(code, call.direct, general, frame_offset);
	emit_entry_call(code, call, frame_offset);
	return 0;
}

// Where a direct detour's failed checks go: the entry's call, then back to
// its common tail (general is nullptr for a detour that always calls the
// entry).
struct EntryAfterRegion {
	const DetourCall &call;
	const size_t *general;
	size_t checks;
	size_t tail;
	uint8_t frame_offset;
};

// The relocated region at the code's end (*copy_at: where it starts), then
// a direct detour's entry call. The detour's length, or 0.
size_t emit_region_and_entry(Emitter &code, const OptimizationPlan &plan, const uint8_t *region, uint64_t address,
			     const Thunks &thunks, size_t capacity, size_t *copy_at, const EntryAfterRegion &entry)
{
	if (copy_at)
		*copy_at = code.at;
	const size_t region_length = relocate_region(plan, region, address, thunks, code.base + code.at,
						     code.out + code.at, capacity - code.at - max_detour_general_size);
	if (!region_length)
		return 0;
	code.at += region_length;
	if (entry.general) {
		// The core's entry, when a check failed; then the common tail.
		for (size_t i = 0; i < entry.checks; ++i)
			code.land(entry.general[i]);
		emit_entry_call(code, entry.call, entry.frame_offset);
		code.byte(jump_opcode);
		code.rel32(code.base + entry.tail);
	}
	return code.reached ? code.at : 0;
}

} // namespace

size_t build_detour(const OptimizationPlan &plan, const uint8_t *region, uint64_t address, const Thunks &thunks,
		    uint64_t detour_address, const DetourCall &call, uint8_t *out, size_t capacity, size_t *copy_at)
{
	if (plan.refusal != OptimizationRefusal::none || capacity < max_detour_frame_size + max_detour_general_size)
		return 0;
	Emitter code{out, 0, detour_address};
	const bool direct = direct_path(call, address, detour_address);
	code.bytes(save_top);
	if (direct) {
		// What the core's entry would fill, as after the int3.
		code.bytes(push_cs);
		code.byte(push_imm32);
		code.le(address + 1, 4);
		code.bytes(push_orig_ax);
	} else {
		code.bytes(leave_cs_ip_orig_ax);
	}
	code.bytes(save_registers);
	size_t general[direct_checks];
	const size_t checks = emit_hit_call(code, call, direct, general, 0);
	const size_t tail = code.at;
	if (fast_path(call))
		emit_per_cpu_leave(code, call);
	code.bytes(restore);
	return emit_region_and_entry(code, plan, region, address, thunks, capacity, copy_at,
				     {call, direct ? general : nullptr, checks, tail, 0});
}

namespace {

// The record, from its last field down (core/args_record.hpp's layout):
// push %rsp; push %rax; push %r9; push %r8; push %rcx; push %rdx; push
// %rsi; push %rdi (push $ip, an imm32, between the first two).
constexpr uint8_t push_rsp = 0x54;
constexpr uint8_t push_record_registers[] = {0x50, 0x41, 0x51, 0x41, 0x50, 0x51, 0x52, 0x56, 0x57};
// push %r10; push %r11 / pop %r11; pop %r10: the rest the call clobbers.
constexpr uint8_t push_scratch[] = {0x41, 0x52, 0x41, 0x53};
constexpr uint8_t pop_scratch[] = {0x41, 0x5b, 0x41, 0x5a};
constexpr uint8_t push_rbx = 0x53, pop_rbx = 0x5b; // the direct hit's
// pop %rdi; pop %rsi; pop %rdx; pop %rcx; pop %r8; pop %r9; pop %rax;
// lea 16(%rsp),%rsp (ip and sp dropped, the flags untouched).
constexpr uint8_t pop_record_registers[] = {0x5f, 0x5e, 0x5a, 0x59, 0x41, 0x58, 0x41,
					    0x59, 0x58, 0x48, 0x8d, 0x64, 0x24, 0x10};

} // namespace

size_t build_args_detour(const OptimizationPlan &plan, const uint8_t *region, uint64_t address, const Thunks &thunks,
			 uint64_t detour_address, const ArgsCall &args, uint8_t *out, size_t capacity, size_t *copy_at)
{
	const DetourCall &call = args.call;
	if (plan.refusal != OptimizationRefusal::none || capacity < max_detour_frame_size + max_detour_general_size ||
	    !fits_int32(address))
		return 0;
	Emitter code{out, 0, detour_address};
	const bool direct = direct_path(call, address, detour_address);
	code.byte(push_rsp);
	code.byte(push_imm32); // the record's ip: the probed address
	code.le(address, 4);
	code.bytes(push_record_registers);
	if (!args.flags_dead)
		code.byte(0x9c); // pushfq
	code.bytes(push_scratch);
	if (direct)
		code.byte(push_rbx);
	// The record, above what was saved below it.
	const uint8_t record = static_cast<uint8_t>(16 + (args.flags_dead ? 0 : 8) + (direct ? 8 : 0));
	size_t general[direct_checks];
	const size_t checks = emit_hit_call(code, call, direct, general, record);
	const size_t tail = code.at;
	if (fast_path(call))
		emit_per_cpu_leave(code, call);
	if (direct)
		code.byte(pop_rbx);
	code.bytes(pop_scratch);
	if (!args.flags_dead)
		code.byte(0x9d); // popfq
	code.bytes(pop_record_registers);
	return emit_region_and_entry(code, plan, region, address, thunks, capacity, copy_at,
				     {call, direct ? general : nullptr, checks, tail, record});
}

namespace {

constexpr uint8_t incq_gs_absolute[] = {0x65, 0x48, 0xff, 0x04, 0x25}; // disp32 follows
constexpr uint8_t push_rax = 0x50, pop_rax = 0x58, pushfq = 0x9c, popfq = 0x9d;
constexpr uint8_t incq_gs_at_rax[] = {0x65, 0x48, 0xff, 0x00}; // incq %gs:(%rax)

} // namespace

size_t counting_prologue_size(const CounterCall &counter)
{
	const size_t flags = counter.flags_dead ? 0 : 2;
	return flags + (fits_int32(counter.cell) ? sizeof(incq_gs_absolute) + 4
						 : 1 + sizeof(movabs_rax) + 8 + sizeof(incq_gs_at_rax) + 1);
}

size_t build_counting_detour(const OptimizationPlan &plan, const uint8_t *region, uint64_t address,
			     const Thunks &thunks, uint64_t detour_address, const CounterCall &counter, uint8_t *out,
			     size_t capacity)
{
	if (plan.refusal != OptimizationRefusal::none || capacity < counting_prologue_size(counter))
		return 0;
	Emitter code{out, 0, detour_address};
	if (!counter.flags_dead)
		code.byte(pushfq);
	if (fits_int32(counter.cell)) {
		code.bytes(incq_gs_absolute);
		code.le(counter.cell, 4);
	} else {
		code.byte(push_rax);
		code.bytes(movabs_rax);
		code.le(counter.cell, 8);
		code.bytes(incq_gs_at_rax);
		code.byte(pop_rax);
	}
	if (!counter.flags_dead)
		code.byte(popfq);
	const size_t region_length = relocate_region(plan, region, address, thunks, detour_address + code.at,
						     out + code.at, capacity - code.at);
	return region_length ? code.at + region_length : 0;
}

bool build_jump(uint64_t address, uint64_t detour_address, uint8_t (&jump)[jump_size])
{
	jump[0] = 0xe9;
	return rel32_from(address + jump_size, detour_address, jump + 1);
}

} // namespace okp::x86
