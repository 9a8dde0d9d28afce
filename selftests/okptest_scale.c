// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part: the scale suite (make check): the whole
 * sample of real kernel instructions, bounded, registered and removed.
 *
 * A part of okptest.c (one program, one test list), included by it.
 */

/* ---- Scale: the whole sample, bounded (make check) ----------------------- */

/*
 * make check's scale suite (issue 35: a storm of probes hung Debian 13's
 * 6.12 and nothing caught it). The bench's sample of kernel instructions
 * (tools/check draws it as make bench does; how many sites each kernel
 * gets is tools/okprobe_build.py's Target.scale_sites) goes through two
 * passes, each with a deadline for its optimizer, while a process makes
 * syscalls (storm_workload_of, paced), so that probes are hit as they
 * come and go:
 *
 *   1. okprobe one by one, beside the kernel's kprobes where it has them:
 *      kprobe_events on every SCALE_BESIDE_EVERY-th site, enabled (as
 *      perf or bpftrace users plant them), then every site's
 *      registration, the optimizer, the sysctl off, on and off,
 *      everything unregistered in one batch. No function may end up
 *      holding both a kernel kprobe and an okprobe that patch its text
 *      (operating.md, "Next to the kernel's kprobes"): okprobe refuses
 *      theirs with EBUSY. Then the kernel's go.
 *   2. okprobe_register_many() of the sites the first pass took: it must
 *      take every one of them.
 *
 * After each pass every site's text (24 bytes around it) is what it was
 * before, byte for byte; every refusal has a documented errno; the hits
 * come. The runner judges the console (no Oops, WARNING, lockdep, RCU
 * stall) and the time: a guest silent for its silence limit is a hang.
 */
/*
 * Every 40th: about 220 kernel kprobes at 10,000 sites. Each one's
 * removal waits for a grace period: every 20th (438) took 30 s of
 * x86-6.12's guest.
 */
#define SCALE_BESIDE_EVERY 40
#define SCALE_GROUP "okptest_scale"
#define SCALE_EVENTS TRACING "/events/" SCALE_GROUP

/* okprobe/list and kprobes/list beside bench_big_file. */
static char scale_other_file[4 << 20];

/*
 * okprobe_register_many() of the sites the one-by-one pass took (the
 * others are left out, "not in this pass": ENODEV), under the same load.
 */
static int scale_many_pass(struct bench_pass *pass, int resolved)
{
	pid_t workload = storm_workload_of(1);
	int ret;

	CHECK(workload > 0, "fork: %s", strerror(errno));
	*pass = (struct bench_pass){ .kind = "okprobe-many", .size = resolved,
				     .strict = 1 };
	ret = bench_coverage_pass(pass);
	kill(-workload, SIGKILL);
	while (waitpid(workload, NULL, 0) < 0 && errno == EINTR)
		;
	if (ret)
		return ret;
	bench_say_scale(pass);
	CHECK(pass->hits > 0, "register_many(): no probe of %d was hit",
	      pass->registered);
	return 0;
}

/*
 * The kernel kprobes on the sample's every SCALE_BESIDE_EVERY-th site, as
 * kprobe_events by address; *defined: how many the kernel took.
 */
static int scale_define_kprobe_events(int *defined)
{
	char line[128];
	int i, ret, refused = 0;

	*defined = 0;
	for (i = 0; i < bench_site_count; i += SCALE_BESIDE_EVERY) {
		if (!bench_sites[i].address)
			continue;
		snprintf(line, sizeof(line), "p:" SCALE_GROUP "/s%d 0x%lx", i,
			 bench_sites[i].address);
		ret = write_file(KPROBE_EVENTS, line);
		if (ret) {
			refused++;
			continue;
		}
		(*defined)++;
	}
	say("# scale: beside: %d kprobe_events defined, %d refused by the kernel",
	    *defined, refused);
	CHECK(*defined > 0, "the kernel took none of the kprobe events");
	CHECK(!write_file(SCALE_EVENTS "/enable", "1"), "enabling %s",
	      SCALE_EVENTS);
	return 0;
}

