// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part: entry, counting and return probes on
 * real kernel functions: the sample client at a function's entry
 * (through ftrace or past its call site), counting probes, return probes
 * with their values, and unloading with returns pending.
 *
 * A part of okptest.c (one program, one test list), included by it.
 */


/*
 * An entry probe as a client of <linux/kprobes.h> writes it: the sample
 * client with symbol=ksys_read and no offset. Where ftrace saves registers
 * it is an ftrace probe ([FTRACE]); on a kernel whose ftrace does not
 * (riscv 6.12) it sits at the first instruction past the call site
 * ([AFTER FTRACE]); without ftrace at ksys_read+0 itself. It counts every
 * read; okprobe writes no byte there, so ksys_read stays out of the
 * kernel's kprobe blacklist and a kprobe_events probe at +0 (kprobes on
 * ftrace) counts the same reads beside it.
 */
#define ENTRY_READS 1000

/*
 * The hits column of kprobe_profile for event (GROUP/NAME; the file names
 * it by NAME alone), or -1.
 */
static long kprobe_profile_hits(const char *event)
{
	static char profile[1 << 14];
	const char *slash = strchr(event, '/');
	char *line;
	long hits = -1;

	if (read_file("/sys/kernel/tracing/kprobe_profile", profile,
		      sizeof(profile)))
		return -1;
	for (line = strtok(profile, "\n"); line; line = strtok(NULL, "\n")) {
		char name[128];
		long count;

		if (sscanf(line, "%127s %ld", name, &count) == 2 &&
		    (!strcmp(name, event) ||
		     (slash && !strcmp(name, slash + 1))))
			hits = count;
	}
	return hits;
}

#define FTRACE_ENABLED "/proc/sys/kernel/ftrace_enabled"

/* Whether entry_probe_steps() left the function tracer on (a failure). */
static int entry_tracer_started;

