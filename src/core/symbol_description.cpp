// SPDX-License-Identifier: GPL-2.0
#include "symbol_description.hpp"

namespace okp {

bool parse_symbol_description(Text text, SymbolDescription &out)
{
	// Module symbols end in " [module]" (or " [module buildid]").
	Text module;
	const size_t space = text.find(' ');
	if (space < text.size) {
		const Text bracketed = text.drop(space + 1);
		if (bracketed.size < 3 || bracketed[0] != '[' || bracketed[bracketed.size - 1] != ']')
			return false;
		module = Text(bracketed.data + 1, bracketed.size - 2);
		module = module.prefix(module.find(' '));
		if (module.empty())
			return false;
		text = text.prefix(space);
	}

	// Symbol names may themselves contain '+' or '.' (foo.cold, foo.isra.0),
	// so split at the last '+' and the last '/'.
	size_t plus = text.size, slash = text.size;
	for (size_t i = 0; i < text.size; ++i) {
		if (text[i] == '+')
			plus = i;
		else if (text[i] == '/')
			slash = i;
	}
	if (plus == 0 || plus >= text.size || slash >= text.size || slash < plus)
		return false;

	SymbolDescription parsed;
	parsed.name = text.prefix(plus);
	parsed.module = module;
	if (!parse_hex(Text(text.data + plus + 1, slash - plus - 1), parsed.offset) ||
	    !parse_hex(text.drop(slash + 1), parsed.size))
		return false;
	out = parsed;
	return true;
}

} // namespace okp
