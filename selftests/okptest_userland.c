// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part file for Debian's userland: make check's guests on
 * Debian's kernels get Debian 13's bpftrace, bpftool, python3, perf and
 * trace-cmd on a read-only disk (tools/guest_userland.py), with the
 * modules that read it. The tests here mount it on /debian and run those
 * programs there with chroot, as a user runs them on a Debian machine:
 * bpftrace one-liners on okprobe_events events, counted against the
 * kernel's own kprobes on the same workload, and tools/okprobe on the
 * real tracefs. Elsewhere (the kernels built here) they skip.
 */

/* USERLAND and the rest: okptest.c (the bench profiles under its perf). */

/*
 * Python that reads every file under the tree (a Python expression), 64 KiB
 * of each, through the userland disk's squashfs and virtio_blk, and says
 * how many: make demo's and cover_module's workload. Needs "import os".
 */
#define USERLAND_READ_TREE_PY(tree) \
	"n = 0\n" \
	"for d, _, fs in os.walk(" tree "):\n" \
	"    for f in fs:\n" \
	"        p = os.path.join(d, f)\n" \
	"        if os.path.isfile(p) and not os.path.islink(p):\n" \
	"            with open(p, 'rb') as h:\n" \
	"                h.read(1 << 16)\n" \
	"            n += 1\n" \
	"print(n, 'files read')\n"

/* Loads the modules that read the disk, in their files' (ranked) order. */
static int load_userland_modules(void)
{
	struct dirent **names;
	char path[PATH_MAX];
	int count, i, ret = 0;

	count = scandir(USERLAND_MODULES, &names, NULL, alphasort);
	if (count < 0)
		return -errno;
	for (i = 0; i < count; i++) {
		if (!ret && strstr(names[i]->d_name, ".ko")) {
			snprintf(path, sizeof(path), USERLAND_MODULES "/%s",
				 names[i]->d_name);
			ret = load_module(path, "");
			if (ret == -EEXIST)
				ret = 0;
			if (ret)
				fail("loading %s: %s", path, strerror(-ret));
		}
		free(names[i]);
	}
	free(names);
	return ret;
}

/*
 * The userland mounted on /debian with /proc, /sys (tracefs and debugfs
 * under it), /dev, a fresh /tmp and tools/okprobe (/opt/okprobe) in it:
 * 0, a skip (no disk in this guest) or a failure. Stays for the boot.
 */
static int userland_mount(void)
{
	static const char *const binds[] = { "/proc", "/sys", "/dev" };
	char where[64];
	long long deadline;
	size_t i;

	if (exists(USERLAND BPFTRACE))
		return 0;
	if (!exists(USERLAND_MODULES))
		return skip("no Debian userland disk in this guest (make check gives one to each Debian kernel, its every kernel with BPF events but x86-debug)");
	mount_tracefs_if_needed();
	if (load_userland_modules())
		return 1;
	deadline = now_ms() + 20000;
	while (!exists(USERLAND_DISK) && now_ms() < deadline)
		usleep(20000);
	CHECK(exists(USERLAND_DISK), "no " USERLAND_DISK " 20 s after loading the modules");
	mkdir(USERLAND, 0755);
	CHECK(mount(USERLAND_DISK, USERLAND, "squashfs", MS_RDONLY, NULL) == 0,
	      "mounting " USERLAND_DISK ": %s", strerror(errno));
	for (i = 0; i < ARRAY_SIZE(binds); i++) {
		snprintf(where, sizeof(where), USERLAND "%s", binds[i]);
		CHECK(mount(binds[i], where, NULL, MS_BIND | MS_REC, NULL) == 0,
		      "binding %s: %s", binds[i], strerror(errno));
	}
	CHECK(mount("tmpfs", USERLAND "/tmp", "tmpfs", 0, NULL) == 0,
	      "tmpfs on " USERLAND "/tmp: %s", strerror(errno));
	CHECK(mount(USERLAND_TOOLS, USERLAND "/opt/okprobe", NULL, MS_BIND,
		    NULL) == 0, "binding " USERLAND_TOOLS ": %s", strerror(errno));
	CHECK(exists(USERLAND BPFTRACE), "no " BPFTRACE " on the disk");
	return 0;
}

/*
 * The userland mounted and okprobe loaded with okprobe_events: 0, a skip
 * (no userland disk, or no dynamic events: okprobe unloaded again) or a
 * failure.
 */
