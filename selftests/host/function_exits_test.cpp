// SPDX-License-Identifier: GPL-2.0
// The exit census (core/function_exits.hpp) on small functions of each
// architecture: what it takes for an exit, and each reason it refuses.
// x86_kernel_bytes_test.cpp runs it over every function of Debian's
// kernels against objtool's list of returns.
#include "core/function_exits.hpp"
#include "riscv/instruction_decoder.hpp"
#include "x86/instruction_analysis.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace {

using okp::CodeRange;
using okp::ExitKind;
using okp::ExitRefusal;

constexpr uint64_t function_address = 0x1000;
constexpr uint64_t other_function = 0x5000; // another function's first byte
constexpr uint64_t return_thunk = 0x9000;
constexpr uint64_t depth_thunk = 0x9100; // call depth tracking's

// The world around the function: pieces, function starts and hidden edges.
struct World {
	std::map<uint64_t, std::vector<uint8_t>> pieces;
	std::set<uint64_t> starts{other_function, return_thunk, depth_thunk};
	std::vector<std::pair<uint64_t, uint64_t>> hidden; // site, target
	bool hidden_unknown = false;
};

okp::ExitPlace place(uint64_t target, CodeRange *piece, void *opaque)
{
	const World &world = *static_cast<World *>(opaque);
	for (const auto &[address, bytes] : world.pieces)
		if (target >= address && target < address + bytes.size()) {
			*piece = CodeRange{bytes.data(), address, bytes.size()};
			return okp::ExitPlace::piece;
		}
	return world.starts.count(target) ? okp::ExitPlace::function_start : okp::ExitPlace::elsewhere;
}

long hidden(const CodeRange &range, uint64_t *targets, size_t capacity, void *opaque)
{
	const World &world = *static_cast<World *>(opaque);
	if (world.hidden_unknown)
		return -1;
	long count = 0;
	for (const auto &[site, target] : world.hidden)
		if (site >= range.address && site < range.address + range.size) {
			if (size_t(count) < capacity)
				targets[count] = target;
			++count;
		}
	return count;
}

okp::x86::Thunks thunks()
{
	okp::x86::Thunks result;
	result.return_thunk = return_thunk;
	result.return_thunk_variants[0] = depth_thunk;
	return result;
}

void x86_step(const CodeRange &code, size_t offset, okp::ExitStep &step)
{
	static const okp::x86::Thunks known = thunks();
	okp::x86::exit_step(code, offset, known, step);
}

struct Found {
	okp::ExitCensus census;
	std::vector<okp::FunctionExit> exits;
};

Found census(const std::vector<uint8_t> &bytes, World world = {}, okp::ExitDecoder decode = x86_step,
	     size_t capacity = 16)
{
	Found found;
	found.exits.resize(capacity);
	const okp::ExitFacts facts{place, hidden, &world};
	found.census = okp::census_exits(CodeRange{bytes.data(), function_address, bytes.size()}, decode, facts,
					 found.exits.data(), capacity);
	found.exits.resize(found.census.count < capacity ? found.census.count : capacity);
	return found;
}

// rel32 jumps, calls and jccs from the instruction at at.
std::vector<uint8_t> rel32(std::vector<uint8_t> opcode, uint64_t at, uint64_t target)
{
	const int32_t relative = int32_t(target - (at + opcode.size() + 4));
	uint8_t bytes[4];
	std::memcpy(bytes, &relative, 4);
	opcode.insert(opcode.end(), bytes, bytes + 4);
	return opcode;
}

std::vector<uint8_t> join(std::initializer_list<std::vector<uint8_t>> parts)
{
	std::vector<uint8_t> bytes;
	for (const auto &part : parts)
		bytes.insert(bytes.end(), part.begin(), part.end());
	return bytes;
}

const std::vector<uint8_t> ret = {0xc3}, int3 = {0xcc}, ud2 = {0x0f, 0x0b}, test_edi = {0x85, 0xff},
			   mov_eax_1 = {0xb8, 0x01, 0x00, 0x00, 0x00}, nop5 = {0x0f, 0x1f, 0x44, 0x00, 0x00},
			   jmp_rax = {0xff, 0xe0};

