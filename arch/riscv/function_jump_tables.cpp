// SPDX-License-Identifier: GPL-2.0
// FunctionAnalysis's jump tables: a jump through a register that GCC's
// switch dispatch computes (function_analysis.hpp's opening comment shows
// the sequence) is evaluated forward over the straight-line code before
// it (DispatchEvaluator), with the constants and bounds every path to that
// code agrees on (function_path_facts.cpp); the table's entries, read
// through the caller's DataReader, become the jump's successors. Once
// every table is known, each is proven again on the graph that includes
// them all; any jump through a register left unexplained is the
// function's problem.
#include "riscv/function_analysis.hpp"

#include "core/owned.hpp"
#include "core/sort.hpp"

namespace okp::riscv {

namespace {

// What the evaluation of a switch's dispatch sequence knows about the value
// of a register. Only exact facts: anything else is opaque.
struct Value {
	enum class Kind : uint8_t {
		opaque,	   // some value, named by id (an index, once bounded)
		constant,  // value
		high_word, // the low word of id, shifted up 32: half a zero-extension
		scaled,	   // index << shift
		slot,	   // value + (index << shift): where entry index is
		entry,	   // the size bytes at value + (index << shift), extended, plus addend
	};
	Kind kind = Kind::opaque;
	// scaled, slot, entry: the index is the low word of the values of
	// word class id (zero-extended) rather than the value id itself.
	bool by_word = false;
	bool zero_extended = false; // opaque: its upper 32 bits are zero
	bool sign_extends = false;  // entry: a 4-byte load sign-extends
	uint8_t shift = 0, size = 0;
	uint16_t id = 0;
	uint64_t value = 0;
	int64_t addend = 0;
};

// Runs straight-line code forward from unknown registers (each a distinct
// opaque value), keeping the values a jump table's dispatch computes and
// the bounds that the branches it falls through put on indexes.
//
// GCC bounds an index and then uses it in another width: the check is on
// "sext.w" of a 32-bit value and the index its zero-extension, or on one
// load of a 32-bit variable and the index a second load of it. So values
// also belong to word classes, whose members share their low 32 bits
// (sext.w of a value, 4-byte loads of the same address with no store in
// between), and a bound below 2^31 on a value bounds its word too. The
// second load is the compiler's own assumption: it reloads only what C
// says does not change (a plain access, not READ_ONCE).
class DispatchEvaluator {
public:
	DispatchEvaluator()
	{
		words_[unbounded] = unbounded;
		for (Value &value : registers_)
			value = opaque();
		registers_[reg::zero] = constant(0);
	}

	const Value &value_of(unsigned n) const { return registers_[n]; }
	void set_constant(unsigned n, uint64_t number) { registers_[n] = constant(number); }
	// Register n is below entries (whatever else it is).
	void set_bound(unsigned n, uint32_t entries) { bound(registers_[n], entries); }
	// How many entries the index of a scaled, slot or entry value may
	// select: 0 when nothing bounds it.
	uint32_t entries_of(const Value &value) const
	{
		return value.by_word ? word_limits_[value.id] : limits_[value.id];
	}

	void step(const Instruction &insn, uint64_t address)
	{
		const Value a = registers_[insn.rs1], b = registers_[insn.rs2];
		Value result;
		if (insn.kind == InstructionClass::store)
			cell_count_ = 0; // it may write any of them
		switch (insn.operation) {
		case Operation::lui:
		case Operation::c_lui:
			result = constant(uint64_t(insn.immediate));
			break;
		case Operation::auipc:
			result = constant(address + insn.immediate);
			break;
		case Operation::addi:
		case Operation::c_addi:
		case Operation::c_li: // rs1 is x0
		case Operation::c_addi16sp:
		case Operation::c_addi4spn:
			result = add_immediate(a, insn.immediate);
			break;
		case Operation::addiw:
		case Operation::c_addiw:
			if (a.kind == Value::Kind::constant)
				result = constant(uint64_t(int64_t(int32_t(uint32_t(a.value + insn.immediate)))));
			else if (a.kind == Value::Kind::opaque && insn.immediate == 0)
				result = opaque(words_[a.id]); // sext.w: the same low word
			else
				result = opaque();
			break;
		case Operation::c_mv:
			result = b;
			break;
		case Operation::add:
		case Operation::c_add:
			result = add(a, b);
			break;
		case Operation::slli:
		case Operation::c_slli:
			result = shift_left(a, unsigned(insn.immediate));
			break;
		case Operation::srli:
		case Operation::c_srli:
			result = shift_right(a, unsigned(insn.immediate));
			break;
		case Operation::andi:
		case Operation::c_andi:
			result = mask(a, insn.immediate);
			break;
		case Operation::lw:
		case Operation::c_lw:
			result = load(a, insn.immediate, 4, true);
			break;
		case Operation::lwu:
			result = load(a, insn.immediate, 4, false);
			break;
		case Operation::ld:
		case Operation::c_ld:
			result = load(a, insn.immediate, 8, false);
			break;
		case Operation::bltu: // falls through when b <= a
			if (a.kind == Value::Kind::constant && b.kind == Value::Kind::opaque &&
			    a.value < max_jump_table_entries)
				bound(b, uint32_t(a.value + 1));
			break;
		case Operation::bgeu: // falls through when a < b
			if (a.kind == Value::Kind::opaque && b.kind == Value::Kind::constant &&
			    b.value <= max_jump_table_entries)
				bound(a, uint32_t(b.value));
			break;
		default:
			result = opaque();
			break;
		}
		for (unsigned n = 1; n < 32; ++n)
			if (insn.writes & register_bit(n))
				registers_[n] = n == insn.rd ? result : opaque();
	}

private:
	static constexpr size_t max_ids = 32 + 2 * max_dispatch_instructions + 2;
	static constexpr uint16_t unbounded = max_ids - 1; // every value past the last id
	struct Cell {					   // a 4-byte load's address and word
		Value base;
		int64_t offset;
		uint16_t word;
	};

