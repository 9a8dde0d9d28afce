// SPDX-License-Identifier: GPL-2.0
// Parsing of the kernel's sprint_symbol() output, "name+0xOFF/0xSIZE [module]".
//
// kallsyms_lookup_size_offset() is not exported in 6.1 but sprint_symbol() is:
// its text is how the module learns which symbol covers an address, at what
// offset, how large the symbol is and whether it lies in a module.
#pragma once

#include "text.hpp"

namespace okp {

struct SymbolDescription {
	Text name;
	uint64_t offset = 0;
	uint64_t size = 0;
	Text module; // empty for the core kernel
};

// Returns false for text that is not a complete description, such as the bare
// hex address sprint_symbol() prints where no symbol is known.
bool parse_symbol_description(Text text, SymbolDescription &out);

} // namespace okp
