// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part: okprobe-cover over whole modules (make check). In
 * Debian's userland, tools/okprobe-cover covers every function of the
 * Debian modules that serve the userland's disk (squashfs, virtio_blk,
 * virtio_pci and what they need: thousands of blocks) and of
 * okprobe_test_target, while a Python workload reads the disk, calls the
 * test module, unloads it and loads it again:
 *
 *   - reach mode (the default), then counts (-c) over the same modules;
 *   - the Debian modules' blocks are reached by the reads;
 *   - the test module's blocks the call drove before its unload keep
 *     their hits (the report says "gone"), none of its probes is armed
 *     once it is gone, the tool says its text went away, and the module
 *     loaded again is not covered;
 *   - once the run ends okprobe holds no probe, and every byte of every
 *     covered function of the Debian modules is what it was before the
 *     run (read through /proc/kcore before and after).
 *
 * A part of okptest.c (one program, one test list), included by it.
 */

#include <elf.h>

/* ---- okprobe-cover over whole modules --------------------------------- */

#define COVER_MODULE_REPORT "/tmp/cover-module.txt"
/* The test module's copy, named as make install named it (.ko.xz...). */
#define COVER_MODULE_KO "/tmp/okprobe_test_target"
/* The most modules covered, and bytes of their text kept to compare. */
#define COVER_MODULE_MAX 16
#define COVER_MODULE_TEXT (4 << 20)

/*
 * The workload, in the userland's python3: reads the disk (every file of
 * the given tree, 64 KiB each), calls the test module (its cover
 * parameter: okp_cover_target's first three blocks), then unloads the
 * test module and loads it again (the guest's syscall numbers), and
 * prints what okprobe/list says of the gone module's probes.
 */
#define COVER_MODULE_WORKLOAD \
	"import ctypes, os, platform, sys, time\n" \
	"print('workload started at', int(time.monotonic() * 1000), 'ms')\n" \
	"libc = ctypes.CDLL(None, use_errno=True)\n" \
	"finit, delete = {'x86_64': (313, 176), 'riscv64': (273, 106)}[platform.machine()]\n" \
	USERLAND_READ_TREE_PY("sys.argv[1]") \
	"with open('/sys/module/okprobe_test_target/parameters/cover', 'w') as p:\n" \
	"    p.write('5')\n" \
	"if libc.syscall(delete, b'okprobe_test_target', os.O_NONBLOCK):\n" \
	"    sys.exit('delete_module: ' + os.strerror(ctypes.get_errno()))\n" \
	"lines = [l for l in open('/sys/kernel/debug/okprobe/list') if 'okp_cover_target' in l]\n" \
	"armed = [l for l in lines if '[GONE]' not in l]\n" \
	"print('gone module:', len(lines), 'probes listed,', len(armed), 'not [GONE]', armed[:3])\n" \
	"fd = os.open(sys.argv[2], os.O_RDONLY)\n" \
	"compressed = sys.argv[2].endswith(('.xz', '.zst', '.gz'))\n" \
	"if libc.syscall(finit, fd, b'', 4 if compressed else 0):\n" \
	"    sys.exit('finit_module: ' + os.strerror(ctypes.get_errno()))\n" \
	"print('workload ended at', int(time.monotonic() * 1000), 'ms')\n"

/*
 * A loaded module's text, as read before the run: its functions'
 * addresses, each + a page, in ranges with no gap of COVER_MODULE_GAP
 * between two functions. Debian 13's 6.12 lists one of virtio_blk's 't'
 * symbols 5 MiB from the others (its module memory comes in more than
 * one allocation), so one range from the first to the last would be
 * mostly other text.
 */
#define COVER_MODULE_RANGES 8
#define COVER_MODULE_GAP (64 << 10)
struct cover_module_range {
	unsigned long start, end;
	unsigned char *bytes;
};
struct cover_module_text {
	char name[64];
	struct cover_module_range ranges[COVER_MODULE_RANGES];
	int range_count;
	int snapshot; /* the ranges are read */
};

static struct cover_module_text cover_module_texts[COVER_MODULE_MAX];
static int cover_module_count;