static int userland_with_okprobe(void)
{
	STEP(userland_mount());
	STEP(load_okprobe(default_params));
	if (!exists(OKPROBE_EVENTS)) {
		STEP(unload_okprobe());
		return skip("the kernel has no dynamic trace events (CONFIG_DYNAMIC_EVENTS)");
	}
	return 0;
}

/*
 * Starts argv[0] of the userland under chroot, stdin empty, stdout and
 * stderr into USERLAND_OUT; returns its pid (or -1).
 */
static pid_t userland_start(char *const argv[])
{
	static char *const env[] = {
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp",
		"LANG=C.UTF-8", NULL
	};
	pid_t child = fork();

	if (child == 0) {
		int out = open(USERLAND_OUT, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(open("/dev/null", O_RDONLY), 0);
		dup2(out, 1);
		dup2(out, 2);
		if (chroot(USERLAND) || chdir("/"))
			_exit(126);
		execve(argv[0], argv, env);
		_exit(127);
	}
	return child;
}

/*
 * Runs argv in the userland; its exit status (-1: killed after seconds),
 * its output in output (NUL-terminated).
 */
static int userland_run(char *const argv[], int seconds, char *output,
			size_t size)
{
	int status = wait_child(userland_start(argv), seconds);

	if (read_file(USERLAND_OUT, output, size))
		output[0] = '\0';
	return status;
}

/* A file in the userland's /tmp with text in it; 0 or a failure. */
static int userland_file(const char *name, const char *text)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), USERLAND "/tmp/%s", name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	CHECK(fd >= 0, "creating %s: %s", path, strerror(errno));
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text),
	      "writing %s", path);
	close(fd);
	return 0;
}

/* A bpftrace map's value as printed at exit ("@name: 100"); 0 if absent. */
static long long bpftrace_value(const char *output, const char *map)
{
	char needle[96];
	const char *at;

	snprintf(needle, sizeof(needle), "\n%s: ", map);
	at = strstr(output, needle);
	return at ? strtoll(at + strlen(needle), NULL, 10) : 0;
}

/* The last line of text holding needle, to quote in a failure. */
static const char *line_with(const char *text, const char *needle)
{
	static char line[256];
	const char *at = strstr(text, needle), *start, *end;

	if (!at)
		return "";
	for (start = at; start > text && start[-1] != '\n'; start--)
		;
	end = strchr(at, '\n');
	snprintf(line, sizeof(line), "%.*s",
		 end ? (int)(end - start) : (int)strlen(start), start);
	return line;
}

/*
 * The workload the bpftrace tests count: dd reading /dev/zero in reads of
 * a size nothing else reads. dd's own start reads other sizes (its
 * loader), which the mid-function count, filtered by comm alone, also
 * sees: the same number under the kernel's kprobes and okprobe's.
 */
#define BT_READ_SIZE "4093"
#define BT_READS 100
#define BT_WORK "/usr/bin/dd if=/dev/zero of=/dev/null bs=" BT_READ_SIZE \
	" count=100 status=none\n"

/*
 * A block of ksys_read past its entry that runs on every read, found by
 * okprobe's own coverage (debugfs okprobe/cover): the first block after
 * the entry's that counted each of BT_READS reads, probed by a breakpoint
 * or a jump (not ftrace, not refused); 0 if none, the report in report.
 */
static unsigned long mid_read_block(char *report, size_t size)
{
	unsigned long offset, entry = ~0UL;
	char command[64], how[32], *line, *next;
	long hits;

	snprintf(command, sizeof(command), "add 0x%lx",
		 kallsyms_address("ksys_read"));
	if (write_file(DEBUGFS_DIR "/cover", command))
		return 0;
	read_proc_sized(BT_READS, 4093);
	if (read_file(DEBUGFS_DIR "/cover", report, size))
		report[0] = '\0';
	write_file(DEBUGFS_DIR "/cover", "clear");
	for (line = report; line && *line; line = next) {
		next = strchr(line, '\n');
		next = next ? next + 1 : NULL;
		if (sscanf(line, " +0x%lx hits=%ld %31s", &offset, &hits, how) != 3)
			continue;
		if (entry == ~0UL)
			entry = offset;
		else if (hits >= BT_READS && (!strcmp(how, "optimized") ||
					      !strcmp(how, "breakpoint")))
			return offset;
	}
	return 0;
}

