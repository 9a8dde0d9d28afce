// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part: the okprobe suite's first tests: okprobe
 * loading and unloading, its sysctl and debugfs files, the loader's
 * parameters and refusals, the in-kernel test module (okprobe_selftest.ko)
 * in every calling context, probes on real functions under load, enabling
 * and disabling, the kernel's kprobe_events beside okprobe, riscv's
 * liveness, a module going away under its probes, the trap-path notifier
 * and copied templates.
 *
 * A part of okptest.c (one program, one test list), included by it.
 */

/* ---- The okprobe suite --------------------------------------------------- */

/*
 * Loads okprobe; its "loaded:" line must count the core exception table's
 * entries: without it every jump plan asks the kernel instruction by
 * instruction (a build that lost the table once made registrations 20%
 * slower and nothing else noticed).
 */
static int test_load(void)
{
	static char log[16384];
	int mark = kmsg_mark();
	const char *line;
	long entries = -1;

	STEP(load_okprobe(default_params));
	kmsg_collect(mark, log, sizeof(log));
	line = strstr(log, "okprobe: loaded: ");
	CHECK(line, "no 'okprobe: loaded:' line in the kernel log");
	line = strstr(line, "ranges, ");
	CHECK(line && sscanf(line, "ranges, %ld core exception entries",
			     &entries) == 1,
	      "the loaded line does not count core exception entries");
	CHECK(entries > 0,
	      "okprobe found no core exception table (%ld): jump plans check exception entries instruction by instruction",
	      entries);
	return 0;
}

static int test_sysctl_default(void)
{
	char value[32];
	int ret = read_file(SYSCTL_OPTIMIZATION, value, sizeof(value));

	CHECK(ret == 0, "reading %s: %s", SYSCTL_OPTIMIZATION, strerror(-ret));
	CHECK(!strcmp(value, "1\n"), "default is '%s', expected 1", value);
	return 0;
}

static int expect_sysctl(const char *expected)
{
	char value[32];

	CHECK(read_file(SYSCTL_OPTIMIZATION, value, sizeof(value)) == 0,
	      "cannot read %s", SYSCTL_OPTIMIZATION);
	CHECK(!strncmp(value, expected, strlen(expected)) &&
		      value[strlen(expected)] == '\n',
	      "sysctl reads '%s', expected %s", value, expected);
	return 0;
}

static int test_sysctl_write(void)
{
	CHECK(write_file(SYSCTL_OPTIMIZATION, "0") == 0, "writing 0 failed");
	STEP(expect_sysctl("0"));
	CHECK(write_file(SYSCTL_OPTIMIZATION, "1\n") == 0, "writing 1 failed");
	STEP(expect_sysctl("1"));
	return 0;
}

static int test_sysctl_rejects(void)
{
	static const char *const bad[] = { "2", "-1", "abc", "100000" };
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ret = write_file(SYSCTL_OPTIMIZATION, bad[i]);
		CHECK(ret == -EINVAL, "writing '%s' returned %s, not EINVAL",
		      bad[i], ret ? strerror(-ret) : "success");
		STEP(expect_sysctl("1"));
	}
	return 0;
}

static int test_debugfs_list(void)
{
	char text[256];

	CHECK(read_file(DEBUGFS_DIR "/list", text, sizeof(text)) == 0,
	      "cannot read list");
	CHECK(text[0] == '\0', "list is not empty: '%s'", text);
	return 0;
}

static int expect_enabled(const char *expected)
{
	char text[16];

	CHECK(read_file(DEBUGFS_DIR "/enabled", text, sizeof(text)) == 0,
	      "cannot read enabled");
	CHECK(text[0] == expected[0] && text[1] == '\n',
	      "enabled reads '%s', expected %s", text, expected);
	return 0;
}

static int test_debugfs_enabled(void)
{
	STEP(expect_enabled("1"));
	CHECK(write_file(DEBUGFS_DIR "/enabled", "0") == 0, "writing 0");
	STEP(expect_enabled("0"));
	CHECK(write_file(DEBUGFS_DIR "/enabled", "1") == 0, "writing 1");
	STEP(expect_enabled("1"));
	CHECK(write_file(DEBUGFS_DIR "/enabled", "2") == -EINVAL,
	      "writing 2 was not refused with EINVAL");
	STEP(expect_enabled("1"));
	return 0;
}

static int test_debugfs_blacklist(void)
{
	/*
	 * 64 KB on the stock kernels; a KASAN kernel's trap path reaches
	 * KASAN's reports, and with them over a thousand functions.
	 */
	static char text[1 << 20];
	char section[64], expected[128], *line;
	unsigned long text_address, start, end;
	unsigned long noinstr_start = kallsyms_address("__noinstr_text_start");
	unsigned long noinstr_end = kallsyms_address("__noinstr_text_end");
	unsigned long nokprobe = kallsyms_address("notify_die");
	/* riscv's entry code sits in plain .text, unmarked. */
	unsigned long entry = IS_X86 ? 0 : kallsyms_address("ret_from_exception");
	int covered = 0, nokprobe_covered = 0, entry_covered = 0;

	CHECK(read_file(DEBUGFS_DIR "/blacklist", text, sizeof(text)) == 0,
	      "cannot read blacklist");
	/* The noinstr section, exactly as /proc/kallsyms bounds it. */
	CHECK(noinstr_start && noinstr_end, "no noinstr markers in kallsyms");
	snprintf(expected, sizeof(expected), "0x%016lx-0x%016lx\tnoinstr text\n",
		 noinstr_start, noinstr_end);
	CHECK(strstr(text, expected), "no line '%s' in the blacklist",
	      expected);
	/* okprobe's own range must cover its own .text, as sysfs reports it. */
	CHECK(read_file("/sys/module/okprobe/sections/.text", section,
			sizeof(section)) == 0,
	      "cannot read okprobe's .text address");
	text_address = strtoul(section, NULL, 16);
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		if (sscanf(line, "0x%lx-0x%lx", &start, &end) == 2) {
			if (strstr(line, "\tokprobe itself") &&
			    start <= text_address && text_address < end)
				covered = 1;
			/* notify_die is a NOKPROBE_SYMBOL() */
			if (strstr(line, "\tNOKPROBE_SYMBOL") &&
			    start <= nokprobe && nokprobe < end)
				nokprobe_covered = 1;
			if (strstr(line, "\triscv entry code") &&
			    start <= entry && entry < end)
				entry_covered = 1;
		}
	CHECK(covered, "no 'okprobe itself' range covers .text at 0x%lx",
	      text_address);
	CHECK(!kernel_has_kprobes || nokprobe_covered,
	      "no NOKPROBE_SYMBOL range covers notify_die at 0x%lx", nokprobe);
	CHECK(IS_X86 || (entry && entry_covered),
	      "no 'riscv entry code' range covers ret_from_exception at 0x%lx",
	      entry);
	return 0;
}