static void scale_remove_kprobe_events(void)
{
	char line[64];
	int i;

	write_file(SCALE_EVENTS "/enable", "0");
	for (i = 0; i < bench_site_count; i += SCALE_BESIDE_EVERY) {
		snprintf(line, sizeof(line), "-:" SCALE_GROUP "/s%d", i);
		write_file(KPROBE_EVENTS, line);
	}
}

/*
 * "symbol" of a list line's "symbol+0xoff" field (the first field with a
 * '+'), into name; 0 if none.
 */
static int scale_line_symbol(const char *line, char *name, size_t size)
{
	const char *field = line, *plus;
	size_t length;

	while (*field) {
		field += strspn(field, " \t");
		length = strcspn(field, " \t");
		plus = memchr(field, '+', length);
		if (plus && plus > field && (size_t)(plus - field) < size) {
			memcpy(name, field, plus - field);
			name[plus - field] = '\0';
			return 1;
		}
		field += length;
	}
	return 0;
}

/*
 * One function, one owner: no okprobe that patches text (not [FTRACE])
 * in a function where the kernel has a kprobe that patches text (not
 * [FTRACE]). Returns how many okprobes break it; *first: the first one.
 */
static char scale_kernel_functions[4096][128];

static int scale_compare_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Whether name is one of count scale_kernel_functions (sorted). */
static int scale_kernel_function(const char *name, int count)
{
	return bsearch(name, scale_kernel_functions, count,
		       sizeof(scale_kernel_functions[0]),
		       scale_compare_name) != NULL;
}