/*
 * okprobe_events' GROUP/entry (ksys_read, count=$arg3:u64), GROUP/mid
 * (ksys_read+offset with mid_args) and GROUP/ret (its return, with
 * ret_args): 0 or a failure.
 */
static int define_read_events(const char *group, unsigned long offset,
			      const char *mid_args, const char *ret_args)
{
	char lines[3][160];
	int i, ret;

	snprintf(lines[0], sizeof(lines[0]), "p:%s/entry ksys_read count=$arg3:u64",
		 group);
	snprintf(lines[1], sizeof(lines[1]), "p:%s/mid ksys_read+0x%lx %s", group,
		 offset, mid_args);
	snprintf(lines[2], sizeof(lines[2]), "r:%s/ret ksys_read %s", group, ret_args);
	for (i = 0; i < 3; i++) {
		ret = write_file(OKPROBE_EVENTS, lines[i]);
		CHECK(ret == 0, "defining %s: %s", lines[i], strerror(-ret));
	}
	return 0;
}

/* Whether the kernel takes a kprobe at place (kprobe_events, then gone). */
static int kernel_takes_kprobe(const char *place)
{
	char line[128];

	snprintf(line, sizeof(line), "p:okptest_bk/try %s", place);
	if (write_file(TRACING "/kprobe_events", line))
		return 0;
	write_file(TRACING "/kprobe_events", "-:okptest_bk/try");
	return 1;
}

/* bpftrace runs program while workload.sh runs; its output in output. */
static int run_bpftrace(const char *program, char *output, size_t size)
{
	char *const argv[] = {
		BPFTRACE, "-e", (char *)program, "-c", "/usr/bin/sh /tmp/work.sh",
		NULL
	};
	long long started = now_ms();
	int status = userland_run(argv, 300, output, size);

	CHECK(status == 0, "bpftrace exited with %d:\n%.600s\n(program: %s)",
	      status, output, program);
	say("# bpftrace took %lld ms", now_ms() - started);
	return 0;
}

#define BT_EVENTS "okptest_bt"
#define BT_COMM "/comm == \"dd\""
#define BT_COMM_END BT_COMM "/"

/* okprobe's events at the same places, as bpftrace's tracepoints. */
#define BT_OKPROBE_PROGRAM                                                     \
	"tracepoint:" BT_EVENTS ":entry " BT_COMM " && args.count == "         \
	BT_READ_SIZE "/ { @entry = count(); @bytes[comm] = sum(args.count); } " \
	"tracepoint:" BT_EVENTS ":mid " BT_COMM_END " { @mid = count(); } "    \
	"tracepoint:" BT_EVENTS ":ret " BT_COMM " && args.ret == "             \
	BT_READ_SIZE "/ { @ret = count(); }"