static int test_sample_client(void)
{
	int ret = load_module(SAMPLE_KO, "");

	CHECK(ret == 0, "loading the sample client: %s", strerror(-ret));
	ret = unload_module("okprobe");
	CHECK(ret == -EWOULDBLOCK || ret == -EBUSY,
	      "unloading okprobe under its client returned %s",
	      ret ? strerror(-ret) : "success");
	CHECK(module_loaded("okprobe"), "okprobe went away under its client");
	ret = unload_module("okprobe_sample");
	CHECK(ret == 0, "unloading the sample client: %s", strerror(-ret));
	return 0;
}

static int test_unload(void)
{
	return unload_okprobe();
}

/* /proc/meminfo's VmallocUsed in kB, or -1. */
static long vmalloc_used_kb(void)
{
	char text[4096], *at;

	if (read_file("/proc/meminfo", text, sizeof(text)))
		return -1;
	at = strstr(text, "VmallocUsed:");
	return at ? strtol(at + strlen("VmallocUsed:"), NULL, 10) : -1;
}

#define LOAD_UNLOAD_CYCLES 10
/*
 * What okprobe takes at load in vmalloc space (its module memory, tables,
 * detour and slot pages: execmem is vmalloc) must come back at unload:
 * from the first cycle's end (what the kernel caches once is in by then)
 * to the last, VmallocUsed grows by less than a page a cycle. Not zero:
 * a kernel thread the kernel starts meanwhile (a kworker) takes a 16 kB
 * vmapped stack, as one did on x86 at the second cycle. Not at once
 * either: the kernel frees a module's init sections from a work item
 * after an RCU grace period, so the last reading waits a little for the
 * kernel's deferred frees. A kmalloc leak does not show here.
 */
#define LOAD_UNLOAD_PAGE_KB 4
#define LOAD_UNLOAD_SETTLE_MS 10000
#define VMALLOC_CALLERS 512

/* What /proc/vmallocinfo holds, summed by the function that allocated. */
struct vmalloc_callers {
	int count;
	struct {
		char name[64];
		long kb;
	} caller[VMALLOC_CALLERS];
};

static void vmalloc_by_caller(struct vmalloc_callers *into)
{
	FILE *info = fopen("/proc/vmallocinfo", "re");
	char line[512], name[64];
	unsigned long size;
	int i;

	into->count = 0;
	if (!info)
		return;
	/* "0xstart-0xend size caller+off/len pages=N vmalloc ..." */
	while (fgets(line, sizeof(line), info)) {
		if (sscanf(line, "%*s %lu %63[^+ ]", &size, name) != 2)
			continue;
		for (i = 0; i < into->count; i++)
			if (!strcmp(into->caller[i].name, name))
				break;
		if (i == into->count) {
			if (i == VMALLOC_CALLERS)
				continue;
			snprintf(into->caller[i].name,
				 sizeof(into->caller[i].name), "%s", name);
			into->caller[i].kb = 0;
			into->count++;
		}
		into->caller[i].kb += size / 1024;
	}
	fclose(info);
}

/* Logs the callers whose vmalloc space grew from before to after. */
static void say_vmalloc_growth(const struct vmalloc_callers *before,
			       const struct vmalloc_callers *after)
{
	int i, j;

	for (i = 0; i < after->count; i++) {
		long was = 0;

		for (j = 0; j < before->count; j++)
			if (!strcmp(before->caller[j].name,
				    after->caller[i].name))
				was = before->caller[j].kb;
		if (after->caller[i].kb > was)
			say("# load_unload_cycles: %s holds %ld kB more in /proc/vmallocinfo",
			    after->caller[i].name, after->caller[i].kb - was);
	}
}

static int test_load_unload_cycles(void)
{
	static struct vmalloc_callers before, after;
	long first = -1, last = -1, limit;
	int cycle, waited;

	for (cycle = 0; cycle < LOAD_UNLOAD_CYCLES; cycle++) {
		if (load_okprobe(default_params) || unload_okprobe()) {
			char detail[sizeof(why)];

			snprintf(detail, sizeof(detail), "%s", why);
			return fail("cycle %d: %s", cycle, detail);
		}
		if (cycle == 0) {
			first = vmalloc_used_kb();
			vmalloc_by_caller(&before);
		}
	}
	limit = first + (LOAD_UNLOAD_CYCLES - 1) * LOAD_UNLOAD_PAGE_KB;
	for (waited = 0; waited <= LOAD_UNLOAD_SETTLE_MS; waited += 100) {
		last = vmalloc_used_kb();
		if (last < limit)
			break;
		usleep(100 * 1000);
	}
	CHECK(first >= 0 && last >= 0, "no VmallocUsed in /proc/meminfo");
	if (last >= limit) {
		vmalloc_by_caller(&after);
		say_vmalloc_growth(&before, &after);
	}
	CHECK(last < limit,
	      "VmallocUsed grew by %ld kB over %d load/unload cycles (%ld -> %ld kB, %d ms after): a page or more a cycle",
	      last - first, LOAD_UNLOAD_CYCLES - 1, first, last, waited);
	say("# load_unload_cycles: VmallocUsed %ld kB after the first cycle, %ld kB after the last (%d ms after)",
	    first, last, waited);
	return 0;
}

static int test_loader_parameter(void)
{
	unsigned long address = kallsyms_address("kallsyms_lookup_name");
	char params[64];

	CHECK(address, "kallsyms_lookup_name not in /proc/kallsyms");
	snprintf(params, sizeof(params), "kallsyms_lookup_name=0x%lx",
		 address);
	STEP(load_okprobe(params));
	return unload_okprobe();
}

static int test_wrong_kallsyms_address(void)
{
	unsigned long other = kallsyms_address("sprint_symbol");
	unsigned long right = kallsyms_address("kallsyms_lookup_name");
	char params[64];

	CHECK(other && right, "symbols missing from /proc/kallsyms");
	snprintf(params, sizeof(params), "kallsyms_lookup_name=0x%lx", other);
	STEP(expect_load_failure(params, EINVAL,
				 "cannot resolve kernel symbol kallsyms_lookup_name",
				 "sprint_symbol+0x0",
				 "belongs to another symbol", NULL));
	snprintf(params, sizeof(params), "kallsyms_lookup_name=0x%lx",
		 right + 2);
	STEP(expect_load_failure(params, EINVAL,
				 "kallsyms_lookup_name+0x2",
				 "not the start of the symbol", NULL));
	return 0;
}

static int test_missing_symbol(void)
{
	char params[128];

	return expect_load_failure(params_with(params, sizeof(params),
					       "require_symbol=okprobe_no_such_symbol"),
				   ENOENT,
				   "cannot resolve kernel symbol okprobe_no_such_symbol: not found",
				   NULL);
}

static int test_no_kprobes_needs_parameter(void)
{
	if (kernel_has_kprobes)
		return skip("this kernel has CONFIG_KPROBES");
	return expect_load_failure("", ENOENT,
				   "cannot resolve kernel symbol kallsyms_lookup_name: not exported and no kprobes",
				   NULL);
}

