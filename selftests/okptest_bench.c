// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part: the benchmark (make bench): the per-hit cost
 * of each kind of probe, side by side in one boot, and the coverage and
 * scale passes over the sample of real kernel instructions.
 *
 * A part of okptest.c (one program, one test list), included by it.
 */

/* ---- The benchmark (make bench) ------------------------------------------ */

/*
 * Per-hit cost of probes on the same instructions (+0 of each of
 * okprobe_bench.ko's targets), every configuration on every target
 * measured in each round, the rounds interleaved, medians reported. Prints
 * the table as "# bench: " lines for tools/bench; each sample also as a
 * "# sample: " line. Then the coverage of a sample of kernel instructions
 * ("# coverage: " lines; x86 only so far). Fails only when the run is
 * broken (a module does not load, a hit count is wrong), never on speed.
 */
#define BENCH_KO module_path("okprobe_bench.ko")
/* Only test guests have it (tools/bench puts it there). */
#define BENCH_SITES "/lib/okprobe/bench-sites.txt"
#define BENCH_CONTROL "/sys/kernel/debug/okprobe_bench/control"
#define KPROBES_LIST "/sys/kernel/debug/kprobes/list"
#define KERNEL_OPTIMIZATION "/proc/sys/debug/kprobes-optimization"
#define BENCH_MAX_ROUNDS 51
/* How long to wait for an optimizer to put a jump in. */
#define BENCH_OPTIMIZER_WAIT_MS 10000

/* An instruction every configuration probes: +0 of a function of the module. */
struct bench_target {
	const char *name;		/* the function, and okprobe_bench.ko's name */
	const char *instruction;	/* for the table */
	/* A function's entry (configurations BENCH_ON_ENTRY), not an instruction. */
	int entry;
};

static const struct bench_target bench_targets[] = {
#ifdef __x86_64__
	{ "okp_bench_target", "mov %rdi,%rax, 3 bytes (int3)", 0 },
#else
	{ "okp_bench_target", "addi t0,a0,2, 4 bytes (ebreak)", 0 },
	{ "okp_bench_target_c", "c.mv t0,a0, 2 bytes (c.ebreak)", 0 },
#endif
	{ "okp_bench_entry", "a C function's entry, its ftrace call site", 1 },
};

/* Which targets a configuration measures. */
enum { BENCH_ON_ALL, BENCH_ON_INSTRUCTION, BENCH_ON_ENTRY };

struct bench_config {
	const char *label;		/* the table's */
	const char *arm;		/* okprobe_bench.ko's */
	/* debug.kprobes-optimization; NULL where the kernel has no optprobes */
	const char *kernel_optimization;
	const char *okprobe_optimization;	/* debug.kprobes_optimization */
	int optimized;			/* measured only once the jump is in */
	int on;				/* BENCH_ON_* */
	/* The kernel may refuse it (no kprobes on ftrace): a row, not a failure. */
	int may_refuse;
	/*
	 * A trace event defined in this file (kprobe_events or
	 * okprobe_events) instead of a probe of okprobe_bench.ko's: the
	 * module runs the calls unprobed, the event's profile counts them.
	 */
	const char *event_file;
	/*
	 * Argument-only (issue 42): optimized, okprobe/jumps must show the
	 * short path's detour ("detour=N args"), or the round is wrong.
	 */
	int args_path;
	/*
	 * An event's: a perf event of it is open (disabled, so that perf
	 * records nothing), which moves its probe to pt_regs: okprobe/jumps
	 * must not show the short path's detour.
	 */
	int perf_open;
};

/*
 * The first configuration is the baseline. Every row sets both sysctls, the
 * other mechanism's to 0. riscv 6.1 has no optprobes (nor
 * debug.kprobes-optimization) and never boosts its kprobes.
 */
#ifdef __x86_64__
#define BENCH_KERNEL_OFF "0"
#define BENCH_KERNEL_ON "1"
#else
#define BENCH_KERNEL_OFF NULL
#define BENCH_KERNEL_ON NULL
#endif
/*
 * okprobe at a function's entry: through ftrace on x86 (no jump to wait
 * for), past the call site on riscv 6.12, where the jump is awaited.
 */
#define BENCH_ENTRY_JUMP (!IS_X86)

#define BENCH_EVENT_ARGS_LABEL "okprobe_events event, optimization 1 (arg, comm)"
#define BENCH_EVENT_PERF_LABEL "okprobe_events event with perf open, optimization 1"

static const struct bench_config bench_configs[] = {
	{ .label = "no probe", .arm = "none",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "0" },
#ifdef __x86_64__
	{ .label = "kernel kprobe, optimization 0", .arm = "kprobe",
	  .kernel_optimization = "0", .okprobe_optimization = "0",
	  .on = BENCH_ON_INSTRUCTION },
	{ .label = "kernel kprobe, optimization 1", .arm = "kprobe",
	  .kernel_optimization = "1", .okprobe_optimization = "0",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION },
#else
	{ .label = "kernel kprobe", .arm = "kprobe",
	  .okprobe_optimization = "0", .on = BENCH_ON_INSTRUCTION },
#endif
	{ .label = "okprobe, post_handler (unboosted)", .arm = "okprobe-post",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "0",
	  .on = BENCH_ON_INSTRUCTION },
	{ .label = "okprobe, pre_handler (boosted)", .arm = "okprobe-pre",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "0",
	  .on = BENCH_ON_INSTRUCTION },
	{ .label = "okprobe, pre_handler, optimization 1", .arm = "okprobe-pre",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION },
	{ .label = "okprobe counter, optimization 1", .arm = "okprobe-count",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION },
	{ .label = "okprobe, args_handler, optimization 1",
	  .arm = "okprobe-args",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION, .args_path = 1 },
	/*
	 * The same okprobe_events line ($arg1, $comm: the record has them)
	 * on the argument-only path, and on pt_regs while perf has it.
	 */
	{ .label = BENCH_EVENT_ARGS_LABEL, .arm = "okprobe-event",
	  .event_file = OKPROBE_EVENTS,
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION, .args_path = 1 },
	{ .label = BENCH_EVENT_PERF_LABEL, .arm = "okprobe-event",
	  .event_file = OKPROBE_EVENTS,
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION, .perf_open = 1,
	  .may_refuse = 1 },
#ifdef __x86_64__
	{ .label = "kernel kretprobe, optimization 0", .arm = "kretprobe",
	  .kernel_optimization = "0", .okprobe_optimization = "0",
	  .on = BENCH_ON_INSTRUCTION },
	{ .label = "kernel kretprobe, optimization 1", .arm = "kretprobe",
	  .kernel_optimization = "1", .okprobe_optimization = "0",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION },
#else
	{ .label = "kernel kretprobe", .arm = "kretprobe",
	  .okprobe_optimization = "0", .on = BENCH_ON_INSTRUCTION },
#endif
	/*
	 * Without entry_handler: at the function's exits where okprobe can
	 * prove them and a jump fits at each; the same probe told to hook
	 * the return address
	 * (OKPROBE_FLAG_RETURN_RETHOOK), as one with an entry_handler does.
	 */
	{ .label = "okretprobe, optimization 1", .arm = "okretprobe",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION },
	{ .label = "okretprobe with rethook, optimization 1",
	  .arm = "okretprobe-rethook",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION },
	{ .label = "a module's bare ftrace_ops (the floor)", .arm = "ftrace-ops",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "0",
	  .on = BENCH_ON_ENTRY, .may_refuse = 1 },
	{ .label = "kernel kprobe at +0", .arm = "kprobe",
	  .kernel_optimization = BENCH_KERNEL_ON, .okprobe_optimization = "0",
	  .on = BENCH_ON_ENTRY, .may_refuse = 1 },
	{ .label = "okprobe at +0", .arm = "okprobe-pre",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = BENCH_ENTRY_JUMP, .on = BENCH_ON_ENTRY },
	{ .label = "kernel kretprobe: entry and return", .arm = "kretprobe",
	  .kernel_optimization = BENCH_KERNEL_ON, .okprobe_optimization = "0",
	  .on = BENCH_ON_ENTRY, .may_refuse = 1 },
	{ .label = "okretprobe: entry and return", .arm = "okretprobe",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = 1, .on = BENCH_ON_ENTRY },
	{ .label = "okretprobe with rethook: entry and return",
	  .arm = "okretprobe-rethook",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = BENCH_ENTRY_JUMP, .on = BENCH_ON_ENTRY },
	{ .label = "kernel kprobe event at +0 (arg, comm)", .arm = "kprobe-event",
	  .event_file = KPROBE_EVENTS,
	  .kernel_optimization = BENCH_KERNEL_ON, .okprobe_optimization = "0",
	  .on = BENCH_ON_ENTRY, .may_refuse = 1 },
	{ .label = "okprobe_events event at +0 (arg, comm)", .arm = "okprobe-event",
	  .event_file = OKPROBE_EVENTS,
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = BENCH_ENTRY_JUMP, .on = BENCH_ON_ENTRY },
};

/* The event a configuration defines: okpbench/kern or okpbench/okp. */
static const char *bench_event_name(const struct bench_config *c)
{
	return strcmp(c->event_file, KPROBE_EVENTS) ? "okp" : "kern";
}

/* A perf event of the okprobe_events event (perf_open rows), or -1. */
static int bench_perf_fd = -1;

/*
 * perf_event_open() of the event as a tracepoint, disabled: perf has the
 * event (its probe hands pt_regs), records nothing. 0 or -errno.
 */
static int bench_event_perf_open(const struct bench_config *c)
{
	char path[160], id[32];

	snprintf(path, sizeof(path), TRACING "/events/okpbench/%s/id",
		 bench_event_name(c));
	if (read_file(path, id, sizeof(id)))
		return -EOPNOTSUPP; /* no CONFIG_PERF_EVENTS */
	bench_perf_fd = perf_open(atol(id), 0);
	return bench_perf_fd < 0 ? -errno : 0;
}

