// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part: okprobe-cover (tools/okprobe-cover) in the
 * guests: basic-block coverage of real kernel functions, counted and
 * checked against the function's blocks.
 *
 * A part of okptest.c (one program, one test list), included by it.
 */

/* ---- okprobe-cover ---------------------------------------------------- */

#define COVER_FILE DEBUGFS_DIR "/cover"
/* tools/okprobe-cover, in x86 guests (tools/okprobe_build.py). */
#define COVER_TOOL "/sbin/okprobe-cover"
#define COVER_BLOCKS 5

/*
 * The hits of okp_cover_target's blocks in debugfs okprobe/cover, in
 * offset order (-1: refused), and its function line's blocks= and
 * reached=. 0, or a failure.
 */
static int cover_read(long hits[COVER_BLOCKS], int *blocks, int *reached,
		      char *states, size_t states_size)
{
	static char text[8192];
	char *line, *saveptr = NULL;
	int in_target = 0, n = 0;

	*blocks = *reached = -1;
	states[0] = '\0';
	CHECK(!read_file(COVER_FILE, text, sizeof(text)), "reading %s",
	      COVER_FILE);
	for (line = strtok_r(text, "\n", &saveptr); line;
	     line = strtok_r(NULL, "\n", &saveptr)) {
		char *at;

		if (!strncmp(line, "function ", 9)) {
			in_target = !!strstr(line, " okp_cover_target+0x0/");
			if (in_target)
				CHECK(sscanf(strstr(line, "blocks="),
					     "blocks=%d reached=%d", blocks,
					     reached) == 2,
				      "a function line '%s'", line);
			continue;
		}
		if (!in_target)
			continue;
		CHECK(n < COVER_BLOCKS, "more than %d blocks: '%s'",
		      COVER_BLOCKS, line);
		at = strstr(line, "hits=");
		CHECK(at && sscanf(at, "hits=%ld", &hits[n]) == 1,
		      "a block line '%s'", line);
		if (strstr(line, "refused"))
			hits[n] = -1;
		snprintf(states + strlen(states), states_size - strlen(states),
			 "%s%s", n ? "; " : "", line);
		n++;
	}
	CHECK(n == COVER_BLOCKS, "%d blocks of okp_cover_target listed, not %d: %s",
	      n, COVER_BLOCKS, states);
	return 0;
}

/*
 * Coverage of okprobe_test_target.ko's okp_cover_target: five blocks
 * (entry; a >= 1; a <= 10; big; small, in offset order), driven by
 * calls with 5, 5 and 20: each block counts exactly the calls through it,
 * the small one none, so 4 of 5 are reached. Then clear: the text is the
 * module's again.
 */
/*
 * Runs command with sh (busybox's in x86 guests), its output into output
 * (size bytes, NUL-terminated), each line shown after "# $ shown".
 * Returns its exit status, or -1.
 */
static int run_shown(const char *shown, const char *command, char *output,
		     size_t size)
{
	FILE *pipe = popen(command, "r");
	size_t length = 0;
	char *line, *end;

	output[0] = '\0';
	if (!pipe)
		return -1;
	while (length < size - 1 &&
	       fgets(output + length, size - length, pipe))
		length += strlen(output + length);
	say("# $ %s", shown);
	for (line = output; *line; line = end + 1) {
		end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line) - 1;
		say("#   %.*s", (int)(end - line + (*end != '\n')), line);
		if (!end[1])
			break;
	}
	return pclose(pipe);
}

/*
 * tools/okprobe-cover as a user runs it (x86 guests have busybox's sh):
 * the function by name, a workload of calls with 5 and 20.
 */
static int cover_tool_steps(void)
{
	static char output[4096];
	int status = run_shown("okprobe-cover okp_cover_target -- sh -c 'echo 5 > .../cover && echo 20 > .../cover'",
			       "sh " COVER_TOOL " okp_cover_target -- sh -c 'echo 5 > "
			       TARGET_PARAMS "cover && echo 20 > " TARGET_PARAMS
			       "cover' 2>&1", output, sizeof(output));

	CHECK(status == 0, "okprobe-cover exited with %d", status);
	CHECK(strstr(output, "okp_cover_target: 4 of 5 blocks reached (80.0%)") &&
	      strstr(output, "total: 4 of 5 blocks reached (80.0%)"),
	      "okprobe-cover did not report 4 of 5 blocks reached");
	CHECK(!list_line("okp_cover_target", output, sizeof(output)),
	      "okprobe-cover left its probes: '%s'", output);
	return 0;
}

/*
 * cover_read() of okp_cover_target, each block's hits against expected and
 * reached= against the blocks expected to be reached; what names the step
 * in a failure. The blocks' states are left in states.
 */
static int cover_expect(const char *what, const long expected[COVER_BLOCKS],
			char *states, size_t size)
{
	long hits[COVER_BLOCKS];
	int blocks, reached, wanted = 0, i;

	STEP(cover_read(hits, &blocks, &reached, states, size));
	for (i = 0; i < COVER_BLOCKS; i++) {
		CHECK(hits[i] == expected[i], "%s: block %d has %ld, not %ld: %s",
		      what, i, hits[i], expected[i], states);
		wanted += expected[i] != 0;
	}
	CHECK(blocks == COVER_BLOCKS && reached == wanted,
	      "%s: blocks=%d reached=%d, not %d and %d: %s", what, blocks,
	      reached, COVER_BLOCKS, wanted, states);
	return 0;
}

