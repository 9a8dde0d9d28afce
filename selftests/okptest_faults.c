// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part: injected faults and kmemleak: every
 * allocation of okprobe's calls failed in turn (the task's fail-nth, and
 * okprobe's own fault point for the optimizer), and kmemleak's verdict
 * after load, register, unregister and unload cycles.
 *
 * A part of okptest.c (one program, one test list), included by it.
 */

/* ---- Injected faults ------------------------------------------------------- */

/*
 * Every allocation of a registration, an event's definition and enabling,
 * an unregistration and the jump optimizer, failed one at a time (issue
 * 37; testing.md, "Injected faults"), where the kernel has fault injection
 * (the debug kernels). A call's own allocations fail through this
 * thread's fail-nth, the kernel's way (syzkaller's too): failslab, told to
 * count GFP_KERNEL allocations, and okprobe's own fail_alloc point count
 * down, and the nth fails, whoever asks (okprobe's C++ core, its C glue,
 * the kernel functions it calls). The optimizer runs in a kworker, which
 * no fail-nth reaches: its allocations fail through okprobe's fail_alloc
 * attribute ("space" counts them). After each failure: an errno to the
 * caller or a success that did without, nothing listed, no event left,
 * ksys_read's text as before byte for byte (okprobe_bench.ko's sites), and
 * the same call without a fault succeeds.
 */
#define FAILSLAB "/sys/kernel/debug/failslab"
/*
 * The kernel log lines around the sweep: the allocation failures between
 * them may print warn_alloc()'s report with a stack, which the log checks
 * (here and tools/guest_run.py) know for the injected fault's.
 */
#define FAULTS_BEGIN "okptest: injecting faults"
#define FAULTS_END "okptest: no longer injecting faults"
#define WARN_ALLOC_STACK_RECORDS 6
#define FAIL_ALLOC DEBUGFS_DIR "/fail_alloc"
#define FAULT_FUNCTION "ksys_read"
/* More than any one call makes: a sweep that does not end is a failure. */
#define FAULT_MAX_ALLOCATIONS 3000

#define SAMPLE_REGISTERED "/sys/module/okprobe_sample/parameters/registered"

/*
 * One call swept: a write of text to path (the sample client's
 * "registered" parameter registers and unregisters its probe in the
 * writer's task, past the module loader's own allocations, which are the
 * kernel's; okprobe_events and an event's enable file).
 */
struct fault_call {
	const char *what;
	const char *sample;	/* the sample's parameters, loaded for the call */
	const char *path;	/* the file written */
	const char *text;	/* what is written */
	int (*before)(void);	/* each attempt's set-up, outside the window */
	int (*undo)(void);	/* takes back a call that succeeded */
	int (*after)(void);	/* takes back before()'s set-up */
	/* After a call that succeeded: that what it made is whole. */
	int (*works)(void);
	/* After a call that failed: what must hold, and its cleanup. */
	int (*failed)(void);
	int needs;		/* FAULT_NEEDS_*: what the kernel must have */
};

/* Return probes need rethook (not riscv 6.1's); events, dynamic events. */
#define FAULT_NEEDS_RETURNS 1
#define FAULT_NEEDS_EVENTS 2

static int fail_nth_fd = -1;
/* Where the kernel log stood when the last attempt began. */
static int fault_attempt_mark = -1;

/* okprobe_bench.ko keeps ksys_read's bytes: a site every 16 of them. */
static int fault_keep_text(void)
{
	unsigned long start = kallsyms_address(FAULT_FUNCTION), end = ~0UL;
	char command[64], reply[128];
	size_t i;

	CHECK(start, "no %s in /proc/kallsyms", FAULT_FUNCTION);
	for (i = 0; i < kernel_symbol_count; i++)
		if (kernel_symbols[i].address > start &&
		    kernel_symbols[i].address < end)
			end = kernel_symbols[i].address;
	CHECK(end != ~0UL && end - start < 4096, "%s's size is unknown",
	      FAULT_FUNCTION);
	for (; start < end; start += 16) {
		snprintf(command, sizeof(command), "site 0x%lx", start + 8);
		CHECK(bench_command(command, reply, sizeof(reply)) == 0,
		      "%s failed", command);
	}
	return 0;
}

