// SPDX-License-Identifier: GPL-2.0
/*
 * okptest's part: make bench's cover-arm step (issue 41). okprobe/cover's
 * reach mode arms the blocks of core-kernel functions, about 1,000, 10,000
 * and 50,000 of them (writes of "reach 0xSTART ...", up to a page each,
 * each write one batch), and disarms them ("clear", one batch); then the
 * kernel's kprobes are registered one by one at the same blocks' addresses
 * (okprobe_bench.ko's "cover kprobe N SECONDS") and unregistered in one
 * batch ("uncover"). Each pass is timed, okprobe's writer steps are read
 * around its arm and its clear, and every block's text is checked
 * restored after each pass (cover-state over the blocks as sites).
 *
 * The functions: a discovery pass covers the core kernel's functions in a
 * fixed order spread over the whole text and finds their blocks, leaving
 * out those that ran while it watched (cover_discover). A part of
 * okptest.c, included after okptest_bench_cover.c.
 */

/* ---- make bench: okprobe-cover against the kernel's kprobes -------------- */

/*
 * The candidates: every function of the core kernel's text (between
 * _stext and _etext in /proc/kallsyms, from okptest's copy of its core
 * symbols: a read of the file takes seconds under TCG; not a .cold piece,
 * which is part of its function), in address order, each address once.
 */
static int cover_core_functions(unsigned long **functions, int *count)
{
	unsigned long stext = kallsyms_address("_stext");
	unsigned long etext = kallsyms_address("_etext"), last = 0;
	size_t i;

	CHECK(kernel_symbol_count, "no core kernel symbols from /proc/kallsyms");
	*functions = malloc(kernel_symbol_count * sizeof(**functions));
	CHECK(*functions, "no memory");
	*count = 0;
	for (i = 0; i < kernel_symbol_count; i++) {
		const struct kernel_symbol *symbol = &kernel_symbols[i];

		/*
		 * Not the first, at _stext: okprobe_bench.ko keeps the
		 * bytes before each site, and none are mapped there.
		 */
		if ((symbol->type != 't' && symbol->type != 'T') ||
		    symbol->address == last || symbol->address <= stext ||
		    (etext && symbol->address >= etext) ||
		    strstr(symbol->name, ".cold") ||
		    !strncmp(symbol->name, "__pfx_", 6) ||
		    !strncmp(symbol->name, "__cfi_", 6))
			continue;
		(*functions)[(*count)++] = symbol->address;
		last = symbol->address;
	}
	CHECK(stext && *count > 1000, "/proc/kallsyms: %d text functions from _stext (0x%lx)",
	      *count, stext);
	return 0;
}

static int cover_gcd(int a, int b)
{
	return b ? cover_gcd(b, a % b) : a;
}

/*
 * The order the sets take the functions in: a walk over all of them by a
 * fixed stride (about 0.618 of their number, coprime with it), so that
 * every set, 1,000 blocks or 50,000, is spread over the whole kernel text,
 * and the same on every boot of a kernel.
 */
static void cover_spread(const unsigned long *in, unsigned long *out,
			 int count)
{
	int stride = (int)(count * 0.618), i;

	while (cover_gcd(stride, count) != 1)
		stride++;
	for (i = 0; i < count; i++)
		out[i] = in[(long)i * stride % count];
}

/*
 * What the kernel's kprobes run while they register and unregister one:
 * a kprobe on okprobe_bench.ko's target, registered, hit and unregistered,
 * so that the discovery sees that path's functions run.
 */
static int cover_exercise_kprobes(void)
{
	char reply[256];
	int ret = bench_command("arm kprobe", reply, sizeof(reply));

	CHECK(ret == 0, "arm kprobe: %s", strerror(-ret));
	ret = bench_command("run 100", reply, sizeof(reply));
	write_file(BENCH_CONTROL, "disarm");
	CHECK(ret == 0, "run 100: %s", strerror(-ret));
	return 0;
}

/*
 * Keeps the functions of which no block ran while the discovery watched,
 * and their blocks, in order: *cold_blocks, their blocks; returns how
 * many functions ran.
 */
static int cover_keep_cold(int *cold_blocks)
{
	int kept = 0, blocks = 0, i, j;

	*cold_blocks = 0;
	for (i = 0; i < cover_function_count; i++) {
		struct cover_function f = cover_functions[i];
		int probed = f.blocks - f.refused;

		if (f.reached)
			continue;
		for (j = 0; j < probed; j++)
			cover_blocks[blocks + j] = cover_blocks[f.first_block + j];
		f.first_block = blocks;
		blocks += probed;
		*cold_blocks += f.blocks;
		cover_functions[kept++] = f;
	}
	i = cover_function_count - kept;
	cover_function_count = kept;
	cover_block_count = blocks;
	return i;
}

