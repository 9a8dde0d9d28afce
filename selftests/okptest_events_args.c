// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part: okprobe_events on the argument-only path (issue 42). A
 * line whose fetch programs read only what an argument-only record holds
 * (the argument registers, the stack pointer, the return value register,
 * and memory and the stack through them; $comm) gets an argument-only
 * probe by itself: okprobe/list says [ARGS], and an optimized one's jump
 * goes to the short detour (okprobe/jumps: "args"). A line that reads any
 * other register keeps pt_regs. While perf (or a BPF program, through
 * perf) has the event, its probes hand pt_regs again, and go back to the
 * short path when perf lets go; the ring buffer's entries are the same
 * throughout.
 *
 * A part of okptest.c (one program, one test list), included by it after
 * okptest_events.c, whose helpers it uses.
 */

#define ARGS_LINE "p:okptest_ar/read ksys_read fd=$arg1:s32 count=$arg3:u64 comm=$comm"
/* A register the record does not hold: callee-saved, on each arch. */
#ifdef __x86_64__
#define ARGS_REGS_LINE "p:okptest_ar/regs vfs_read count=$arg3:u64 bx=%bx"
#else
#define ARGS_REGS_LINE "p:okptest_ar/regs vfs_read count=$arg3:u64 s1=%s1"
#endif
#define ARGS_EVENT_ID TRACING "/events/okptest_ar/read/id"
#define ARGS_BENCH_CALLS 500

/* Whether okprobe/list's line of the probe at place+0x... says [ARGS]. */
static int args_listed(const char *place, int *listed)
{
	char needle[96], line[512];

	snprintf(needle, sizeof(needle), "%s+0x", place);
	file_line(DEBUGFS_DIR "/list", needle, line, sizeof(line));
	*listed = line[0] != '\0';
	return strstr(line, "[ARGS]") != NULL;
}

/*
 * The child's RETURN_READS reads of 1..100 bytes, every one an entry of
 * okptest_ar/read with its count and comm; what says which probe took
 * them (how).
 */
static int args_reads_exact(const char *how)
{
	const long reads_sum = RETURN_READS * (RETURN_READS + 1) / 2;
	char comm[32], want[64];
	int count, all;
	long sum;

	CHECK(read_file("/proc/self/comm", comm, sizeof(comm)) == 0, "no comm");
	comm[strcspn(comm, "\n")] = '\0';
	snprintf(want, sizeof(want), "comm=\"%s\"", comm);
	count = event_reads("okptest_ar/read", "count", &sum, want, &all);
	say("# okptest_ar/read %s: %d entries, counts adding up to %ld",
	    how, count, sum);
	CHECK(count == RETURN_READS && sum == reads_sum && all,
	      "%s: %d entries of the child's %d reads, counts adding up to %ld (not %ld)%s",
	      how, count, RETURN_READS, sum, reads_sum,
	      all ? "" : ", not every one with the child's comm");
	return 0;
}

/*
 * On ksys_read: the register-only line on the argument-only path, then on
 * pt_regs while perf has it (perf counts okptest's own reads meanwhile),
 * then back; a line reading %bx on pt_regs from the start.
 */
static int args_event_steps(void)
{
	unsigned long long counted = 0;
	char text[32];
	int fd, listed, on_args, ret;

	STEP(load_okprobe_with_event(ARGS_LINE));
	CHECK(args_listed("ksys_read", &listed) && listed,
	      "okprobe/list: ksys_read's probe is not argument-only ([ARGS])");
	STEP(args_reads_exact("argument-only"));
	ret = write_file(OKPROBE_EVENTS, ARGS_REGS_LINE);
	CHECK(ret == 0, "defining %s: %s", ARGS_REGS_LINE, strerror(-ret));
	CHECK(!args_listed("vfs_read", &listed) && listed,
	      "okprobe/list: vfs_read's probe, whose line reads a register the record lacks, is listed [ARGS] (or not at all)");
	if (read_file(ARGS_EVENT_ID, text, sizeof(text)) == 0) {
		fd = perf_open(atol(text), 0);
		CHECK(fd >= 0, "perf_event_open(okptest_ar:read): %s",
		      strerror(errno));
		on_args = args_listed("ksys_read", &listed);
		ret = on_args || !listed ?
			fail("while perf has okptest_ar/read its probe must hand pt_regs: %s",
			     listed ? "still [ARGS]" : "not listed") :
			args_reads_exact("with perf open");
		if (!ret) {
			/* Only okptest's own reads, as perf stat counts them. */
			ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
			read_sized(PERF_READS);
			ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
			if (read(fd, &counted, sizeof(counted)) != sizeof(counted))
				counted = 0;
		}
		close(fd);
		if (ret)
			return ret;
		CHECK(counted == PERF_READS, "perf counted %llu of okptest's %d reads",
		      counted, PERF_READS);
		CHECK(args_listed("ksys_read", &listed),
		      "perf closed, ksys_read's probe is not argument-only again");
		STEP(args_reads_exact("argument-only again"));
	}
	CHECK(write_file(OKPROBE_EVENTS, "-:okptest_ar/regs") == 0 &&
	      write_file(OKPROBE_EVENTS, "-:okptest_ar/read") == 0,
	      "removing the okptest_ar events");
	return 0;
}

