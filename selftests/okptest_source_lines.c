// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part file for source-line probes: tools/okprobe add --line,
 * which runs Debian's perf probe on the kernel's DWARF, as a user runs it
 * after "apt install linux-image-$(uname -r)-dbg". make check gives the
 * guests of one kernel per Debian generation that package's vmlinux on a
 * second disk (tools/guest_debuginfo.py), mounted here where the package
 * puts it, in the userland (okptest_userland.c). The tests probe a line of
 * vfs_read() with its local variable, vfs_read()'s return, and every
 * inlined instance of fsnotify_access(), and check the values and places
 * the events record against what okptest's own reads did, with the
 * kernel's kprobe_events on the same lines beside okprobe's.
 */

#define DEBUGINFO_DISK "/dev/vdb"
#define DEBUGINFO_MARKER USERLAND_MODULES "/debuginfo"
#define DEBUGINFO USERLAND "/usr/lib/debug"
#define LINES_FILE "/tmp/okptest-lines.dat"

/*
 * The debuginfo disk mounted on the userland's /usr/lib/debug: 0, a skip
 * (no disk in this guest) or a failure.
 */
static int debuginfo_mount(void)
{
	long long deadline;

	STEP(userland_mount());
	if (exists(DEBUGINFO "/boot"))
		return 0;
	if (!exists(DEBUGINFO_MARKER))
		return skip("no debuginfo disk in this guest (make check gives one to x86's 6.1, 6.12 and newest kernel: tools/guest_debuginfo.py)");
	deadline = now_ms() + 20000;
	while (!exists(DEBUGINFO_DISK) && now_ms() < deadline)
		usleep(20000);
	CHECK(mount(DEBUGINFO_DISK, DEBUGINFO, "squashfs", MS_RDONLY, NULL) == 0,
	      "mounting " DEBUGINFO_DISK " on " DEBUGINFO ": %s", strerror(errno));
	return 0;
}

/* debuginfo_mount() with okprobe loaded: unloaded again on a skip. */
static int debuginfo_or_unload(void)
{
	int ret = debuginfo_mount();

	if (ret)
		unload_okprobe();
	return ret;
}

/* okptest's reads, readv()s and sendfile()s of LINES_FILE: 0 or a failure. */
static int lines_workload(const int *read_sizes, int reads, int readvs,
			  int sendfiles)
{
	static char data[8192];
	char buffer[8192];
	struct iovec iov = { buffer, 100 };
	off_t offset = 0;
	int fd, null, i, ok = 1;

	memset(data, 'x', sizeof(data));
	fd = open(LINES_FILE, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0, "creating " LINES_FILE ": %s", strerror(errno));
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	ok = null >= 0 && write(fd, data, sizeof(data)) == sizeof(data);
	lseek(fd, 0, SEEK_SET);
	for (i = 0; ok && i < reads; i++)
		ok = read(fd, buffer, read_sizes[i]) == read_sizes[i];
	for (i = 0; ok && i < readvs; i++)
		ok = readv(fd, &iov, 1) == 100;
	for (i = 0; ok && i < sendfiles; i++)
		ok = sendfile(null, fd, &offset, 100) == 100;
	close(null);
	close(fd);
	CHECK(ok, "the workload's calls on " LINES_FILE ": %s", strerror(errno));
	return 0;
}

/* The trace buffer emptied and events under group filtered to okptest. */
static int trace_only_okptest(const char *group)
{
	char path[128], filter[64];
	int ret;

	clear_file(TRACING "/trace");
	snprintf(path, sizeof(path), TRACING "/events/%s/filter", group);
	snprintf(filter, sizeof(filter), "common_pid == %d", getpid());
	ret = write_file(path, filter);
	CHECK(ret == 0, "filter on %s: %s", path, strerror(-ret));
	return 0;
}

/*
 * group's events on, filtered to okptest, for lines_workload(); the trace
 * after, in trace: 0 or a failure.
 */
