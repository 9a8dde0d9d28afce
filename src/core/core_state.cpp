// SPDX-License-Identifier: GPL-2.0
// The core's process-wide state and the operator switches.
//
// Ownership: CoreState is owned by the module's init/exit path. The switches
// are single words read and written atomically (sysctl and debugfs writers
// race with each other and with readers). The blacklist is filled during
// module init, before debugfs exposes it, and is read-only afterwards until
// module exit, so it needs no lock.
#include "atomic.hpp"
#include "core_api.h"
#include "kernel_facts.hpp"
#include "range_list.hpp"

namespace okp {
namespace {

struct CoreState {
	Atomic<int> optimization_enabled{1};
	RangeList blacklist;
};

// constinit: built at compile time; the module loader runs no constructors.
constinit CoreState core;

} // namespace
} // namespace okp

using namespace okp;

extern "C" int okp_core_init(void)
{
	core.optimization_enabled.store(1, Order::relaxed);
	return 0;
}

extern "C" void okp_core_exit(void)
{
	core.blacklist.clear();
}

extern "C" int okp_core_optimization_enabled(void)
{
	return core.optimization_enabled.load(Order::relaxed);
}

extern "C" void okp_core_set_optimization(int enabled)
{
	core.optimization_enabled.store(enabled ? 1 : 0, Order::relaxed);
}

extern "C" int okp_core_blacklist_add(unsigned long start, unsigned long end, const char *why)
{
	return core.blacklist.add(start, end, why) ? 0 : -1;
}

const char *okp::own_blacklist_find(uint64_t address)
{
	const AddressRange *range = core.blacklist.find(address);
	return range ? range->why : nullptr;
}

extern "C" unsigned long okp_core_blacklist_count(void)
{
	return core.blacklist.size();
}

extern "C" int okp_core_blacklist_entry(unsigned long index, unsigned long *start, unsigned long *end, const char **why)
{
	if (index >= core.blacklist.size())
		return 0;
	const AddressRange &range = core.blacklist[index];
	*start = range.start;
	*end = range.end;
	*why = range.why;
	return 1;
}