static int test_loader_script(void)
{
	pid_t child;
	int status;

	/* In the tree, tools/okprobe-load (selftests/Makefile says where). */
	const char *loader = getenv("OKPROBE_LOAD");

	if (!loader)
		loader = "/sbin/okprobe-load";
	if (!exists("/bin/sh"))
		return skip("no shell in this guest");
	if (!exists(loader))
		return skip("no okprobe-load: set OKPROBE_LOAD to tools/okprobe-load");
	child = fork();
	if (child == 0) {
		execl("/bin/sh", "sh", loader, OKPROBE_KO, (char *)NULL);
		_exit(127);
	}
	CHECK(child > 0 && waitpid(child, &status, 0) == child,
	      "could not run okprobe-load");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "okprobe-load exited with status 0x%x", status);
	STEP(expect_loaded_surfaces());
	return unload_okprobe();
}

/*
 * okprobe_selftest.ko (x86) runs the in-kernel probe tests at load; each of
 * its TAP lines becomes a test here.
 */
/* Whether the debugfs okprobe/jumps line of where (in jumps) has needle. */
static int jump_line_has(const char *jumps, const char *where,
			 const char *needle)
{
	const char *line = strstr(jumps, where), *end;

	if (!line)
		return 0;
	end = strchr(line, '\n');
	line = strstr(line, needle);
	return line && (!end || line < end);
}

/*
 * Waits up to 60 s for where's line in debugfs okprobe/jumps to say
 * optimized; leaves the file in jumps. 0 or -ETIMEDOUT.
 */
static int wait_for_jump(const char *where, char *jumps, size_t size)
{
	int waited;

	for (waited = 0; waited < 60000; waited += 50) {
		if (!read_file(DEBUGFS_DIR "/jumps", jumps, size) &&
		    jump_line_has(jumps, where, " optimized region="))
			return 0;
		usleep(50000);
	}
	return -ETIMEDOUT;
}

/*
 * Reports okprobe_selftest.ko's TAP results (debugfs okprobe_selftest/
 * results, changed in place) as KTAP subtests: how many, and *failed.
 */
static int report_in_kernel_results(char *results, int *failed)
{
	enum { MAX_SUBTESTS = 256 };
	static const char *sub_names[MAX_SUBTESTS], *sub_details[MAX_SUBTESTS];
	static int sub_failed[MAX_SUBTESTS];
	int lines = 0, number;
	char *line, *name;

	*failed = 0;
	for (line = strtok(results, "\n"); line && lines < MAX_SUBTESTS;
	     line = strtok(NULL, "\n")) {
		int bad = strncmp(line, "ok ", 3) != 0;
		char *detail = strstr(line, " # ");

		if (sscanf(line + (bad ? 7 : 3), "%d", &number) != 1)
			continue;
		name = strchr(line + (bad ? 7 : 3), ' ');
		if (detail)
			*detail = '\0';
		sub_failed[lines] = bad;
		sub_names[lines] = name ? name + 1 : line;
		sub_details[lines] = detail ? detail + 3 : "";
		lines++;
		*failed += bad;
	}
	report_subtests(sub_failed, sub_names, sub_details, lines);
	return lines;
}

/*
 * One part of okprobe_selftest.ko's tests alone (its module parameter
 * param=1), with at least min_results results, none failed.
 */
static int in_kernel_part(const char *param, const char *what,
			  int min_results)
{
	static char results[4096];
	char params[64];
	int ret, lines, failed;

	if (!exists(SELFTEST_KO))
		return skip("no okprobe_selftest.ko for this architecture");
	STEP(load_okprobe(default_params));
	snprintf(params, sizeof(params), "%s=1", param);
	ret = load_module(SELFTEST_KO, params);
	if (ret == 0) {
		ret = read_file("/sys/kernel/debug/okprobe_selftest/results",
				results, sizeof(results));
		unload_module("okprobe_selftest");
	}
	STEP(unload_okprobe());
	CHECK(ret == 0, "okprobe_selftest.ko %s: %s", params, strerror(-ret));
	lines = report_in_kernel_results(results, &failed);
	CHECK(lines >= min_results, "only %d %s results", lines, what);
	CHECK(!failed, "%d %s tests failed", failed, what);
	return 0;
}

/*
 * okprobe_selftest.ko's entry probe tests alone (entry_only=1): what the
 * ftrace suite runs, where the whole in-kernel suite does not.
 */
static int test_entry_in_kernel(void)
{
	return in_kernel_part("entry_only", "entry probe", 3);
}

/*
 * okprobe_selftest.ko's kernel kprobe coexistence matrix alone
 * (coexist_only=1) on strscpy and memchr_inv: each pairing of a kernel
 * kprobe (and optprobe, where the kernel has them) with an okprobe,
 * breakpoint and optimized, in 4 placements. The matrix on the module's
 * own functions is the whole suite's.
 */
static int test_coexist_in_kernel(void)
{
	if (!running_part)
		return skip("the whole suite runs the matrix in in_kernel_probes");
	if (!kernel_has_kprobes)
		return skip("this kernel has no kprobes to be beside");
	return in_kernel_part("coexist_only", "kernel kprobe coexistence", 8);
}

/*
 * okprobe_selftest.ko's argument-only probe tests alone (args_only=1): the
 * record, write-backs and the detour's kind on the args target; the
 * differential against probes of pt_regs on every optimizable target and
 * at every instruction of a few kernel functions; every CPU at once.
 */
static int test_args_in_kernel(void)
{
	if (!running_part)
		return skip("the whole suite runs these in in_kernel_probes");
	return in_kernel_part("args_only", "argument-only probe", 6);
}

/*
 * okprobe_selftest.ko's calling-context and bad-input tests alone
 * (context_only=1): a client's calls from atomic context (interrupts or
 * preemption off, a spinlock, which PREEMPT_RT makes a sleeping lock,
 * rcu_read_lock(), a handler), NULL pointers, garbage structs and symbol
 * names, fuzzed registrations. What the kernel's preemption model changes
 * for a caller, on every kernel the whole suite does not run on.
 */
static int test_context_in_kernel(void)
{
	if (!running_part)
		return skip("the whole suite runs these in in_kernel_probes");
	return in_kernel_part("context_only", "calling context", 6);
}

