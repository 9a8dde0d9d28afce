// SPDX-License-Identifier: GPL-2.0
/*
 * riscv64 breakpoint probes, the kernel side: the ebreak trap, text
 * patching, executable slot pages and the reserved-text checks. The
 * arch-neutral half (API, mutex, module notifier) is src/kernel/probes.c.
 *
 * The trap: without CONFIG_KGDB, do_trap_break() offers a kernel ebreak to
 * no notifier, so okprobe replaces the EXC_BREAKPOINT entry of the kernel's
 * excp_vect_table (read by the trap entry at every exception) with its own
 * handler, which takes okprobe's breakpoints and passes everything else
 * (kprobes, uprobes, BUG()/WARN(), user mode) to the original one.
 *
 * Text patching: patch_text() is not exported and wants text_mutex and
 * cpus_read_lock() (an order the kernel's own ftrace path inverts), so
 * okprobe writes through its own vmap() alias of the text's pages while
 * every other hart waits in stop_machine(), and every hart runs fence.i
 * before it leaves. Takes no lock of the kernel's but cpus_read_lock()
 * (inside stop_machine()), after okp_probe_mutex.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/extable.h>
#include <linux/jump_label.h>
#include <linux/kprobes.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/uaccess.h>
#include <linux/module.h>
#include <linux/ptrace.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/stop_machine.h>
#include <linux/vmalloc.h>
#include <asm/cacheflush.h>
#include <asm/csr.h>

#include <okprobe.h>

#include "core/core_api.h"
#include "glue_services.h"
#include "kernel/glue.h"
#include "arch_glue.h"
#include "kernel/compat.h"
#include "kernel/resolved_calls.h"
#include "mmu_off_functions.h"

/* The core works on pt_regs as okp::riscv::Registers: same layout. */
static_assert(sizeof(struct pt_regs) == 36 * 8);
static_assert(offsetof(struct pt_regs, epc) == 0);
static_assert(offsetof(struct pt_regs, ra) == 1 * 8);
static_assert(offsetof(struct pt_regs, a0) == 10 * 8);
static_assert(offsetof(struct pt_regs, t6) == 31 * 8);
static_assert(offsetof(struct pt_regs, status) == 32 * 8);
static_assert(SR_SPIE == (1 << 5));

struct okp_arch_symbols okp_arch_ksyms;


/*
 * No guard on arch_prepare_kprobe() here: riscv's is __kprobes and cannot be
 * probed. The window is the few instructions between the kernel's
 * blacklist check and its kprobe_mutex, and okprobe's breakpoints keep
 * every instruction's length, so the kernel's length walk stays in step.
 */
void okp_arch_guard_init(void)
{
}

void okp_arch_guard_exit(void)
{
}

const char *okp_glue_reserved(unsigned long address, unsigned long length)
{
	return okp_text_sites_reserved(address, length, NULL);
}

unsigned long okp_glue_exception_fixup(unsigned long address)
{
	const struct exception_table_entry *entry =
		okp_call(search_exception_tables)(address);

	/* riscv's entries are relative (ARCH_HAS_RELATIVE_EXTABLE). */
	return entry ? (unsigned long)&entry->fixup + entry->fixup : 0;
}

/*
 * Liveness under the psABI (calls read a0-a7 and clobber the temporaries,
 * returns read only a0/a1 and the callee-saved registers), or strict
 * (calls and returns read every register: fewer jumps, no trust in how
 * hand-written code treats temporaries). Fixed at load.
 */
static bool psabi_liveness = true;
module_param(psabi_liveness, bool, 0444);
MODULE_PARM_DESC(psabi_liveness,
		 "riscv: free registers by the psABI at calls and returns (1, default) or strict (0)");

int okp_glue_psabi_liveness(void)
{
	return psabi_liveness;
}

/* The core kernel's .rodata, less __ro_after_init (resolved at load). */
static unsigned long okp_rodata_start, okp_rodata_end;
static unsigned long okp_ro_after_init_start, okp_ro_after_init_end;

static void okp_find_rodata(void)
{
	okp_rodata_start = okp_ksyms_lookup("__start_rodata");
	okp_rodata_end = okp_ksyms_lookup("__end_rodata");
	okp_ro_after_init_start = okp_ksyms_lookup("__start_ro_after_init");
	okp_ro_after_init_end = okp_ksyms_lookup("__end_ro_after_init");
	if (!okp_rodata_start || okp_rodata_end <= okp_rodata_start ||
	    !okp_ro_after_init_start ||
	    okp_ro_after_init_end < okp_ro_after_init_start) {
		pr_warn("the kernel's .rodata bounds are unknown: core functions with switch tables stay breakpoints\n");
		okp_rodata_start = okp_rodata_end = 0;
	}
}