/*
 * okprobe refuses blocks with ENOMEM once its probes' slots run out
 * (65,536 of them, x86 and riscv), and the discovery holds every block it
 * covered, the functions that ran included: at a largest size near
 * COVER_MAX_SIZE it can need more. The sizes are not capped lower for it,
 * since how many blocks the functions that ran hold is known only once
 * the discovery has run (101 functions of 4,515 in testing.md's run):
 * the discovery fails saying so, rather than count blocks okprobe never
 * probed as refused and measure fewer than it says.
 */
static int cover_discovery_fits(const struct cover_tally *tally, int ret,
				int wanted)
{
	int refused = errno_tally_count(&tally->refused, -ENOMEM);

	CHECK(ret != -ENOMEM && !refused,
	      "the discovery for %d blocks ran out of okprobe's probes (ENOMEM: the write %s, %d blocks refused, %d probed, those of functions that ran too): ask for fewer blocks (bench_cover_sizes, tools/bench --cover-sizes)",
	      wanted, ret == -ENOMEM ? "refused" : "taken", refused,
	      tally->probed);
	return 0;
}

/*
 * Finds the functions of the sets and their blocks: okprobe/cover in
 * reach mode over the candidates in their spread order, a write at a
 * time, each followed by the kernel's kprobes registering, hitting and
 * unregistering one (okprobe_bench.ko's target), until the functions of
 * which no block ran hold wanted blocks; then cleared. The sets leave out
 * the functions that ran: the kernel's kprobes stay armed until they are
 * unregistered, and on what its own registration runs, or the guest's
 * timers and interrupts, they made the pass crawl (make bench, 10,000
 * blocks spread over all functions: 296 s, 29 million hits while
 * registering; testing.md). Functions okprobe refuses whole are left out
 * too (the report names them).
 */
static int cover_discover(int wanted)
{
	unsigned long *all = NULL, *ordered;
	struct cover_tally tally = { 0 };
	char batch[COVER_WRITE_MAX], refused[160];
	int count = 0, next = 0, cold = 0, hot, ret, i;

	STEP(cover_core_functions(&all, &count));
	ordered = malloc(count * sizeof(*ordered));
	CHECK(ordered, "no memory");
	cover_spread(all, ordered, count);
	free(all);
	/* What the kernel's pass will run: its optimizer stays off. */
	if (exists(KERNEL_OPTIMIZATION))
		STEP(bench_set_sysctl(KERNEL_OPTIMIZATION,
				      bench_kernel_optimization, "0"));
	while (cold < wanted && next < count) {
		next = cover_batch(batch, "reach", ordered, next, count);
		ret = write_file(COVER_FILE, batch);
		/*
		 * A function refused whole: listed as refused, not covered.
		 * ENOMEM: cover_discovery_fits() says what it means.
		 */
		CHECK(ret == 0 || ret == -ENOENT || ret == -E2BIG ||
		      ret == -EILSEQ || ret == -EIO || ret == -EEXIST ||
		      ret == -ENOMEM,
		      "okprobe/cover refused a write: %s", strerror(-ret));
		STEP(cover_exercise_kprobes());
		STEP(cover_report_read(&tally, 1));
		STEP(cover_discovery_fits(&tally, ret, wanted));
		for (i = cold = 0; i < cover_function_count; i++)
			if (!cover_functions[i].reached)
				cold += cover_functions[i].blocks;
	}
	free(ordered);
	cover_errnos_text(&tally, refused, sizeof(refused));
	hot = cover_keep_cold(&cold);
	say("# cover-discovery: candidates=%d named=%d covered=%d blocks=%d probed=%d refused=%s refused_functions=%d ran=%d kept=%d kept_blocks=%d",
	    count, next, tally.functions, tally.blocks, tally.probed, refused,
	    tally.refused_functions, hot, cover_function_count, cold);
	ret = write_file(COVER_FILE, "clear");
	CHECK(ret == 0, "clear: %s", strerror(-ret));
	return 0;
}

/* Every block okprobe_bench.ko holds as a site has its text as before. */
static int cover_text_restored(const char *after)
{
	int changed;

	return bench_text_restored(after, &changed);
}