/* Defines and enables c's event on target; 0 or -errno. */
static int bench_event_define(const struct bench_config *c,
			      const char *target)
{
	char line[160], path[160];
	int ret;

	mount_tracefs_if_needed();
	snprintf(line, sizeof(line), "p:okpbench/%s %s arg=$arg1:u64 comm=$comm",
		 bench_event_name(c), target);
	ret = write_file(c->event_file, line);
	snprintf(path, sizeof(path), TRACING "/events/okpbench/%s/enable",
		 bench_event_name(c));
	if (!ret)
		ret = write_file(path, "1");
	if (!ret && c->perf_open)
		ret = bench_event_perf_open(c);
	return ret;
}

/* Disables and removes c's event: its hits (its profile's), or -1. */
static long bench_event_remove(const struct bench_config *c)
{
	static char profile[1 << 14];
	char path[160], name[64], *line;
	long hits = -1, count;

	if (bench_perf_fd >= 0)
		close(bench_perf_fd);
	bench_perf_fd = -1;
	snprintf(path, sizeof(path), TRACING "/events/okpbench/%s/enable",
		 bench_event_name(c));
	write_file(path, "0");
	if (!read_file(strcmp(c->event_file, KPROBE_EVENTS) ?
		       TRACING "/okprobe_profile" : TRACING "/kprobe_profile",
		       profile, sizeof(profile)))
		for (line = strtok(profile, "\n"); line;
		     line = strtok(NULL, "\n"))
			if (sscanf(line, "%63s %ld", name, &count) == 2 &&
			    !strcmp(name, bench_event_name(c)))
				hits = count;
	snprintf(path, sizeof(path), "-:okpbench/%s", bench_event_name(c));
	write_file(c->event_file, path);
	return hits;
}

#define BENCH_CONFIGS ARRAY_SIZE(bench_configs)
#define BENCH_ROWS (ARRAY_SIZE(bench_targets) * BENCH_CONFIGS)

/* One configuration on one target: a row of the table. */
struct bench_row {
	const struct bench_target *target;
	const struct bench_config *config;
	double ns_per_call[BENCH_MAX_ROUNDS];
	int traps;			/* breakpoint traps per hit */
	int optimized_rounds;		/* the jump was in for the whole run */
	int gave_up_waiting;		/* not optimized within the wait */
	int wrong_rounds;		/* hits != calls, misses, bad results */
	char wrong[160];		/* the first wrong run */
	char listed[256];		/* its kprobes/list or jumps line, round 0 */
	/* okprobe/jumps' reason when it refused the jump: not measured */
	char refused[160];
	/* Arming it was refused (a may_refuse configuration): not measured. */
	int arm_refused;
};

/* Target by target, in the order of bench_configs. */
static struct bench_row bench_rows[BENCH_ROWS];

/* Overridable from the kernel command line: bench_calls=, bench_rounds=. */
static unsigned long bench_calls = 100000;
static int bench_rounds = 21;
/* From okprobe_bench.ko: the kernel has CONFIG_PREEMPTION. */
static int bench_preemption = -1;
/* From okprobe_bench.ko: its batches run with interrupts off. */
static int bench_irqs_off;
/* What each kprobes-optimization sysctl was last set to. */
static char bench_kernel_optimization[4], bench_okprobe_optimization[4];

/* CLOCK_MONOTONIC, in nanoseconds and in milliseconds. */
static long long now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec * 1000000000LL + now.tv_nsec;
}

static long long now_ms(void)
{
	return now_ns() / 1000000;
}

/*
 * Sets a sysctl unless it already has value (last, what it was set to).
 * The kernel logs a line whenever its kprobes-optimization changes,
 * straight to the serial port: let the console finish our lines first, or
 * the message lands inside one.
 */
static int bench_set_sysctl(const char *path, char *last, const char *value)
{
	int ret;

	if (!strcmp(last, value))
		return 0;
	tcdrain(1);
	ret = write_file(path, value);
	if (!ret)
		snprintf(last, 4, "%s", value);
	return ret;
}

static int bench_set_optimization(const struct bench_config *c)
{
	int ret = 0;

	if (c->kernel_optimization)
		ret = bench_set_sysctl(KERNEL_OPTIMIZATION,
				       bench_kernel_optimization,
				       c->kernel_optimization);
	CHECK(ret == 0, "writing %s to %s: %s", c->kernel_optimization,
	      KERNEL_OPTIMIZATION, strerror(-ret));
	ret = bench_set_sysctl(SYSCTL_OPTIMIZATION, bench_okprobe_optimization,
			       c->okprobe_optimization);
	CHECK(ret == 0, "writing %s to %s: %s", c->okprobe_optimization,
	      SYSCTL_OPTIMIZATION, strerror(-ret));
	return 0;
}

/* Writes a command to okprobe_bench.ko, reads its reply; 0 or -errno. */
static int bench_command(const char *command, char *reply, size_t size)
{
	int ret = write_file(BENCH_CONTROL, command);

	if (ret)
		return ret;
	return read_file(BENCH_CONTROL, reply, size);
}

static int bench_is_kernel(const struct bench_row *row)
{
	return !strcmp(row->config->arm, "kprobe") ||
	       !strcmp(row->config->arm, "kretprobe");
}

/* Whether row's configuration measures row's target. */
static int bench_applies(const struct bench_row *row)
{
	switch (row->config->on) {
	case BENCH_ON_INSTRUCTION:
		return !row->target->entry;
	case BENCH_ON_ENTRY:
		return row->target->entry;
	default:
		return 1;
	}
}

/*
 * Where the probe of row is listed: kprobes/list ("name+0x0 ") or
 * okprobe/jumps ("name+0x0/size"); "name+0x" tells the targets apart, and
 * a row arms one probe. Its offset is not the row's to guess: both put a
 * +0 probe past an endbr64 (+0x4), which an IBT kernel's C functions
 * start with, its assembly ones up to 6.x too (SYM_FUNC_START), 7.x's not;
 * an entry's probe may sit on the call site or past it.
 */
static void bench_listed_line(const struct bench_row *row, char *line,
			      size_t size)
{
	char needle[96];

	snprintf(needle, sizeof(needle), "%s+0x", row->target->name);
	file_line(bench_is_kernel(row) ? KPROBES_LIST :
			DEBUGFS_DIR "/jumps", needle, line, size);
}

/*
 * Waits up to BENCH_OPTIMIZER_WAIT_MS for the armed probe's jump: for the
 * kernel, kprobes/list says [OPTIMIZED] (set when the probe is queued) and
 * the jmp is in the text (the optimizer ran); for okprobe,
 * OKPROBE_FLAG_OPTIMIZED; for an okprobe_events event, okprobe/jumps says
 * "optimized". 1 once it is, 0 after a note (and no more
 * waiting for row in later rounds). okprobe/jumps' "breakpoint: why" is a
 * refusal, not a wait: it is kept in row->refused at once.
 */
static int bench_wait_optimized(struct bench_row *row)
{
	long long deadline = now_ms() + BENCH_OPTIMIZER_WAIT_MS;
	int kernel = bench_is_kernel(row);
	/* An event's probe is okprobe_events', not the bench module's. */
	int event = row->config->event_file != NULL;
	char line[256], reply[128], *refusal;

	for (;;) {
		bench_listed_line(row, line, sizeof(line));
		if (event ? strstr(line, "  optimized ") != NULL :
			    bench_command("state", reply, sizeof(reply)) == 0 &&
				    strstr(reply, "optimized=1") &&
				    (!kernel || strstr(line, "[OPTIMIZED]")))
			return 1;
		refusal = kernel ? NULL : strstr(line, "  breakpoint: ");
		if (refusal) {
			snprintf(row->refused, sizeof(row->refused), "%s",
				 refusal + strlen("  breakpoint: "));
			return 0;
		}
		if (row->gave_up_waiting || now_ms() > deadline)
			break;
		usleep(20000);
	}
	if (!row->gave_up_waiting)
		say("# bench: note: %s, %s: not optimized within %d s: %s",
		    row->target->name, row->config->label,
		    BENCH_OPTIMIZER_WAIT_MS / 1000, line);
	row->gave_up_waiting = 1;
	return 0;
}

/*
 * Whether an argument-only row that was optimized ran on the short path:
 * okprobe/jumps' line of its site, read once optimized, says
 * "detour=N args".
 */
static int bench_args_path(const char *listed)
{
	if (!strstr(listed, "  optimized "))
		return 1; /* not optimized: the optimized rounds say so */
	return strstr(listed, " args") != NULL;
}