/* Nothing of call c's left after its attempt n: no probe, no event, the text. */
static int fault_expect_clean(const char *what, int n)
{
	int jumps, changed, optimized;
	char list[1024] = "";
	long hits, missed;

	CHECK(!list_line(FAULT_FUNCTION "+", list, sizeof(list)),
	      "%s, allocation %d failed: okprobe/list shows '%.200s'", what,
	      n, list);
	CHECK(!exists(TRACING "/events/okpfault"),
	      "%s, allocation %d failed: the okpfault events are left", what,
	      n);
	STEP(bench_cover_state(&jumps, &changed, &hits, &missed, &optimized));
	CHECK(!changed, "%s, allocation %d failed: %d of %s's sites' text changed",
	      what, n, changed, FAULT_FUNCTION);
	return 0;
}

/*
 * Makes call c with this thread's nth fallible allocation failing (none
 * for n 0): *result is the call's, *fired whether the failure happened.
 * Nothing but the one system call runs between arming and reading back:
 * its file is opened before.
 */
static int fault_attempt(const struct fault_call *c, int n, int *result,
			 int *fired)
{
	int fd = open(c->path, O_WRONLY | O_CLOEXEC), length;
	char text[16] = "";

	if (fault_attempt_mark >= 0)
		close(fault_attempt_mark);
	fault_attempt_mark = kmsg_mark();
	CHECK(fd >= 0, "cannot open %s: %s", c->path, strerror(errno));
	length = snprintf(text, sizeof(text), "%d", n);
	if (n && pwrite(fail_nth_fd, text, length, 0) != length) {
		close(fd);
		return fail("cannot arm fail-nth: %s", strerror(errno));
	}
	*result = write(fd, c->text, strlen(c->text)) < 0 ? -errno : 0;
	*fired = 0;
	if (n) {
		memset(text, 0, sizeof(text));
		CHECK(pread(fail_nth_fd, text, sizeof(text) - 1, 0) > 0,
		      "cannot read fail-nth: %s", strerror(errno));
		*fired = atoi(text) == 0;
		CHECK(pwrite(fail_nth_fd, "0", 1, 0) == 1,
		      "cannot disarm fail-nth: %s", strerror(errno));
	}
	close(fd);
	return 0;
}

/* The errnos a sweep saw, and how often ("ENOMEM:12 EINVAL:1"). */
struct fault_tally {
	struct errno_tally errors;
	int absorbed;
};

static void fault_count(struct fault_tally *t, int result)
{
	if (!result)
		t->absorbed++;
	else
		errno_tally_add(&t->errors, result, 1);
}

/*
 * Every how many allocations the sweeps fail one: 1 (every one) unless
 * okptest_fault_stride says more (make check's debug part; the whole
 * sweep is make check-debug's). Allocation n is failed for n = 1,
 * 1 + stride, ... until the call makes fewer.
 */
static int fault_stride(void)
{
	const char *stride = getenv("okptest_fault_stride");

	return stride && atoi(stride) > 1 ? atoi(stride) : 1;
}

static void fault_say(const char *what, int allocations,
		      const struct fault_tally *t)
{
	char errnos[256];

	errno_tally_text(&t->errors, ":", " ", errnos, sizeof(errnos));
	if (fault_stride() > 1)
		say("# %s: %d to %d allocations, every %dth failed once: %s, done without %d",
		    what, allocations - fault_stride() + 1, allocations,
		    fault_stride(), errnos, t->absorbed);
	else
		say("# %s: %d allocations, each failed once: %s, done without %d",
		    what, allocations, errnos, t->absorbed);
}

/*
 * One attempt at call c with the nth allocation failing (none for n 0),
 * and what must hold after it: a success whole and taken back, a failure
 * cleaned up, nothing of it left.
 */
static int fault_once(const struct fault_call *c, int n, int *result,
		      int *fired)
{
	if (c->before)
		STEP(c->before());
	STEP(fault_attempt(c, n, result, fired));
	CHECK(*result == 0 || *fired, "%s with no allocation failed: %s",
	      c->what, strerror(-*result));
	if (!*result && c->works)
		STEP(c->works());
	if (!*result && c->undo)
		STEP(c->undo());
	if (*result && c->failed)
		STEP(c->failed());
	if (c->after)
		STEP(c->after());
	return fault_expect_clean(c->what, *fired ? n : 0);
}

