// SPDX-License-Identifier: GPL-2.0
// riscv64's argument-only detour (detour.hpp's build_args_detour): the
// record pushed, then one of three calls, the cheapest the kernel and the
// site allow:
//   glue    the glue's entry(context, record): preemption and this CPU's
//           state in C, then the core's okp_core_args_hit
//   fast    the same done here from tp (DetourTask), the core called
//           directly with (site, record, cpu)
//   direct  fast, and the site's one probe's args_handler called by the
//           detour itself while the checks of core/direct_hit.hpp hold;
//           the core's call moves to the tail for when one fails
// The frame's length depends on the kind and on the kernel (a preemption
// point only where the kernel preempts), so it is measured by writing it
// once into scratch before the copy is placed behind it.
#include "riscv/code_writer.hpp"
#include "riscv/detour.hpp"
#include "riscv/detour_layout.hpp"

namespace okp::riscv {

namespace {

constexpr unsigned t1 = reg::t0 + 1, t2 = reg::t0 + 2, t4 = reg::t3 + 1, t5 = reg::t3 + 2;
constexpr unsigned a2 = reg::a0 + 2;
constexpr unsigned beq = 0, bne = 1; // branch funct3

// The temporaries saved above the record, with ra.
constexpr uint8_t args_saved[] = {reg::ra, reg::t0, t1, t2, reg::t3, t4, t5, reg::t6};
// A direct detour keeps this CPU's state across the handler's call here,
// above the saved registers.
constexpr int32_t cpu_slot = int32_t(args_record_size + sizeof(args_saved) * 8);
constexpr int32_t glue_frame_bytes = cpu_slot;	      // 144: 16-byte aligned
constexpr int32_t direct_frame_bytes = cpu_slot + 16; // the slot, aligned

// The literals, 8 bytes apart from Layout::literal, read from t6 (the
// auipc at the frame's base_).
enum Literal : unsigned {
	context_literal,
	ip_literal,
	probe_literal,
	handler_literal,
	offsets_literal,
	states_literal
};
static_assert(states_literal + 1 == args_literals);

enum class Kind { glue, fast, direct };

bool fits12(int64_t value)
{
	return value >= -2048 && value <= 2047;
}

Kind kind_of(const ArgsCall &call)
{
	const DetourTask &task = call.task;
	const bool fast = task.known() && call.core_entry && fits12(task.cpu) && fits12(task.flags) &&
			  (task.preempt_count < 0 || fits12(task.preempt_count)) && task.need_resched_bit < 64;
	if (!fast)
		return Kind::glue;
	const DirectHit &direct = call.direct;
	if (direct.wanted() && fits12(direct.direct_probe) && fits12(direct.first_hits) && fits12(direct.probe_handler))
		return Kind::direct;
	return Kind::fast;
}

// Writes one frame of a kind, the layout's offsets given (a scratch
// writing measures it with a layout of zeros), then its tail.
class ArgsFrame {
public:
	ArgsFrame(CodeWriter &code, const ArgsCall &call, const Layout &layout, Kind kind)
	    : code_(code), call_(call), task_(call.task), layout_(layout), kind_(kind),
	      frame_bytes_(kind == Kind::direct ? direct_frame_bytes : glue_frame_bytes)
	{}

	void write()
	{
		save();
		if (kind_ == Kind::glue) {
			code_.put32(encode::ld(reg::a0, reg::t6, literal(context_literal)));
			code_.put32(encode::addi(reg::a1, reg::sp, 0));
			code_.far_jump(reg::ra, call_.entry, reg::ra);
		} else {
			enter();
			if (kind_ == Kind::direct)
				direct_hit();
			else
				core_call();
			join_ = code_.length();
			leave();
		}
		restore();
	}
	// The direct hit's failed checks: the core's call, then back to the
	// join.
	void write_tail()
	{
		if (kind_ != Kind::direct)
			return;
		core_call();
		code_.put32(encode::jal(reg::zero, int32_t(join_) - int32_t(code_.length())));
	}
	// The literals after the first (the caller writes the context).
	void write_literals()
	{
		code_.put64(call_.probed);
		if (kind_ == Kind::glue)
			return;
		code_.put64(call_.direct.probe);
		code_.put64(call_.direct.handler);
		code_.put64(task_.per_cpu_offsets);
		code_.put64(task_.cpu_states);
	}
	// Whether every literal load reaches its literal.
	bool literals_reach() const { return fits12(literal(states_literal)) && fits12(literal(context_literal)); }

private:
	int32_t literal(Literal n) const { return int32_t(layout_.literal + n * 8) - int32_t(base_); }