/* One sample of row: arm, run calls, disarm. */
static int bench_sample(struct bench_row *row, unsigned long calls, int round)
{
	const struct bench_config *c = row->config;
	const char *module_arm = c->event_file ? "none" : c->arm;
	unsigned long got_calls, hits, missed, bad;
	char command[128], reply[256], jump[16], event_jump[256];
	unsigned long long ns;
	long event_hits = 0;
	int ret, traps, wrong;

	STEP(bench_set_optimization(c));
	if (c->event_file) {
		ret = bench_event_define(c, row->target->name);
		if (ret) {
			bench_event_remove(c);
			if (c->may_refuse) {
				row->arm_refused = 1;
				snprintf(row->refused, sizeof(row->refused),
					 "refused here: %s", strerror(-ret));
				return 0;
			}
		}
		CHECK(ret == 0, "the %s event on %s: %s", bench_event_name(c),
		      row->target->name, strerror(-ret));
	}
	snprintf(command, sizeof(command), "arm %s %s", module_arm,
		 row->target->name);
	ret = bench_command(command, reply, sizeof(reply));
	/* Without rethook (riscv 6.1) okprobe has no return probes. */
	if (ret == -EOPNOTSUPP && !strncmp(module_arm, "okretprobe", 10) &&
	    !kallsyms_address("rethook_hook")) {
		row->arm_refused = 1;
		snprintf(row->refused, sizeof(row->refused),
			 "refused here: %s (no rethook in this kernel)",
			 strerror(-ret));
		return 0;
	}
	if (ret && c->may_refuse) {
		row->arm_refused = 1;
		snprintf(row->refused, sizeof(row->refused),
			 "refused here: %s%s", strerror(-ret),
			 bench_is_kernel(row) &&
			 !kallsyms_address("kprobe_ftrace_handler") ?
			 " (no kprobes on ftrace: not at a traced function's call site)" :
			 "");
		return 0;
	}
	CHECK(ret == 0, "%s: %s", command, strerror(-ret));
	CHECK(sscanf(reply, "%*s armed traps=%d preemption=%d irqs_off=%d",
		     &traps, &bench_preemption, &bench_irqs_off) == 3,
	      "%s replied '%s'", command, reply);
	if (c->optimized && !bench_wait_optimized(row) && row->refused[0]) {
		/* Nothing to measure: it would be the boosted row again. */
		write_file(BENCH_CONTROL, "disarm");
		return 0;
	}
	if (round == 0 && strcmp(module_arm, "none"))
		bench_listed_line(row, row->listed, sizeof(row->listed));
	snprintf(command, sizeof(command), "run %lu", calls);
	ret = bench_command(command, reply, sizeof(reply));
	/*
	 * An event's probe is okprobe_events': its jump, if any, was in
	 * for the run if it is still in now (okprobe/jumps).
	 */
	event_jump[0] = '\0';
	if (c->event_file && c->optimized)
		bench_listed_line(row, event_jump, sizeof(event_jump));
	if (ret == 0)
		ret = write_file(BENCH_CONTROL, "disarm");
	else
		write_file(BENCH_CONTROL, "disarm");
	if (c->event_file)
		event_hits = bench_event_remove(c);
	CHECK(ret == 0, "%s (%s %s): %s", command, c->arm, row->target->name,
	      strerror(-ret));
	reply[strcspn(reply, "\n")] = '\0';
	CHECK(sscanf(reply, "%*s calls=%lu ns=%llu hits=%lu missed=%lu bad=%lu traps=%d jump=%15s",
		     &got_calls, &ns, &hits, &missed, &bad, &traps, jump) == 7,
	      "run replied '%s'", reply);
	say("# sample: round %d %s, %s: %s", round, row->target->name,
	    c->label, reply);
	if (round < 0)
		return 0;	/* warm-up */
	row->ns_per_call[round] = (double)ns / got_calls;
	row->traps = traps;
	row->optimized_rounds += c->event_file ?
		strstr(event_jump, "  optimized ") != NULL :
		!strcmp(jump, "throughout");
	/* With its sysctl at 0 a probe must never be optimized. */
	wrong = got_calls != calls || missed || bad ||
		hits != (strcmp(module_arm, "none") ? calls : 0) ||
		(c->event_file && event_hits != (long)calls) ||
		(!c->optimized && strcmp(jump, "none")) ||
		(c->args_path &&
		 !bench_args_path(c->event_file ? event_jump : row->listed)) ||
		(c->perf_open && strstr(event_jump, " args"));
	if (wrong && !row->wrong_rounds++)
		snprintf(row->wrong, sizeof(row->wrong),
			 "round %d: %lu calls, %lu hits, %lu missed, %lu wrong results, jump %s, event hits %ld",
			 round, got_calls, hits, missed, bad, jump, event_hits);
	return 0;
}

static int bench_compare(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The value at quantile numerator/4 of count values (nearest rank). */
static double bench_quartile(const double *values, int count, int numerator)
{
	double sorted[BENCH_MAX_ROUNDS];

	memcpy(sorted, values, count * sizeof(*values));
	qsort(sorted, count, sizeof(*sorted), bench_compare);
	if (numerator == 2 && count % 2 == 0)
		return (sorted[count / 2 - 1] + sorted[count / 2]) / 2;
	return sorted[numerator * (count - 1) / 4];
}

static double bench_median(const double *values, int count)
{
	return bench_quartile(values, count, 2);
}

/* The row of the same target as row with configuration config. */
static const struct bench_row *bench_row_of(const struct bench_row *row,
					    const struct bench_config *config)
{
	size_t target = (row - bench_rows) / BENCH_CONFIGS;

	return &bench_rows[target * BENCH_CONFIGS + (config - bench_configs)];
}

/* The target's row whose configuration arms arm, optimized or not; or NULL. */
static const struct bench_row *bench_find(const struct bench_row *row,
					  const char *arm, int optimized)
{
	size_t i;

	for (i = 0; i < BENCH_CONFIGS; i++) {
		const struct bench_row *found =
			bench_row_of(row, &bench_configs[i]);

		if (!strcmp(bench_configs[i].arm, arm) &&
		    bench_configs[i].optimized == optimized &&
		    bench_applies(found))
			return found;
	}
	return NULL;
}

/* The target's row of the configuration labelled label; or NULL. */
static const struct bench_row *bench_find_label(const struct bench_row *row,
						const char *label)
{
	size_t i;

	for (i = 0; i < BENCH_CONFIGS; i++)
		if (!strcmp(bench_configs[i].label, label) &&
		    bench_applies(bench_row_of(row, &bench_configs[i])))
			return bench_row_of(row, &bench_configs[i]);
	return NULL;
}

/*
 * Median over the rounds of (row's ns/call - its target's no-probe
 * ns/call): ns per hit.
 */
static double bench_ns_per_hit(const struct bench_row *row)
{
	const struct bench_row *none = bench_row_of(row, &bench_configs[0]);
	double differences[BENCH_MAX_ROUNDS];
	int round;

	for (round = 0; round < bench_rounds; round++)
		differences[round] = row->ns_per_call[round] -
				     none->ns_per_call[round];
	return bench_median(differences, bench_rounds);
}

/* " [OPTIMIZED]" when every round of an optimized row had its jump. */
static const char *bench_optimized_label(const struct bench_row *row)
{
	if (!row->config->optimized)
		return "";
	if (row->optimized_rounds == bench_rounds)
		return " [OPTIMIZED]";
	return row->optimized_rounds ? " [OPTIMIZED some rounds]" :
	       " (not optimized)";
}

static void bench_print_row(const struct bench_row *row, double kprobe)
{
	const struct bench_row *none = bench_row_of(row, &bench_configs[0]);
	double per_call, spread;
	char hit[16], ratio[16], label[80];

	if (row->refused[0]) {
		say("# bench: %-50s %s%s", row->config->label,
		    row->arm_refused ? "" : "not optimized: ", row->refused);
		say("# hit: %s|%s|-|-|-|%s%s", row->target->name,
		    row->config->label, row->arm_refused ? "" : "not optimized: ",
		    row->refused);
		return;
	}
	per_call = bench_median(row->ns_per_call, bench_rounds);
	spread = bench_quartile(row->ns_per_call, bench_rounds, 3) -
		 bench_quartile(row->ns_per_call, bench_rounds, 1);
	snprintf(label, sizeof(label), "%s%s", row->config->label,
		 bench_optimized_label(row));
	if (row == none) {
		snprintf(hit, sizeof(hit), "-");
		snprintf(ratio, sizeof(ratio), "-");
	} else {
		snprintf(hit, sizeof(hit), "%.1f", bench_ns_per_hit(row));
		if (kprobe > 0)
			snprintf(ratio, sizeof(ratio), "%.2f",
				 bench_ns_per_hit(row) / kprobe);
		else
			snprintf(ratio, sizeof(ratio), "-");
	}
	say("# bench: %-50s %5d %9.1f %8s %9s %5.0f%% %s", label, row->traps,
	    per_call, hit, ratio, per_call > 0 ? 100 * spread / per_call : 0,
	    row->wrong_rounds ? "WRONG" : "ok");
	/* The same row for tools/bench, which puts runs side by side. */
	say("# hit: %s|%s|%d|%.2f|%s|%s", row->target->name, label, row->traps,
	    per_call, hit, row->wrong_rounds ? "WRONG" : "ok");
}

/* Under the rows of a target: okprobe's jump against the kernel's. */
/* A ratio line of two rows of a target, when both were measured. */
static void bench_print_ratio(const char *what, const struct bench_row *ours,
			      const struct bench_row *kernel)
{
	if (!ours || !kernel || ours->refused[0] || kernel->refused[0] ||
	    bench_ns_per_hit(kernel) <= 0)
		return;
	say("# bench: %s (ns/hit): %.2f", what,
	    bench_ns_per_hit(ours) / bench_ns_per_hit(kernel));
}

static void bench_print_optimized_ratio(const struct bench_row *row)
{
	if (!row->target->entry) {
		bench_print_ratio("okprobe_events event on the argument-only path vs the same with perf open (pt_regs)",
				  bench_find_label(row, BENCH_EVENT_ARGS_LABEL),
				  bench_find_label(row, BENCH_EVENT_PERF_LABEL));
		bench_print_ratio("okretprobe optimized vs the kernel's kretprobe through a breakpoint",
				  bench_find(row, "okretprobe", 1),
				  bench_find(row, "kretprobe", 0));
		bench_print_ratio("okretprobe optimized vs the kernel's kretprobe optimized",
				  bench_find(row, "okretprobe", 1),
				  bench_find(row, "kretprobe", 1));
		bench_print_ratio("okretprobe with rethook vs the kernel's kretprobe optimized",
				  bench_find(row, "okretprobe-rethook", 1),
				  bench_find(row, "kretprobe", 1));
	}
	if (row->target->entry) {
		bench_print_ratio("okprobe at +0 vs the kernel's kprobe at +0",
				  bench_find(row, "okprobe-pre",
					     BENCH_ENTRY_JUMP),
				  bench_find(row, "kprobe", 0));
		bench_print_ratio("okretprobe vs the kernel's kretprobe, entry and return",
				  bench_find(row, "okretprobe", 1),
				  bench_find(row, "kretprobe", 0));
		bench_print_ratio("okretprobe with rethook vs the kernel's kretprobe, entry and return",
				  bench_find(row, "okretprobe-rethook",
					     BENCH_ENTRY_JUMP),
				  bench_find(row, "kretprobe", 0));
		bench_print_ratio("okprobe_events event vs the kernel's kprobe event, same line",
				  bench_find(row, "okprobe-event",
					     BENCH_ENTRY_JUMP),
				  bench_find(row, "kprobe-event", 0));
		return;
	}
	const struct bench_row *kernel = bench_find(row, "kprobe", 1);
	const struct bench_row *ours = bench_find(row, "okprobe-pre", 1);

	if (!kernel || !ours || ours->refused[0])
		return;
	say("# bench: okprobe optimized vs kernel optprobe (ns/hit): %.2f%s",
	    bench_ns_per_hit(kernel) > 0 ?
	    bench_ns_per_hit(ours) / bench_ns_per_hit(kernel) : 0,
	    kernel->optimized_rounds == bench_rounds &&
	    ours->optimized_rounds == bench_rounds ? "" :
	    " (not both optimized in every round: see above)");
}

static void bench_print_table(void)
{
	const struct bench_row *row, *reference;
	size_t i;

	say("# bench: batches %s", bench_irqs_off ?
	    "with preemption and interrupts off (the kernel traces irq flags)" :
	    "with preemption off");
	say("# bench: %-50s %5s %9s %8s %9s %6s %s", "configuration", "traps",
	    "ns/call", "ns/hit", "vs kprobe", "IQR", "hits");
	for (row = bench_rows; row < bench_rows + BENCH_ROWS;
	     row += BENCH_CONFIGS) {
		reference = bench_find(row, "kprobe", 0);
		say("# bench: %s+0: %s", row->target->name,
		    row->target->instruction);
		for (i = 0; i < BENCH_CONFIGS; i++)
			if (bench_applies(&row[i]))
				bench_print_row(&row[i],
						reference && !reference->refused[0] ?
						bench_ns_per_hit(reference) : 0);
		bench_print_optimized_ratio(row);
	}
	for (row = bench_rows; row < bench_rows + BENCH_ROWS; row++) {
		if (!bench_applies(row))
			continue;
		if (row->wrong_rounds)
			say("# bench: WRONG %s, %s in %d rounds, first %s",
			    row->target->name, row->config->label,
			    row->wrong_rounds, row->wrong);
		if (row->listed[0])
			say("# bench: %s, %s, %s: %s",
			    bench_is_kernel(row) ? "kprobes/list" :
			    "okprobe/jumps", row->target->name,
			    row->config->label, row->listed);
	}
	reference = bench_find(bench_rows, "kprobe", 0);
	if (IS_X86 && reference->traps == 2 && bench_preemption == 1)
		say("# bench: the kernel kprobe takes 2 traps per hit: CONFIG_PREEMPTION compiles kprobes' boosting out");
	if (!IS_X86)
		say("# bench: riscv kprobes never boost: an instruction they single-step takes 2 traps per hit");
	tcdrain(1);
}

/*
 * For tools/trace-hit: the text symbols of okprobe's modules, so that a
 * trace of single-stepped hits names them; then a pause in which the host
 * puts its breakpoint on the bench target before the first row runs.
 */
static void bench_print_module_symbols(void)
{
	FILE *kallsyms = fopen("/proc/kallsyms", "re");
	char line[256];

	if (!kallsyms)
		return;
	while (fgets(line, sizeof(line), kallsyms)) {
		line[strcspn(line, "\n")] = '\0';
		if (strstr(line, "\t[okprobe") &&
		    (strstr(line, " t ") || strstr(line, " T ")))
			say("# bench: symbol %s", line);
	}
	fclose(kallsyms);
	/* Each module's start and size: what lies outside is okprobe's code
	 * pages (detours, slots) or the kernel's.
	 */
	kallsyms = fopen("/proc/modules", "re");
	while (kallsyms && fgets(line, sizeof(line), kallsyms)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "okprobe", 7))
			say("# bench: module %s", line);
	}
	if (kallsyms)
		fclose(kallsyms);
	say("# bench: trace pause");
	tcdrain(1);
	sleep(3);
}