TEST(FunctionExits, X86ReturnsAndTailCallsAreTheExits)
{
	// 0: test %edi,%edi; 2: je 10; 4: mov $1,%eax; 9: ret;
	// 10: jmp other_function; 15: int3 padding
	const auto bytes = join({test_edi, {0x74, 0x06}, mov_eax_1, ret, rel32({0xe9}, 0x100a, other_function), int3});
	const Found found = census(bytes);
	ASSERT_EQ(found.census.refusal, ExitRefusal::none);
	ASSERT_EQ(found.census.count, 2u);
	EXPECT_EQ(found.exits[0].address, 0x1009u);
	EXPECT_EQ(found.exits[0].kind, ExitKind::returns);
	EXPECT_EQ(found.exits[1].address, 0x100au);
	EXPECT_EQ(found.exits[1].kind, ExitKind::tail_call);
	EXPECT_EQ(found.exits[1].target, other_function);
	EXPECT_EQ(found.census.pieces, 0u);
}

TEST(FunctionExits, X86JumpsToAnyReturnThunkAreReturns)
{
	const auto bytes =
		join({test_edi, {0x74, 0x05}, rel32({0xe9}, 0x1004, return_thunk), rel32({0xe9}, 0x1009, depth_thunk)});
	const Found found = census(bytes);
	ASSERT_EQ(found.census.refusal, ExitRefusal::none);
	ASSERT_EQ(found.census.count, 2u);
	EXPECT_EQ(found.exits[0].kind, ExitKind::returns);
	EXPECT_EQ(found.exits[1].kind, ExitKind::returns);
	EXPECT_EQ(found.exits[1].address, 0x1009u);
}

TEST(FunctionExits, X86ConditionalReturnsAndTailCallsAreRefused)
{
	// jne __x86_return_thunk: a return only when taken.
	Found found = census(join({test_edi, rel32({0x0f, 0x85}, 0x1002, return_thunk), ret}));
	EXPECT_EQ(found.census.refusal, ExitRefusal::conditional_exit);
	EXPECT_EQ(found.census.at, 0x1002u);
	found = census(join({test_edi, rel32({0x0f, 0x84}, 0x1002, other_function), ret}));
	EXPECT_EQ(found.census.refusal, ExitRefusal::conditional_exit);
}

TEST(FunctionExits, X86IndirectJumpsAndJumpsIntoOtherFunctionsAreRefused)
{
	Found found = census(join({test_edi, {0x74, 0x02}, jmp_rax, ret}));
	EXPECT_EQ(found.census.refusal, ExitRefusal::indirect_jump);
	EXPECT_EQ(found.census.at, 0x1004u);
	found = census(join({rel32({0xe9}, 0x1000, other_function + 3)}));
	EXPECT_EQ(found.census.refusal, ExitRefusal::jump_elsewhere);
}

TEST(FunctionExits, X86CodeRunningOffTheEndIsRefused)
{
	EXPECT_EQ(census(join({test_edi, mov_eax_1})).census.refusal, ExitRefusal::falls_off_end);
	// Padding does not hide it: nops and int3 after the last instruction.
	EXPECT_EQ(census(join({mov_eax_1, {0x90}, int3})).census.refusal, ExitRefusal::falls_off_end);
	// A branch's not-taken path would run off too.
	EXPECT_EQ(census(join({test_edi, {0x74, 0xfc}})).census.refusal, ExitRefusal::falls_off_end);
}

TEST(FunctionExits, X86CallsAndTrapsMayEndAFunction)
{
	// A noreturn call or BUG() last: no way out there, the ret counts.
	Found found = census(join({test_edi, {0x75, 0x01}, ret, rel32({0xe8}, 0x1005, other_function), int3}));
	ASSERT_EQ(found.census.refusal, ExitRefusal::none);
	EXPECT_EQ(found.census.count, 1u);
	found = census(join({test_edi, {0x75, 0x01}, ret, ud2}));
	ASSERT_EQ(found.census.refusal, ExitRefusal::none);
	EXPECT_EQ(found.census.count, 1u);
	// A WARN()'s ud2 goes on: the code after it is decoded too.
	found = census(join({ud2, mov_eax_1, ret}));
	ASSERT_EQ(found.census.refusal, ExitRefusal::none);
	EXPECT_EQ(found.exits[0].address, 0x1007u);
}

TEST(FunctionExits, AJumpIntoTheMiddleOfAnInstructionIsRefused)
{
	// 0: je 5 (inside the mov at 2, whose bytes from 5 would decode
	// otherwise); 2: mov $1,%eax; 7: ret
	const Found found = census(join({{0x74, 0x03}, mov_eax_1, ret}));
	EXPECT_EQ(found.census.refusal, ExitRefusal::mid_instruction);
	EXPECT_EQ(found.census.at, 0x1005u);
	// A jump label's hidden target too.
	World world;
	world.hidden = {{0x1000, 0x1003}};
	EXPECT_EQ(census(join({nop5, ret}), world).census.refusal, ExitRefusal::mid_instruction);
}

