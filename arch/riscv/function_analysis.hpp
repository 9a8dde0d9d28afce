// SPDX-License-Identifier: GPL-2.0
// One riscv64 function decoded whole: its instructions, the targets of its
// jumps, and which integer registers are live before each instruction.
//
// The jump optimizer patches "auipc tmp; jalr x0, lo(tmp)" over the probed
// instructions and returns the same way, so it needs a register whose value
// nobody reads at the probe (tmp) and one nobody reads after the patched
// window. Liveness is the usual backward dataflow over the function's
// control-flow graph, conservative wherever the bytes cannot tell:
//  - a conditional branch continues at both its target and the next
//    instruction; a direct jump at its target;
//  - a call (jal/jalr/c.jalr linking through ra) reads the argument
//    registers a0-a7 (and its target register) and defines every
//    caller-saved register: under the psABI the callee reads no other
//    register of ours and the caller reads none of those after it;
//  - a return (jalr x0, 0(ra) / c.jr ra) reads what the psABI lets the
//    caller read after it: ra (the return itself), sp, gp, tp, the
//    callee-saved s0-s11 and the return values a0, a1;
//  - a tail call leaves the function for another function's entry: a
//    direct jump out of the function and its pieces, or "auipc rX; jalr
//    x0, lo(rX)" to such a target. It reads what the callee may read
//    (a0-a7, and its jump register) and what our caller reads after the
//    callee returns to it (ra, sp, gp, tp, s0-s11);
//  - an indirect jump that is neither (a jump table, a computed goto, a
//    tail call through a function pointer), a jump into a piece, a branch
//    out of the function, a call linking through another register,
//    sret/mret and falling off the end read every register;
//  - edges the bytes do not show (a jump label's target, an exception
//    fixup) come from the caller.
// The psABI rules are the same argument for calls, returns and tail calls:
// the kernel's C code follows the psABI, so the code around a call reads
// no register the psABI leaves to the callee. (GCC could break it with
// interprocedural register allocation, -fipa-ra, which keeps values in
// caller-saved registers across calls to local functions known not to
// clobber them; GCC's riscv port does not do it (it does not claim
// TARGET_CALL_FUSAGE_CONTAINS_NON_CALLEE_CLOBBERS), and the kernel-bytes
// test checks that no call of the test kernels that returns is followed
// by a read of a temporary it did not write.) That is not taken on trust
// for the function at hand either: when a path from a call's return reads
// a temporary (t0-t6) that nothing on it wrote, the caller relies on the
// callee to keep it, and the function is analysed strictly instead (calls
// and returns read every register; temporary_kept_across_call() says
// which call). The same holds after a call that never returns (BUG(),
// __stack_chk_fail) when unrelated code follows it: strict, needlessly,
// but soundly. The risk is hand-written
// assembly with its own conventions. Assembly that links or returns
// through another register than ra (ftrace_caller's t0), jumps through a
// register, branches to another symbol or runs into the next one reads
// everything here. riscv 6.1's entry code is in plain .text (its entry
// and irqentry sections are empty, so no blacklist covers it): its direct
// jumps between labels (j check_syscall_nr, j ret_from_exception, tail
// do_trap_unknown) pass nothing in temporaries, and restore_all reloads
// every register from pt_regs.
// "auipc rX; jalr rd, lo(rX)" (the assembler's far call and tail) is a
// direct transfer to a known target. So is a switch's jump table when the
// caller lets the analysis read data (DataReader) and the bytes before the
// jump are GCC's dispatch, with nothing jumping into it from elsewhere:
//	li	rN, N			(or any constant in rN)
//	bltu	rN, rI, default		(or bgeu rI, rN: the index is bounded)
//	auipc	rB, %pcrel_hi(table)	(or lui: the table's address)
//	addi	rB, rB, %pcrel_lo(table)
//	slli	rI, rI, 2		(or slli 32 + srli 30: zero-extended)
//	add	rI, rI, rB
//	lw	rT, 0(rI)		(ld for absolute entries)
//	add	rT, rT, rB		(relative entries, GCC's under medany)
//	jr	rT
// in any order the data flow allows, with other instructions in between.
// The dispatch is evaluated exactly, forward over the straight-line code
// before the jump that nothing jumps into; a register it reads before
// writing may be a constant (the table's address or the bound, set before
// a loop, kept in a callee-saved register across calls) or an index that
// every path to the dispatch bounds (a bltu/bgeu it passes or takes, an
// andi), found by walking every path back. Each of the table's entries
// must be an instruction boundary of the function: the entries become
// jump targets (no window spans one) and the jump's successors. Once every
// table is known, each is proven again on the whole graph, their edges
// included: by induction over any run, every jump then goes where the
// proofs say. Any other jump through a register that is not a return may
// be a jump table, a computed goto or a tail call through a pointer: the
// liveness stays sound (it reads everything), but nothing proves that no
// jump lands inside a patched window, so the function reports it, keeps
// no table, and the optimizer refuses the whole function.
//
// Pure C++: the module builds it once per probed function, the host tests
// over every function of the test kernels. function_analysis.cpp decodes
// the function and its jumps and answers the lookups;
// function_jump_tables.cpp recovers the jump tables, with the facts every
// path agrees on from function_path_facts.cpp; function_liveness.cpp
// solves the liveness; function_references.cpp finds what the code refers
// to outside the function.
#pragma once