static int bench_load(void)
{
	const char *calls = getenv("bench_calls");
	const char *rounds = getenv("bench_rounds");
	char release[128] = "", version[512] = "";
	int ret;

	if (calls)
		bench_calls = strtoul(calls, NULL, 10);
	if (rounds)
		bench_rounds = atoi(rounds);
	CHECK(bench_calls > 0 && bench_rounds > 0 &&
	      bench_rounds <= BENCH_MAX_ROUNDS,
	      "bad bench_calls=%lu or bench_rounds=%d", bench_calls,
	      bench_rounds);
	if (!exists(BENCH_KO))
		return skip("no okprobe_bench.ko for this architecture");
	CHECK(kernel_has_kprobes, "this kernel has no kprobes to compare with");
	CHECK(!bench_configs[0].kernel_optimization ||
	      exists(KERNEL_OPTIMIZATION), "%s is missing: no optprobes?",
	      KERNEL_OPTIMIZATION);
	STEP(load_okprobe(default_params));
	ret = load_module(BENCH_KO, "");
	CHECK(ret == 0, "loading okprobe_bench.ko: %s", strerror(-ret));
	read_file("/proc/sys/kernel/osrelease", release, sizeof(release));
	read_file("/proc/version", version, sizeof(version));
	release[strcspn(release, "\n")] = '\0';
	version[strcspn(version, "\n")] = '\0';
	say("# bench: kernel %s", release);
	say("# bench: version %s", version);
	say("# bench: calls %lu", bench_calls);
	say("# bench: rounds %d", bench_rounds);
	if (getenv("bench_trace"))
		bench_print_module_symbols();
	return 0;
}

/*
 * okprobe_bench.ko's ruler, three times: a loop of a known number of
 * instructions against the guest's clock. Under -icount shift=0 (tools/bench's
 * instruction-count runs) the two agree; under plain TCG the line just
 * says how fast this guest executes.
 */
static void bench_ruler(void)
{
	char reply[128];
	int i;

	for (i = 0; i < 3; i++)
		if (bench_command("ruler", reply, sizeof(reply)) == 0) {
			reply[strcspn(reply, "\n")] = '\0';
			say("# bench: %s", reply);
		}
}

static int bench_measure(void)
{
	size_t i;
	int round, wrong = 0;

	if (!exists(BENCH_CONTROL))
		return skip("okprobe_bench.ko is not loaded");
	for (i = 0; i < BENCH_ROWS; i++) {
		bench_rows[i].target = &bench_targets[i / BENCH_CONFIGS];
		bench_rows[i].config = &bench_configs[i % BENCH_CONFIGS];
	}
	/*
	 * A warm-up round, not counted; then rounds in rotating order. A
	 * row whose jump okprobe refused is not measured again.
	 */
	for (i = 0; i < BENCH_ROWS; i++)
		if (bench_applies(&bench_rows[i]))
			STEP(bench_sample(&bench_rows[i], bench_calls, -1));
	for (round = 0; round < bench_rounds; round++)
		for (i = 0; i < BENCH_ROWS; i++) {
			struct bench_row *row = &bench_rows[(i + round) % BENCH_ROWS];

			if (bench_applies(row) && !row->refused[0])
				STEP(bench_sample(row, bench_calls, round));
		}
	bench_print_table();
	bench_ruler();
	for (i = 0; i < BENCH_ROWS; i++)
		wrong += bench_rows[i].wrong_rounds;
	CHECK(!wrong, "%d runs with wrong hit counts or results", wrong);
	return 0;
}

/*
 * Coverage: the sample of kernel instruction boundaries that tools/bench
 * drew from the vmlinux (okprobe_bench_sites: "symbol 0xoffset" lines),
 * registered with kernel kprobes, then with okprobe, one probe per site
 * with a counting pre_handler, by address (resolved here through
 * /proc/kallsyms, so that name lookups are not part of the timing).
 * Counts what each registers and optimizes and how long that takes, then
 * unregisters everything and checks that the text is back as it was.
 */
#define BENCH_MAX_SITES 16384
/* The sampler's comment line that describes the sample. */
#define BENCH_SITES_ABOUT "# okprobe bench sites: "
#define BENCH_MAX_REASONS 32
/* How long to wait for an optimizer to finish a whole sample. */
#define BENCH_COVERAGE_WAIT_MS 180000
/* How long unregistered probes may take to leave the text. */
#define BENCH_RESTORE_WAIT_MS 10000

struct bench_site {
	char name[256];
	unsigned long offset;
	unsigned long address;	/* the probed address, 0 if unresolved */
};

static struct bench_site bench_sites[BENCH_MAX_SITES];
static int bench_site_count;
/* The sample's own description (its first comment line). */
static char bench_sites_about[512];
/* optprobe_template_entry and _end in this kernel, for its slot size. */
static unsigned long bench_template_entry, bench_template_end;

/* A coverage pass of one mechanism, "kprobe" or "okprobe". */
struct bench_pass {
	const char *kind;		/* kprobe, okprobe or okprobe-many */
	int size;			/* the first size sites of the sample */
	int registered, moved, optimized, ftrace;
	char errors[160];		/* the module's "-errno:count,..." */
	long long register_ms, optimized_ms, unoptimize_ms, unregister_ms;
	long long requeue_ms;		/* the sysctl write of 1 with all unoptimized */
	int optimizer_done;		/* nothing left waiting in time */
	char steps[512];		/* okprobe: writer_steps' ns during the pass */
	long hits, missed;
	int text_changed;		/* sites not as before, after the pass */
	/*
	 * make check's scale suite: an optimizer not done within
	 * BENCH_COVERAGE_WAIT_MS fails the pass (make bench notes it).
	 */
	int strict;
	/*
	 * make bench's okprobe passes: with the pass optimized, one more
	 * probe (bench_one_more); what it cost: its unregistration and
	 * registration, the wait for its jump, and from writer_steps the
	 * optimizer's passes for it (optimizer_begin + _finish), their
	 * number, and their jump writes (optimize).
	 */
	int one_more;
	int profile;			/* under perf record (bench_profile) */
	int again_done;			/* its jump in within the wait */
	long long again_unregister_ns, again_register_ns, again_wait_ms;
	unsigned long again_pass_ns, again_passes, again_optimize_ns;
};

