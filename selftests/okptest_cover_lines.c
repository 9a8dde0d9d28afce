// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part file for coverage by source line: tools/okprobe-cover
 * -l in Debian's userland, whose tools/okprobe-cover-lcov makes
 * okprobe/cover's report of okprobe_test_target's okp_cover_target an
 * lcov tracefile (with the userland's python3, pyelftools and binutils'
 * addr2line) from the module's own DWARF, checked line by line against
 * the function's source, whose lines tools/okprobe_build.py gives okptest
 * (OKPTEST_COVER_LINES).
 *
 * A part of okptest.c (one program, one test list), included by it.
 */

#ifndef OKPTEST_COVER_LINES
#define OKPTEST_COVER_LINES "0,0,0,0"
#endif

/* The lcov tracefile's DA: lines of the record whose SF: ends in suffix. */
static int lcov_lines(const char *info, const char *suffix, long *hits,
		      int max_line, char *function_line, size_t size)
{
	const char *record = info, *end;
	int found = 0;

	for (; (record = strstr(record, "SF:")); record = end) {
		const char *name_end = strchr(record, '\n');
		const char *line;

		end = strstr(record, "end_of_record");
		if (!name_end || !end)
			break;
		if ((size_t)(name_end - record) < strlen(suffix) ||
		    strncmp(name_end - strlen(suffix), suffix, strlen(suffix)))
			continue;
		found = 1;
		for (line = name_end; line && line < end; line = strchr(line + 1, '\n')) {
			int number;
			long count;

			if (sscanf(line + 1, "DA:%d,%ld", &number, &count) == 2 &&
			    number > 0 && number <= max_line)
				hits[number] = count;
			if (!strncmp(line + 1, "FNDA:", 5))
				snprintf(function_line, size, "%.*s",
					 (int)strcspn(line + 1, "\n"), line + 1);
		}
	}
	return found;
}

/*
 * tools/okprobe-cover as a user runs it, in the userland: okp_cover_target
 * covered (-c: counted) while a shell calls it with 5, 5 and 20, its lines written to an
 * lcov tracefile (-l) from the module's DWARF (-d: the module as built,
 * which the initramfs has beside the tools). Its lines from the
 * first instruction to the big block's label run 2 or 3 times (the first
 * 3), the big block's once, the small block's never; every one of them is
 * in the tracefile, the function's FNDA: says 3, and the report (-r) has
 * the function's five blocks.
 */
static int cover_lines_steps(void)
{
	static char report[8192], info[16384], output[4096];
	char *const argv[] = {
		"/bin/sh", "/opt/okprobe/okprobe-cover", "-c", "-l", "/tmp/cover.info",
		"-d", "/opt/okprobe/dwarf", "-r", "/tmp/cover.txt", "okp_cover_target",
		"--", "/bin/sh", "-c",
		"for a in 5 5 20; do echo $a > " TARGET_PARAMS "cover; done",
		NULL
	};
	long hits[256];
	char function_line[128] = "", shown[256] = "";
	int first, big, small, end, line, status;

	CHECK(sscanf(OKPTEST_COVER_LINES, "%d,%d,%d,%d", &first, &big, &small,
		     &end) == 4 && first > 0 && first < big && big < small &&
	      small < end && end < (int)ARRAY_SIZE(hits),
	      "OKPTEST_COVER_LINES is '%s'", OKPTEST_COVER_LINES);
	/* The module as built: the one loaded may be make install's, stripped. */
	CHECK(exists(USERLAND_TOOLS "/dwarf/okprobe_test_target.ko"),
	      "no " USERLAND_TOOLS "/dwarf/okprobe_test_target.ko in the initramfs");
	status = userland_run(argv, 120, output, sizeof(output));
	say("# $ okprobe-cover -c -l /tmp/cover.info -d /opt/okprobe/dwarf -r /tmp/cover.txt okp_cover_target -- sh -c 'for a in 5 5 20; ...': %d", status);
	say("%s", output);
	CHECK(status == 0, "okprobe-cover exited with %d", status);
	CHECK(strstr(output, "okp_cover_target: 4 of 5 blocks reached (80.0%)"),
	      "okprobe-cover did not report 4 of 5 blocks reached");
	CHECK(!read_file(USERLAND "/tmp/cover.txt", report, sizeof(report)) &&
	      strstr(report, " okp_cover_target+0x0/") &&
	      strstr(report, "blocks=5 reached=4"),
	      "the report -r kept: '%s'", report);
	CHECK(!read_file(USERLAND "/tmp/cover.info", info, sizeof(info)),
	      "reading the tracefile");
	for (line = 0; line < (int)ARRAY_SIZE(hits); line++)
		hits[line] = -1;
	CHECK(lcov_lines(info, "fn.S", hits, end, function_line,
			 sizeof(function_line)),
	      "no record of okp_cover_target's source in the tracefile: %s", info);
	for (line = first; line < end; line++)
		snprintf(shown + strlen(shown), sizeof(shown) - strlen(shown),
			 "%s%d:%ld", line > first ? " " : "", line, hits[line]);
	say("# okp_cover_target's lines (line:hits): %s; %s", shown, function_line);
	CHECK(hits[first] == 3, "its first line ran %ld times, not 3: %s",
	      hits[first], shown);
	for (line = first; line < big; line++)
		CHECK(hits[line] == 2 || hits[line] == 3,
		      "line %d ran %ld times, not 2 or 3: %s", line, hits[line],
		      shown);
	for (line = big; line < small; line++)
		CHECK(hits[line] == 1, "line %d (big) ran %ld times, not once: %s",
		      line, hits[line], shown);
	for (line = small; line < end; line++)
		CHECK(hits[line] == 0, "line %d (small) ran %ld times, not never: %s",
		      line, hits[line], shown);
	CHECK(!strcmp(function_line, "FNDA:3,okp_cover_target"),
	      "the function's record is '%s'", function_line);
	CHECK(!list_line("okp_cover_target", output, sizeof(output)),
	      "okprobe-cover left its probes: '%s'", output);
	return 0;
}

static int test_cover_lines(void)
{
	const struct test_module modules[] = {
		{ TARGET_KO, "", "okprobe_test_target" },
	};

	if (!exists(TARGET_KO))
		return skip("no okprobe_test_target.ko for this architecture");
	STEP(userland_mount());
	return with_modules(modules, ARRAY_SIZE(modules), cover_lines_steps);
}