#include "core/code_graph.hpp"
#include "core/code_range.hpp"
#include "core/owned.hpp"
#include "riscv/instruction_decoder.hpp"

namespace okp::riscv {

// A control transfer the instruction bytes do not show.
struct ExtraEdge {
	enum class Kind : uint8_t {
		jump_label,	// the nop at from becomes "j to" when the key flips
		exception_fixup // a fault at from resumes at to
	};
	uint64_t from = 0, to = 0;
	Kind kind = Kind::jump_label;
};

// Read-only data the analysis may read: the entries of a switch's jump
// table. read copies size bytes at address to out and returns how many it
// copied; anything short of size leaves the jump unknown. It must give
// only data that cannot change while the analysis is used (the kernel's
// or a module's .rodata, where GCC puts jump tables), never writable data.
struct DataReader {
	size_t (*read)(uint64_t address, void *out, size_t size, void *context) = nullptr;
	void *context = nullptr;
};

// Bounds of the jump-table recovery: the entries read per table, and how
// far back from the jump its dispatch sequence may start.
constexpr size_t max_jump_table_entries = 1024;
constexpr size_t max_dispatch_instructions = 32;
// How many instructions a search for a register's constant value walks
// back over (a table's address or bound set before a loop).
constexpr size_t max_constant_search = 4096;

enum class FunctionProblem : uint8_t {
	none,
	undecodable,   // bytes before the end do not decode (not padding)
	indirect_jump, // jalr x0 / c.jr through a register: not a return, far jump or jump table
	target_inside, // a branch lands inside an instruction
	out_of_memory,
};

// The registers never offered as temporaries: x0 is constant, sp, gp and
// tp are live everywhere in the kernel (stack, global pointer, per-task
// pointer) whatever the function's own code says.
constexpr RegisterSet never_free =
	register_bit(reg::zero) | register_bit(reg::sp) | register_bit(reg::gp) | register_bit(reg::tp);

// The psABI's registers at a function boundary (see the comment at the
// top): what a return and a tail call read.
constexpr RegisterSet callee_saved_registers = register_bit(reg::s0) | register_bit(reg::s1) | (0x3ffu << 18);
constexpr RegisterSet read_at_return = register_bit(reg::ra) | register_bit(reg::sp) | register_bit(reg::gp) |
				       register_bit(reg::tp) | callee_saved_registers | (0x3u << reg::a0);
constexpr RegisterSet read_at_tail_call = read_at_return | argument_registers;

class FunctionAnalysis {
public:
	FunctionAnalysis() = default;
	FunctionAnalysis(const FunctionAnalysis &) = delete;
	FunctionAnalysis &operator=(const FunctionAnalysis &) = delete;