/*
 * Reads size bytes of kernel memory at address through /proc/kcore (its
 * ELF program headers say where each range is in the file): 0 or a
 * failure.
 */
static int kcore_read(unsigned long address, void *buffer, size_t size)
{
	static Elf64_Phdr headers[64];
	static int fd = -1, count;
	Elf64_Ehdr elf;
	int i;

	if (fd < 0) {
		fd = open("/proc/kcore", O_RDONLY | O_CLOEXEC);
		CHECK(fd >= 0, "/proc/kcore: %s", strerror(errno));
		CHECK(pread(fd, &elf, sizeof(elf), 0) == sizeof(elf) &&
		      !memcmp(elf.e_ident, ELFMAG, SELFMAG) &&
		      elf.e_phentsize == sizeof(Elf64_Phdr),
		      "/proc/kcore has no ELF64 header");
		count = elf.e_phnum < ARRAY_SIZE(headers) ? elf.e_phnum
							  : ARRAY_SIZE(headers);
		CHECK(pread(fd, headers, count * sizeof(*headers), elf.e_phoff) ==
			      (ssize_t)(count * sizeof(*headers)),
		      "reading /proc/kcore's program headers");
	}
	for (i = 0; i < count; i++) {
		const Elf64_Phdr *h = &headers[i];

		if (h->p_type != PT_LOAD || address < h->p_vaddr ||
		    address + size > h->p_vaddr + h->p_memsz)
			continue;
		CHECK(pread(fd, buffer, size, h->p_offset + (address - h->p_vaddr)) ==
			      (ssize_t)size,
		      "reading 0x%lx+%zu from /proc/kcore: %s", address, size,
		      strerror(errno));
		return 0;
	}
	return fail("0x%lx+%zu is in none of /proc/kcore's ranges", address,
		    size);
}

