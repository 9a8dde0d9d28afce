// SPDX-License-Identifier: GPL-2.0
/*
 * okprobe next to the kernel's own kprobes (what perf probe, bpftrace and
 * kprobe_events use), for every architecture: the coexistence matrix.
 *
 * A cell is two parties, one kernel kprobe and one okprobe, each as a
 * breakpoint (a post_handler keeps it one) or optimized, placed at the same
 * address, inside the first one's region, at another instruction of the
 * same function, or in another function; registered in either order and
 * removed in either order. Every CPU calls the probed functions throughout.
 * In one function the second party must be refused cleanly (okprobe:
 * -EBUSY; the kernel: -EINVAL from its blacklist, or -EBUSY from okprobe's
 * guard), the first must count every call and stay optimized if it was;
 * in two functions both count every call. After both removals the text is
 * byte for byte what it was before the first registration.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/prandom.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include <okprobe.h>

#include "okprobe_selftest_common.h"

#ifdef CONFIG_KPROBES

#define OKP_SNAPSHOT 32

enum okp_party_kind {
	OKP_KERNEL_BREAKPOINT,
	OKP_KERNEL_OPTIMIZED,
	OKP_OKPROBE_BREAKPOINT,
	OKP_OKPROBE_OPTIMIZED,
};

static const char *const okp_party_names[] = {
	[OKP_KERNEL_BREAKPOINT] = "kprobe",
	[OKP_KERNEL_OPTIMIZED] = "optimized kprobe",
	[OKP_OKPROBE_BREAKPOINT] = "okprobe",
	[OKP_OKPROBE_OPTIMIZED] = "optimized okprobe",
};

struct okp_party {
	enum okp_party_kind kind;
	struct kprobe kp;
	struct okprobe op;
	atomic_long_t hits;
	bool registered;
};

static bool okp_party_is_kernel(const struct okp_party *p)
{
	return p->kind == OKP_KERNEL_BREAKPOINT ||
	       p->kind == OKP_KERNEL_OPTIMIZED;
}

static bool okp_party_optimizes(const struct okp_party *p)
{
	if (p->kind == OKP_KERNEL_OPTIMIZED)
		return IS_ENABLED(CONFIG_OPTPROBES);
	return p->kind == OKP_OKPROBE_OPTIMIZED;
}

static int okp_kp_pre(struct kprobe *kp, struct pt_regs *regs)
{
	atomic_long_inc(&container_of(kp, struct okp_party, kp)->hits);
	return 0;
}

static void okp_kp_post(struct kprobe *kp, struct pt_regs *regs,
			unsigned long flags)
{
}

static int okp_op_pre(struct okprobe *op, struct pt_regs *regs)
{
	atomic_long_inc(&container_of(op, struct okp_party, op)->hits);
	return 0;
}

static void okp_op_post(struct okprobe *op, struct pt_regs *regs,
			unsigned long flags)
{
}

static int okp_party_register(struct okp_party *p, void *address)
{
	bool breakpoint = !okp_party_optimizes(p);
	int ret;

	atomic_long_set(&p->hits, 0);
	if (okp_party_is_kernel(p)) {
		memset(&p->kp, 0, sizeof(p->kp));
		p->kp.addr = address;
		p->kp.pre_handler = okp_kp_pre;
		p->kp.post_handler = breakpoint ? okp_kp_post : NULL;
		ret = register_kprobe(&p->kp);
	} else {
		memset(&p->op, 0, sizeof(p->op));
		p->op.addr = address;
		p->op.pre_handler = okp_op_pre;
		p->op.post_handler = breakpoint ? okp_op_post : NULL;
		ret = okprobe_register(&p->op);
	}
	p->registered = !ret;
	return ret;
}

/* Unregistering a party that was refused must be harmless too. */
static void okp_party_unregister(struct okp_party *p)
{
	if (okp_party_is_kernel(p)) {
		if (p->registered)
			unregister_kprobe(&p->kp);
	} else {
		okprobe_unregister(&p->op);
	}
	p->registered = false;
}

