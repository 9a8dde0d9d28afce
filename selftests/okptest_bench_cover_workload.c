// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part: make bench's okprobe-cover workload step (issue 41),
 * what coverage costs the code it watches. In one boot, side by side, a
 * workload runs with no probes, with reach coverage and with counts
 * coverage of the same functions: every function of the Debian modules
 * that serve Debian's userland disk (squashfs, virtio_blk, virtio_ring,
 * virtio_pci and what they need, as okptest cover_module covers them).
 * The workload is Python reading every file of /usr on that disk (64 KiB
 * of each, as make demo's and cover_module's do), so squashfs and virtio
 * run under every read.
 *
 * Rounds interleave the three, each round's order rotated from the last
 * one's (none, reach, counts; reach, counts, none; counts, none, reach),
 * so that what a mode leaves to finish after its run (the clear's grace
 * period, the disarm work) does not always fall in the same mode's run.
 * Before each run the page cache is dropped, so that every run reads the
 * disk rather than memory (Python itself included). Reach probes are armed
 * afresh for each run, since they take themselves out once hit; counts
 * probes are armed and their jumps awaited before the run. Arming is not
 * part of a run's time; it is printed beside it. Each covered run is
 * checked: the same number of files read as every other run, blocks
 * reached, only freed code refused, nothing left in okprobe/list after
 * the clear, and every covered function's text as it was before the step
 * (okptest_cover_module.c's snapshot).
 *
 * Printed as "# cover-workload: " lines, one per run, for tools/bench
 * (tools/bench_cover.py: medians, and each mode's slowdown against no
 * probes). A part of okptest.c, included after okptest_bench_cover.c.
 */

#define DROP_CACHES "/proc/sys/vm/drop_caches"
/* The longest counts coverage may wait for okprobe's jumps. */
#define COVER_OPTIMIZER_WAIT_MS 180000

/* Reads 64 KiB of every file of /usr: make demo's workload. */
#define COVER_WORKLOAD "import os\n" USERLAND_READ_TREE_PY("'/usr'")

static unsigned long *workload_functions;
static int workload_function_count;

/* Whether a [module] of /proc/kallsyms is one cover_module_names() found. */
static int workload_module(const char *module)
{
	int i;

	for (i = 0; i < cover_module_count; i++)
		if (!strcmp(module, cover_module_texts[i].name))
			return 1;
	return 0;
}

/*
 * Every function of the disk's modules, as okprobe-cover -m takes them:
 * the text symbols of the module in /proc/kallsyms, not the padding
 * before functions (__pfx_, __cfi_), each address once.
 */
static int workload_module_functions(void)
{
	FILE *kallsyms = fopen("/proc/kallsyms", "re");
	char line[512], symbol[256], module[128], type;
	unsigned long address, last = 0;
	int capacity = 0;

	CHECK(kallsyms, "/proc/kallsyms: %s", strerror(errno));
	workload_function_count = 0;
	while (fgets(line, sizeof(line), kallsyms)) {
		if (sscanf(line, "%lx %c %255s [%127[^]]]", &address, &type,
			   symbol, module) != 4 ||
		    (type != 't' && type != 'T') || address == last ||
		    !workload_module(module) || !strncmp(symbol, "__pfx_", 6) ||
		    !strncmp(symbol, "__cfi_", 6))
			continue;
		if (workload_function_count == capacity) {
			capacity = capacity ? 2 * capacity : 1024;
			workload_functions = realloc(workload_functions,
						     capacity * sizeof(*workload_functions));
			CHECK(workload_functions, "no memory");
		}
		workload_functions[workload_function_count++] = address;
		last = address;
	}
	fclose(kallsyms);
	CHECK(workload_function_count > 100, "only %d functions in the disk's modules",
	      workload_function_count);
	return 0;
}

/*
 * Covers every function with command ("reach" or "add"), and for counts
 * waits until no block waits for its jump: *ms, the whole of it.
 */
static int workload_arm(const char *command, long long *ms)
{
	long long start = now_ms();
	char batch[COVER_WRITE_MAX];
	int next = 0, ret, waiting;

	while (next < workload_function_count) {
		next = cover_batch(batch, command, workload_functions, next,
				   workload_function_count);
		ret = write_file(COVER_FILE, batch);
		/*
		 * Freed code (ENOENT) is refused, the report says which; a
		 * function named twice (EEXIST: a .cold piece is its
		 * parent's) is covered once. okprobe-cover -m does the same.
		 */
		CHECK(ret == 0 || ret == -ENOENT || ret == -EEXIST,
		      "%s: okprobe/cover refused a write: %s",
		      command, strerror(-ret));
	}
	for (;;) {
		if (strcmp(command, "add"))
			break;
		ret = read_file(DEBUGFS_DIR "/jumps", bench_big_file,
				sizeof(bench_big_file));
		CHECK(ret == 0, "reading okprobe/jumps: %s", strerror(-ret));
		waiting = bench_count_state(bench_big_file, "waiting");
		if (!waiting)
			break;
		CHECK(now_ms() < start + COVER_OPTIMIZER_WAIT_MS,
		      "%d blocks still wait for their jumps after %d s", waiting,
		      COVER_OPTIMIZER_WAIT_MS / 1000);
		usleep(50000);
	}
	*ms = now_ms() - start;
	return 0;
}

/*
 * After a covered run: the report, the probes cleared, nothing left, every
 * covered function's text as before the step.
 */
static int workload_check_cover(const char *mode, int round,
				struct cover_tally *tally)
{
	struct cover_module_tally tallies[COVER_MODULE_MAX] = { 0 };
	struct cover_module_tally target = { 0 };
	char target_lines[64] = "";
	int compared = 0, ret;

	STEP(cover_report_read(tally, 0));
	ret = write_file(COVER_FILE, "clear");
	CHECK(ret == 0, "clear: %s", strerror(-ret));
	STEP(cover_nothing_left("clear"));
	STEP(cover_module_report(cover_report, tallies, &target, target_lines,
				 sizeof(target_lines), &compared));
	CHECK(!tally->unexpected_functions,
	      "%s, round %d: okprobe/cover refused %d functions for more than freed code",
	      mode, round, tally->unexpected_functions);
	CHECK(tally->functions > 0 && tally->reached > 0 && compared > 0,
	      "%s, round %d: %d functions covered, %d blocks reached, %d compared",
	      mode, round, tally->functions, tally->reached, compared);
	return 0;
}

/*
 * One run of the workload in mode (none, reach, counts); *files: how many
 * files it read, the same in every run.
 */
static int workload_run(const char *mode, int round, int *files)
{
	static char output[4096];
	char *const argv[] = { "/usr/bin/python3", "-c", COVER_WORKLOAD, NULL };
	const char *command = !strcmp(mode, "reach") ? "reach" :
			      !strcmp(mode, "counts") ? "add" : NULL;
	struct cover_tally tally = { 0 };
	long long arm_ms = 0, start, ms;
	int status, read_count = 0, ret;

	say("# pass: cover workload round %d: %s", round, mode);
	ret = write_file(DROP_CACHES, "3");
	CHECK(ret == 0, "writing 3 to " DROP_CACHES ": %s", strerror(-ret));
	if (command)
		STEP(workload_arm(command, &arm_ms));
	start = now_ms();
	status = userland_run(argv, 900, output, sizeof(output));
	ms = now_ms() - start;
	CHECK(status == 0 && sscanf(output, "%d files read", &read_count) == 1 &&
	      read_count > 0,
	      "the workload (%s, round %d) exited with %d: %.200s", mode, round,
	      status, output);
	if (command)
		STEP(workload_check_cover(mode, round, &tally));
	CHECK(!*files || read_count == *files,
	      "the workload (%s, round %d) read %d files, the runs before %d",
	      mode, round, read_count, *files);
	*files = read_count;
	say("# cover-workload: round=%d mode=%s ms=%lld arm_ms=%lld files=%d functions=%d blocks=%d probed=%d reached=%d optimized=%d breakpoint=%d ftrace=%d disabled=%d optimized_hits=%llu breakpoint_hits=%llu ftrace_hits=%llu",
	    round, mode, ms, arm_ms, read_count, tally.functions, tally.blocks,
	    tally.probed, tally.reached, tally.optimized, tally.breakpoint,
	    tally.ftrace, tally.disabled, tally.optimized_hits,
	    tally.breakpoint_hits, tally.ftrace_hits);
	return 0;
}

static int workload_rounds(int rounds)
{
	static const char *const modes[] = { "none", "reach", "counts" };
	char modules[256] = "";
	int files = 0, round, i;
	size_t used = 0;

	for (i = 0; i < cover_module_count && used < sizeof(modules); i++)
		used += snprintf(modules + used, sizeof(modules) - used, "%s%s",
				 i ? "," : "", cover_module_texts[i].name);
	say("# cover-workload-set: modules=%s functions=%d rounds=%d", modules,
	    workload_function_count, rounds);
	/* Round r starts at modes[(r - 1) % 3]. */
	for (round = 1; round <= rounds; round++)
		for (i = 0; i < (int)ARRAY_SIZE(modes); i++)
			STEP(workload_run(modes[(round - 1 + i) %
						ARRAY_SIZE(modes)],
					  round, &files));
	return 0;
}

static int bench_cover_workload(void)
{
	int rounds = cover_rounds(), ret;

	CHECK(rounds > 0 && rounds <= COVER_WORKLOAD_MAX_ROUNDS,
	      "bad bench_cover_rounds=%s (1 to %d)", getenv("bench_cover_rounds"),
	      COVER_WORKLOAD_MAX_ROUNDS);
	if (!exists(COVER_FILE))
		return skip("no okprobe/cover");
	STEP(userland_mount());
	STEP(cover_report_buffer());
	if (!cover_module_count)
		STEP(cover_module_names());
	if (!cover_module_texts[0].snapshot)
		STEP(cover_module_snapshot());
	STEP(workload_module_functions());
	STEP(bench_set_sysctl(SYSCTL_OPTIMIZATION, bench_okprobe_optimization,
			      "1"));
	ret = workload_rounds(rounds);
	write_file(COVER_FILE, "clear");
	return ret;
}