static int test_in_kernel_probes(void)
{
	static char results[16384], jumps[8192];
	/* The module's resident probes that must stay breakpoints, and why. */
	static const struct {
		const char *symbol;
		unsigned long offset;
		const char *why;
	} refusals[] = {
#ifdef __x86_64__
		{ "okp_target_jmp", 3, "a branch targets the inside of the jump" },
		{ "okp_target_extable", 3, "the function has an exception-table entry" },
		{ "okp_target_indirect", 0, "the function jumps indirectly" },
		{ "okp_target_static_jump", 0, "a jump label targets the inside of the jump" },
		{ "okp_target_add", 0, "another probe lies inside the jump's region" },
#else
		{ "okp_rvj_no_register", 0, "no register is dead at the probe" },
#endif
	};
	/* Its resident probe: hit 5 times at load, then optimized. */
	const char *const resident_symbol = IS_X86 ? "okp_target_add" : "okp_rvc_stack";
	const unsigned long resident_offset = IS_X86 ? 3 : 6;
	char list[2048] = "", resident[64] = "", where[64];
	char params[128] = "", pad[32] = "0";
	unsigned long entry_pad;
	int ret, lines, failed;
	size_t i;

	if (!exists(SELFTEST_KO))
		return skip("no okprobe_selftest.ko for this architecture");
	if (IS_X86)
		snprintf(params, sizeof(params),
			 "core_static_call_sites=0x%lx core_static_call_sites_end=0x%lx",
			 kallsyms_address("__start_static_call_sites"),
			 kallsyms_address("__stop_static_call_sites"));
	/* A target whose suite repeats another's runs its long tests shorter. */
	if (getenv("okptest_selftest_scale"))
		snprintf(params + strlen(params), sizeof(params) - strlen(params),
			 " scale=%d", atoi(getenv("okptest_selftest_scale")));
	STEP(load_okprobe(default_params));
	ret = load_module(SELFTEST_KO, params);
	if (ret == 0) {
		/* Offsets count from past the targets' endbr64 under IBT. */
		read_file("/sys/module/okprobe_selftest/parameters/entry_pad",
			  pad, sizeof(pad));
		entry_pad = strtoul(pad, NULL, 0);
		snprintf(resident, sizeof(resident), "%s+0x%lx/",
			 resident_symbol, resident_offset + entry_pad);
		ret = read_file("/sys/kernel/debug/okprobe_selftest/results",
				results, sizeof(results));
		if (!ret)
			ret = wait_for_jump(resident, jumps, sizeof(jumps));
		if (!ret)
			ret = read_file(DEBUGFS_DIR "/list", list,
					sizeof(list));
		unload_module("okprobe_selftest");
	}
	STEP(unload_okprobe());
	CHECK(ret == 0, "okprobe_selftest.ko: %s", strerror(-ret));
	CHECK(strstr(list, resident) && strstr(list, "[okprobe_selftest]") &&
	      strstr(list, "hits=5 missed=0 [OPTIMIZED]"),
	      "debugfs list shows '%s'", list);
	for (i = 0; i < ARRAY_SIZE(refusals); i++) {
		const char *at;

		snprintf(where, sizeof(where), "%s+0x%lx/", refusals[i].symbol,
			 refusals[i].offset + entry_pad);
		at = strstr(jumps, where);
		CHECK(jump_line_has(jumps, where, " breakpoint") &&
		      jump_line_has(jumps, where, refusals[i].why),
		      "jumps: %s is not refused for '%s': %.*s",
		      where, refusals[i].why,
		      at ? (int)strcspn(at, "\n") : 0, at ? at : "");
	}
	lines = report_in_kernel_results(results, &failed);
	CHECK(lines > 10, "only %d in-kernel results", lines);
	CHECK(!failed, "%d in-kernel tests failed", failed);
	return 0;
}

/* Reads a small /proc file count times, size bytes (at most 4096) a read. */
static void read_proc_sized(int count, size_t size)
{
	static char buffer[4096];
	int i, fd;

	for (i = 0; i < count; i++) {
		fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (read(fd, buffer, size < sizeof(buffer) ? size : sizeof(buffer)) < 0)
			buffer[0] = 0;
		close(fd);
	}
}

static void read_proc_repeatedly(int count)
{
	read_proc_sized(count, 256);
}

/* The line of file (at most 64 KiB read) containing needle, "" if none. */
static void file_line(const char *path, const char *needle, char *line,
		      size_t size)
{
	static char text[65536];
	char *start, *end;

	line[0] = '\0';
	if (read_file(path, text, sizeof(text)))
		return;
	start = strstr(text, needle);
	if (!start)
		return;
	while (start > text && start[-1] != '\n')
		start--;
	end = strchr(start, '\n');
	snprintf(line, size, "%.*s", end ? (int)(end - start) : (int)strlen(start),
		 start);
}

/* The debugfs okprobe/list line containing needle, copied to line. */
static int list_line(const char *needle, char *line, size_t size)
{
	char list[4096], *at;

	if (read_file(DEBUGFS_DIR "/list", list, sizeof(list)))
		return 0;
	for (at = strtok(list, "\n"); at; at = strtok(NULL, "\n")) {
		if (strstr(at, needle)) {
			snprintf(line, size, "%s", at);
			return 1;
		}
	}
	return 0;
}

/* Reads from two processes, so both CPUs run ksys_read. */
static void read_from_two_processes(int reads)
{
	pid_t children[2];
	int i, status;

	for (i = 0; i < 2; i++) {
		children[i] = fork();
		if (children[i] == 0) {
			read_proc_repeatedly(reads);
			_exit(0);
		}
	}
	for (i = 0; i < 2; i++)
		waitpid(children[i], &status, 0);
}

/* Hits of the probe whose debugfs okprobe/list line has needle, or -1. */
static long list_hits(const char *needle)
{
	char line[512], *hits;

	if (!list_line(needle, line, sizeof(line)))
		return -1;
	hits = strstr(line, "hits=");
	return hits ? strtol(hits + 5, NULL, 10) : -1;
}


/* Loads okprobe and the sample client probing ksys_read (sample_params). */
/* okprobe, then the sample client with params (unloading okprobe if not). */
static int load_okprobe_and_sample_with(const char *params)
{
	int ret;

	STEP(load_okprobe(default_params));
	ret = load_module(SAMPLE_KO, params);
	if (ret) {
		unload_okprobe();
		return fail("sample with %s: %s", params, strerror(-ret));
	}
	return 0;
}

static int load_okprobe_and_sample(void)
{
	return load_okprobe_and_sample_with(sample_params);
}

static int unload_sample_and_okprobe(void)
{
	int ret = unload_module("okprobe_sample");

	CHECK(ret == 0, "unloading the sample: %s", strerror(-ret));
	return unload_okprobe();
}

/*
 * The bytes at a probe, as the sample client and okprobe_test_gone.ko show
 * them in their text parameter ("cc 55 49 ...").
 */
#define SAMPLE_TEXT "/sys/module/okprobe_sample/parameters/text"
#define GONE_TEXT "/sys/module/okprobe_test_gone/parameters/text"
#define TEXT_BYTES 8

/* Reads a text parameter into text, also left as read in shown; 1 if read. */
static int read_text(const char *path, unsigned char *text, char *shown,
		     size_t size)
{
	int i, used = 0, length;

	if (read_file(path, shown, size))
		return 0;
	shown[strcspn(shown, "\n")] = '\0';
	for (i = 0; i < TEXT_BYTES; i++, used += length)
		if (sscanf(shown + used, "%hhx%n", &text[i], &length) != 1)
			return 0;
	return 1;
}