/* One size of the arm/disarm table. */
struct cover_pass {
	int size, functions, blocks, refused, probed, writes;
	long long arm_ns, clear_ns;
	struct cover_tally okprobe;
	char arm_steps[512], clear_steps[512];
	int kprobe_sites;		/* tried: all, or those within the limit */
	int kprobe_registered;
	long long kprobe_register_ns, kprobe_unregister_ns;
	long kprobe_hits;
	char kprobe_errors[160];
};

/* okprobe's pass: arm the functions in reach mode, count, clear. */
static int cover_okprobe_pass(struct cover_pass *pass)
{
	struct writer_steps before, armed, cleared;
	char (*batches)[COVER_WRITE_MAX];
	unsigned long *starts = malloc(pass->functions * sizeof(*starts));
	long long start;
	int i, next, ret = 0;

	/* A write takes over 200 addresses (" 0x" and 16 digits each). */
	batches = malloc((pass->functions / 200 + 1) * sizeof(*batches));
	CHECK(starts && batches, "no memory");
	for (i = 0; i < pass->functions; i++)
		starts[i] = cover_functions[i].start;
	pass->writes = 0;
	for (next = 0; next < pass->functions; pass->writes++)
		next = cover_batch(batches[pass->writes], "reach", starts, next,
				   pass->functions);
	free(starts);
	say("# pass: okprobe-cover reach %d blocks: arming", pass->size);
	CHECK(read_writer_steps(&before) == 0, "cannot read %s", WRITER_STEPS);
	start = now_ns();
	for (i = 0; i < pass->writes && !ret; i++)
		ret = write_file(COVER_FILE, batches[i]);
	pass->arm_ns = now_ns() - start;
	free(batches);
	CHECK(ret == 0, "okprobe/cover refused a function it took before: %s",
	      strerror(-ret));
	CHECK(read_writer_steps(&armed) == 0, "cannot read %s", WRITER_STEPS);
	STEP(cover_report_read(&pass->okprobe, 0));
	say("# pass: okprobe-cover reach %d blocks: clearing", pass->size);
	start = now_ns();
	ret = write_file(COVER_FILE, "clear");
	pass->clear_ns = now_ns() - start;
	CHECK(ret == 0, "clear: %s", strerror(-ret));
	CHECK(read_writer_steps(&cleared) == 0, "cannot read %s", WRITER_STEPS);
	writer_steps_delta(&before, &armed, pass->arm_steps,
			   sizeof(pass->arm_steps));
	writer_steps_delta(&armed, &cleared, pass->clear_steps,
			   sizeof(pass->clear_steps));
	/* The same functions and blocks as the discovery found. */
	CHECK(pass->okprobe.functions == pass->functions &&
	      pass->okprobe.blocks == pass->blocks &&
	      pass->okprobe.probed == pass->probed &&
	      !pass->okprobe.refused_functions,
	      "okprobe/cover: %d functions, %d blocks, %d probed, %d functions refused; the discovery had %d, %d, %d, 0",
	      pass->okprobe.functions, pass->okprobe.blocks,
	      pass->okprobe.probed, pass->okprobe.refused_functions,
	      pass->functions, pass->blocks, pass->probed);
	STEP(cover_nothing_left("clear"));
	return cover_text_restored("okprobe-cover's clear");
}

/*
 * The kernel's refusals a pass expects ("-22:3,-84:1"): EINVAL (its
 * blacklist, a jump label or static call site, not kernel text) and
 * EILSEQ (an instruction it cannot decode). Anything else (EBUSY from
 * okprobe's guard, ENOMEM, EEXIST) means the run broke.
 */
static int cover_kernel_refusals_expected(const char *errors)
{
	int error, count;

	while (next_refusal(&errors, &error, &count))
		if (error != -EINVAL && error != -EILSEQ)
			return 0;
	return 1;
}

/*
 * The kernel's pass: its kprobes (optimization off: reach mode's probes
 * are breakpoints too) registered one by one at the probed blocks of the
 * pass's functions, then unregistered in one batch. Each registration
 * decodes its function from the start and looks every instruction up in
 * kprobes' 64-bucket table (can_probe(), get_kprobe()), so it slows as
 * the pass goes (50,000 blocks on 6.1 x86: 42,869 in 57 minutes, then
 * okptest's hour ran out): the pass stops after bench_cover_kprobe_seconds
 * (tools/bench --cover-kprobe-limit, default COVER_KPROBE_SECONDS) and
 * says how far it got.
 */
