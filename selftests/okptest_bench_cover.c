// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part: make bench's okprobe-cover steps (issue 41), what
 * basic-block coverage costs:
 *
 *   - cover-arm (okptest_bench_cover_arm.c): okprobe/cover's reach mode
 *     arms about 1,000, 10,000 and 50,000 blocks of core-kernel functions
 *     and clears them, then the kernel's kprobes are registered one by one
 *     at the same blocks and unregistered in one batch; each timed, every
 *     block's text checked restored after each pass.
 *   - cover-workload (okptest_bench_cover_workload.c): Python reading the
 *     files of /usr on Debian's userland disk, with no probes, with reach
 *     coverage and with counts coverage of every function of the Debian
 *     modules that serve that disk (okptest_cover_module.c's set), in
 *     interleaved rounds, the page cache dropped before each run.
 *
 * This file is what both share: okprobe/cover's writes (a page of
 * addresses each) and its report, read and tallied (functions, blocks, how
 * each is probed, refusals by errno, hits). Printed as "# cover-arm: ",
 * "# cover-steps: " and "# cover-workload: " lines; tools/bench
 * (tools/bench_cover.py) makes the tables. A benchmark: it fails only when
 * the run broke (counts that differ from pass to pass, a refusal it did
 * not expect, text not restored), never on speed.
 *
 * A part of okptest.c (one program, one test list), included by it after
 * okptest_cover_module.c, whose module snapshot the workload step uses.
 */

/* ---- make bench: okprobe/cover's writes and report ----------------------- */

#define COVER_FILE DEBUGFS_DIR "/cover"
/* okprobe/cover takes up to a page a write. */
#define COVER_WRITE_MAX 4096
/* okprobe_bench.ko's OKP_BENCH_MAX_SITES, less a function's 4096 blocks. */
#define COVER_MAX_SIZE 60000
/* What the discovery may cover, the functions that ran included. */
#define COVER_DISCOVERY_FUNCTIONS 30000
#define COVER_DISCOVERY_BLOCKS 250000
/*
 * The report of 50,000 blocks is about 2 MB (a block's line is 30-50
 * bytes), but the buffer holds the discovery's largest: a line for each
 * of COVER_DISCOVERY_BLOCKS blocks at 80 bytes (a refused block's line,
 * with its reason, is up to 110) and for each of COVER_DISCOVERY_FUNCTIONS
 * functions at 130, about 24 MB, so that the discovery reaches its own
 * limits (cover_report_read) before the buffer's.
 */
#define COVER_REPORT_SIZE (24 << 20)
#define COVER_MAX_SIZES 8
#define COVER_DEFAULT_SIZES "1000,10000,50000"
/* How long the kernel's one-by-one pass may go on (cover_kernel_pass). */
#define COVER_KPROBE_SECONDS 600
#define COVER_KPROBE_MAX_SECONDS 86400
/* The workload's rounds (bench_cover_rounds). */
#define COVER_WORKLOAD_ROUNDS 5
#define COVER_WORKLOAD_MAX_ROUNDS 51
/*
 * What the bench test's timeout allows the okprobe-cover steps besides
 * the kernel's limit at each size (cover_steps_seconds()): the discovery;
 * at each size okprobe's pass, the kernel's unregistration (53 s for
 * 23,598 blocks in testing.md's run) and the text checks; a workload
 * round's three runs (15-33 s each there), their arming and clears.
 * tools/bench_cover.py has the same numbers for the guest's timeout.
 */
#define COVER_DISCOVERY_SECONDS 600
#define COVER_SIZE_SECONDS 300
#define COVER_ROUND_SECONDS 300

/*
 * A whole number setting of the environment (a kernel argument): fallback
 * when it is not given, -1 when it is not a number from 0 to INT_MAX.
 */
static int cover_setting(const char *name, int fallback)
{
	const char *text = getenv(name);
	char *end;
	long value;

	if (!text || !*text)
		return fallback;
	value = strtol(text, &end, 10);
	return *end || value < 0 || value > INT_MAX ? -1 : (int)value;
}

/* bench_cover_kprobe_seconds (tools/bench --cover-kprobe-limit). */
static int cover_kprobe_seconds(void)
{
	return cover_setting("bench_cover_kprobe_seconds",
			     COVER_KPROBE_SECONDS);
}

