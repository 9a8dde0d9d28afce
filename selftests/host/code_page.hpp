// SPDX-License-Identifier: GPL-2.0
// A few pages of host memory that hold machine code the tests build and
// call, so that copies and relocations run on the real CPU.
#pragma once

#include <cstdint>
#include <cstring>
#include <sys/mman.h>
#include <vector>

class CodePage {
public:
	// low: in the first 2 GiB (MAP_32BIT), where addresses fit the
	// sign-extended imm32 that kernel addresses (the top 2 GiB) fit too.
	explicit CodePage(size_t size = 8192, bool low = false) : size_(size)
	{
		void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE | PROT_EXEC,
			       MAP_PRIVATE | MAP_ANONYMOUS | (low ? MAP_32BIT : 0), -1, 0);
		base_ = p == MAP_FAILED ? nullptr : static_cast<uint8_t *>(p);
		if (base_)
			memset(base_, 0xcc, size);
	}
	~CodePage()
	{
		if (base_)
			munmap(base_, size_);
	}
	uint8_t *at(size_t offset) { return base_ + offset; }
	uint64_t address(size_t offset) const { return reinterpret_cast<uint64_t>(base_ + offset); }
	void put(size_t offset, std::vector<uint8_t> bytes) { memcpy(base_ + offset, bytes.data(), bytes.size()); }
	uint64_t call(size_t offset) { return reinterpret_cast<uint64_t (*)()>(base_ + offset)(); }
	bool ok() const { return base_ != nullptr; }

private:
	uint8_t *base_;
	size_t size_;
};
