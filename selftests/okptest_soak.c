// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's soak (issue 37; make soak): for okptest_soak_seconds, one
 * random operation after another, all of them at once in the kernel,
 * under a syscall workload:
 *
 *  - okprobe_bench.ko's passes over the scale sample of real kernel
 *    instructions: okprobe's probes one by one (breakpoints the optimizer
 *    turns into jumps), okprobe_register_many(), the kernel's kprobes;
 *    and single probes of each kind on the bench's own target function,
 *    hit and removed: breakpoint, optimized, counting, return (exits and
 *    rethook), the kernel's kprobe and kretprobe, a bare ftrace_ops;
 *  - okprobe_events entry and return events on real kernel functions,
 *    defined, enabled, disabled and deleted; the kernel's kprobe_events on
 *    the same functions beside them;
 *  - okprobe's and the kernel's optimization sysctls, okprobe's global
 *    enabled switch, the function tracer on one of those functions;
 *  - the sample client module loading, unregistering, registering again
 *    and unloading.
 *
 * A refused operation is counted by its errno, not failed: the soak's
 * checks are the kernel's (a clean console: tools/guest_run.py) and its
 * end, where everything is removed and then nothing of okprobe is left,
 * every sampled site's text is what it was before the first operation,
 * and okprobe unloads. It prints the operations done by kind, the hits of
 * okprobe's probes it saw and the refusals by errno. The operations come
 * from a seeded generator; the seed is printed (okptest_soak_seed=N
 * repeats a run's sequence, not its timing).
 *
 * A part of okptest.c (one program, one test list), included by it.
 */

#define SOAK_GROUP "okpsoak"
#define SOAK_KERNEL_GROUP "okpsoakk"
#define SOAK_SLOTS 6
#define SOAK_PROGRESS_SECONDS 60

/* Real kernel functions of the workload's syscalls, on both arches. */
static const char *const soak_functions[] = {
	"ksys_read", "ksys_write", "vfs_read", "vfs_write", "pipe_read",
	"pipe_write", "do_sys_openat2", "getname_flags", "do_filp_open",
	"filp_close", "rw_verify_area", "seq_read_iter",
};

/* okprobe_bench.ko's single-probe configurations (its "arm" command). */
static const char *const soak_arm_configs[] = {
	"okprobe-pre", "okprobe-post", "okprobe-count", "okprobe-args",
	"okretprobe", "okretprobe-rethook", "kprobe", "kretprobe", "ftrace-ops",
};

enum soak_operation {
	SOAK_COVER, SOAK_UNCOVER, SOAK_ARM, SOAK_EVENT_DEFINE,
	SOAK_EVENT_SWITCH, SOAK_EVENT_DELETE, SOAK_KERNEL_EVENT,
	SOAK_OPTIMIZATION, SOAK_KERNEL_OPTIMIZATION, SOAK_ENABLED,
	SOAK_TRACER, SOAK_SAMPLE, SOAK_OPERATIONS
};

static const char *const soak_operation_names[SOAK_OPERATIONS] = {
	"cover", "uncover", "arm", "event-define", "event-switch",
	"event-delete", "kernel-event", "optimization", "kernel-optimization",
	"enabled", "tracer", "sample",
};

static struct {
	unsigned long long random;
	long done[SOAK_OPERATIONS];
	long refused[SOAK_OPERATIONS];
	long errnos[256];
	long hits, last_listed, bench_calls;
	int covering, defined[SOAK_SLOTS], kernel_defined[SOAK_SLOTS];
	int tracer;
} soak;

/* xorshift64*: the same sequence for the same seed on every machine. */
static unsigned int soak_random(unsigned int below)
{
	soak.random ^= soak.random >> 12;
	soak.random ^= soak.random << 25;
	soak.random ^= soak.random >> 27;
	return (unsigned int)((soak.random * 2685821657736338717ULL) >> 32) %
	       below;
}

/* Counts an operation's outcome (0 or -errno). */
static void soak_count(enum soak_operation operation, int ret)
{
	soak.done[operation]++;
	if (!ret)
		return;
	soak.refused[operation]++;
	if (-ret > 0 && -ret < (int)ARRAY_SIZE(soak.errnos))
		soak.errnos[-ret]++;
}

/*
 * The hits okprobe's list shows summed; what grew since the last reading
 * is added to soak.hits (a lower bound: hits of a probe removed between
 * two readings are not seen).
 */
static void soak_read_hits(void)
{
	long listed = 0;
	char *at;

	if (read_file(DEBUGFS_DIR "/list", bench_big_file,
		      sizeof(bench_big_file)))
		return;
	for (at = strstr(bench_big_file, "hits="); at;
	     at = strstr(at + 5, "hits="))
		listed += strtol(at + 5, NULL, 10);
	if (listed > soak.last_listed)
		soak.hits += listed - soak.last_listed;
	soak.last_listed = listed;
}

static int soak_bench(const char *command)
{
	char reply[256];

	return bench_command(command, reply, sizeof(reply));
}

static void soak_cover(void)
{
	static const char *const kinds[] = { "okprobe", "okprobe-many",
					     "kprobe" };
	char command[64];
	int ret;

	if (soak.covering) {
		ret = soak_bench("uncover");
		soak.covering = ret != 0;
		soak_count(SOAK_UNCOVER, ret);
		return;
	}
	snprintf(command, sizeof(command), "cover %s %d",
		 kinds[soak_random(ARRAY_SIZE(kinds))],
		 1 + (int)soak_random(bench_site_count));
	ret = soak_bench(command);
	soak.covering = ret == 0;
	soak_count(SOAK_COVER, ret);
}

/* One probe of a random kind on the bench's target, hit, removed. */
static void soak_arm(void)
{
	char command[64];
	int ret;

	snprintf(command, sizeof(command), "arm %s",
		 soak_arm_configs[soak_random(ARRAY_SIZE(soak_arm_configs))]);
	ret = soak_bench(command);
	if (!ret) {
		ret = soak_bench("run 100");
		soak.bench_calls += ret ? 0 : 100;
		soak_bench("disarm");
	}
	soak_count(SOAK_ARM, ret);
}

/* Writes "1" or "0", at random, to a switch file (enable, registered). */
static int soak_write_switch(const char *path)
{
	return write_file(path, soak_random(2) ? "1" : "0");
}

static void soak_event_define(void)
{
	int slot = soak_random(SOAK_SLOTS);
	const char *function =
		soak_functions[soak_random(ARRAY_SIZE(soak_functions))];
	char line[128];
	int ret;

	if (soak_random(2))
		snprintf(line, sizeof(line), "p:" SOAK_GROUP "/e%d %s arg1=$arg1",
			 slot, function);
	else
		snprintf(line, sizeof(line), "r:" SOAK_GROUP "/e%d %s ret=$retval",
			 slot, function);
	ret = write_file(OKPROBE_EVENTS, line);
	soak.defined[slot] |= ret == 0;
	soak_count(SOAK_EVENT_DEFINE, ret);
}

static void soak_event_switch(void)
{
	char path[128];
	int slot = soak_random(SOAK_SLOTS);

	snprintf(path, sizeof(path), TRACING "/events/" SOAK_GROUP "/e%d/enable",
		 slot);
	soak_count(SOAK_EVENT_SWITCH, soak_write_switch(path));
}

static void soak_event_delete(void)
{
	char line[64];
	int slot = soak_random(SOAK_SLOTS), ret;

	snprintf(line, sizeof(line), "-:" SOAK_GROUP "/e%d", slot);
	ret = write_file(OKPROBE_EVENTS, line);
	if (!ret)
		soak.defined[slot] = 0;
	soak_count(SOAK_EVENT_DELETE, ret);
}

/* The kernel's kprobe_events beside: define, switch or delete. */
static void soak_kernel_event(void)
{
	int slot = soak_random(SOAK_SLOTS), ret;
	char line[128];

	if (!kernel_has_kprobes || !exists(KPROBE_EVENTS))
		return;
	switch (soak_random(3)) {
	case 0:
		snprintf(line, sizeof(line), "%c:" SOAK_KERNEL_GROUP "/k%d %s",
			 soak_random(2) ? 'p' : 'r', slot,
			 soak_functions[soak_random(ARRAY_SIZE(soak_functions))]);
		ret = write_file(KPROBE_EVENTS, line);
		soak.kernel_defined[slot] |= ret == 0;
		break;
	case 1:
		snprintf(line, sizeof(line),
			 TRACING "/events/" SOAK_KERNEL_GROUP "/k%d/enable",
			 slot);
		ret = soak_write_switch(line);
		break;
	default:
		snprintf(line, sizeof(line), "-:" SOAK_KERNEL_GROUP "/k%d",
			 slot);
		ret = write_file(KPROBE_EVENTS, line);
		if (!ret)
			soak.kernel_defined[slot] = 0;
		break;
	}
	soak_count(SOAK_KERNEL_EVENT, ret);
}

static void soak_switch(enum soak_operation operation, const char *path)
{
	if (exists(path))
		soak_count(operation, soak_write_switch(path));
}

/* The function tracer on one of the functions, or off. */
static void soak_tracer(void)
{
	int ret;

	if (soak.tracer) {
		ret = write_file(TRACING "/current_tracer", "nop");
		soak.tracer = ret != 0;
	} else {
		ret = write_file(TRACING "/set_ftrace_filter",
				 soak_functions[soak_random(
					 ARRAY_SIZE(soak_functions))]);
		if (!ret)
			ret = write_file(TRACING "/current_tracer",
					 "function");
		soak.tracer = ret == 0;
	}
	soak_count(SOAK_TRACER, ret);
}

/*
 * The sample client: load (a breakpoint or jump, a counting or a return
 * probe on one of the functions), unregister, register again or unload.
 */
static void soak_sample(void)
{
	static const char *const kinds[] = { "", " counter=1", " return=1" };
	char params[96];
	int ret;

	snprintf(params, sizeof(params), "symbol=%s%s",
		 soak_functions[soak_random(ARRAY_SIZE(soak_functions))],
		 kinds[soak_random(ARRAY_SIZE(kinds))]);
	if (!module_loaded("okprobe_sample"))
		ret = load_module(SAMPLE_KO, params);
	else if (soak_random(3))
		ret = soak_write_switch(SAMPLE_REGISTERED);
	else
		ret = unload_module("okprobe_sample");
	soak_count(SOAK_SAMPLE, ret);
}

static void soak_step(int has_tracer)
{
	switch (soak_random(10)) {
	case 0:
		soak_cover();
		break;
	case 1:
		if (soak.covering)
			soak_cover();
		else
			soak_arm();
		break;
	case 2:
		soak_event_define();
		break;
	case 3:
		soak_event_switch();
		break;
	case 4:
		soak_event_delete();
		break;
	case 5:
		soak_kernel_event();
		break;
	case 6:
		switch (soak_random(3)) {
		case 0:
			soak_switch(SOAK_OPTIMIZATION, SYSCTL_OPTIMIZATION);
			break;
		case 1:
			soak_switch(SOAK_KERNEL_OPTIMIZATION,
				    KERNEL_OPTIMIZATION);
			break;
		default:
			soak_switch(SOAK_ENABLED, DEBUGFS_DIR "/enabled");
			break;
		}
		break;
	case 7:
		if (has_tracer)
			soak_tracer();
		break;
	case 8:
		soak_sample();
		break;
	default:
		/* A breath for the workload and the optimizer. */
		usleep(20 * 1000);
		break;
	}
}

static void soak_say_counts(long seconds)
{
	char line[1024], errors[512];
	size_t used = 0, errors_used = 0;
	long total = 0, refused = 0;
	int i;

	for (i = 0; i < SOAK_OPERATIONS; i++) {
		total += soak.done[i];
		refused += soak.refused[i];
		used += snprintf(line + used, sizeof(line) - used,
				 " %s=%ld/%ld", soak_operation_names[i],
				 soak.done[i] - soak.refused[i], soak.done[i]);
		if (used >= sizeof(line))
			used = sizeof(line) - 1;
	}
	errors[0] = '\0';
	for (i = 1; i < (int)ARRAY_SIZE(soak.errnos); i++) {
		if (!soak.errnos[i])
			continue;
		errors_used += snprintf(errors + errors_used,
					sizeof(errors) - errors_used,
					" %s:%ld", strerrorname_np(i) ?: "?",
					soak.errnos[i]);
		if (errors_used >= sizeof(errors))
			errors_used = sizeof(errors) - 1;
	}
	say("# soak: %ld s: %ld operations, %ld refused; done/tried by kind:%s",
	    seconds, total, refused, line);
	say("# soak: okprobe's probes hit at least %ld times (its list), the bench target called %ld times under a probe",
	    soak.hits, soak.bench_calls);
	say("# soak: refusals by errno:%s", errors[0] ? errors : " none");
}

/* Removes whatever the soak left; returns 0 or the first failure. */
static int soak_remove_everything(void)
{
	char line[64];
	int slot, failed = 0;

	if (soak.tracer)
		failed |= write_file(TRACING "/current_tracer", "nop");
	if (exists(TRACING "/set_ftrace_filter"))
		clear_file(TRACING "/set_ftrace_filter");
	for (slot = 0; slot < SOAK_SLOTS; slot++) {
		snprintf(line, sizeof(line),
			 TRACING "/events/" SOAK_GROUP "/e%d/enable", slot);
		if (exists(line))
			failed |= write_file(line, "0");
		snprintf(line, sizeof(line),
			 TRACING "/events/" SOAK_KERNEL_GROUP "/k%d/enable",
			 slot);
		if (exists(line))
			failed |= write_file(line, "0");
	}
	for (slot = 0; slot < SOAK_SLOTS; slot++) {
		snprintf(line, sizeof(line), "-:" SOAK_GROUP "/e%d", slot);
		if (soak.defined[slot])
			failed |= write_file(OKPROBE_EVENTS, line);
		snprintf(line, sizeof(line), "-:" SOAK_KERNEL_GROUP "/k%d",
			 slot);
		if (soak.kernel_defined[slot])
			failed |= write_file(KPROBE_EVENTS, line);
	}
	failed |= soak_bench("uncover");
	failed |= soak_bench("disarm");
	if (module_loaded("okprobe_sample"))
		failed |= unload_module("okprobe_sample");
	if (exists(KERNEL_OPTIMIZATION))
		failed |= write_file(KERNEL_OPTIMIZATION, "1");
	failed |= write_file(SYSCTL_OPTIMIZATION, "1");
	failed |= write_file(DEBUGFS_DIR "/enabled", "1");
	return failed;
}

/*
 * The events' functions' entries as sites too, so that their text is
 * compared at the end (one this kernel does not have is left out).
 */
static int soak_add_function_sites(int *resolved)
{
	char command[64];
	unsigned long address;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(soak_functions); i++) {
		address = kallsyms_address(soak_functions[i]);
		if (!address)
			continue;
		snprintf(command, sizeof(command), "site %lx", address);
		*resolved += soak_bench(command) == 0;
	}
	return 0;
}

