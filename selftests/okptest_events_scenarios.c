// SPDX-License-Identifier: GPL-2.0
/*
 * okprobe_events against kprobe_events, scenario by scenario: the same
 * steps (lines, enabling, a workload, a module loaded, unloaded and
 * loaded again) run on the kernel's kprobe_events and then on okprobe's
 * okprobe_events, each step's outcome written into a transcript (errno,
 * error_log entry and caret, the file's lines read back, an event's format
 * fields, its hits per line, what it traced, whether the probe is [GONE]).
 * The two transcripts must be the same, line for line.
 *
 * Both runs use the group okpscen: the kernel's events are gone before
 * okprobe's run starts (and okprobe keeps out of a function where a
 * kernel kprobe is), so the names, and error_log's carets, are alike.
 * Included by okptest.c.
 */

#define SCENARIO_GROUP "okpscen"
#define KPROBE_PROFILE TRACING "/kprobe_profile"
#define OKPROBE_PROFILE TRACING "/okprobe_profile"

enum scenario_op {
	SC_LINE,      /* text: a line for the control file */
	SC_READ_BACK, /* the file's lines of the group */
	SC_FORMAT,    /* text: event; its format's fields */
	SC_ENABLE,    /* text: "EVENT 1" or "EVENT 0" */
	SC_FILTER,    /* text: event; only this process's hits */
	SC_WORKLOAD,  /* n reads of /dev/zero, n writes to /dev/null */
	SC_TRACE,     /* text: event; its entries: function and fields */
	SC_PROFILE,   /* text: event; its hits, a number per line */
	SC_LOAD,      /* okprobe_test_target.ko */
	SC_UNLOAD,
	SC_CALL,      /* okp_target_cover n times (the cover parameter's set) */
	SC_GONE,      /* whether a probe of the list is [GONE] */
};

struct scenario_step {
	enum scenario_op op;
	const char *text;
	int n;
};

/* One run's side: its control file, profile and probe list. */
struct scenario_side {
	const char *events, *profile, *list;
};

static const char *const scenario_op_names[] = {
	[SC_LINE] = "line",	      [SC_READ_BACK] = "read back",
	[SC_FORMAT] = "format",	      [SC_ENABLE] = "enable",
	[SC_FILTER] = "filter",	      [SC_WORKLOAD] = "reads and writes",
	[SC_TRACE] = "traced",	      [SC_PROFILE] = "hits per line",
	[SC_LOAD] = "load the target", [SC_UNLOAD] = "unload the target",
	[SC_CALL] = "call the target", [SC_GONE] = "probe list",
};

static char scenario_next_offset[32];

/*
 * The step's text for this run: "%N" is the offset from ksys_read to the
 * next function (a probe there reaches past ksys_read's end).
 */
static void scenario_text(char *to, size_t size, const char *text)
{
	const char *mark = strstr(text, "%N");

	if (!mark) {
		snprintf(to, size, "%s", text);
		return;
	}
	snprintf(to, size, "%.*s%s%s", (int)(mark - text), text,
		 scenario_next_offset, mark + 2);
}

/* The group's lines of a control file, in order. */
static void scenario_read_back(const char *file, char *to, size_t size)
{
	static char text[1 << 16];
	size_t used = 0;
	char *line;

	to[0] = '\0';
	if (read_file(file, text, sizeof(text)))
		return;
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		if (strstr(line, ":" SCENARIO_GROUP "/") && used < size)
			used += snprintf(to + used, size - used, "  %s\n", line);
}

/* The event's fields, after the common ones, from its format file. */
static void scenario_format(const char *event, char *to, size_t size)
{
	static char text[1 << 14];
	char path[160], *line;
	size_t used = 0;

	to[0] = '\0';
	snprintf(path, sizeof(path), TRACING "/events/" SCENARIO_GROUP "/%.64s/format",
		 event);
	if (read_file(path, text, sizeof(text)))
		return;
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		if (strstr(line, "field:") && !strstr(line, "common_") &&
		    used < size)
			used += snprintf(to + used, size - used, "%s\n", line);
}

/* Each line of the event's in the profile: its hits. */
static void scenario_profile(const char *file, const char *event, char *to,
			     size_t size)
{
	static char text[1 << 16];
	char name[128];
	unsigned long hits, missed;
	size_t used = 0;
	char *line;

	to[0] = '\0';
	if (read_file(file, text, sizeof(text)))
		return;
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		if (sscanf(line, "%127s %lu %lu", name, &hits, &missed) == 3 &&
		    !strcmp(name, event) && used < size)
			used += snprintf(to + used, size - used, " %lu", hits);
}