static int cover_kernel_pass(struct cover_pass *pass, int limit)
{
	int sites, registered, jumps, changed, optimized, ret;
	unsigned long long register_ns, unregister_ns;
	char command[64], reply[256];
	long missed;

	if (exists(KERNEL_OPTIMIZATION))
		STEP(bench_set_sysctl(KERNEL_OPTIMIZATION,
				      bench_kernel_optimization, "0"));
	STEP(cover_nothing_left("okprobe's pass"));
	say("# pass: kernel kprobes at %d blocks: registering", pass->probed);
	snprintf(command, sizeof(command), "cover kprobe %d %d", pass->probed,
		 limit);
	ret = bench_command(command, reply, sizeof(reply));
	CHECK(ret == 0, "%s: %s", command, strerror(-ret));
	pass->kprobe_errors[0] = '\0';
	CHECK(sscanf(reply, "cover kprobe sites=%d registered=%d ns=%llu moved=%*d errors=%159s",
		     &sites, &registered, &register_ns,
		     pass->kprobe_errors) >= 3,
	      "%s replied '%s'", command, reply);
	pass->kprobe_sites = sites;
	pass->kprobe_registered = registered;
	pass->kprobe_register_ns = register_ns;
	STEP(bench_cover_state(&jumps, &changed, &pass->kprobe_hits, &missed,
			       &optimized));
	say("# pass: kernel kprobes at %d blocks: unregistering", pass->probed);
	ret = bench_command("uncover", reply, sizeof(reply));
	CHECK(ret == 0, "uncover: %s", strerror(-ret));
	CHECK(sscanf(reply, "uncover kprobe unregistered=%d ns=%llu", &registered,
		     &unregister_ns) == 2 && registered == pass->kprobe_registered,
	      "uncover replied '%s' (%d registered)", reply,
	      pass->kprobe_registered);
	pass->kprobe_unregister_ns = unregister_ns;
	CHECK(sites > 0 && sites <= pass->probed, "cover kprobe: %d sites of %d",
	      sites, pass->probed);
	CHECK(cover_kernel_refusals_expected(pass->kprobe_errors),
	      "the kernel's kprobes refused blocks with %s", pass->kprobe_errors);
	return cover_text_restored("the kernel's kprobes' unregistration");
}

/* "-22:3,-84:1" -> "EINVAL:3,EILSEQ:1" (or "none"). */
static void cover_kernel_errnos_text(const char *errors, char *out,
				     size_t size)
{
	struct errno_tally tally;

	errno_tally_of(&tally, errors);
	errno_tally_text(&tally, ":", ",", out, size);
}

static void cover_say_pass(const struct cover_pass *pass)
{
	char okprobe_refused[160], kernel_refused[160];

	cover_errnos_text(&pass->okprobe, okprobe_refused,
			  sizeof(okprobe_refused));
	cover_kernel_errnos_text(pass->kprobe_errors, kernel_refused,
				 sizeof(kernel_refused));
	say("# cover-arm: size=%d functions=%d blocks=%d probed=%d writes=%d okprobe_arm_ns=%lld okprobe_clear_ns=%lld okprobe_refused=%s okprobe_reached=%d kprobe_sites=%d kprobe_registered=%d kprobe_register_ns=%lld kprobe_unregister_ns=%lld kprobe_refused=%s kprobe_hits=%ld",
	    pass->size, pass->functions, pass->blocks, pass->probed,
	    pass->writes, pass->arm_ns, pass->clear_ns, okprobe_refused,
	    pass->okprobe.reached, pass->kprobe_sites, pass->kprobe_registered,
	    pass->kprobe_register_ns, pass->kprobe_unregister_ns,
	    kernel_refused, pass->kprobe_hits);
	say("# cover-steps: size=%d blocks=%d phase=arm probed=%d write_ns=%lld %s",
	    pass->size, pass->blocks, pass->probed, pass->arm_ns,
	    pass->arm_steps);
	say("# cover-steps: size=%d blocks=%d phase=clear probed=%d write_ns=%lld %s",
	    pass->size, pass->blocks, pass->probed, pass->clear_ns,
	    pass->clear_steps);
}

/* The sizes asked for (bench_cover_sizes=1000,10000,50000), ascending. */
static int cover_sizes(int *sizes, int *count)
{
	const char *text = cover_sizes_text();

	CHECK(!cover_parse_sizes(text, sizes, count),
	      "bad bench_cover_sizes=%s (1 to %d sizes, ascending, each 1 to %d blocks)",
	      text, COVER_MAX_SIZES, COVER_MAX_SIZE);
	return 0;
}

