// SPDX-License-Identifier: GPL-2.0
// The plain-instruction lengths against Zydis over a Debian kernel's text
// (OKPROBE_X86_VMLINUX, OKPROBE_X86_KALLSYMS, as the other kernel-bytes
// tests): at every instruction boundary of every function, and at every
// byte offset of every eighth function (bytes that are not where the
// linear decode goes). Wherever plain_instruction_length() gives a length,
// Zydis must decode an instruction of that length that okprobe's analysis
// finds decodable and transferring no control. A one-off run over every
// byte offset of the .text of 6.1, 6.12, 7.3 and 7.3-rt (54 million)
// found no difference either.
#include "x86/instruction_analysis.hpp"
#include "x86/instruction_decoder.hpp"
#include "x86/plain_instructions.hpp"
#include "x86/zydis_decode.hpp"
#include "x86_kernel_image.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

namespace {

using namespace okp::x86;

// Checks offset of symbol index; counts plain instructions.
void expect_as_zydis(const okp::host::KernelImage &kernel, size_t index, uint64_t offset, const uint8_t *bytes,
		     size_t left, long *plain)
{
	const unsigned length = plain_instruction_length(bytes, left);
	if (!length)
		return;
	++*plain;
	const auto where = [&] { return kernel.symbols[index].name + "+" + std::to_string(offset); };
	ZydisDecoder decoder;
	ASSERT_TRUE(ZYAN_SUCCESS(ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)));
	ZydisDecodedInstruction instruction;
	ASSERT_TRUE(ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, nullptr, bytes, left, &instruction)))
		<< where();
	ASSERT_EQ(instruction.length, length) << where();
	ASSERT_EQ(instruction.meta.branch_type, ZYDIS_BRANCH_TYPE_NONE) << where();
	const Analysis analysis = analyze_instruction(bytes, left, kernel.symbols[index].address + offset, Thunks{});
	ASSERT_EQ(analysis.length, length) << where();
	ASSERT_EQ(analysis.transfer, Transfer::none) << where();
	ASSERT_NE(analysis.refusal, Refusal::undecodable) << where();
	ASSERT_NE(analysis.refusal, Refusal::unsupported_relative) << where();
}

// Every boundary of every function, every byte offset of every eighth.
void expect_plain_as_zydis(const okp::host::KernelImage &kernel, const char *which)
{
	long boundaries = 0, plain_boundaries = 0, offsets = 0, plain_offsets = 0;
	for (size_t i = 0; i < kernel.symbols.size(); ++i) {
		const uint64_t address = kernel.symbols[i].address;
		const uint64_t size = kernel.end_of(i) - address;
		const uint8_t *bytes = kernel.bytes_at(address);
		if (!bytes || size == 0 || size > 64 * 1024)
			continue;
		for (uint64_t offset = 0; offset < size;) {
			const size_t left = size - offset;
			const unsigned length = instruction_length(bytes + offset, left);
			if (!length)
				break;
			++boundaries;
			expect_as_zydis(kernel, i, offset, bytes + offset, left, &plain_boundaries);
			if (testing::Test::HasFatalFailure())
				return;
			offset += length;
		}
		for (uint64_t offset = 0; i % 8 == 0 && offset < size; ++offset) {
			++offsets;
			expect_as_zydis(kernel, i, offset, bytes + offset, size - offset, &plain_offsets);
			if (testing::Test::HasFatalFailure())
				return;
		}
	}
	std::cout << "  plain instructions (" << which << "): " << plain_boundaries << " of " << boundaries
		  << " instructions, and " << plain_offsets << " of " << offsets
		  << " byte offsets, as Zydis decodes them\n";
	EXPECT_GT(boundaries, 1000000);
	// The fast path must carry most of a function's decode.
	EXPECT_GT(plain_boundaries * 10, boundaries * 6);
}

// The image, then (OKPROBE_X86_RUNTIME_TEXT) the text as the boot patched
// it, which is what registrations decode.
TEST(X86KernelBytes, PlainLengthsAreZydisLengths)
{
	okp::host::KernelImage kernel;
	const char *vmlinux = std::getenv("OKPROBE_X86_VMLINUX");
	const char *kallsyms = std::getenv("OKPROBE_X86_KALLSYMS");
	if (!vmlinux || !kallsyms || !okp::host::load_kernel_image(vmlinux, kallsyms, kernel))
		GTEST_SKIP() << "OKPROBE_X86_VMLINUX / OKPROBE_X86_KALLSYMS not set";
	expect_plain_as_zydis(kernel, "image");
	const char *runtime = std::getenv("OKPROBE_X86_RUNTIME_TEXT");
	if (!runtime || testing::Test::HasFatalFailure())
		return;
	ASSERT_GE(okp::host::overlay_runtime_text(runtime, kernel), 0);
	expect_plain_as_zydis(kernel, "running text");
}

} // namespace