static int entry_probe_steps(void)
{
	const int has_ftrace = kallsyms_address("ftrace_caller") != 0;
	const int on_ftrace = kallsyms_address("kprobe_ftrace_handler") != 0;
	const int via_ftrace = kallsyms_address("ftrace_regs_caller") != 0;
	const char *const filter = getenv("okptest_tracer_functions");
	char line[512], tracers[512], current[64] = "";
	long before, after, event;
	int ret;

	STEP(load_okprobe(default_params));
	ret = load_module(SAMPLE_KO, "symbol=ksys_read");
	CHECK(ret == 0, "the sample client at ksys_read+0: %s", strerror(-ret));
	CHECK(list_line("ksys_read+", line, sizeof(line)),
	      "no ksys_read line in okprobe/list");
	if (via_ftrace)
		CHECK(strstr(line, " [FTRACE]"), "not through ftrace: %s", line);
	else if (has_ftrace)
		CHECK(strstr(line, " [AFTER FTRACE]"),
		      "not past the ftrace call site: %s", line);
	else
		CHECK(!strstr(line, "FTRACE]"), "ftrace without ftrace: %s",
		      line);
	CHECK(!via_ftrace || !blacklist_lists("ksys_read"),
	      "an ftrace entry probe put ksys_read in the kprobe blacklist");
	before = list_hits("ksys_read+");
	read_proc_repeatedly(ENTRY_READS);
	after = list_hits("ksys_read+");
	CHECK(after - before >= ENTRY_READS, "%ld hits for %d reads",
	      after - before, ENTRY_READS);
	/* The kernel's own probe at +0, at the same time, where both can. */
	if (via_ftrace && on_ftrace && exists(KPROBE_EVENTS)) {
		ret = write_file(KPROBE_EVENTS, "p:okptest/entry ksys_read");
		CHECK(ret == 0, "'p:okptest/entry ksys_read' beside okprobe: %s",
		      strerror(-ret));
		ret = write_file("/sys/kernel/tracing/events/okptest/entry/enable",
				 "1");
		CHECK(ret == 0, "enabling okptest/entry: %s", strerror(-ret));
		before = list_hits("ksys_read+");
		event = kprobe_profile_hits("okptest/entry");
		read_proc_repeatedly(ENTRY_READS);
		after = list_hits("ksys_read+");
		event = kprobe_profile_hits("okptest/entry") - event;
		write_file("/sys/kernel/tracing/events/okptest/entry/enable",
			   "0");
		CHECK(clear_okptest_events() == 0, "clearing kprobe_events");
		CHECK(after - before >= ENTRY_READS && event >= ENTRY_READS,
		      "okprobe %ld and the kprobe event %ld hits for %d reads",
		      after - before, event, ENTRY_READS);
	}
	/*
	 * The function tracer on every function, ksys_read's call site too;
	 * or (okptest_tracer_functions, a set_ftrace_filter line) on those
	 * only: riscv-ftrace's lockdep kernel spends two minutes of TCG
	 * tracing every function over these reads, and riscv-6.12, riscv-7.2
	 * and x86's 6.1 trace every function here already (x86's other
	 * kernels, also filtered, spent 18-51 s each on it).
	 */
	tracers[0] = '\0';
	read_file(TRACING "/available_tracers", tracers, sizeof(tracers));
	read_file(TRACING "/current_tracer", current, sizeof(current));
	if (strstr(tracers, "function") && (guest_init || !strcmp(current, "nop\n"))) {
		entry_tracer_started = 1;
		/* A write without O_TRUNC would add to a filter already set. */
		if (filter) {
			clear_file(TRACING "/set_ftrace_filter");
			CHECK(write_file(TRACING "/set_ftrace_filter", filter) == 0,
			      "set_ftrace_filter does not take '%s'", filter);
		}
		CHECK(write_file(TRACING "/current_tracer", "function") == 0,
		      "the function tracer does not start");
		before = list_hits("ksys_read+");
		read_proc_repeatedly(ENTRY_READS);
		after = list_hits("ksys_read+");
		CHECK(write_file(TRACING "/current_tracer", "nop") == 0,
		      "the function tracer does not stop");
		entry_tracer_started = 0;
		/* An empty filter: every function again, for what follows. */
		if (filter)
			clear_file(TRACING "/set_ftrace_filter");
		CHECK(after - before >= ENTRY_READS,
		      "%ld hits for %d reads under the function tracer",
		      after - before, ENTRY_READS);
	}
	/*
	 * sysctl kernel.ftrace_enabled=0 stops every ftrace callback: an
	 * entry probe through ftrace stays registered and counts nothing
	 * (as the kernel's kprobes on ftrace), then counts again at 1. One
	 * past the call site is a breakpoint or a jump: it goes on counting.
	 */
	ret = has_ftrace && exists(FTRACE_ENABLED) ?
		write_file(FTRACE_ENABLED, "0") : -ENOENT;
	/* Newer kernels (7.3) keep ftrace on and refuse the 0 ("deprecated"). */
	if (ret == -EOPNOTSUPP)
		say("# kernel.ftrace_enabled=0 is refused here (EOPNOTSUPP): nothing to stop");
	if (ret != -ENOENT && ret != -EOPNOTSUPP) {
		CHECK(ret == 0, "kernel.ftrace_enabled does not go 0: %s",
		      strerror(-ret));
		before = list_hits("ksys_read+");
		read_proc_repeatedly(ENTRY_READS);
		after = list_hits("ksys_read+");
		ret = write_file(FTRACE_ENABLED, "1");
		CHECK(ret == 0, "kernel.ftrace_enabled does not go back to 1");
		CHECK(via_ftrace ? after == before : after - before >= ENTRY_READS,
		      "%ld hits for %d reads with kernel.ftrace_enabled=0 (%s)",
		      after - before, ENTRY_READS,
		      via_ftrace ? "through ftrace" : "past the call site");
		before = list_hits("ksys_read+");
		read_proc_repeatedly(ENTRY_READS);
		after = list_hits("ksys_read+");
		CHECK(after - before >= ENTRY_READS,
		      "%ld hits for %d reads once kernel.ftrace_enabled is 1 again",
		      after - before, ENTRY_READS);
	}
	ret = unload_module("okprobe_sample");
	CHECK(ret == 0, "unloading the sample client: %s", strerror(-ret));
	return unload_okprobe();
}

static int test_entry_probe(void)
{
	int ret;

	mount_tracefs_if_needed();
	ret = entry_probe_steps();
	if (ret) {
		write_file(FTRACE_ENABLED, "1");
		if (entry_tracer_started) {
			write_file(TRACING "/current_tracer", "nop");
			if (getenv("okptest_tracer_functions"))
				clear_file(TRACING "/set_ftrace_filter");
		}
		undo_sample_and_events();
	}
	return ret;
}

/* okprobe_selftest.ko's return probe tests alone (return_only=1). */
static int test_return_in_kernel(void)
{
	return in_kernel_part("return_only", "return probe", 1);
}