/* Whether [address, address + size) lies in the module's read-only data. */
static bool okp_module_rodata(unsigned long address, unsigned long size)
{
	struct okp_range rodata[2];
	struct module *mod;
	unsigned long start, end;
	bool inside = false;
	int i, ranges;

	preempt_disable();
	mod = okp_call(__module_address)(address);
	if (mod) {
		ranges = okp_module_rodata_ranges(mod, rodata);
		for (i = 0; i < ranges && !inside; i++) {
			start = rodata[i].start;
			end = rodata[i].end;
			inside = address >= start && size <= end - start &&
				 address - start <= end - start - size;
		}
	}
	preempt_enable();
	return inside;
}

unsigned long okp_glue_read_rodata(unsigned long address, void *buffer,
				   unsigned long size)
{
	bool core = okp_rodata_start && address >= okp_rodata_start &&
		    address <= okp_rodata_end &&
		    size <= okp_rodata_end - address &&
		    (address + size <= okp_ro_after_init_start ||
		     address >= okp_ro_after_init_end);

	if (!size || address + size < address)
		return 0;
	if (!core && !okp_module_rodata(address, size))
		return 0;
	return copy_from_kernel_nofault(buffer, (void *)address, size) ? 0 :
									  size;
}

/* Every riscv jump label is one 4-byte jal or nop (JUMP_LABEL_NOP_SIZE). */
unsigned long okp_arch_jump_label_size(unsigned long code)
{
	return OKP_MAX_JUMP_LABEL_SIZE;
}

/* ---- Text patching ---------------------------------------------------- */

/* The page holding a core kernel image address (text or rodata). */
static struct page *okp_image_page(unsigned long address)
{
	return phys_to_page(__pa_symbol(address));
}

static struct page *okp_text_page(unsigned long address)
{
	if (okp_call(core_kernel_text)(address))
		return okp_image_page(address);
	/* Module text and slot pages: module_alloc() (vmalloc) memory. */
	return vmalloc_to_page((void *)address);
}

/*
 * vmap() that does not fail for want of memory: it waits for memory, as a
 * __GFP_NOFAIL allocation does. A text write dropped would leave a
 * breakpoint or a jump whose probe is gone, or half a detour; the kernel's
 * own text patching allocates nothing (a fixmap slot under text_mutex).
 */
static void *okp_vmap_waiting(struct page **pages, unsigned int count)
{
	void *base;

	while (!(base = vmap(pages, count, VM_MAP, PAGE_KERNEL))) {
		pr_warn_ratelimited("no memory for a writable alias of the text: waiting\n");
		msleep(20);
	}
	return base;
}

/*
 * A writable alias of [address, address + length) (at most two pages),
 * whatever the permissions of the text's own mapping; NULL when the pages
 * are unknown. Undo with okp_unmap_alias().
 */
static void *okp_map_alias(unsigned long address, unsigned long length,
			   struct page *(*page_of)(unsigned long address))
{
	unsigned long first = address & PAGE_MASK;
	unsigned long last = (address + length - 1) & PAGE_MASK;
	struct page *pages[2];
	unsigned int count = 0;
	void *base;

	if (!length || last - first > PAGE_SIZE)
		return NULL;
	for (; first <= last; first += PAGE_SIZE) {
		pages[count] = page_of(first);
		if (!pages[count])
			return NULL;
		count++;
	}
	base = okp_vmap_waiting(pages, count);
	return base + offset_in_page(address);
}

static void okp_unmap_alias(void *alias)
{
	vunmap((void *)((unsigned long)alias & PAGE_MASK));
}

/* A batch is written in chunks of this many when memory is short. */
#define OKP_SMALL_BATCH 16

struct okp_patch_job {
	const struct okp_text_patch *patches;
	void **aliases;
	unsigned long count;
	atomic_t harts;
};

/*
 * Not memcpy(): the writing hart runs the copy while the bytes change, and
 * a batch may patch memcpy() itself (a probe in __memcpy): it would run
 * half-written instructions of its own loop. okprobe's own text is never
 * patched. WRITE_ONCE(), so that the compiler does not turn the loop
 * back into a memcpy() call.
 */
