// SPDX-License-Identifier: GPL-2.0
#include "core/function_exits.hpp"

#include "core/assert.hpp"
#include "core/owned.hpp"

namespace okp {

const char *exit_refusal_text(ExitRefusal refusal)
{
	switch (refusal) {
	case ExitRefusal::none:
		return "none";
	case ExitRefusal::undecodable:
		return "the function does not decode to its end";
	case ExitRefusal::indirect_jump:
		return "the function jumps through a register (a tail call or jump table)";
	case ExitRefusal::conditional_exit:
		return "the function branches conditionally out of itself";
	case ExitRefusal::jump_elsewhere:
		return "the function jumps into the middle of another function";
	case ExitRefusal::mid_instruction:
		return "a jump of the function lands inside one of its instructions";
	case ExitRefusal::hidden_edge_elsewhere:
		return "a jump label of the function leads out of it";
	case ExitRefusal::falls_off_end:
		return "the function runs off its end into the next symbol";
	case ExitRefusal::too_many_pieces:
		return "the function has too many pieces";
	case ExitRefusal::too_many_exits:
		return "the function has too many exits";
	case ExitRefusal::no_exit:
		return "the function never returns";
	case ExitRefusal::out_of_memory:
		return "out of memory";
	case ExitRefusal::unreadable:
		return "a piece or the jump labels of the function cannot be read";
	}
	return "?";
}

namespace {

class Census {
public:
	Census(const CodeRange &function, ExitDecoder decode, const ExitFacts &facts, FunctionExit *exits,
	       size_t capacity)
	    : decode_(decode), facts_(facts), exits_(exits), capacity_(capacity)
	{
		ranges_[0] = function;
		range_count_ = 1;
	}

	ExitCensus run()
	{
		// Pieces are appended while the walk goes: each is decoded in
		// turn.
		for (size_t r = 0; r < range_count_ && result_.refusal == ExitRefusal::none; ++r)
			walk(r);
		// Every edge found inside lands on an instruction the walk
		// decoded: a landing inside one would run code the linear
		// decode never saw (overlapping instructions).
		for (size_t i = 0; i < landings_.size() && result_.refusal == ExitRefusal::none; ++i)
			if (!starts_instruction(landings_[i]))
				refuse(ExitRefusal::mid_instruction, landings_[i]);
		// A jump whose target its previous instruction computed: one
		// landing on it would come with any value in the register.
		for (size_t i = 0; i < landings_.size() && result_.refusal == ExitRefusal::none; ++i)
			for (size_t j = 0; j < computed_jumps_.size(); ++j)
				if (landings_[i] == computed_jumps_[j])
					refuse(ExitRefusal::indirect_jump, computed_jumps_[j]);
		if (result_.refusal == ExitRefusal::none && result_.count > capacity_)
			refuse(ExitRefusal::too_many_exits, 0);
		if (result_.refusal == ExitRefusal::none && result_.count == 0)
			refuse(ExitRefusal::no_exit, ranges_[0].address);
		result_.pieces = range_count_ - 1;
		return result_;
	}

private:
	void refuse(ExitRefusal refusal, uint64_t at)
	{
		if (result_.refusal != ExitRefusal::none)
			return;
		result_.refusal = refusal;
		result_.at = at;
	}

	// The range holding address, or range_count_.
	size_t range_of(uint64_t address) const
	{
		for (size_t r = 0; r < range_count_; ++r)
			if (address >= ranges_[r].address && address < ranges_[r].address + ranges_[r].size)
				return r;
		return range_count_;
	}
	bool inside(uint64_t address) const { return range_of(address) < range_count_; }

	bool starts_instruction(uint64_t address) const
	{
		const size_t r = range_of(address);
		if (r == range_count_ || !starts_[r])
			return false;
		const size_t offset = address - ranges_[r].address;
		return (starts_[r][offset / 8] >> (offset % 8)) & 1;
	}

	// An edge landing at target inside the ranges, checked at the end.
	void land(uint64_t target)
	{
		if (!landings_.push(target))
			refuse(ExitRefusal::out_of_memory, target);
	}

	void add_exit(uint64_t address, ExitKind kind, uint64_t target)
	{
		if (result_.count < capacity_)
			exits_[result_.count] = FunctionExit{address, target, kind};
		++result_.count;
	}