/* Whether the party's jump is in the text now. */
static bool okp_party_optimized(struct okp_party *p)
{
	if (!okp_party_is_kernel(p))
		return okp_optimized(&p->op);
#ifdef CONFIG_X86
	{
		u8 first = 0;

		return !copy_from_kernel_nofault(&first, p->kp.addr, 1) &&
		       first == 0xe9;
	}
#else
	return false;
#endif
}

static bool okp_party_wait_optimized(struct okp_party *p)
{
	unsigned long deadline = jiffies +
				 msecs_to_jiffies(OKP_OPTIMIZE_TIMEOUT_MS);

	while (!okp_party_optimized(p)) {
		if (time_after(jiffies, deadline))
			return false;
		msleep(20);
	}
	return true;
}

/* ---- What the hammers call ------------------------------------------------ */

static const struct okp_coexist_target *okp_hammered[2];

static long okp_coexist_round(long a)
{
	long wrong = 0;
	int i;

	for (i = 0; i < ARRAY_SIZE(okp_hammered); i++) {
		const struct okp_coexist_target *t = okp_hammered[i];

		if (t && !t->call(t->function, a))
			wrong++;
	}
	return wrong;
}

/* Every online CPU calls the hammered targets until okp_hammers_stop. */
static struct okp_hammer *okp_hammers_start(void)
{
	struct okp_hammer *hammers;

	hammers = kcalloc(nr_cpu_ids, sizeof(*hammers), GFP_KERNEL);
	if (hammers)
		okp_start_round_hammers(hammers, okp_coexist_round);
	return hammers;
}

/* Calls made (rounds over the targets), or -1 when none could start. */
static long okp_hammers_stop(struct okp_hammer *hammers, long *wrong)
{
	long calls = 0;

	if (!hammers)
		return -1;
	okp_stop_hammers(hammers, &calls, wrong);
	kfree(hammers);
	return calls;
}

/* ---- One cell --------------------------------------------------------------- */

enum okp_placement { OKP_SAME_ADDRESS, OKP_IN_REGION, OKP_SAME_FUNCTION,
		     OKP_OTHER_FUNCTION };

static const char *const okp_placement_names[] = {
	[OKP_SAME_ADDRESS] = "at the same address",
	[OKP_IN_REGION] = "inside its region",
	[OKP_SAME_FUNCTION] = "in the same function",
	[OKP_OTHER_FUNCTION] = "in another function",
};

struct okp_cell {
	const struct okp_coexist_target *target, *other;
	enum okp_party_kind first, second;
	enum okp_placement placement;
	bool remove_first_first;
};

static bool okp_text_restored(const u8 *snapshot, void *address)
{
	u8 now[OKP_SNAPSHOT];

	return !copy_from_kernel_nofault(now, address, sizeof(now)) &&
	       !memcmp(now, snapshot, sizeof(now));
}

/* The kernel takes an optprobe's jump out in its delayed optimizer. */
static bool okp_wait_restored(const u8 *snapshot, void *address)
{
	unsigned long deadline = jiffies +
				 msecs_to_jiffies(OKP_OPTIMIZE_TIMEOUT_MS);

	while (!okp_text_restored(snapshot, address)) {
		if (time_after(jiffies, deadline))
			return false;
		msleep(20);
	}
	return true;
}

