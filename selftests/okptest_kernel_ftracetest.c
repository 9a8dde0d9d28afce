// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part file for the kernel's own tests of kprobe_events:
 * tools/testing/selftests/ftrace's ftracetest and its test.d/kprobe, from
 * Debian's linux-source of the guest kernel's series, in the initramfs
 * (tools/kernel_ftracetest.py). They run under busybox's sh, rewritten
 * for okprobe_events with okprobe loaded; each test must pass, or end as
 * it ends, as the kernel has it, on kprobe_events with okprobe unloaded,
 * but for the few listed with the reason why not.
 */

#define FTRACETEST_DIR "/lib/ftracetest"
#define BUSYBOX_APPLETS "/tmp/busybox-applets"
#define FTRACETEST_MAX 64

struct ftracetest_result {
	char name[160];
	char result[16];
};

/*
 * Where okprobe_events cannot end a test of the kernel's as kprobe_events
 * does, by the test's description, with the reason.
 */
static const struct {
	const char *test, *result, *why;
} ftracetest_differences[] = {
	/*
	 * kprobe_opt_types.tc (6.12 on): a probe at each of kernel_clone's
	 * first 256 bytes, enabled, one fork, then the probe list read for
	 * [OPTIMIZED]. The kernel's list says [OPTIMIZED] from the moment
	 * the jump is queued (optimize_kprobe() sets KPROBE_FLAG_OPTIMIZED
	 * before its optimizer runs); okprobe's only once the jump is in the
	 * text, after the optimizer's 5 jiffies and an rcu-tasks grace
	 * period (okprobe/jumps says "waiting" until then), which is longer
	 * than a fork. kernel_clone_optimized_later() checks that a probe
	 * there does become [OPTIMIZED].
	 */
	{ "Register/unregister optimized probe", "UNRESOLVED",
	  "okprobe's [OPTIMIZED] waits for the jump to be in the text" },
	{ NULL, NULL, NULL },
};

/* The result lines of ftracetest's output: "[N] DESCRIPTION\t[RESULT]". */
static int ftracetest_results(char *output, struct ftracetest_result *results)
{
	char *line, *end, *open;
	int count = 0;

	for (line = output; *line && count < FTRACETEST_MAX; line = end + !!*end) {
		end = strchrnul(line, '\n');
		open = memrchr(line, '[', end - line);
		if (line[0] != '[' || !open || open == line || end[-1] != ']')
			continue;
		snprintf(results[count].result, sizeof(results[count].result),
			 "%.*s", (int)(end - open - 2), open + 1);
		line = strchr(line, ']') + 2;
		if (line > open)
			continue;
		while (open > line && (open[-1] == '\t' || open[-1] == ' '))
			open--;
		snprintf(results[count].name, sizeof(results[count].name), "%.*s",
			 (int)(open - line), line);
		count++;
	}
	return count;
}

/*
 * ftracetest over side's (kernel, okprobe) tests: those given (file names
 * in test.d/kprobe), or all of them. Their results.
 */
static int ftracetest_run(const char *side, const char *tests,
			  struct ftracetest_result *results, int *count,
			  char *output, size_t size)
{
	long long started = now_ms();
	char command[4608], shown[64];
	int status;

	snprintf(command, sizeof(command),
		 "cd %s/%s && PATH=%s:$PATH sh ./ftracetest -k -l /tmp/ftracetest-%s %s 2>&1",
		 FTRACETEST_DIR, side, BUSYBOX_APPLETS, side,
		 tests[0] ? tests : "test.d/kprobe");
	snprintf(shown, sizeof(shown), "ftracetest test.d/kprobe (%s)", side);
	status = run_shown(shown, command, output, size);
	*count = ftracetest_results(output, results);
	say("# ftracetest (%s) took %lld ms", side, now_ms() - started);
	CHECK(*count > 0, "ftracetest (%s) exited with %d and printed no result", side,
	      status);
	return 0;
}

/*
 * What kprobe_opt_types.tc's difference says, checked: of kernel_clone's
 * first 256 bytes, the first probe okprobe/jumps shows waiting for its
 * jump when enabled shows [OPTIMIZED] in the list within the wait.
 */
static int kernel_clone_optimized_later(void)
{
	char definition[64], line[512] = "";
	long long enabled = 0;
	int offset, optimized;

	for (offset = 0; offset < 256; offset++) {
		snprintf(definition, sizeof(definition),
			 "p:okptest_opt/clone kernel_clone+%d", offset);
		if (write_file(OKPROBE_EVENTS, definition))
			continue;
		CHECK(write_file(TRACING "/events/okptest_opt/enable", "1") == 0,
		      "enabling %s: %s", definition, strerror(errno));
		enabled = now_ms();
		file_line(DEBUGFS_DIR "/jumps", "kernel_clone+", line, sizeof(line));
		if (strstr(line, " waiting "))
			break;
		write_file(TRACING "/events/okptest_opt/enable", "0");
		clear_file(OKPROBE_EVENTS);
	}
	CHECK(offset < 256, "no probe in kernel_clone's first 256 bytes waited for a jump");
	say("# kernel_clone+0x%x enabled: okprobe/jumps: %s", offset, line);
	optimized = wait_listed_optimized("kernel_clone+", line, sizeof(line));
	say("# %lld ms later: %s", now_ms() - enabled, line);
	write_file(TRACING "/events/okptest_opt/enable", "0");
	clear_file(OKPROBE_EVENTS);
	CHECK(optimized, "kernel_clone+0x%x never showed [OPTIMIZED]", offset);
	return 0;
}