/* The event's entries in the trace: "FUNCTION FIELDS", one a line. */
static void scenario_trace(const char *event, char *to, size_t size)
{
	static char text[1 << 17];
	char needle[96], *line, *at, *plus, *fields;
	size_t used = 0;

	to[0] = '\0';
	snprintf(needle, sizeof(needle), " %.64s: (", event);
	if (read_file(TRACING "/trace", text, sizeof(text)))
		return;
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		at = strstr(line, needle);
		if (!at)
			continue;
		at += strlen(needle);
		plus = at + strcspn(at, "+)");
		fields = strstr(at, ") ");
		if (used < size)
			used += snprintf(to + used, size - used, "  %.*s %s\n",
					 (int)(plus - at), at,
					 fields ? fields + 2 : "");
	}
}

static void scenario_workload(int n)
{
	int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	char byte[2] = { 0 };
	int i;

	for (i = 0; i < n && zero >= 0 && null >= 0; i++) {
		if (read(zero, byte, 1) < 0 || write(null, byte, 2) < 0)
			break;
	}
	if (zero >= 0)
		close(zero);
	if (null >= 0)
		close(null);
}

/* Whether any line of the probe list is [GONE]. */
static int scenario_gone(const char *list)
{
	static char text[1 << 16];

	return !read_file(list, text, sizeof(text)) && strstr(text, "[GONE]");
}

/* The kernel's error_log entry for a refused line, then the outcome. */
static size_t scenario_outcome(char *to, size_t size, int ret)
{
	char error[512];

	if (!ret)
		return snprintf(to, size, "  ok\n");
	last_error(error, sizeof(error));
	return snprintf(to, size, "  %s\n  %s\n", strerror(-ret), error);
}

static void scenario_run(const struct scenario_step *steps, int count,
			 const struct scenario_side *side, char *to,
			 size_t size)
{
	char text[512], path[256], value[4096];
	size_t used = 0;
	int i, ret, on;

	to[0] = '\0';
	clear_file(TRACING "/trace");
	for (i = 0; i < count && used < size; i++) {
		const struct scenario_step *step = &steps[i];

		scenario_text(text, sizeof(text), step->text ? step->text : "");
		value[0] = '\0';
		switch (step->op) {
		case SC_LINE:
			ret = write_file(side->events, text);
			used += snprintf(to + used, size - used, "%s\n", text);
			/* A removal logs nothing, in either. */
			if (text[0] == '-')
				used += snprintf(to + used, size - used, "  %s\n",
						 ret ? strerror(-ret) : "ok");
			else
				used += scenario_outcome(to + used, size - used, ret);
			continue;
		case SC_READ_BACK:
			scenario_read_back(side->events, value, sizeof(value));
			break;
		case SC_FORMAT:
			scenario_format(text, value, sizeof(value));
			break;
		case SC_ENABLE:
			on = text[strlen(text) - 1] == '1';
			snprintf(path, sizeof(path),
				 TRACING "/events/" SCENARIO_GROUP "/%.*s/enable",
				 (int)strcspn(text, " "), text);
			ret = write_file(path, on ? "1" : "0");
			snprintf(value, sizeof(value), "%s", ret ? strerror(-ret) : "ok");
			break;
		case SC_FILTER:
			snprintf(path, sizeof(path),
				 TRACING "/events/" SCENARIO_GROUP "/%.64s/filter", text);
			snprintf(value, sizeof(value), "common_pid == %d", getpid());
			ret = write_file(path, value);
			snprintf(value, sizeof(value), "%s", ret ? strerror(-ret) : "ok");
			break;
		case SC_WORKLOAD:
			scenario_workload(step->n);
			break;
		case SC_TRACE:
			scenario_trace(text, value, sizeof(value));
			break;
		case SC_PROFILE:
			scenario_profile(side->profile, text, value, sizeof(value));
			break;
		case SC_LOAD:
			ret = load_module(TARGET_KO, "");
			snprintf(value, sizeof(value), "%s", ret ? strerror(-ret) : "ok");
			break;
		case SC_UNLOAD:
			ret = unload_module("okprobe_test_target");
			snprintf(value, sizeof(value), "%s", ret ? strerror(-ret) : "ok");
			break;
		case SC_CALL:
			for (on = 0, ret = 0; on < step->n && !ret; on++)
				ret = write_file(TARGET_PARAMS "cover", "1");
			snprintf(value, sizeof(value), "%s", ret ? strerror(-ret) : "ok");
			break;
		case SC_GONE:
			snprintf(value, sizeof(value), "%s",
				 scenario_gone(side->list) ? "[GONE]" : "not gone");
			break;
		}
		used += snprintf(to + used, size - used, "%s %s%s%.0d:\n%s%s",
				 scenario_op_names[step->op], text,
				 step->n ? " " : "", step->n, value,
				 value[0] && value[strlen(value) - 1] != '\n' ? "\n" : "");
	}
}