/* Reasons for not optimizing, from okprobe/jumps, and how often. */
struct bench_reason {
	char why[160];
	int count;
};

static struct bench_reason bench_reasons[BENCH_MAX_REASONS];
static int bench_reason_count;
static long bench_detour_total, bench_detour_granules;
static int bench_detour_min, bench_detour_max;
/* kprobes/list and okprobe/jumps of a whole sample. */
static char bench_big_file[4 << 20];

static int bench_site_by_name(const void *a, const void *b)
{
	return strcmp(((const struct bench_site *)a)->name,
		      ((const struct bench_site *)b)->name);
}

/*
 * Functions left out of the sample: riscv's handle_break() is the kernel's
 * own ebreak handler, which 6.12's riscv kprobes do not blacklist. A
 * kernel kprobe at handle_break+0xc and any other one hit overflow the
 * stack through nested breakpoint traps (make bench ARCH=riscv, issue 35;
 * kprobe_events alone does it, testing.md; okprobe refuses the function).
 * The table says so.
 */
static const char *const bench_unguarded_trap_path[] = { "handle_break" };

static int bench_on_unguarded_trap_path(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bench_unguarded_trap_path); i++)
		if (!strcmp(name, bench_unguarded_trap_path[i]))
			return 1;
	return 0;
}

/* Reads the sample into bench_sites, sorted by name. */
static int bench_read_sites(void)
{
	FILE *file = fopen(BENCH_SITES, "re");
	char line[512], tag[16], *about;
	int left_out = 0, lr_sc = 0;

	CHECK(file, "cannot open %s", BENCH_SITES);
	bench_site_count = 0;
	while (fgets(line, sizeof(line), file)) {
		struct bench_site *site = &bench_sites[bench_site_count];

		if (!strncmp(line, BENCH_SITES_ABOUT, strlen(BENCH_SITES_ABOUT))) {
			about = line + strlen(BENCH_SITES_ABOUT);
			snprintf(bench_sites_about, sizeof(bench_sites_about),
				 "%.*s", (int)strcspn(about, "\n"), about);
		}
		tag[0] = '\0';
		if (line[0] == '#' || bench_site_count == BENCH_MAX_SITES ||
		    sscanf(line, "%255s %lx %15s", site->name, &site->offset,
			   tag) < 2)
			continue;
		if (bench_on_unguarded_trap_path(site->name)) {
			left_out++;
			continue;
		}
		/* The sampler's tag: riscv's lr, sc and what is between them. */
		if (!strcmp(tag, "lr-sc")) {
			lr_sc++;
			continue;
		}
		site->address = 0;
		bench_site_count++;
	}
	fclose(file);
	if (left_out)
		say("# coverage: left out %d sites in the kernel's own breakpoint handler (handle_break: its kprobes take them, and nested traps there overflowed the stack)",
		    left_out);
	if (lr_sc)
		say("# coverage: left out %d sites in LR/SC sequences: the kernel's kprobes take them, and the loop around one then never ends (the trap clears the reservation, the sc fails on every retry: uart_write+0x38 hung riscv-preempt's console); okprobe refuses them",
		    lr_sc);
	CHECK(bench_site_count > 0, "no sites in %s", BENCH_SITES);
	qsort(bench_sites, bench_site_count, sizeof(*bench_sites),
	      bench_site_by_name);
	return 0;
}

/*
 * Resolves every site through /proc/kallsyms in one pass (core-kernel text
 * symbols only: the sampler chose names no other symbol has); also finds
 * the kernel's optprobe template. Returns how many sites resolved.
 */
static int bench_resolve_sites(void)
{
	FILE *kallsyms = fopen("/proc/kallsyms", "re");
	char line[512], type, module[2];
	struct bench_site key, *found;
	unsigned long address;
	int resolved = 0, i;

	if (!kallsyms)
		return 0;
	while (fgets(line, sizeof(line), kallsyms)) {
		int fields = sscanf(line, "%lx %c %255s %1s", &address, &type,
				    key.name, module);

		if (fields == 3 && !strcmp(key.name, "optprobe_template_entry"))
			bench_template_entry = address;
		if (fields == 3 && !strcmp(key.name, "optprobe_template_end"))
			bench_template_end = address;
		if (fields != 3 || (type != 't' && type != 'T'))
			continue;
		found = bsearch(&key, bench_sites, bench_site_count,
				sizeof(*bench_sites), bench_site_by_name);
		if (!found)
			continue;
		/* Every site in that function: they are next to each other. */
		while (found > bench_sites && !strcmp(found[-1].name, key.name))
			found--;
		for (; found < bench_sites + bench_site_count &&
		       !strcmp(found->name, key.name); found++)
			found->address = address + found->offset;
	}
	fclose(kallsyms);
	for (i = 0; i < bench_site_count; i++)
		resolved += bench_sites[i].address != 0;
	return resolved;
}

/*
 * riscv: leaves out the sites in functions okprobe found on the trap exit
 * after sscratch is set (its blacklist, "trap exit"), and in the trap
 * entry (handle_exception ... __switch_to, "riscv entry code"). riscv
 * 6.1's own kprobes are not kept out of them and crash the kernel there:
 * a probe in __module_text_address, reached by the trap's stack walk,
 * recurses; one at _save_context+0x0, where every trap enters, traps
 * there for ever (make bench KERNEL=riscv-preempt, issue 35: both CPUs
 * stopped in patch_text_cb, one trapping at _save_context). Returns how
 * many sites it left out.
 */
static int bench_leave_out_trap_path(void)
{
	unsigned long start, end;
	int left_out = 0, i;
	char *line;

	if (IS_X86 || read_file(DEBUGFS_DIR "/blacklist", bench_big_file,
				sizeof(bench_big_file)))
		return 0;
	for (line = strtok(bench_big_file, "\n"); line;
	     line = strtok(NULL, "\n")) {
		if ((!strstr(line, "trap exit") &&
		     !strstr(line, "riscv entry code")) ||
		    sscanf(line, "0x%lx-0x%lx", &start, &end) != 2)
			continue;
		for (i = 0; i < bench_site_count; i++) {
			if (bench_sites[i].address >= start &&
			    bench_sites[i].address < end) {
				bench_sites[i].address = 0;
				left_out++;
			}
		}
	}
	return left_out;
}

/* Hands the resolved sites to okprobe_bench.ko. */
static int bench_send_sites(void)
{
	char command[64], reply[64];
	int i, ret;

	for (i = 0; i < bench_site_count; i++) {
		if (!bench_sites[i].address)
			continue;
		snprintf(command, sizeof(command), "site %lx",
			 bench_sites[i].address);
		ret = bench_command(command, reply, sizeof(reply));
		CHECK(ret == 0, "%s (%s+0x%lx): %s", command,
		      bench_sites[i].name, bench_sites[i].offset,
		      strerror(-ret));
	}
	return 0;
}

static int bench_count(const char *text, const char *needle)
{
	int count = 0;

	for (text = strstr(text, needle); text;
	     text = strstr(text + 1, needle))
		count++;
	return count;
}

/*
 * okprobe/jumps lines in state ("waiting", "optimized"): the state word
 * after two spaces and before a space, a colon or the line's end, so that
 * a symbol such as waiting_for_supplier_show is not counted.
 */
static int bench_count_state(const char *text, const char *state)
{
	size_t length = strlen(state);
	const char *at;
	int count = 0;

	for (at = strstr(text, "  "); at; at = strstr(at + 1, "  ")) {
		if (strncmp(at + 2, state, length))
			continue;
		if (at[2 + length] == ' ' || at[2 + length] == ':' ||
		    at[2 + length] == '\n' || at[2 + length] == '\0')
			count++;
	}
	return count;
}

/* The module's cover-state: jumps in the text, changed sites, hits. */
static int bench_cover_state(int *jumps, int *changed, long *hits,
			     long *missed, int *optimized)
{
	char reply[256];
	int ret = bench_command("cover-state", reply, sizeof(reply));

	CHECK(ret == 0, "cover-state: %s", strerror(-ret));
	CHECK(sscanf(reply, "cover-state jumps=%d changed=%d hits=%ld missed=%ld optimized=%d",
		     jumps, changed, hits, missed, optimized) == 5,
	      "cover-state replied '%s'", reply);
	return 0;
}

/* Registers the sites with pass->kind; fills registered, moved, errors. */
static int bench_cover(struct bench_pass *pass)
{
	unsigned long long ns;
	char command[64], reply[256];
	int sites, ret;

	snprintf(command, sizeof(command), "cover %s %d", pass->kind,
		 pass->size);
	ret = bench_command(command, reply, sizeof(reply));
	CHECK(ret == 0, "%s: %s", command, strerror(-ret));
	pass->errors[0] = '\0';
	CHECK(sscanf(reply, "%*s %*s sites=%d registered=%d ns=%llu moved=%d errors=%159s",
		     &sites, &pass->registered, &ns, &pass->moved,
		     pass->errors) >= 4,
	      "%s replied '%s'", command, reply);
	pass->register_ms = ns / 1000000;
	return 0;
}

/*
 * Polls until the optimizer of pass->kind is done with the sample: for the
 * kernel, every kprobe that kprobes/list shows [OPTIMIZED] (queued) has its
 * jmp in the text; for okprobe, no site in okprobe/jumps is "waiting".
 *
 * The list is read only when the jumps in the text (cover-state, which
 * takes none of their locks) have stayed the same over a poll, and again
 * only when they changed since or BENCH_LIST_POLL_MS passed: its reader
 * holds the mutex the optimizer works under (okp_probe_mutex,
 * kprobe_mutex), and at 10,000 probes a read is tens of milliseconds under
 * QEMU, so reading it while jumps go in would time the reader as much as
 * the optimizer.
 */