static void okp_run_cell(const struct okp_cell *c, char *why, size_t size)
{
	const struct okp_coexist_target *second_target =
		c->placement == OKP_OTHER_FUNCTION ? c->other : c->target;
	u8 snapshot[OKP_SNAPSHOT], other_snapshot[OKP_SNAPSHOT];
	void *first_at = okp_at(c->target->function, c->target->at);
	void *second_at = okp_at(second_target->function,
				 c->placement == OKP_IN_REGION ? c->target->inside :
				 c->placement == OKP_SAME_FUNCTION ? c->target->other :
				 second_target->at);
	struct okp_hammer *hammers = NULL;
	struct okp_party *parties;
	struct okp_party *first, *second;
	bool both = c->placement == OKP_OTHER_FUNCTION;
	long calls, wrong = 0, hits;
	int ret;

	why[0] = '\0';
	parties = kcalloc(2, sizeof(*parties), GFP_KERNEL);
	if (!parties) {
		snprintf(why, size, "out of memory");
		return;
	}
	first = &parties[0];
	second = &parties[1];
	first->kind = c->first;
	second->kind = c->second;
	okp_hammered[0] = c->target;
	okp_hammered[1] = both ? c->other : NULL;
	if (copy_from_kernel_nofault(snapshot, c->target->function,
				     sizeof(snapshot)) ||
	    copy_from_kernel_nofault(other_snapshot, c->other->function,
				     sizeof(other_snapshot))) {
		snprintf(why, size, "cannot read the text");
		goto out;
	}

	/* Registration, with both CPUs calling. */
	hammers = okp_hammers_start();
	ret = okp_party_register(first, first_at);
	if (ret) {
		snprintf(why, size, "the first party was refused: %d", ret);
		goto remove;
	}
	if (okp_party_optimizes(first) && c->target->optimizable &&
	    !okp_party_wait_optimized(first)) {
		snprintf(why, size, "the first party never optimized");
		goto remove;
	}
	ret = okp_party_register(second, second_at);
	if (both && ret) {
		snprintf(why, size, "refused in another function: %d", ret);
		goto remove;
	}
	if (!both && !ret) {
		snprintf(why, size, "both registered in one function");
		goto remove;
	}
	if (!both && ret != (okp_party_is_kernel(second) ? -EINVAL : -EBUSY) &&
	    ret != -EBUSY) {
		snprintf(why, size, "refused with %d", ret);
		goto remove;
	}
	if (both && okp_party_optimizes(second) && second_target->optimizable &&
	    !okp_party_wait_optimized(second)) {
		snprintf(why, size, "the second party never optimized");
		goto remove;
	}
	okp_hammers_stop(hammers, &wrong);
	hammers = NULL;

	/* Counting: nothing but the hammers calls the targets. */
	atomic_long_set(&first->hits, 0);
	atomic_long_set(&second->hits, 0);
	hammers = okp_hammers_start();
	msleep(200);
	calls = okp_hammers_stop(hammers, &wrong);
	hammers = NULL;
	hits = atomic_long_read(&first->hits);
	if (calls <= 0 || (c->target->exclusive ? hits != calls : hits < calls)) {
		snprintf(why, size, "the first party counted %ld of %ld calls",
			 hits, calls);
		goto remove;
	}
	hits = atomic_long_read(&second->hits);
	if (both && (second_target->exclusive ? hits != calls : hits < calls)) {
		snprintf(why, size, "the second party counted %ld of %ld calls",
			 hits, calls);
		goto remove;
	}
	if (okp_party_optimizes(first) && c->target->optimizable &&
	    !okp_party_optimized(first)) {
		snprintf(why, size, "the first party lost its jump");
		goto remove;
	}

remove:
	/* Removal, with both CPUs calling. */
	if (!hammers)
		hammers = okp_hammers_start();
	if (c->remove_first_first) {
		okp_party_unregister(first);
		okp_party_unregister(second);
	} else {
		okp_party_unregister(second);
		okp_party_unregister(first);
	}
	okp_hammers_stop(hammers, &wrong);
	if (!okp_wait_restored(snapshot, c->target->function) && !why[0])
		snprintf(why, size, "%ps's text is not restored",
			 c->target->function);
	if (!okp_wait_restored(other_snapshot, c->other->function) && !why[0])
		snprintf(why, size, "%ps's text is not restored",
			 c->other->function);
	if (wrong && !why[0])
		snprintf(why, size, "%ld calls returned wrong results", wrong);
out:
	okp_hammered[0] = okp_hammered[1] = NULL;
	kfree(parties);
}