/* Nothing of the group left in the side's file, the target unloaded. */
static void scenario_clean(const struct scenario_side *side)
{
	write_file(TRACING "/events/" SCENARIO_GROUP "/enable", "0");
	write_file(side->events, "-:" SCENARIO_GROUP "/");
	if (module_loaded("okprobe_test_target"))
		unload_module("okprobe_test_target");
}

static const struct scenario_side scenario_kernel = {
	KPROBE_EVENTS, KPROBE_PROFILE, KPROBES_LIST,
};
static const struct scenario_side scenario_okprobe = {
	OKPROBE_EVENTS, OKPROBE_PROFILE, DEBUGFS_DIR "/list",
};

/* The two transcripts' first lines that differ, with the line before. */
static int scenario_differ(const char *name, const char *kernel,
			   const char *ours)
{
	const char *k = kernel, *o = ours, *previous = kernel;
	int line = 1, differing;

	while (*k && *o) {
		size_t kl = strcspn(k, "\n"), ol = strcspn(o, "\n");

		if (kl != ol || strncmp(k, o, kl))
			break;
		previous = k;
		k += kl + (k[kl] == '\n');
		o += ol + (o[ol] == '\n');
		line++;
	}
	differing = line;
	/* Both whole, for the log: the step that differs may not be the cause. */
	for (k = kernel; *k; k += strcspn(k, "\n") + (k[strcspn(k, "\n")] == '\n'))
		say("# kernel  | %.*s", (int)strcspn(k, "\n"), k);
	for (o = ours; *o; o += strcspn(o, "\n") + (o[strcspn(o, "\n")] == '\n'))
		say("# okprobe | %.*s", (int)strcspn(o, "\n"), o);
	k = kernel;
	o = ours;
	for (line = 1; line < differing; line++) {
		k += strcspn(k, "\n") + (k[strcspn(k, "\n")] == '\n');
		o += strcspn(o, "\n") + (o[strcspn(o, "\n")] == '\n');
	}
	say("# scenario %s, line %d, after '%.*s':", name, line,
	    (int)strcspn(previous, "\n"), previous);
	say("#   kernel:  '%.*s'", (int)strcspn(k, "\n"), k);
	say("#   okprobe: '%.*s'", (int)strcspn(o, "\n"), o);
	return fail("scenario %s: okprobe_events' transcript differs from kprobe_events' at its line %d",
		    name, line);
}

static int scenario_compare(const char *name, const struct scenario_step *steps,
			    int count)
{
	static char kernel[1 << 16], ours[1 << 16];
	int lines = 0;
	const char *at;

	scenario_run(steps, count, &scenario_kernel, kernel, sizeof(kernel));
	scenario_clean(&scenario_kernel);
	scenario_run(steps, count, &scenario_okprobe, ours, sizeof(ours));
	scenario_clean(&scenario_okprobe);
	if (strcmp(kernel, ours))
		return scenario_differ(name, kernel, ours);
	for (at = ours; *at; at++)
		lines += *at == '\n';
	/* okptest_scenario_show=NAME on the command line: its transcript. */
	if (getenv("okptest_scenario_show") &&
	    !strcmp(getenv("okptest_scenario_show"), name))
		for (at = ours; *at; at += strcspn(at, "\n") + (at[strcspn(at, "\n")] == '\n'))
			say("# transcript | %.*s", (int)strcspn(at, "\n"), at);
	say("# scenario %s: %d steps, %d transcript lines alike", name, count,
	    lines);
	return 0;
}

#define SCENARIO(name) scenario_compare(#name, name, ARRAY_SIZE(name))

/*
 * Lines for an event that exists append probes to it, by the kernel's
 * rules and with its refusals; each line fetches its own way into the
 * same fields; one appended while the event is enabled is armed at once;
 * a removal takes lines alone while others are left, the last one only
 * from a disabled event. No two lines share an address: the kernel runs
 * such probes newest first, okprobe in its site's slot order.
 */
