// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part: the demo (make demo): what an operator sees,
 * shown file by file as cat would show it.
 *
 * A part of okptest.c (one program, one test list), included by it.
 */

/* ---- The demo (make demo) ----------------------------------------------- */

/* Shows a file the way an operator would see it with cat. */
static int show(const char *path)
{
	static char text[8192];
	char *line;
	int ret = read_file(path, text, sizeof(text));

	CHECK(ret == 0, "reading %s: %s", path, strerror(-ret));
	say("# $ cat %s", path);
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		say("#   %s", line);
	return 0;
}

static int demo_step_load(void)
{
	STEP(load_okprobe(default_params));
	say("# $ insmod okprobe_sample.ko %s", sample_params);
	return load_module(SAMPLE_KO, sample_params) == 0 ? 0 :
	       fail("the sample client did not load");
}

static int demo_step_show(void)
{
	char line[512] = "", range[512];
	FILE *blacklist;
	int ranges = 0;

	STEP(show(SYSCTL_OPTIMIZATION));
	STEP(show(DEBUGFS_DIR "/enabled"));
	STEP(show(DEBUGFS_DIR "/list"));
	/*
	 * A stock kernel's blacklist runs to hundreds of ranges: its first
	 * lines show what a range is, a count the rest.
	 */
	blacklist = fopen(DEBUGFS_DIR "/blacklist", "re");
	CHECK(blacklist, "reading %s: %s", DEBUGFS_DIR "/blacklist",
	      strerror(errno));
	say("# $ head -n 15 %s", DEBUGFS_DIR "/blacklist");
	while (fgets(range, sizeof(range), blacklist)) {
		range[strcspn(range, "\n")] = '\0';
		if (++ranges <= 15)
			say("#   %s", range);
	}
	fclose(blacklist);
	if (ranges > 15)
		say("#   ... and %d more ranges (all of them: cat %s)",
		    ranges - 15, DEBUGFS_DIR "/blacklist");
	STEP(show(DEBUGFS_DIR "/jumps"));
	say("# (the optimizer turns the breakpoint into a jump: waiting for [OPTIMIZED] while reading)");
	CHECK(wait_listed_optimized(sample_where, line, sizeof(line)),
	      "the probe never showed [OPTIMIZED]: '%s'", line);
	STEP(show(DEBUGFS_DIR "/list"));
	STEP(show(DEBUGFS_DIR "/jumps"));
	say("# (reading /proc/self/stat 1000 times)");
	read_proc_repeatedly(1000);
	STEP(show(DEBUGFS_DIR "/list"));
	say("# $ sysctl debug.kprobes_optimization=0");
	CHECK(write_file(SYSCTL_OPTIMIZATION, "0") == 0, "writing the sysctl");
	STEP(show(DEBUGFS_DIR "/jumps"));
	say("# (reading /proc/self/stat 1000 times)");
	read_proc_repeatedly(1000);
	STEP(show(DEBUGFS_DIR "/list"));
	CHECK(list_line(sample_where, line, sizeof(line)) &&
	      !strstr(line, "[OPTIMIZED]"), "still optimized: '%s'", line);
	say("# $ sysctl debug.kprobes_optimization=1");
	CHECK(write_file(SYSCTL_OPTIMIZATION, "1") == 0, "writing the sysctl");
	return 0;
}

#define DEMO_EVENT TRACING "/events/demo/read"

/*
 * An operator's session with okprobe_events: a probe on ksys_read with
 * fetch arguments, its events from trace_pipe, a hist trigger's table
 * (where the kernel has hist triggers), its hits, its removal.
 */