static int trace_workload(const char *group, const int *read_sizes, int reads,
			  int readvs, int sendfiles, char *trace, size_t size)
{
	char enable[128];
	int ret;

	STEP(trace_only_okptest(group));
	snprintf(enable, sizeof(enable), TRACING "/events/%s/enable", group);
	ret = write_file(enable, "1");
	CHECK(ret == 0, "enabling %s's events: %s", group, strerror(-ret));
	ret = lines_workload(read_sizes, reads, readvs, sendfiles);
	write_file(enable, "0");
	STEP(ret);
	CHECK(read_file(TRACING "/trace", trace, size) == 0, "reading the trace");
	return 0;
}

/* How many of text's lines hold event's record, with value "field=". */
static int event_values(const char *text, const char *event,
			const char *field, long long *values, int max)
{
	char needle[64], name[64];
	const char *at;
	int count = 0;

	snprintf(needle, sizeof(needle), " %s: (", event);
	snprintf(name, sizeof(name), " %s=", field);
	for (at = strstr(text, needle); at; at = strstr(at + 1, needle)) {
		const char *end = strchr(at, '\n'), *value = strstr(at, name);

		if (count < max)
			values[count] = value && (!end || value < end) ?
				strtoll(value + strlen(name), NULL, 0) : -1;
		count++;
	}
	return count;
}

/*
 * vfs_read()'s line 25, add_rchar(current, ret), where its local ret
 * holds what the read returned, from 6.1 to 7.3 (perf probe -L vfs_read
 * shows it, with the source); and its return. Reads of sizes nothing else
 * in okptest asks, filtered to okptest's pid.
 */
#define LINE_SPEC "okptest_line=vfs_read:25 ret"
#define RETURN_SPEC "okptest_return=vfs_read%return $retval"
#define LINE_READS 10
static const int line_read_sizes[LINE_READS] = { 1, 2, 3, 5, 8, 13, 21, 34, 55, 4093 };

/*
 * The values event recorded in field, as many as the reads, each the
 * size its read returned; a line perf maps to several places (perf 6.12
 * gives two for 6.1's line 25) records a read at each place it runs,
 * one after the other. The values in values, their count in *count.
 */
static int check_read_values(const char *trace, const char *event,
			     const char *field, long long *values, int *count)
{
	int i, read = 0;

	*count = event_values(trace, event, field, values, 4 * LINE_READS);
	CHECK(*count >= LINE_READS && *count <= 4 * LINE_READS,
	      "%s recorded %d values of okptest's %d reads:\n%.1500s",
	      event, *count, LINE_READS, trace);
	for (i = 0; i < *count; i++) {
		if (read < LINE_READS && values[i] == line_read_sizes[read])
			read++;
		else
			CHECK(read && values[i] == line_read_sizes[read - 1],
			      "%s's record %d: %s=%lld, not the size of read %d (%d):\n%.1500s",
			      event, i, field, values[i], read,
			      line_read_sizes[read < LINE_READS ? read : 0], trace);
	}
	CHECK(read == LINE_READS, "%s recorded %d of okptest's %d reads:\n%.1500s",
	      event, read, LINE_READS, trace);
	return 0;
}

/*
 * The lines of output that define event in group okprobe, each rewritten
 * for the kernel's kprobe_events as group/name, into lines (0: none).
 */
static int lines_for_kernel(const char *output, const char *event,
			    const char *group_name, char *lines, size_t size)
{
	char prefix[64];
	const char *at;
	size_t used = 0;
	int count = 0;

	snprintf(prefix, sizeof(prefix), ":okprobe/%s ", event);
	lines[0] = '\0';
	for (at = strstr(output, prefix); at; at = strstr(at + 1, prefix)) {
		int length = strchrnul(at, '\n') - at - strlen(prefix);
		int n = snprintf(lines + used, size - used, "%c:%s %.*s\n",
				 at[-1], group_name, length, at + strlen(prefix));

		if (n < 0 || used + n >= size)
			return 0; /* more than lines holds: none */
		used += n;
		count++;
	}
	return count;
}