static const struct scenario_step scenario_append[] = {
	{ SC_LINE, "p:okpscen/ap ksys_read a=$arg1 n=$arg3:u64", 0 },
	{ SC_LINE, "p:okpscen/ap ksys_write a=$arg1 n=$arg3:u64", 0 },
	{ SC_LINE, "p:okpscen/ap ksys_write a=$arg1 n=$arg3:u64", 0 },
	{ SC_LINE, "p:okpscen/ap ksys_write a=$arg1 n=$arg3:u32", 0 },
	{ SC_LINE, "p:okpscen/ap ksys_write a=$arg1", 0 },
	{ SC_LINE, "p:okpscen/ap ksys_write a=$arg1 n=$arg3:u64 c=$comm", 0 },
	{ SC_LINE, "p:okpscen/ap ksys_write b=$arg1 n=$arg3:u64", 0 },
	{ SC_LINE, "r:okpscen/ap ksys_write a=$retval n=$retval:u64", 0 },
	{ SC_LINE, "p:okpscen/ap vfs_write+0 a=$arg3 n=$arg3:u64", 0 },
	{ SC_LINE, "p:okpscen/ap2 ksys_read", 0 },
	{ SC_LINE, "p:okpscen/ap2 ksys_read", 0 },
	{ SC_READ_BACK, NULL, 0 },
	{ SC_FORMAT, "ap", 0 },
	{ SC_FILTER, "ap", 0 },
	{ SC_ENABLE, "ap 1", 0 },
	{ SC_WORKLOAD, NULL, 3 },
	{ SC_ENABLE, "ap 0", 0 },
	{ SC_TRACE, "ap", 0 },
	{ SC_ENABLE, "ap 1", 0 },
	{ SC_LINE, "p:okpscen/ap vfs_read a=$arg3 n=$arg3:u64", 0 },
	{ SC_WORKLOAD, NULL, 2 },
	{ SC_LINE, "-:okpscen/ap ksys_write", 0 },
	{ SC_READ_BACK, NULL, 0 },
	{ SC_LINE, "-:okpscen/ap vfs_write", 0 },
	{ SC_READ_BACK, NULL, 0 },
	{ SC_LINE, "-:okpscen/ap vfs_read a=$arg3", 0 },
	{ SC_READ_BACK, NULL, 0 },
	{ SC_LINE, "-:okpscen/ap", 0 },
	{ SC_READ_BACK, NULL, 0 },
	{ SC_ENABLE, "ap 0", 0 },
	{ SC_TRACE, "ap", 0 },
	{ SC_LINE, "-:okpscen/ap", 0 },
	{ SC_LINE, "-:okpscen/ap2", 0 },
	{ SC_READ_BACK, NULL, 0 },
};

/* SYM+OFFS past the symbol's end: the next function's instruction. */
static const struct scenario_step scenario_offset[] = {
	{ SC_LINE, "p:okpscen/next ksys_read+%N", 0 },
	{ SC_READ_BACK, NULL, 0 },
	{ SC_LINE, "p:okpscen/far ksys_read+0xffffff00", 0 },
	{ SC_LINE, "-:okpscen/next", 0 },
	{ SC_READ_BACK, NULL, 0 },
};

/* The same as an r line: an entry, of the function that holds it. */
static const struct scenario_step scenario_offset_return[] = {
	{ SC_LINE, "r:okpscen/rnext ksys_read+%N", 0 },
	{ SC_READ_BACK, NULL, 0 },
	{ SC_LINE, "-:okpscen/rnext", 0 },
};

/*
 * The target is the C function that sets the target module's cover
 * parameter: kprobe_events refuses a function without an ftrace call site
 * (okp_gone_target, assembly) where CONFIG_KPROBE_EVENTS_ON_NOTRACE is
 * off, as on Debian's kernels; okprobe_events takes one (operating.md).
 *
 * A MOD:SYM the loaded module lacks is left out: 6.12 and later refuse it
 * with EINVAL, 6.1 and okprobe with ENOENT (operating.md).
 *
 * MOD:SYM of a module not loaded is taken, armed when the module comes,
 * gone while it is away (enabling the event then passes it by) and armed
 * again on each reload, enabled or not as the event is.
 */