/*
 * Return probes as a user tries them, with the sample client's return=1
 * on real kernel functions: ksys_read's return values for one process
 * against the kernel's own r: kprobe event in a second phase; readers
 * killed inside ksys_read; okprobe unloaded while readers sleep inside it
 * (they return to their callers when woken); do_exit, which never
 * returns (the instances go back when the tasks are reaped).
 */
#define RETURN_READS 100
#define RETURN_SLEEPERS 8
#define SAMPLE_PARAMETERS "/sys/module/okprobe_sample/parameters/"

static long sample_counter(const char *name)
{
	char path[128], value[64];

	snprintf(path, sizeof(path), SAMPLE_PARAMETERS "%s", name);
	if (read_file(path, value, sizeof(value)))
		return -1;
	return strtol(value, NULL, 10);
}

/*
 * The sample client's counting probe (counter=1: OKPROBE_FLAG_COUNTER, no
 * handler) on the instruction unload_while_optimized optimizes in
 * ksys_read: listed [COUNTER], optimized (its detour only adds to a per-CPU
 * count), and okprobe_read_count() counts every read of two processes.
 */
static int test_counter_probe(void)
{
	const int reads = IS_X86 ? 3000 : 1000;
	char params[96], line[512] = "";
	long before, after;
	int optimized;

	snprintf(params, sizeof(params), "%s counter=1", sample_params);
	STEP(load_okprobe_and_sample_with(params));
	optimized = wait_listed_optimized(sample_where, line, sizeof(line));
	before = sample_counter("entries");
	read_from_two_processes(reads);
	after = sample_counter("entries");
	STEP(unload_sample_and_okprobe());
	CHECK(strstr(line, "[COUNTER]") || !optimized,
	      "okprobe/list shows '%s'", line);
	CHECK(optimized, "the counting probe never showed [OPTIMIZED]: '%s'",
	      line);
	CHECK(before >= 0 && after - before >= 2 * reads,
	      "counted %ld, then %ld: %ld for %d reads", before, after,
	      after - before, 2 * reads);
	return 0;
}

/*
 * A child that waits for a byte on go (with readv: neither ksys_read nor
 * an open), then makes RETURN_READS calls and exits: reads of 1, 2, ...
 * bytes of /dev/zero, or (opens) opens of /dev/zero (closed again: the
 * same descriptor each time) and of a missing file (-ENOENT) in turn.
 */
/*
 * What start_waiting_reader()'s child reads: /dev/zero, or a file
 * probe_events_position_steps() made.
 */
static const char *reader_file = "/dev/zero";

static pid_t start_waiting_reader(int *go, int opens)
{
	int pipes[2];
	pid_t child;

	if (pipe(pipes))
		return -1;
	child = fork();
	if (child == 0) {
		static char buffer[RETURN_READS];
		struct iovec byte = { buffer, 1 };
		int zero, i;

		close(pipes[1]);
		if (readv(pipes[0], &byte, 1) != 1)
			_exit(2);
		for (i = 0; opens && i < RETURN_READS; i++) {
			int fd = open(i % 2 ? "/nonexistent" : "/dev/zero",
				      O_RDONLY);

			if ((fd < 0) != (i % 2))
				_exit(3);
			if (fd >= 0)
				close(fd);
		}
		if (opens)
			_exit(0);
		zero = open(reader_file, O_RDONLY);
		for (i = 1; i <= RETURN_READS; i++)
			if (read(zero, buffer, i) != i)
				_exit(3);
		_exit(0);
	}
	close(pipes[0]);
	*go = pipes[1];
	return child;
}