static void notrace okp_copy_text(void *to, const void *from,
				  unsigned long length)
{
	u8 *out = to;
	const u8 *in = from;
	unsigned long i;

	for (i = 0; i < length; i++)
		WRITE_ONCE(out[i], in[i]);
}
NOKPROBE_SYMBOL(okp_copy_text);

/*
 * Runs on every online hart with interrupts off. The last to arrive writes
 * while the others spin outside the text, publishes the bytes (fence),
 * and every hart then runs fence.i: no hart can fetch a half-written
 * instruction or a stale one. As the kernel's patch_text_cb().
 */
static int notrace okp_patch_text_cb(void *data)
{
	struct okp_patch_job *job = data;
	unsigned long i;

	if (atomic_inc_return(&job->harts) == num_online_cpus()) {
		for (i = 0; i < job->count; i++)
			okp_copy_text(job->aliases[i], job->patches[i].bytes,
				      job->patches[i].length);
		/* The bytes before the release the spinning harts wait for. */
		smp_mb();
		atomic_inc(&job->harts);
	} else {
		while (atomic_read(&job->harts) <= num_online_cpus())
			cpu_relax();
		/* Pairs with the writer's: its bytes before our fence.i. */
		smp_mb();
	}
	local_flush_icache_all();
	return 0;
}
NOKPROBE_SYMBOL(okp_patch_text_cb);

/*
 * Appends the pages of one patch to pages (a patch starting on the last
 * page appended shares it) and returns the index of its first page, or -1
 * when its pages are unknown.
 */
static long okp_add_patch_pages(const struct okp_text_patch *patch,
				struct page **pages, unsigned long *used)
{
	unsigned long first = patch->address & PAGE_MASK;
	unsigned long last = (patch->address + patch->length - 1) & PAGE_MASK;
	struct page *page = okp_text_page(first);
	long index;

	if (!patch->length || last - first > PAGE_SIZE || !page)
		return -1;
	if (*used && pages[*used - 1] == page) {
		index = *used - 1;
	} else {
		index = *used;
		pages[(*used)++] = page;
	}
	if (last != first) {
		page = okp_text_page(last);
		if (!page)
			return -1;
		/* Right after the first: index is the last one appended. */
		pages[(*used)++] = page;
	}
	return index;
}

/*
 * Writes a batch of patches in one stop_machine(): one vmap() holds a
 * writable alias of every page they touch, whatever the permissions of
 * the text's own mapping. pages has room for 2 * count, first_page and
 * aliases for count.
 */
static void okp_write_text_with(const struct okp_text_patch *patches,
				unsigned long count, struct page **pages,
				long *first_page, void **aliases)
{
	struct okp_patch_job job = {
		.patches = patches, .aliases = aliases, .count = count
	};
	unsigned long i, used = 0;
	void *base;

	for (i = 0; i < count; i++) {
		first_page[i] = okp_add_patch_pages(&patches[i], pages, &used);
		if (first_page[i] < 0) {
			pr_err("cannot write the text at %pS: no writable alias\n",
			       (void *)patches[i].address);
			return;
		}
	}
	base = okp_vmap_waiting(pages, used);
	for (i = 0; i < count; i++)
		aliases[i] = base + first_page[i] * PAGE_SIZE +
			     offset_in_page(patches[i].address);
	atomic_set(&job.harts, 0);
	stop_machine(okp_patch_text_cb, &job, cpu_online_mask);
	/* Harts coming online later fetch through a cold instruction cache. */
	flush_icache_all();
	vunmap(base);
}

/*
 * A batch's arrays are allocated; a small batch's are on the stack, and a
 * large batch whose arrays cannot be had is written in small batches, so
 * that no write is lost for want of memory.
 */
static void okp_write_text(const struct okp_text_patch *patches,
			   unsigned long count)
{
	struct page *small_pages[2 * OKP_SMALL_BATCH];
	long small_first_page[OKP_SMALL_BATCH];
	void *small_aliases[OKP_SMALL_BATCH];
	struct page **pages;
	long *first_page;
	void **aliases;
	unsigned long i;

	if (count <= OKP_SMALL_BATCH) {
		okp_write_text_with(patches, count, small_pages,
				    small_first_page, small_aliases);
		return;
	}
	pages = kvmalloc_array(2 * count, sizeof(*pages), GFP_KERNEL);
	first_page = kvmalloc_array(count, sizeof(*first_page), GFP_KERNEL);
	aliases = kvmalloc_array(count, sizeof(*aliases), GFP_KERNEL);
	if (pages && first_page && aliases) {
		okp_write_text_with(patches, count, pages, first_page,
				    aliases);
	} else {
		for (i = 0; i < count; i += OKP_SMALL_BATCH)
			okp_write_text_with(patches + i,
					    min(count - i,
						(unsigned long)OKP_SMALL_BATCH),
					    small_pages, small_first_page,
					    small_aliases);
	}
	kvfree(aliases);
	kvfree(first_page);
	kvfree(pages);
}