/* One pair of parties at one placement: both orders, both removals. */
static void okp_run_pair(const struct okp_coexist_target *target,
			 const struct okp_coexist_target *other,
			 enum okp_party_kind kernel, enum okp_party_kind okprobe,
			 enum okp_placement placement, char *why, size_t size)
{
	int order, removal;

	why[0] = '\0';
	for (order = 0; order < 4 && !why[0]; order++) {
		bool okprobe_first = order & 1;
		struct okp_cell cell = {
			.target = target,
			.other = other,
			.first = okprobe_first ? okprobe : kernel,
			.second = okprobe_first ? kernel : okprobe,
			.placement = placement,
		};

		removal = order >> 1;
		cell.remove_first_first = removal;
		okp_run_cell(&cell, why, size);
		if (why[0])
			scnprintf(why + strlen(why), size - strlen(why),
				  " (%s first, removed %s)",
				  okprobe_first ? "okprobe" : "kprobe",
				  removal ? "in order" : "reversed");
	}
}

/*
 * Runs the matrix over target (and other, a second function for the
 * "another function" cells), one TAP line per pair of parties and
 * placement, both orders of registration and of removal inside it.
 */
void okp_test_kernel_kprobes(const struct okp_coexist_target *target,
			     const struct okp_coexist_target *other)
{
	static const enum okp_party_kind kernel_kinds[] = {
		OKP_KERNEL_BREAKPOINT, OKP_KERNEL_OPTIMIZED
	};
	static const enum okp_party_kind okprobe_kinds[] = {
		OKP_OKPROBE_BREAKPOINT, OKP_OKPROBE_OPTIMIZED
	};
	char name[160], why[160];
	int k, o, placement;

	for (k = 0; k < ARRAY_SIZE(kernel_kinds); k++) {
		if (kernel_kinds[k] == OKP_KERNEL_OPTIMIZED &&
		    !IS_ENABLED(CONFIG_OPTPROBES))
			continue;
		for (o = 0; o < ARRAY_SIZE(okprobe_kinds); o++) {
			for (placement = 0; placement <= OKP_OTHER_FUNCTION;
			     placement++) {
				okp_run_pair(target, other, kernel_kinds[k],
					     okprobe_kinds[o], placement, why,
					     sizeof(why));
				snprintf(name, sizeof(name),
					 "%ps: %s and %s %s: %s",
					 target->function,
					 okp_party_names[kernel_kinds[k]],
					 okp_party_names[okprobe_kinds[o]],
					 okp_placement_names[placement],
					 placement == OKP_OTHER_FUNCTION ?
					 "both count every call" :
					 "the second is refused, the first counts every call");
				okp_report(!why[0], name, why);
			}
		}
	}
}

/* ---- A randomized run ------------------------------------------------------- */

#define OKP_KERNEL_SYSCTL "/proc/sys/debug/kprobes-optimization"

/* One kernel kprobe and one okprobe per target (each may optimize). */
struct okp_random_party {
	struct okp_party kernel, okprobe;
};

static const struct okp_cycle_target *okp_random_targets;
static size_t okp_random_count;

static long okp_random_round(long a)
{
	long wrong = 0;
	size_t i;

	for (i = 0; i < okp_random_count; i++) {
		const struct okp_cycle_target *t = &okp_random_targets[i];

		wrong += t->target(a, 1) != t->expect(a, 1);
	}
	return wrong;
}

/* Whether the text at address holds an optimizer's jump. */
static bool okp_jump_at(void *address)
{
	u8 bytes[4] = {};

	if (copy_from_kernel_nofault(bytes, address, sizeof(bytes)))
		return false;
#ifdef CONFIG_X86
	return bytes[0] == 0xe9;
#else
	return (bytes[0] & 0x7f) == 0x17; /* auipc */
#endif
}