#define BENCH_LIST_POLL_MS 200
static int bench_wait_for_optimizer(struct bench_pass *pass, long long start)
{
	int kernel = !strcmp(pass->kind, "kprobe");
	int jumps = 0, changed, flagged = 0, waiting = 0;
	int last_jumps = -1, read_jumps = -1;
	long long deadline = start + BENCH_COVERAGE_WAIT_MS, read_ms = 0;

	for (;;) {
		long long now = now_ms();
		int settled;

		STEP(bench_cover_state(&jumps, &changed, &pass->hits,
				       &pass->missed, &flagged));
		settled = jumps == last_jumps;
		last_jumps = jumps;
		if (now <= deadline &&
		    (!settled || (jumps == read_jumps &&
				  now - read_ms < BENCH_LIST_POLL_MS))) {
			usleep(20000);
			continue;
		}
		read_file(kernel ? KPROBES_LIST : DEBUGFS_DIR "/jumps",
			  bench_big_file, sizeof(bench_big_file));
		read_ms = now;
		/* The text as the list saw it, or later: read after it. */
		STEP(bench_cover_state(&jumps, &changed, &pass->hits,
				       &pass->missed, &flagged));
		last_jumps = read_jumps = jumps;
		if (kernel) {
			pass->optimized = bench_count(bench_big_file,
						      "[OPTIMIZED]");
			pass->ftrace = bench_count(bench_big_file, "[FTRACE]");
			pass->optimizer_done = jumps == pass->optimized;
		} else {
			waiting = bench_count_state(bench_big_file, "waiting");
			pass->optimized = bench_count_state(bench_big_file,
							    "optimized");
			pass->ftrace = bench_count_state(bench_big_file,
							 "ftrace");
			pass->optimizer_done = !waiting;
		}
		if (pass->optimizer_done || now_ms() > deadline)
			break;
		usleep(20000);
	}
	pass->optimized_ms = now_ms() - start;
	if (!pass->optimizer_done)
		say("# coverage: note: the %s optimizer was not done after %d s: %d jumps in the text, %d %s",
		    pass->kind, BENCH_COVERAGE_WAIT_MS / 1000, jumps,
		    kernel ? pass->optimized : waiting,
		    kernel ? "[OPTIMIZED] in kprobes/list" : "sites waiting");
	CHECK(!pass->strict || pass->optimizer_done,
	      "the %s optimizer was not done within its %d s deadline",
	      pass->kind, BENCH_COVERAGE_WAIT_MS / 1000);
	/* okprobe's three views of its jumps must agree. */
	CHECK(kernel || !pass->optimizer_done ||
	      (jumps == pass->optimized && flagged == pass->optimized),
	      "okprobe/jumps shows %d optimized, %d probes have OKPROBE_FLAG_OPTIMIZED, %d jumps are in the text",
	      pass->optimized, flagged, jumps);
	return 0;
}

/* Groups okprobe/jumps (in bench_big_file): detour sizes, refusals. */
static void bench_tally_jumps(void)
{
	char *line, *state, *why, *detour;
	int i, size;

	bench_reason_count = 0;
	bench_detour_total = bench_detour_granules = 0;
	bench_detour_min = bench_detour_max = 0;
	for (line = strtok(bench_big_file, "\n"); line;
	     line = strtok(NULL, "\n")) {
		/* "0xADDR  symbol+0xoff/0xsize  STATE[ region=N][ detour=N][: why]" */
		state = strstr(line, "  ");
		state = state ? strstr(state + 2, "  ") : NULL;
		if (!state)
			continue;
		state += 2;
		detour = strstr(state, " detour=");
		if (!strncmp(state, "optimized", 9) && detour) {
			size = atoi(detour + 8);
			bench_detour_total += size;
			bench_detour_granules += (size + 15) / 16;
			if (!bench_detour_min || size < bench_detour_min)
				bench_detour_min = size;
			if (size > bench_detour_max)
				bench_detour_max = size;
		}
		why = strstr(state, ": ");
		if (strncmp(state, "breakpoint", 10) || !why)
			continue;
		why += 2;
		for (i = 0; i < bench_reason_count &&
		     strcmp(bench_reasons[i].why, why); i++)
			;
		if (i == bench_reason_count) {
			if (i == BENCH_MAX_REASONS)
				continue;
			snprintf(bench_reasons[i].why,
				 sizeof(bench_reasons[i].why), "%s", why);
			bench_reasons[i].count = 0;
			bench_reason_count++;
		}
		bench_reasons[i].count++;
	}
}

/*
 * Waits up to BENCH_RESTORE_WAIT_MS for every site okprobe_bench.ko holds
 * to have its text as before; *changed: the sites whose text is not.
 * after names what they were restored after, for the failure.
 */
static int bench_text_restored(const char *after, int *changed)
{
	long long deadline = now_ms() + BENCH_RESTORE_WAIT_MS;
	int jumps, flagged;
	long hits, missed;

	for (;;) {
		STEP(bench_cover_state(&jumps, changed, &hits, &missed,
				       &flagged));
		if (!*changed || now_ms() > deadline)
			break;
		usleep(50000);
	}
	/* A text not restored byte for byte breaks the run, bench or check. */
	CHECK(!*changed, "after %s %d sites' text is not what it was before",
	      after, *changed);
	return 0;
}

/* Waits for every site's text to be what it was before the pass. */
static int bench_wait_restored(struct bench_pass *pass)
{
	char after[64];

	snprintf(after, sizeof(after), "the %s pass", pass->kind);
	return bench_text_restored(after, &pass->text_changed);
}

#define WRITER_STEPS DEBUGFS_DIR "/writer_steps"
#define MAX_WRITER_STEPS 16

struct writer_steps {
	int count;
	char name[MAX_WRITER_STEPS][24];
	unsigned long times[MAX_WRITER_STEPS], ns[MAX_WRITER_STEPS];
};

/* okprobe/writer_steps: each step's times and nanoseconds since load. */
static int read_writer_steps(struct writer_steps *steps)
{
	static char text[4096];
	char *line, *save = NULL;

	steps->count = 0;
	if (read_file(WRITER_STEPS, text, sizeof(text)) < 0)
		return -1;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		int i = steps->count;

		if (i == MAX_WRITER_STEPS)
			break;
		if (sscanf(line, "%23s %lu %lu", steps->name[i],
			   &steps->times[i], &steps->ns[i]) == 3)
			steps->count++;
	}
	return steps->count ? 0 : -1;
}

/* "step=ns ..." of what the pass added to each step. */
static void writer_steps_delta(const struct writer_steps *before,
			       const struct writer_steps *after, char *out,
			       size_t size)
{
	size_t used = 0;
	int i;

	out[0] = '\0';
	for (i = 0; i < after->count && i < before->count && used < size; i++)
		used += snprintf(out + used, size - used, "%s%s=%lu",
				 i ? " " : "", after->name[i],
				 after->ns[i] - before->ns[i]);
}

/* The ns and times step added between two readings of writer_steps. */
static void writer_step_delta(const struct writer_steps *before,
			      const struct writer_steps *after,
			      const char *step, unsigned long *ns,
			      unsigned long *times)
{
	int i;

	*ns = *times = 0;
	for (i = 0; i < after->count && i < before->count; i++) {
		if (strcmp(after->name[i], step))
			continue;
		*ns = after->ns[i] - before->ns[i];
		*times = after->times[i] - before->times[i];
	}
}

/*
 * Where a pass is, on the console: a guest that hangs names the step, and
 * the long ones keep the console from a silence the runner would take
 * for a hang.
 */
static void bench_say_step(const struct bench_pass *pass, const char *step)
{
	say("# pass: %s %d: %s", pass->kind, pass->size, step);
}

/* The sysctl a pass's kind switches and its last written value, or NULL. */
static const char *bench_pass_sysctl(const struct bench_pass *pass,
				     char **last)
{
	int kernel = !strcmp(pass->kind, "kprobe");

	*last = kernel ? bench_kernel_optimization : bench_okprobe_optimization;
	/* Without optprobes (riscv 6.1) the kernel has no such sysctl. */
	if (kernel && !exists(KERNEL_OPTIMIZATION))
		return NULL;
	return kernel ? KERNEL_OPTIMIZATION : SYSCTL_OPTIMIZATION;
}

/*
 * A pass's first half: turn the mechanism's optimization on, register
 * every site, wait for its optimizer, count.
 */
static int bench_pass_register(struct bench_pass *pass)
{
	int kernel = !strcmp(pass->kind, "kprobe");
	char *last;
	const char *sysctl = bench_pass_sysctl(pass, &last);
	struct writer_steps steps_before, steps_after;
	int timed = !kernel && read_writer_steps(&steps_before) == 0;
	long long start;
	int ret;

	ret = sysctl ? bench_set_sysctl(sysctl, last, "1") : 0;
	CHECK(ret == 0, "writing 1 to %s: %s", sysctl, strerror(-ret));
	bench_say_step(pass, "registering");
	start = now_ms();
	STEP(bench_cover(pass));
	bench_say_step(pass, "waiting for the optimizer");
	STEP(bench_wait_for_optimizer(pass, start));
	/* Where registering and optimizing the sites spent its time. */
	if (timed && read_writer_steps(&steps_after) == 0)
		writer_steps_delta(&steps_before, &steps_after, pass->steps,
				   sizeof(pass->steps));
	if (!strcmp(pass->kind, "okprobe"))
		bench_tally_jumps();
	return 0;
}