/*
 * The sample client's probe counts while two processes read concurrently.
 * Fewer reads on riscv: a read there takes about 4 ms (TCG, lockdep).
 */
static int test_syscall_probe_under_load(void)
{
	const int reads = IS_X86 ? 3000 : 1000;
	long hits;

	STEP(load_okprobe_and_sample());
	read_from_two_processes(reads);
	hits = list_hits(sample_where);
	STEP(unload_sample_and_okprobe());
	CHECK(hits >= 2 * reads, "%ld hits for %d reads", hits, 2 * reads);
	return 0;
}

/*
 * Reads until the list line of needle shows [OPTIMIZED] (up to 60 s), the
 * line left in line; 1 once it does, else 0 with okprobe/jumps' line for
 * needle in line (why it stays a breakpoint).
 */
static int wait_listed_optimized(const char *needle, char *line, size_t size)
{
	int waited;

	for (waited = 0; waited < 60000; waited += 50) {
		read_proc_repeatedly(10);
		if (list_line(needle, line, size) && strstr(line, "[OPTIMIZED]"))
			return 1;
		usleep(50000);
	}
	file_line(DEBUGFS_DIR "/jumps", needle, line, size);
	return 0;
}

/* A child that reads /proc/self/stat until it is killed. */
static pid_t start_reader(void)
{
	pid_t child = fork();

	if (child == 0) {
		for (;;)
			read_proc_repeatedly(1000);
	}
	return child;
}

/*
 * The sample client's probe on ksys_read is optimized (a jump in the text),
 * and the client unloads while two processes keep reading on both CPUs:
 * its hits run through the detour until okprobe_unregister() has taken the
 * jump out and waited.
 */
static int test_unload_while_optimized(void)
{
	char line[512] = "", after[256], shown[64] = "";
	unsigned char text[TEXT_BYTES];
	pid_t readers[2];
	int ret, i, status, optimized, jumped;

	STEP(load_okprobe_and_sample());
	optimized = wait_listed_optimized(sample_where, line, sizeof(line));
	jumped = read_text(SAMPLE_TEXT, text, shown, sizeof(shown)) &&
		 is_jump(text);
	for (i = 0; i < 2; i++)
		readers[i] = start_reader();
	usleep(300000);
	ret = unload_module("okprobe_sample");
	usleep(300000);
	for (i = 0; i < 2; i++) {
		if (readers[i] > 0) {
			kill(readers[i], SIGKILL);
			waitpid(readers[i], &status, 0);
		}
	}
	if (ret)
		unload_module("okprobe_sample");
	CHECK(!list_line(sample_where, after, sizeof(after)),
	      "the probe is still listed after the unload");
	STEP(unload_okprobe());
	CHECK(optimized, "the probe never showed [OPTIMIZED]: '%s'", line);
	CHECK(jumped, "[OPTIMIZED], but the text at the probe is %s", shown);
	CHECK(ret == 0, "unloading the sample: %s", strerror(-ret));
	return 0;
}

/*
 * The first instruction of okp_gone_target (okprobe_test_target.ko), which
 * okprobe_test_gone.ko probes: x86 mov %rdi,%rax; riscv addi t0,a0,1, a
 * 4-byte instruction (ebreak when armed; the sample's ksys_read probe is
 * over a compressed one on the riscv kernels: c.ebreak).
 */
#ifdef __x86_64__
static const unsigned char gone_target_start[] = { 0x48, 0x89, 0xf8 };
#else
static const unsigned char gone_target_start[] = { 0x93, 0x02, 0x15, 0x00 };
#endif

/*
 * The bytes at the probe that path shows: armed, a breakpoint or a jump;
 * disarmed, neither, and starting with the length bytes of expected.
 */
static int expect_text(const char *path, int armed,
		       const unsigned char *expected, size_t length)
{
	unsigned char text[TEXT_BYTES];
	char shown[64];

	CHECK(read_text(path, text, shown, sizeof(shown)), "cannot read %s",
	      path);
	if (armed)
		CHECK(is_breakpoint(text) || is_jump(text),
		      "%s is %s: no breakpoint or jump", path, shown);
	else
		CHECK(!is_breakpoint(text) && !is_jump(text) &&
		      !memcmp(text, expected, length),
		      "%s is %s: not the instruction", path, shown);
	return 0;
}

/*
 * okprobe_disable() through the sample's parameter, and debugfs enabled:
 * hits stop while disabled and resume after, and the breakpoints leave the
 * text while disabled and come back after: the sample's on ksys_read and
 * okprobe_test_gone.ko's on okp_gone_target show their bytes.
 */
static int enabled_switch_steps(void)
{
	unsigned char original[TEXT_BYTES];
	char line[512], shown[64];
	long before, after;

	read_from_two_processes(200);
	before = list_hits(sample_where);
	CHECK(before >= 400, "%ld hits for 400 reads", before);
	STEP(expect_text(SAMPLE_TEXT, 1, NULL, 0));
	STEP(expect_text(GONE_TEXT, 1, NULL, 0));

	CHECK(!write_file("/sys/module/okprobe_sample/parameters/disabled",
			  "1"), "disabling through the sample failed");
	CHECK(list_line(sample_where, line, sizeof(line)) &&
	      strstr(line, "[DISABLED]"), "list shows '%s'", line);
	CHECK(read_text(SAMPLE_TEXT, original, shown, sizeof(shown)),
	      "cannot read %s", SAMPLE_TEXT);
	STEP(expect_text(SAMPLE_TEXT, 0, original, sizeof(original)));
	STEP(expect_text(GONE_TEXT, 1, NULL, 0));
	/* Reading the list is itself a read: baselines are taken after. */
	before = list_hits(sample_where);
	read_from_two_processes(200);
	after = list_hits(sample_where);
	CHECK(after == before, "disabled probe counted %ld hits",
	      after - before);
	CHECK(!write_file("/sys/module/okprobe_sample/parameters/disabled",
			  "0"), "enabling through the sample failed");
	CHECK(list_line(sample_where, line, sizeof(line)) &&
	      !strstr(line, "[DISABLED]"), "list shows '%s'", line);
	STEP(expect_text(SAMPLE_TEXT, 1, NULL, 0));
	read_from_two_processes(200);
	before = list_hits(sample_where);
	CHECK(before >= after + 400, "re-enabled probe counted %ld of 400",
	      before - after);

	CHECK(!write_file(DEBUGFS_DIR "/enabled", "0"), "enabled=0 failed");
	STEP(expect_text(SAMPLE_TEXT, 0, original, sizeof(original)));
	STEP(expect_text(GONE_TEXT, 0, gone_target_start,
			 sizeof(gone_target_start)));
	before = list_hits(sample_where);
	read_from_two_processes(200);
	after = list_hits(sample_where);
	CHECK(after == before, "enabled=0 still counted %ld hits",
	      after - before);
	CHECK(list_line(gone_where, line, sizeof(line)),
	      "enabled=0 dropped okp_gone_target's probe from the list");
	CHECK(!write_file(DEBUGFS_DIR "/enabled", "1"), "enabled=1 failed");
	STEP(expect_text(SAMPLE_TEXT, 1, NULL, 0));
	STEP(expect_text(GONE_TEXT, 1, NULL, 0));
	read_from_two_processes(200);
	before = list_hits(sample_where);
	CHECK(before >= after + 400, "enabled=1 counted %ld of 400",
	      before - after);
	return 0;
}