	// Where a transfer to target (from the instruction at from) leads:
	// inside (nothing to do), a new piece (decoded later), a tail call
	// (true when allowed), or a refusal.
	enum class Lead : uint8_t { inside, tail_call, refused };
	Lead follow(uint64_t from, uint64_t target, ExitRefusal if_function, ExitRefusal if_elsewhere)
	{
		if (inside(target)) {
			land(target);
			return Lead::inside;
		}
		CodeRange piece;
		switch (facts_.place(target, &piece, facts_.context)) {
		case ExitPlace::piece:
			if (!piece.bytes || !piece.size) {
				refuse(ExitRefusal::unreadable, target);
				return Lead::refused;
			}
			if (!inside(piece.address)) {
				if (range_count_ == 1 + max_exit_pieces) {
					refuse(ExitRefusal::too_many_pieces, target);
					return Lead::refused;
				}
				ranges_[range_count_++] = piece;
			}
			land(target);
			return Lead::inside;
		case ExitPlace::function_start:
			if (if_function == ExitRefusal::none)
				return Lead::tail_call;
			refuse(if_function, from);
			return Lead::refused;
		case ExitPlace::elsewhere:
			break;
		}
		refuse(if_elsewhere, from);
		return Lead::refused;
	}

	static bool padding_only(const CodeRange &range, size_t offset)
	{
		for (size_t i = offset; i < range.size; ++i)
			if (range.bytes[i] != 0xcc && range.bytes[i] != 0)
				return false;
		return true;
	}

	void walk(size_t r)
	{
		const CodeRange &range = ranges_[r];
		starts_[r] = OwnedArray<uint8_t>::make(range.size / 8 + 1);
		if (!starts_[r]) {
			refuse(ExitRefusal::out_of_memory, range.address);
			return;
		}
		for (size_t i = 0; i < starts_[r].size(); ++i)
			starts_[r][i] = 0;
		ExitFlow last = ExitFlow::padding;
		uint64_t last_at = range.address;
		size_t previous = range.size; // the last instruction's offset
		for (size_t offset = 0; offset < range.size && result_.refusal == ExitRefusal::none;) {
			ExitStep step;
			decode_(range, offset, step);
			const uint64_t at = range.address + offset;
			if (step.flow == ExitFlow::undecodable || !step.length || offset + step.length > range.size) {
				if (!padding_only(range, offset))
					refuse(ExitRefusal::undecodable, at);
				break;
			}
			starts_[r][offset / 8] |= uint8_t(1u << (offset % 8));
			if (step.computed_by) {
				// The pair is whole only when the instruction that
				// computed the target is the one right before.
				if (previous != offset - step.computed_by || offset < step.computed_by)
					step.flow = ExitFlow::indirect_jump;
				else if (!computed_jumps_.push(at))
					refuse(ExitRefusal::out_of_memory, at);
			}
			previous = offset;
			switch (step.flow) {
			case ExitFlow::returns:
				add_exit(at, ExitKind::returns, 0);
				break;
			case ExitFlow::jump:
				if (follow(at, step.target, ExitRefusal::none, ExitRefusal::jump_elsewhere) ==
				    Lead::tail_call)
					add_exit(at, ExitKind::tail_call, step.target);
				break;
			case ExitFlow::branch:
				follow(at, step.target, ExitRefusal::conditional_exit, ExitRefusal::conditional_exit);
				break;
			case ExitFlow::indirect_jump:
				refuse(ExitRefusal::indirect_jump, at);
				break;
			default:
				break;
			}
			if (step.flow != ExitFlow::padding) {
				last = step.flow;
				last_at = at;
			}
			offset += step.length;
		}
		if (result_.refusal != ExitRefusal::none)
			return;
		// The range's last instruction must not run into what follows.
		if (last == ExitFlow::next || last == ExitFlow::branch)
			refuse(ExitRefusal::falls_off_end, last_at);
		walk_hidden_edges(range);
	}

	void walk_hidden_edges(const CodeRange &range)
	{
		uint64_t targets[max_hidden_edges];
		const long count = facts_.hidden_targets(range, targets, max_hidden_edges, facts_.context);
		if (count < 0 || size_t(count) > max_hidden_edges) {
			refuse(ExitRefusal::unreadable, range.address);
			return;
		}
		for (long i = 0; i < count && result_.refusal == ExitRefusal::none; ++i)
			follow(targets[i], targets[i], ExitRefusal::hidden_edge_elsewhere,
			       ExitRefusal::hidden_edge_elsewhere);
	}

	ExitDecoder decode_;
	const ExitFacts &facts_;
	FunctionExit *exits_;
	size_t capacity_;
	CodeRange ranges_[1 + max_exit_pieces];
	OwnedArray<uint8_t> starts_[1 + max_exit_pieces]; // a bit per byte: an instruction starts there
	size_t range_count_ = 0;
	GrowingArray<uint64_t> landings_;	// edges' targets inside the ranges
	GrowingArray<uint64_t> computed_jumps_; // jumps whose target the instruction before computed
	ExitCensus result_;
};

} // namespace

ExitCensus census_exits(const CodeRange &function, ExitDecoder decode, const ExitFacts &facts, FunctionExit *exits,
			size_t capacity)
{
	// Both facts are asked (unlike CodeGraphFacts::hidden_targets, never
	// optional: the census must see every exit).
	OKP_ASSERT(facts.place && facts.hidden_targets);
	OKP_ASSERT(exits || !capacity);
	return Census(function, decode, facts, exits, capacity).run();
}

} // namespace okp
