// SPDX-License-Identifier: GPL-2.0
// The probe table: every registered probe, the breakpoint sites they share,
// and the lifecycle of both, for every architecture.
//
// A Site is one probed address: one breakpoint in the text, the
// architecture's way of executing the displaced instruction (arch::), and
// up to max_probes_per_site client probes aggregated behind it.
//
// Life of a site:
//   created    registration found no site at the address: the arch
//              analyses the instruction and prepares its out-of-line copy
//   armed      the breakpoint is in the text. A site is armed exactly when
//              probes are enabled globally (debugfs enabled), the site is
//              not gone, and at least one of its probes is not disabled
//   gone       its text went away (module unload, module init text freed):
//              disarmed, out of the lookup table, handlers never run again;
//              it stays listed until its probes are unregistered
//   retired    its last probe was unregistered: disarmed, out of the lookup
//              table, then after the grace periods the arch frees it
//
// Ownership and locking: one ProbeTable, changed only by its writer under
// the glue's probe mutex (every method not marked "handler"). Handlers
// (breakpoint context, NMI-like) use only lookup() and the handler helpers,
// which read with atomic loads and take no lock. A site or probe a handler
// may hold is freed or reused only after okp_glue_synchronize_rcu(); an
// out-of-line copy a task may be preempted in only after
// okp_glue_synchronize_rcu_tasks().
#pragma once

#include "core/address_table.hpp"
#include "core/registration.hpp"

#include <okprobe.h>

namespace okp {

constexpr int max_probes_per_site = 8;
constexpr size_t max_original_bytes = 16;

struct Site {
	uint64_t address = 0;
	// The text at address before okprobe touched it.
	uint8_t original[max_original_bytes] = {};
	okprobe *probes[max_probes_per_site] = {};
	// Times each probe's handlers ran (indexed like probes).
	unsigned long hits[max_probes_per_site] = {};
	// How many bytes at address the arch has replaced (0: disarmed); the
	// registration checks read original[] for them.
	uint8_t patched_bytes = 0;
	bool armed = false;
	bool gone = false;
	// "symbol+0xoff/0xsize [module]" at registration: still right in the
	// list after the module is gone.
	char description[128] = {};
	Site *next = nullptr; // every site, in registration order
};

// What each architecture provides (arch/*/breakpoint_probes.cpp).
namespace arch {
// Allocates the architecture's site for the instruction at address
// (original: the first bytes of text there), with its out-of-line copy
// ready; not armed. nullptr and *why on failure (out of memory, no slot).
Site *create_site(uint64_t address, const uint8_t (&original)[max_original_bytes], const char **why);
// Writes / removes the breakpoint (the text patch includes its CPU sync)
// and keeps site.patched_bytes up to date.
void arm(Site &site);
void disarm(Site &site);
// Called after the grace periods: no CPU or task can reach the site or its
// copies any more. Frees it.
void retire_site(Site *site);
// May a breakpoint go on the instruction at offset of function?
InstructionVerdict probe_rules(const uint8_t *function, size_t size, size_t offset, uint64_t function_address);
// Module exit, after the last site is retired: frees pools.
void release_resources();
} // namespace arch

// One line of debugfs okprobe/list.
struct ListLine {
	uint64_t address;
	const char *description;
	unsigned long hits, missed;
	unsigned int flags; // OKPROBE_FLAG_*
};

class ProbeTable {
public:
	constexpr ProbeTable() = default;
	ProbeTable(const ProbeTable &) = delete;
	ProbeTable &operator=(const ProbeTable &) = delete;

	// ---- Writer (probe mutex held; may sleep) ----

