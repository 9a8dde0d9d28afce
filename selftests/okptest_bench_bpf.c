// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part: make bench's BPF rows (issue 39). The same bpftrace
 * program -- a count and a map update with the probed function's first
 * argument -- on the same places of okprobe_bench.ko, attached each way a
 * bpftrace user can: kprobe:FUNC+OFF (the kernel's kprobe, optimized
 * where the kernel can), tracepoint: on an okprobe_events event at the
 * same place, and fentry: (a BPF trampoline) at a function's entry. The
 * places: in the middle of okp_bench_mid where both the kernel and
 * okprobe put a jump (x86 only: riscv has no optprobes), where only
 * okprobe does, and okp_bench_entry's entry.
 *
 * A row's sample: the target's calls timed with nothing attached, then
 * with the program attached (and its jump in, where there is one), the
 * program's count checked against the calls: ns per hit is the
 * difference. bpftrace starts once per sample (seconds under TCG), so
 * the rows take fewer rounds than the table of okptest_bench.c. Printed
 * as "# bpf: " lines for tools/bench, which puts them beside the same
 * rows' instructions per hit from its -icount boots. Needs Debian's
 * userland disk (tools/bench gives it to Debian's kernels); skips
 * without it.
 */

#define BPF_BENCH_GROUP "okpbpf"
#define BPF_BENCH_MAX_ROUNDS 5
/* How long bpftrace may take to attach, and a jump to go in. */
#define BPF_BENCH_ATTACH_MS 120000
#define BPF_BENCH_JUMP_MS 10000
#define ENABLED_FUNCTIONS TRACING "/enabled_functions"

/* The fetch argument of the first argument (a format string: %% is %). */
#ifdef __x86_64__
#define BPF_BENCH_ARG "%%di"
#else
#define BPF_BENCH_ARG "%%a0"
#endif

/*
 * A place of okprobe_bench.ko that the rows probe: the index-th of
 * okp_bench_mid's places (its "places" command says where), or (index 0)
 * a function's entry.
 */
struct bpf_bench_place {
	const char *function;	/* okprobe_bench.ko's target */
	int index;
	const char *what;	/* for the table */
	unsigned long offset;	/* found at run time */
};

static struct bpf_bench_place bpf_bench_places[] = {
#ifdef __x86_64__
	{ "okp_bench_mid", 1, "add $2: the kernel and okprobe optimize it", 0 },
	{ "okp_bench_mid", 2, "test; jz: only okprobe optimizes it", 0 },
#else
	{ "okp_bench_mid", 1, "addi: only okprobe optimizes it (no optprobes on riscv)", 0 },
#endif
	{ "okp_bench_entry", 0, "a C function's entry, its ftrace call site", 0 },
};

/* Each place's offset, from okprobe_bench.ko: 0 or a failure. */
static int bpf_bench_find_places(void)
{
	char reply[256], *field;
	int index = 0, ret;
	size_t i;

	ret = bench_command("places", reply, sizeof(reply));
	CHECK(ret == 0, "okprobe_bench.ko's places: %s", strerror(-ret));
	for (field = strtok(reply, "\n "); field; field = strtok(NULL, "\n "), index++)
		for (i = 0; i < ARRAY_SIZE(bpf_bench_places); i++)
			if (bpf_bench_places[i].index && bpf_bench_places[i].index == index &&
			    sscanf(field, "okp_bench_mid+0x%lx", &bpf_bench_places[i].offset) != 1)
				return fail("okprobe_bench.ko's places: '%s'", field);
	for (i = 0; i < ARRAY_SIZE(bpf_bench_places); i++)
		CHECK(!bpf_bench_places[i].index || bpf_bench_places[i].offset,
		      "okprobe_bench.ko gave no place %d", bpf_bench_places[i].index);
	return 0;
}

enum bpf_bench_way { BPF_BY_KPROBE, BPF_BY_OKPROBE, BPF_BY_FENTRY, BPF_WAYS };

static const char *const bpf_bench_labels[BPF_WAYS] = {
	"bpftrace kprobe:", "bpftrace tracepoint: on okprobe_events",
	"bpftrace fentry:",
};

struct bpf_bench_row {
	struct bpf_bench_place *place;
	enum bpf_bench_way way;
	double ns_per_call[BPF_BENCH_MAX_ROUNDS], ns_per_hit[BPF_BENCH_MAX_ROUNDS];
	int rounds;
	/* How the hits arrived: optimized, breakpoint, ftrace, trampoline. */
	char how[16];
	int jump_expected, jump_rounds;
	char refused[200];	/* bpftrace's error: not measured */
	int wrong_rounds;
	char wrong[160];
};

#define BPF_BENCH_ROWS (ARRAY_SIZE(bpf_bench_places) * BPF_WAYS)
static struct bpf_bench_row bpf_bench_rows[BPF_BENCH_ROWS];

static int bpf_bench_at_entry(const struct bpf_bench_row *row)
{
	return row->place->index == 0;
}

/* fentry: is for a function's entry, the others for every place. */
static int bpf_bench_applies(const struct bpf_bench_row *row)
{
	return row->way != BPF_BY_FENTRY || bpf_bench_at_entry(row);
}

/* row's program, in program (and its okprobe_events line in event). */
static void bpf_bench_program(const struct bpf_bench_row *row, char *program,
			      size_t size, char *event, size_t event_size)
{
	const char *function = row->place->function;
	unsigned long offset = row->place->offset;

	event[0] = '\0';
	switch (row->way) {
	case BPF_BY_KPROBE:
		snprintf(program, size,
			 "kprobe:%s+0x%lx { @hits = count(); @arg[cpu] = arg0; }",
			 function, offset);
		break;
	case BPF_BY_OKPROBE:
		snprintf(event, event_size, "p:" BPF_BENCH_GROUP "/hit %s+0x%lx arg=" BPF_BENCH_ARG ":u64",
			 function, offset);
		snprintf(program, size,
			 "tracepoint:" BPF_BENCH_GROUP ":hit { @hits = count(); @arg[cpu] = args.arg; }");
		break;
	default:
		snprintf(program, size,
			 "fentry:okprobe_bench:%s { @hits = count(); @arg[cpu] = args.value; }",
			 function);
		break;
	}
}

/*
 * The line that lists row's probe once bpftrace attached it (kprobes/list,
 * okprobe/jumps, enabled_functions for the trampoline), or "".
 */
static void bpf_bench_listed(const struct bpf_bench_row *row, char *line,
			     size_t size)
{
	static const char *const lists[BPF_WAYS] = {
		KPROBES_LIST, DEBUGFS_DIR "/jumps", ENABLED_FUNCTIONS
	};
	char needle[96];

	snprintf(needle, sizeof(needle), "%s%s", row->place->function,
		 row->way == BPF_BY_FENTRY ? "" : "+0x");
	line[0] = '\0';
	file_line(lists[row->way], needle, line, size);
}

/* What a listed line says of how the hits arrive. */
static const char *bpf_bench_how(const struct bpf_bench_row *row,
				 const char *line)
{
	if (row->way == BPF_BY_FENTRY)
		return "trampoline";
	if (strstr(line, "[FTRACE]") || strstr(line, " ftrace"))
		return "ftrace";
	if (strstr(line, "[OPTIMIZED]") || strstr(line, "  optimized "))
		return "optimized";
	return "breakpoint";
}

/* The first line of bpftrace's output that says ERROR, or its first. */
static void bpf_bench_error(const char *output, char *why, size_t size)
{
	const char *line = strstr(output, "ERROR") ? line_with(output, "ERROR") : output;

	snprintf(why, size, "%.*s", (int)strcspn(line, "\n"), line);
}

/*
 * Whether row's probe, listed in line, has its jump in the text: for a
 * kprobe, [OPTIMIZED] is set when the jump is queued, so okprobe_bench.ko
 * looks at the text too.
 */
static int bpf_bench_jumps(const struct bpf_bench_row *row, const char *line)
{
	char command[32], reply[64];

	if (strcmp(bpf_bench_how(row, line), "optimized"))
		return 0;
	if (row->way != BPF_BY_KPROBE)
		return 1;
	snprintf(command, sizeof(command), "jump-at 0x%lx", row->place->offset);
	return bench_command(command, reply, sizeof(reply)) == 0 &&
	       strstr(reply, "jump=1") != NULL;
}

/*
 * Whether bpftrace (pid) attached its program: it holds the perf event or
 * BPF link that attaches it (a kprobe's or tracepoint's, fentry:'s), and
 * it waits in its event loop, which it enters once every probe is
 * attached and enabled. okprobe_events' probe is listed from the event's
 * definition on, a kprobe from perf_event_open() on: neither says that
 * the program runs.
 */
static int bpf_bench_attached(pid_t pid)
{
	char path[64], wchan[64], target[64];
	struct dirent *entry;
	int attached = 0;
	ssize_t length;
	DIR *fds;

	snprintf(path, sizeof(path), "/proc/%d/wchan", pid);
	if (read_file(path, wchan, sizeof(wchan)) || !strstr(wchan, "epoll"))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	fds = opendir(path);
	while (fds && !attached && (entry = readdir(fds))) {
		length = readlinkat(dirfd(fds), entry->d_name, target, sizeof(target) - 1);
		if (length <= 0)
			continue;
		target[length] = '\0';
		attached = strstr(target, "[perf_event]") || strstr(target, "bpf_link");
	}
	if (fds)
		closedir(fds);
	return attached;
}

/*
 * Waits for bpftrace (child) to attach row's program and, where the probe
 * is to be optimized, for its jump: 0 (row->how says how it is probed, or
 * row->refused why bpftrace gave up) or a failure. A kprobe
 * the kernel did not queue for optimization at its registration never
 * will be: it gets a second to show [OPTIMIZED]; a jump a probe is
 * waiting for, BPF_BENCH_JUMP_MS; a probe that once did not jump is not
 * waited for again.
 */
static int bpf_bench_wait_attached(struct bpf_bench_row *row, pid_t child)
{
	long long started = now_ms(), jump_deadline = 0;
	char line[256], output[4096];
	int status, jumped = 0;

	for (;;) {
		if (waitpid(child, &status, WNOHANG) == child) {
			if (read_file(USERLAND_OUT, output, sizeof(output)))
				output[0] = '\0';
			bpf_bench_error(output, row->refused, sizeof(row->refused));
			if (!row->refused[0])
				snprintf(row->refused, sizeof(row->refused),
					 "bpftrace exited with %d", status);
			return 0;
		}
		if (!bpf_bench_attached(child))
			line[0] = '\0';
		else
			bpf_bench_listed(row, line, sizeof(line));
		if (line[0]) {
			const char *how = bpf_bench_how(row, line);

			snprintf(row->how, sizeof(row->how), "%s", how);
			jumped = bpf_bench_jumps(row, line);
			if (jumped || !row->jump_expected || strstr("ftrace trampoline", how) ||
			    strstr(line, "  breakpoint: "))
				break;
			if (!jump_deadline)
				jump_deadline = now_ms() +
					(row->way == BPF_BY_KPROBE && strcmp(how, "optimized") ?
					 1000 : BPF_BENCH_JUMP_MS);
			if (now_ms() > jump_deadline) {
				say("# bpf: note: %s+0x%lx, %s: no jump after %lld ms: %s",
				    row->place->function, row->place->offset,
				    bpf_bench_labels[row->way],
				    now_ms() - started, line);
				break;
			}
		}
		CHECK(now_ms() < started + BPF_BENCH_ATTACH_MS, "bpftrace did not attach %s within %d s",
		      bpf_bench_labels[row->way], BPF_BENCH_ATTACH_MS / 1000);
		usleep(20000);
	}
	if (!jumped) {
		row->jump_expected = 0;
		if (!strcmp(row->how, "optimized"))
			snprintf(row->how, sizeof(row->how), "queued");
	}
	return 0;
}

/* The calls of one run of the armed target: ns per call, or a failure. */
static int bpf_bench_run(unsigned long calls, double *ns_per_call)
{
	char command[32], reply[256];
	unsigned long got, bad;
	unsigned long long ns;
	int ret;

	snprintf(command, sizeof(command), "run %lu", calls);
	ret = bench_command(command, reply, sizeof(reply));
	CHECK(ret == 0, "%s: %s", command, strerror(-ret));
	CHECK(sscanf(reply, "%*s calls=%lu ns=%llu %*s %*s bad=%lu", &got, &ns, &bad) == 3 &&
	      got == calls && !bad, "run replied '%.*s'", (int)strcspn(reply, "\n"), reply);
	*ns_per_call = (double)ns / calls;
	return 0;
}

/*
 * One sample of row: the target unprobed, then under bpftrace's program;
 * the program must count every call. round < 0: a warm-up, not kept.
 */
static int bpf_bench_sample(struct bpf_bench_row *row, unsigned long calls, int round)
{
	static char output[8192];
	char program[256], event[160], command[64];
	char *const argv[] = { BPFTRACE, "-e", program, NULL };
	double unprobed, probed;
	long long hits;
	pid_t child;
	int ret, status, removed;

	bpf_bench_program(row, program, sizeof(program), event, sizeof(event));
	snprintf(command, sizeof(command), "arm none %s", row->place->function);
	ret = write_file(BENCH_CONTROL, command);
	CHECK(ret == 0, "%s: %s", command, strerror(-ret));
	ret = bpf_bench_run(calls, &unprobed);
	if (!ret && event[0]) {
		ret = write_file(OKPROBE_EVENTS, event);
		if (ret)
			ret = fail("defining %s: %s", event, strerror(-ret));
	}
	if (ret) {
		write_file(BENCH_CONTROL, "disarm");
		return ret;
	}
	child = userland_start(argv);
	ret = child > 0 ? bpf_bench_wait_attached(row, child) : fail("cannot start bpftrace");
	if (ret == 0 && !row->refused[0])
		ret = bpf_bench_run(calls, &probed);
	if (child > 0 && !row->refused[0]) {
		kill(child, SIGINT);
		status = wait_child(child, 120);
		if (read_file(USERLAND_OUT, output, sizeof(output)))
			output[0] = '\0';
		if (!ret && status)
			ret = fail("bpftrace exited with %d:\n%.600s\n(program: %s)", status,
				   output, program);
	}
	write_file(BENCH_CONTROL, "disarm");
	removed = event[0] ? write_file(OKPROBE_EVENTS, "-:" BPF_BENCH_GROUP "/hit") : 0;
	if (removed && !ret)
		ret = fail("removing the event after bpftrace: %s", strerror(-removed));
	if (ret || row->refused[0])
		return ret;
	hits = bpftrace_value(output, "@hits");
	say("# sample: round %d %s+0x%lx, %s (%s): %.2f ns/call unprobed, %.2f probed, %lld hits",
	    round, row->place->function, row->place->offset, bpf_bench_labels[row->way],
	    row->how, unprobed, probed, hits);
	if (round < 0)
		return 0;
	row->ns_per_call[round] = probed;
	row->ns_per_hit[round] = probed - unprobed;
	row->rounds = round + 1;
	row->jump_rounds += !strcmp(row->how, "optimized");
	if (hits != (long long)calls && !row->wrong_rounds++)
		snprintf(row->wrong, sizeof(row->wrong), "round %d: %lld hits of %lu calls",
			 round, hits, calls);
	return 0;
}

static void bpf_bench_print(void)
{
	const struct bpf_bench_row *row;
	double per_hit, per_call;

	for (row = bpf_bench_rows; row < bpf_bench_rows + BPF_BENCH_ROWS; row++) {
		if (!bpf_bench_applies(row))
			continue;
		if (row->refused[0] || !row->rounds) {
			say("# bpf: %s+0x%lx|%s|%s|-|-|-|refused: %s", row->place->function,
			    row->place->offset, row->place->what, bpf_bench_labels[row->way],
			    row->refused[0] ? row->refused : "not measured");
			continue;
		}
		per_hit = bench_median(row->ns_per_hit, row->rounds);
		per_call = bench_median(row->ns_per_call, row->rounds);
		say("# bpf: %s+0x%lx|%s|%s|%s%s|%.2f|%.2f|%s", row->place->function,
		    row->place->offset, row->place->what, bpf_bench_labels[row->way], row->how,
		    row->jump_rounds && row->jump_rounds < row->rounds ? " (some rounds)" : "",
		    per_call, per_hit, row->wrong_rounds ? "WRONG" : "ok");
	}
	for (row = bpf_bench_rows; row < bpf_bench_rows + BPF_BENCH_ROWS; row++)
		if (row->wrong_rounds)
			say("# bpf: WRONG %s+0x%lx, %s in %d rounds, first %s",
			    row->place->function, row->place->offset,
			    bpf_bench_labels[row->way], row->wrong_rounds, row->wrong);
	tcdrain(1);
}

/*
 * make bench's BPF step (after bench_measure, okprobe_bench.ko loaded):
 * every row in every round, the order rotated. Both optimizations on.
 */
static int bench_bpf(void)
{
	const char *rounds_text = getenv("bench_bpf_rounds");
	int rounds = rounds_text ? atoi(rounds_text) : BPF_BENCH_MAX_ROUNDS;
	size_t i;
	int round, wrong = 0;

	if (!exists(BENCH_CONTROL))
		return skip("okprobe_bench.ko is not loaded");
	STEP(userland_mount());
	if (!exists(OKPROBE_EVENTS))
		return skip("no okprobe_events in this kernel (CONFIG_DYNAMIC_EVENTS)");
	rounds = rounds < bench_rounds ? rounds : bench_rounds;
	CHECK(rounds > 0 && rounds <= BPF_BENCH_MAX_ROUNDS, "bad bench_bpf_rounds=%d", rounds);
	if (exists(KERNEL_OPTIMIZATION))
		STEP(bench_set_sysctl(KERNEL_OPTIMIZATION, bench_kernel_optimization, "1"));
	STEP(bench_set_sysctl(SYSCTL_OPTIMIZATION, bench_okprobe_optimization, "1"));
	for (i = 0; i < BPF_BENCH_ROWS; i++) {
		struct bpf_bench_row *row = &bpf_bench_rows[i];

		row->place = &bpf_bench_places[i / BPF_WAYS];
		row->way = i % BPF_WAYS;
		/* Until a round shows otherwise: a kprobe on ftrace or riscv's never jumps. */
		row->jump_expected = row->way == BPF_BY_OKPROBE ||
				     (row->way == BPF_BY_KPROBE && IS_X86);
	}
	STEP(bpf_bench_find_places());
	say("# bpf: calls %lu rounds %d", bench_calls, rounds);
	for (i = 0; i < BPF_BENCH_ROWS; i++)
		if (bpf_bench_applies(&bpf_bench_rows[i]))
			STEP(bpf_bench_sample(&bpf_bench_rows[i], bench_calls, -1));
	for (round = 0; round < rounds; round++)
		for (i = 0; i < BPF_BENCH_ROWS; i++) {
			struct bpf_bench_row *row = &bpf_bench_rows[(i + round) % BPF_BENCH_ROWS];

			if (bpf_bench_applies(row) && !row->refused[0])
				STEP(bpf_bench_sample(row, bench_calls, round));
		}
	bpf_bench_print();
	for (i = 0; i < BPF_BENCH_ROWS; i++)
		wrong += bpf_bench_rows[i].wrong_rounds;
	CHECK(!wrong, "%d BPF runs counted other than the calls", wrong);
	return 0;
}