/*
 * okprobe's own code (core_api.h): written through an alias with no hart
 * stopped; okp_code_generation tells each hart to fence.i before it next
 * returns from a breakpoint into okprobe's code (okp_code_fence).
 */
static unsigned long okp_code_generation;
static DEFINE_PER_CPU(unsigned long, okp_fenced_generation);

void okp_glue_code_write_batch(const struct okp_text_patch *patches,
			       unsigned long count)
{
	unsigned long i;
	void *alias;

	for (i = 0; i < count; i++) {
		if (!patches[i].length)
			continue;
		alias = okp_map_alias(patches[i].address, patches[i].length,
				      okp_text_page);
		if (!alias) {
			pr_err("cannot write okprobe's code at %pS: its pages are unknown\n",
			       (void *)patches[i].address);
			continue;
		}
		memcpy(alias, patches[i].bytes, patches[i].length);
		okp_unmap_alias(alias);
	}
	/* The bytes before the generation a hart compares against. */
	smp_wmb();
	WRITE_ONCE(okp_code_generation, okp_code_generation + 1);
}

/* On the way back from a breakpoint into okprobe's code (the trap path). */
static inline void notrace okp_code_fence(void)
{
	unsigned long generation = READ_ONCE(okp_code_generation);

	if (__this_cpu_read(okp_fenced_generation) == generation)
		return;
	/* Pairs with the writer's smp_wmb(): its bytes, then fence.i. */
	smp_rmb();
	local_flush_icache_all();
	__this_cpu_write(okp_fenced_generation, generation);
}

void okp_glue_text_write_batch(const struct okp_text_patch *patches,
			       unsigned long count)
{
	if (count)
		okp_write_text(patches, count);
}

void okp_glue_text_write(unsigned long address, const void *bytes,
			 unsigned long length)
{
	struct okp_text_patch patch = { address, bytes, length };

	okp_write_text(&patch, 1);
}

/* ---- The breakpoint trap ---------------------------------------------- */

/* &excp_vect_table[EXC_BREAKPOINT], and what it held before okprobe. */
static unsigned long *okp_break_entry;
unsigned long notrace okp_glue_read_trap_text(unsigned long address,
					      void *buffer,
					      unsigned long size)
{
	u16 *halves = buffer;
	unsigned long done;

	pagefault_disable();
	for (done = 0; done + 2 <= size; done += 2)
		__get_kernel_nofault(&halves[done / 2],
				     (u16 *)(address + done), u16, fault);
fault:
	pagefault_enable();
	return done;
}
NOKPROBE_SYMBOL(okp_glue_read_trap_text);

static void (*okp_original_break_handler)(struct pt_regs *regs);

/*
 * Every ebreak trap comes here, through okp_trap_break_entry
 * (trap_break.S), with interrupts off (the entry never enables them for
 * EXC_BREAKPOINT): no lock, no allocation. okprobe's own breakpoints (a
 * site or a slot's post trap) end here; everything else goes on to the
 * kernel's do_trap_break(). Returns 1 when the trap must return straight
 * to where it goes (interrupts off there: trap_break.S), 0 to return
 * through the kernel's exit.
 */
asmlinkage int notrace okp_do_trap_break(struct pt_regs *regs)
{
	int taken = user_mode(regs) ? 0 : okp_core_breakpoint(regs);

	if (!taken) {
		okp_original_break_handler(regs);
		/*
		 * The kernel's own kprobes return into their single-step slot
		 * with interrupts off too (kprobes_save_local_irqflag). riscv
		 * 6.1's exit would preempt there, and a task run meanwhile
		 * that hits the same kprobe finds this CPU mid-step: "Failed
		 * to recover from reentered kprobes", BUG (seen once with a
		 * kernel kprobe on strscpy under full preemption). Back into
		 * a kernel context with interrupts off: the same way as ours.
		 */
		return !user_mode(regs) && !(regs->status & SR_SPIE);
	}
	okp_code_fence();
	/*
	 * Back into a context with interrupts off (a trapping copy, or code
	 * that had them off): never through resume_kernel's preemption.
	 */
	return !(regs->status & SR_SPIE);
}
NOKPROBE_SYMBOL(okp_do_trap_break);