/* The name of the event output's first okprobe line defines. */
static const char *event_defined(const char *output)
{
	static char name[64];
	const char *at = strstr(output, ":okprobe/");

	name[0] = '\0';
	if (at)
		sscanf(at + strlen(":okprobe/"), "%63[^ ]", name);
	return name;
}

/*
 * The kernel's kprobe_events on lines (okptest_kernel/line): the values
 * its event records over okptest's reads into values (their count in
 * *count, 0: the kernel refused a line); the lines removed after.
 */
static int kernel_read_values(char *lines, long long *values, int *count)
{
	char trace[16384], *line, *next;
	int ret;

	*count = 0;
	for (line = lines; *line; line = next) {
		next = strchrnul(line, '\n');
		if (*next)
			*next++ = '\0';
		if (write_file(TRACING "/kprobe_events", line)) {
			say("# the kernel's kprobe_events refused %s", line);
			clear_file(TRACING "/kprobe_events");
			return 0;
		}
	}
	/* The kernel's probes go whatever the result: okprobe's come next. */
	ret = trace_workload("okptest_kernel", line_read_sizes, LINE_READS, 0, 0,
			     trace, sizeof(trace));
	if (!ret)
		ret = check_read_values(trace, "line", "ret", values, count);
	clear_file(TRACING "/kprobe_events");
	return ret;
}

static int source_line_probe_steps(void)
{
	static char output[16384], trace[65536], kernel_lines[2048];
	static long long ours[4 * LINE_READS], theirs[4 * LINE_READS],
		returned[4 * LINE_READS];
	int places, count, kernel_count, returns;
	char return_event[64];

	STEP(userland_with_okprobe());
	/* Without debuginfo: a message that says what to install, no event. */
	umount(DEBUGINFO);
	STEP(run_tool(output, sizeof(output), 1, "add", "--line", LINE_SPEC, NULL));
	CHECK(strstr(output, "no debuginfo for the running kernel") &&
	      strstr(output, "-dbg"), "okprobe add --line without debuginfo printed: %.600s",
	      output);
	CHECK(read_file(OKPROBE_EVENTS, trace, sizeof(trace)) == 0 && !trace[0],
	      "okprobe_events after a refused --line: %.300s", trace);

	/*
	 * perf's lines in the kernel's kprobe_events first, on their own: a
	 * function is one prober's at a time (operating.md, "Next to the
	 * kernel's kprobes").
	 */
	STEP(debuginfo_or_unload());
	STEP(run_tool(output, sizeof(output), 0, "add", "--line", LINE_SPEC, NULL));
	places = lines_for_kernel(output, "okptest_line", "okptest_kernel/line",
				  kernel_lines, sizeof(kernel_lines));
	CHECK(places && strstr(output, "p:okprobe/okptest_line vfs_read+") &&
	      strstr(output, " ret="), "okprobe add --line printed: %.600s", output);
	STEP(run_tool(output, sizeof(output), 0, "del", "--all", NULL));
	STEP(kernel_read_values(kernel_lines, theirs, &kernel_count));

	STEP(run_tool(output, sizeof(output), 0, "add", "--line", LINE_SPEC, NULL));
	say("# okprobe add --line '" LINE_SPEC "': %.200s", output);
	STEP(run_tool(output, sizeof(output), 0, "add", "--line", RETURN_SPEC, NULL));
	say("# okprobe add --line '" RETURN_SPEC "': %.200s", output);
	snprintf(return_event, sizeof(return_event), "%s", event_defined(output));
	CHECK(strstr(output, "r:okprobe/okptest_return"),
	      "okprobe add --line printed: %.600s", output);
	STEP(trace_workload("okprobe", line_read_sizes, LINE_READS, 0, 0, trace,
			    sizeof(trace)));
	say("# %s", line_with(trace, "okptest_line: ("));
	STEP(check_read_values(trace, "okptest_line", "ret", ours, &count));
	STEP(check_read_values(trace, return_event, "arg1", returned, &returns));
	CHECK(returns == LINE_READS, "%s recorded %d returns of okptest's %d reads",
	      return_event, returns, LINE_READS);
	if (kernel_count) {
		CHECK(kernel_count == count && !memcmp(ours, theirs, count * sizeof(*ours)),
		      "okprobe's event at %d places recorded %d values, the kernel's on the same lines %d:\n%.1500s",
		      places, count, kernel_count, trace);
		say("# %d places, %d records, as the kernel's kprobe_events has them",
		    places, count);
	}
	STEP(run_tool(output, sizeof(output), 0, "del", "--all", NULL));
	return unload_okprobe();
}