static int demo_step_events(void)
{
	static char text[8192];
	char *line;
	int fd, got, shown = 0;

	mount_tracefs_if_needed();
	if (!exists(OKPROBE_EVENTS))
		return skip("this kernel has no okprobe_events (CONFIG_DYNAMIC_EVENTS)");
	say("# $ echo 'p:demo/read ksys_read fd=$arg1 count=$arg3:u64 comm=$comm' >> %s",
	    OKPROBE_EVENTS);
	CHECK(write_file(OKPROBE_EVENTS,
			 "p:demo/read ksys_read fd=$arg1 count=$arg3:u64 comm=$comm") == 0,
	      "defining demo/read");
	STEP(show(OKPROBE_EVENTS));
	clear_file(TRACING "/trace");
	say("# $ echo 1 > %s/enable", DEMO_EVENT);
	CHECK(write_file(DEMO_EVENT "/enable", "1") == 0, "enabling demo/read");
	if (exists(DEMO_EVENT "/hist")) {
		say("# $ echo 'hist:keys=comm:vals=count:sort=count.descending' > %s/trigger",
		    DEMO_EVENT);
		CHECK(write_file(DEMO_EVENT "/trigger",
				 "hist:keys=comm:vals=count:sort=count.descending") == 0,
		      "a hist trigger on demo/read");
	}
	say("# (reading /proc/self/stat 200 times)");
	read_proc_repeatedly(200);
	say("# $ head -5 %s/trace_pipe", TRACING);
	fd = open(TRACING "/trace_pipe", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	CHECK(fd >= 0, "opening trace_pipe: %s", strerror(errno));
	got = read(fd, text, sizeof(text) - 1);
	close(fd);
	CHECK(got > 0, "nothing in trace_pipe");
	text[got] = '\0';
	for (line = strtok(text, "\n"); line && shown < 5; line = strtok(NULL, "\n"))
		if (strstr(line, " read: (")) {
			say("#   %s", line);
			shown++;
		}
	CHECK(shown == 5, "only %d demo/read events in trace_pipe", shown);
	if (exists(DEMO_EVENT "/hist")) {
		STEP(show(DEMO_EVENT "/hist"));
		write_file(DEMO_EVENT "/trigger",
			   "!hist:keys=comm:vals=count:sort=count.descending");
	}
	CHECK(write_file(DEMO_EVENT "/enable", "0") == 0, "disabling demo/read");
	STEP(show(TRACING "/okprobe_profile"));
	say("# $ echo '-:demo/read' >> %s", OKPROBE_EVENTS);
	CHECK(write_file(OKPROBE_EVENTS, "-:demo/read") == 0, "removing demo/read");
	CHECK(!exists(DEMO_EVENT), "events/demo/read is still there");
	say("# (okprobe_events is empty again; events/demo/ is gone)");
	return 0;
}

/*
 * A bpftrace one-liner on an okprobe_events event, as a user types it:
 * Debian's bpftrace on the userland disk (make demo's guest has it on
 * Debian's kernels; elsewhere the step skips).
 */
#define DEMO_BT_LINE "p:okprobe/myread ksys_read count=$arg3:u64"
#define DEMO_BT_PROGRAM "tracepoint:okprobe:myread { @[comm] = sum(args.count); }"
#define DEMO_BT_WORK "/usr/bin/dd if=/dev/zero of=/dev/null bs=4093 count=100"

static int demo_step_bpftrace(void)
{
	static char output[8192];
	char *const argv[] = { BPFTRACE, "-e", DEMO_BT_PROGRAM, "-c",
			       DEMO_BT_WORK, NULL };
	char *line;
	int status, found;

	STEP(userland_mount());
	if (!exists(OKPROBE_EVENTS))
		return skip("this kernel has no okprobe_events (CONFIG_DYNAMIC_EVENTS)");
	say("# $ echo '" DEMO_BT_LINE "' >> %s", OKPROBE_EVENTS);
	CHECK(write_file(OKPROBE_EVENTS, DEMO_BT_LINE) == 0, "defining okprobe/myread");
	say("# $ bpftrace -e '" DEMO_BT_PROGRAM "' -c '" DEMO_BT_WORK "'");
	status = userland_run(argv, 300, output, sizeof(output));
	found = strstr(output, "@[dd]: ") != NULL;
	for (line = strtok(output, "\n"); line; line = strtok(NULL, "\n"))
		say("#   %s", line);
	CHECK(status == 0, "bpftrace exited with %d", status);
	CHECK(found, "bpftrace printed no sum for dd");
	say("# $ echo '-:okprobe/myread' >> %s", OKPROBE_EVENTS);
	CHECK(write_file(OKPROBE_EVENTS, "-:okprobe/myread") == 0,
	      "removing okprobe/myread");
	return 0;
}

/*
 * A probe on a source line, with a local variable, as a user adds it
 * once the kernel's -dbg package is in: tools/okprobe add --line runs
 * Debian's perf probe on its DWARF (make demo's guest has the package's
 * vmlinux on a disk; elsewhere the step skips). dd reads through it.
 */
#define DEMO_LINE_SPEC "vfs_read:25 ret"
#define DEMO_LINE_EVENT TRACING "/events/okprobe/vfs_read_L25"

static int demo_step_source_line(void)
{
	static char output[16384], trace[65536];
	char *const add[] = { "/usr/bin/python3", TOOL, "add", "--line",
			      DEMO_LINE_SPEC, NULL };
	char *const del[] = { "/usr/bin/python3", TOOL, "del", "vfs_read_L25", NULL };
	char *const work[] = { "/usr/bin/dd", "if=/dev/zero", "of=/dev/null",
			       "bs=4093", "count=3", "status=none", NULL };
	char *line;
	int status, reads = 0;

	STEP(debuginfo_mount());
	say("# (the kernel's DWARF: /usr/lib/debug/boot/vmlinux-$(uname -r), from linux-image-$(uname -r)-dbg)");
	say("# $ okprobe add --line '" DEMO_LINE_SPEC "'");
	status = userland_run(add, 120, output, sizeof(output));
	for (line = strtok(output, "\n"); line; line = strtok(NULL, "\n"))
		say("#   %s", line);
	CHECK(status == 0, "okprobe add --line exited with %d", status);
	say("# $ echo 'comm == \"dd\"' > %s/filter", DEMO_LINE_EVENT);
	CHECK(!write_file(DEMO_LINE_EVENT "/filter", "comm == \"dd\""), "filter");
	say("# $ echo 1 > %s/enable", DEMO_LINE_EVENT);
	clear_file(TRACING "/trace");
	CHECK(!write_file(DEMO_LINE_EVENT "/enable", "1"), "enabling the event");
	say("# $ dd if=/dev/zero of=/dev/null bs=4093 count=3");
	status = userland_run(work, 120, output, sizeof(output));
	write_file(DEMO_LINE_EVENT "/enable", "0");
	CHECK(status == 0, "dd exited with %d", status);
	say("# $ grep 'vfs_read_L25.*ret=4093' %s/trace", TRACING);
	CHECK(read_file(TRACING "/trace", trace, sizeof(trace)) == 0, "reading the trace");
	for (line = strtok(trace, "\n"); line; line = strtok(NULL, "\n")) {
		if (!strstr(line, " vfs_read_L25: ("))
			continue;
		if (strstr(line, "ret=4093")) {
			say("#   %s", line);
			reads++;
		}
	}
	CHECK(reads == 3, "the event recorded %d of dd's 3 reads of 4093 bytes", reads);
	say("# $ okprobe del vfs_read_L25");
	status = userland_run(del, 120, output, sizeof(output));
	CHECK(status == 0, "okprobe del exited with %d: %s", status, output);
	return 0;
}

/* okprobe-cover's demo: kernel functions of the read path, and reads. */
#define DEMO_COVER_ARGS "-c vfs_read rw_verify_area seq_read_iter -- sh -c 'for i in $(seq 300); do cat /proc/self/stat; done > /dev/null'"
static const char *const demo_covered[] = { "vfs_read", "rw_verify_area",
					    "seq_read_iter" };

/*
 * okprobe-cover on a few kernel functions while a workload reads
 * /proc/self/stat: with the tool where the guest has a shell (x86), through
 * debugfs okprobe/cover otherwise (riscv's guests have no busybox).
 */
static int demo_step_cover(void)
{
	static char output[16384];
	char command[96];
	size_t i;
	int status;

	if (exists(COVER_TOOL)) {
		status = run_shown("okprobe-cover " DEMO_COVER_ARGS,
				   "sh " COVER_TOOL " " DEMO_COVER_ARGS " 2>&1",
				   output, sizeof(output));
		CHECK(status == 0, "okprobe-cover exited with %d", status);
		CHECK(strstr(output, "total: ") && !strstr(output, "total: 0 of"),
		      "okprobe-cover reported no block reached");
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(demo_covered); i++) {
		snprintf(command, sizeof(command), "add 0x%lx",
			 kallsyms_address(demo_covered[i]));
		say("# $ echo add %s > %s", demo_covered[i], COVER_FILE);
		CHECK(!write_file(COVER_FILE, command), "%s (%s)", command,
		      demo_covered[i]);
	}
	say("# (reading /proc/self/stat 300 times)");
	read_proc_repeatedly(300);
	STEP(show(COVER_FILE));
	say("# $ echo clear > %s", COVER_FILE);
	CHECK(!write_file(COVER_FILE, "clear"), "clear");
	return 0;
}

/*
 * okprobe-cover over a whole Debian module: squashfs, which reads the
 * userland disk, while Python reads the disk's files. The summary lines
 * are shown; okprobe/cover's report (-r) goes to the host, gzip'd and in
 * base64 on lines that start with DEMO_FILE_PREFIX, where tools/demo
 * makes it the lcov tracefile (okprobe-cover-lcov with the -dbg
 * package's squashfs.ko and Debian's linux-source), genhtml's report and
 * a screenshot of it. The guest makes its own tracefile (-l) too, as a
 * user's run does.
 */
#define DEMO_FILE_PREFIX "# okptest-file "
#define DEMO_READ_DISK "import os\n" USERLAND_READ_TREE_PY("'/usr'")
#define DEMO_PACK \
	"import base64, gzip, sys\n" \
	"data = gzip.compress(open(sys.argv[1], 'rb').read())\n" \
	"sys.stdout.write(base64.encodebytes(data).decode())\n"

static int demo_step_cover_module(void)
{
	static char output[1 << 18];
	char *const cover[] = {
		"/bin/sh", "/opt/okprobe/okprobe-cover", "-s", "-r",
		"/tmp/squashfs.cover", "-l", "/tmp/squashfs.info", "-m",
		"squashfs", "--", "/usr/bin/python3", "-c", DEMO_READ_DISK, NULL
	};
	char *const pack[] = { "/usr/bin/python3", "-c", DEMO_PACK,
			       "/tmp/squashfs.cover", NULL };
	char *line, *total;
	int status, functions = 0;
	long long started;

	STEP(debuginfo_mount());
	CHECK(exists("/sys/module/squashfs/sections/.text"),
	      "squashfs is not a loaded module here");
	say("# $ okprobe-cover -s -r /tmp/squashfs.cover -l /tmp/squashfs.info -m squashfs -- python3 -c '(read every file of /usr)'");
	started = now_ms();
	status = userland_run(cover, 600, output, sizeof(output));
	total = strstr(output, "total: ");
	for (line = strtok(output, "\n"); line; line = strtok(NULL, "\n")) {
		if (strstr(line, " blocks reached (") && strncmp(line, "total: ", 7)) {
			if (++functions <= 5)
				say("#   %s", line);
			else if (functions == 6)
				say("#   ...");
			continue;
		}
		say("#   %s", line);
	}
	say("# (%d functions of squashfs covered; %lld ms, the workload included)",
	    functions, now_ms() - started);
	CHECK(status == 0, "okprobe-cover exited with %d", status);
	CHECK(total && functions > 50 && !strstr(total, "total: 0 of"),
	      "okprobe-cover reported %d functions, none reached", functions);
	status = userland_run(pack, 60, output, sizeof(output));
	CHECK(status == 0, "packing the report: %d", status);
	for (line = strtok(output, "\n"); line; line = strtok(NULL, "\n"))
		say(DEMO_FILE_PREFIX "squashfs.cover %s", line);
	return 0;
}

static int demo_step_unload(void)
{
	CHECK(unload_module("okprobe_sample") == 0, "unloading the sample");
	return unload_okprobe();
}