	// The record and the saved registers, then the literals' base in t6.
	void save()
	{
		code_.put32(encode::addi(reg::sp, reg::sp, -frame_bytes_));
		for (unsigned n = 0; n < 8; ++n)
			code_.put32(encode::sd(reg::a0 + n, reg::sp, int32_t(n * 8)));
		for (unsigned n = 0; n < sizeof(args_saved); ++n)
			code_.put32(encode::sd(args_saved[n], reg::sp, int32_t(args_record_size + n * 8)));
		code_.put32(encode::addi(reg::t0, reg::sp, frame_bytes_));
		code_.put32(encode::sd(reg::t0, reg::sp, 9 * 8));
		base_ = code_.length();
		code_.put32(encode::auipc(reg::t6, 0));
		code_.put32(encode::ld(reg::t0, reg::t6, literal(ip_literal)));
		code_.put32(encode::sd(reg::t0, reg::sp, 8 * 8));
	}
	// preempt_disable_notrace(); t3 = this_cpu_ptr(cpu_states); t5 = site.
	void enter()
	{
		if (task_.preempt_count >= 0) {
			code_.put32(encode::lw(reg::t0, reg::tp, task_.preempt_count));
			code_.put32(encode::addi(reg::t0, reg::t0, 1));
			code_.put32(encode::sw(reg::t0, reg::tp, task_.preempt_count));
		}
		code_.put32(encode::lw(t1, reg::tp, task_.cpu));
		code_.put32(encode::slli(t1, t1, 3));
		code_.put32(encode::ld(t2, reg::t6, literal(offsets_literal)));
		code_.put32(encode::add(t2, t2, t1));
		code_.put32(encode::ld(t2, t2, 0));
		code_.put32(encode::ld(reg::t3, reg::t6, literal(states_literal)));
		code_.put32(encode::add(reg::t3, reg::t3, t2));
		code_.put32(encode::ld(t5, reg::t6, literal(context_literal)));
	}
	// okp_core_args_hit(site, record, cpu)
	void core_call()
	{
		code_.put32(encode::addi(reg::a0, t5, 0));
		code_.put32(encode::addi(reg::a1, reg::sp, 0));
		code_.put32(encode::addi(a2, reg::t3, 0));
		code_.far_jump(reg::ra, call_.core_entry, reg::ra);
	}
	void branch_to_tail(unsigned funct3, unsigned rs1, unsigned rs2)
	{
		code_.put32(encode::branch(funct3, rs1, rs2, int32_t(layout_.tail) - int32_t(code_.length())));
	}
	void direct_hit()
	{
		const DirectHit &direct = call_.direct;
		// The checks; the CPU state's first word is its active_site.
		code_.put32(encode::ld(reg::t0, reg::t3, 0));
		branch_to_tail(bne, reg::t0, reg::zero);
		code_.put32(encode::ld(reg::a0, reg::t6, literal(probe_literal)));
		code_.put32(encode::ld(reg::t0, t5, direct.direct_probe));
		// The gate is the writer's release: nothing of the probe is
		// read before it (RVWMO orders no two loads by itself).
		code_.put32(encode::fence_r_rw);
		branch_to_tail(bne, reg::t0, reg::a0);
		code_.put32(encode::ld(t4, reg::t6, literal(handler_literal)));
		code_.put32(encode::ld(reg::t0, reg::a0, direct.probe_handler));
		branch_to_tail(bne, reg::t0, t4);
		// The hit, as the core's would count and run it.
		code_.put32(encode::sd(t5, reg::t3, 0));
		code_.put32(encode::sd(reg::t3, reg::sp, cpu_slot));
		code_.put32(encode::addi(reg::t0, t5, direct.first_hits));
		code_.put32(encode::addi(t1, reg::zero, 1));
		code_.put32(encode::amoadd_d(reg::zero, t1, reg::t0));
		code_.put32(encode::addi(reg::a1, reg::sp, 0));
		code_.put32(encode::jalr(reg::ra, t4, 0));
		code_.put32(encode::ld(reg::t3, reg::sp, cpu_slot));
		code_.put32(encode::sd(reg::zero, reg::t3, 0));
	}
	// preempt_enable_notrace(): the preemption point where the count drops
	// to 0 with need_resched set.
	void leave()
	{
		if (task_.preempt_count < 0)
			return;
		code_.put32(encode::lw(reg::t0, reg::tp, task_.preempt_count));
		code_.put32(encode::addi(reg::t0, reg::t0, -1));
		code_.put32(encode::sw(reg::t0, reg::tp, task_.preempt_count));
		if (!task_.preemption_point)
			return;
		const size_t busy = code_.length();
		code_.put32(0); // bnez t0, done
		code_.put32(encode::ld(t1, reg::tp, task_.flags));
		if (task_.need_resched_bit)
			code_.put32(encode::srli(t1, t1, task_.need_resched_bit));
		code_.put32(encode::andi(t1, t1, 1));
		const size_t calm = code_.length();
		code_.put32(0); // beqz t1, done
		code_.far_jump(reg::ra, task_.preemption_point, reg::ra);
		const size_t done = code_.length();
		code_.patch32(busy, encode::branch(bne, reg::t0, reg::zero, int32_t(done - busy)));
		code_.patch32(calm, encode::branch(beq, t1, reg::zero, int32_t(done - calm)));
	}
	void restore()
	{
		for (unsigned n = 0; n < 8; ++n)
			code_.put32(encode::ld(reg::a0 + n, reg::sp, int32_t(n * 8)));
		for (unsigned n = 0; n < sizeof(args_saved); ++n)
			code_.put32(encode::ld(args_saved[n], reg::sp, int32_t(args_record_size + n * 8)));
		code_.put32(encode::addi(reg::sp, reg::sp, frame_bytes_));
	}