/*
 * make bench's one more probe: with the pass's sites optimized, one of its
 * probes unregistered and registered again (okprobe_bench.ko's
 * cover-again: the same site for every N), then the optimizer's pass that
 * puts its jump in. The writer's time for that pass (okprobe/writer_steps
 * around it) stays flat across N when a pass touches only the sites queued
 * for it, not the ones already optimized.
 */
static int bench_one_more(struct bench_pass *pass)
{
	struct writer_steps before, after;
	unsigned long begin_ns, finish_ns, times;
	int jumps, changed, optimized, now_optimized, site, registered, ret;
	long long start;
	long hits, missed;
	char reply[256];

	STEP(bench_cover_state(&jumps, &changed, &hits, &missed, &optimized));
	CHECK(read_writer_steps(&before) == 0, "cannot read %s", WRITER_STEPS);
	bench_say_step(pass, "one more probe");
	ret = bench_command("cover-again", reply, sizeof(reply));
	if (ret == -ENOENT) {
		say("# coverage: note: the %s pass of %d has no optimized probe for one more",
		    pass->kind, pass->size);
		return 0;
	}
	CHECK(ret == 0, "cover-again: %s", strerror(-ret));
	CHECK(sscanf(reply, "cover-again site=%d unregister_ns=%lld register_ns=%lld ret=%d",
		     &site, &pass->again_unregister_ns,
		     &pass->again_register_ns, &registered) == 4,
	      "cover-again replied '%s'", reply);
	CHECK(registered == 0, "registering site %d again: %s", site,
	      strerror(-registered));
	start = now_ms();
	for (;;) {
		STEP(bench_cover_state(&jumps, &changed, &hits, &missed,
				       &now_optimized));
		pass->again_done = now_optimized >= optimized;
		if (pass->again_done ||
		    now_ms() > start + BENCH_OPTIMIZER_WAIT_MS)
			break;
		usleep(10000);
	}
	pass->again_wait_ms = now_ms() - start;
	if (!pass->again_done)
		say("# coverage: note: one more probe after the %s pass of %d was not optimized after %d s",
		    pass->kind, pass->size, BENCH_OPTIMIZER_WAIT_MS / 1000);
	CHECK(read_writer_steps(&after) == 0, "cannot read %s", WRITER_STEPS);
	writer_step_delta(&before, &after, "optimizer_begin", &begin_ns,
			  &pass->again_passes);
	writer_step_delta(&before, &after, "optimizer_finish", &finish_ns,
			  &times);
	writer_step_delta(&before, &after, "optimize",
			  &pass->again_optimize_ns, &times);
	pass->again_pass_ns = begin_ns + finish_ns;
	return 0;
}

/*
 * Its second half: turn optimization off (both sysctls unoptimize
 * synchronously), unregister everything.
 */
static int bench_pass_unregister(struct bench_pass *pass)
{
	int kernel = !strcmp(pass->kind, "kprobe");
	char *last;
	const char *sysctl = bench_pass_sysctl(pass, &last);
	char reply[256];
	unsigned long long ns;
	long long start;
	int ret;

	bench_say_step(pass, "unoptimizing");
	start = now_ms();
	ret = sysctl ? bench_set_sysctl(sysctl, last, "0") : 0;
	pass->unoptimize_ms = now_ms() - start;
	CHECK(ret == 0, "writing 0 to %s: %s", sysctl, strerror(-ret));
	/*
	 * okprobe's write of 1 only queues the sites for the optimizer; how
	 * long it takes to return, then every jump out again before the
	 * unregistration is timed.
	 */
	if (!kernel && sysctl) {
		bench_say_step(pass, "optimization on and off again");
		start = now_ms();
		ret = bench_set_sysctl(sysctl, last, "1");
		pass->requeue_ms = now_ms() - start;
		CHECK(ret == 0, "writing 1 to %s: %s", sysctl, strerror(-ret));
		ret = bench_set_sysctl(sysctl, last, "0");
		CHECK(ret == 0, "writing 0 to %s: %s", sysctl, strerror(-ret));
	}
	/*
	 * The detours the writes of 0 withdrew are freed by the optimizer
	 * after a grace period, under the probe mutex: let it finish, so the
	 * unregistration is timed alone.
	 */
	sleep(1);
	bench_say_step(pass, "unregistering");
	ret = bench_command("uncover", reply, sizeof(reply));
	CHECK(ret == 0, "uncover: %s", strerror(-ret));
	CHECK(sscanf(reply, "uncover %*s unregistered=%*d ns=%llu", &ns) == 1,
	      "uncover replied '%s'", reply);
	pass->unregister_ms = ns / 1000000;
	return 0;
}

/* okptest_userland.c's, included after this file. */
static int userland_mount(void);
static pid_t userland_start(char *const argv[]);
static int userland_run(char *const argv[], int seconds, char *output,
			size_t size);

#define BENCH_PERF_DATA "/tmp/okptest-bench.perf"

/*
 * make bench --profile KIND (bench_profile=KIND): Debian's perf, from the
 * guest's userland disk, samples every CPU (with call chains) while the
 * largest pass of KIND registers its probes and its optimizer puts the
 * jumps in. What the writer's steps do not show: the kernel's functions
 * under them, and everything else the guest ran meanwhile. Returns perf's
 * pid, or 0 where there is no userland disk (the kernels built here).
 */
static pid_t bench_profile_start(void)
{
	char *const argv[] = { "/usr/bin/perf", "record", "-a", "-g", "-F", "4000",
			 "-o", BENCH_PERF_DATA, NULL };
	long long deadline = now_ms() + 60000;
	pid_t perf;

	if (!exists(USERLAND_MODULES) || userland_mount()) {
		say("# perf: no Debian userland disk in this guest: no profile");
		return 0;
	}
	perf = userland_start(argv);
	/* Under QEMU perf takes seconds to open its events. */
	while (perf > 0 && !exists(USERLAND BENCH_PERF_DATA) &&
	       now_ms() < deadline)
		usleep(100000);
	sleep(1);
	return perf > 0 ? perf : 0;
}

/*
 * Stops perf and prints its report as "# perf: " lines: the symbols by
 * their own samples, then by their samples with what they called.
 */
static void bench_profile_report(pid_t perf)
{
	static char report[65536];
	static const char *const views[][2] = {
		{ "--no-children", "0.5" },
		{ "--children", "2" },
	};
	char *line;
	size_t i;

	kill(perf, SIGINT);
	waitpid(perf, NULL, 0);
	for (i = 0; i < ARRAY_SIZE(views); i++) {
		/* Its C++ names stay mangled: tools/bench demangles them. */
		char *const argv[] = { "/usr/bin/perf", "report", "--stdio",
				 "-i", BENCH_PERF_DATA, (char *)views[i][0],
				 "--sort", "sym", "-g", "none",
				 "--percent-limit", (char *)views[i][1], NULL };

		say("# perf: perf report %s --sort sym --percent-limit %s",
		    views[i][0], views[i][1]);
		userland_run(argv, 600, report, sizeof(report));
		for (line = strtok(report, "\n"); line;
		     line = strtok(NULL, "\n"))
			if (line[0] != '#' && line[strspn(line, " ")])
				say("# perf: %s", line);
	}
}

/*
 * One pass: register every site, wait for the optimizer, count,
 * unregister everything, and every site's text is what it was.
 */
static int bench_coverage_pass(struct bench_pass *pass)
{
	pid_t perf = pass->profile ? bench_profile_start() : 0;
	int ret = bench_pass_register(pass);

	if (perf)
		bench_profile_report(perf);
	if (ret)
		return ret;
	if (pass->one_more && pass->optimizer_done)
		STEP(bench_one_more(pass));
	STEP(bench_pass_unregister(pass));
	return bench_wait_restored(pass);
}

/*
 * The next "error:count" of a pass's refusals ("-1:100,-16:88"); moves
 * *errors past it. Returns 0 at the end.
 */
static int next_refusal(const char **errors, int *error, int *count)
{
	int length;

	if (sscanf(*errors, "%d:%d%n", error, count, &length) != 2)
		return 0;
	*errors += length + ((*errors)[length] == ',');
	return 1;
}

/* How many of a pass's refusals ("-1:100,-16:88") were -errno_value. */
static int refusals_of(const char *errors, int errno_value)
{
	int error, count;

	while (next_refusal(&errors, &error, &count))
		if (error == -errno_value)
			return count;
	return 0;
}

/*
 * Failures by errno (negative, as the kernel returns them), in the order
 * first seen, and how many of each: okprobe_bench.ko's passes report up
 * to 16 distinct ones (OKP_BENCH_MAX_ERRORS); any past that are "other".
 */
#define ERRNO_TALLY_MAX 16

struct errno_tally {
	int errnos[ERRNO_TALLY_MAX], counts[ERRNO_TALLY_MAX], distinct;
	int other;
};

static void errno_tally_add(struct errno_tally *tally, int error, int count)
{
	int i;

	for (i = 0; i < tally->distinct && tally->errnos[i] != error; i++)
		;
	if (i == ERRNO_TALLY_MAX) {
		tally->other += count;
		return;
	}
	if (i == tally->distinct) {
		tally->errnos[i] = error;
		tally->counts[i] = 0;
		tally->distinct++;
	}
	tally->counts[i] += count;
}

/* How many of the tally were error. */
static int errno_tally_count(const struct errno_tally *tally, int error)
{
	int i;

	for (i = 0; i < tally->distinct; i++)
		if (tally->errnos[i] == error)
			return tally->counts[i];
	return 0;
}

/*
 * The tally as text, "NAME<pair>COUNT" joined by separator ("EBUSY:3,EPERM:2"
 * or "EBUSY 3, EPERM 2"), or "none".
 */
static void errno_tally_text(const struct errno_tally *tally, const char *pair,
			     const char *separator, char *out, size_t size)
{
	size_t used = 0;
	int i;

	out[0] = '\0';
	for (i = 0; i < tally->distinct && used < size; i++) {
		const char *name = strerrorname_np(-tally->errnos[i]);

		used += snprintf(out + used, size - used, "%s%s%s%d",
				 i ? separator : "", name ? name : "?", pair,
				 tally->counts[i]);
	}
	if (tally->other && used < size)
		snprintf(out + used, size - used, "%sother%s%d",
			 used ? separator : "", pair, tally->other);
	if (!out[0])
		snprintf(out, size, "none");
}