static int probe_events_bpftrace_steps(void)
{
	static char kernel_out[8192], okprobe_out[8192], perf[4096];
	static const char *const maps[] = { "@entry", "@mid", "@ret" };
	char program[1024], mid[64];
	long long theirs, ours;
	unsigned long offset;
	int kernel_entry, ret;
	size_t i;

	STEP(userland_with_okprobe());
	offset = mid_read_block(kernel_out, sizeof(kernel_out));
	CHECK(offset, "okprobe/cover found no block of ksys_read past its entry that ran on each of %d reads:\n%.600s",
	      BT_READS, kernel_out);
	snprintf(mid, sizeof(mid), "ksys_read+0x%lx", offset);
	STEP(userland_file("work.sh", BT_WORK));

	/*
	 * The kernel's probes first: a function is one prober's at a time.
	 * Where the kernel takes no kprobe at ksys_read's entry (riscv: an
	 * ftrace site), nor a return probe, which starts there, BPF's
	 * fentry and fexit count the entry and the return instead.
	 */
	kernel_entry = kernel_takes_kprobe("ksys_read");
	snprintf(program, sizeof(program),
		 "%s kprobe:%s " BT_COMM_END " { @mid = count(); }",
		 kernel_entry ?
		 "kprobe:ksys_read " BT_COMM " && arg2 == " BT_READ_SIZE
		 "/ { @entry = count(); } kretprobe:ksys_read " BT_COMM
		 " && retval == " BT_READ_SIZE "/ { @ret = count(); }" :
		 "fentry:ksys_read " BT_COMM " && args.count == " BT_READ_SIZE
		 "/ { @entry = count(); } fexit:ksys_read " BT_COMM
		 " && retval == " BT_READ_SIZE "/ { @ret = count(); }", mid);
	STEP(run_bpftrace(program, kernel_out, sizeof(kernel_out)));

	/* okprobe's events: the same places, as tracepoints. */
	STEP(define_read_events(BT_EVENTS, offset, "", "ret=$retval:s64"));
	STEP(userland_file("work.sh",
			   "/usr/sbin/bpftool perf show > /tmp/perf.txt 2>&1\n" BT_WORK));
	STEP(run_bpftrace(BT_OKPROBE_PROGRAM, okprobe_out, sizeof(okprobe_out)));
	say("# bpftrace at ksys_read, %s and ksys_read's return: the kernel's %s %lld, %lld, %lld; okprobe's events %lld, %lld, %lld",
	    mid, kernel_entry ? "kprobes" : "fentry, kprobe and fexit",
	    bpftrace_value(kernel_out, "@entry"),
	    bpftrace_value(kernel_out, "@mid"), bpftrace_value(kernel_out, "@ret"),
	    bpftrace_value(okprobe_out, "@entry"),
	    bpftrace_value(okprobe_out, "@mid"), bpftrace_value(okprobe_out, "@ret"));
	CHECK(bpftrace_value(okprobe_out, "@entry") == BT_READS &&
	      bpftrace_value(okprobe_out, "@ret") == BT_READS,
	      "okprobe's entry and return events counted %lld and %lld of dd's %d reads:\n%.600s",
	      bpftrace_value(okprobe_out, "@entry"),
	      bpftrace_value(okprobe_out, "@ret"), BT_READS, okprobe_out);
	CHECK(bpftrace_value(okprobe_out, "@bytes[dd]") == BT_READS * 4093LL,
	      "@bytes[dd] is %lld, not %lld", bpftrace_value(okprobe_out, "@bytes[dd]"),
	      BT_READS * 4093LL);
	for (i = 0; i < ARRAY_SIZE(maps); i++) {
		theirs = bpftrace_value(kernel_out, maps[i]);
		ours = bpftrace_value(okprobe_out, maps[i]);
		CHECK(theirs == ours && ours >= BT_READS,
		      "%s: the kernel's probes counted %lld, okprobe's event %lld",
		      maps[i], theirs, ours);
	}

	/* bpftool's listing, taken while bpftrace's programs were attached. */
	CHECK(read_file(USERLAND "/tmp/perf.txt", perf, sizeof(perf)) == 0,
	      "no bpftool perf output");
	say("# bpftool perf show: %s", line_with(perf, "tracepoint"));
	CHECK(strstr(perf, "tracepoint  entry") && strstr(perf, "tracepoint  mid") &&
	      strstr(perf, "tracepoint  ret"),
	      "bpftool perf show lists not the three events as tracepoints:\n%.600s", perf);

	/* bpftrace took its programs out: the events are off and go. */
	CHECK(file_says(TRACING "/events/" BT_EVENTS "/entry/enable", "0"),
	      "bpftrace left " BT_EVENTS ":entry enabled");
	ret = write_file(OKPROBE_EVENTS, "-:" BT_EVENTS "/entry");
	CHECK(ret == 0, "removing " BT_EVENTS "/entry: %s", strerror(-ret));
	CHECK(clear_file(OKPROBE_EVENTS) == 0, "clearing okprobe_events");
	return unload_okprobe();
}

static int test_probe_events_bpftrace(void)
{
	return events_test(probe_events_bpftrace_steps, NULL);
}

/*
 * tools/okprobe on the real tracefs, with Debian's python3: add, trace
 * (streaming 100 faccessat() calls, then interrupted as Ctrl-C does),
 * list, top, a bad line's error, del. The probe is on do_faccessat,
 * which streaming trace_pipe does not call: on a read path, each line the
 * tool reads would be an event for it to read. (Not on ksys_lseek or
 * vfs_llseek: riscv's 6.12 inlines both into the syscall; nor
 * do_filp_open, do_file_open since 7.x.)
 */
