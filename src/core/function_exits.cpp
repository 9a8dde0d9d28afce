// SPDX-License-Identifier: GPL-2.0
#include "core/function_exits.hpp"

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
			walk(ranges_[r]);
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

	bool inside(uint64_t address) const
	{
		for (size_t r = 0; r < range_count_; ++r)
			if (address >= ranges_[r].address && address < ranges_[r].address + ranges_[r].size)
				return true;
		return false;
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
		if (inside(target))
			return Lead::inside;
		CodeRange piece;
		switch (facts_.place(target, &piece, facts_.context)) {
		case ExitPlace::piece:
			if (!piece.bytes || !piece.size) {
				refuse(ExitRefusal::unreadable, target);
				return Lead::refused;
			}
			if (inside(piece.address))
				return Lead::inside; // a piece entered away from its start
			if (range_count_ == 1 + max_exit_pieces) {
				refuse(ExitRefusal::too_many_pieces, target);
				return Lead::refused;
			}
			ranges_[range_count_++] = piece;
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

	void walk(const CodeRange &range)
	{
		ExitFlow last = ExitFlow::padding;
		uint64_t last_at = range.address;
		for (size_t offset = 0; offset < range.size && result_.refusal == ExitRefusal::none;) {
			ExitStep step;
			decode_(range, offset, step);
			const uint64_t at = range.address + offset;
			if (step.flow == ExitFlow::undecodable || !step.length || offset + step.length > range.size) {
				if (!padding_only(range, offset))
					refuse(ExitRefusal::undecodable, at);
				break;
			}
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
	size_t range_count_ = 0;
	ExitCensus result_;
};

} // namespace

ExitCensus census_exits(const CodeRange &function, ExitDecoder decode, const ExitFacts &facts, FunctionExit *exits,
			size_t capacity)
{
	return Census(function, decode, facts, exits, capacity).run();
}

} // namespace okp