/* bench_cover_rounds (tools/bench --cover-rounds). */
static int cover_rounds(void)
{
	return cover_setting("bench_cover_rounds", COVER_WORKLOAD_ROUNDS);
}

/* bench_cover_sizes (tools/bench --cover-sizes), or the default. */
static const char *cover_sizes_text(void)
{
	const char *text = getenv("bench_cover_sizes");

	return text && *text ? text : COVER_DEFAULT_SIZES;
}

/*
 * Parses "1000,10000,50000": 0, or -1 unless it is 1 to COVER_MAX_SIZES
 * sizes, ascending, each 1 to COVER_MAX_SIZE blocks, and nothing else.
 */
static int cover_parse_sizes(const char *text, int *sizes, int *count)
{
	const char *at = text;
	char *end;
	long size;

	for (*count = 0; *count < COVER_MAX_SIZES; at = end + 1) {
		if (*at < '0' || *at > '9')
			return -1;
		size = strtol(at, &end, 10);
		if (size <= 0 || size > COVER_MAX_SIZE ||
		    (*count && size <= sizes[*count - 1]))
			return -1;
		sizes[(*count)++] = size;
		if (!*end)
			return 0;
		if (*end != ',')
			return -1;
	}
	return -1;
}

/*
 * The longest the okprobe-cover steps may take with their settings, for
 * the bench test's timeout (bench_timeout() in okptest.c): the discovery,
 * the kernel's limit and COVER_SIZE_SECONDS at each size, and
 * COVER_ROUND_SECONDS a workload round. A malformed setting counts as
 * none: its step fails on it at its start. tools/bench_cover.py's
 * bench_seconds() is the same sum.
 */
static int cover_steps_seconds(void)
{
	int sizes[COVER_MAX_SIZES], count, limit = cover_kprobe_seconds();
	int rounds = cover_rounds();

	if (cover_parse_sizes(cover_sizes_text(), sizes, &count))
		count = 0;
	if (limit <= 0 || limit > COVER_KPROBE_MAX_SECONDS)
		limit = 0;
	if (rounds <= 0 || rounds > COVER_WORKLOAD_MAX_ROUNDS)
		rounds = 0;
	return COVER_DISCOVERY_SECONDS + count * (limit + COVER_SIZE_SECONDS) +
	       rounds * COVER_ROUND_SECONDS;
}

/* What a read of okprobe/cover says. */
struct cover_tally {
	int functions, blocks, probed, reached;
	int optimized, breakpoint, ftrace, disabled;
	/* Counts mode: the hits of the blocks in each state. */
	unsigned long long optimized_hits, breakpoint_hits, ftrace_hits;
	int refused_functions;		/* "refused 0x..." lines */
	int unexpected_functions;	/* of them, not "no text there" */
	struct errno_tally refused;	/* the blocks okprobe refused */
};

/* A function of the arm/disarm sets, as the discovery found it. */
struct cover_function {
	unsigned long start;
	int blocks;		/* listed in okprobe/cover, refused ones too */
	int refused;		/* blocks okprobe refused */
	int reached;		/* blocks that ran while the discovery watched */
	int first_block;	/* its probed blocks' index in cover_blocks */
};

static char *cover_report;
static struct cover_function *cover_functions;
static int cover_function_count;
/* The probed blocks' addresses, function by function: the kernel's sites. */
static unsigned long *cover_blocks;
static int cover_block_count;

/* "EBUSY:3,EPERM:2" (or "none") of a tally's refused blocks. */
static void cover_errnos_text(const struct cover_tally *tally, char *out,
			      size_t size)
{
	errno_tally_text(&tally->refused, ":", ",", out, size);
}