/* One random step on party p (target t); false and why on a broken rule. */
static bool okp_random_step(struct okp_random_party *p,
			    const struct okp_cycle_target *t, u32 pick,
			    char *why, size_t size)
{
	void *address = okp_at(t->target, t->offset);
	int ret;

	switch (pick % 7) {
	case 0:
		if (p->kernel.registered)
			break;
		ret = okp_party_register(&p->kernel, address);
		/*
		 * Beside nothing the kernel may still refuse by its own
		 * instruction rules (riscv 6.1 rejects c.j, c.jr, c.beqz...).
		 */
		if (p->okprobe.registered ? ret != -EINVAL && ret != -EBUSY :
		    ret && ret != -EINVAL && ret != -EILSEQ) {
			snprintf(why, size, "kprobe at %pS beside %s: %d", address,
				 p->okprobe.registered ? "an okprobe" : "nothing",
				 ret);
			return false;
		}
		break;
	case 1:
		okp_party_unregister(&p->kernel);
		break;
	case 2:
		if (p->okprobe.registered)
			break;
		ret = okp_party_register(&p->okprobe, address);
		if (p->kernel.registered ? ret != -EBUSY : ret != 0) {
			snprintf(why, size, "okprobe at %pS beside %s: %d", address,
				 p->kernel.registered ? "a kprobe" : "nothing", ret);
			return false;
		}
		break;
	case 3:
		if (p->okprobe.registered)
			okp_party_unregister(&p->okprobe);
		break;
	case 4:
		if (p->okprobe.registered)
			(pick & 0x100 ? okprobe_enable :
			 okprobe_disable)(&p->okprobe.op);
		break;
	case 5:
		okp_write_sysctl(pick & 0x100 ? "1" : "0");
		break;
	default:
		/* Absent without optprobes: nothing to toggle then. */
		okp_write_file(OKP_KERNEL_SYSCTL, pick & 0x100 ? "1" : "0");
		break;
	}
	return true;
}

/* After every step: no okprobe says [OPTIMIZED] without its jump. */
static bool okp_random_invariants(struct okp_random_party *parties,
				  char *why, size_t size)
{
	size_t i;

	for (i = 0; i < okp_random_count; i++) {
		struct okp_random_party *p = &parties[i];

		if (p->kernel.registered && p->okprobe.registered) {
			snprintf(why, size, "a kprobe and an okprobe in %ps",
				 okp_random_targets[i].target);
			return false;
		}
		if (p->okprobe.registered && okp_optimized(&p->okprobe.op) &&
		    !okp_jump_at(p->okprobe.op.addr -
				 okp_random_targets[i].behind)) {
			snprintf(why, size, "%pS is [OPTIMIZED] without its jump",
				 p->okprobe.op.addr);
			return false;
		}
	}
	return true;
}

/* Every enabled party counts each of a burst of calls, a disabled none. */
static bool okp_random_counts(struct okp_random_party *parties, char *why,
			      size_t size)
{
	struct okp_hammer *hammers;
	long calls = 0, wrong = 0, hits;
	size_t i;

	for (i = 0; i < okp_random_count; i++) {
		atomic_long_set(&parties[i].kernel.hits, 0);
		atomic_long_set(&parties[i].okprobe.hits, 0);
	}
	hammers = kcalloc(nr_cpu_ids, sizeof(*hammers), GFP_KERNEL);
	if (!hammers)
		return true;
	okp_start_round_hammers(hammers, okp_random_round);
	msleep(100);
	okp_stop_hammers(hammers, &calls, &wrong);
	kfree(hammers);
	for (i = 0; i < okp_random_count; i++) {
		struct okp_random_party *p = &parties[i];

		hits = atomic_long_read(&p->kernel.hits);
		if (p->kernel.registered && hits != calls) {
			snprintf(why, size, "the kprobe in %ps counted %ld of %ld",
				 okp_random_targets[i].target, hits, calls);
			return false;
		}
		hits = atomic_long_read(&p->okprobe.hits);
		if (p->okprobe.registered &&
		    hits != (p->okprobe.op.flags & OKPROBE_FLAG_DISABLED ?
			     0 : calls)) {
			snprintf(why, size, "the okprobe in %ps counted %ld of %ld",
				 okp_random_targets[i].target, hits, calls);
			return false;
		}
	}
	if (wrong)
		snprintf(why, size, "%ld wrong results", wrong);
	return !wrong;
}