static int fault_sweep_calls(const struct fault_call *c)
{
	struct fault_tally tally = { 0 };
	int n, result, fired;

	for (n = 1; n <= FAULT_MAX_ALLOCATIONS; n += fault_stride()) {
		STEP(fault_once(c, n, &result, &fired));
		if (!fired) {
			fault_say(c->what, n - 1, &tally);
			return 0;
		}
		fault_count(&tally, result);
		/* The same call again, with no failure, succeeds. */
		STEP(fault_once(c, 0, &result, &fired));
		CHECK(result == 0, "%s after allocation %d failed: %s", c->what,
		      n, strerror(-result));
	}
	return fail("%s: more than %d allocations", c->what,
		    FAULT_MAX_ALLOCATIONS);
}

static int fault_unload_sample(void)
{
	int ret = unload_module("okprobe_sample");

	CHECK(ret == 0, "unloading the sample: %s", strerror(-ret));
	return 0;
}

/* With the sample loaded as c wants it, its probe unregistered. */
static int fault_sweep(const struct fault_call *c)
{
	int ret;

	if (((c->needs & FAULT_NEEDS_RETURNS) &&
	     !kallsyms_address("rethook_hook")) ||
	    ((c->needs & FAULT_NEEDS_EVENTS) && !exists(OKPROBE_EVENTS))) {
		say("# %s: not on this kernel (no %s)", c->what,
		    c->needs & FAULT_NEEDS_RETURNS ? "rethook" :
						     "dynamic events");
		return 0;
	}
	if (c->sample) {
		ret = load_module(SAMPLE_KO, c->sample);
		CHECK(ret == 0, "the sample with %s: %s", c->sample,
		      strerror(-ret));
		CHECK(write_file(SAMPLE_REGISTERED, "0") == 0,
		      "cannot unregister the sample's probe");
	}
	ret = fault_sweep_calls(c);
	if (c->sample && !ret)
		STEP(fault_unload_sample());
	return ret;
}

static int fault_remove_events(void)
{
	write_file(OKPROBE_EVENTS, "-:okpfault/entry");
	write_file(OKPROBE_EVENTS, "-:okpfault/exit");
	CHECK(!exists(TRACING "/events/okpfault"), "cannot remove okpfault");
	return 0;
}

/*
 * Another event, enabled for the whole enabling sweep, so that the kernel
 * already records command lines when okpfault/entry is enabled: 6.1's
 * tracing_start_cmdline_record() ignores a failure to register its
 * sched_switch probe and its stop then unregisters what was never
 * registered (a WARNING in tracepoint_probe_unregister()), the kernel's
 * bug, which the sweep found and steps around.
 */
#define FAULT_HOLD_EVENT "okpfaulthold/read"

static int fault_hold_cmdlines(void)
{
	if (exists(TRACING "/events/" FAULT_HOLD_EVENT))
		return 0;
	CHECK(write_file(OKPROBE_EVENTS, "p:" FAULT_HOLD_EVENT " vfs_read") == 0 &&
	      write_file(TRACING "/events/" FAULT_HOLD_EVENT "/enable", "1") ==
		      0,
	      "cannot define and enable %s", FAULT_HOLD_EVENT);
	return 0;
}

static void fault_release_cmdlines(void)
{
	if (!exists(TRACING "/events/" FAULT_HOLD_EVENT))
		return;
	write_file(TRACING "/events/" FAULT_HOLD_EVENT "/enable", "0");
	write_file(OKPROBE_EVENTS, "-:" FAULT_HOLD_EVENT);
}

static int fault_define_event(void)
{
	STEP(fault_hold_cmdlines());
	CHECK(write_file(OKPROBE_EVENTS,
			 "p:okpfault/entry ksys_read fd=$arg1") == 0,
	      "cannot define okpfault/entry");
	return 0;
}

static int fault_disable_event(void)
{
	CHECK(write_file(TRACING "/events/okpfault/entry/enable", "0") == 0,
	      "cannot disable okpfault/entry");
	return 0;
}

static char fault_counter_params[96], fault_return_params[96];

static int fault_unregister_sample(void)
{
	CHECK(write_file(SAMPLE_REGISTERED, "0") == 0,
	      "cannot unregister the sample's probe");
	return 0;
}

/* The sample's probe, registered and optimized, for its unregistration. */
static int fault_optimized_sample(void)
{
	char line[512] = "";

	CHECK(write_file(SAMPLE_REGISTERED, "1") == 0,
	      "cannot register the sample's probe");
	CHECK(wait_listed_optimized(sample_where, line, sizeof(line)),
	      "the sample's probe never showed [OPTIMIZED]: '%s'", line);
	return 0;
}

