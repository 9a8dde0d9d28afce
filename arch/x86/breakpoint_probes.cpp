// SPDX-License-Identifier: GPL-2.0
// x86-64 breakpoint probes: sites, out-of-line slots and the int3 handler.
//
// Ownership and order:
// - A Site is one armed int3 and everything needed to execute the
//   instruction it displaces; up to max_probes_per_site client probes share
//   it. Sites, the site tables and the slot pool are changed only under the
//   glue's probe mutex (okp_core_register/unregister); the handler reads
//   sites and their probe arrays with atomic loads and no lock.
// - A site goes live in this order: slot written, site inserted into the
//   tables, int3 written. It dies in reverse: int3 removed, site removed
//   from the tables, synchronize_rcu() (no handler still uses it: handlers
//   run as NMI-like RCU readers), synchronize_rcu_tasks() (no task is
//   preempted inside its slot after a boosted run), then slot and site are
//   freed.
#include "core/address_table.hpp"
#include "core/core_api.h"
#include "core/registration.hpp"
#include "x86/out_of_line.hpp"
#include "x86/probe_rules.hpp"

#include <okprobe.h>

namespace okp::x86 {
namespace {

constexpr int max_probes_per_site = 8;
constexpr uint8_t int3 = 0xcc;
constexpr unsigned long page_size = 4096;
// Each slot holds two copies: [0, 32) ends in a jmp back (boosted runs and
// runs without handlers), [32, 64) ends in int3 (runs before a post_handler).
constexpr unsigned long slot_bytes = 2 * slot_size;
constexpr unsigned long slots_per_page = page_size / slot_bytes;
constexpr int max_slot_pages = 64;

struct Site {
	uint64_t address = 0;
	Analysis analysis;
	uint8_t original[max_instruction_length] = {};
	uint64_t slot = 0; // 0 for emulated instructions
	okprobe *probes[max_probes_per_site] = {};
	unsigned long hits = 0;
	unsigned long missed = 0;
};

// Executable slots, a page at a time.
struct SlotPool {
	uint8_t *pages[max_slot_pages] = {};
	uint64_t used[max_slot_pages] = {}; // bit i: slot i of the page is taken

	uint64_t take()
	{
		for (int p = 0; p < max_slot_pages; ++p) {
			if (!pages[p]) {
				pages[p] = static_cast<uint8_t *>(okp_glue_exec_page_alloc());
				if (!pages[p])
					return 0;
			}
			for (unsigned long i = 0; i < slots_per_page; ++i) {
				if (!(used[p] & (1ull << i))) {
					used[p] |= 1ull << i;
					return reinterpret_cast<uint64_t>(pages[p] + i * slot_bytes);
				}
			}
		}
		return 0;
	}

	void give_back(uint64_t slot)
	{
		for (int p = 0; p < max_slot_pages; ++p) {
			const uint64_t base = reinterpret_cast<uint64_t>(pages[p]);
			if (pages[p] && slot >= base && slot < base + page_size)
				used[p] &= ~(1ull << ((slot - base) / slot_bytes));
		}
	}