#define TOOL "/opt/okprobe/okprobe"
#define TOOL_EVENT "okptest_tool/access"
#define TOOL_DFD 4093

static int run_tool(char *output, size_t size, int expected, ...)
{
	char *argv[8] = { "/usr/bin/python3", TOOL };
	va_list args;
	int argc = 2, status;

	va_start(args, expected);
	while (argc < 7 && (argv[argc] = va_arg(args, char *)))
		argc++;
	va_end(args);
	argv[argc] = NULL;
	status = userland_run(argv, 120, output, size);
	CHECK(status == expected, "okprobe %s exited with %d, not %d:\n%.600s",
	      argv[2], status, expected, output);
	return 0;
}

/* How many lines of text hold both needles. */
static int lines_with(char *text, const char *needle, const char *also)
{
	int count = 0;
	char *line;

	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		count += strstr(line, needle) && strstr(line, also);
	return count;
}

/*
 * count faccessat()s relative to directory descriptor TOOL_DFD, which no
 * process has: each fails with EBADF, past do_faccessat()'s entry.
 */
static void access_repeatedly(int count)
{
	int i;

	for (i = 0; i < count; i++)
		syscall(SYS_faccessat, TOOL_DFD, "okptest-none", F_OK);
}

static int okprobe_tool_steps(void)
{
	static char output[65536], trace_copy[65536];
	char *const trace[] = { "/usr/bin/python3", TOOL, "trace", TOOL_EVENT, NULL };
	long long deadline;
	int status, traced;
	pid_t tracer;

	STEP(userland_with_okprobe());
	STEP(run_tool(output, sizeof(output), 0, "add",
		      "p:" TOOL_EVENT " do_faccessat dfd=$arg1:s32", NULL));
	CHECK(strstr(output, TOOL_EVENT ": p:" TOOL_EVENT " do_faccessat"),
	      "okprobe add printed: %.300s", output);

	tracer = userland_start(trace);
	CHECK(tracer > 0, "fork: %s", strerror(errno));
	deadline = now_ms() + 60000;
	while (now_ms() < deadline &&
	       !file_says(TRACING "/events/" TOOL_EVENT "/enable", "1"))
		usleep(20000);
	CHECK(file_says(TRACING "/events/" TOOL_EVENT "/enable", "1"),
	      "okprobe trace did not enable " TOOL_EVENT " in 60 s");
	usleep(300000);
	access_repeatedly(BT_READS);
	usleep(1000000);
	kill(tracer, SIGINT);
	status = wait_child(tracer, 60);
	CHECK(read_file(USERLAND_OUT, output, sizeof(output)) == 0, "no trace output");
	say("# okprobe trace: %s", line_with(output, "dfd=4093"));
	CHECK(status == 0, "okprobe trace exited with %d after SIGINT:\n%.600s",
	      status, output);
	CHECK(file_says(TRACING "/events/" TOOL_EVENT "/enable", "0"),
	      "okprobe trace left its event enabled");
	traced = lines_with(strcpy(trace_copy, output), " access: ", "dfd=4093");
	CHECK(traced == BT_READS, "okprobe trace streamed %d of okptest's %d calls:\n%.600s",
	      traced, BT_READS, output);

	STEP(run_tool(output, sizeof(output), 0, "list", NULL));
	CHECK(strstr(output, "p:" TOOL_EVENT " do_faccessat") && strstr(output, "hits="),
	      "okprobe list printed: %.300s", output);
	CHECK(strtoll(strstr(output, "hits=") + 5, NULL, 10) >= BT_READS,
	      "okprobe list: %s", line_with(output, "hits="));
	STEP(run_tool(output, sizeof(output), 0, "top", "-d", "0.5", "-n", "1", NULL));
	CHECK(strstr(output, "hits/s") && strstr(output, "access"),
	      "okprobe top printed: %.300s", output);
	/* A bad line: okprobe_events' errno, the error_log's entry, status 1. */
	STEP(run_tool(output, sizeof(output), 1, "add",
		      "p:" TOOL_EVENT "2 do_faccessat dfd=$arg9x", NULL));
	CHECK(strstr(output, "okprobe: ") && strstr(output, "Invalid argument"),
	      "okprobe add of a bad line printed: %.300s", output);
	STEP(run_tool(output, sizeof(output), 0, "del", TOOL_EVENT, NULL));
	STEP(run_tool(output, sizeof(output), 0, "list", NULL));
	CHECK(!strstr(output, TOOL_EVENT), "okprobe list after del: %.300s", output);
	return unload_okprobe();
}