static const struct scenario_step scenario_module[] = {
	{ SC_LINE, "p:okpscen/nomod okptest_no_module:some_function", 0 },
	{ SC_LINE, "p:okpscen/mod okprobe_test_target:okp_target_cover", 0 },
	{ SC_READ_BACK, NULL, 0 },
	{ SC_FORMAT, "mod", 0 },
	{ SC_GONE, NULL, 0 },
	{ SC_ENABLE, "mod 1", 0 },
	{ SC_LOAD, NULL, 0 },
	{ SC_CALL, NULL, 5 },
	{ SC_PROFILE, "mod", 0 },
	{ SC_GONE, NULL, 0 },
	{ SC_UNLOAD, NULL, 0 },
	{ SC_GONE, NULL, 0 },
	{ SC_ENABLE, "mod 0", 0 },
	{ SC_ENABLE, "mod 1", 0 },
	{ SC_LOAD, NULL, 0 },
	{ SC_GONE, NULL, 0 },
	{ SC_CALL, NULL, 3 },
	{ SC_PROFILE, "mod", 0 },
	{ SC_ENABLE, "mod 0", 0 },
	{ SC_CALL, NULL, 2 },
	{ SC_PROFILE, "mod", 0 },
	{ SC_UNLOAD, NULL, 0 },
	{ SC_ENABLE, "mod 1", 0 },
	{ SC_LOAD, NULL, 0 },
	{ SC_CALL, NULL, 4 },
	{ SC_PROFILE, "mod", 0 },
	{ SC_ENABLE, "mod 0", 0 },
	{ SC_UNLOAD, NULL, 0 },
	{ SC_LINE, "-:okpscen/mod", 0 },
	{ SC_LINE, "-:okpscen/nomod", 0 },
	{ SC_READ_BACK, NULL, 0 },
};

/* The same for a return probe (rethook's kernels). */
static const struct scenario_step scenario_module_return[] = {
	{ SC_LINE, "r:okpscen/modret okprobe_test_target:okp_target_cover ret=$retval:s64", 0 },
	{ SC_READ_BACK, NULL, 0 },
	{ SC_ENABLE, "modret 1", 0 },
	{ SC_LOAD, NULL, 0 },
	{ SC_CALL, NULL, 5 },
	{ SC_PROFILE, "modret", 0 },
	{ SC_UNLOAD, NULL, 0 },
	{ SC_ENABLE, "modret 0", 0 },
	{ SC_ENABLE, "modret 1", 0 },
	{ SC_LOAD, NULL, 0 },
	{ SC_CALL, NULL, 2 },
	{ SC_PROFILE, "modret", 0 },
	{ SC_ENABLE, "modret 0", 0 },
	{ SC_UNLOAD, NULL, 0 },
	{ SC_LINE, "-:okpscen/modret", 0 },
	{ SC_READ_BACK, NULL, 0 },
};

/*
 * A module's function by its plain name: where the kernel reads BTF, its
 * arguments by name come from the module's BTF (the kernel's
 * bpf_find_btf_id() looks in each module's after vmlinux's; okprobe reads
 * /sys/kernel/btf/MODULE), value the string the cover parameter was set
 * to and kp->name the parameter's name. Elsewhere (6.1) both refuse the
 * names alike.
 */
static const struct scenario_step scenario_module_btf[] = {
	{ SC_LOAD, NULL, 0 },
	{ SC_LINE, "p:okpscen/modbtf okp_target_cover value:string kp->name:string", 0 },
	{ SC_LINE, "p:okpscen/modbad okp_target_cover nosuch", 0 },
	{ SC_READ_BACK, NULL, 0 },
	{ SC_FORMAT, "modbtf", 0 },
	{ SC_FILTER, "modbtf", 0 },
	{ SC_ENABLE, "modbtf 1", 0 },
	{ SC_CALL, NULL, 3 },
	{ SC_ENABLE, "modbtf 0", 0 },
	{ SC_TRACE, "modbtf", 0 },
	{ SC_PROFILE, "modbtf", 0 },
	{ SC_LINE, "-:okpscen/modbtf", 0 },
	{ SC_UNLOAD, NULL, 0 },
	{ SC_READ_BACK, NULL, 0 },
};

/*
 * 7.x's typecasts, $current and this_cpu_*(), where the kernel's README
 * lists them (elsewhere both refuse each line alike): a member through a
 * typecast and $current's comm recorded on the same reads, a per-cpu
 * pointer and value read back and laid out (not traced: they differ by
 * the CPU a read ran on), a struct no BTF has refused.
 */