void okp_test_random_coexistence(const struct okp_cycle_target *targets,
				 size_t count, unsigned int steps)
{
	struct okp_random_party *parties = kcalloc(count, sizeof(*parties),
						   GFP_KERNEL);
	u8 (*snapshots)[OKP_SNAPSHOT] = kcalloc(count, OKP_SNAPSHOT, GFP_KERNEL);
	struct okp_hammer *hammers = NULL;
	u32 seed = get_random_u32();
	struct rnd_state rnd;
	char name[160], why[160] = "";
	unsigned int step = 0;
	long calls = 0, wrong = 0;
	size_t i;

	if (!parties || !snapshots) {
		snprintf(why, sizeof(why), "out of memory");
		goto report;
	}
	okp_random_targets = targets;
	okp_random_count = count;
	for (i = 0; i < count; i++) {
		parties[i].kernel.kind = OKP_KERNEL_OPTIMIZED;
		parties[i].okprobe.kind = OKP_OKPROBE_OPTIMIZED;
	}
	for (i = 0; i < count; i++)
		if (copy_from_kernel_nofault(snapshots[i], targets[i].target,
					     OKP_SNAPSHOT))
			snprintf(why, sizeof(why), "cannot read %ps",
				 targets[i].target);
	prandom_seed_state(&rnd, seed);
	hammers = kcalloc(nr_cpu_ids, sizeof(*hammers), GFP_KERNEL);
	if (hammers)
		okp_start_round_hammers(hammers, okp_random_round);
	for (step = 0; step < steps && !why[0]; step++) {
		u32 pick = prandom_u32_state(&rnd);

		if (okp_random_step(&parties[(pick >> 16) % count],
				    &targets[(pick >> 16) % count], pick, why,
				    sizeof(why)) &&
		    okp_random_invariants(parties, why, sizeof(why)) &&
		    step % 100 == 99 && hammers) {
			okp_stop_hammers(hammers, &calls, &wrong);
			okp_random_counts(parties, why, sizeof(why));
			memset(hammers, 0, nr_cpu_ids * sizeof(*hammers));
			okp_start_round_hammers(hammers, okp_random_round);
		}
	}
	/* Everything out, both optimizers back on, the text as it was. */
	for (i = 0; i < count; i++) {
		okp_party_unregister(&parties[i].kernel);
		if (parties[i].okprobe.registered)
			okp_party_unregister(&parties[i].okprobe);
	}
	okp_write_sysctl("1");
	okp_write_file(OKP_KERNEL_SYSCTL, "1");
	if (hammers)
		okp_stop_hammers(hammers, &calls, &wrong);
	if (wrong && !why[0])
		snprintf(why, sizeof(why), "%ld wrong results", wrong);
	for (i = 0; i < count && !why[0]; i++)
		if (!okp_wait_restored(snapshots[i], targets[i].target))
			snprintf(why, sizeof(why), "%ps is not restored",
				 targets[i].target);
report:
	snprintf(name, sizeof(name),
		 "randomized coexistence: %u steps of kprobes, okprobes, enable/disable and both sysctls over %zu functions (seed %u)",
		 steps, count, seed);
	if (why[0])
		scnprintf(why + strlen(why), sizeof(why) - strlen(why),
			  " (step %u)", step);
	okp_report(!why[0], name, why);
	kfree(hammers);
	kfree(snapshots);
	kfree(parties);
}

/* ---- Real kernel functions ------------------------------------------------- */

