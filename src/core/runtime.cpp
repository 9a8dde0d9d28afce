// SPDX-License-Identifier: GPL-2.0
// The C++ runtime the module provides for itself (module build only; host
// tests use the hosted library).
//
// operator new returns nullptr on failure instead of throwing: the core is
// built with -fno-exceptions -fcheck-new, so every new-expression is checked
// for nullptr by the compiler before construction and by its caller after.
#include "core_api.h"

#include <stddef.h>

void *operator new(size_t size)
{
	return okp_glue_alloc(size);
}

void *operator new[](size_t size)
{
	return okp_glue_alloc(size);
}

void operator delete(void *pointer) noexcept
{
	okp_glue_free(pointer);
}

void operator delete[](void *pointer) noexcept
{
	okp_glue_free(pointer);
}

void operator delete(void *pointer, size_t) noexcept
{
	okp_glue_free(pointer);
}

void operator delete[](void *pointer, size_t) noexcept
{
	okp_glue_free(pointer);
}

// The C++ ABI's entry for a call through an unset pure virtual slot.
extern "C" void __cxa_pure_virtual(void);
extern "C" void __cxa_pure_virtual(void)
{
	okp_glue_fatal("pure virtual function called");
}