	// Checks the request with the arch's rules, then attaches the probe to
	// the site at its address (creating and arming the site as needed).
	// 0 or a negative errno, and *why.
	int register_probe(okprobe *probe, const KernelFacts &facts, InstructionRules rules, const char **why);
	// Detaches every probe (nullptr and unregistered ones are skipped),
	// then waits one grace period for the whole batch (and one rcu-tasks
	// grace period when a site dies) before anything is freed.
	void unregister_probes(okprobe *const *probes, size_t count);
	// okprobe_enable/okprobe_disable: 0, or -EINVAL when the probe is not
	// registered or (to enable) gone.
	int set_probe_enabled(okprobe *probe, bool enabled);
	// debugfs enabled: arms or disarms every site; probes keep their
	// own enabled state.
	void set_all_enabled(bool enabled);
	bool all_enabled() const { return __atomic_load_n(&all_enabled_, __ATOMIC_RELAXED); }
	// Text [start, end) is going away: its sites become gone. Returns when
	// no handler of theirs runs any more.
	void text_gone(uint64_t start, uint64_t end);
	// Probes whose struct or handlers lie in [start, end) (a module's
	// memory that is going away), for the glue to unregister.
	size_t probes_within(uint64_t start, uint64_t end, okprobe **found, size_t capacity) const;
	// Visits one line per registered probe, in registration order.
	template <typename Visit> void for_each_line(Visit visit) const;
	// Unregisters everything left (module exit).
	void clear();
	// Reads text with okprobe's own breakpoints replaced by the original
	// bytes.
	size_t read_original_text(const KernelFacts &facts, uint64_t address, uint8_t *buffer, size_t size) const;

	// ---- Handler (breakpoint context: lock-free, no allocation) ----

	Site *lookup(uint64_t address) const { return sites_.lookup(address); }
	// The probes that take part in one hit, chosen once when the
	// breakpoint traps: a probe enabled, disabled or unregistered
	// meanwhile gets both of its handlers for that hit or neither. The
	// structs stay valid for the whole hit: unregistering waits for a
	// grace period, and a hit (int3 handler, the trapping copy with
	// interrupts off, the post trap) is one RCU read-side section.
	struct HitProbes {
		okprobe *probes[max_probes_per_site];
		int count;
	};
	// Collects the active probes and counts a hit for each.
	static void start_hit(Site &site, HitProbes &hit);
	// Runs their pre_handlers. Returns true when one moved the ip itself
	// (the probed instruction is then skipped).
	static bool run_pre_handlers(const HitProbes &hit, pt_regs *regs);
	static void run_post_handlers(const HitProbes &hit, pt_regs *regs);
	// Whether one of them has a post_handler (the hit cannot boost).
	static bool wants_post_handlers(const HitProbes &hit);
	// A hit while a handler already ran on this CPU: counted, not run.
	static void count_missed(Site &site);

private:
	static bool probe_active(const okprobe *probe);
	bool should_be_armed(const Site &site) const;
	void update_arming(Site &site);
	Site *create_site(uint64_t address, const KernelFacts &facts, const char **why);
	void unlink(Site *site);
	static void retire_storage(AddressTable<Site>::Storage *old, void *context);

	AddressTable<Site> sites_; // live (not gone) sites by address
	Site *first_ = nullptr;	   // every site, gone ones included
	bool all_enabled_ = true;
};

template <typename Visit> void ProbeTable::for_each_line(Visit visit) const
{
	for (const Site *site = first_; site; site = site->next) {
		for (int i = 0; i < max_probes_per_site; ++i) {
			const okprobe *probe = site->probes[i];
			if (!probe)
				continue;
			ListLine line;
			line.address = site->address;
			line.description = site->description;
			line.hits = __atomic_load_n(&site->hits[i], __ATOMIC_RELAXED);
			line.missed = __atomic_load_n(&probe->nmissed, __ATOMIC_RELAXED);
			line.flags = __atomic_load_n(&probe->flags, __ATOMIC_RELAXED);
			visit(line);
		}
	}
}

// The module's probe table (src/core/probe_api.cpp).
extern ProbeTable registered_probes;

} // namespace okp