/* A module a test loads after okprobe and unloads before it. */
struct test_module {
	const char *path, *params, *name;
};

/*
 * Loads okprobe and then the modules in order, runs steps, unloads them in
 * reverse and okprobe last; the first failure is the result.
 */
static int with_modules(const struct test_module *modules, int count,
			int (*steps)(void))
{
	int ret = 0, loaded = 0;

	STEP(load_okprobe(default_params));
	for (; loaded < count; loaded++) {
		ret = load_module(modules[loaded].path, modules[loaded].params);
		if (ret) {
			ret = fail("%s (%s): %s", modules[loaded].path,
				   modules[loaded].params, strerror(-ret));
			break;
		}
	}
	if (!ret)
		ret = steps();
	while (loaded > 0)
		unload_module(modules[--loaded].name);
	if (ret) {
		/* Not left for the next test to trip over; ret says why. */
		unload_module("okprobe");
		return ret;
	}
	return unload_okprobe();
}

static int enabled_switch_test_steps(void)
{
	int ret = enabled_switch_steps();

	write_file(DEBUGFS_DIR "/enabled", "1");
	return ret;
}

static int test_enable_disable_switches(void)
{
	const struct test_module modules[] = {
		{ TARGET_KO, "", "okprobe_test_target" },
		{ GONE_KO, "", "okprobe_test_gone" },
		{ SAMPLE_KO, sample_params, "okprobe_sample" },
	};

	if (!exists(GONE_KO))
		return skip("no okprobe_test_gone.ko for this architecture");
	return with_modules(modules, ARRAY_SIZE(modules),
			    enabled_switch_test_steps);
}

/*
 * okprobe next to kprobe_events, as an operator meets it: the sample client
 * probes ksys_read past its ftrace site. While it does, ksys_read is in the
 * kernel's kprobe blacklist (/sys/kernel/debug/kprobes/blacklist), so a
 * kprobe_events probe at the same address is refused, while one on the
 * ftrace site (ksys_read+0: a kprobe on ftrace, no byte of its own) and one
 * in another function are taken. Once the client is gone the same line is
 * taken, and the client is then refused (EBUSY) while the event exists.
 */
#define KPROBE_EVENTS "/sys/kernel/tracing/kprobe_events"
#define KPROBES_BLACKLIST "/sys/kernel/debug/kprobes/blacklist"

/*
 * Removes okptest's own kprobe events (group okptest), leaving any others
 * a machine has; 0 or -errno.
 */
static int clear_okptest_events(void)
{
	static char events[1 << 16];
	char remove[128], *line;
	int ret = read_file(KPROBE_EVENTS, events, sizeof(events));

	/* No kprobe_events: nothing of okptest's there. */
	if (ret)
		return ret;
	for (line = strtok(events, "\n"); line;
	     line = strtok(NULL, "\n")) {
		char *name = strstr(line, ":okptest/");

		if (!name)
			continue;
		snprintf(remove, sizeof(remove), "-:okptest/%.*s",
			 (int)strcspn(name + 9, " "), name + 9);
		if (write_file(KPROBE_EVENTS, remove))
			ret = -EBUSY;
	}
	return ret;
}

static int blacklist_lists(const char *function)
{
	static char text[1 << 17];
	char needle[80];

	snprintf(needle, sizeof(needle), "\t%s\n", function);
	return read_file(KPROBES_BLACKLIST, text, sizeof(text)) == 0 &&
	       strstr(text, needle) != NULL;
}

static int kprobe_events_steps(void)
{
	/* Whether the kernel has KPROBES_ON_FTRACE. */
	const int on_ftrace = kallsyms_address("kprobe_ftrace_handler") != 0;
	char same[96], other[64];
	int ret;

	snprintf(same, sizeof(same), "p:okptest/same %.*s",
		 (int)strcspn(sample_where, "/"), sample_where);
	STEP(load_okprobe(default_params));
	ret = load_module(SAMPLE_KO, sample_params);
	CHECK(ret == 0, "loading the sample client: %s", strerror(-ret));
	CHECK(blacklist_lists("ksys_read"),
	      "ksys_read is not in the kernel's kprobe blacklist while probed");
	ret = write_file(KPROBE_EVENTS, same);
	CHECK(ret == -EINVAL, "'%s' beside okprobe's probe: %s", same,
	      ret ? strerror(-ret) : "taken");
	/*
	 * Without an ftrace site the sample probes ksys_read+0 itself.
	 * Without KPROBES_ON_FTRACE (riscv 6.12) the kernel refuses a kprobe
	 * on an ftrace site itself.
	 */
	ret = write_file(KPROBE_EVENTS, "p:okptest/entry ksys_read");
	if (on_ftrace)
		CHECK(ret == 0 || !strncmp(sample_where, "ksys_read+0x0/", 14),
		      "a kprobe on ksys_read's ftrace site: %s",
		      strerror(-ret));
	else
		CHECK(ret != 0,
		      "a kprobe on ksys_read+0 was taken without KPROBES_ON_FTRACE");
	/* Past its ftrace site where the kernel cannot probe one. */
	snprintf(other, sizeof(other), "p:okptest/other vfs_read+%d",
		 kallsyms_address("ftrace_caller") && !on_ftrace ?
		 FTRACE_SITE_SIZE : 0);
	ret = write_file(KPROBE_EVENTS, other);
	CHECK(ret == 0, "'%s': %s", other, strerror(-ret));
	CHECK(clear_okptest_events() == 0, "clearing kprobe_events");
	ret = unload_module("okprobe_sample");
	CHECK(ret == 0, "unloading the sample client: %s", strerror(-ret));
	CHECK(!blacklist_lists("ksys_read"),
	      "ksys_read stays in the kernel's kprobe blacklist");
	ret = write_file(KPROBE_EVENTS, same);
	CHECK(ret == 0, "'%s' once okprobe is gone: %s", same, strerror(-ret));
	ret = load_module(SAMPLE_KO, sample_params);
	if (!ret)
		unload_module("okprobe_sample");
	CHECK(ret == -EBUSY, "the sample client beside the event: %s",
	      ret ? strerror(-ret) : "loaded");
	CHECK(clear_okptest_events() == 0, "clearing kprobe_events");
	ret = load_module(SAMPLE_KO, sample_params);
	CHECK(ret == 0, "the sample client after the event: %s",
	      strerror(-ret));
	ret = unload_module("okprobe_sample");
	CHECK(ret == 0, "unloading the sample client: %s", strerror(-ret));
	return unload_okprobe();
}