	void release_all()
	{
		for (int p = 0; p < max_slot_pages; ++p) {
			if (pages[p])
				okp_glue_exec_page_free(pages[p]);
			pages[p] = nullptr;
			used[p] = 0;
		}
	}
};

struct ProbeCore {
	AddressTable<Site> sites;      // by probed address
	AddressTable<Site> post_traps; // by the address of a slot's trailing int3
	SlotPool slots;
	Thunks thunks;
	bool thunks_resolved = false;
};

constinit ProbeCore probe_core;

void free_retired(AddressTable<Site>::Storage *old, void *)
{
	// Called with the probe mutex held; readers may still walk the old
	// storage until a grace period has passed.
	okp_glue_synchronize_rcu();
	AddressTable<Site>::free_storage(old);
}

void resolve_thunks()
{
	if (probe_core.thunks_resolved)
		return;
	static const char *const names[16] = {"__x86_indirect_thunk_rax",
					      "__x86_indirect_thunk_rcx",
					      "__x86_indirect_thunk_rdx",
					      "__x86_indirect_thunk_rbx",
					      nullptr,
					      "__x86_indirect_thunk_rbp",
					      "__x86_indirect_thunk_rsi",
					      "__x86_indirect_thunk_rdi",
					      "__x86_indirect_thunk_r8",
					      "__x86_indirect_thunk_r9",
					      "__x86_indirect_thunk_r10",
					      "__x86_indirect_thunk_r11",
					      "__x86_indirect_thunk_r12",
					      "__x86_indirect_thunk_r13",
					      "__x86_indirect_thunk_r14",
					      "__x86_indirect_thunk_r15"};
	probe_core.thunks.return_thunk = okp_glue_lookup_symbol("__x86_return_thunk");
	for (int reg = 0; reg < 16; ++reg)
		probe_core.thunks.indirect_thunk[reg] = names[reg] ? okp_glue_lookup_symbol(names[reg]) : 0;
	probe_core.thunks_resolved = true;
}

KernelFacts kernel_facts()
{
	KernelFacts facts;
	facts.lookup_symbol = [](const char *name, void *) -> uint64_t { return okp_glue_lookup_symbol(name); };
	facts.function_of = [](uint64_t address, uint64_t *start, uint64_t *size, void *) {
		unsigned long s = 0, n = 0;
		const bool found = okp_glue_function_of(address, &s, &n);
		*start = s;
		*size = n;
		return found;
	};
	facts.text_kind = [](uint64_t address, void *) {
		switch (okp_glue_text_kind(address)) {
		case OKP_TEXT_CORE:
			return TextKind::core_kernel;
		case OKP_TEXT_MODULE:
			return TextKind::module;
		case OKP_TEXT_INIT_AFTER_BOOT:
			return TextKind::init_after_boot;
		case OKP_TEXT_NONE:
			break;
		}
		return TextKind::none;
	};
	facts.blacklisted = [](uint64_t address, void *) { return okp_core_blacklist_find(address); };
	facts.reserved = [](uint64_t address, size_t length, void *) { return okp_glue_reserved(address, length); };
	facts.has_exception_entry = [](uint64_t address, void *) { return okp_glue_has_exception_entry(address) != 0; };
	facts.read_text = [](uint64_t address, uint8_t *buffer, size_t size, void *) -> size_t {
		const size_t read = okp_glue_read_text(address, buffer, size);
		// The text holds okprobe's own int3s: put the original bytes back,
		// or a boundary walk through a probed instruction goes astray.
		probe_core.sites.for_each([&](Site *site) {
			if (site->address >= address && site->address < address + read)
				buffer[site->address - address] = site->original[0];
		});
		return read;
	};
	facts.context = nullptr;
	return facts;
}

bool site_has_post_handler(const Site &site)
{
	for (okprobe *probe : site.probes)
		if (probe && probe->post_handler)
			return true;
	return false;
}

int attach(Site &site, okprobe *probe)
{
	for (okprobe *&slot : site.probes) {
		if (!slot) {
			probe->okp_site = &site;
			__atomic_store_n(&slot, probe, __ATOMIC_RELEASE);
			return 0;
		}
	}
	return -16; // EBUSY: the site is full
}

// Builds both copies of the instruction in the site's slot.
bool write_slot(Site &site)
{
	if (site.analysis.execution == Execution::emulate)
		return true;
	site.slot = probe_core.slots.take();
	if (!site.slot)
		return false;
	uint8_t boosted[slot_size], trapping[slot_size];
	if (!build_slot(site.analysis, site.original, site.address, site.slot, SlotEnd::jump_back, boosted) ||
	    !build_slot(site.analysis, site.original, site.address, site.slot + slot_size, SlotEnd::breakpoint,
			trapping)) {
		probe_core.slots.give_back(site.slot);
		site.slot = 0;
		return false;
	}
	okp_glue_text_write(site.slot, boosted, slot_size);
	okp_glue_text_write(site.slot + slot_size, trapping, slot_size);
	return true;
}

uint64_t post_trap_address(const Site &site)
{
	return site.slot + slot_size + site.analysis.length;
}

Site *create_site(uint64_t address, const char **why)
{
	Site *site = new Site;
	if (!site) {
		*why = "out of memory";
		return nullptr;
	}
	site->address = address;
	if (okp_glue_read_text(address, site->original, sizeof(site->original)) == 0) {
		delete site;
		*why = "the text cannot be read";
		return nullptr;
	}
	site->analysis = analyze_instruction(site->original, sizeof(site->original), address, probe_core.thunks);
	if (!write_slot(*site)) {
		delete site;
		*why = "no out-of-line slot within reach";
		return nullptr;
	}
	if (!probe_core.sites.insert(address, site, free_retired, nullptr) ||
	    (site->slot && !probe_core.post_traps.insert(post_trap_address(*site), site, free_retired, nullptr))) {
		probe_core.sites.remove(address);
		if (site->slot)
			probe_core.slots.give_back(site->slot);
		delete site;
		*why = "out of memory";
		return nullptr;
	}
	okp_glue_text_write(address, &int3, 1);
	return site;
}

void destroy_site(Site *site)
{
	// The original first byte comes back; the rest never changed.
	okp_glue_text_write(site->address, site->original, 1);
	probe_core.sites.remove(site->address);
	if (site->slot)
		probe_core.post_traps.remove(post_trap_address(*site));
	okp_glue_synchronize_rcu();
	okp_glue_synchronize_rcu_tasks();
	if (site->slot)
		probe_core.slots.give_back(site->slot);
	delete site;
}

// ---- The handler ------------------------------------------------------------

uint64_t read_stack(uint64_t address)
{
	return *reinterpret_cast<const uint64_t *>(address);
}

void write_stack(uint64_t address, uint64_t value)
{
	*reinterpret_cast<uint64_t *>(address) = value;
}

const StackAccess stack = {write_stack, read_stack};

void run_post_handlers(Site &site, Registers &regs)
{
	for (okprobe *&slot : site.probes) {
		okprobe *probe = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);
		if (probe && probe->post_handler && !(probe->flags & OKPROBE_FLAG_DISABLED))
			probe->post_handler(probe, reinterpret_cast<pt_regs *>(&regs), 0);
	}
}

// Continues at the displaced instruction without running handlers.
void execute_without_handlers(Site &site, Registers &regs)
{
	if (site.analysis.execution == Execution::emulate)
		emulate(site.analysis, site.address, regs, stack);
	else
		regs.ip = site.slot; // the boosted copy
}

int breakpoint_hit(Site &site, Registers &regs, okp_cpu_state &cpu)
{
	if (cpu.active_site) {
		// A probe hit inside a handler (or between a copy and its post
		// trap): count it, run the instruction, call no handler.
		__atomic_fetch_add(&site.missed, 1, __ATOMIC_RELAXED);
		for (okprobe *&slot : site.probes)
			if (okprobe *probe = __atomic_load_n(&slot, __ATOMIC_ACQUIRE))
				__atomic_fetch_add(&probe->nmissed, 1, __ATOMIC_RELAXED);
		execute_without_handlers(site, regs);
		return 1;
	}
	__atomic_fetch_add(&site.hits, 1, __ATOMIC_RELAXED);
	cpu.active_site = &site;
	const bool probes_on = okp_core_probes_enabled();
	for (okprobe *&slot : site.probes) {
		okprobe *probe = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);
		if (!probes_on || !probe || !probe->pre_handler || (probe->flags & OKPROBE_FLAG_DISABLED))
			continue;
		if (probe->pre_handler(probe, reinterpret_cast<pt_regs *>(&regs))) {
			// The handler moved ip itself: the instruction is skipped.
			cpu.active_site = nullptr;
			return 1;
		}
	}
	if (site.analysis.execution == Execution::emulate) {
		emulate(site.analysis, site.address, regs, stack);
		if (probes_on)
			run_post_handlers(site, regs);
		cpu.active_site = nullptr;
		return 1;
	}
	if (!probes_on || !site_has_post_handler(site)) {
		regs.ip = site.slot; // boosted: the copy jumps back by itself
		cpu.active_site = nullptr;
		return 1;
	}
	// The trapping copy, with interrupts off until its post trap.
	cpu.saved_flags = regs.flags & flag::interrupt;
	regs.flags &= ~flag::interrupt;
	regs.ip = site.slot + slot_size;
	return 1;
}