static int test_okprobe_tool(void)
{
	return events_test(okprobe_tool_steps, TRACING "/events/" TOOL_EVENT "/enable");
}

/*
 * The libbpf sample (samples/bpf: okprobe_read.bpf.c and its loader, built
 * by make check for each target against Debian 13's libbpf1) on events at
 * ksys_read's entry, a block past it (found as probe_events_bpftrace
 * finds it) and its return, each run over dd's 100 reads of 4093 bytes:
 * hits and sums, the attach cookie, the probed address and the stack of
 * the probed place, as the loader reports them.
 */
#define LIBBPF_SAMPLE "/opt/okprobe/okprobe_read"
#define LB_EVENTS "okptest_lb"

struct sample_report {
	unsigned long long hits, sum, cookie;
	char probed[128], stack[256];
};

/*
 * The lines okprobe_read printed for event (its count line, then its
 * "probed:" and "stack:" lines, up to the next event's) in report; 0 or a
 * failure.
 */
static int sample_block(const char *output, const char *event,
			struct sample_report *report)
{
	char header[96];
	const char *at, *end, *line;
	size_t length;

	memset(report, 0, sizeof(*report));
	snprintf(header, sizeof(header), "%s: ", event);
	for (at = output; at && strncmp(at, header, strlen(header));) {
		at = strchr(at, '\n');
		at = at ? at + 1 : NULL;
	}
	CHECK(at && sscanf(at + strlen(header), "%llu hits, sum %llu (pid %*d, cookie 0x%llx)",
			   &report->hits, &report->sum, &report->cookie) == 3,
	      "okprobe_read printed no line for %s:\n%.600s", event, output);
	for (line = strchr(at, '\n'); line && *++line;) {
		end = strchr(line, '\n');
		length = end ? (size_t)(end - line) : strlen(line);
		if (!strncmp(line, "probed: ", 8))
			snprintf(report->probed, sizeof(report->probed), "%.*s",
				 (int)length, line);
		else if (!strncmp(line, "stack: ", 7))
			snprintf(report->stack, sizeof(report->stack), "%.*s",
				 (int)length, line);
		else
			break;
		line = end;
	}
	return 0;
}

/*
 * The loader's reports on two events of LB_EVENTS (attached with cookies
 * cookie and cookie + 1), counting only value (0: every hit), over dd's
 * reads; with list, bpftool's link listing is taken first, while the
 * programs are attached, by the same process (dd replaces its shell).
 */
#define LB_DD "dd if=/dev/zero of=/dev/null bs=" BT_READ_SIZE " count=100 status=none"
static int run_sample(const char *first, const char *second, const char *only,
		      const char *cookie, int list, struct sample_report reports[2])
{
	static char output[8192];
	const char *names[2] = { first, second };
	char events[96], event[64];
	char *const argv[] = {
		LIBBPF_SAMPLE, "-s", (char *)only, "-c", (char *)cookie,
		(char *)events, "/usr/bin/sh", "-c",
		list ? "/usr/sbin/bpftool link show > /tmp/link.txt 2>&1; exec " LB_DD :
		"exec " LB_DD, NULL
	};
	long long started = now_ms();
	int status, i;

	snprintf(events, sizeof(events), LB_EVENTS "/%s," LB_EVENTS "/%s", first,
		 second);
	status = userland_run(argv, 120, output, sizeof(output));
	CHECK(status == 0, "okprobe_read %s exited with %d:\n%.600s", events,
	      status, output);
	for (i = 0; i < 2; i++) {
		snprintf(event, sizeof(event), LB_EVENTS "/%s", names[i]);
		STEP(sample_block(output, event, &reports[i]));
		say("# okprobe_read -s %s %s: %llu hits, sum %llu, cookie 0x%llx; %s; %s",
		    only, event, reports[i].hits, reports[i].sum, reports[i].cookie,
		    reports[i].probed, reports[i].stack);
	}
	say("# okprobe_read -s %s %s took %lld ms", only, events, now_ms() - started);
	return 0;
}