static bool okp_call_strscpy(void *function, long a)
{
	static const char *const words[] = { "okprobe", "kprobe", "ok" };
	char buffer[16];

	return strscpy(buffer, words[a % 3], sizeof(buffer)) ==
	       strlen(words[a % 3]);
}

static bool okp_call_memchr_inv(void *function, long a)
{
	static const u8 zeros[64];

	return !memchr_inv(zeros + a, 0, 32);
}

static int okp_ignore_hit(struct okprobe *op, struct pt_regs *regs)
{
	return 0;
}

/*
 * The instruction boundaries okprobe patches in a kernel function: the
 * first past its ftrace call site, the next, and one at least 16 bytes
 * further (outside any jump region). False if the function has too few.
 */
static bool okp_find_offsets(struct okp_coexist_target *t)
{
	struct okprobe *probe = kzalloc(sizeof(*probe), GFP_KERNEL);
	unsigned long offset, found = 0;
	bool entry;

	if (!probe)
		return false;
	for (offset = 0; offset < 64 && found < 3; offset++) {
		if (found == 2 && offset < t->at + 16)
			continue;
		memset(probe, 0, sizeof(*probe));
		probe->addr = okp_at(t->function, offset);
		probe->pre_handler = okp_ignore_hit;
		if (okprobe_register(probe))
			continue;
		/*
		 * The entry: through ftrace, or moved past its call site. The
		 * matrix is about instructions okprobe patches.
		 */
		entry = (probe->flags & OKPROBE_FLAG_FTRACE) ||
			probe->addr != okp_at(t->function, offset);
		okprobe_unregister(probe);
		if (entry)
			continue;
		if (found == 0)
			t->at = offset;
		else if (found == 1)
			t->inside = offset;
		else
			t->other = offset;
		found++;
	}
	kfree(probe);
	return found == 3;
}

void okp_test_kernel_kprobes_on_kernel_functions(void)
{
	struct okp_coexist_target targets[] = {
		{ .function = OKP_STRSCPY_FUNCTION, .call = okp_call_strscpy },
		{ .function = memchr_inv, .call = okp_call_memchr_inv },
	};

	/* The matrix's second run, on kernel functions: the full run's. */
	if (!okp_full_scale()) {
		pr_info("kernel kprobes on kernel functions: left to the full run (scale < 100)\n");
		return;
	}
	if (!okp_find_offsets(&targets[0]) || !okp_find_offsets(&targets[1])) {
		okp_report(false, "kernel functions next to kernel kprobes",
			   "strscpy or memchr_inv has too few probeable instructions");
		return;
	}
	okp_test_kernel_kprobes(&targets[0], &targets[1]);
}

/*
 * A kernel kprobe in a function's split-off piece (foo.cold): okprobe's
 * jump planner decodes the piece too, so with the kernel's bytes there its
 * probe in foo stays a breakpoint, and both count every call (the piece
 * runs when b == 0). With okprobe's probe already in foo, the kernel
 * refuses the piece (EINVAL): within_kprobe_blacklist() checks a suffixed
 * symbol's parent, whose entry okprobe's claim holds. The text ends as it
 * began.
 */