/*
 * An unregistration cannot fail: a write of 0 that did had failed before
 * it reached the sample (sysfs's own buffer), and left the probe as it
 * was, registered.
 */
static int fault_still_registered(void)
{
	char text[8] = "";

	read_file(SAMPLE_REGISTERED, text, sizeof(text));
	CHECK(text[0] == '1', "a failed unregistration left registered=%s",
	      text);
	return fault_unregister_sample();
}

/* A registration that succeeded: its probe is listed and counts reads. */
static int fault_probe_works(void)
{
	long before = list_hits(sample_where);

	read_proc_repeatedly(20);
	CHECK(before >= 0 && list_hits(sample_where) >= before + 20,
	      "a registration that succeeded counts %ld, then %ld for 20 reads",
	      before, list_hits(sample_where));
	return 0;
}

/*
 * An event defined: listed, with its directory. Its files, or the whole
 * directory, may be missing, for kprobe_events' events as for these
 * (found on x86-debug): trace_add_event_call() goes on when the tracing
 * core fails under it. event_create_dir() logs "Could not create tracefs
 * '...' entry" (a file) or "directory" (the event's), event_subsystem_dir()
 * "Failed to create system directory" or "No memory to create event
 * subsystem" (the group's); and when trace_create_new_event() cannot
 * allocate the event's file it says nothing: the event then has no file
 * at all, so available_events does not list it either.
 */
static int fault_event_works(const char *event)
{
	static char available[65536];
	char path[160], text[4096] = "", kernel_said[16384];

	read_file(OKPROBE_EVENTS, text, sizeof(text));
	CHECK(strstr(text, event), "a definition that succeeded is not in okprobe_events: '%.200s'",
	      text);
	snprintf(path, sizeof(path), TRACING "/events/%s", event);
	if (!exists(path)) {
		kmsg_collect(fault_attempt_mark, kernel_said,
			     sizeof(kernel_said));
		fault_attempt_mark = -1; /* consumed */
		read_file(TRACING "/available_events", available,
			  sizeof(available));
		snprintf(text, sizeof(text), "%s\n", event);
		/* "okpfault/entry" is listed as "okpfault:entry". */
		text[strcspn(text, "/")] = ':';
		CHECK(strstr(kernel_said, "Failed to create system directory") ||
		      strstr(kernel_said, "No memory to create event subsystem") ||
		      strstr(kernel_said, "Could not create tracefs") ||
		      !strstr(available, text),
		      "a definition that succeeded has no %s, is in available_events and the kernel said nothing of it",
		      path);
	}
	return 0;
}

static int fault_entry_event_works(void)
{
	return fault_event_works("okpfault/entry");
}

static int fault_exit_event_works(void)
{
	return fault_event_works("okpfault/exit");
}

/* An event enabled: its probe is listed and counts reads. */
static int fault_enabled_event_works(void)
{
	char line[512];

	CHECK(list_line("ksys_read+", line, sizeof(line)),
	      "an event enabled has no probe in okprobe/list");
	return 0;
}

static const struct fault_call fault_calls[] = {
	{ "a breakpoint probe's registration", sample_params,
	  SAMPLE_REGISTERED, "1", NULL, fault_unregister_sample, NULL,
	  fault_probe_works, NULL, 0 },
	{ "a counting probe's registration", fault_counter_params,
	  SAMPLE_REGISTERED, "1", NULL, fault_unregister_sample, NULL, NULL,
	  NULL, 0 },
	{ "a return probe's registration", fault_return_params,
	  SAMPLE_REGISTERED, "1", NULL, fault_unregister_sample, NULL, NULL,
	  NULL, FAULT_NEEDS_RETURNS },
	{ "an optimized probe's unregistration", sample_params,
	  SAMPLE_REGISTERED, "0", fault_optimized_sample, NULL, NULL, NULL,
	  fault_still_registered, 0 },
	{ "an event's definition", NULL, OKPROBE_EVENTS,
	  "p:okpfault/entry ksys_read fd=$arg1 count=$arg3:u64 comm=$comm",
	  NULL, fault_remove_events, NULL, fault_entry_event_works, NULL,
	  FAULT_NEEDS_EVENTS },
	{ "a return event's definition", NULL, OKPROBE_EVENTS,
	  "r:okpfault/exit ksys_read ret=$retval:s64", NULL,
	  fault_remove_events, NULL, fault_exit_event_works, NULL,
	  FAULT_NEEDS_EVENTS | FAULT_NEEDS_RETURNS },
	{ "an event's enabling", NULL,
	  TRACING "/events/okpfault/entry/enable", "1", fault_define_event,
	  fault_disable_event, fault_remove_events, fault_enabled_event_works,
	  NULL, FAULT_NEEDS_EVENTS },
};