static int soak_steps(long seconds)
{
	const char *seed_text = getenv("okptest_soak_seed");
	unsigned long long seed;
	long long start, progress, deadline;
	int resolved, jumps, changed, optimized, ret, has_tracer;
	char tracers[256] = "", list[1024] = "";
	long hits, missed;
	pid_t workload;

	if (seed_text)
		seed = strtoull(seed_text, NULL, 0);
	else
		CHECK(getrandom(&seed, sizeof(seed), 0) == sizeof(seed),
		      "getrandom: %s", strerror(errno));
	soak.random = seed | 1;
	say("# soak: seed %llu (okptest_soak_seed=%llu repeats it), %ld s",
	    seed, seed, seconds);
	read_file(TRACING "/available_tracers", tracers, sizeof(tracers));
	has_tracer = strstr(tracers, "function") != NULL;
	STEP(load_okprobe(default_params));
	ret = load_module(BENCH_KO, "");
	CHECK(ret == 0, "loading okprobe_bench.ko: %s", strerror(-ret));
	STEP(bench_prepare_sample(&resolved));
	say("# soak: %d sites of the sample resolved (%s)", resolved,
	    bench_sites_about);
	STEP(soak_add_function_sites(&resolved));
	workload = storm_workload_of(1);
	CHECK(workload > 0, "fork: %s", strerror(errno));
	start = now_ms();
	progress = start + SOAK_PROGRESS_SECONDS * 1000LL;
	deadline = start + seconds * 1000LL;
	while (now_ms() < deadline) {
		soak_step(has_tracer);
		soak_read_hits();
		if (now_ms() >= progress) {
			soak_say_counts((now_ms() - start) / 1000);
			progress += SOAK_PROGRESS_SECONDS * 1000LL;
		}
	}
	kill(-workload, SIGKILL);
	while (waitpid(workload, NULL, 0) < 0 && errno == EINTR)
		;
	soak_say_counts((now_ms() - start) / 1000);
	CHECK(!soak_remove_everything(), "removing what the soak made failed");
	STEP(bench_cover_state(&jumps, &changed, &hits, &missed, &optimized));
	CHECK(!changed && !jumps,
	      "after the soak %d of the %d sampled sites' text differ from before it (%d jumps)",
	      changed, resolved, jumps);
	read_file(DEBUGFS_DIR "/list", list, sizeof(list));
	CHECK(!list[0], "after the soak okprobe/list still shows '%.200s'",
	      list);
	CHECK(!exists(TRACING "/events/" SOAK_GROUP),
	      "after the soak its okprobe events are left");
	CHECK(!write_file(BENCH_CONTROL, "sites-clear"), "sites-clear");
	ret = unload_module("okprobe_bench");
	CHECK(ret == 0, "unloading okprobe_bench: %s", strerror(-ret));
	return unload_okprobe();
}

/* okptest_soak_seconds (make soak); skipped without it. */
static int test_soak(void)
{
	const char *seconds = getenv("okptest_soak_seconds");
	int ret;

	if (!seconds || atol(seconds) <= 0)
		return skip("no okptest_soak_seconds (make soak)");
	if (!exists(BENCH_KO) || !exists(BENCH_SITES))
		return skip("no okprobe_bench.ko or no " BENCH_SITES);
	mount_tracefs_if_needed();
	ret = soak_steps(atol(seconds));
	if (ret) {
		soak_remove_everything();
		unload_module("okprobe_bench");
		unload_module("okprobe");
	}
	return ret;
}