/* One block line, "+0xOFF hits=N STATE", into the tally. */
static void cover_tally_block(struct cover_tally *tally, const char *line,
			      size_t length, unsigned long start, int record)
{
	unsigned long offset = strtoul(line + 1, NULL, 16);
	const char *hits = memmem(line, length, " hits=", 6);
	const char *state = hits ? memchr(hits + 1, ' ', line + length - hits - 1)
				 : NULL;
	unsigned long long count = hits ? strtoull(hits + 6, NULL, 10) : 0;
	const char *paren;

	tally->blocks++;
	if (record)
		cover_functions[cover_function_count - 1].blocks++;
	if (count) {
		tally->reached++;
		if (record)
			cover_functions[cover_function_count - 1].reached++;
	}
	if (!state)
		return;
	state++;
	if (!strncmp(state, "refused:", 8)) {
		paren = memrchr(state, '(', line + length - state);
		errno_tally_add(&tally->refused, paren ? atoi(paren + 1) : 0,
				1);
		if (record)
			cover_functions[cover_function_count - 1].refused++;
		return;
	}
	tally->probed++;
	if (!strncmp(state, "optimized", 9)) {
		tally->optimized++;
		tally->optimized_hits += count;
	} else if (!strncmp(state, "breakpoint", 10)) {
		tally->breakpoint++;
		tally->breakpoint_hits += count;
	} else if (!strncmp(state, "ftrace", 6)) {
		tally->ftrace++;
		tally->ftrace_hits += count;
	}
	tally->disabled += !strncmp(state, "reached, disabled", 17);
	if (record)
		cover_blocks[cover_block_count++] = start + offset;
}

/*
 * Reads okprobe/cover into cover_report and tallies it; with record, also
 * keeps each function and its probed blocks' addresses, in the report's
 * order (the order the writes named the functions).
 */
static int cover_report_read(struct cover_tally *tally, int record)
{
	const char *line, *end;
	unsigned long start = 0;
	int ret;

	memset(tally, 0, sizeof(*tally));
	if (record)
		cover_function_count = cover_block_count = 0;
	ret = read_file(COVER_FILE, cover_report, COVER_REPORT_SIZE);
	CHECK(ret == 0, "reading %s: %s", COVER_FILE, strerror(-ret));
	CHECK(strlen(cover_report) < COVER_REPORT_SIZE - 1,
	      "%s is over %d bytes", COVER_FILE, COVER_REPORT_SIZE);
	for (line = cover_report; *line; line = *end ? end + 1 : end) {
		size_t length;

		end = strchrnul(line, '\n');
		length = end - line;
		if (!strncmp(line, "function 0x", 11)) {
			start = strtoul(line + 9, NULL, 16);
			tally->functions++;
			if (record &&
			    cover_function_count < COVER_DISCOVERY_FUNCTIONS)
				cover_functions[cover_function_count++] =
					(struct cover_function){
						.start = start,
						.first_block = cover_block_count,
					};
			else if (record)
				return fail("over %d functions in %s",
					    COVER_DISCOVERY_FUNCTIONS,
					    COVER_FILE);
		} else if (!strncmp(line, "+0x", 3) && start) {
			if (record &&
			    cover_block_count == COVER_DISCOVERY_BLOCKS)
				return fail("too many blocks in %s", COVER_FILE);
			cover_tally_block(tally, line, length, start, record);
		} else if (!strncmp(line, "refused 0x", 10)) {
			tally->refused_functions++;
			/* A module's init code, freed after its load. */
			tally->unexpected_functions +=
				!memmem(line, length, "(-2)", 4);
		}
	}
	return 0;
}

/*
 * Fills batch with "COMMAND 0xA 0xB ..." of addresses[first...], as many
 * as a write takes; returns the index after the last one put in.
 */
static int cover_batch(char *batch, const char *command,
		       const unsigned long *addresses, int first, int count)
{
	size_t used = snprintf(batch, COVER_WRITE_MAX, "%s", command);
	int i;

	for (i = first; i < count; i++) {
		char address[24];
		int length = snprintf(address, sizeof(address), " 0x%lx",
				      addresses[i]);

		if (used + length >= COVER_WRITE_MAX)
			break;
		memcpy(batch + used, address, length + 1);
		used += length;
	}
	return i;
}

/* okprobe/list is empty: every probe of okprobe's is gone. */
static int cover_nothing_left(const char *after)
{
	char list[512];
	int ret = read_file(DEBUGFS_DIR "/list", list, sizeof(list));

	CHECK(ret == 0, "reading okprobe/list: %s", strerror(-ret));
	CHECK(!list[0], "okprobe/list after %s: %.300s", after, list);
	return 0;
}

/* okprobe/cover's report, read by both steps. */
static int cover_report_buffer(void)
{
	if (!cover_report)
		cover_report = malloc(COVER_REPORT_SIZE);
	CHECK(cover_report, "no memory");
	return 0;
}
