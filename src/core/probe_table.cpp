// SPDX-License-Identifier: GPL-2.0
#include "probe_table.hpp"

#include "errno.hpp"

#include "core_api.h"

namespace okp {
namespace {

constexpr unsigned int inactive_flags = OKPROBE_FLAG_DISABLED | OKPROBE_FLAG_GONE;

unsigned int load_flags(const okprobe *probe)
{
	return __atomic_load_n(&probe->flags, __ATOMIC_ACQUIRE);
}

void set_flag(okprobe *probe, unsigned int flag, bool on)
{
	const unsigned int flags = load_flags(probe);
	__atomic_store_n(&probe->flags, on ? flags | flag : flags & ~flag, __ATOMIC_RELEASE);
}

okprobe *load_probe(okprobe *const &slot)
{
	return __atomic_load_n(&slot, __ATOMIC_ACQUIRE);
}

bool within(uint64_t address, uint64_t start, uint64_t end)
{
	return address >= start && address < end;
}

// What registration sees: the kernel's facts, but text read through the
// table so that okprobe's own breakpoints read as the original bytes.
struct OverlaidFacts {
	const ProbeTable *table;
	const KernelFacts *kernel;
};

} // namespace

bool ProbeTable::probe_active(const okprobe *probe)
{
	return probe && !(load_flags(probe) & inactive_flags);
}

bool ProbeTable::should_be_armed(const Site &site) const
{
	if (!all_enabled_ || site.gone)
		return false;
	for (const okprobe *probe : site.probes)
		if (probe && !(probe->flags & OKPROBE_FLAG_DISABLED))
			return true;
	return false;
}

void ProbeTable::update_arming(Site &site)
{
	const bool wanted = should_be_armed(site);
	if (wanted == site.armed)
		return;
	if (wanted)
		arch::arm(site);
	else
		arch::disarm(site);
	site.armed = wanted;
}

void ProbeTable::retire_storage(AddressTable<Site>::Storage *old, void *)
{
	// Handlers may still walk the old storage until a grace period ends.
	okp_glue_synchronize_rcu();
	AddressTable<Site>::free_storage(old);
}

size_t ProbeTable::read_original_text(const KernelFacts &facts, uint64_t address, uint8_t *buffer, size_t size) const
{
	const size_t read = facts.read_text(address, buffer, size, facts.context);
	for (const Site *site = first_; site; site = site->next) {
		for (size_t i = 0; i < site->patched_bytes; ++i) {
			const uint64_t at = site->address + i;
			if (at >= address && at < address + read)
				buffer[at - address] = site->original[i];
		}
	}
	return read;
}

Site *ProbeTable::create_site(uint64_t address, const KernelFacts &facts, const char **why)
{
	uint8_t original[max_original_bytes] = {};
	if (read_original_text(facts, address, original, sizeof(original)) == 0) {
		*why = "the text cannot be read";
		return nullptr;
	}
	Site *site = arch::create_site(address, original, why);
	if (!site)
		return nullptr;
	for (size_t i = 0; i < max_original_bytes; ++i)
		site->original[i] = original[i];
	okp_glue_describe(address, site->description, sizeof(site->description));
	if (!sites_.insert(address, site, retire_storage, nullptr)) {
		arch::retire_site(site);
		*why = "out of memory";
		return nullptr;
	}
	Site **tail = &first_;
	while (*tail)
		tail = &(*tail)->next;
	*tail = site;
	return site;
}

void ProbeTable::unlink(Site *site)
{
	for (Site **link = &first_; *link; link = &(*link)->next) {
		if (*link == site) {
			*link = site->next;
			site->next = nullptr;
			return;
		}
	}
}

int ProbeTable::register_probe(okprobe *probe, const KernelFacts &facts, InstructionRules rules, const char **why)
{
	if (probe->okp_site) {
		*why = "the probe is already registered";
		return -error::einval;
	}
	for (const Site *site = first_; site; site = site->next) {
		for (const okprobe *registered : site->probes) {
			if (registered == probe) {
				*why = "the probe is already registered";
				return -error::einval;
			}
		}
	}
	if (probe->flags & ~static_cast<unsigned int>(OKPROBE_FLAG_DISABLED)) {
		*why = "only OKPROBE_FLAG_DISABLED may be set at registration";
		return -error::einval;
	}
	ProbeRequest request;
	request.symbol_name = probe->symbol_name;
	request.offset = probe->offset;
	request.address = reinterpret_cast<uint64_t>(probe->addr);
	request.has_pre_handler = probe->pre_handler != nullptr;
	request.has_post_handler = probe->post_handler != nullptr;

	// Every registration is checked, also one joining an existing site,
	// against the original text rather than okprobe's breakpoints.
	const OverlaidFacts overlay = {this, &facts};
	KernelFacts checked_facts = facts;
	checked_facts.context = const_cast<OverlaidFacts *>(&overlay);
	checked_facts.lookup_symbol = [](const char *name, void *context) {
		const KernelFacts &kernel = *static_cast<OverlaidFacts *>(context)->kernel;
		return kernel.lookup_symbol(name, kernel.context);
	};
	checked_facts.function_of = [](uint64_t address, uint64_t *start, uint64_t *size, void *context) {
		const KernelFacts &kernel = *static_cast<OverlaidFacts *>(context)->kernel;
		return kernel.function_of(address, start, size, kernel.context);
	};
	checked_facts.text_kind = [](uint64_t address, void *context) {
		const KernelFacts &kernel = *static_cast<OverlaidFacts *>(context)->kernel;
		return kernel.text_kind(address, kernel.context);
	};
	checked_facts.blacklisted = [](uint64_t address, void *context) {
		const KernelFacts &kernel = *static_cast<OverlaidFacts *>(context)->kernel;
		return kernel.blacklisted(address, kernel.context);
	};
	checked_facts.reserved = [](uint64_t address, size_t length, void *context) {
		const KernelFacts &kernel = *static_cast<OverlaidFacts *>(context)->kernel;
		return kernel.reserved(address, length, kernel.context);
	};
	checked_facts.has_exception_entry = [](uint64_t address, void *context) {
		const KernelFacts &kernel = *static_cast<OverlaidFacts *>(context)->kernel;
		return kernel.has_exception_entry(address, kernel.context);
	};
	checked_facts.read_text = [](uint64_t address, uint8_t *buffer, size_t size, void *context) {
		const OverlaidFacts &self = *static_cast<OverlaidFacts *>(context);
		return self.table->read_original_text(*self.kernel, address, buffer, size);
	};
	const Registration checked = check_registration(request, checked_facts, rules);
	if (checked.error) {
		*why = checked.why;
		return -checked.error;
	}

	Site *site = sites_.lookup(checked.address);
	const bool new_site = !site;
	if (new_site) {
		site = create_site(checked.address, facts, why);
		if (!site)
			return -error::enomem;
	}
	int index = -1;
	for (int i = 0; i < max_probes_per_site && index < 0; ++i)
		if (!site->probes[i])
			index = i;
	if (index < 0) {
		*why = "too many probes at this address";
		return -error::ebusy;
	}
	// Everything the handler reads is filled before the probe is
	// published to it.
	probe->addr = reinterpret_cast<void *>(checked.address);
	probe->nmissed = 0;
	probe->okp_site = site;
	__atomic_store_n(&site->hits[index], 0ul, __ATOMIC_RELAXED);
	__atomic_store_n(&site->probes[index], probe, __ATOMIC_RELEASE);
	update_arming(*site);
	return 0;
}

void ProbeTable::unregister_probes(okprobe *const *probes, size_t count)
{
	Site *dying = nullptr; // linked through next once unlinked
	bool detached = false;
	for (size_t n = 0; n < count; ++n) {
		okprobe *probe = probes[n];
		Site *site = probe ? static_cast<Site *>(probe->okp_site) : nullptr;
		if (!site)
			continue;
		bool empty = true;
		for (okprobe *&slot : site->probes) {
			if (slot == probe)
				__atomic_store_n(&slot, static_cast<okprobe *>(nullptr), __ATOMIC_RELEASE);
			else if (slot)
				empty = false;
		}
		probe->okp_site = nullptr;
		detached = true;
		if (!empty) {
			update_arming(*site); // the others may all be disabled
			continue;
		}
		if (site->armed) {
			arch::disarm(*site);
			site->armed = false;
		}
		if (!site->gone)
			sites_.remove(site->address);
		unlink(site);
		site->next = dying;
		dying = site;
	}
	if (!detached)
		return;
	// One grace period for the batch: after it no handler runs a detached
	// probe or holds a dying site.
	okp_glue_synchronize_rcu();
	if (!dying)
		return;
	// And no task is still preempted inside a dying site's boosted copy.
	okp_glue_synchronize_rcu_tasks();
	while (dying) {
		Site *next = dying->next;
		arch::retire_site(dying);
		dying = next;
	}
}

int ProbeTable::set_probe_enabled(okprobe *probe, bool enabled)
{
	Site *site = static_cast<Site *>(probe->okp_site);
	if (!site)
		return -error::einval;
	if (enabled && (load_flags(probe) & OKPROBE_FLAG_GONE))
		return -error::einval;
	set_flag(probe, OKPROBE_FLAG_DISABLED, !enabled);
	update_arming(*site);
	return 0;
}

void ProbeTable::set_all_enabled(bool enabled)
{
	__atomic_store_n(&all_enabled_, enabled, __ATOMIC_RELAXED);
	for (Site *site = first_; site; site = site->next)
		update_arming(*site);
}

void ProbeTable::text_gone(uint64_t start, uint64_t end)
{
	bool any = false;
	for (Site *site = first_; site; site = site->next) {
		if (site->gone || !within(site->address, start, end))
			continue;
		site->gone = true;
		for (okprobe *probe : site->probes)
			if (probe)
				set_flag(probe, OKPROBE_FLAG_GONE, true);
		// The text is still mapped while its module is going: put the
		// original byte back rather than leave a stray breakpoint.
		update_arming(*site);
		sites_.remove(site->address);
		any = true;
	}
	if (any)
		okp_glue_synchronize_rcu();
}

size_t ProbeTable::probes_within(uint64_t start, uint64_t end, okprobe **found, size_t capacity) const
{
	size_t count = 0;
	for (const Site *site = first_; site; site = site->next) {
		for (okprobe *probe : site->probes) {
			if (!probe)
				continue;
			const bool inside = within(reinterpret_cast<uint64_t>(probe), start, end) ||
					    within(reinterpret_cast<uint64_t>(probe->pre_handler), start, end) ||
					    within(reinterpret_cast<uint64_t>(probe->post_handler), start, end);
			if (inside && count < capacity)
				found[count++] = probe;
		}
	}
	return count;
}

void ProbeTable::clear()
{
	okprobe *batch[32];
	for (;;) {
		size_t count = 0;
		for (const Site *site = first_; site && count < 32; site = site->next)
			for (okprobe *probe : site->probes)
				if (probe && count < 32)
					batch[count++] = probe;
		if (!count)
			break;
		unregister_probes(batch, count);
	}
	sites_.destroy();
	__atomic_store_n(&all_enabled_, true, __ATOMIC_RELAXED);
}

// ---- Handler side -----------------------------------------------------------

void ProbeTable::start_hit(Site &site, HitProbes &hit)
{
	hit.count = 0;
	for (int i = 0; i < max_probes_per_site; ++i) {
		okprobe *probe = load_probe(site.probes[i]);
		if (probe_active(probe)) {
			hit.probes[hit.count++] = probe;
			__atomic_fetch_add(&site.hits[i], 1, __ATOMIC_RELAXED);
		}
	}
}

bool ProbeTable::run_pre_handlers(const HitProbes &hit, pt_regs *regs)
{
	for (int i = 0; i < hit.count; ++i) {
		okprobe *probe = hit.probes[i];
		if (probe->pre_handler && probe->pre_handler(probe, regs))
			return true;
	}
	return false;
}

void ProbeTable::run_post_handlers(const HitProbes &hit, pt_regs *regs)
{
	for (int i = 0; i < hit.count; ++i)
		if (okprobe *probe = hit.probes[i]; probe->post_handler)
			probe->post_handler(probe, regs, 0);
}

bool ProbeTable::wants_post_handlers(const HitProbes &hit)
{
	for (int i = 0; i < hit.count; ++i)
		if (hit.probes[i]->post_handler)
			return true;
	return false;
}

void ProbeTable::count_missed(Site &site)
{
	for (okprobe *const &slot : site.probes)
		if (okprobe *probe = load_probe(slot))
			__atomic_fetch_add(&probe->nmissed, 1, __ATOMIC_RELAXED);
}

} // namespace okp