static int probe_events_libbpf_steps(void)
{
	static char cover[16384];
	struct sample_report entry_ret[2], all_mid[2];
	struct sample_report *entry = &entry_ret[0], *ret = &entry_ret[1];
	struct sample_report *all = &all_mid[0], *mid = &all_mid[1];
	const char *link;
	char probed[64];
	unsigned long offset;
	long long started;

	STEP(userland_mount());
	if (!exists(USERLAND LIBBPF_SAMPLE))
		return skip("no libbpf sample in this guest (make check builds it for the guests with Debian's userland)");
	STEP(userland_with_okprobe());
	started = now_ms();
	offset = mid_read_block(cover, sizeof(cover));
	CHECK(offset, "okprobe/cover found no block of ksys_read past its entry that ran on each of %d reads:\n%.600s",
	      BT_READS, cover);
	say("# okprobe/cover found ksys_read+0x%lx in %lld ms", offset, now_ms() - started);
	STEP(define_read_events(LB_EVENTS, offset, "top=$stack0:u64",
				"count=$retval:u64"));

	/*
	 * The entry and the return, only hits of 4093, in one run: cookies
	 * 42 and 43. The loader runs twice, not once per event: each start
	 * of it under TCG took 5-9 s (x86-6.12), mostly its pass over
	 * /proc/kallsyms.
	 */
	STEP(run_sample("entry", "ret", BT_READ_SIZE, "42", 1, entry_ret));
	CHECK(entry->hits == BT_READS && entry->sum == BT_READS * 4093ULL,
	      "entry: %llu hits, sum %llu, not %d and %llu", entry->hits, entry->sum,
	      BT_READS, BT_READS * 4093ULL);
	CHECK(entry->cookie == 42, "entry: cookie 0x%llx, not the 0x2a attached",
	      entry->cookie);
	CHECK(strstr(entry->probed, "probed: ksys_read+"), "entry: %s", entry->probed);
	CHECK(strstr(entry->stack, "stack: ksys_read+"),
	      "entry: the stack does not start at the probed function: %s", entry->stack);
	CHECK(ret->hits == BT_READS && ret->sum == BT_READS * 4093ULL,
	      "return: %llu hits, sum %llu, not %d and %llu", ret->hits, ret->sum,
	      BT_READS, BT_READS * 4093ULL);
	CHECK(ret->cookie == 43, "return: cookie 0x%llx, not the 0x2b attached",
	      ret->cookie);
	/* __probe_func: where a probe at the function goes (x86: past endbr64). */
	CHECK(strstr(ret->probed, "probed: ksys_read+"),
	      "return: the probed function is not ksys_read: %s", ret->probed);
	CHECK(!strncmp(ret->stack, "stack: ", 7) && ret->stack[7] &&
	      strncmp(ret->stack, "stack: none", 11) &&
	      !strstr(ret->stack, "stack: ksys_read+"),
	      "return: no stack, or one that starts in ksys_read, not where it returned to: %s",
	      ret->stack);
	/* libbpf attached through BPF links: bpftool lists both. */
	CHECK(read_file(USERLAND "/tmp/link.txt", cover, sizeof(cover)) == 0,
	      "no bpftool link output");
	say("# bpftool link show: %s", line_with(cover, "perf_event"));
	link = strstr(cover, "perf_event");
	CHECK(link && strstr(link + 1, "perf_event") && strstr(cover, "prog "),
	      "bpftool link show lists not two perf_event links:\n%.600s", cover);

	/* Every read of dd's, at the entry and at the block past it. */
	STEP(run_sample("entry", "mid", "0", "1", 0, all_mid));
	snprintf(probed, sizeof(probed), "probed: ksys_read+0x%lx", offset);
	CHECK(all->hits >= BT_READS && mid->hits == all->hits,
	      "every read: %llu at the entry, %llu at ksys_read+0x%lx", all->hits,
	      mid->hits, offset);
	CHECK(strstr(mid->probed, probed) && mid->cookie == 2, "mid: %s, cookie 0x%llx",
	      mid->probed, mid->cookie);
	CHECK(strstr(mid->stack, "stack: ksys_read+"),
	      "mid: the stack does not start at the probed function: %s", mid->stack);

	CHECK(clear_file(OKPROBE_EVENTS) == 0, "clearing okprobe_events");
	return unload_okprobe();
}

static int test_probe_events_libbpf(void)
{
	return events_test(probe_events_libbpf_steps, NULL);
}