/*
 * On okprobe_bench.ko's okp_bench_target, which a jump can take: the
 * event's probe optimized onto the short detour, and each of the module's
 * calls target(0), target(1), ... one entry with that argument.
 */
static int args_event_optimized_steps(void)
{
	const long want_sum = ARGS_BENCH_CALLS * (ARGS_BENCH_CALLS - 1L) / 2;
	char line[512], reply[256], command[64];
	long long deadline;
	int count, all, ret;
	long sum;

	ret = load_module(BENCH_KO, "");
	CHECK(ret == 0, "loading okprobe_bench.ko: %s", strerror(-ret));
	ret = write_file(OKPROBE_EVENTS,
			 "p:okptest_ar/bench okp_bench_target arg=$arg1:u64");
	CHECK(ret == 0, "defining okptest_ar/bench: %s", strerror(-ret));
	CHECK(write_file(TRACING "/events/okptest_ar/bench/enable", "1") == 0,
	      "enabling okptest_ar/bench");
	deadline = now_ms() + BENCH_OPTIMIZER_WAIT_MS;
	do {
		file_line(DEBUGFS_DIR "/jumps", "okp_bench_target+0x", line,
			  sizeof(line));
		if (strstr(line, "  optimized ") || strstr(line, "breakpoint: "))
			break;
		usleep(20000);
	} while (now_ms() < deadline);
	say("# okprobe/jumps: %s", line);
	CHECK(strstr(line, "  optimized ") && strstr(line, " args"),
	      "okptest_ar/bench's probe is not optimized onto the argument-only detour: %s",
	      line);
	CHECK(clear_file(TRACING "/trace") == 0, "clearing the trace");
	ret = bench_command("arm none okp_bench_target", reply, sizeof(reply));
	if (!ret) {
		snprintf(command, sizeof(command), "run %d", ARGS_BENCH_CALLS);
		ret = bench_command(command, reply, sizeof(reply));
		write_file(BENCH_CONTROL, "disarm");
	}
	CHECK(ret == 0, "okprobe_bench.ko's calls: %s", strerror(-ret));
	write_file(TRACING "/events/okptest_ar/bench/enable", "0");
	count = traced_values("bench", "arg", &sum, NULL, &all);
	say("# okptest_ar/bench: %d entries of %d calls, arguments adding up to %ld",
	    count, ARGS_BENCH_CALLS, sum);
	CHECK(count == ARGS_BENCH_CALLS && sum == want_sum,
	      "%d entries of %d calls, arguments adding up to %ld (not %ld)",
	      count, ARGS_BENCH_CALLS, sum, want_sum);
	CHECK(write_file(OKPROBE_EVENTS, "-:okptest_ar/bench") == 0,
	      "removing okptest_ar/bench");
	ret = unload_module("okprobe_bench");
	CHECK(ret == 0, "unloading okprobe_bench: %s", strerror(-ret));
	return 0;
}

static int probe_events_args_steps(void)
{
	STEP(args_event_steps());
	if (exists(BENCH_KO))
		STEP(args_event_optimized_steps());
	else
		say("# no okprobe_bench.ko for this architecture: no optimized event");
	return unload_okprobe();
}

static int test_probe_events_args(void)
{
	int ret = events_test(probe_events_args_steps,
			      TRACING "/events/okptest_ar/bench/enable");

	if (ret && ret != RESULT_SKIP) {
		write_file(BENCH_CONTROL, "disarm");
		unload_module("okprobe_bench");
	}
	return ret;
}