/* Clears okprobe/cover: the list then has none of okp_cover_target's probes. */
static int cover_clear(void)
{
	char line[512];

	CHECK(!write_file(COVER_FILE, "clear"), "clear");
	CHECK(!list_line("okp_cover_target", line, sizeof(line)),
	      "list still shows '%s' after clear", line);
	return 0;
}

/* Whether a reached block's probe is still armed, by cover_read's states. */
static int cover_reached_armed(const char *states)
{
	return strstr(states, "hits=1 breakpoint") || strstr(states, "hits=1 optimized") ||
	       strstr(states, "hits=1 ftrace");
}

/*
 * Reach mode (echo reach): the same five blocks, each probe one-shot. A
 * call with 5 reaches the first three: hits=1 each, and within a few
 * seconds each is disabled (the list says [DISABLED], the breakpoint is
 * out); a second call with 5 changes nothing; a call with 20 reaches the
 * big block too: 4 of 5, the small one never.
 */
static int cover_reach_steps(unsigned long target)
{
	const long none[COVER_BLOCKS] = { 0 };
	const long after_5[COVER_BLOCKS] = { 1, 1, 1, 0, 0 };
	const long after_20[COVER_BLOCKS] = { 1, 1, 1, 1, 0 };
	char command[64], states[1024], line[512];
	long hits[COVER_BLOCKS];
	int blocks, reached, waited;

	snprintf(command, sizeof(command), "reach 0x%lx", target);
	CHECK(!write_file(COVER_FILE, command), "%s", command);
	STEP(cover_expect("reach, before any call", none, states, sizeof(states)));
	CHECK(!write_file(TARGET_PARAMS "cover", "5"), "calling the target");
	for (waited = 0; waited < 10000; waited += 50) {
		STEP(cover_read(hits, &blocks, &reached, states, sizeof(states)));
		if (hits[0] == 1 && !cover_reached_armed(states))
			break;
		usleep(50000);
	}
	say("# reach, after a call with 5 (%d ms): %s", waited, states);
	STEP(cover_expect("reach, after 5", after_5, states, sizeof(states)));
	CHECK(!cover_reached_armed(states),
	      "a reached block's probe is still armed after 10 s: %s", states);
	CHECK(list_line("okp_cover_target+", line, sizeof(line)) &&
	      strstr(line, "[DISABLED]"), "okprobe/list: '%s'", line);
	CHECK(!write_file(TARGET_PARAMS "cover", "5"), "calling the target");
	CHECK(!write_file(TARGET_PARAMS "cover", "20"), "calling the target");
	STEP(cover_expect("reach, after 5, 5 and 20", after_20, states, sizeof(states)));
	say("# reach, after 5, 5 and 20: %s", states);
	return cover_clear();
}

static int cover_steps(void)
{
	const long none[COVER_BLOCKS] = { 0 };
	const long expected[COVER_BLOCKS] = { 3, 3, 2, 1, 0 };
	unsigned long target = module_symbol_address("okp_cover_target");
	char command[64], states[1024], line[512];
	int ret;

	CHECK(target, "okp_cover_target is not in /proc/kallsyms");
	snprintf(command, sizeof(command), "add 0x%lx", target);
	ret = write_file(COVER_FILE, command);
	CHECK(!ret, "%s: %s", command, strerror(-ret));
	CHECK(write_file(COVER_FILE, command) == -EEXIST,
	      "covering the function twice was not refused with EEXIST");
	CHECK(write_file(COVER_FILE, "add 0x1") == -ENOENT,
	      "an address in no function was not refused with ENOENT");
	CHECK(write_file(COVER_FILE, "bogus") == -EINVAL,
	      "a bad command was not refused with EINVAL");
	STEP(cover_expect("before any call", none, states, sizeof(states)));
	CHECK(list_line("okp_cover_target", line, sizeof(line)) &&
	      strstr(line, "[COUNTER]"), "okprobe/list shows '%s'", line);
	CHECK(!write_file(TARGET_PARAMS "cover", "5"), "calling the target");
	CHECK(!write_file(TARGET_PARAMS "cover", "5"), "calling the target");
	CHECK(!write_file(TARGET_PARAMS "cover", "20"), "calling the target");
	STEP(cover_expect("counted after 5, 5 and 20", expected, states, sizeof(states)));
	say("# okp_cover_target: %s", states);
	STEP(cover_clear());
	STEP(cover_reach_steps(target));
	if (exists(COVER_TOOL))
		STEP(cover_tool_steps());
	/* A last cover left in place goes with okprobe's unload. */
	CHECK(!write_file(COVER_FILE, command), "%s again", command);
	return 0;
}

static int test_cover(void)
{
	const struct test_module modules[] = {
		{ TARGET_KO, "", "okprobe_test_target" },
	};

	if (!exists(TARGET_KO))
		return skip("no okprobe_test_target.ko for this architecture");
	return with_modules(modules, ARRAY_SIZE(modules), cover_steps);
}
