// SPDX-License-Identifier: GPL-2.0
#include "riscv/function_analysis.hpp"

#include "core/owned.hpp"
#include "core/sort.hpp"

namespace okp::riscv {

namespace {

bool is_padding(const uint8_t *bytes, size_t size)
{
	// The linker pads with zeros (c.unimp) between functions.
	for (size_t i = 0; i < size; ++i)
		if (bytes[i] != 0)
			return false;
	return true;
}

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

void FunctionAnalysis::clear()
{
	offsets_ = {};
	live_ = {};
	flags_ = {};
	targets_.reset();
	pieces_ = {};
	tables_ = {};
	entries_.reset();
	links_ = {};
	visits_ = {};
	table_count_ = link_count_ = 0;
	walk_ = 0;
	count_ = decoded_size_ = 0;
	problem_ = FunctionProblem::none;
	problem_address_ = 0;
	sweeps_ = 0;
	kept_call_ = -1;
	if (strict_)
		psabi_ = true; // what the caller asked for
	strict_ = false;
}

Instruction FunctionAnalysis::instruction(size_t index) const
{
	const size_t offset = offsets_[index];
	return decode_instruction(function_.bytes + offset, decoded_size_ - offset);
}

long FunctionAnalysis::index_of(uint64_t address) const
{
	if (address < function_.address || address >= function_.address + decoded_size_)
		return -1;
	const uint32_t offset = uint32_t(address - function_.address);
	size_t low = 0, high = count_;
	while (low < high) {
		const size_t middle = (low + high) / 2;
		if (offsets_[middle] < offset)
			low = middle + 1;
		else
			high = middle;
	}
	return low < count_ && offsets_[low] == offset ? long(low) : -1;
}

RegisterSet FunctionAnalysis::live_at(uint64_t address) const
{
	const long index = index_of(address);
	return index < 0 ? all_registers : live_[index];
}

bool FunctionAnalysis::leaves_function(uint64_t target) const
{
	if (target - function_.address < function_.size)
		return false;
	for (size_t p = 0; p < pieces_.size(); ++p)
		if (target - pieces_[p].address < pieces_[p].size)
			return false;
	return true;
}

RegisterSet FunctionAnalysis::live_at_jump_target(uint64_t target) const
{
	if (!leaves_function(target))
		return live_at(target);
	return psabi_ ? read_at_tail_call : all_registers;
}

uint64_t FunctionAnalysis::target_within(uint64_t start, uint64_t end) const
{
	size_t low = 0, high = targets_.size();
	while (low < high) {
		const size_t middle = (low + high) / 2;
		if (targets_[middle] < start)
			low = middle + 1;
		else
			high = middle;
	}
	return low < targets_.size() && targets_[low] < end ? targets_[low] : 0;
}

void FunctionAnalysis::add_target(uint64_t target)
{
	if (targets_.size() < targets_.capacity())
		targets_.push(target); // cannot fail: within the reserved room
}

void FunctionAnalysis::scan_piece(const CodeRange &piece)
{
	for (size_t at = 0; at < piece.size;) {
		const Instruction insn = decode_instruction(piece.bytes + at, piece.size - at);
		if (insn.length == 0)
			break;
		const uint64_t target = piece.address + at + insn.immediate;
		if (has_direct_target(insn) && target >= function_.address &&
		    target < function_.address + function_.size) {
			add_target(target);
			const long index = index_of(target);
			if (index >= 0)
				flags_[index] |= flag_entry_point;
		}
		at += insn.length;
	}
}

uint64_t FunctionAnalysis::far_jump_target(size_t index) const
{
	const Instruction auipc = instruction(index - 1), jalr = instruction(index);
	return address_of(index - 1) + auipc.immediate + jalr.immediate;
}

void FunctionAnalysis::pair_far_jumps()
{
	// "auipc rX, hi; jalr rd, lo(rX)" is a direct call or jump out of
	// jal's +-1 MiB reach (the assembler's call and tail): its target
	// is in the bytes, unless something jumps to the jalr alone.
	bool added = false;
	for (size_t i = 0; i < count_; ++i) {
		const Instruction insn = instruction(i);
		if (insn.kind != InstructionClass::indirect_jump)
			continue;
		if (i > 0 && insn.operation == Operation::jalr && insn.rs1 != reg::zero) {
			const Instruction previous = instruction(i - 1);
			if (previous.operation == Operation::auipc && previous.rd == insn.rs1 &&
			    !target_within(address_of(i), address_of(i) + 1)) {
				flags_[i] |= flag_far_jump;
				const uint64_t target = far_jump_target(i);
				if (insn.rd == reg::zero && index_of(target) >= 0) {
					add_target(target);
					added = true;
				}
			}
		}
	}
	if (added)
		sort_addresses(targets_.get(), targets_.size());
}

void FunctionAnalysis::set_problem(FunctionProblem problem, uint64_t address)
{
	if (problem_ != FunctionProblem::none)
		return;
	problem_ = problem;
	problem_address_ = address;
}

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

bool FunctionAnalysis::link_jumps()
{
	size_t count = entries_.size();
	for (size_t i = 0; i < count_; ++i) {
		const Instruction insn = instruction(i);
		count += has_direct_target(insn) || (flags_[i] & flag_far_jump);
	}
	links_ = {}; // the old graph goes before the new one is allocated
	links_ = OwnedArray<uint64_t>::make(count ? count : 1);
	if (!visits_) {
		visits_ = OwnedArray<uint32_t>::make(3 * count_);
		for (size_t i = 0; i < visits_.size(); ++i)
			visits_[i] = 0;
	}
	link_count_ = 0;
	if (!links_ || !visits_)
		return false;
	const auto link = [this](uint64_t target, size_t from) {
		const long to = index_of(target);
		if (to >= 0)
			links_[link_count_++] = uint64_t(to) << 32 | from;
	};
	for (size_t i = 0; i < count_; ++i) {
		const Instruction insn = instruction(i);
		if (has_direct_target(insn))
			link(address_of(i) + insn.immediate, i);
		else if ((flags_[i] & flag_far_jump) && insn.rd == reg::zero)
			link(far_jump_target(i), i);
	}
	for (size_t t = 0; t < table_count_; ++t)
		for (size_t e = 0; e < tables_[t].count; ++e)
			links_[link_count_++] = uint64_t(entries_[tables_[t].first + e]) << 32 | tables_[t].jump;
	sort_addresses(links_.get(), link_count_);
	return true;
}

bool FunctionAnalysis::constant_definition(size_t index, unsigned n, uint64_t *value) const
{
	const Instruction insn = instruction(index);
	switch (insn.operation) {
	case Operation::lui:
	case Operation::c_lui:
	case Operation::c_li:
		*value = uint64_t(insn.immediate);
		return true;
	case Operation::auipc:
		*value = address_of(index) + insn.immediate;
		return true;
	case Operation::addi:
	case Operation::addiw:
	case Operation::c_addi:
	case Operation::c_addiw: {
		// li, or the second half of lui/auipc + addi when nothing
		// jumps between the two.
		uint64_t base = 0;
		if (insn.rs1 == reg::zero)
			base = 0;
		else if (insn.rs1 != n || index == 0 || target_within(address_of(index), address_of(index) + 1) ||
			 (flags_[index] & flag_entry_point))
			return false;
		else {
			const Instruction high = instruction(index - 1);
			if (high.rd != n || (high.operation != Operation::lui && high.operation != Operation::c_lui &&
					     high.operation != Operation::auipc))
				return false;
			constant_definition(index - 1, n, &base);
		}
		*value = base + insn.immediate;
		if (insn.operation == Operation::addiw || insn.operation == Operation::c_addiw)
			*value = uint64_t(int64_t(int32_t(uint32_t(*value))));
		return true;
	}
	default:
		return false;
	}
}

template <typename Decide> bool FunctionAnalysis::walk_back(size_t index, Decide &&decide) const
{
	struct Pending {
		uint32_t at;
		uint8_t edge;
	};
	Pending pending[64];
	size_t depth = 0, steps = 0;
	const uint32_t walk = ++walk_;
	const auto push = [&](size_t at, uint8_t edge) {
		uint32_t &seen = visits_[3 * at + edge];
		if (seen == walk)
			return true;
		if (depth == sizeof(pending) / sizeof(pending[0]))
			return false;
		seen = walk;
		pending[depth++] = {uint32_t(at), edge};
		return true;
	};
	// The predecessors of at; none known from outside the bytes.
	const auto reach = [&](size_t at) {
		if (at == 0 || (flags_[at] & flag_entry_point))
			return false;
		const Instruction previous = instruction(at - 1);
		const bool both = previous.kind == InstructionClass::conditional_branch &&
				  address_of(at - 1) + previous.immediate == address_of(at);
		if (falls_through(previous) && !push(at - 1, both ? 2 : 0))
			return false;
		size_t low = 0, high = link_count_;
		while (low < high) {
			const size_t middle = (low + high) / 2;
			if ((links_[middle] >> 32) < at)
				low = middle + 1;
			else
				high = middle;
		}
		for (; low < link_count_ && (links_[low] >> 32) == at; ++low) {
			const size_t from = uint32_t(links_[low]);
			if (!(both && from == at - 1) && !push(from, 1))
				return false;
		}
		return true;
	};
	if (!reach(index))
		return false;
	while (depth > 0) {
		const Pending next = pending[--depth];
		if (++steps > max_constant_search)
			return false;
		switch (decide(size_t(next.at), next.edge)) {
		case Step::fail:
			return false;
		case Step::found:
			break;
		case Step::back:
			if (!reach(next.at))
				return false;
			break;
		}
	}
	return true;
}

bool FunctionAnalysis::constant_before(size_t index, unsigned n, uint64_t *value) const
{
	// Every path to index must meet a definition of register n by a
	// constant, all the same; a path from outside (the entry, a piece,
	// a fixup) or through a call that may change n leaves it unknown.
	if (n == reg::zero) {
		*value = 0;
		return true;
	}
	const RegisterSet bit = register_bit(n);
	bool known = false;
	const bool walked = walk_back(index, [&](size_t at, uint8_t) {
		const Instruction insn = instruction(at);
		if (is_call(insn)) // the callee keeps callee-saved registers (psABI)
			return insn.rd == reg::ra && !(bit & caller_saved_registers) ? Step::back : Step::fail;
		if (!(insn.writes & bit))
			return Step::back;
		uint64_t defined = 0;
		if (!constant_definition(at, n, &defined) || (known && defined != *value))
			return Step::fail;
		*value = defined;
		known = true;
		return Step::found;
	});
	return walked && known;
}

uint32_t FunctionAnalysis::branch_bound(size_t index, bool taken, unsigned n) const
{
	// bltu x, y goes on when x >= y, jumps when x < y; bgeu the other
	// way round. A bound is "n < C" or "C >= n", C a constant.
	const Instruction insn = instruction(index);
	const bool less = (insn.operation == Operation::bltu) == taken; // else x >= y
	const unsigned other = less ? insn.rs2 : insn.rs1;
	if ((less ? insn.rs1 : insn.rs2) != n || other == n)
		return 0;
	uint64_t constant = 0;
	if (!constant_before(index, other, &constant) || constant >= max_jump_table_entries)
		return 0;
	return uint32_t(less ? constant : constant + 1);
}

uint32_t FunctionAnalysis::bound_before(size_t index, unsigned n) const
{
	// Every path to index must bound register n, by a branch it takes
	// or passes (bltu/bgeu against a constant) or by the instruction
	// that sets it (andi with a small mask, li of a small number), and
	// not change it since. How many entries it may select, or 0.
	const RegisterSet bit = register_bit(n);
	uint32_t most = 0;
	const bool walked = walk_back(index, [&](size_t at, uint8_t edge) {
		const Instruction insn = instruction(at);
		if (is_call(insn))
			return insn.rd == reg::ra && !(bit & caller_saved_registers) ? Step::back : Step::fail;
		uint32_t bound = 0;
		if (edge != 2 && (insn.operation == Operation::bltu || insn.operation == Operation::bgeu))
			bound = branch_bound(at, edge == 1, n);
		else if (insn.writes & bit) {
			const bool mask = insn.operation == Operation::andi || insn.operation == Operation::c_andi;
			const bool number = insn.operation == Operation::c_li ||
					    (insn.operation == Operation::addi && insn.rs1 == reg::zero);
			if ((mask || number) && insn.immediate >= 0 &&
			    uint64_t(insn.immediate) < max_jump_table_entries)
				bound = uint32_t(insn.immediate + 1);
			else
				return Step::fail;
		}
		if (!bound)
			return Step::back;
		most = bound > most ? bound : most;
		return Step::found;
	});
	return walked ? most : 0;
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

void FunctionAnalysis::mark_lr_sc_sequences()
{
	for (size_t i = 0; i < count_; ++i) {
		if (instruction(i).operation != Operation::lr)
			continue;
		size_t end = i;
		for (size_t j = i + 1; j < count_ && j <= i + lr_sc_reach; ++j) {
			if (instruction(j).operation == Operation::sc) {
				end = j;
				break;
			}
		}
		for (size_t j = i; j <= end; ++j)
			flags_[j] |= flag_lr_sc;
	}
}

RegisterSet FunctionAnalysis::live_out(size_t index, const Instruction &insn, const ExtraEdge *edges,
				       size_t edge_count) const
{
	const uint64_t address = address_of(index);
	const RegisterSet next = index + 1 < count_ ? live_[index + 1] : all_registers;
	RegisterSet out;
	switch (insn.kind) {
	case InstructionClass::illegal:
		return all_registers;
	case InstructionClass::system:
		if (insn.operation == Operation::sret || insn.operation == Operation::mret)
			return all_registers;
		out = next;
		break;
	case InstructionClass::direct_jump:
		if (insn.rd == reg::zero)
			out = live_at_jump_target(address + insn.immediate);
		else if (insn.rd == reg::ra)
			out = next;
		else
			return all_registers; // an unknown linkage (t0: millicode)
		break;
	case InstructionClass::indirect_jump:
		if (flags_[index] & flag_jump_table) {
			size_t count = 0;
			const uint32_t *entries = jump_table_entries(index, &count);
			out = 0;
			for (size_t e = 0; e < count; ++e)
				out |= live_[entries[e]];
		} else if (insn.rd == reg::zero && (flags_[index] & flag_far_jump))
			out = live_at_jump_target(far_jump_target(index));
		else if (is_return(insn))
			out = psabi_ ? read_at_return : all_registers;
		else if (insn.rd != reg::ra)
			return all_registers; // jump table, pointer tail call, odd link
		else
			out = next;
		break;
	case InstructionClass::conditional_branch:
		out = next | live_at(address + insn.immediate);
		break;
	default:
		out = next;
		break;
	}
	if (flags_[index] & (flag_exception_entry | flag_jump_label)) {
		for (size_t e = 0; e < edge_count; ++e)
			if (edges[e].from == address)
				out |= live_at(edges[e].to);
	}
	return out;
}

void FunctionAnalysis::solve(const ExtraEdge *edges, size_t edge_count)
{
	for (size_t i = 0; i < count_; ++i)
		live_[i] = 0;
	// Liveness only grows from the empty start, so sweeping backwards
	// until nothing changes reaches the least fixed point; a sweep
	// carries facts through every forward edge at once, so loops cost
	// one sweep per nesting level.
	bool changed = true;
	while (changed) {
		changed = false;
		++sweeps_;
		for (size_t i = count_; i-- > 0;) {
			const Instruction insn = instruction(i);
			const RegisterSet out = live_out(i, insn, edges, edge_count);
			RegisterSet in;
			if (is_call(insn) && insn.rd == reg::ra && psabi_)
				in = (out & ~caller_saved_registers) | argument_registers | insn.reads;
			else if (is_call(insn))
				in = all_registers;
			else
				in = insn.reads | (out & ~insn.writes);
			if (in != live_[i]) {
				live_[i] = in;
				changed = true;
			}
		}
	}
}

bool FunctionAnalysis::build(const CodeRange &function, const CodeRange *pieces, size_t piece_count,
			     const ExtraEdge *edges, size_t edge_count, const DataReader *data)
{
	clear();
	function_ = function;
	if (piece_count) {
		pieces_ = OwnedArray<Piece>::make(piece_count);
		if (!pieces_) {
			problem_ = FunctionProblem::out_of_memory;
			return false;
		}
		for (size_t p = 0; p < piece_count; ++p)
			pieces_[p] = {pieces[p].address, pieces[p].size};
	}

	// First pass: how many instructions and jump targets.
	size_t count = 0, targets = edge_count;
	size_t at = 0;
	while (at < function.size) {
		const Instruction insn = decode_instruction(function.bytes + at, function.size - at);
		if (insn.length == 0) {
			if (!is_padding(function.bytes + at, function.size - at)) {
				problem_ = FunctionProblem::undecodable;
				problem_address_ = function.address + at;
			}
			break;
		}
		++count;
		targets += has_direct_target(insn) || insn.kind == InstructionClass::indirect_jump;
		at += insn.length;
	}
	decoded_size_ = at;
	for (size_t p = 0; p < piece_count; ++p)
		for (size_t off = 0; off < pieces[p].size;) {
			const Instruction insn = decode_instruction(pieces[p].bytes + off, pieces[p].size - off);
			if (insn.length == 0)
				break;
			targets += has_direct_target(insn);
			off += insn.length;
		}

	count_ = count;
	offsets_ = OwnedArray<uint32_t>::make(count ? count : 1);
	live_ = OwnedArray<RegisterSet>::make(count ? count : 1);
	flags_ = OwnedArray<uint8_t>::make(count ? count : 1);
	if (!offsets_ || !live_ || !flags_ || !targets_.reserve(targets)) {
		clear();
		problem_ = FunctionProblem::out_of_memory;
		return false;
	}

	// Second pass: offsets, targets, jumps through registers.
	at = 0;
	for (size_t i = 0; i < count; ++i) {
		const Instruction insn = decode_instruction(function.bytes + at, function.size - at);
		offsets_[i] = uint32_t(at);
		flags_[i] = 0;
		if (has_direct_target(insn))
			add_target(function.address + at + insn.immediate);
		at += insn.length;
	}
	for (size_t p = 0; p < piece_count; ++p)
		scan_piece(pieces[p]);
	for (size_t e = 0; e < edge_count; ++e) {
		add_target(edges[e].to);
		const long from = index_of(edges[e].from);
		if (from >= 0)
			flags_[from] |= edges[e].kind == ExtraEdge::Kind::exception_fixup ? flag_exception_entry
											  : flag_jump_label;
		const long to = index_of(edges[e].to);
		if (to >= 0)
			flags_[to] |= flag_entry_point; // a fixup may change registers
	}
	sort_addresses(targets_.get(), targets_.size());
	pair_far_jumps();
	resolve_indirect_jumps(data);

	// A jump into the middle of an instruction means the bytes are not
	// what the linear decode says: trust nothing about the function.
	for (size_t t = 0; t < targets_.size(); ++t) {
		const uint64_t target = targets_[t];
		if (target >= function.address && target < function.address + decoded_size_ && index_of(target) < 0 &&
		    problem_ == FunctionProblem::none) {
			problem_ = FunctionProblem::target_inside;
			problem_address_ = target;
		}
	}
	mark_lr_sc_sequences();
	if (psabi_) {
		if (!find_temporary_kept_across_call()) {
			clear();
			problem_ = FunctionProblem::out_of_memory;
			return false;
		}
		if (kept_call_ >= 0) {
			psabi_ = false;
			strict_ = true;
		}
	}
	solve(edges, edge_count);
	return true;
}

// Liveness of what the bytes themselves read (no psABI at calls' returns,
// returns and tail calls, and nothing where control leaves the bytes or
// is unknown), then the calls whose return reaches a read of a temporary.
// An ebreak ends a path: BUG()'s never returns, and unrelated code
// follows it. False only when out of memory.
bool FunctionAnalysis::find_temporary_kept_across_call()
{
	kept_call_ = -1;
	const OwnedArray<RegisterSet> reads = OwnedArray<RegisterSet>::make(count_ + 1);
	if (!reads)
		return false;
	for (size_t i = 0; i <= count_; ++i)
		reads[i] = 0;
	const auto at = [&](uint64_t address) {
		const long index = index_of(address);
		return index < 0 ? RegisterSet(0) : reads[index];
	};
	for (bool changed = true; changed;) {
		changed = false;
		for (size_t i = count_; i-- > 0;) {
			const Instruction insn = instruction(i);
			const uint64_t address = address_of(i);
			RegisterSet out = reads[i + 1];
			if (insn.operation == Operation::ebreak || insn.operation == Operation::c_ebreak) {
				out = 0;
			} else if (insn.kind == InstructionClass::direct_jump && insn.rd == reg::zero) {
				out = at(address + insn.immediate);
			} else if (insn.kind == InstructionClass::conditional_branch) {
				out |= at(address + insn.immediate);
			} else if (insn.kind == InstructionClass::indirect_jump && insn.rd == reg::zero) {
				out = 0;
				if (flags_[i] & flag_far_jump)
					out = at(far_jump_target(i));
				size_t entries = 0;
				const uint32_t *table = jump_table_entries(i, &entries);
				for (size_t e = 0; table && e < entries; ++e)
					out |= reads[table[e]];
			}
			const RegisterSet in = is_call(insn) ? (out & ~caller_saved_registers) | insn.reads
							     : insn.reads | (out & ~insn.writes);
			if (in != reads[i]) {
				reads[i] = in;
				changed = true;
			}
		}
	}
	for (size_t i = 0; i + 1 < count_ && kept_call_ < 0; ++i) {
		const Instruction insn = instruction(i);
		if (is_call(insn) && insn.rd == reg::ra && (reads[i + 1] & temporary_registers))
			kept_call_ = long(i);
	}
	return true;
}

namespace {

// Adds insn's reference, of the kinds asked, to found: a direct target, an
// auipc pair's (previous, at previous_address, is the instruction before).
void add_reference(ExternalReferences &found, unsigned kinds, const Instruction &insn, uint64_t address,
		   const Instruction &previous, uint64_t previous_address)
{
	const bool links = insn.rd != reg::zero;
	const bool after_auipc =
		previous.operation == Operation::auipc && previous.rd == insn.rs1 && insn.rs1 != reg::zero;
	const uint64_t far = previous_address + previous.immediate + insn.immediate;
	if (has_direct_target(insn) && (kinds & (links ? references::calls : references::jumps)))
		found.add(address + insn.immediate);
	else if (insn.operation == Operation::jalr && after_auipc &&
		 (kinds & (links ? references::calls : references::jumps)))
		found.add(far);
	else if (insn.operation == Operation::addi && after_auipc && insn.rd == insn.rs1 &&
		 (kinds & references::taken_address))
		found.add(far);
}

// Marks in live (a byte per byte of function) every instruction start
// reached from offset 0 and from entries inside the function; false when
// the flow cannot be followed (a jump table) or memory ran out.
bool mark_reachable(const CodeRange &function, const uint64_t *entries, size_t entry_count, uint8_t *live)
{
	// Each instruction is pushed at most once per branch to it: at most
	// one pending offset per 2 bytes, plus the entries.
	OwnedArray<uint32_t> pending = OwnedArray<uint32_t>::make(function.size / 2 + entry_count + 1);
	if (!pending)
		return false;
	size_t top = 0;
	pending[top++] = 0;
	for (size_t i = 0; i < entry_count; ++i)
		if (entries[i] >= function.address && entries[i] < function.address + function.size)
			pending[top++] = uint32_t(entries[i] - function.address);
	while (top) {
		for (size_t at = pending[--top]; at < function.size && !live[at];) {
			const Instruction insn = decode_instruction(function.bytes + at, function.size - at);
			if (insn.length == 0)
				break;
			live[at] = 1;
			if (insn.kind == InstructionClass::indirect_jump && !is_call(insn) && !is_return(insn))
				return false;
			if (has_direct_target(insn)) {
				const uint64_t target = at + uint64_t(insn.immediate);
				if (target < function.size && !live[target] && top < pending.size())
					pending[top++] = uint32_t(target);
			}
			if (!falls_through(insn))
				break;
			at += insn.length;
		}
	}
	return true;
}

} // namespace

size_t reachable_code_references(const CodeRange &function, const uint64_t *entries, size_t entry_count, unsigned kinds,
				 uint64_t *targets, size_t capacity)
{
	OwnedArray<uint8_t> live = OwnedArray<uint8_t>::make(function.size);
	if (!live)
		return code_references(function, kinds, targets, capacity);
	for (size_t i = 0; i < function.size; ++i)
		live[i] = 0;
	if (!mark_reachable(function, entries, entry_count, live.get()))
		return code_references(function, kinds, targets, capacity);
	ExternalReferences found{function, targets, capacity};
	Instruction previous;
	uint64_t previous_address = 0;
	size_t previous_end = 0;
	for (size_t at = 0; at < function.size; ++at) {
		if (!live[at])
			continue;
		const Instruction insn = decode_instruction(function.bytes + at, function.size - at);
		// An auipc pairs with the instruction right after it only.
		if (previous_end != at)
			previous = Instruction{};
		add_reference(found, kinds, insn, function.address + at, previous, previous_address);
		previous = insn;
		previous_address = function.address + at;
		previous_end = at + insn.length;
	}
	return found.count;
}

size_t code_references(const CodeRange &function, unsigned kinds, uint64_t *targets, size_t capacity)
{
	ExternalReferences found{function, targets, capacity};
	Instruction previous;
	uint64_t previous_address = 0;
	for (size_t at = 0; at < function.size;) {
		const Instruction insn = decode_instruction(function.bytes + at, function.size - at);
		if (insn.length == 0)
			break;
		const uint64_t address = function.address + at;
		add_reference(found, kinds, insn, address, previous, previous_address);
		previous = insn;
		previous_address = address;
		at += insn.length;
	}
	return found.count;
}

} // namespace okp::riscv