	// A new value, in its own word class or in word.
	Value opaque(uint16_t word = unbounded)
	{
		Value value;
		if (next_id_ == unbounded)
			return value.id = unbounded, value;
		value.id = next_id_++;
		words_[value.id] = word == unbounded ? value.id : word;
		return value;
	}
	static Value constant(uint64_t number)
	{
		Value value;
		value.kind = Value::Kind::constant;
		value.value = number;
		return value;
	}
	void bound(const Value &value, uint32_t entries)
	{
		// entries <= 2^10: the value's low word is the value.
		const uint16_t word = words_[value.id];
		if (value.id != unbounded && (limits_[value.id] == 0 || entries < limits_[value.id]))
			limits_[value.id] = entries;
		if (word != unbounded && (word_limits_[word] == 0 || entries < word_limits_[word]))
			word_limits_[word] = entries;
		if (value.zero_extended && value.id != unbounded)
			limits_[value.id] = word_limits_[word]; // its value is its low word
	}
	Value add_immediate(const Value &a, int64_t immediate)
	{
		Value value = a;
		switch (a.kind) {
		case Value::Kind::constant:
		case Value::Kind::slot:
			value.value += immediate;
			return value;
		case Value::Kind::entry:
			value.addend += immediate;
			return value;
		default:
			return immediate == 0 ? a : opaque(); // mv keeps the value
		}
	}
	Value add(const Value &a, const Value &b)
	{
		if (b.kind == Value::Kind::constant && a.kind != Value::Kind::constant)
			return add(b, a);
		if (a.kind != Value::Kind::constant)
			return opaque();
		Value value = b;
		switch (b.kind) {
		case Value::Kind::constant:
			value.value += a.value;
			return value;
		case Value::Kind::scaled:
			value.kind = Value::Kind::slot;
			value.value = a.value;
			return value;
		case Value::Kind::entry:
			value.addend += int64_t(a.value);
			return value;
		default:
			return opaque();
		}
	}
	Value shift_left(const Value &a, unsigned amount)
	{
		if (a.kind == Value::Kind::constant)
			return constant(a.value << amount);
		if (amount == 0)
			return a;
		if (a.kind != Value::Kind::opaque || (amount > 3 && amount != 32))
			return opaque();
		Value value = a;
		if (amount == 32) {
			value.kind = Value::Kind::high_word;
			value.id = words_[a.id];
			return value;
		}
		// A zero-extended value is its low word: bounded with it.
		value.kind = Value::Kind::scaled;
		value.by_word = a.zero_extended;
		value.id = a.zero_extended ? words_[a.id] : a.id;
		value.shift = uint8_t(amount);
		return value;
	}
	Value shift_right(const Value &a, unsigned amount)
	{
		if (a.kind == Value::Kind::constant)
			return constant(a.value >> amount);
		// (word << 32) >> (32 - s): the low word, zero-extended, << s.
		if (a.kind != Value::Kind::high_word || amount > 32 || 32 - amount > 3)
			return opaque();
		Value value = a;
		value.kind = Value::Kind::scaled;
		value.by_word = true;
		value.shift = uint8_t(32 - amount);
		return value;
	}
	Value mask(const Value &a, int64_t immediate)
	{
		if (a.kind == Value::Kind::constant)
			return constant(a.value & uint64_t(immediate));
		// The same mask of the same value is the same value (GCC
		// zero-extends a byte once for the bound, once for the index).
		for (size_t m = 0; m < mask_count_; ++m)
			if (a.kind == Value::Kind::opaque && masks_[m].source == a.id && a.id != unbounded &&
			    masks_[m].immediate == immediate)
				return masks_[m].result;
		Value value = opaque();
		if (immediate >= 0 && uint64_t(immediate) < max_jump_table_entries)
			bound(value, uint32_t(immediate + 1));
		if (a.kind == Value::Kind::opaque && mask_count_ < sizeof(masks_) / sizeof(masks_[0]))
			masks_[mask_count_++] = {a.id, immediate, value};
		return value;
	}
	Value load(const Value &a, int64_t offset, uint8_t size, bool sign_extends)
	{
		if (a.kind == Value::Kind::slot) {
			Value value = a;
			value.kind = Value::Kind::entry;
			value.value += offset;
			value.size = size;
			value.sign_extends = sign_extends;
			value.addend = 0;
			return value;
		}
		if (size != 4 || (a.kind != Value::Kind::opaque && a.kind != Value::Kind::constant))
			return opaque();
		Value value = opaque(word_at(a, offset));
		value.zero_extended = !sign_extends;
		return value;
	}
	// The word class of the 4 bytes at base + offset.
	uint16_t word_at(const Value &base, int64_t offset)
	{
		for (size_t c = 0; c < cell_count_; ++c) {
			const Cell &cell = cells_[c];
			if (cell.base.kind == base.kind && cell.offset == offset &&
			    (base.kind == Value::Kind::constant ? cell.base.value == base.value
								: cell.base.id == base.id && base.id != unbounded))
				return cell.word;
		}
		const Value word = opaque();
		if (cell_count_ < sizeof(cells_) / sizeof(cells_[0]) && word.id != unbounded)
			cells_[cell_count_++] = {base, offset, word.id};
		return word.id;
	}