/* The first functions of the discovery's order that hold size blocks. */
static void cover_pass_of(struct cover_pass *pass, int size)
{
	*pass = (struct cover_pass){ .size = size };
	while (pass->functions < cover_function_count && pass->blocks < size) {
		const struct cover_function *f = &cover_functions[pass->functions++];

		pass->blocks += f->blocks;
		pass->refused += f->refused;
	}
	pass->probed = pass->blocks - pass->refused;
}

/* The discovery's report line of the function that holds address. */
static const char *cover_function_line(unsigned long address)
{
	static char line[256];
	unsigned long start = 0;
	const char *found;
	int i;

	for (i = 0; i < cover_function_count; i++)
		if (cover_functions[i].start <= address &&
		    cover_functions[i].start > start)
			start = cover_functions[i].start;
	snprintf(line, sizeof(line), "function 0x%016lx", start);
	found = strstr(cover_report, line);
	snprintf(line, sizeof(line), "%.*s", found ? (int)strcspn(found, "\n") : 0,
		 found ? found : "");
	return line;
}

/* Hands the probed blocks to okprobe_bench.ko as its sites, in order. */
static int cover_send_sites(int count)
{
	char command[64];
	int i, ret;

	write_file(BENCH_CONTROL, "sites-clear");
	for (i = 0; i < count; i++) {
		snprintf(command, sizeof(command), "site %lx", cover_blocks[i]);
		ret = write_file(BENCH_CONTROL, command);
		CHECK(ret == 0, "%s: %s (in %s)", command, strerror(-ret),
		      cover_function_line(cover_blocks[i]));
	}
	return 0;
}

/*
 * make bench's okprobe-cover arm/disarm table: for each size, okprobe's
 * reach pass, then the kernel's kprobes on the same blocks.
 */
static int cover_arm_steps(const int *sizes, int count, int limit)
{
	struct cover_pass pass;
	unsigned char byte;
	int i;

	/* The crng's first seeding rewrites jump labels: before any snapshot. */
	CHECK(getrandom(&byte, 1, 0) == 1, "getrandom: %s", strerror(errno));
	STEP(cover_nothing_left("the steps before"));
	say("# pass: okprobe-cover: finding the functions of %d blocks",
	    sizes[count - 1]);
	STEP(cover_discover(sizes[count - 1]));
	STEP(cover_nothing_left("the discovery's clear"));
	cover_pass_of(&pass, sizes[count - 1]);
	STEP(cover_send_sites(pass.probed));
	for (i = 0; i < count; i++) {
		cover_pass_of(&pass, sizes[i]);
		if (pass.blocks < sizes[i])
			say("# cover-note: only %d blocks in the %d functions found for %d",
			    pass.blocks, pass.functions, sizes[i]);
		STEP(cover_okprobe_pass(&pass));
		STEP(cover_kernel_pass(&pass, limit));
		cover_say_pass(&pass);
		tcdrain(1);
	}
	return 0;
}

static int bench_cover_arm(void)
{
	int sizes[COVER_MAX_SIZES], count, ret;
	int limit = cover_kprobe_seconds();

	if (!exists(BENCH_CONTROL))
		return skip("okprobe_bench.ko is not loaded");
	if (!exists(COVER_FILE))
		return skip("no okprobe/cover");
	STEP(cover_sizes(sizes, &count));
	/* 0 would be no limit at all: hours at 50,000 blocks. */
	CHECK(limit > 0 && limit <= COVER_KPROBE_MAX_SECONDS,
	      "bad bench_cover_kprobe_seconds=%s (1 to %d)",
	      getenv("bench_cover_kprobe_seconds"), COVER_KPROBE_MAX_SECONDS);
	STEP(cover_report_buffer());
	cover_functions = calloc(COVER_DISCOVERY_FUNCTIONS,
				 sizeof(*cover_functions));
	cover_blocks = calloc(COVER_DISCOVERY_BLOCKS, sizeof(*cover_blocks));
	CHECK(cover_functions && cover_blocks, "no memory");
	ret = cover_arm_steps(sizes, count, limit);
	/* Whatever broke, nothing stays armed for the next steps. */
	write_file(COVER_FILE, "clear");
	write_file(BENCH_CONTROL, "uncover");
	write_file(BENCH_CONTROL, "sites-clear");
	free(cover_functions);
	free(cover_blocks);
	cover_functions = NULL;
	cover_blocks = NULL;
	return ret;
}
