// SPDX-License-Identifier: GPL-2.0
#include "x86/plain_instructions.hpp"

namespace okp::x86 {
namespace {

// What follows a plain opcode. With no legacy prefix allowed, an Iz
// immediate is 4 bytes (REX.W does not widen it) and addressing is 64-bit.
enum Form : uint8_t {
	not_plain = 0,
	alone,	       // nothing: push, pop, xchg with rax, cdq
	imm8,	       // an 8-bit immediate
	imm32,	       // a 32-bit immediate
	imm32_or_64,   // mov r, imm: 64 bits under REX.W
	modrm,	       // a ModRM operand
	modrm_imm8,    // a ModRM operand and an 8-bit immediate
	modrm_imm32,   // a ModRM operand and a 32-bit immediate
	group3,	       // f6/f7: test r/m, imm (/0, /1) or a ModRM operand alone
	mov_immediate, // c6/c7 /0: mov r/m, imm (other /r are xabort, xbegin)
	inc_dec_byte,  // fe /0, /1
	lea,	       // a memory operand only
	bit_test_imm8, // 0f ba /4-/7: bt, bts, btr, btc r/m, imm8
};

// The one-byte opcode map's plain instructions (the Intel SDM's table
// A-2); 0f leads to two_byte_form().
constexpr Form one_byte_form(uint8_t opcode)
{
	if (opcode < 0x40) {
		if (opcode == 0x0f || (opcode & 7) >= 6)
			return not_plain; // 0f, segment prefixes, daa & co.
		return (opcode & 7) < 4 ? modrm : (opcode & 7) == 4 ? imm8 : imm32;
	}
	if (opcode >= 0x50 && opcode <= 0x5f)
		return alone;
	if (opcode >= 0x84 && opcode <= 0x8b)
		return modrm;
	if (opcode >= 0x90 && opcode <= 0x99)
		return alone;
	if (opcode >= 0xb0 && opcode <= 0xb7)
		return imm8;
	if (opcode >= 0xb8 && opcode <= 0xbf)
		return imm32_or_64;
	if (opcode >= 0xd0 && opcode <= 0xd3)
		return modrm;
	switch (opcode) {
	case 0x63: // movsxd
		return modrm;
	case 0x68: // push imm32
		return imm32;
	case 0x69: // imul r, r/m, imm32
	case 0x81:
		return modrm_imm32;
	case 0x6a: // push imm8
	case 0xa8: // test al, imm8
		return imm8;
	case 0x6b: // imul r, r/m, imm8
	case 0x80:
	case 0x83:
	case 0xc0: // shifts by an immediate
	case 0xc1:
		return modrm_imm8;
	case 0x8d:
		return lea;
	case 0x9c: // pushf
	case 0x9d: // popf
	case 0xc9: // leave
		return alone;
	case 0xa9: // test eax, imm32
		return imm32;
	case 0xc6:
	case 0xc7:
		return mov_immediate;
	case 0xf6:
	case 0xf7:
		return group3;
	case 0xfe:
		return inc_dec_byte;
	default:
		return not_plain;
	}
}

// The two-byte map's (0f xx) plain instructions.
constexpr Form two_byte_form(uint8_t opcode)
{
	if ((opcode >= 0x40 && opcode <= 0x4f) || (opcode >= 0x90 && opcode <= 0x9f))
		return modrm; // cmovcc, setcc
	if (opcode >= 0xc8 && opcode <= 0xcf)
		return alone; // bswap
	switch (opcode) {
	case 0x0d: // prefetchw
	case 0x1f: // nop r/m
	case 0xa3: // bt
	case 0xa5: // shld by cl
	case 0xab: // bts
	case 0xad: // shrd by cl
	case 0xaf: // imul
	case 0xb0: // cmpxchg
	case 0xb1:
	case 0xb3: // btr
	case 0xb6: // movzx
	case 0xb7:
	case 0xbb: // btc
	case 0xbe: // movsx
	case 0xbf:
	case 0xc0: // xadd
	case 0xc1:
		return modrm;
	case 0xa4: // shld by an immediate
	case 0xac: // shrd by an immediate
		return modrm_imm8;
	case 0xba:
		return bit_test_imm8;
	default:
		return not_plain;
	}
}

// The bytes of a ModRM operand (ModRM, SIB, displacement) starting at
// bytes, or 0 when they do not fit in available.
unsigned modrm_length(const uint8_t *bytes, size_t available)
{
	if (available < 1)
		return 0;
	const unsigned mod = bytes[0] >> 6, rm = bytes[0] & 7;
	unsigned length = 1;
	if (mod != 3 && rm == 4) {
		if (available < 2)
			return 0;
		length = 2;
		if (mod == 0 && (bytes[1] & 7) == 5)
			length += 4; // no base: disp32
	}
	if (mod == 0 && rm == 5)
		length += 4; // rip-relative
	else if (mod == 1)
		length += 1;
	else if (mod == 2)
		length += 4;
	return length <= available ? length : 0;
}

} // namespace

unsigned plain_instruction_length(const uint8_t *bytes, size_t available)
{
	unsigned at = 0;
	bool rex_w = false;
	if (available > 0 && (bytes[0] & 0xf0) == 0x40) {
		rex_w = bytes[0] & 8;
		at = 1;
	}
	if (at >= available)
		return 0;
	Form form;
	if (bytes[at] == 0x0f) {
		if (++at >= available)
			return 0;
		form = two_byte_form(bytes[at]);
	} else {
		form = one_byte_form(bytes[at]);
	}
	++at; // past the opcode
	const uint8_t reg = at < available ? (bytes[at] >> 3) & 7 : 0;
	unsigned immediate = 0;
	switch (form) {
	case not_plain:
		return 0;
	case alone:
		return at;
	case imm8:
		immediate = 1;
		break;
	case imm32:
		immediate = 4;
		break;
	case imm32_or_64:
		immediate = rex_w ? 8 : 4;
		break;
	case modrm:
		break;
	case modrm_imm8:
		immediate = 1;
		break;
	case modrm_imm32:
		immediate = 4;
		break;
	case group3:
		if (reg < 2)
			immediate = bytes[at - 1] == 0xf6 ? 1 : 4;
		break;
	case mov_immediate:
		if (reg != 0)
			return 0;
		immediate = bytes[at - 1] == 0xc6 ? 1 : 4;
		break;
	case inc_dec_byte:
		if (reg > 1)
			return 0;
		break;
	case lea:
		if (at < available && bytes[at] >> 6 == 3)
			return 0; // lea needs memory: #UD
		break;
	case bit_test_imm8:
		if (reg < 4)
			return 0;
		immediate = 1;
		break;
	}
	const bool has_modrm = form != imm8 && form != imm32 && form != imm32_or_64;
	if (has_modrm) {
		const unsigned operand = modrm_length(bytes + at, available - at);
		if (!operand)
			return 0;
		at += operand;
	}
	at += immediate;
	return at <= available ? at : 0;
}

PlainBranch plain_relative_branch(const uint8_t *bytes, size_t available)
{
	PlainBranch branch;
	if (available < 2)
		return branch;
	const uint8_t opcode = bytes[0];
	unsigned displacement_size = 0;
	if (opcode >= 0x70 && opcode <= 0x7f) {
		branch.kind = PlainBranch::Kind::conditional_jump;
		branch.condition_code = opcode & 0x0f;
		displacement_size = 1;
	} else if (opcode == 0xeb) {
		branch.kind = PlainBranch::Kind::jump;
		displacement_size = 1;
	} else if (opcode == 0xe9 || opcode == 0xe8) {
		branch.kind = opcode == 0xe8 ? PlainBranch::Kind::call : PlainBranch::Kind::jump;
		displacement_size = 4;
	} else if (opcode == 0x0f && (bytes[1] & 0xf0) == 0x80) {
		branch.kind = PlainBranch::Kind::conditional_jump;
		branch.condition_code = bytes[1] & 0x0f;
		displacement_size = 4;
	} else {
		return branch;
	}
	const unsigned at = opcode == 0x0f ? 2 : 1;
	if (at + displacement_size > available)
		return PlainBranch{};
	branch.length = static_cast<uint8_t>(at + displacement_size);
	if (displacement_size == 1) {
		branch.displacement = static_cast<int8_t>(bytes[at]);
	} else {
		uint32_t raw;
		__builtin_memcpy(&raw, bytes + at, sizeof(raw));
		branch.displacement = static_cast<int32_t>(raw);
	}
	return branch;
}

} // namespace okp::x86
