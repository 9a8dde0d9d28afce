// SPDX-License-Identifier: GPL-2.0
// The plain-instruction fast paths against Zydis over a Debian kernel's
// text (OKPROBE_X86_VMLINUX, OKPROBE_X86_KALLSYMS, as the other
// kernel-bytes tests): at every instruction boundary of every function, and
// at every byte offset of every eighth function (bytes that are not where
// the linear decode goes).
// - Wherever plain_instruction_length() gives a length, Zydis must decode
//   an instruction of that length that okprobe's analysis finds decodable
//   and transferring no control. A one-off run over every byte offset of
//   the .text of 6.1, 6.12, 7.3 and 7.3-rt (54 million) found no
//   difference either.
// - Wherever plain_relative_branch() sees a branch, analyze_instruction()
//   (its fast path, with the kernel's thunks bounded) must give the
//   analysis Zydis gives (with the thunks unbounded), field by field: the
//   thunk rules' jumps to returns and indirect jumps included.
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

// Checks a plain branch at offset of symbol index; counts them. bounded
// are the kernel's thunks as the module has them; the reference analysis
// reads the same thunks without bounds.
void expect_branch_as_zydis(const okp::host::KernelImage &kernel, size_t index, uint64_t offset, const uint8_t *bytes,
			    size_t left, const Thunks &bounded, long *branches)
{
	if (plain_relative_branch(bytes, left).kind == PlainBranch::Kind::none)
		return;
	++*branches;
	const auto where = [&] { return kernel.symbols[index].name + "+" + std::to_string(offset); };
	Thunks unbounded = bounded;
	unbounded.lowest = 0;
	unbounded.highest = ~uint64_t(0);
	const uint64_t address = kernel.symbols[index].address + offset;
	const Analysis fast = analyze_instruction(bytes, left, address, bounded);
	const Analysis zydis = analyze_instruction_by_zydis(bytes, left, address, unbounded);
	ASSERT_EQ(fast.length, zydis.length) << where();
	ASSERT_EQ(fast.execution, zydis.execution) << where();
	ASSERT_EQ(fast.refusal, zydis.refusal) << where();
	ASSERT_EQ(fast.transfer, zydis.transfer) << where();
	ASSERT_EQ(fast.condition, zydis.condition) << where();
	ASSERT_EQ(fast.flag_operation, zydis.flag_operation) << where();
	ASSERT_EQ(fast.condition_code, zydis.condition_code) << where();
	ASSERT_EQ(fast.reg, zydis.reg) << where();
	ASSERT_EQ(fast.disp_offset, zydis.disp_offset) << where();
	ASSERT_EQ(fast.ret_pop, zydis.ret_pop) << where();
	ASSERT_EQ(fast.relative_branch, zydis.relative_branch) << where();
	ASSERT_EQ(fast.target, zydis.target) << where();
}

// Every boundary of every function, every byte offset of every eighth.
void expect_plain_as_zydis(const okp::host::KernelImage &kernel, const char *which)
{
	const Thunks thunks = okp::host::kernel_thunks(kernel);
	long boundaries = 0, plain_boundaries = 0, offsets = 0, plain_offsets = 0;
	long branch_boundaries = 0, branch_offsets = 0;
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
			expect_branch_as_zydis(kernel, i, offset, bytes + offset, left, thunks, &branch_boundaries);
			if (testing::Test::HasFatalFailure())
				return;
			offset += length;
		}
		for (uint64_t offset = 0; i % 8 == 0 && offset < size; ++offset) {
			++offsets;
			expect_as_zydis(kernel, i, offset, bytes + offset, size - offset, &plain_offsets);
			expect_branch_as_zydis(kernel, i, offset, bytes + offset, size - offset, thunks,
					       &branch_offsets);
			if (testing::Test::HasFatalFailure())
				return;
		}
	}
	std::cout << "  plain instructions (" << which << "): " << plain_boundaries << " of " << boundaries
		  << " instructions, and " << plain_offsets << " of " << offsets
		  << " byte offsets, as Zydis decodes them\n";
	std::cout << "  plain branches (" << which << "): " << branch_boundaries << " instructions and "
		  << branch_offsets << " byte offsets, analysed as through Zydis\n";
	EXPECT_GT(boundaries, 1000000);
	// The fast paths must carry most of a function's decode: the plain
	// instructions, and the branches most of what is left.
	EXPECT_GT(plain_boundaries * 10, boundaries * 6);
	EXPECT_GT(branch_boundaries * 10, (boundaries - plain_boundaries) * 6);
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
