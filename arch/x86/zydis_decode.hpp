// SPDX-License-Identifier: GPL-2.0
// The one way okprobe asks Zydis to decode an x86-64 instruction.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <Zydis/Decoder.h>

namespace okp::x86 {

// Decodes the 64-bit-mode instruction at bytes without its operands (no
// context: the record alone is 328 bytes, and this may run on the small
// stacks of atomic contexts) and in Zydis's minimal mode, which skips the
// attributes, AVX and flag tables okprobe never reads. Every field the
// analysis reads (mnemonic, length, opcode and map, operand and address
// width, the raw ModRM, REX, displacement and immediates, HAS_MODRM) was
// compared with the full mode at every byte offset of Debian 6.1's kernel
// text: identical. A registration decodes a whole function.
bool decode_instruction(const uint8_t *bytes, size_t available, ZydisDecodedInstruction *instruction);

} // namespace okp::x86