	Value registers_[32];
	uint16_t words_[max_ids] = {};
	uint32_t limits_[max_ids] = {}, word_limits_[max_ids] = {};
	Cell cells_[4];
	size_t cell_count_ = 0;
	struct Mask {
		uint16_t source;
		int64_t immediate;
		Value result;
	} masks_[4];
	size_t mask_count_ = 0;
	uint16_t next_id_ = 0;
};

// Whether the dispatch sequence may continue backwards over insn: code
// that falls through to the next instruction and keeps every register
// but the ones it writes (no call, no trap on purpose).
bool continues_dispatch(const Instruction &insn)
{
	switch (insn.kind) {
	case InstructionClass::plain:
	case InstructionClass::load:
	case InstructionClass::store:
	case InstructionClass::pc_relative:
	case InstructionClass::conditional_branch:
		return true;
	default:
		return false;
	}
}

} // namespace

const FunctionAnalysis::JumpTable *FunctionAnalysis::jump_table(size_t jump) const
{
	size_t low = 0, high = table_count_;
	while (low < high) {
		const size_t middle = (low + high) / 2;
		if (tables_[middle].jump < jump)
			low = middle + 1;
		else
			high = middle;
	}
	return low < table_count_ && tables_[low].jump == jump ? &tables_[low] : nullptr;
}

const uint32_t *FunctionAnalysis::jump_table_entries(size_t index, size_t *count) const
{
	const JumpTable *table = jump_table(index);
	if (!table)
		return nullptr;
	*count = table->count;
	return entries_.get() + table->first;
}

bool FunctionAnalysis::add_table_entry(uint32_t index)
{
	// Room for 64 entries at first, doubled whenever it runs out.
	return (entries_.capacity() || entries_.reserve(64)) && entries_.push(index);
}

bool FunctionAnalysis::recover_jump_table(size_t jump, const DataReader &data, const JumpTable *expected)
{
	// The dispatch: straight-line code before the jump that nothing
	// enters but through its first instruction, so that the path
	// through it is the only way to the jump.
	size_t start = jump;
	while (start > 0 && jump - start < max_dispatch_instructions &&
	       !target_within(address_of(start), address_of(start) + 1) && continues_dispatch(instruction(start - 1)))
		--start;
	// What it reads before writing may be constants set earlier (a
	// table's address or a bound kept in a register across a loop), or
	// an index bounded earlier (on every path to the dispatch).
	// On the heap: a kernel stack frame has no room for its tables.
	const Owned<DispatchEvaluator> owned = Owned<DispatchEvaluator>::make();
	if (!owned)
		return false;
	DispatchEvaluator &evaluator = *owned;
	RegisterSet written = 0, asked = 0;
	for (size_t i = start; i < jump; ++i) {
		const Instruction insn = instruction(i);
		const RegisterSet needed = insn.reads & ~written & ~asked;
		for (unsigned n = 1; n < 32; ++n) {
			uint64_t value = 0;
			if (!(needed & register_bit(n)))
				continue;
			if (constant_before(start, n, &value))
				evaluator.set_constant(n, value);
			else if (const uint32_t entries = bound_before(start, n))
				evaluator.set_bound(n, entries);
		}
		asked |= needed;
		written |= insn.writes;
		evaluator.step(insn, address_of(i));
	}

	const Instruction insn = instruction(jump);
	const Value &target = evaluator.value_of(insn.rs1);
	const uint32_t count = target.kind == Value::Kind::entry ? evaluator.entries_of(target) : 0;
	if (count == 0 || count > max_jump_table_entries || (expected && expected->count != count))
		return false;
	const size_t first = entries_.size();
	uint32_t found = 0;
	for (; found < count; ++found) {
		const uint64_t address = target.value + (uint64_t(found) << target.shift);
		uint8_t bytes[8];
		if (data.read(address, bytes, target.size, data.context) != target.size)
			break;
		uint64_t entry = 0;
		for (size_t b = target.size; b-- > 0;)
			entry = entry << 8 | bytes[b];
		if (target.size == 4 && target.sign_extends)
			entry = uint64_t(int64_t(int32_t(uint32_t(entry))));
		const long index = index_of(entry + target.addend + insn.immediate);
		if (index < 0)
			break;
		if (expected ? entries_[expected->first + found] != uint32_t(index) : !add_table_entry(uint32_t(index)))
			break;
	}
	if (expected)
		return found == count;
	if (found != count) {
		entries_.truncate(first);
		return false;
	}
	// Kept sorted by jump for jump_table()'s binary search: a later round
	// can recover a jump that comes before those already found.
	size_t at = table_count_++;
	for (; at > 0 && tables_[at - 1].jump > jump; --at)
		tables_[at] = tables_[at - 1];
	tables_[at] = {uint32_t(jump), uint32_t(first), count};
	flags_[jump] |= flag_jump_table;
	return true;
}

void FunctionAnalysis::resolve_indirect_jumps(const DataReader *data)
{
	// Tables proven on a function already in trouble would be dropped.
	if (problem_ != FunctionProblem::none)
		return;
	const auto unknown = [this](size_t i) {
		const Instruction insn = instruction(i);
		return insn.kind == InstructionClass::indirect_jump && insn.rd == reg::zero && !is_return(insn) &&
		       !(flags_[i] & flag_far_jump);
	};
	size_t candidates = 0;
	for (size_t i = 0; i < count_; ++i)
		candidates += unknown(i);
	if (candidates == 0)
		return;
	if (data && data->read)
		tables_ = OwnedArray<JumpTable>::make(candidates);
	// A table's cases may hold what another's proof walks back over:
	// try again while tables come out.
	for (size_t found = 1; tables_ && found && link_jumps();) {
		found = 0;
		for (size_t i = 0; i < count_; ++i)
			found += unknown(i) && !(flags_[i] & flag_jump_table) && recover_jump_table(i, *data, nullptr);
	}
	for (size_t i = 0; i < count_; ++i)
		if (unknown(i) && !(flags_[i] & flag_jump_table))
			set_problem(FunctionProblem::indirect_jump, address_of(i));

	if (problem_ == FunctionProblem::none && table_count_) {
		// The entries are jump targets (no window may span one) and
		// edges. With them, every table must come out the same again:
		// then every path the proofs walked is a path of the whole
		// graph, and every jump of the function goes where it says.
		const bool room = targets_.reserve(targets_.size() + entries_.size());
		if (room) {
			for (size_t e = 0; e < entries_.size(); ++e)
				add_target(address_of(entries_[e]));
			sort_addresses(targets_.get(), targets_.size());
		}
		if (!room || !link_jumps())
			set_problem(FunctionProblem::indirect_jump, address_of(tables_[0].jump));
		for (size_t t = 0; t < table_count_ && problem_ == FunctionProblem::none; ++t) {
			const JumpTable table = tables_[t];
			if (!recover_jump_table(table.jump, *data, &table))
				set_problem(FunctionProblem::indirect_jump, address_of(table.jump));
		}
		// An entry on the jalr of an auipc + jalr pair splits it.
		for (size_t i = 0; i < count_; ++i)
			if ((flags_[i] & flag_far_jump) && instruction(i).rd == reg::zero &&
			    target_within(address_of(i), address_of(i) + 1))
				set_problem(FunctionProblem::indirect_jump, address_of(i));
	}
	// Tables proven on a graph that misses some jump prove nothing: the
	// liveness reads everything at every jump through a register then.
	if (problem_ != FunctionProblem::none) {
		for (size_t t = 0; t < table_count_; ++t)
			flags_[tables_[t].jump] &= uint8_t(~flag_jump_table);
		table_count_ = 0;
	}
	links_ = {};
	visits_ = {};
	link_count_ = 0;
}

} // namespace okp::riscv