/*
 * Waits (up to 60 s) until the sample's probe shows [OPTIMIZED], or
 * fail_alloc's failure happened and the probe no longer waits for the
 * optimizer; *fired tells which. 1 if optimized.
 */
static int fault_wait_optimizer(char *line, size_t size, int *fired)
{
	char times[32] = "", jumps[512] = "";
	int waited;

	for (waited = 0; waited < 60000; waited += 50) {
		read_proc_repeatedly(10);
		if (list_line(sample_where, line, size) &&
		    strstr(line, "[OPTIMIZED]"))
			break;
		read_file(FAIL_ALLOC "/times", times, sizeof(times));
		file_line(DEBUGFS_DIR "/jumps", sample_where, jumps,
			  sizeof(jumps));
		if (atoi(times) == 0 && !strstr(jumps, "waiting"))
			break;
		usleep(50000);
	}
	read_file(FAIL_ALLOC "/times", times, sizeof(times));
	*fired = atoi(times) == 0;
	return strstr(line, "[OPTIMIZED]") != NULL;
}

/*
 * The optimizer's nth allocation fails (fail_alloc's space: each asks
 * with size 1) while it makes the sample's probe a jump: the probe stays
 * a breakpoint that counts, or becomes a jump, and after its unload the
 * text is as before; a probe registered again optimizes.
 */
static int fault_optimizer_sweep(void)
{
	char line[512] = "", text[32];
	int n, ret, optimized, fired, stayed = 0;
	long before;

	for (n = 1; n <= FAULT_MAX_ALLOCATIONS; n += fault_stride()) {
		CHECK(write_file(SYSCTL_OPTIMIZATION, "0") == 0,
		      "cannot turn optimization off");
		ret = load_module(SAMPLE_KO, sample_params);
		CHECK(ret == 0, "loading the sample: %s", strerror(-ret));
		snprintf(text, sizeof(text), "%d", n);
		CHECK(write_file(FAIL_ALLOC "/space", text) == 0 &&
		      write_file(FAIL_ALLOC "/times", "1") == 0 &&
		      write_file(FAIL_ALLOC "/probability", "100") == 0,
		      "cannot arm %s", FAIL_ALLOC);
		CHECK(write_file(SYSCTL_OPTIMIZATION, "1") == 0,
		      "cannot turn optimization on");
		line[0] = '\0';
		optimized = fault_wait_optimizer(line, sizeof(line), &fired);
		write_file(FAIL_ALLOC "/probability", "0");
		write_file(FAIL_ALLOC "/times", "0");
		if (!fired) {
			CHECK(optimized, "never [OPTIMIZED] with no failure: '%s'",
			      line);
			STEP(fault_unload_sample());
			STEP(fault_expect_clean("the optimizer", 0));
			say("# the optimizer: up to %d allocations, every %dth failed once: %d times the probe stayed a breakpoint",
			    n - 1, fault_stride(), stayed);
			return 0;
		}
		stayed += !optimized;
		before = list_hits(sample_where);
		read_proc_repeatedly(100);
		CHECK(list_hits(sample_where) >= before + 100,
		      "the optimizer's allocation %d failed: the probe counts %ld, then %ld for 100 reads",
		      n, before, list_hits(sample_where));
		STEP(fault_unload_sample());
		STEP(fault_expect_clean("the optimizer", n));
	}
	return fail("the optimizer: more than %d allocations",
		    FAULT_MAX_ALLOCATIONS);
}

static int fault_steps(void)
{
	size_t i;
	int ret;

	STEP(load_okprobe(default_params));
	ret = load_module(BENCH_KO, "");
	CHECK(ret == 0, "loading okprobe_bench.ko: %s", strerror(-ret));
	STEP(fault_keep_text());
	for (i = 0; i < ARRAY_SIZE(fault_calls); i++)
		STEP(fault_sweep(&fault_calls[i]));
	fault_release_cmdlines();
	STEP(fault_optimizer_sweep());
	ret = unload_module("okprobe_bench");
	CHECK(ret == 0, "unloading okprobe_bench: %s", strerror(-ret));
	return unload_okprobe();
}