int post_trap_hit(Site &site, Registers &regs, okp_cpu_state &cpu)
{
	regs.ip = site.address + site.analysis.length;
	regs.flags |= cpu.saved_flags;
	cpu.saved_flags = 0;
	if (cpu.active_site == &site)
		run_post_handlers(site, regs);
	cpu.active_site = nullptr;
	return 1;
}

} // namespace
} // namespace okp::x86

using namespace okp;
using namespace okp::x86;

extern "C" int okp_core_breakpoint(void *raw_regs)
{
	Registers &regs = *static_cast<Registers *>(raw_regs);
	const uint64_t address = regs.ip - 1; // int3 has executed
	okp_cpu_state &cpu = *okp_glue_cpu_state();
	if (Site *site = probe_core.sites.lookup(address))
		return breakpoint_hit(*site, regs, cpu);
	if (Site *site = probe_core.post_traps.lookup(address))
		return post_trap_hit(*site, regs, cpu);
	return 0;
}

extern "C" int okp_core_register(struct okprobe *probe, const char **why)
{
	resolve_thunks();
	if (probe->okp_site) {
		*why = "the probe is already registered";
		return -22;
	}
	ProbeRequest request;
	request.symbol_name = probe->symbol_name;
	request.offset = probe->offset;
	request.address = reinterpret_cast<uint64_t>(probe->addr);
	request.has_pre_handler = probe->pre_handler != nullptr;
	request.has_post_handler = probe->post_handler != nullptr;

	// Every registration is checked, also one joining an existing site:
	// the checks see the original text, not okprobe's int3.
	const Registration checked = check_registration(request, kernel_facts(), probe_rules);
	if (checked.error) {
		*why = checked.why;
		return -checked.error;
	}
	const uint64_t address = checked.address;
	Site *site = probe_core.sites.lookup(address);
	if (!site) {
		site = create_site(address, why);
		if (!site)
			return -12; // ENOMEM
	}
	// Filled before attach() publishes the probe to the handler.
	probe->addr = reinterpret_cast<void *>(address);
	probe->nmissed = 0;
	const int ret = attach(*site, probe);
	if (ret) {
		*why = "too many probes at this address";
		return ret;
	}
	return 0;
}

