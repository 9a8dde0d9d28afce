// SPDX-License-Identifier: GPL-2.0
#include "code_graph.hpp"

#include "assert.hpp"
#include "errno.hpp"
#include "owned.hpp"

namespace okp {
namespace {

// The function starts still to scan: a stack, room for 64 at first,
// doubled whenever it runs out.
class Worklist {
public:
	// False when memory is short.
	bool push(uint64_t function) { return (items_.capacity() || items_.reserve(64)) && items_.push(function); }
	bool empty() const { return items_.size() == 0; }
	uint64_t pop()
	{
		const uint64_t function = items_[items_.size() - 1];
		items_.truncate(items_.size() - 1);
		return function;
	}

private:
	GrowingArray<uint64_t> items_;
};

// One heap buffer, grown to the largest function read so far (its bytes
// are not kept: each function is read afresh).
class TextBuffer {
public:
	// size bytes, or nullptr when memory is short.
	uint8_t *reserve(size_t size)
	{
		if (size > bytes_.size()) {
			bytes_ = {}; // the smaller buffer goes first
			bytes_ = OwnedArray<uint8_t>::make(size);
		}
		return bytes_.get();
	}

private:
	OwnedArray<uint8_t> bytes_;
};

struct Walk {
	const CodeGraphFacts &facts;
	RangeList &reached;
	const char *why;
	const CodeGraphLimits &limits;
	size_t added = 0;
	Worklist pending;

	// Marks the function holding address as reached and queues it once.
	ReachResult visit(uint64_t address, bool must_exist)
	{
		uint64_t start = 0, size = 0;
		if (!facts.function_of(address, &start, &size, facts.context) || size == 0)
			return {must_exist ? error::einval : 0, address};
		if (facts.skips && facts.skips(start, facts.context))
			return {};
		if (reached.find(start))
			return {}; // visited
		if (added == limits.max_functions || size > limits.max_function_size)
			return {error::e2big, start};
		if (!reached.add(start, start + size, why) || !pending.push(start))
			return {error::enomem, start};
		++added;
		return {};
	}
};

} // namespace

ReachResult reach_functions(const uint64_t *roots, size_t root_count, const CodeGraphFacts &facts,
			    ReferenceScanner scan, RangeList &reached, const char *why, const CodeGraphLimits &limits)
{
	// reached is the walk's from empty: what it finds is what it visited.
	OKP_ASSERT(reached.size() == 0);
	Walk walk{facts, reached, why, limits, 0, {}};
	for (size_t i = 0; i < root_count; ++i)
		if (const ReachResult result = walk.visit(roots[i], true); result.error)
			return result;

	TextBuffer text;
	const OwnedArray<uint64_t> targets =
		OwnedArray<uint64_t>::make(limits.max_references ? limits.max_references : 1);
	if (!targets)
		return {error::enomem, 0};
	ReachResult result;
	while (!result.error && !walk.pending.empty()) {
		const uint64_t function = walk.pending.pop();
		if (facts.stops_at && facts.stops_at(function, facts.context))
			continue;
		const AddressRange &range = *reached.find(function);
		const size_t size = range.end - range.start;
		uint8_t *bytes = text.reserve(size);
		if (!bytes) {
			result = {error::enomem, function};
			break;
		}
		if (facts.read_text(function, bytes, size, facts.context) != size) {
			result = {error::eio, function};
			break;
		}
		const CodeRange code{bytes, function, size};
		uint64_t hidden[max_hidden_entries];
		HiddenEntries entries;
		if (facts.hidden_targets) {
			const long found = facts.hidden_targets(code, hidden, max_hidden_entries, facts.context);
			entries = {hidden, found > 0 ? size_t(found) : 0,
				   found >= 0 && size_t(found) <= max_hidden_entries};
		}
		const size_t count = scan(code, entries, targets.get(), limits.max_references);
		if (count > limits.max_references) {
			result = {error::e2big, function};
			break;
		}
		for (size_t i = 0; i < count && !result.error; ++i)
			result = walk.visit(targets[i], false);
	}
	return result;
}

namespace {

constexpr size_t max_names = 32;

struct Resolved {
	uint64_t functions[max_names];
	const char *names[max_names];
	size_t count = 0;

	bool add(NameList list, uint64_t (*lookup)(const char *name, void *context), void *context)
	{
		for (size_t i = 0; i < list.count; ++i) {
			if (count == max_names)
				return false;
			if (const uint64_t address = lookup(list.names[i], context)) {
				functions[count] = address;
				names[count++] = list.names[i];
			}
		}
		return true;
	}
	const char *find(uint64_t function) const
	{
		for (size_t i = 0; i < count; ++i)
			if (functions[i] == function)
				return names[i];
		return nullptr;
	}
};

struct TrapPathContext {
	Resolved stops, skips;
	const CodeGraphFacts *facts = nullptr;
};

template <size_t N> NameList list_of(const char *const (&names)[N])
{
	return NameList{names, N};
}

} // namespace

TrapPath reach_trap_path(const uint64_t *roots, size_t root_count, const TrapPathStops &extra,
			 uint64_t (*lookup)(const char *name, void *context), const CodeGraphFacts &facts,
			 ReferenceScanner scan, RangeList &reached, const char *why)
{
	// stops_at and skips are this function's own: a caller's are lost.
	OKP_ASSERT(lookup && !facts.stops_at && !facts.skips);
	TrapPath result;
	TrapPathContext context;
	context.facts = &facts;
	if (!context.stops.add(list_of(common_stops), lookup, facts.context) ||
	    !context.stops.add(extra.stops, lookup, facts.context) ||
	    !context.skips.add(list_of(common_skips), lookup, facts.context) ||
	    !context.skips.add(extra.skips, lookup, facts.context)) {
		result.why = "too many stops";
		return result;
	}
	// The walk's callbacks get the stops; the caller's keep their context.
	CodeGraphFacts walk_facts{};
	walk_facts.stops_at = [](uint64_t function, void *raw) -> const char * {
		return static_cast<const TrapPathContext *>(raw)->stops.find(function);
	};
	walk_facts.skips = [](uint64_t function, void *raw) {
		return static_cast<const TrapPathContext *>(raw)->skips.find(function) != nullptr;
	};
	walk_facts.function_of = [](uint64_t address, uint64_t *start, uint64_t *size, void *raw) {
		const CodeGraphFacts &outer = *static_cast<const TrapPathContext *>(raw)->facts;
		return outer.function_of(address, start, size, outer.context);
	};
	walk_facts.read_text = [](uint64_t address, uint8_t *buffer, size_t size, void *raw) {
		const CodeGraphFacts &outer = *static_cast<const TrapPathContext *>(raw)->facts;
		return outer.read_text(address, buffer, size, outer.context);
	};
	if (facts.hidden_targets)
		walk_facts.hidden_targets = [](const CodeRange &range, uint64_t *targets, size_t capacity, void *raw) {
			const CodeGraphFacts &outer = *static_cast<const TrapPathContext *>(raw)->facts;
			return outer.hidden_targets(range, targets, capacity, outer.context);
		};
	walk_facts.context = &context;
	result.walk = reach_functions(roots, root_count, walk_facts, scan, reached, why);
	switch (result.walk.error) {
	case 0:
		break;
	case error::e2big:
		result.why = "what the trap path reaches passed okprobe's limits";
		break;
	case error::eio:
		result.why = "unreadable text on the trap path";
		break;
	case error::enomem:
		result.why = "out of memory";
		break;
	default:
		result.why = "a root of the trap path is no function";
		break;
	}
	return result;
}

} // namespace okp