/* After a failed step: okptest's events, the sample client and okprobe go. */
static void undo_sample_and_events(void)
{
	clear_okptest_events();
	unload_module("okprobe_sample");
	unload_module("okprobe");
}

static int test_kprobe_events(void)
{
	int ret;

	mount_tracefs_if_needed();
	if (!exists(KPROBE_EVENTS))
		return skip("the kernel has no kprobe_events");
	ret = kprobe_events_steps();
	if (ret)
		undo_sample_and_events();
	return ret;
}

/*
 * riscv's free registers, with okprobe.ko's psabi_liveness parameter:
 * okprobe_test_gone.ko probes okp_gone_target+0, "addi t0, a0, 1; mv a0,
 * t0; ret". Under the psABI (the default) t0 is dead at the probe and
 * every temporary at the return: the probe optimizes. Strict (0), the
 * return reads every register: it stays a breakpoint and says why.
 */
static int liveness_case(const char *param, const char *expect)
{
	static char jumps[8192];
	const char *where = "okp_gone_target+0x0/";
	char params[128];
	int ret;

	snprintf(params, sizeof(params), "%s %s", default_params, param);
	STEP(load_okprobe(params));
	ret = load_module(TARGET_KO, "");
	if (!ret) {
		ret = load_module(GONE_KO, "");
		if (!ret) {
			ret = expect ? read_file(DEBUGFS_DIR "/jumps", jumps,
						 sizeof(jumps)) :
				       wait_for_jump(where, jumps, sizeof(jumps));
			unload_module("okprobe_test_gone");
		}
		unload_module("okprobe_test_target");
	}
	STEP(unload_okprobe());
	CHECK(!ret, "%s: %s", param, strerror(-ret));
	CHECK(!expect || (jump_line_has(jumps, where, " breakpoint") &&
			  jump_line_has(jumps, where, expect)),
	      "%s: okprobe/jumps shows '%s'", param, jumps);
	return 0;
}

static int test_riscv_liveness(void)
{
	if (IS_X86)
		return skip("riscv's psabi_liveness parameter");
	STEP(liveness_case("psabi_liveness=1", NULL));
	return liveness_case("psabi_liveness=0",
			     "no register is dead where the detour returns");
}

static long read_long(const char *path)
{
	char text[64];

	if (read_file(path, text, sizeof(text)))
		return -1;
	return strtol(text, NULL, 0);
}

#define GONE_PARAMS "/sys/module/okprobe_test_gone/parameters/"
#define TARGET_PARAMS "/sys/module/okprobe_test_target/parameters/"

/*
 * A probe on a module's text: it counts while the module is there, turns
 * [GONE] when the module unloads and never runs again, not even when the
 * module comes back. Registering on the module's freed init text fails.
 */
static int gone_steps(void)
{
	char params[64], line[512];
	unsigned long init_address;
	int ret;

	init_address = read_long(TARGET_PARAMS "init_address");
	CHECK(init_address, "no init_address from the target module");
	snprintf(params, sizeof(params), "init_address=0x%lx", init_address);
	ret = load_module(GONE_KO, params);
	CHECK(!ret, "okprobe_test_gone.ko: %s", strerror(-ret));
	/* No symbol holds it any more: ENOENT, as register_kprobe(). */
	CHECK(read_long(GONE_PARAMS "init_result") == -ENOENT,
	      "registering on freed init text returned %ld, not -ENOENT",
	      read_long(GONE_PARAMS "init_result"));
	CHECK(!write_file(TARGET_PARAMS "call", "10"), "calling the target");
	CHECK(read_long(GONE_PARAMS "hits") == 10, "%ld hits for 10 calls",
	      read_long(GONE_PARAMS "hits"));
	CHECK(list_line(gone_where, line, sizeof(line)) &&
	      strstr(line, "[okprobe_test_target]") &&
	      strstr(line, "hits=10 ") && !strstr(line, "[GONE]"),
	      "list shows '%s'", line);

	CHECK(!unload_module("okprobe_test_target"), "unloading the target");
	CHECK(read_long(GONE_PARAMS "flags") == 2, "probe flags %ld, not GONE",
	      read_long(GONE_PARAMS "flags"));
	CHECK(list_line(gone_where, line, sizeof(line)) &&
	      strstr(line, "[GONE]"), "list shows '%s'", line);

	ret = load_module(TARGET_KO, "");
	CHECK(!ret, "reloading the target: %s", strerror(-ret));
	CHECK(!write_file(TARGET_PARAMS "call", "10"), "calling the target");
	CHECK(read_long(GONE_PARAMS "hits") == 10,
	      "a gone probe ran: %ld hits", read_long(GONE_PARAMS "hits"));
	CHECK(!unload_module("okprobe_test_gone"), "unloading the client");
	CHECK(!list_line("okp_gone_target", line, sizeof(line)),
	      "list still shows '%s'", line);
	return 0;
}

static int gone_test_steps(void)
{
	int ret = gone_steps();

	unload_module("okprobe_test_gone");
	return ret;
}

static int test_module_gone(void)
{
	const struct test_module modules[] = {
		{ TARGET_KO, "", "okprobe_test_target" },
	};

	if (!exists(GONE_KO))
		return skip("no okprobe_test_gone.ko for this architecture");
	return with_modules(modules, ARRAY_SIZE(modules), gone_test_steps);
}

/*
 * x86: a breakpoint in a die notifier that every int3 runs.
 * hw_breakpoint_exceptions_notify is on the die chain with okprobe's
 * priority (INT_MAX) and was registered at boot, so it used to run ahead
 * of okprobe's notifier on every int3: a breakpoint in it re-entered the
 * int3 trap before okprobe's handler could tell, until the NMI count
 * overflowed and the guest hung silently (issue 35, a probe storm on
 * Debian 13's 6.12). okprobe's notifier now goes first; this probes the
 * first instruction past the function's ftrace site, as a breakpoint
 * (optimization off), and has a child execute int3 in user mode: each
 * runs the die chain, passes okprobe's notifier (not its int3) and hits
 * the breakpoint in hw_breakpoint_exceptions_notify, which okprobe must
 * take like any other.
 */
#define INT3_PATH_TRAPS 20

static int int3_path_sigtraps;

static void int3_path_on_sigtrap(int signal)
{
	(void)signal;
	__atomic_fetch_add(&int3_path_sigtraps, 1, __ATOMIC_RELAXED);
}