static const struct scenario_step scenario_typecasts[] = {
	{ SC_LINE, "p:okpscen/tc vfs_read m=(file)file->f_mode:x32 c=$current->comm:string", 0 },
	{ SC_LINE, "p:okpscen/tccpu vfs_read r=this_cpu_ptr(@runqueues) n=this_cpu_read(+0(@runqueues)):u32", 0 },
	{ SC_LINE, "p:okpscen/tcbad vfs_read x=(okptest_no_struct)file->f_mode", 0 },
	{ SC_READ_BACK, NULL, 0 },
	{ SC_FORMAT, "tc", 0 },
	{ SC_FORMAT, "tccpu", 0 },
	{ SC_FILTER, "tc", 0 },
	{ SC_ENABLE, "tc 1", 0 },
	{ SC_WORKLOAD, NULL, 3 },
	{ SC_ENABLE, "tc 0", 0 },
	{ SC_TRACE, "tc", 0 },
	{ SC_LINE, "-:okpscen/tc", 0 },
	{ SC_LINE, "-:okpscen/tccpu", 0 },
	{ SC_READ_BACK, NULL, 0 },
};

/*
 * The offset from ksys_read to a function after it that the kernel's
 * kprobe_events probes at +0 (riscv 6.1 refuses an ftrace call site
 * there, or a function without one): the nearest of the next 32.
 */
static int scenario_find_next_function(void)
{
	unsigned long from = kallsyms_address("ksys_read"), after = from, next;
	const char *name = NULL;
	char line[320];
	size_t i;
	int tried;

	for (tried = 0; from && tried < 32; tried++, after = next) {
		next = 0;
		for (i = 0; i < kernel_symbol_count; i++) {
			const struct kernel_symbol *symbol = &kernel_symbols[i];

			if (symbol->address <= after ||
			    (next && symbol->address >= next) ||
			    (symbol->type != 't' && symbol->type != 'T') ||
			    !strncmp(symbol->name, "__pfx_", 6) ||
			    !strncmp(symbol->name, "__cfi_", 6))
				continue;
			next = symbol->address;
			name = symbol->name;
		}
		if (!next)
			break;
		snprintf(line, sizeof(line), "p:" SCENARIO_GROUP "/probe %.256s",
			 name);
		if (write_file(KPROBE_EVENTS, line))
			continue;
		write_file(KPROBE_EVENTS, "-:" SCENARIO_GROUP "/probe");
		snprintf(scenario_next_offset, sizeof(scenario_next_offset),
			 "%lu", next - from);
		say("# ksys_read+%s is %s", scenario_next_offset, name);
		return 0;
	}
	return -1;
}

static int probe_events_scenarios_steps(void)
{
	STEP(load_okprobe(default_params));
	if (!exists(KPROBE_EVENTS) || !exists(OKPROBE_EVENTS) ||
	    !exists(KPROBES_LIST)) {
		STEP(unload_okprobe());
		return skip("the kernel has no kprobe_events, or okprobe no okprobe_events");
	}
	scenario_clean(&scenario_kernel);
	scenario_clean(&scenario_okprobe);
	/*
	 * A kernel that takes no kprobe at a traced function's +0 (riscv
	 * 6.12: no kprobes on ftrace) has no transcript to compare with:
	 * okprobe's probe goes through ftrace or past the call site there.
	 */
	if (write_file(KPROBE_EVENTS, "p:" SCENARIO_GROUP "/probe ksys_read")) {
		STEP(unload_okprobe());
		return skip("the kernel takes no kprobe at ksys_read+0 (no kprobes on ftrace)");
	}
	write_file(KPROBE_EVENTS, "-:" SCENARIO_GROUP "/probe");
	STEP(SCENARIO(scenario_append));
	CHECK(!scenario_find_next_function(), "no function after ksys_read");
	STEP(SCENARIO(scenario_offset));
	STEP(SCENARIO(scenario_typecasts));
	/* Without rethook (riscv 6.1) okprobe has no return probes. */
	if (kallsyms_address("rethook_hook"))
		STEP(SCENARIO(scenario_offset_return));
	if (exists(TARGET_KO)) {
		STEP(SCENARIO(scenario_module));
		if (kallsyms_address("rethook_hook"))
			STEP(SCENARIO(scenario_module_return));
		STEP(SCENARIO(scenario_module_btf));
	}
	return unload_okprobe();
}

static int test_probe_events_scenarios(void)
{
	int ret;

	mount_tracefs_if_needed();
	ret = probe_events_scenarios_steps();
	if (ret && ret != RESULT_SKIP) {
		scenario_clean(&scenario_kernel);
		scenario_clean(&scenario_okprobe);
		unload_module("okprobe");
	}
	return ret;
}