static int test_fault_injection(void)
{
	int ret;

	if (!exists("/proc/thread-self/fail-nth") || !exists(FAILSLAB))
		return skip("no fault injection in this kernel");
	if (!exists(BENCH_KO))
		return skip("no okprobe_bench.ko");
	/* Run alone (okptest_only), no earlier test has mounted it. */
	mount_tracefs_if_needed();
	snprintf(fault_counter_params, sizeof(fault_counter_params),
		 "%s counter=1", sample_params);
	snprintf(fault_return_params, sizeof(fault_return_params),
		 "symbol=%s return=1", FAULT_FUNCTION);
	fail_nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	CHECK(fail_nth_fd >= 0, "cannot open fail-nth: %s", strerror(errno));
	/* Count GFP_KERNEL allocations too (failslab skips them by default). */
	CHECK(write_file(FAILSLAB "/ignore-gfp-wait", "N") == 0 &&
	      write_file(FAILSLAB "/verbose", "0") == 0,
	      "cannot set up %s", FAILSLAB);
	write_file("/dev/kmsg", FAULTS_BEGIN);
	ret = fault_steps();
	write_file("/dev/kmsg", FAULTS_END);
	write_file(FAILSLAB "/ignore-gfp-wait", "Y");
	close(fail_nth_fd);
	if (ret) {
		/* Events hold okprobe: they go first. */
		write_file(TRACING "/events/okpfault/entry/enable", "0");
		fault_remove_events();
		fault_release_cmdlines();
		unload_module("okprobe_sample");
		unload_module("okprobe_bench");
		unload_module("okprobe");
	}
	return ret;
}

/* ---- kmemleak ------------------------------------------------------------ */

#define KMEMLEAK "/sys/kernel/debug/kmemleak"

/*
 * kmemleak, where the kernel has it (the debug kernels): okptest clears
 * what the boot left when it starts (in a test guest); after the suite's hundreds of loads,
 * registrations, unregistrations and unloads of every kind, and another
 * cycle of each here, two scans (an object must stay unreferenced across
 * them, and be older than kmemleak's five seconds) find nothing.
 */
static int test_kmemleak_clean(void)
{
	static char report[8192];
	long long started;
	char params[96];
	int ret;

	if (!exists(KMEMLEAK))
		return skip("no kmemleak in this kernel");
	STEP(load_okprobe_and_sample());
	ret = unload_module("okprobe_sample");
	CHECK(ret == 0, "unloading the sample: %s", strerror(-ret));
	snprintf(params, sizeof(params), "symbol=ksys_read return=1");
	ret = load_module(SAMPLE_KO, params);
	/* Return probes need rethook, which riscv 6.1 has not. */
	CHECK(ret == 0 || ret == -EOPNOTSUPP, "the sample with %s: %s", params,
	      strerror(-ret));
	read_proc_repeatedly(100);
	ret = ret ? 0 : unload_module("okprobe_sample");
	CHECK(ret == 0, "unloading the sample: %s", strerror(-ret));
	if (exists(OKPROBE_EVENTS)) {
		CHECK(write_file(OKPROBE_EVENTS,
				 "p:okpleak/read ksys_read fd=$arg1") == 0 &&
		      write_file(TRACING "/events/okpleak/read/enable", "1") ==
			      0,
		      "cannot define and enable okpleak/read");
		read_proc_repeatedly(100);
		CHECK(write_file(TRACING "/events/okpleak/read/enable", "0") ==
			      0 &&
		      write_file(OKPROBE_EVENTS, "-:okpleak/read") == 0,
		      "cannot disable and remove okpleak/read");
	}
	STEP(unload_okprobe());
	sleep(6);
	started = now_ms();
	CHECK(write_file(KMEMLEAK, "scan") == 0, "cannot scan");
	CHECK(write_file(KMEMLEAK, "scan") == 0, "cannot scan");
	say("# kmemleak_clean: two scans took %lld s",
	    (now_ms() - started) / 1000);
	read_file(KMEMLEAK, report, sizeof(report));
	/* On a real machine, only what okprobe's modules allocated. */
	if (!getenv("okptest") && !strstr(report, "[okprobe"))
		return 0;
	if (report[0]) {
		char *line = strtok(report, "\n");
		int lines;

		/* The first reports whole, for their backtraces. */
		for (lines = 0; line && lines < 60; lines++) {
			say("# kmemleak: %s", line);
			line = strtok(NULL, "\n");
		}
		return fail("kmemleak reports unreferenced objects (above)");
	}
	return 0;
}