/* A pass's refusals ("-1:100,-16:88") as a tally. */
static void errno_tally_of(struct errno_tally *tally, const char *errors)
{
	int error, count;

	memset(tally, 0, sizeof(*tally));
	while (next_refusal(&errors, &error, &count))
		errno_tally_add(tally, error, count);
}

/* "-1:100,-16:88" -> "EPERM 100, EBUSY 88" */
static void bench_say_errors(const char *label, const char *errors)
{
	struct errno_tally tally;
	char out[512];

	errno_tally_of(&tally, errors);
	errno_tally_text(&tally, " ", ", ", out, sizeof(out));
	say("# coverage: %s refused: %s", label, out);
}

static int bench_reason_order(const void *a, const void *b)
{
	return ((const struct bench_reason *)b)->count -
	       ((const struct bench_reason *)a)->count;
}

static void bench_print_coverage(const struct bench_pass *k,
				 const struct bench_pass *o, int resolved)
{
	long optimized = o->optimized;
	int i;

	say("# coverage: sample: %s", bench_sites_about);
	say("# coverage: %d of %d resolved in /proc/kallsyms; one probe per site, a pre_handler that counts, registered by address one by one",
	    resolved, bench_site_count);
	say("# coverage: %-44s %14s %10s", "", "kernel kprobes", "okprobe");
	say("# coverage: %-44s %14d %10d", "registered", k->registered,
	    o->registered);
	say("# coverage: %-44s %14d %10d", "optimized (a jmp in the text)",
	    k->optimized, o->optimized);
	say("# coverage: %-44s %14d %10d", "on an ftrace site ([FTRACE], no int3)",
	    k->ftrace, o->ftrace);
	say("# coverage: %-44s %14lld %10lld", "ms to register, one by one",
	    k->register_ms, o->register_ms);
	say("# coverage: %-44s %14lld %10lld",
	    "ms from the first register to optimizer done", k->optimized_ms,
	    o->optimized_ms);
	say("# coverage: %-44s %14lld %10lld",
	    "ms to unoptimize all (sysctl to 0)", k->unoptimize_ms,
	    o->unoptimize_ms);
	say("# coverage: %-44s %14lld %10lld", "ms to unregister all (batch)",
	    k->unregister_ms, o->unregister_ms);
	say("# coverage: %-44s %14ld %10ld", "hits while registered",
	    k->hits, o->hits);
	say("# coverage: %-44s %14ld %10ld", "missed (a handler was running)",
	    k->missed, o->missed);
	bench_say_errors("kernel kprobes", k->errors);
	bench_say_errors("okprobe", o->errors);
	qsort(bench_reasons, bench_reason_count, sizeof(*bench_reasons),
	      bench_reason_order);
	say("# coverage: okprobe registered but not optimized, by reason (okprobe/jumps):");
	for (i = 0; i < bench_reason_count; i++)
		say("# coverage: %6d  %s", bench_reasons[i].count,
		    bench_reasons[i].why);
	if (optimized)
		say("# coverage: okprobe detour per optimized probe: mean %.1f bytes (min %d, max %d); %.1f allocated in 16-byte granules",
		    (double)bench_detour_total / optimized, bench_detour_min,
		    bench_detour_max, 16.0 * bench_detour_granules / optimized);
	if (bench_template_entry && bench_template_end > bench_template_entry)
		say("# coverage: kernel optprobe slot per optimized probe: %lu bytes = MAX_OPTINSN_SIZE: optprobe_template_end - optprobe_template_entry (%lu, this kernel's /proc/kallsyms) + MAX_OPTIMIZED_LENGTH (16 + 4) + JMP32_INSN_SIZE (5)",
		    bench_template_end - bench_template_entry + 25,
		    bench_template_end - bench_template_entry);
	tcdrain(1);
}

/*
 * Reads the sample, resolves it, leaves out riscv's trap exit and hands
 * the rest to okprobe_bench.ko; *resolved: how many sites it has.
 */
static int bench_prepare_sample(int *resolved)
{
	unsigned char byte;
	int left_out;

	STEP(bench_read_sites());
	*resolved = bench_resolve_sites();
	CHECK(*resolved > 0, "no site resolved in /proc/kallsyms");
	left_out = bench_leave_out_trap_path();
	if (left_out)
		say("# coverage: note: %d sites left out, in functions okprobe refuses on riscv's trap entry and exit: riscv 6.1's kprobes crash there",
		    left_out);
	*resolved -= left_out;
	/*
	 * The crng's first seeding flips a static key, rewriting jump labels
	 * in some sites' windows: a blocking getrandom() has it happen now
	 * (the riscv guests, without an entropy source, seeded it minutes in,
	 * in the middle of a pass), not while a pass's text is compared.
	 */
	CHECK(getrandom(&byte, 1, 0) == 1, "getrandom: %s", strerror(errno));
	return bench_send_sites();
}

/*
 * Whether the comma-separated list in the environment variable (a kernel
 * argument) names name; a list not given names everything.
 */
static int bench_env_names(const char *variable, const char *name)
{
	const char *list = getenv(variable);
	size_t length = strlen(name);
	const char *at;

	if (!list || !*list)
		return 1;
	for (at = list; (at = strstr(at, name)); at += length)
		if ((at == list || at[-1] == ',') &&
		    (at[length] == ',' || !at[length]))
			return 1;
	return 0;
}

/*
 * Whether the scale passes include kind: all of them, unless bench_kinds
 * (tools/bench --kinds) names some, e.g. "okprobe,okprobe-many".
 */
static int bench_runs_kind(const char *kind)
{
	return bench_env_names("bench_kinds", kind);
}

/*
 * Whether the bench runs its step named step (hits, bpf, scale,
 * cover-arm, cover-workload): all of them, unless bench_steps
 * (tools/bench --steps) names some.
 */
static int bench_runs_step(const char *step)
{
	return bench_env_names("bench_steps", step);
}

/* Whether the pass of kind over size sites runs under perf (bench_profile). */
static int bench_profiles(const char *kind, int size, int resolved)
{
	const char *profiled = getenv("bench_profile");

	return profiled && !strcmp(profiled, kind) && size == resolved;
}

/* The sample sizes of the scale table (make bench's build/bench/scale.svg). */
static const int bench_scale_sizes[] = { 100, 1000, 10000 };

static void bench_say_scale(const struct bench_pass *pass)
{
	say("# scale: size=%d kind=%s registered=%d optimized=%d register_ms=%lld optimized_ms=%lld unoptimize_ms=%lld requeue_ms=%lld unregister_ms=%lld done=%d",
	    pass->size, pass->kind, pass->registered, pass->optimized,
	    pass->register_ms, pass->optimized_ms, pass->unoptimize_ms,
	    pass->requeue_ms, pass->unregister_ms, pass->optimizer_done);
	if (pass->steps[0])
		say("# steps: size=%d kind=%s registered=%d %s", pass->size,
		    pass->kind, pass->registered, pass->steps);
	if (pass->again_register_ns)
		say("# one-more: size=%d kind=%s optimized=%d unregister_ns=%lld register_ns=%lld wait_ms=%lld passes=%lu pass_ns=%lu optimize_ns=%lu done=%d",
		    pass->size, pass->kind, pass->optimized,
		    pass->again_unregister_ns, pass->again_register_ns,
		    pass->again_wait_ms, pass->again_passes,
		    pass->again_pass_ns, pass->again_optimize_ns,
		    pass->again_done);
}

/*
 * For each size of the scale table (the largest: the whole sample), the
 * first size sites: kernel kprobes one by one, okprobe one by one, then
 * okprobe_register_many() of the sites okprobe took. The coverage table
 * is the largest size's one-by-one passes.
 */
static int bench_coverage(void)
{
	struct bench_pass kernel, ours, many;
	int resolved, result = 0, i, size;

	if (!exists(BENCH_CONTROL))
		return skip("okprobe_bench.ko is not loaded");
	if (!exists(BENCH_SITES))
		return skip("no " BENCH_SITES " (tools/bench makes it)");
	STEP(bench_prepare_sample(&resolved));
	for (i = 0; i < (int)ARRAY_SIZE(bench_scale_sizes) && !result; i++) {
		size = bench_scale_sizes[i];
		if (size > resolved || i == (int)ARRAY_SIZE(bench_scale_sizes) - 1)
			size = resolved;
		kernel = (struct bench_pass){ .kind = "kprobe", .size = size };
		ours = (struct bench_pass){ .kind = "okprobe", .size = size,
					    .one_more = 1 };
		many = (struct bench_pass){ .kind = "okprobe-many",
					    .size = size, .one_more = 1 };
		kernel.profile = bench_profiles(kernel.kind, size, resolved);
		ours.profile = bench_profiles(ours.kind, size, resolved);
		many.profile = bench_profiles(many.kind, size, resolved);
		if (bench_runs_kind(kernel.kind))
			result = bench_coverage_pass(&kernel);
		if (!result && bench_runs_kind(ours.kind))
			result = bench_coverage_pass(&ours);
		if (!result && bench_runs_kind(many.kind))
			result = bench_coverage_pass(&many);
		if (!result) {
			if (bench_runs_kind(kernel.kind))
				bench_say_scale(&kernel);
			if (bench_runs_kind(ours.kind))
				bench_say_scale(&ours);
			if (bench_runs_kind(many.kind))
				bench_say_scale(&many);
		}
		if (size == resolved)
			break;
	}
	write_file(BENCH_CONTROL, "uncover");
	write_file(BENCH_CONTROL, "sites-clear");
	if (result)
		return result;
	bench_print_coverage(&kernel, &ours, resolved);
	return 0;
}
