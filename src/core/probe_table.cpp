// SPDX-License-Identifier: GPL-2.0
// The probe table's registration and the sites' lifecycle: a probe checked
// and attached to the site at its address (created, claimed from the
// kernel's kprobes, indexed), enabled and disabled, unregistered in
// batches with one grace period for all, and each site moved toward the
// state it should be in (update_site). The indexes by address, by granule
// of text and by probe live here; probe_table.hpp describes the states and
// the locking, probe_table_parts.hpp lists the table's other files.
#include "core/probe_table_parts.hpp"

namespace okp {

bool ProbeTable::should_be_armed(const Site &site) const
{
	if (!all_enabled() || site.gone)
		return false;
	for (const okprobe *probe : site.attached_probes())
		if (probe && !(probe->flags & OKPROBE_FLAG_DISABLED))
			return true;
	return false;
}

int ProbeTable::update_site_refusing(Site &site)
{
	if (!site.via_ftrace) {
		update_site(site);
		return 0;
	}
	update_ftrace_site(site, false);
	if (site.armed || !should_be_armed(site))
		return 0;
	return site.ftrace.error ? site.ftrace.error : error::ebusy;
}

void ProbeTable::update_site(Site &site, bool defer_detour)
{
	update_site_state(site, defer_detour);
	refresh_direct_probe(site);
}

void ProbeTable::update_site_state(Site &site, bool defer_detour)
{
	if (site.via_ftrace) {
		update_ftrace_site(site);
		return;
	}
	if (site.is_lost()) {
		settle_lost(site);
		return;
	}
	if (!should_be_armed(site)) {
		set_queued(site, false);
		leave_jump(site);
		if (site.armed && !site.is_lost())
			disarm(site);
		if (site.is_lost()) {
			settle_lost(site);
			return;
		}
		site.armed = false;
		site.unoptimized_why = site.gone ? "its text is gone" : "disabled";
		return;
	}
	if (!site.armed) {
		arm(site);
		if (site.is_lost()) {
			settle_lost(site);
			return;
		}
		site.armed = true;
	}
	if (const char *why = jump_refusal(site)) {
		set_queued(site, false);
		leave_jump(site);
		site.unoptimized_why = why;
		return;
	}
	// The probes changed kind (an argument-only detour cannot serve a
	// pt_regs handler; a full one serves args_handlers, slower): the
	// jump goes, and a detour of the right kind is built.
	if (detour_kind_stale(site)) {
		leave_jump(site);
		if (site.is_lost()) {
			settle_lost(site);
			return;
		}
	}
	if (site.jump == JumpState::breakpoint && defer_detour) {
		// The optimizer builds the detour (optimizer_begin); the caller
		// schedules it once for all.
		set_queued(site, true);
		site.unoptimized_why = "waiting for the optimizer";
	} else if (site.jump == JumpState::breakpoint) {
		set_queued(site, false);
		enter_waiting(site);
	}
}

void ProbeTable::free_storage_now(AddressTable<Site>::Storage *old, void *)
{
	AddressTable<Site>::free_storage(old);
}

void ProbeTable::retire_storage(AddressTable<Site>::Storage *old, void *)
{
	// Handlers may still walk the old storage until a grace period ends.
	okp_glue_synchronize(OKP_GRACE_RCU);
	AddressTable<Site>::free_storage(old);
}

void ProbeTable::release_function(Site &site)
{
	if (!site.claimed)
		return;
	site.claimed = false;
	okp_glue_release_function(site.function);
}

Result<Site *> ProbeTable::create_site(const Registration &checked)
{
	const uint64_t address = checked.address;
	uint8_t original[max_original_bytes] = {};
	if (read_original_text(address, original, sizeof(original)) == 0)
		return refuse(error::einval, "the text cannot be read");
	Owned<Site> owned = Owned<Site>::make();
	if (!owned)
		return out_of_memory;
	Site *site = owned.get();
	site->address = address;
	for (size_t i = 0; i < max_original_bytes; ++i)
		site->original[i] = original[i];
	if (const char *refusal = arch::prepare_site(*site, original))
		return refuse(error::enomem, refusal);
	okp_glue_describe(address, site->description, sizeof(site->description));
	{
		const StepTimer timer(clock_, WriterStep::plan);
		site->jump_refusal = arch::plan_jump(*site, TableText(*this));
	}
	if (!site->jump_refusal && site->jump_region_behind)
		keep_bytes_behind(*site);
	site->unoptimized_why = site->jump_refusal;
	// The writer's list first, then what handlers see.
	const uint64_t copy = arch::trapping_copy(*site);
	const uint64_t post_trap = post_trap_of(*site);
	if (!append(site)) {
		arch::release_site(*site);
		return out_of_memory;
	}
	if (copy && !post_traps_.insert(post_trap, site, retire_storage, nullptr)) {
		unlink(site);
		arch::release_site(*site);
		return out_of_memory;
	}
	if (site->jump_region_behind &&
	    !region_starts_.insert(site->jump_region_start(), site, retire_storage, nullptr)) {
		if (copy)
			post_traps_.remove(post_trap);
		unlink(site);
		arch::release_site(*site);
		return out_of_memory;
	}
	if (!sites_.insert(address, site, retire_storage, nullptr)) {
		if (site->jump_region_behind)
			region_starts_.remove(site->jump_region_start());
		if (copy)
			post_traps_.remove(post_trap);
		unlink(site);
		arch::release_site(*site);
		return out_of_memory;
	}
	// The claim the caller holds is the site's from here on.
	site->function = checked.function;
	site->claimed = true;
	owned.release(); // the table's, until free_site
	return site;
}

uint64_t ProbeTable::post_trap_of(const Site &site)
{
	// The copy's trailing breakpoint follows the copied instruction.
	return arch::trapping_copy(site) + (arch::next_instruction(site) - site.address);
}

void ProbeTable::abandon_new_site(Site *site)
{
	unpublish(*site);
	unlink(site);
	release_function(*site);
	update_sites_before(site->address);
	// Never armed, but published: a grace period before it goes.
	okp_glue_synchronize(OKP_GRACE_RCU);
	free_site(site);
}

void ProbeTable::unpublish(Site &site)
{
	sites_.remove(site.address);
	if (site.jump_region_behind && region_starts_.lookup(site.jump_region_start()) == &site)
		region_starts_.remove(site.jump_region_start());
}

void ProbeTable::free_site(Site *site)
{
	// No probe left to hit it, no detour left to lead into it.
	OKP_ASSERT(site->used_slots() == 0 && !site->current_detour());
	if (site->counting())
		okp_glue_counter_cells_free(site->counter_cells);
	if (site->via_ftrace) {
		delete site;
		return;
	}
	if (arch::trapping_copy(*site))
		post_traps_.remove(post_trap_of(*site));
	if (site->jump_region_behind && region_starts_.lookup(site->jump_region_start()) == site)
		region_starts_.remove(site->jump_region_start());
	arch::release_site(*site);
	delete site;
}

bool ProbeTable::append(Site *site)
{
	// At the head of its granule's chain. Replacing a head reuses the
	// head's slot; only a granule's first site may need the index to grow.
	const uint64_t granule = (site->address >> granule_shift) + 1;
	Site *head = by_granule_.remove(granule);
	if (!by_granule_.insert(granule, site, free_storage_now, nullptr)) {
		if (head)
			by_granule_.insert(granule, head, free_storage_now, nullptr);
		return false;
	}
	site->granule_next = head;
	++site_count_;
	site->prev = last_;
	site->next = nullptr;
	(last_ ? last_->next : first_) = site;
	last_ = site;
	return true;
}

void ProbeTable::unlink(Site *site)
{
	queued_.remove(*site);
	waiting_.remove(*site);
	(site->prev ? site->prev->next : first_) = site->next;
	(site->next ? site->next->prev : last_) = site->prev;
	site->next = site->prev = nullptr;
	--site_count_;
	const uint64_t granule = (site->address >> granule_shift) + 1;
	Site *head = by_granule_.lookup(granule);
	if (head == site) {
		by_granule_.remove(granule);
		if (site->granule_next)
			by_granule_.insert(granule, site->granule_next, free_storage_now, nullptr);
	} else {
		for (Site *link = head; link; link = link->granule_next)
			if (link->granule_next == site)
				link->granule_next = site->granule_next;
	}
	site->granule_next = nullptr;
}

Site *ProbeTable::site_of(const okprobe *probe) const
{
	// Found by the struct's address, never by what the struct says.
	Site *site = probe ? by_probe_.lookup(reinterpret_cast<uint64_t>(probe)) : nullptr;
	if (!site)
		return nullptr;
	for (const okprobe *registered : site->attached_probes())
		if (registered == probe)
			return site;
	return nullptr;
}

Result<Site *> ProbeTable::claim_and_create_site(const ProbeRequest &request, const Registration &checked,
						 const OriginalText &original, InstructionRules rules)
{
	// Another party's bytes in the function would desynchronize our
	// proofs and the kernel's: a function holds kernel kprobes or
	// okprobe's sites, never both. The claim shuts the kernel's
	// kprobes out; then the proof is made again, on bytes no kernel
	// kprobe can have changed since (one may have come and gone
	// between the first proof's check and the claim).
	// Where another site holds the function already (its claim made
	// before this registration's proof: both under the writer's lock),
	// the kernel's kprobes were shut out all along and the first proof
	// stands: the claim only counts the new site. okprobe-cover puts
	// every block of a function there, one after the other.
	bool held = false;
	for_each_site_in(checked.function, checked.function + checked.function_size, [&](const Site &other) {
		held = held || (other.claimed && other.function == checked.function);
	});
	const char *claim_refusal = "";
	const int claim = [&] {
		const StepTimer timer(clock_, WriterStep::claim);
		return okp_glue_claim_function(checked.function, checked.function_size, &claim_refusal);
	}();
	if (claim)
		return refuse(-claim, claim_refusal);
	const Result<Registration> proven = [&]() -> Result<Registration> {
		if (held)
			return checked;
		const StepTimer timer(clock_, WriterStep::recheck);
		return check_registration(request, original, rules, &checked);
	}();
	if (!proven || proven->address != checked.address || proven->function != checked.function ||
	    proven->function_size != checked.function_size) {
		okp_glue_release_function(checked.function);
		return proven ? refuse(error::ebusy, "the function changed while it was claimed") : proven.refusal();
	}
	// A jump covering the address goes before its breakpoint comes.
	for_each_site_in(checked.address - (max_jump_region - 1), checked.address + max_jump_region_behind + 1,
			 [&](Site &other) {
				 if (!other.gone && other.jump != JumpState::breakpoint &&
				     other.jump_region_start() <= checked.address &&
				     other.jump_region_end() > checked.address)
					 leave_jump(other);
			 });
	const Result<Site *> created = create_site(checked);
	if (!created) {
		okp_glue_release_function(checked.function);
		update_sites_before(checked.address);
	}
	return created;
}

namespace {

// What check_registration is asked for a client's struct.
ProbeRequest request_of(const okprobe &probe, const char *symbol_name)
{
	ProbeRequest request;
	request.symbol_name = symbol_name;
	request.offset = probe.offset;
	request.address = reinterpret_cast<uint64_t>(probe.addr);
	request.has_pre_handler = probe.pre_handler != nullptr;
	request.has_post_handler = probe.post_handler != nullptr;
	request.has_args_handler = probe.args_handler != nullptr;
	request.counter = probe.flags & OKPROBE_FLAG_COUNTER;
	return request;
}

} // namespace

Status ProbeTable::register_probe(okprobe *probe, const char *symbol_name, InstructionRules rules)
{
	// The glue refuses a NULL probe itself (-EINVAL).
	OKP_ASSERT(probe);
	const StepTimer timer(clock_, WriterStep::register_probe);
	// okp_site is zero before registration: anything else is a registered
	// struct, a copy of one, or garbage.
	if (probe->okp_site || site_of(probe))
		return refuse(error::einval, "the probe is already registered (or okp_site is not zero)");
	if (probe->flags & ~static_cast<unsigned int>(OKPROBE_FLAG_DISABLED | OKPROBE_FLAG_COUNTER |
						      OKPROBE_FLAG_RETURN_RETHOOK | OKPROBE_FLAG_BREAKPOINT))
		return refuse(error::einval, "only OKPROBE_FLAG_DISABLED, OKPROBE_FLAG_COUNTER, "
					     "OKPROBE_FLAG_RETURN_RETHOOK and OKPROBE_FLAG_BREAKPOINT may be set at "
					     "registration");
	const bool counter = probe->flags & OKPROBE_FLAG_COUNTER;
	if (counter && (probe->pre_handler || probe->post_handler || probe->args_handler))
		return refuse(error::einval, "a counting probe has no handlers");
	if (probe->args_handler && (probe->pre_handler || probe->post_handler))
		return refuse(error::einval, "an argument-only probe has its args_handler alone");
	const ProbeRequest request = request_of(*probe, symbol_name);
	// Every registration is checked, also one joining an existing site,
	// against the original text rather than okprobe's patches.
	const TableText original(*this);
	const Result<Registration> result = [&] {
		const StepTimer proof(clock_, WriterStep::proof);
		return check_registration(request, original, rules);
	}();
	if (!result)
		return result.refusal();
	const Registration &checked = result.value();

	Site *site = sites_.lookup(checked.address);
	const bool new_site = !site;
	if (new_site && checked.via_ftrace) {
		// ftrace enters the function: okprobe writes none of its bytes,
		// so nothing is claimed from the kernel's kprobes.
		const Result<Site *> created = create_ftrace_site(checked);
		if (!created)
			return created.refusal();
		site = created.value();
	} else if (new_site) {
		const Result<Site *> created = claim_and_create_site(request, checked, original, rules);
		if (!created)
			return created.refusal();
		site = created.value();
	}
	// A counting detour counts for its one probe and runs no handler.
	if (!new_site && (counter || site->counting()))
		return refuse(error::ebusy, counter ? "a counting probe needs the address to itself"
						    : "a counting probe has this address to itself");
	if (counter) {
		site->counter_cells = okp_glue_counter_cells_alloc();
		if (!site->counter_cells) {
			abandon_new_site(site);
			return out_of_memory;
		}
	}
	int index = -1;
	for (int i = 0; i < max_probes_per_site && index < 0; ++i)
		if (!site->probe_at(i))
			index = i;
	if (index < 0)
		return refuse(error::ebusy, "too many probes at this address");
	if (!by_probe_.insert(reinterpret_cast<uint64_t>(probe), site, free_storage_now, nullptr)) {
		if (new_site)
			abandon_new_site(site);
		return out_of_memory;
	}
	leave_jump_for(*site, *probe);
	site->past_ftrace = site->past_ftrace || checked.past_ftrace;
	// Everything the handler reads is filled before the probe is
	// published to it.
	probe->addr = reinterpret_cast<void *>(checked.address);
	probe->nmissed = 0;
	probe->okp_site = site;
	if (site->via_ftrace)
		set_flag(probe, OKPROBE_FLAG_FTRACE, true);
	site->hits[index].store(0, Order::relaxed);
	// No direct call of another probe once this one is published
	// (update_site below opens the gate again where it may).
	site->direct_probe.store(nullptr, Order::relaxed);
	if (index + 1 > site->used_slots())
		site->probe_slots.store(static_cast<uint8_t>(index + 1), Order::release);
	site->probes[index].store(probe, Order::release);
	site->arm_batch.registering = batching_arms_;
	const int refused = update_site_refusing(*site);
	site->arm_batch.registering = false;
	if (refused) {
		// ftrace would not call okprobe there: no probe, and the
		// reason.
		okprobe *one[] = {probe};
		unregister_probes(one, 1);
		return refuse(refused, ftrace_refusal(refused));
	}
	show_optimized(*site);
	if (new_site)
		update_sites_before(site->address);
	return {};
}

Site *ProbeTable::detach_probes(okprobe *const *probes, size_t count, size_t *unknown)
{
	// First every probe leaves its slot (handlers stop choosing it); the
	// sites they leave are chained through work.next, each once.
	Site *touched = nullptr;
	for (size_t n = 0; n < count; ++n) {
		okprobe *probe = probes[n];
		Site *site = site_of(probe);
		if (!site) {
			++*unknown;
			continue;
		}
		uint8_t slots = 0;
		// Closed before the probe leaves: its grace period then covers
		// the direct calls too.
		site->direct_probe.store(nullptr, Order::relaxed);
		for (int i = 0; i < max_probes_per_site; ++i) {
			if (site->probe_at(i) == probe)
				site->probes[i].store(nullptr, Order::release);
			else if (site->probe_at(i))
				slots = static_cast<uint8_t>(i + 1);
		}
		site->probe_slots.store(slots, Order::relaxed);
		by_probe_.remove(reinterpret_cast<uint64_t>(probe));
		probe->okp_site = nullptr;
		show_probe_optimized(probe, false);
		set_flag(probe, OKPROBE_FLAG_FTRACE, false);
		if (!site->work.touched) {
			site->work.touched = true;
			site->work.next = touched;
			touched = site;
		}
	}
	return touched;
}

void ProbeTable::take_out_emptied(Site *touched)
{
	// The jumps of the sites left empty come out in one pass, as in
	// update_all_sites, not one unoptimize each; then their breakpoints,
	// also in one pass.
	size_t sites = 0;
	for (Site *site = touched; site; site = site->work.next)
		++sites;
	{
		JumpsOut out(sites, waiting_);
		for (Site *site = touched; site; site = site->work.next)
			if (!site->used_slots())
				out.add(*site);
	}
	BreakpointsOut breakpoints(sites);
	// The entry sites through ftrace leave their ops' filters in
	// one pass of ftrace.
	OwnedArray<Site *> entries = OwnedArray<Site *>::make(sites);
	size_t entry_count = 0;
	for (Site *site = touched; site; site = site->work.next) {
		if (site->used_slots())
			continue;
		leave_jump(*site);
		if (site->armed && site->via_ftrace) {
			if (entries)
				entries[entry_count++] = site;
			else
				disarm(*site);
		} else if (site->armed && !site->is_lost()) {
			breakpoints.add(*site);
		}
	}
	disarm_ftrace_sites(entries.get(), entry_count);
}

bool ProbeTable::reap_released_lost(Site *&dying)
{
	// Lost sites no probe holds any more, whose text is the original again
	// (someone put it back): nothing leads into okprobe's copies now.
	bool reaped = false;
	for (Site *site = lost_pinned_ ? first_ : nullptr, *next; site; site = next) {
		next = site->next;
		if (site->is_lost() && !site->used_slots() && site->lost_pinned && lost_text_released(*site)) {
			retire_detour(*site);
			if (!site->gone)
				unpublish(*site);
			unlink(site);
			site->next = dying;
			dying = site;
			reaped = true;
		}
	}
	return reaped;
}

size_t ProbeTable::unregister_probes(okprobe *const *probes, size_t count)
{
	OKP_ASSERT(probes || !count);
	const StepTimer timer(clock_, WriterStep::unregister);
	write_pending_arms();
	size_t unknown = 0;
	Site *touched = detach_probes(probes, count, &unknown);
	take_out_emptied(touched);
	Site *dying = nullptr; // linked through next once unlinked
	const bool detached = touched != nullptr;
	while (touched) {
		Site *site = touched;
		touched = site->work.next;
		site->work.touched = false;
		site->work.next = nullptr;
		if (site->used_slots()) {
			update_site(*site); // the others may all be disabled
			continue;
		}
		settle_lost(*site); // a breakpoint someone else changed
		// A lost site stays while its text may still trap or jump into
		// okprobe (listed in okprobe/jumps, found by the handler).
		if (site->is_lost()) {
			if (!lost_text_released(*site))
				continue;
			retire_detour(*site);
		}
		site->armed = false;
		if (!site->gone)
			unpublish(*site);
		unlink(site);
		site->next = dying;
		dying = site;
	}
	const bool reaped = reap_released_lost(dying);
	if (!detached && !reaped)
		return unknown;
	// Sites whose jump region held a dying one may jump now.
	for (const Site *site = dying; site; site = site->next)
		update_sites_before(site->address);
	// One grace period for the batch: after it no handler runs a detached
	// probe or holds a dying site. And, when a site dies or a detour was
	// withdrawn, an rcu-tasks one at the same time: then no task is still
	// preempted inside a dying site's boosted copy or a withdrawn detour.
	if (!dying && !retired_detours_) {
		okp_glue_synchronize(OKP_GRACE_RCU);
		return unknown;
	}
	okp_glue_synchronize(OKP_GRACE_RCU | OKP_GRACE_TASKS);
	free_retired_detours(~0ull);
	while (dying) {
		Site *next = dying->next;
		release_function(*dying);
		free_site(dying);
		dying = next;
	}
	return unknown;
}

int ProbeTable::set_probe_enabled(okprobe *probe, bool enabled)
{
	write_pending_arms();
	Site *site = site_of(probe);
	if (!site)
		return -error::einval;
	if (enabled && (load_flags(probe) & OKPROBE_FLAG_GONE))
		return -error::einval;
	if (enabled && (probe->post_handler || (probe->flags & OKPROBE_FLAG_BREAKPOINT)))
		leave_jump(*site); // before the post_handler can be asked for
	set_flag(probe, OKPROBE_FLAG_DISABLED, !enabled);
	if (const int refused = update_site_refusing(*site)) {
		// ftrace refused the entry: the probe stays disabled.
		set_flag(probe, OKPROBE_FLAG_DISABLED, true);
		update_ftrace_site(*site);
		return -refused;
	}
	return 0;
}

int ProbeTable::disable_probes(okprobe *const *probes, size_t count)
{
	OKP_ASSERT(probes || !count);
	write_pending_arms();
	for (size_t i = 0; i < count; ++i)
		if (!probes[i] || !site_of(probes[i]))
			return -error::einval;
	for (size_t i = 0; i < count; ++i)
		set_flag(probes[i], OKPROBE_FLAG_DISABLED, true);
	{
		JumpsOut out(count, waiting_);
		for (size_t i = 0; i < count; ++i) {
			Site &site = *site_of(probes[i]);
			if (!should_be_armed(site) || jump_refusal(site))
				out.add(site); // once: only an optimized site is added
		}
	}
	take_out_breakpoints(probes, count);
	for (size_t i = 0; i < count; ++i)
		update_site(*site_of(probes[i]));
	return 0;
}

int ProbeTable::read_count(okprobe *probe, unsigned long long *count) const
{
	OKP_ASSERT(count); // the glue refuses a NULL count (-EINVAL)
	const Site *site = site_of(probe);
	if (!site)
		return -error::einval;
	for (int i = 0; i < max_probes_per_site; ++i)
		if (site->probe_at(i) == probe)
			*count = hits_of(*site, i);
	return 0;
}

unsigned long long ProbeTable::hits_of(const Site &site, int index)
{
	OKP_ASSERT(index >= 0 && index < max_probes_per_site);
	unsigned long long hits = site.hits[index].load(Order::relaxed);
	if (site.counting())
		hits += okp_glue_counter_cells_sum(site.counter_cells);
	return hits;
}

void ProbeTable::set_all_enabled(bool enabled)
{
	write_pending_arms();
	all_enabled_.store(enabled, Order::relaxed);
	update_all_sites();
	unregister_probes(nullptr, 0); // lost sites whose text is back
}

void ProbeTable::clear()
{
	write_pending_arms();
	okprobe *batch[32];
	for (;;) {
		size_t count = 0;
		for (const Site *site = first_; site && count < 32; site = site->next)
			for (okprobe *probe : site->attached_probes())
				if (probe && count < 32)
					batch[count++] = probe;
		if (!count)
			break;
		unregister_probes(batch, count);
	}
	unregister_probes(nullptr, 0); // lost sites whose text is back
	sites_.destroy();
	post_traps_.destroy();
	region_starts_.destroy();
	by_granule_.destroy();
	by_probe_.destroy();
	all_enabled_.store(true, Order::relaxed);
}

} // namespace okp