asmlinkage void okp_trap_break_entry(struct pt_regs *regs);

/* One aligned 8-byte store through an alias: the trap entry's load sees
 * the old handler or the new one, never a mix.
 */
static int okp_set_break_handler(unsigned long expected, unsigned long handler)
{
	unsigned long *alias;

	alias = okp_map_alias((unsigned long)okp_break_entry,
			      sizeof(*okp_break_entry), okp_image_page);
	if (!alias)
		return -ENOMEM;
	if (READ_ONCE(*okp_break_entry) != expected) {
		okp_unmap_alias(alias);
		return -EBUSY;
	}
	WRITE_ONCE(*alias, handler);
	okp_unmap_alias(alias);
	return 0;
}

static int okp_install_break_handler(void)
{
	unsigned long original = okp_ksyms_lookup("do_trap_break");
	int ret;

	okp_break_entry = (unsigned long *)okp_arch_ksyms.excp_vect_table +
			  EXC_BREAKPOINT;
	if (!original || READ_ONCE(*okp_break_entry) != original) {
		pr_err("cannot catch ebreak: excp_vect_table[EXC_BREAKPOINT] is %pS, not do_trap_break\n",
		       (void *)READ_ONCE(*okp_break_entry));
		return -EBUSY;
	}
	okp_original_break_handler = (void *)original;
	ret = okp_set_break_handler(original,
				    (unsigned long)okp_trap_break_entry);
	if (ret)
		pr_err("cannot catch ebreak: excp_vect_table is not writable (%d)\n",
		       ret);
	return ret;
}

static void okp_remove_break_handler(void)
{
	if (okp_set_break_handler((unsigned long)okp_trap_break_entry,
				  (unsigned long)okp_original_break_handler))
		pr_err("excp_vect_table[EXC_BREAKPOINT] changed under okprobe: left as it is\n");
	/*
	 * A hart that loaded okprobe's handler runs it with interrupts off
	 * until it returns: one grace period and no hart is inside it.
	 */
	synchronize_rcu();
}

int okp_arch_probes_init(void)
{
	okp_find_rodata();
	return okp_install_break_handler();
}

void okp_arch_probes_exit(void)
{
	okp_remove_break_handler();
}

/* ---- Refused ranges ------------------------------------------------------- */

/*
 * riscv 6.1 keeps its hand-written entry and ftrace code in plain .text,
 * outside every section above and without NOKPROBE_SYMBOL: a breakpoint
 * in the exception entry (before the stack is the kernel's) or in an
 * ftrace trampoline (called with the traced function's frame half built)
 * would bring the kernel down. entry.S runs from handle_exception to the
 * end of __switch_to; the ftrace trampolines are refused one by one.
 */
static const char *const okp_riscv_trampolines[] = {
	"ftrace_caller", "ftrace_regs_caller", "ftrace_stub",
	"return_to_handler", "_mcount", "ftrace_graph_caller",
};

static const char *const okp_riscv_mmu_off[] = { OKP_RISCV_MMU_OFF_FUNCTIONS };

static int okp_blacklist_function(const char *name, const char *why)
{
	unsigned long start = okp_ksyms_resolve_optional(name);
	unsigned long function, size;

	if (!start || !okp_glue_function_of(start, &function, &size) ||
	    function != start)
		return 0;
	return okp_core_blacklist_add(start, start + size, why);
}

int okp_arch_blacklist(void)
{
	unsigned long entry = okp_ksyms_resolve_optional("handle_exception");
	unsigned long last = okp_ksyms_resolve_optional("__switch_to");
	unsigned long start, size;
	int i;

	if (!entry || !last || last < entry ||
	    !okp_glue_function_of(last, &start, &size)) {
		pr_err("cannot find riscv's entry code (handle_exception ... __switch_to)\n");
		return -ENOENT;
	}
	if (okp_core_blacklist_add(entry, start + size, "riscv entry code"))
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(okp_riscv_trampolines); i++)
		if (okp_blacklist_function(okp_riscv_trampolines[i],
					   "riscv ftrace trampoline"))
			return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(okp_riscv_mmu_off); i++)
		if (okp_blacklist_function(okp_riscv_mmu_off[i],
					   "riscv code that runs with the MMU off"))
			return -ENOMEM;
	return 0;
}