static int test_source_line_probe(void)
{
	return events_test(source_line_probe_steps, TRACING "/events/okprobe/enable");
}

/*
 * fsnotify_access(), a static inline of a few lines that every read path
 * calls on success: perf probe finds each instance (9 on 6.1, 13 on 6.12),
 * and the tool adds them as one event, a line per instance, as the
 * kernel's kprobe_events appends them. okptest's reads, readv()s and
 * sendfile()s are each seen once, by the instance in their own path.
 */
#define INLINE_SPEC "okptest_inline=fsnotify_access"
#define INLINE_READS 3
#define INLINE_READVS 4
#define INLINE_SENDFILES 5

/* Records of event in trace by the function their place is in. */
static int count_in(const char *trace, const char *event, const char *function)
{
	char needle[96];
	const char *at;
	int count = 0;

	snprintf(needle, sizeof(needle), " %s: (%s+", event, function);
	for (at = strstr(trace, needle); at; at = strstr(at + 1, needle))
		count++;
	return count;
}

static int source_line_inlined_steps(void)
{
	static const int sizes[INLINE_READS] = { 100, 100, 100 };
	static char output[16384], trace[65536], events[16384];
	long long unused[1];
	int instances, total, in_read, in_sendfile;
	char *line;

	STEP(debuginfo_mount());
	STEP(userland_with_okprobe());
	STEP(run_tool(output, sizeof(output), 0, "add", "--line", INLINE_SPEC, NULL));
	instances = lines_with(strcpy(events, output), "p:okprobe/okptest_inline ", "+");
	say("# okprobe add --line '" INLINE_SPEC "': %d instances", instances);
	CHECK(instances >= 3, "okprobe add --line " INLINE_SPEC " printed %d places:\n%.1000s",
	      instances, output);
	CHECK(read_file(OKPROBE_EVENTS, events, sizeof(events)) == 0, "reading okprobe_events");
	CHECK(lines_with(strcpy(trace, events), "okprobe/okptest_inline ", "+") == instances,
	      "okprobe_events has not the %d places:\n%.1000s", instances, events);
	for (line = strtok(output, "\n"); line; line = strtok(NULL, "\n"))
		CHECK(!strncmp(line, "p:okprobe/okptest_inline ", 25) && strstr(events, line),
		      "okprobe_events lacks perf's place %s:\n%.1000s", line, events);

	STEP(trace_workload("okprobe", sizes, INLINE_READS, INLINE_READVS,
			    INLINE_SENDFILES, trace, sizeof(trace)));
	total = event_values(trace, "okptest_inline", "none", unused, 0);
	in_read = count_in(trace, "okptest_inline", "vfs_read");
	in_sendfile = count_in(trace, "okptest_inline", "do_sendfile");
	say("# fsnotify_access's instances saw %d calls: %d in vfs_read, %d in do_sendfile",
	    total, in_read, in_sendfile);
	CHECK(in_read == INLINE_READS && in_sendfile == INLINE_SENDFILES &&
	      total == INLINE_READS + INLINE_READVS + INLINE_SENDFILES,
	      "fsnotify_access's instances: %d records, %d in vfs_read, %d in do_sendfile; okptest made %d reads, %d readv()s, %d sendfile()s:\n%.2000s",
	      total, in_read, in_sendfile, INLINE_READS, INLINE_READVS,
	      INLINE_SENDFILES, trace);
	STEP(run_tool(output, sizeof(output), 0, "del", "--all", NULL));
	return unload_okprobe();
}

static int test_source_line_inlined(void)
{
	return events_test(source_line_inlined_steps, TRACING "/events/okprobe/enable");
}