static int compare_addresses(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/* text's ranges from its sorted function addresses, then their bytes. */
static int cover_module_ranges(struct cover_module_text *text,
			       const unsigned long *addresses, int count)
{
	struct cover_module_range *range = NULL;
	unsigned long total = 0;
	int i;

	CHECK(count, "%s has no functions in /proc/kallsyms", text->name);
	for (i = 0; i < count; i++) {
		if (!range || addresses[i] > range->end + COVER_MODULE_GAP) {
			CHECK(text->range_count < COVER_MODULE_RANGES,
			      "%s's functions lie in more than %d ranges",
			      text->name, COVER_MODULE_RANGES);
			range = &text->ranges[text->range_count++];
			range->start = addresses[i];
		}
		if (addresses[i] + 4096 > range->end)
			range->end = addresses[i] + 4096;
	}
	for (i = 0; i < text->range_count; i++) {
		range = &text->ranges[i];
		total += range->end - range->start;
		CHECK(total <= COVER_MODULE_TEXT,
		      "%s's functions take more than %d MiB: 0x%lx to 0x%lx",
		      text->name, COVER_MODULE_TEXT >> 20, range->start,
		      range->end);
		range->bytes = malloc(range->end - range->start);
		CHECK(range->bytes, "no memory");
		STEP(kcore_read(range->start, range->bytes,
				range->end - range->start));
	}
	text->snapshot = 1;
	return 0;
}

/* Each Debian module's function addresses from /proc/kallsyms, and text. */
static int cover_module_snapshot(void)
{
	static unsigned long addresses[COVER_MODULE_MAX][8192];
	int counts[COVER_MODULE_MAX] = { 0 };
	FILE *kallsyms = fopen("/proc/kallsyms", "re");
	char line[512], symbol[256], module[128], type;
	unsigned long address;
	int i;

	CHECK(kallsyms, "/proc/kallsyms: %s", strerror(errno));
	while (fgets(line, sizeof(line), kallsyms)) {
		if (sscanf(line, "%lx %c %255s [%127[^]]]", &address, &type,
			   symbol, module) != 4 ||
		    (type != 't' && type != 'T'))
			continue;
		for (i = 0; i < cover_module_count; i++)
			if (!strcmp(module, cover_module_texts[i].name) &&
			    counts[i] < 8192)
				addresses[i][counts[i]++] = address;
	}
	fclose(kallsyms);
	for (i = 0; i < cover_module_count; i++) {
		qsort(addresses[i], counts[i], sizeof(addresses[i][0]),
		      compare_addresses);
		STEP(cover_module_ranges(&cover_module_texts[i], addresses[i],
					 counts[i]));
	}
	return 0;
}

/* The range of text's snapshot that holds [start, start + length), or NULL. */
static const struct cover_module_range *
cover_module_range_of(const struct cover_module_text *text, unsigned long start,
		      unsigned long length)
{
	int i;

	for (i = 0; i < text->range_count; i++)
		if (start >= text->ranges[i].start &&
		    start + length <= text->ranges[i].end)
			return &text->ranges[i];
	return NULL;
}

/*
 * The Debian modules loaded to read the userland's disk, by their files'
 * names (RANK-NAME.ko).
 */
static int cover_module_names(void)
{
	struct dirent **names;
	int count, i;

	count = scandir(USERLAND_MODULES, &names, NULL, alphasort);
	CHECK(count >= 0, USERLAND_MODULES ": %s", strerror(errno));
	for (i = 0; i < count; i++) {
		const char *name = strchr(names[i]->d_name, '-');
		struct cover_module_text *text =
			&cover_module_texts[cover_module_count];
		size_t length;

		if (name && strstr(name, ".ko") &&
		    cover_module_count < COVER_MODULE_MAX) {
			length = strcspn(name + 1, ".");
			snprintf(text->name, sizeof(text->name), "%.*s",
				 (int)length, name + 1);
			if (module_loaded(text->name))
				cover_module_count++;
		}
		free(names[i]);
	}
	free(names);
	CHECK(cover_module_count > 0, "no Debian module in " USERLAND_MODULES);
	return 0;
}

/* Appends text and "; " to buffer, as much as fits. */
static void append_text(char *buffer, size_t size, const char *text)
{
	size_t used = strlen(buffer);

	if (used + 1 < size)
		snprintf(buffer + used, size - used, "%.*s; ",
			 (int)(size - used - 1), text);
}

/* Per module of the report: functions, blocks and reached blocks. */
struct cover_module_tally {
	int functions, blocks, reached, gone, refused;
};

/*
 * Reads the report (okprobe/cover's, kept with -r): the Debian modules'
 * and the test module's tallies, okp_cover_target's block lines, and each
 * Debian module function's bytes compared with the snapshot, now.
 */
static int cover_module_report(const char *report, struct cover_module_tally *tallies,
			       struct cover_module_tally *target, char *target_lines,
			       size_t size, int *compared)
{
	const char *line, *next;
	struct cover_module_tally *tally = NULL;
	int in_target = 0, in_function = 0;

	for (line = report; line && *line; line = next ? next + 1 : NULL) {
		char text[512], symbol[256] = "", module[128] = "";
		unsigned long start, length;
		const char *slash;
		int blocks, reached, i;

		next = strchr(line, '\n');
		snprintf(text, sizeof(text), "%.*s",
			 (int)(next ? next - line : (long)strlen(line)), line);
		if (!strncmp(text, "+0x", 3)) {
			if (in_function)
				append_text(target_lines, size, text);
			if (tally && strstr(text, " gone"))
				tally->gone++;
			if (tally && strstr(text, " refused: "))
				tally->refused++;
			continue;
		}
		if (sscanf(text, "function 0x%lx %255s [%127[^]]] blocks=%d reached=%d",
			   &start, symbol, module, &blocks, &reached) != 5)
			continue;
		tally = NULL;
		in_target = !strcmp(module, "okprobe_test_target");
		in_function = in_target && !strncmp(symbol, "okp_cover_target+", 17);
		if (in_target)
			tally = target;
		for (i = 0; i < cover_module_count; i++)
			if (!strcmp(module, cover_module_texts[i].name))
				tally = &tallies[i];
		CHECK(tally, "a function of no covered module: %s", text);
		tally->functions++;
		tally->blocks += blocks;
		tally->reached += reached;
		slash = strrchr(symbol, '/');
		if (in_target || !slash || sscanf(slash, "/0x%lx", &length) != 1)
			continue;
		for (i = 0; i < cover_module_count; i++) {
			const struct cover_module_text *text = &cover_module_texts[i];
			const struct cover_module_range *range;
			unsigned char now[4096];
			size_t off;

			if (strcmp(module, text->name))
				continue;
			range = cover_module_range_of(text, start, length);
			CHECK(range, "%s at 0x%lx+0x%lx: outside its snapshot",
			      symbol, start, length);
			for (off = 0; off < length; off += sizeof(now)) {
				size_t chunk = length - off < sizeof(now) ? length - off : sizeof(now);

				STEP(kcore_read(start + off, now, chunk));
				CHECK(!memcmp(now, range->bytes + (start + off - range->start), chunk),
				      "%s [%s]: its text is not what it was before okprobe-cover", symbol,
				      module);
			}
			++*compared;
		}
	}
	return 0;
}

/* Copies a file (the test module, into the userland): 0 or a failure. */
static int copy_file(const char *from, const char *to)
{
	static char bytes[1 << 20];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t length;

	CHECK(in >= 0, "%s: %s", from, strerror(errno));
	length = read(in, bytes, sizeof(bytes));
	close(in);
	CHECK(length > 0 && length < (ssize_t)sizeof(bytes), "reading %s", from);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(out >= 0, "%s: %s", to, strerror(errno));
	CHECK(write(out, bytes, length) == length, "writing %s", to);
	close(out);
	return 0;
}

/* One run of okprobe-cover (mode "" or "-c"); the checks above. */
static int cover_module_run(const char *mode, const char *tree)
{
	static char output[1 << 16], report[1 << 20];
	struct cover_module_tally tallies[COVER_MODULE_MAX] = { 0 }, target = { 0 };
	char *argv[8 + 2 * COVER_MODULE_MAX + 8], *at;
	char target_lines[512] = "", shown[256] = "", line[128];
	static char module_copy[PATH_MAX];
	long long started, ended, workload_start = 0, workload_end = 0;
	struct writer_steps steps_before, steps_after;
	char steps[512];
	const char *refused;
	int argc = 0, status, compared = 0, blocks = 0, i;

	argv[argc++] = "/bin/sh";
	argv[argc++] = "/opt/okprobe/okprobe-cover";
	if (*mode)
		argv[argc++] = (char *)mode;
	argv[argc++] = "-s";
	argv[argc++] = "-r";
	argv[argc++] = COVER_MODULE_REPORT;
	for (i = 0; i < cover_module_count; i++) {
		argv[argc++] = "-m";
		argv[argc++] = cover_module_texts[i].name;
	}
	argv[argc++] = "-m";
	argv[argc++] = "okprobe_test_target";
	argv[argc++] = "--";
	argv[argc++] = "/usr/bin/python3";
	argv[argc++] = "-c";
	argv[argc++] = COVER_MODULE_WORKLOAD;
	argv[argc++] = (char *)tree;
	argv[argc++] = module_copy + strlen(USERLAND);
	argv[argc] = NULL;
	snprintf(module_copy, sizeof(module_copy), USERLAND COVER_MODULE_KO "%s",
		 strstr(TARGET_KO, ".ko"));
	STEP(copy_file(TARGET_KO, module_copy));
	read_writer_steps(&steps_before);
	started = now_ms();
	status = userland_run(argv, 900, output, sizeof(output));
	ended = now_ms();
	read_writer_steps(&steps_after);
	writer_steps_delta(&steps_before, &steps_after, steps, sizeof(steps));
	at = strstr(output, "workload started at ");
	if (at)
		workload_start = atoll(at + strlen("workload started at "));
	at = strstr(output, "workload ended at ");
	if (at)
		workload_end = atoll(at + strlen("workload ended at "));
	say("# okprobe-cover %s-m (%d Debian modules) -m okprobe_test_target -- python3 (read %s, unload and load the test module): %d, %lld ms",
	    mode, cover_module_count, tree, status, ended - started);
	for (at = output; at && *at; at = strchr(at, '\n') ? strchr(at, '\n') + 1 : NULL) {
		int length = strcspn(at, "\n");

		if (!memmem(at, length, " blocks reached (", 17) || !strncmp(at, "total: ", 7))
			say("#   %.*s", length, at);
	}
	CHECK(status == 0, "okprobe-cover exited with %d", status);
	CHECK(workload_start && workload_end, "the workload did not run to its end");
	CHECK(!read_file(USERLAND COVER_MODULE_REPORT, report, sizeof(report)),
	      "reading the report");
	STEP(cover_module_report(report, tallies, &target, target_lines,
				 sizeof(target_lines), &compared));
	for (i = 0; i < cover_module_count; i++) {
		say("# %s: %d functions, %d blocks, %d reached", cover_module_texts[i].name,
		    tallies[i].functions, tallies[i].blocks, tallies[i].reached);
		blocks += tallies[i].blocks;
		snprintf(line, sizeof(line), "%.63s %d", cover_module_texts[i].name,
			 tallies[i].reached);
		append_text(shown, sizeof(shown), line);
	}
	say("# %d blocks of %d Debian modules armed in %lld ms (okprobe-cover's start to the workload's), cleared and reported in %lld ms; %d functions' text compared",
	    blocks, cover_module_count, workload_start - started, ended - workload_end,
	    compared);
	say("# okp_cover_target: %s", target_lines);
	say("# okprobe's writer steps over the run (ns): %s", steps);
	CHECK(blocks >= 1000, "only %d blocks in the Debian modules", blocks);
	for (i = 0; i < cover_module_count; i++)
		if (!strcmp(cover_module_texts[i].name, "squashfs") ||
		    !strcmp(cover_module_texts[i].name, "virtio_blk"))
			CHECK(tallies[i].reached > 0, "no block of %s reached: %s",
			      cover_module_texts[i].name, shown);
	CHECK(target.functions > 0 && target.gone == target.blocks - target.refused,
	      "okprobe_test_target: %d functions, %d blocks, %d refused, %d gone (all the others expected)",
	      target.functions, target.blocks, target.refused, target.gone);
	/* Its first block at +0, or past endbr64. */
	CHECK(bench_count(target_lines, " hits=1 gone") == 3 &&
	      bench_count(target_lines, " hits=0 gone") == 2 &&
	      strstr(target_lines, " hits=1 gone") ==
		      target_lines + strcspn(target_lines, " "),
	      "okp_cover_target's blocks after a call with 5 and the unload: %s (1, 1, 1, 0, 0 expected)",
	      target_lines);
	CHECK(strstr(output, "gone module: ") && strstr(output, ", 0 not [GONE]"),
	      "the gone module's probes: %s", strstr(output, "gone module: ") ?: "(not said)");
	CHECK(strstr(output, "text went away during the run"),
	      "okprobe-cover did not say the module's text went away");
	/* Only code freed since (a module's init) may be refused. */
	for (refused = strstr(output, "not covered: "); refused;
	     refused = strstr(refused + 1, "not covered: "))
		CHECK(memmem(refused, strcspn(refused, "\n"),
			     "no function's text is there", 27),
		      "okprobe-cover refused a function: %.*s",
		      (int)strcspn(refused, "\n"), refused);
	CHECK(compared > 100, "only %d functions' text compared", compared);
	CHECK(!read_file(DEBUGFS_DIR "/list", report, sizeof(report)) && !report[0],
	      "okprobe/list after the run: %.300s", report);
	return 0;
}

static int cover_module_steps(void)
{
	STEP(cover_module_names());
	STEP(cover_module_snapshot());
	STEP(cover_module_run("", "/usr/lib/python3"));
	return cover_module_run("-c", "/usr/lib/python3");
}

static int test_cover_module(void)
{
	const struct test_module modules[] = {
		{ TARGET_KO, "", "okprobe_test_target" },
	};

	if (!exists(TARGET_KO))
		return skip("no okprobe_test_target.ko for this architecture");
	STEP(userland_mount());
	return with_modules(modules, ARRAY_SIZE(modules), cover_module_steps);
}

/* ---- okprobe-cover beside the kernel's kprobes ------------------------ */

/*
 * The block offsets of the covered function whose line holds name (from
 * okprobe/cover), its size from the line's symbol, and its lines.
 */
static int cover_blocks_of(const char *name, unsigned long offsets[16],
			   int *count, unsigned long *size, char *lines,
			   size_t lines_size)
{
	static char text[1 << 16];
	const char *line, *next;
	int inside = 0;

	*count = 0;
	lines[0] = '\0';
	CHECK(!read_file(COVER_FILE, text, sizeof(text)), "reading %s", COVER_FILE);
	for (line = text; line && *line; line = next ? next + 1 : NULL) {
		char one[256];

		next = strchr(line, '\n');
		snprintf(one, sizeof(one), "%.*s",
			 (int)(next ? next - line : (long)strlen(line)), line);
		if (!strncmp(one, "function ", 9)) {
			const char *at = strstr(one, name);

			/* Not __pfx_NAME's line. */
			inside = at && at[-1] == ' ' && at[strlen(name)] == '+';
			if (inside)
				CHECK(sscanf(strchr(at, '/'), "/0x%lx", size) == 1,
				      "a function line '%s'", one);
			continue;
		}
		if (!inside || *count == 16 ||
		    sscanf(one, "+0x%lx", &offsets[*count]) != 1)
			continue;
		++*count;
		append_text(lines, lines_size, one);
	}
	CHECK(*count > 1, "%d blocks of %s in %s", *count, name, COVER_FILE);
	return 0;
}

/* Every function of okprobe_test_target, as one "reach ..." write. */
static void cover_target_functions(char *command, size_t size)
{
	FILE *kallsyms = fopen("/proc/kallsyms", "re");
	char line[512], symbol[256];
	unsigned long address;
	char type;

	snprintf(command, size, "reach");
	while (kallsyms && fgets(line, sizeof(line), kallsyms))
		if (sscanf(line, "%lx %c %255s [okprobe_test_target]", &address,
			   &type, symbol) == 3 &&
		    strstr(line, "[okprobe_test_target]") &&
		    (type == 't' || type == 'T') && !strchr("$.", symbol[0]) &&
		    strncmp(symbol, "__pfx_", 6) && strncmp(symbol, "__cfi_", 6) &&
		    strlen(command) + 20 < size) {
			char word[24];

			/*
			 * Once each: an alias (init_module) is the same. Not
			 * the padding before functions (__pfx_, __cfi_).
			 * Not riscv's mapping symbols ($x...) and local
			 * labels (.L0, for auipc's pairs), which its module
			 * kallsyms lists: they are inside functions.
			 */
			snprintf(word, sizeof(word), " 0x%lx", address);
			if (!strstr(command, word))
				strcat(command, word);
		}
	if (kallsyms)
		fclose(kallsyms);
}

/*
 * Reach coverage of the test module beside the kernel's kprobes
 * (kprobe_events, as perf and bpftrace plant them): a function holds one
 * or the other (operating.md, "Next to the kernel's kprobes").
 *   1. A kernel kprobe inside okp_target_cover (the cover parameter's
 *      setter, at its second block, enabled): okprobe-cover refuses each
 *      of that function's blocks with EBUSY (listed with the reason; an
 *      entry through ftrace excepted), logs the kernel kprobe once, and
 *      covers the module's other functions.
 *   2. A kernel kprobe inside okp_target_call, which okprobe-cover now
 *      holds: kprobe_events refuses it (EINVAL).
 *   3. A call with 5: the kernel's kprobe counts one hit, and
 *      okp_cover_target, which okp_target_cover calls, is reached.
 *   4. Both gone: okp_target_cover's text is as before, byte for byte.
 */
static int cover_beside_steps(void)
{
	static char command[4096], lines[1024], kernel[128], log[4096];
	unsigned long setter = module_symbol_address("okp_target_cover");
	unsigned long offsets[16], size, other_offsets[16], other_size;
	unsigned char before[1024], now[1024];
	int count, other_count, ret, waited, kcore, mark;

	CHECK(setter, "okp_target_cover is not in /proc/kallsyms");
	snprintf(command, sizeof(command), "reach 0x%lx", setter);
	CHECK(!write_file(COVER_FILE, command), "%s", command);
	STEP(cover_blocks_of("okp_target_cover", offsets, &count, &size, lines,
			     sizeof(lines)));
	CHECK(!write_file(COVER_FILE, "clear"), "clear");
	CHECK(size <= sizeof(before), "okp_target_cover is 0x%lx bytes", size);
	/* riscv-preempt's kernel, built here, has no CONFIG_PROC_KCORE. */
	kcore = exists("/proc/kcore");
	if (kcore)
		STEP(kcore_read(setter, before, size));
	else
		say("# no /proc/kcore in this kernel: the text is not compared");
	snprintf(kernel, sizeof(kernel), "p:okptest/inside okp_target_cover+0x%lx",
		 offsets[1]);
	ret = write_file(KPROBE_EVENTS, kernel);
	CHECK(!ret, "'%s': %s", kernel, strerror(-ret));
	CHECK(!write_file(TRACING "/events/okptest/inside/enable", "1"),
	      "enabling okptest/inside");
	cover_target_functions(command, sizeof(command));
	mark = kmsg_mark();
	ret = write_file(COVER_FILE, command);
	/* 6.1's kallsyms lists the module's freed init function: ENOENT. */
	CHECK(!ret || ret == -ENOENT, "%.60s...: %s", command, strerror(-ret));
	/* Every block is refused, but the log names the kernel's kprobe once. */
	kmsg_collect(mark, log, sizeof(log));
	CHECK(bench_count(log, "kernel kprobe at okp_target_cover+") == 1,
	      "the kernel log names the kernel kprobe %d times, not once: %.300s",
	      bench_count(log, "kernel kprobe at okp_target_cover+"), log);
	STEP(cover_blocks_of("okp_target_cover", offsets, &count, &size, lines,
			     sizeof(lines)));
	say("# beside a kernel kprobe at okp_target_cover+0x%lx, its blocks: %s",
	    offsets[1], lines);
	CHECK(bench_count(lines, "(-16)") + bench_count(lines, " ftrace") == count &&
	      bench_count(lines, "(-16)") > 0,
	      "a block of okp_target_cover not refused with EBUSY: %s", lines);
	STEP(cover_blocks_of("okp_target_call", other_offsets, &other_count,
			     &other_size, lines, sizeof(lines)));
	CHECK(!strstr(lines, "refused"), "okp_target_call's blocks: %s", lines);
	snprintf(kernel, sizeof(kernel), "p:okptest/refused okp_target_call+0x%lx",
		 other_offsets[1]);
	ret = write_file(KPROBE_EVENTS, kernel);
	CHECK(ret == -EINVAL, "'%s' in a function okprobe-cover holds: %s",
	      kernel, ret ? strerror(-ret) : "taken");
	CHECK(!write_file(TARGET_PARAMS "cover", "5"), "calling the target");
	CHECK(kprobe_profile_hits("okptest/inside") == 1,
	      "the kernel's kprobe counted %ld hits, not 1",
	      kprobe_profile_hits("okptest/inside"));
	STEP(cover_blocks_of("okp_cover_target", other_offsets, &other_count,
			     &other_size, lines, sizeof(lines)));
	say("# okp_cover_target, covered, after the call: %s", lines);
	CHECK(strstr(lines, " hits=1 ") == lines + strcspn(lines, " "),
	      "okp_cover_target's first block not reached: %s", lines);
	CHECK(!write_file(COVER_FILE, "clear"), "clear");
	CHECK(!write_file(TRACING "/events/okptest/inside/enable", "0"),
	      "disabling okptest/inside");
	CHECK(clear_okptest_events() == 0, "clearing kprobe_events");
	if (!kcore)
		return 0;
	/* The kernel takes an optprobe's jump out in its optimizer's time. */
	for (waited = 0; waited < 10000; waited += 100) {
		STEP(kcore_read(setter, now, size));
		if (!memcmp(now, before, size))
			break;
		usleep(100000);
	}
	CHECK(!memcmp(now, before, size),
	      "okp_target_cover's text is not what it was 10 s after both left");
	return 0;
}

static int test_cover_beside(void)
{
	const struct test_module modules[] = {
		{ TARGET_KO, "", "okprobe_test_target" },
	};

	if (!exists(TARGET_KO))
		return skip("no okprobe_test_target.ko for this architecture");
	mount_tracefs_if_needed();
	if (!exists(KPROBE_EVENTS))
		return skip("the kernel has no kprobe_events");
	return with_modules(modules, ARRAY_SIZE(modules), cover_beside_steps);
}