static bool okp_piece_order(okp_target_fn function, void *piece,
			    long (*expect)(long a, long b), bool kernel_first,
			    unsigned long optimize_ms, char *why, size_t size)
{
	struct okp_party *kernel = kzalloc(sizeof(*kernel), GFP_KERNEL);
	struct okp_party *ours = kzalloc(sizeof(*ours), GFP_KERNEL);
	u8 function_text[OKP_SNAPSHOT], piece_text[OKP_SNAPSHOT];
	bool ok = false;
	int i, ret;

	if (!kernel || !ours) {
		snprintf(why, size, "out of memory");
		goto out;
	}
	kernel->kind = OKP_KERNEL_BREAKPOINT;
	ours->kind = OKP_OKPROBE_OPTIMIZED;
	if (copy_from_kernel_nofault(function_text, function,
				     sizeof(function_text)) ||
	    copy_from_kernel_nofault(piece_text, piece, sizeof(piece_text))) {
		snprintf(why, size, "unreadable text");
		goto out;
	}
	if (kernel_first) {
		ret = okp_party_register(kernel, piece);
		if (ret) {
			snprintf(why, size, "kernel kprobe in the piece: %d", ret);
			goto out;
		}
	}
	ret = okp_party_register(ours, function);
	if (ret) {
		snprintf(why, size, "okprobe in the function: %d", ret);
		goto remove;
	}
	if (kernel_first) {
		msleep(optimize_ms * 2 + 1000);
		if (okp_optimized(&ours->op)) {
			snprintf(why, size, "okprobe jumped while a kernel kprobe was in the piece");
			goto remove;
		}
	} else {
		if (!okp_wait_optimized(&ours->op, true)) {
			snprintf(why, size, "okprobe never optimized");
			goto remove;
		}
		ret = okp_party_register(kernel, piece);
		if (ret != -EINVAL) {
			snprintf(why, size, "kernel kprobe in the piece after okprobe: %d, not -EINVAL",
				 ret);
			goto remove;
		}
	}
	for (i = 0; i < 100; i++) {
		if (function(i, i & 1) != expect(i, i & 1)) {
			snprintf(why, size, "a wrong result");
			goto remove;
		}
	}
	if (atomic_long_read(&ours->hits) != 100 ||
	    atomic_long_read(&kernel->hits) != (kernel_first ? 50 : 0)) {
		snprintf(why, size, "okprobe %ld of 100 hits, kernel %ld of %d",
			 atomic_long_read(&ours->hits),
			 atomic_long_read(&kernel->hits), kernel_first ? 50 : 0);
		goto remove;
	}
	ok = true;
remove:
	okp_party_unregister(ours);
	okp_party_unregister(kernel);
	if (ok && !(okp_wait_restored(function_text, function) &&
		    okp_wait_restored(piece_text, piece))) {
		snprintf(why, size, "the text is not restored");
		ok = false;
	}
out:
	kfree(kernel);
	kfree(ours);
	return ok;
}

void okp_test_kernel_kprobe_in_piece(okp_target_fn function, void *piece,
				     long (*expect)(long a, long b))
{
	struct okprobe alone = { .addr = function, .pre_handler = okp_op_pre };
	unsigned long start = jiffies, optimize_ms;
	char why[200] = "", detail[160] = "";
	bool ok = false;
	int ret;

	/* Alone, the function and its piece prove a jump: how long it took. */
	ret = okprobe_register(&alone);
	EXPECT(!ret, "okprobe alone: %d", ret);
	ok = okp_wait_optimized(&alone, true);
	optimize_ms = jiffies_to_msecs(jiffies - start);
	okprobe_unregister(&alone);
	EXPECT(ok, "okprobe alone never optimized");
	ok = false;
	EXPECT(okp_piece_order(function, piece, expect, true, optimize_ms,
			       detail, sizeof(detail)),
	       "kernel kprobe in the piece first: %s", detail);
	EXPECT(okp_piece_order(function, piece, expect, false, optimize_ms,
			       detail, sizeof(detail)),
	       "okprobe first: %s", detail);
	ok = true;
out:
	okp_report(ok, "a kernel kprobe in the function's .cold piece: okprobe stays a breakpoint; after okprobe the kernel refuses the piece; counts exact, text restored",
		   why);
}

#else

void okp_test_kernel_kprobes(const struct okp_coexist_target *target,
			     const struct okp_coexist_target *other)
{
}

void okp_test_random_coexistence(const struct okp_cycle_target *targets,
				 size_t count, unsigned int steps)
{
}

void okp_test_kernel_kprobes_on_kernel_functions(void)
{
}

void okp_test_kernel_kprobe_in_piece(okp_target_fn function, void *piece,
				     long (*expect)(long a, long b))
{
}

#endif