static int finish_reader(pid_t child, int go)
{
	int status = 0;

	if (write(go, "g", 1) != 1)
		return -1;
	close(go);
	if (waitpid(child, &status, 0) != child)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* The r: event's returns and their sum, from the trace. */
static int traced_returns(long *sum)
{
	static char trace[1 << 17];
	char *line;
	int count = 0;

	*sum = 0;
	if (read_file(TRACING "/trace", trace, sizeof(trace)))
		return -1;
	for (line = strtok(trace, "\n"); line; line = strtok(NULL, "\n")) {
		char *value = strstr(line, " ret=");

		if (line[0] == '#' || !value)
			continue;
		/* $retval prints as unsigned hex: -2 is 0xff...fe. */
		*sum += (long)strtoull(value + 5, NULL, 0);
		count++;
	}
	return count;
}

/*
 * One function's returns for one child's RETURN_READS calls: okprobe's
 * (the sample client, pid=) and, in a second phase, the kernel's r: event
 * (filtered to the child), count and sum alike. opens: do_sys_openat2's
 * workload, whose sum is RETURN_READS / 2 times (the descriptor - 2).
 */
static int return_values_of(const char *symbol, int opens)
{
	const long reads_sum = RETURN_READS * (RETURN_READS + 1) / 2;
	char params[128], line[512], filter[64], event[128], needle[64];
	long returns, sum, entries, traced_sum;
	int go, ret, traced;
	pid_t child;

	child = start_waiting_reader(&go, opens);
	CHECK(child > 0, "fork: %s", strerror(errno));
	snprintf(params, sizeof(params), "symbol=%s return=1 pid=%d", symbol,
		 child);
	ret = load_module(SAMPLE_KO, params);
	if (ret) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	CHECK(ret == 0, "the sample client's return probe on %s: %s", symbol,
	      strerror(-ret));
	snprintf(needle, sizeof(needle), "%s+", symbol);
	CHECK(list_line(needle, line, sizeof(line)),
	      "no %s line in okprobe/list", symbol);
	CHECK(strstr(line, " [RETURN]"), "not a [RETURN] line: %s", line);
	ret = finish_reader(child, go);
	CHECK(ret == 0, "the child exited with %d", ret);
	returns = sample_counter("returns");
	sum = sample_counter("return_sum");
	entries = sample_counter("entries");
	ret = unload_module("okprobe_sample");
	CHECK(ret == 0, "unloading the sample client: %s", strerror(-ret));
	/*
	 * do_sys_openat2() returns an int on newer kernels (7.3): the upper half of
	 * rax, which a return probe reads whole as the kernel's own do
	 * (regs_return_value), is then undefined. The descriptors' sum is
	 * in the lower half.
	 */
	if (opens)
		sum = (int)sum;
	CHECK(entries == RETURN_READS && returns == RETURN_READS &&
	      (opens ? (sum + RETURN_READS) % (RETURN_READS / 2) == 0 &&
		       (sum + RETURN_READS) / (RETURN_READS / 2) >= 3 :
		       sum == reads_sum),
	      "%d calls of %s: %ld entries, %ld returns adding up to %ld",
	      RETURN_READS, symbol, entries, returns, sum);
	say("# okretprobe on %s: %ld returns adding up to %ld", symbol,
	    returns, sum);
	/* The kernel's own return probe, on the same workload. */
	if (!exists(KPROBE_EVENTS))
		return 0;
	child = start_waiting_reader(&go, opens);
	CHECK(child > 0, "fork: %s", strerror(errno));
	snprintf(event, sizeof(event), "r:okptest/ret %s ret=$retval", symbol);
	ret = write_file(KPROBE_EVENTS, event);
	if (!ret) {
		snprintf(filter, sizeof(filter), "common_pid == %d", child);
		ret = write_file(TRACING "/events/okptest/ret/filter", filter);
	}
	if (!ret)
		ret = write_file(TRACING "/trace", "");
	if (!ret)
		ret = write_file(TRACING "/events/okptest/ret/enable", "1");
	if (ret) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		clear_okptest_events();
	}
	/*
	 * Without kprobes on ftrace (riscv 6.12) the kernel refuses a kprobe,
	 * and so a kretprobe, at a traced function's call site.
	 */
	if (ret == -EINVAL && !kallsyms_address("kprobe_ftrace_handler")) {
		say("# the kernel's r: event on %s: refused (no kprobes on ftrace), nothing to compare",
		    symbol);
		return 0;
	}
	CHECK(ret == 0, "the kernel's r: event on %s: %s", symbol,
	      strerror(-ret));
	ret = finish_reader(child, go);
	write_file(TRACING "/events/okptest/ret/enable", "0");
	traced = traced_returns(&traced_sum);
	CHECK(clear_okptest_events() == 0, "clearing kprobe_events");
	CHECK(ret == 0, "the child exited with %d", ret);
	say("# the kernel's r: event on %s: %d returns adding up to %ld",
	    symbol, traced, traced_sum);
	/* The kernel's event types $retval by BTF: an int as an int. */
	if (opens)
		traced_sum = (int)traced_sum;
	CHECK(traced == returns && traced_sum == sum,
	      "okprobe saw %ld returns of %s adding up to %ld, the kernel's kretprobe %d adding up to %ld",
	      returns, symbol, sum, traced, traced_sum);
	return 0;
}

static int return_values_steps(void)
{
	STEP(return_values_of("ksys_read", 0));
	return return_values_of("do_sys_openat2", 1);
}

