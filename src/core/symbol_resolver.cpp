// SPDX-License-Identifier: GPL-2.0
// Load-time resolution of kernel symbols that 6.1 does not export.
//
// An address from kallsyms (or from the loader's module parameter) is trusted
// only after sprint_symbol() describes it as the very start of the symbol of
// that name in the core kernel: that catches a stale address from another
// boot (KASLR), a typo, an alias and a same-named symbol in a module.
#include "core_api.h"
#include "symbol_description.hpp"

namespace okp {
namespace {

constexpr size_t description_size = 256;

// kallsyms describes an address by one of the symbols at it: a section
// marker such as __entry_text_start shares its address with the first
// function there. Both names looking up to the same address make them aliases.
bool is_alias(const okp_symbol_ops *ops, unsigned long address, const char *description)
{
	SymbolDescription parsed;
	char name[description_size];
	if (!parse_symbol_description(Text::of(description), parsed) || parsed.offset != 0)
		return false;
	copy_text(name, sizeof(name), parsed.name);
	return ops->lookup(name) == address;
}

} // namespace
} // namespace okp

using namespace okp;

extern "C" enum okp_symbol_verdict okp_core_check_symbol(const char *name, unsigned long address,
							 const char *description)
{
	if (address == 0)
		return OKP_SYMBOL_NOT_FOUND;
	SymbolDescription parsed;
	if (!parse_symbol_description(Text::of(description), parsed))
		return OKP_SYMBOL_UNDESCRIBED;
	if (!parsed.module.empty())
		return OKP_SYMBOL_IN_MODULE;
	if (!(parsed.name == Text::of(name)))
		return OKP_SYMBOL_NAME_MISMATCH;
	if (parsed.offset != 0)
		return OKP_SYMBOL_NOT_AT_START;
	return OKP_SYMBOL_OK;
}

extern "C" int okp_core_resolve_symbols(struct okp_symbol_request *requests, unsigned long count,
					const struct okp_symbol_ops *ops, struct okp_symbol_failure *failure)
{
	int failed = 0;
	for (unsigned long i = 0; i < count; ++i) {
		okp_symbol_request &request = requests[i];
		char description[description_size] = "";
		const unsigned long address = ops->lookup(request.name);
		if (address != 0)
			ops->describe(address, description, sizeof(description));
		okp_symbol_verdict verdict = okp_core_check_symbol(request.name, address, description);
		if (verdict == OKP_SYMBOL_NAME_MISMATCH && is_alias(ops, address, description))
			verdict = OKP_SYMBOL_OK;
		*request.address = verdict == OKP_SYMBOL_OK ? address : 0;
		if (verdict == OKP_SYMBOL_OK || !request.required)
			continue;
		if (failed++ == 0) {
			failure->name = request.name;
			failure->address = address;
			failure->verdict = verdict;
			copy_text(failure->description, sizeof(failure->description), Text::of(description));
		}
	}
	return failed;
}

extern "C" const char *okp_core_symbol_verdict_text(enum okp_symbol_verdict verdict)
{
	switch (verdict) {
	case OKP_SYMBOL_OK:
		return "ok";
	case OKP_SYMBOL_NOT_FOUND:
		return "not found in kallsyms";
	case OKP_SYMBOL_UNDESCRIBED:
		return "no kernel symbol at that address";
	case OKP_SYMBOL_NAME_MISMATCH:
		return "the address belongs to another symbol";
	case OKP_SYMBOL_NOT_AT_START:
		return "the address is not the start of the symbol";
	case OKP_SYMBOL_IN_MODULE:
		return "the address is in a module, not the kernel";
	}
	return "unknown verdict";
}