static const char *ftracetest_expected(const struct ftracetest_result *kernel)
{
	size_t i;

	for (i = 0; ftracetest_differences[i].test; i++)
		if (!strcmp(kernel->name, ftracetest_differences[i].test))
			return ftracetest_differences[i].result;
	return kernel->result;
}

/*
 * The test files of test.d/kprobe, sorted as ftracetest sorts them (find |
 * sort), into names (space-separated "test.d/kprobe/NAME.tc"), by index.
 */
static int ftracetest_files(char files[][96], int max)
{
	struct dirent **names;
	int count, i, kept = 0;

	count = scandir(FTRACETEST_DIR "/okprobe/test.d/kprobe", &names, NULL, alphasort);
	if (count < 0)
		return 0;
	for (i = 0; i < count; i++) {
		size_t length = strlen(names[i]->d_name);

		if (kept < max && length > 3 && !strcmp(names[i]->d_name + length - 3, ".tc"))
			snprintf(files[kept++], sizeof(files[0]), "test.d/kprobe/%s",
				 names[i]->d_name);
		free(names[i]);
	}
	free(names);
	return kept;
}

/*
 * okprobe's run first, then the kernel's of the tests that did not pass
 * on okprobe_events: where okprobe_events passes, it does what the test
 * asks of kprobe_events (a run of every test on the kernel's took as
 * long again: 140 s on x86-6.12). The others must end as on the kernel's.
 */
static int kernel_ftracetest_steps(void)
{
	static char output[65536], files[FTRACETEST_MAX][96], again[4096];
	static struct ftracetest_result kernel[FTRACETEST_MAX], ours[FTRACETEST_MAX];
	int kernel_count = 0, our_count, file_count, i, k, differ = 0;
	size_t used = 0;

	if (!exists(FTRACETEST_DIR) || !exists("/bin/busybox"))
		return skip("no ftracetest in this guest (make check gives the kernel's to x86's 6.1, 6.12 and newest kernel: tools/kernel_ftracetest.py)");
	CHECK(system("mkdir -p " BUSYBOX_APPLETS " && /bin/busybox --install -s " BUSYBOX_APPLETS) == 0,
	      "installing busybox's applets");
	mount_tracefs_if_needed();
	STEP(load_okprobe(default_params));
	if (!exists(OKPROBE_EVENTS)) {
		STEP(unload_okprobe());
		return skip("the kernel has no dynamic trace events (CONFIG_DYNAMIC_EVENTS)");
	}
	STEP(ftracetest_run("okprobe", "", ours, &our_count, output, sizeof(output)));
	file_count = ftracetest_files(files, FTRACETEST_MAX);
	CHECK(file_count == our_count, "ftracetest ran %d tests of test.d/kprobe's %d",
	      our_count, file_count);
	clear_file(OKPROBE_EVENTS);
	for (i = 0; i < our_count; i++)
		if (!strcmp(ours[i].name, "Register/unregister optimized probe"))
			STEP(kernel_clone_optimized_later());
	STEP(unload_okprobe());
	for (i = 0; i < our_count; i++) {
		if (!strcmp(ours[i].result, "PASS"))
			continue;
		CHECK(used + strlen(files[i]) + 2 < sizeof(again),
		      "too many tests to run again on kprobe_events");
		used += snprintf(again + used, sizeof(again) - used, "%s ", files[i]);
	}
	if (used)
		STEP(ftracetest_run("kernel", again, kernel, &kernel_count, output,
				    sizeof(output)));
	for (i = 0, k = 0; i < our_count; i++) {
		const struct ftracetest_result *theirs = NULL;
		const char *expected = "PASS";

		if (strcmp(ours[i].result, "PASS")) {
			theirs = k < kernel_count ? &kernel[k++] : NULL;
			expected = theirs ? ftracetest_expected(theirs) : "(not run)";
		}
		say("# %-60.60s okprobe_events %-11s kprobe_events %s", ours[i].name,
		    ours[i].result, theirs ? theirs->result : "(passed on okprobe's)");
		if (strcmp(ours[i].result, expected) ||
		    (theirs && strcmp(ours[i].name, theirs->name))) {
			char command[96];

			say("# ^ expected %s; the end of its log:", expected);
			snprintf(command, sizeof(command),
				 "tail -n 40 /tmp/ftracetest-okprobe/%d-*", i + 1);
			run_shown(command, command, output, sizeof(output));
			differ++;
		}
	}
	CHECK(!differ, "%d of the kernel's %d kprobe tests ended otherwise on okprobe_events",
	      differ, our_count);
	return 0;
}

static int test_kernel_ftracetest(void)
{
	return events_test(kernel_ftracetest_steps, NULL);
}