/* Children blocked in read() on a pipe: ksys_read is pending in each. */
static int start_blocked_readers(pid_t *children, int count, int *writer)
{
	int pipes[2], i;

	if (pipe(pipes))
		return -1;
	for (i = 0; i < count; i++) {
		children[i] = fork();
		if (children[i] == 0) {
			char byte;

			close(pipes[1]);
			_exit(read(pipes[0], &byte, 1) == 1 ? 0 : 4);
		}
	}
	close(pipes[0]);
	*writer = pipes[1];
	/* Long enough for every child to block in read(). */
	usleep(300 * 1000);
	return 0;
}

/*
 * Calls of the sample's return probe on ksys_read inside it now, but for
 * the read() that asks (the sample's entries less returns, taken at once).
 */
static long sample_pending(void)
{
	return sample_counter("pending") - 1;
}

static int kill_and_unload_steps(void)
{
	pid_t children[RETURN_SLEEPERS];
	int writer, ret, i, status, exited = 0;
	long pending, entries, returns, missed;

	/* Killed inside ksys_read: it returns (-ERESTARTSYS), they die. */
	ret = load_module(SAMPLE_KO, "symbol=ksys_read return=1");
	CHECK(ret == 0, "the sample client's return probe on ksys_read: %s",
	      strerror(-ret));
	CHECK(start_blocked_readers(children, RETURN_SLEEPERS, &writer) == 0,
	      "pipe: %s", strerror(errno));
	pending = sample_pending();
	for (i = 0; i < RETURN_SLEEPERS; i++)
		kill(children[i], SIGKILL);
	for (i = 0; i < RETURN_SLEEPERS; i++)
		if (waitpid(children[i], &status, 0) == children[i] &&
		    WIFSIGNALED(status))
			exited++;
	close(writer);
	CHECK(pending == RETURN_SLEEPERS,
	      "%ld calls pending inside ksys_read, not the %d blocked readers",
	      pending, RETURN_SLEEPERS);
	CHECK(exited == RETURN_SLEEPERS, "%d of %d readers were killed",
	      exited, RETURN_SLEEPERS);
	pending = sample_pending();
	CHECK(pending == 0, "%ld killed reads never returned", pending);
	/* okprobe goes away while readers sleep inside ksys_read. */
	CHECK(start_blocked_readers(children, RETURN_SLEEPERS, &writer) == 0,
	      "pipe: %s", strerror(errno));
	pending = sample_pending();
	ret = unload_module("okprobe_sample");
	if (!ret)
		ret = unload_okprobe();
	for (i = 0; i < RETURN_SLEEPERS; i++)
		if (write(writer, "x", 1) != 1)
			break;
	close(writer);
	exited = 0;
	for (i = 0; i < RETURN_SLEEPERS; i++)
		if (waitpid(children[i], &status, 0) == children[i] &&
		    WIFEXITED(status) && WEXITSTATUS(status) == 0)
			exited++;
	CHECK(pending == RETURN_SLEEPERS,
	      "%ld calls pending inside ksys_read at the unload, not %d",
	      pending, RETURN_SLEEPERS);
	CHECK(ret == 0, "unloading with readers inside ksys_read: %s",
	      strerror(-ret));
	CHECK(exited == RETURN_SLEEPERS,
	      "%d of %d readers got their byte after okprobe unloaded",
	      exited, RETURN_SLEEPERS);
	/* do_exit never returns: its instances go back at the reaping. */
	STEP(load_okprobe(default_params));
	ret = load_module(SAMPLE_KO, "symbol=do_exit return=1");
	CHECK(ret == 0, "the sample client's return probe on do_exit: %s",
	      strerror(-ret));
	/*
	 * 300 exits, far more than the pool's first 16 instances: taken
	 * instances go back when the tasks are reaped, so none is missed.
	 */
	for (i = 0; i < 300; i++) {
		pid_t child = fork();

		if (child == 0)
			_exit(0);
		if (child > 0)
			waitpid(child, NULL, 0);
	}
	entries = sample_counter("entries");
	returns = sample_counter("returns");
	missed = sample_counter("missed");
	ret = unload_module("okprobe_sample");
	CHECK(ret == 0, "unloading the sample client: %s", strerror(-ret));
	CHECK(entries >= 300 && returns == 0 && missed == 0,
	      "300 exits: %ld entries into do_exit, %ld returns, %ld missed",
	      entries, returns, missed);
	return 0;
}