	// Decodes function (and scans its .cold pieces for jumps into it),
	// recovers its jump tables when data can be read, then solves
	// liveness. False only when out of memory.
	bool build(const CodeRange &function, const CodeRange *pieces, size_t piece_count, const ExtraEdge *edges,
		   size_t edge_count, const DataReader *data = nullptr);

	// Whether calls, returns and tail calls follow the psABI (the default)
	// or read every register (strict: the analysis trusts nothing about
	// callees and callers). Set before build().
	void set_psabi(bool psabi) { psabi_ = psabi; }
	bool psabi() const { return psabi_; }
	// The first call (its instruction index) after which the function
	// reads a temporary nothing wrote since, against the psABI, or -1.
	// When there is one, build() solved the liveness strictly although
	// psabi() was asked for.
	long temporary_kept_across_call() const { return kept_call_; }

	const CodeRange &function() const { return function_; }
	FunctionProblem problem() const { return problem_; }
	uint64_t problem_address() const { return problem_address_; }

	size_t count() const { return count_; }
	// Bytes decoded from the start: the function's size, or less when
	// it ends in padding or undecodable bytes.
	size_t decoded_size() const { return decoded_size_; }
	// The index of the instruction at address, or -1 when address is not
	// an instruction boundary of the decoded function.
	long index_of(uint64_t address) const;
	uint64_t address_of(size_t index) const { return function_.address + offsets_[index]; }
	// Decoded once by build(): the liveness sweeps and the path walks
	// read each instruction many times.
	const Instruction &instruction(size_t index) const { return instructions_[index]; }

	// Registers that may be read before being written on some path from
	// the instruction (at index, or at address): live-in. Every register
	// outside the decoded function.
	RegisterSet live_before(size_t index) const { return live_[index]; }
	RegisterSet live_at(uint64_t address) const;
	// What is live when a jump (not a branch) of the function goes to
	// target: live_at inside the function, every register in one of
	// its pieces, what a tail call reads (read_at_tail_call) elsewhere.
	RegisterSet live_at_jump_target(uint64_t target) const;

	// The first jump target (direct branches and jumps of the function
	// and its pieces, jump labels, exception fixups) in [start, end), or 0.
	uint64_t target_within(uint64_t start, uint64_t end) const;
	// Whether the instruction at index has an exception-table entry.
	bool has_exception_entry(size_t index) const { return flags_[index] & flag_exception_entry; }
	// Whether the instruction at index is an lr, an sc, or between them:
	// a trap there (the kernel's trap return clears the reservation)
	// makes every retry's sc fail.
	bool in_lr_sc_sequence(size_t index) const { return flags_[index] & flag_lr_sc; }
	// Jump-label nops (or jumps) the caller reported.
	bool is_jump_label_site(size_t index) const { return flags_[index] & flag_jump_label; }
	// The recovered jump tables: how many, and the entries (instruction
	// indexes, in table order) of the one the jump at index dispatches
	// through, or nullptr.
	size_t jump_table_count() const { return table_count_; }
	const uint32_t *jump_table_entries(size_t index, size_t *count) const;

	// How many sweeps the dataflow took (tests check it converges).
	unsigned sweeps() const { return sweeps_; }

private:
	static constexpr uint8_t flag_exception_entry = 1, flag_lr_sc = 2, flag_jump_label = 4, flag_far_jump = 8,
				 flag_jump_table = 16,
				 flag_entry_point = 32; // reached from outside the bytes: registers unknown

	struct Piece {
		uint64_t address, size;
	};
	// A recovered table: the jump and its entries, in entries_.
	struct JumpTable {
		uint32_t jump, first, count;
	};

