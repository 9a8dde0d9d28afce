// SPDX-License-Identifier: GPL-2.0
// okprobe's riscv64 decoder, one line per instruction, for the differential
// check against binutils' objdump (tools/decoder-diff). Two modes:
//
//   okprobe_riscv_decode_dump decode BLOB
//     BLOB is a stream of encodings, each as long as its low bits say (2
//     bytes unless they are 11, then 4); for each, the decoder's reading:
//     "offset raw length operation class rd rs1 rs2 immediate reads writes",
//     tab-separated (hex offset, raw and register sets; decimal the rest).
//   okprobe_riscv_decode_dump kernel VMLINUX SYMBOLS BLOB
//     every distinct encoding that walking each function of a kernel
//     meets (as the census walks them), written to BLOB in that form.
//
// Host code: uses std freely (only the arch/riscv/ core is freestanding).
#include "riscv_kernel.hpp"

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>

namespace {

using namespace okp::riscv;

size_t encoded_length(const uint8_t *bytes)
{
	return (bytes[0] & 3) == 3 ? 4 : 2;
}

int decode(const char *path)
{
	std::ifstream file(path, std::ios::binary);
	const std::vector<uint8_t> blob((std::istreambuf_iterator<char>(file)), {});
	for (size_t offset = 0; offset + 2 <= blob.size();) {
		const size_t length = encoded_length(&blob[offset]);
		if (offset + length > blob.size())
			break;
		const Instruction i = decode_instruction(&blob[offset], length);
		uint32_t raw = 0;
		memcpy(&raw, &blob[offset], length);
		std::printf("%zx\t%x\t%u\t%s\t%s\t%u\t%u\t%u\t%" PRId64 "\t%x\t%x\n", offset, raw, i.length,
			    operation_name(i.operation), instruction_class_name(i.kind), i.rd, i.rs1, i.rs2,
			    i.immediate, i.reads, i.writes);
		offset += length;
	}
	return 0;
}

int kernel_encodings(const char *vmlinux, const char *symbols, const char *out)
{
	host::Kernel kernel;
	if (!host::load_kernel(vmlinux, symbols, kernel)) {
		std::cerr << vmlinux << " is not a riscv64 kernel with symbols in " << symbols << "\n";
		return 1;
	}
	std::set<uint32_t> seen;
	std::vector<uint8_t> blob;
	for (size_t f = 0; f < kernel.functions.size(); ++f) {
		const okp::CodeRange code = host::function_code(kernel, f);
		for (size_t offset = 0; offset + 2 <= code.size;) {
			const size_t length = encoded_length(code.bytes + offset);
			if (offset + length > code.size)
				break;
			uint32_t raw = 0;
			memcpy(&raw, code.bytes + offset, length);
			// Past 4 bytes (48-bit and longer encodings) neither
			// decoder reads an instruction: data in the text.
			if ((raw & 0x1f) == 0x1f) {
				offset += length;
				continue;
			}
			if (seen.insert(raw).second)
				blob.insert(blob.end(), code.bytes + offset, code.bytes + offset + length);
			offset += length;
		}
	}
	std::ofstream(out, std::ios::binary).write(reinterpret_cast<const char *>(blob.data()), blob.size());
	std::cerr << seen.size() << " distinct encodings in " << kernel.functions.size() << " functions\n";
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc == 3 && std::string(argv[1]) == "decode")
		return decode(argv[2]);
	if (argc == 5 && std::string(argv[1]) == "kernel")
		return kernel_encodings(argv[2], argv[3], argv[4]);
	std::cerr << "usage: " << argv[0] << " decode BLOB | kernel VMLINUX SYMBOLS BLOB\n";
	return 2;
}