	CodeWriter &code_;
	const ArgsCall &call_;
	const DetourTask &task_;
	const Layout &layout_;
	const Kind kind_;
	const int32_t frame_bytes_;
	size_t base_ = 0, join_ = 0;
};

} // namespace

size_t build_args_detour(const OptimizationPlan &plan, uint64_t address, uint64_t detour_address, const ArgsCall &call,
			 uint8_t *out, size_t capacity, size_t *copy_offset)
{
	const Kind kind = kind_of(call);
	if (kind == Kind::glue && !call.entry)
		return 0;
	const uint8_t before = plan.before_frame();
	size_t prefix = 0;
	if (!relocate_prefix(plan, address, detour_address, out, capacity, prefix))
		return 0;
	// The frame's and the tail's lengths, written once into scratch.
	uint8_t scratch[max_args_frame_size + max_args_tail_size];
	const Layout zeros{};
	CodeWriter measure(scratch, sizeof(scratch), detour_address + prefix);
	ArgsFrame measured(measure, call, zeros, kind);
	measured.write();
	const size_t frame_size = measure.length();
	measured.write_tail();
	const size_t tail_size = measure.length() - frame_size;
	if (!frame_size || measure.failed() || frame_size > max_args_frame_size)
		return 0;
	Layout layout;
	if (!relocate_behind(plan, address, before, detour_address + prefix, frame_size, out + prefix,
			     capacity - prefix, layout, tail_size))
		return 0;
	CodeWriter code(out + prefix, capacity - prefix, detour_address + prefix);
	ArgsFrame frame(code, call, layout, kind);
	frame.write();
	if (!skip_to_tail(code, layout))
		return 0;
	frame.write_tail();
	if (!frame.literals_reach() || !finish_literals(code, layout, call.context))
		return 0;
	frame.write_literals();
	const size_t length = code.length();
	if (!length)
		return 0;
	if (copy_offset)
		*copy_offset = prefix + frame_size;
	return prefix + length;
}

} // namespace okp::riscv