	void clear();
	size_t count_instructions(const CodeRange *pieces, size_t piece_count, size_t *targets);
	void find_target_inside_instruction();
	bool leaves_function(uint64_t target) const;
	void add_target(uint64_t target);
	void scan_piece(const CodeRange &piece);
	void pair_far_jumps();
	void resolve_indirect_jumps(const DataReader *data);
	bool link_jumps();
	// A walk over every path to an instruction, backwards: decide(at,
	// edge) says whether a path ends at instruction at (a fact found),
	// goes on to its predecessors, or fails the walk; edge tells how
	// control left at: 0 falling through, 1 jumping, 2 either.
	enum class Step : uint8_t { back, found, fail };
	template <typename Decide> bool walk_back(size_t index, Decide &&decide) const;
	bool constant_before(size_t index, unsigned n, uint64_t *value) const;
	bool constant_definition(size_t index, unsigned n, uint64_t *value) const;
	uint32_t bound_before(size_t index, unsigned n) const;
	uint32_t branch_bound(size_t index, bool taken, unsigned n) const;
	bool recover_jump_table(size_t jump, const DataReader &data, const JumpTable *expected);
	bool add_table_entry(uint32_t index);
	const JumpTable *jump_table(size_t jump) const;
	void set_problem(FunctionProblem problem, uint64_t address);
	uint64_t far_jump_target(size_t index) const;
	void mark_lr_sc_sequences();
	void solve(const ExtraEdge *edges, size_t edge_count);
	bool find_temporary_kept_across_call();
	RegisterSet live_out(size_t index, const Instruction &insn, const ExtraEdge *edges, size_t edge_count) const;

	CodeRange function_;
	FunctionProblem problem_ = FunctionProblem::none;
	uint64_t problem_address_ = 0;
	size_t count_ = 0, decoded_size_ = 0;
	// Per instruction (at least one slot, so that an empty function
	// still has its arrays).
	OwnedArray<uint32_t> offsets_;
	OwnedArray<Instruction> instructions_;
	OwnedArray<RegisterSet> live_;
	OwnedArray<uint8_t> flags_;
	OwnedArray<Piece> pieces_;
	OwnedArray<JumpTable> tables_; // by jump: room for every candidate jump
	size_t table_count_ = 0;
	GrowingArray<uint32_t> entries_;
	// The jumps inside the function as (to << 32 | from), sorted: the
	// control-flow graph walked backwards. Only while building.
	OwnedArray<uint64_t> links_;
	size_t link_count_ = 0;
	OwnedArray<uint32_t> visits_; // per instruction and edge: the walk that saw it
	mutable uint32_t walk_ = 0;
	// Sorted; reserved up front for every target the bytes may show, and
	// never grown past that by add_target().
	GrowingArray<uint64_t> targets_;
	unsigned sweeps_ = 0;
	long kept_call_ = -1;
	bool psabi_ = true, strict_ = false; // strict_: psabi_ was asked for, but broken
};

// The distinct addresses outside function that its code refers to, of the
// kinds asked (a mask of okp::references::*): where its jumps leave it (its
// .cold pieces among them), what it calls, which code addresses it takes
// (a callback handed to another function). Returns the number of distinct
// targets, which may exceed capacity.
size_t code_references(const CodeRange &function, unsigned kinds, uint64_t *targets, size_t capacity);

// The same, from the code that can run only: what the function's own
// control flow reaches from its first byte and from entries (its jump
// labels' targets, its exception fixups; those outside it are ignored).
// Bytes nothing reaches are never run where they are: 7.x kernels keep
// a file's alternatives' replacement code there, after its last function
// (copied over the original instructions at boot), whose jumps would
// lead elsewhere. A jump through a register other than a return (a jump
// table) makes every byte count, as code_references does; so does a
// failed allocation.
size_t reachable_code_references(const CodeRange &function, const uint64_t *entries, size_t entry_count, unsigned kinds,
				 uint64_t *targets, size_t capacity);

} // namespace okp::riscv