extern "C" void okp_core_unregister(struct okprobe *probe)
{
	Site *site = static_cast<Site *>(probe->okp_site);
	if (!site)
		return;
	bool empty = true;
	for (okprobe *&slot : site->probes) {
		if (slot == probe)
			__atomic_store_n(&slot, static_cast<okprobe *>(nullptr), __ATOMIC_RELEASE);
		else if (slot)
			empty = false;
	}
	probe->okp_site = nullptr;
	if (empty)
		destroy_site(site);
	else
		okp_glue_synchronize_rcu(); // no handler still runs this probe's
}

extern "C" void okp_core_probes_exit(void)
{
	Site *left[64];
	int count;
	do {
		count = 0;
		probe_core.sites.for_each([&](Site *site) {
			if (count < 64)
				left[count++] = site;
		});
		for (int i = 0; i < count; ++i) {
			for (okprobe *&slot : left[i]->probes)
				if (slot)
					slot->okp_site = nullptr;
			destroy_site(left[i]);
		}
	} while (count > 0);
	probe_core.sites.destroy();
	probe_core.post_traps.destroy();
	probe_core.slots.release_all();
	probe_core.thunks_resolved = false;
}

extern "C" int okp_core_list_entry(unsigned long index, unsigned long *address, unsigned long *hits,
				   unsigned long *missed, unsigned int *flags)
{
	unsigned long i = 0;
	int found = 0;
	probe_core.sites.for_each([&](Site *site) {
		if (i++ != index || found)
			return;
		*address = site->address;
		*hits = __atomic_load_n(&site->hits, __ATOMIC_RELAXED);
		*missed = __atomic_load_n(&site->missed, __ATOMIC_RELAXED);
		*flags = 0;
		found = 1;
	});
	return found;
}