TEST(FunctionExits, AFunctionThatNeverReturnsIsRefused)
{
	EXPECT_EQ(census(join({rel32({0xe8}, 0x1000, other_function), int3})).census.refusal, ExitRefusal::no_exit);
}

TEST(FunctionExits, X86ColdPiecesAreDecodedWithTheFunction)
{
	World world;
	// The piece: xor %eax,%eax; ret; then a jump back into the function.
	world.pieces[0x7000] = join({{0x31, 0xc0}, ret, rel32({0xe9}, 0x7003, 0x1008)});
	const auto bytes = join({test_edi, rel32({0x0f, 0x85}, 0x1002, 0x7000), ret});
	const Found found = census(bytes, world);
	ASSERT_EQ(found.census.refusal, ExitRefusal::none);
	EXPECT_EQ(found.census.pieces, 1u);
	ASSERT_EQ(found.census.count, 2u);
	EXPECT_EQ(found.exits[0].address, 0x1008u);
	EXPECT_EQ(found.exits[1].address, 0x7002u);
}

TEST(FunctionExits, JumpLabelsLeadIntoPiecesTheTextHides)
{
	// A disabled jump label: a nop in the text, its target only in the
	// jump table; the out-of-line block in the piece tail-calls.
	World world;
	world.pieces[0x7000] = rel32({0xe9}, 0x7000, other_function);
	world.hidden = {{0x1000, 0x7000}};
	const Found found = census(join({nop5, ret}), world);
	ASSERT_EQ(found.census.refusal, ExitRefusal::none);
	ASSERT_EQ(found.census.count, 2u);
	EXPECT_EQ(found.exits[1].address, 0x7000u);
	EXPECT_EQ(found.exits[1].kind, ExitKind::tail_call);
	// Without the jump table the piece's exit would go unseen: refused.
	world.hidden_unknown = true;
	EXPECT_EQ(census(join({nop5, ret}), world).census.refusal, ExitRefusal::unreadable);
	// A jump label out of the function and its pieces.
	world.hidden_unknown = false;
	world.hidden = {{0x1000, other_function}};
	EXPECT_EQ(census(join({nop5, ret}), world).census.refusal, ExitRefusal::hidden_edge_elsewhere);
}

TEST(FunctionExits, TooManyExitsOrPiecesAreRefused)
{
	const auto two_returns = join({test_edi, {0x75, 0x01}, ret, ret});
	const Found found = census(two_returns, {}, x86_step, 1);
	EXPECT_EQ(found.census.refusal, ExitRefusal::too_many_exits);
	EXPECT_EQ(found.census.count, 2u);
	World world;
	std::vector<uint8_t> bytes;
	for (uint64_t p = 0; p <= okp::max_exit_pieces; ++p) {
		world.pieces[0x7000 + 0x100 * p] = ret;
		const auto jump = rel32({0x0f, 0x85}, function_address + bytes.size(), 0x7000 + 0x100 * p);
		bytes.insert(bytes.end(), jump.begin(), jump.end());
	}
	bytes.push_back(0xc3);
	EXPECT_EQ(census(bytes, world).census.refusal, ExitRefusal::too_many_pieces);
}

TEST(FunctionExits, UndecodableBytesAreRefusedButPaddingIsNot)
{
	EXPECT_EQ(census(join({ret, {0x06}, ret})).census.refusal, ExitRefusal::undecodable);
	const Found found = census(join({ret, int3, int3}));
	EXPECT_EQ(found.census.refusal, ExitRefusal::none);
}

// riscv encodings.
uint32_t jal(unsigned rd, int32_t offset)
{
	const uint32_t imm = uint32_t(offset);
	return ((imm >> 20) & 1) << 31 | ((imm >> 1) & 0x3ff) << 21 | ((imm >> 11) & 1) << 20 |
	       ((imm >> 12) & 0xff) << 12 | rd << 7 | 0x6f;
}

std::vector<uint8_t> riscv(std::initializer_list<uint32_t> words)
{
	std::vector<uint8_t> bytes;
	for (uint32_t word : words) {
		const size_t length = (word & 3) == 3 ? 4 : 2;
		for (size_t i = 0; i < length; ++i)
			bytes.push_back(uint8_t(word >> (8 * i)));
	}
	return bytes;
}

void riscv_step(const CodeRange &code, size_t offset, okp::ExitStep &step)
{
	okp::riscv::exit_step(code, offset, step);
}