/* A child that executes int3 INT3_PATH_TRAPS times; its exit status. */
static int int3_path_user_traps(void)
{
	int status = -1, i;
	pid_t child = fork();

	if (child == 0) {
		signal(SIGTRAP, int3_path_on_sigtrap);
		for (i = 0; i < INT3_PATH_TRAPS; i++) {
#ifdef __x86_64__
			__asm__ volatile("int3");
#endif
		}
		_exit(__atomic_load_n(&int3_path_sigtraps, __ATOMIC_RELAXED) ==
		      INT3_PATH_TRAPS ? 0 : 1);
	}
	if (child < 0 || waitpid(child, &status, 0) != child)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int int3_path_steps(void)
{
	const char *notifier = "hw_breakpoint_exceptions_notify";
	char params[128], line[512];
	long hits = -1;
	int offset, ret = -ENOENT, status;

	STEP(load_okprobe(default_params));
	CHECK(!write_file(SYSCTL_OPTIMIZATION, "0"), "optimization off");
	/*
	 * The first offset okprobe takes as a breakpoint: an instruction
	 * past the ftrace site (the endbr64 before it goes to ftrace too).
	 */
	for (offset = 1; offset <= 24 && ret; offset++) {
		snprintf(params, sizeof(params), "symbol=%s offset=%d", notifier,
			 offset);
		ret = load_module(SAMPLE_KO, params);
		if (!ret && (!list_line(notifier, line, sizeof(line)) ||
			     strstr(line, "FTRACE"))) {
			unload_module("okprobe_sample");
			ret = -EBUSY;
		}
	}
	CHECK(ret == 0, "no instruction of %s's first 24 bytes taken: %s",
	      notifier, strerror(-ret));
	CHECK(list_line(notifier, line, sizeof(line)) && !strstr(line, "OPTIMIZED"),
	      "not a breakpoint in okprobe/list: %s", line);
	status = int3_path_user_traps();
	hits = read_long("/sys/module/okprobe_sample/parameters/entries");
	say("# %s: %ld hits from %d user-mode int3s (%s)", notifier, hits,
	    INT3_PATH_TRAPS, line);
	CHECK(status == 0, "the child's int3s: status %d", status);
	CHECK(hits >= INT3_PATH_TRAPS, "%ld hits of the breakpoint in %s, not %d",
	      hits, notifier, INT3_PATH_TRAPS);
	CHECK(!unload_module("okprobe_sample"), "unloading the sample client");
	CHECK(!write_file(SYSCTL_OPTIMIZATION, "1"), "optimization on");
	return unload_okprobe();
}

static int test_int3_path_notifier(void)
{
	int ret;

	if (!IS_X86)
		return skip("x86's die notifiers");
	if (!kallsyms_address("hw_breakpoint_exceptions_notify"))
		return skip("no hw_breakpoint_exceptions_notify in this kernel");
	ret = int3_path_steps();
	if (ret) {
		unload_module("okprobe_sample");
		write_file(SYSCTL_OPTIMIZATION, "1");
		unload_okprobe();
	}
	return ret;
}

/*
 * x86: the code ftrace copies into each dynamic trampoline
 * (ftrace_caller, ftrace_regs_caller, up to their _end labels) is refused
 * as a whole: a breakpoint there went into the next trampoline ftrace
 * made, where nothing takes it (issue 35: register_many() of the bench's
 * whole sample, then its entry probes' ftrace_ops, killed Debian 13's
 * 6.12). okprobe/blacklist shows each template, exactly, and a probe
 * at every 32nd byte of one and at its last is refused with EPERM (each
 * a module load: every 8th took 17 s of x86-6.12's suite).
 */
/* The core kernel's text symbols in [start, end), by address: up to max. */
struct label {
	unsigned long address;
	char name[64];
};

static int labels_within(unsigned long start, unsigned long end,
			 struct label *labels, int max)
{
	const struct kernel_symbol *symbol;
	struct label label;
	size_t next;
	int count = 0, i;

	for (next = 0; count < max && next < kernel_symbol_count; next++) {
		symbol = &kernel_symbols[next];
		if (symbol->address < start || symbol->address >= end ||
		    (symbol->type != 't' && symbol->type != 'T'))
			continue;
		label.address = symbol->address;
		snprintf(label.name, sizeof(label.name), "%s", symbol->name);
		for (i = count; i > 0 && labels[i - 1].address > label.address;
		     i--)
			labels[i] = labels[i - 1];
		labels[i] = label;
		count++;
	}
	return count;
}

/* Each template's first and _end labels. */
static const char *const copied_templates[][2] = {
	{ "ftrace_caller", "ftrace_caller_end" },
	{ "ftrace_regs_caller", "ftrace_regs_caller_end" },
};

static int copied_templates_steps(const unsigned long (*bounds)[2])
{
	const char *const (*templates)[2] = copied_templates;
	static char text[65536];
	char expected[160], params[128];
	struct label label[16];
	unsigned long start, end;
	int i, offset, ret, found = 0, labels, at, last;

	STEP(load_okprobe(default_params));
	CHECK(read_file(DEBUGFS_DIR "/blacklist", text, sizeof(text)) == 0,
	      "cannot read okprobe/blacklist");
	for (i = 0; i < (int)ARRAY_SIZE(copied_templates); i++) {
		start = bounds[i][0];
		end = bounds[i][1];
		if (!start || !end)
			continue;
		found++;
		snprintf(expected, sizeof(expected),
			 "0x%016lx-0x%016lx\tftrace's trampoline template",
			 start, end);
		CHECK(strstr(text, expected), "no line '%s...' in okprobe/blacklist",
		      expected);
		/*
		 * Every 32nd byte and the last (the line above covers the
		 * rest), as symbol+offset of the label it follows.
		 */
		labels = labels_within(start, end, label, 16);
		last = (int)(end - start) - 1;
		for (offset = 0, at = 0; offset <= last;
		     offset = offset == last ? last + 1 :
			      offset + 32 < last ? offset + 32 : last) {
			while (at + 1 < labels &&
			       label[at + 1].address <= start + offset)
				at++;
			CHECK(labels && label[0].address == start,
			      "no label at %s", templates[i][0]);
			snprintf(params, sizeof(params), "symbol=%s offset=%lu",
				 label[at].name,
				 start + offset - label[at].address);
			ret = load_module(SAMPLE_KO, params);
			if (!ret)
				unload_module("okprobe_sample");
			CHECK(ret == -EPERM, "%s: %s, not EPERM", params,
			      ret ? strerror(-ret) : "a probe was taken");
		}
	}
	say("# %d ftrace trampoline templates refused", found);
	return unload_okprobe();
}

static int test_copied_templates(void)
{
	unsigned long bounds[ARRAY_SIZE(copied_templates)][2];
	int i, ret;

	if (!IS_X86)
		return skip("x86's ftrace trampolines");
	for (i = 0; i < (int)ARRAY_SIZE(copied_templates); i++) {
		bounds[i][0] = kallsyms_address(copied_templates[i][0]);
		bounds[i][1] = kallsyms_address(copied_templates[i][1]);
	}
	if (!bounds[0][1] && !bounds[1][1])
		return skip("no ftrace trampoline templates in this kernel");
	ret = copied_templates_steps(bounds);
	if (ret) {
		unload_module("okprobe_sample");
		unload_okprobe();
	}
	return ret;
}