static int scale_shared_functions(int *kernel_functions, char *first,
				  size_t size)
{
	char (*names)[128] = scale_kernel_functions;
	char *line, *save = NULL, name[128];
	int count = 0, shared = 0, i, kept;

	first[0] = '\0';
	if (read_file(KPROBES_LIST, scale_other_file, sizeof(scale_other_file)))
		return -1;
	for (line = strtok_r(scale_other_file, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (!strstr(line, "[FTRACE]") && count < 4096 &&
		    scale_line_symbol(line, names[count], sizeof(names[0])))
			count++;
	qsort(names, count, sizeof(names[0]), scale_compare_name);
	/* One name per function (a function may hold several kprobes). */
	for (i = 1, kept = count ? 1 : 0; i < count; i++)
		if (strcmp(names[i], names[kept - 1]))
			memmove(names[kept++], names[i], sizeof(names[0]));
	count = kept;
	*kernel_functions = count;
	if (read_file(DEBUGFS_DIR "/list", scale_other_file,
		      sizeof(scale_other_file)))
		return -1;
	save = NULL;
	for (line = strtok_r(scale_other_file, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "[FTRACE]") ||
		    !scale_line_symbol(line, name, sizeof(name)))
			continue;
		if (scale_kernel_function(name, count) && !shared++)
			snprintf(first, size, "%s", line);
	}
	return shared;
}

/*
 * The kernel's kprobes' hits on the kprobe events (kprobe_profile names an
 * event without its group: sN).
 */
static long scale_kernel_hits(void)
{
	char *line, *save = NULL;
	long hits = 0, count;
	int index, length;

	if (read_file(TRACING "/kprobe_profile", scale_other_file,
		      sizeof(scale_other_file)))
		return -1;
	for (line = strtok_r(scale_other_file, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		length = 0;
		if (sscanf(line, " s%d%n %ld", &index, &length, &count) == 2 &&
		    line[length] == ' ')
			hits += count;
	}
	return hits;
}

/*
 * okprobe one by one over the whole sample, beside the kernel's kprobes
 * where it has them: no function ends up holding both, okprobe refuses
 * theirs with EBUSY, and once both are gone every site's text is what it
 * was.
 */
static int scale_one_by_one(struct bench_pass *pass, int resolved)
{
	int defined = 0, functions = 0, shared = -1, ret, changed, jumps;
	int flagged, beside = kernel_has_kprobes && exists(KPROBE_EVENTS);
	long kernel_hits = -1, hits, missed;
	char first[512];
	pid_t workload;

	*pass = (struct bench_pass){ .kind = "okprobe", .size = resolved,
				     .strict = 1 };
	if (beside)
		STEP(scale_define_kprobe_events(&defined));
	workload = storm_workload_of(1);
	CHECK(workload > 0, "fork: %s", strerror(errno));
	ret = bench_pass_register(pass);
	if (!ret) {
		if (beside)
			shared = scale_shared_functions(&functions, first,
							sizeof(first));
		ret = bench_pass_unregister(pass);
	}
	kill(-workload, SIGKILL);
	while (waitpid(workload, NULL, 0) < 0 && errno == EINTR)
		;
	if (beside) {
		kernel_hits = scale_kernel_hits();
		scale_remove_kprobe_events();
	}
	if (ret)
		return ret;
	bench_say_scale(pass);
	bench_say_errors(beside ? "beside the kernel's kprobes, okprobe" :
				  "okprobe", pass->errors);
	CHECK(storm_errnos_documented(pass->errors),
	      "an undocumented errno among %s", pass->errors);
	CHECK(pass->registered > resolved / 2,
	      "okprobe took only %d of %d sites", pass->registered, resolved);
	CHECK(pass->hits > 0, "no probe of %d was hit", pass->registered);
	if (beside) {
		say("# scale: beside: %d functions with a kernel kprobe that patches text; the kernel's kprobes hit %ld times, okprobe's %ld",
		    functions, kernel_hits, pass->hits);
		CHECK(shared == 0,
		      "%d okprobes in functions that hold a kernel kprobe, the first: %s",
		      shared, first);
		/* Theirs were in the sample: okprobe must have left them. */
		CHECK(functions > 0 && refusals_of(pass->errors, EBUSY) > 0,
		      "no refusal (EBUSY) of okprobe's beside %d kernel kprobes",
		      defined);
	} else {
		say("# scale: no kernel kprobes in this kernel: okprobe alone");
	}
	/* Without a pass: every site of the sample, as before any pass. */
	STEP(bench_wait_restored(pass));
	STEP(bench_cover_state(&jumps, &changed, &hits, &missed, &flagged));
	CHECK(!changed, "%d sites' text not restored once the kprobes left",
	      changed);
	return 0;
}

static int scale_steps(void)
{
	struct bench_pass ours, many;
	int resolved, ret;

	if (!exists(BENCH_SITES))
		return skip("no " BENCH_SITES " (tools/check makes it)");
	STEP(load_okprobe(default_params));
	ret = load_module(BENCH_KO, "");
	CHECK(ret == 0, "loading okprobe_bench.ko: %s", strerror(-ret));
	STEP(bench_prepare_sample(&resolved));
	say("# scale: sample: %s", bench_sites_about);
	say("# scale: %d sites of %d resolved in /proc/kallsyms", resolved,
	    bench_site_count);
	STEP(scale_one_by_one(&ours, resolved));
	/* The sites the first pass took, in one batch: all of them. */
	STEP(scale_many_pass(&many, resolved));
	CHECK(many.registered == ours.registered,
	      "okprobe_register_many() took %d sites, one by one %d",
	      many.registered, ours.registered);
	CHECK(!write_file(BENCH_CONTROL, "sites-clear"), "sites-clear");
	ret = unload_module("okprobe_bench");
	CHECK(ret == 0, "unloading okprobe_bench: %s", strerror(-ret));
	return unload_okprobe();
}

static int test_scale(void)
{
	int ret;

	if (!exists(BENCH_KO))
		return skip("no okprobe_bench.ko for this architecture");
	mount_tracefs_if_needed();
	ret = scale_steps();
	if (ret) {
		write_file(BENCH_CONTROL, "uncover");
		if (exists(SCALE_EVENTS))
			scale_remove_kprobe_events();
		unload_module("okprobe_bench");
		unload_module("okprobe");
	}
	return ret;
}

static int bench_unload(void)
{
	int ret;

	if (!module_loaded("okprobe_bench"))
		return skip("okprobe_bench.ko is not loaded");
	bench_set_sysctl(KERNEL_OPTIMIZATION, bench_kernel_optimization, "1");
	bench_set_sysctl(SYSCTL_OPTIMIZATION, bench_okprobe_optimization, "1");
	ret = unload_module("okprobe_bench");
	CHECK(ret == 0, "unloading okprobe_bench: %s", strerror(-ret));
	return unload_okprobe();
}