constexpr uint32_t c_jr_ra = 0x8082, c_jr_a5 = 0x8782, c_nop = 0x0001, c_ebreak = 0x9002, jalr_x0_ra = 0x00008067,
		   c_li_a0_1 = 0x4505;

TEST(FunctionExits, RiscvReturnsThroughRaAndTailJumpsAreTheExits)
{
	// 0: beqz a0, 8; 4: c.li a0,1; 6: c.jr ra; 8: j other_function;
	// 12: jalr x0, 0(ra)
	const uint32_t beqz_a0_8 = 0x00050463;
	const auto bytes = riscv({beqz_a0_8, c_li_a0_1, c_jr_ra, jal(0, int32_t(other_function - 0x1008)), jalr_x0_ra});
	const Found found = census(bytes, {}, riscv_step);
	ASSERT_EQ(found.census.refusal, ExitRefusal::none);
	ASSERT_EQ(found.census.count, 3u);
	EXPECT_EQ(found.exits[0].address, 0x1006u);
	EXPECT_EQ(found.exits[1].kind, ExitKind::tail_call);
	EXPECT_EQ(found.exits[2].address, 0x100cu);
}

TEST(FunctionExits, RiscvJumpsThroughOtherRegistersAreRefused)
{
	const Found found = census(riscv({c_li_a0_1, c_jr_a5}), {}, riscv_step);
	EXPECT_EQ(found.census.refusal, ExitRefusal::indirect_jump);
	EXPECT_EQ(found.census.at, 0x1002u);
}

TEST(FunctionExits, RiscvFarTailCallsAreExitsWhenThePairIsWhole)
{
	// 0: c.li a0, 1; 2: auipc t1, 4; 6: jalr x0, -2(t1): other_function.
	Found found = census(riscv({c_li_a0_1, 0x00004317, 0xffe30067}), {}, riscv_step);
	ASSERT_EQ(found.census.refusal, ExitRefusal::none) << okp::exit_refusal_text(found.census.refusal);
	ASSERT_EQ(found.census.count, 1u);
	EXPECT_EQ(found.exits[0].address, 0x1006u);
	EXPECT_EQ(found.exits[0].kind, ExitKind::tail_call);
	EXPECT_EQ(found.exits[0].target, other_function);
	// Elsewhere than a function's start: refused as any jump there.
	found = census(riscv({c_li_a0_1, 0x00004317, 0x00030067}), {}, riscv_step);
	EXPECT_EQ(found.census.refusal, ExitRefusal::jump_elsewhere);
	// 0: beqz a0, +10 (the jr); 4: c.li a0, 1; 6: auipc t1, 4;
	// a: jalr x0, -6(t1): a path reaches the jump without the auipc.
	found = census(riscv({0x00050563, c_li_a0_1, 0x00004317, 0xffa30067}), {}, riscv_step);
	EXPECT_EQ(found.census.refusal, ExitRefusal::indirect_jump);
	EXPECT_EQ(found.census.at, 0x100au);
	// 0: addi a0, a5, 0x31 (its upper half reads as auipc t1);
	// 4: c.nop; 6: jalr x0, 0(t1): no auipc is the instruction before.
	found = census(riscv({0x03178513, c_nop, 0x00030067}), {}, riscv_step);
	EXPECT_EQ(found.census.refusal, ExitRefusal::indirect_jump);
	EXPECT_EQ(found.census.at, 0x1006u);
	// 2: auipc ra, 4; 6: jalr x0, -2(ra): the pair overwrote the return
	// address a tail call's hook would replace.
	found = census(riscv({c_li_a0_1, 0x00004097, 0xffe08067}), {}, riscv_step);
	EXPECT_EQ(found.census.refusal, ExitRefusal::indirect_jump);
	EXPECT_EQ(found.census.at, 0x1006u);
}

TEST(FunctionExits, RiscvBugAndNopsAndCallsAtTheEnd)
{
	// A BUG()'s c.ebreak last is no way out; c.nop is padding.
	Found found = census(riscv({c_jr_ra, c_ebreak, c_nop}), {}, riscv_step);
	EXPECT_EQ(found.census.refusal, ExitRefusal::none);
	found = census(riscv({c_jr_ra, c_li_a0_1, c_nop}), {}, riscv_step);
	EXPECT_EQ(found.census.refusal, ExitRefusal::falls_off_end);
	found = census(riscv({c_jr_ra, jal(1, 0x100)}), {}, riscv_step);
	EXPECT_EQ(found.census.refusal, ExitRefusal::none);
}

} // namespace
