// SPDX-License-Identifier: GPL-2.0
/*
 * okprobe_read: a small libbpf loader for okprobe_read.bpf.c. It loads the
 * program, attaches it to okprobe_events events by their names (each with
 * an attach cookie of its own), runs a command, and reports what the
 * program counted for the command's process at each event: hits, the sum
 * of the event's first field, the probed address and the kernel stack of
 * the last hit.
 *
 *   # echo 'p:okprobe/myread ksys_read count=$arg3:u64' \
 *         >> /sys/kernel/tracing/okprobe_events
 *   # echo 'r:okprobe/myret ksys_read count=$retval:u64' \
 *         >> /sys/kernel/tracing/okprobe_events
 *   # okprobe_read -s 4093 okprobe/myread,okprobe/myret \
 *         dd if=/dev/zero of=/dev/null bs=4093 count=100
 *   okprobe/myread: 100 hits, sum 409300 (pid 321, cookie 0x6f6b)
 *   probed: ksys_read+0x4
 *   stack: ksys_read+0x5 <- do_syscall_64+0x87 <- entry_SYSCALL_64_after_hwframe+0x76
 *   okprobe/myret: 100 hits, sum 409300 (pid 321, cookie 0x6f6c)
 *   probed: ksys_read+0x4
 *   stack: do_syscall_64+0x87 <- entry_SYSCALL_64_after_hwframe+0x76
 *
 * The event's first field must be a u64, right after the probe's own
 * (__probe_ip in a p event, __probe_func and __probe_ret_ip in an r
 * event): the loader checks that in the event's format file, and picks
 * the program compiled for the record's layout (the kernel's common
 * header is 8 bytes, 12 on 6.1's PREEMPT_RT). Built by samples/bpf/Makefile with Debian's clang and libbpf.
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define TRACEFS "/sys/kernel/tracing"
#define STACK_DEPTH 32

/* As okprobe_read.bpf.c keeps them. */
struct okprobe_read_key {
	unsigned long long cookie;
	unsigned int tgid, unused;
};

struct okprobe_read_counts {
	unsigned long long hits, sum, cookie, probe_ip;
	long long stack_bytes;
	unsigned long long stack[STACK_DEPTH];
};

/* At most this many events in one run. */
#define MAX_EVENTS 8
/* Places named for each event: the probed address and three frames. */
#define SHOWN_PLACES 4

static const char usage_text[] =
	"usage: okprobe_read [-o OBJECT] [-s VALUE] [-c COOKIE] GROUP/EVENT[,GROUP/EVENT...] COMMAND [ARG...]\n"
	"  counts the hits of each okprobe_events event GROUP/EVENT in COMMAND's process\n"
	"  (at most 8 events; the n-th attached with cookie COOKIE+n, from 0);\n"
	"  -s counts only hits whose first field is VALUE\n";

static void usage(void)
{
	fputs(usage_text, stderr);
	exit(2);
}

/*
 * The program for the event's record (count_entry_8 ... count_return_16),
 * from its format file: a p or r event, and where its fields start; NULL
 * (said why) if its first field is no u64 right after the probe's.
 */
static const char *event_program(const char *group, const char *event)
{
	static char name[32];
	int first_probe_field = -1;
	char path[PATH_MAX], line[512];
	int is_return = 0, fields = 0, offset = -1, after = -1, ok = 0;
	FILE *format;

	snprintf(path, sizeof(path), TRACEFS "/events/%s/%s/format", group, event);
	format = fopen(path, "re");
	if (!format) {
		fprintf(stderr, "okprobe_read: %s: %s (is the event defined in okprobe_events?)\n",
			path, strerror(errno));
		return NULL;
	}
	while (fgets(line, sizeof(line), format)) {
		char *field = strstr(line, "field:");

		if (!field || strstr(line, "common_"))
			continue;
		if (strstr(field, "__probe_ret_ip"))
			is_return = 1;
		if (strstr(field, " __probe_")) {
			char *at = strstr(line, "offset:");

			after = at ? atoi(at + 7) + 8 : -1;
			if (first_probe_field < 0)
				first_probe_field = at ? atoi(at + 7) : -1;
			continue;
		}
		if (fields++ == 0) {
			char *at = strstr(line, "offset:");

			offset = at ? atoi(at + 7) : -1;
			ok = !strncmp(field, "field:u64 ", 10);
		}
	}
	fclose(format);
	/* Where okprobe_read.bpf.c reads it: right after the probe's fields. */
	if (!ok || offset != after ||
	    (first_probe_field != 8 && first_probe_field != 16)) {
		fprintf(stderr, "okprobe_read: %s/%s: its first field must be a u64 right after the probe's (e.g. count=$arg3:u64)\n",
			group, event);
		return NULL;
	}
	snprintf(name, sizeof(name), "count_%s_%d", is_return ? "return" : "entry",
		 first_probe_field);
	return name;
}

/*
 * Each of count addresses as "name+0xoff" (the text symbol holding it),
 * in names, from one pass over /proc/kallsyms: it lists every symbol of
 * the kernel, which takes a while to read.
 */
static void symbolize(const unsigned long long *addresses, int count,
		      char names[][256])
{
	unsigned long long start, best[MAX_EVENTS * SHOWN_PLACES] = { 0 };
	char line[512], name[200], type;
	FILE *kallsyms = fopen("/proc/kallsyms", "re");
	int i;

	for (i = 0; i < count; i++)
		snprintf(names[i], 256, "0x%llx", addresses[i]);
	if (!kallsyms)
		return;
	while (fgets(line, sizeof(line), kallsyms)) {
		if (sscanf(line, "%llx %c %199s", &start, &type, name) != 3 ||
		    (type != 't' && type != 'T'))
			continue;
		for (i = 0; i < count; i++) {
			if (start > addresses[i] || start < best[i])
				continue;
			best[i] = start;
			snprintf(names[i], 256, "%s+0x%llx", name, addresses[i] - start);
		}
	}
	fclose(kallsyms);
}

/* Runs argv to its end; its pid (its exit status in status), or -1. */
static pid_t run(char **argv, int *status)
{
	pid_t child = fork();

	if (child == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "okprobe_read: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (child < 0 || waitpid(child, status, 0) != child)
		return -1;
	return child;
}

/* What one event's attachment counted, and its places' addresses. */
struct event_report {
	char group[128], *name, program[32];
	struct bpf_link *link;
	unsigned long long cookie;
	struct okprobe_read_counts counts;
	/* The probed address, then the last hit's first frames. */
	unsigned long long places[STACK_DEPTH + 1];
	int frames;
};

/* report's counts for pid, and its places. */
static void read_counts(struct bpf_object *object, struct event_report *report,
			pid_t pid)
{
	struct okprobe_read_key key = { .cookie = report->cookie, .tgid = pid };
	const struct okprobe_read_counts *counts = &report->counts;

	if (pid < 0 || bpf_map_lookup_elem(bpf_map__fd(bpf_object__find_map_by_name(object, "counts")),
					   &key, &report->counts))
		memset(&report->counts, 0, sizeof(report->counts));
	report->places[0] = counts->probe_ip;
	if (!counts->hits || counts->stack_bytes < 0)
		return;
	while (report->frames < SHOWN_PLACES - 1 &&
	       report->frames < counts->stack_bytes / 8 &&
	       counts->stack[report->frames]) {
		report->places[1 + report->frames] = counts->stack[report->frames];
		report->frames++;
	}
}

/* The report, with its places' names (the probed address's first). */
static void print_report(const struct event_report *report, pid_t pid,
			 char names[][256])
{
	const struct okprobe_read_counts *counts = &report->counts;
	int i;

	printf("%s/%s: %llu hits, sum %llu (pid %d, cookie 0x%llx)\n", report->group,
	       report->name, counts->hits, counts->sum, (int)pid, counts->cookie);
	if (!counts->hits)
		return;
	printf("probed: %s\n", names[0]);
	if (counts->stack_bytes < 0) {
		printf("stack: none (%s)\n", strerror((int)-counts->stack_bytes));
		return;
	}
	printf("stack:");
	for (i = 1; i <= report->frames; i++)
		printf("%s%s", i > 1 ? " <- " : " ", names[i]);
	printf("\n");
}

/*
 * Takes the comma-separated events of list into reports, each with its
 * record's program and cookie first + its place; their number, or 0 (said
 * why).
 */
static int parse_events(char *list, unsigned long long first,
			struct event_report *reports)
{
	char *event, *slash, *rest = list;
	const char *program;
	int count = 0;

	while ((event = strsep(&rest, ","))) {
		struct event_report *report = &reports[count];

		if (count == MAX_EVENTS) {
			fprintf(stderr, "okprobe_read: at most %d events\n", MAX_EVENTS);
			return 0;
		}
		snprintf(report->group, sizeof(report->group), "%s", event);
		slash = strchr(report->group, '/');
		if (!slash || !slash[1])
			usage();
		*slash = '\0';
		report->name = slash + 1;
		program = event_program(report->group, report->name);
		if (!program)
			return 0;
		snprintf(report->program, sizeof(report->program), "%s", program);
		report->cookie = first + count++;
	}
	return count;
}

int main(int argc, char **argv)
{
	unsigned long long only = 0, cookie = 0x6f6b; /* "ok" */
	static struct event_report reports[MAX_EVENTS];
	static char names[MAX_EVENTS * SHOWN_PLACES][256];
	unsigned long long places[MAX_EVENTS * SHOWN_PLACES];
	char object_path[PATH_MAX] = "";
	struct bpf_program *program;
	struct bpf_object *object;
	int option, status, events, i, j, count = 0;
	__u32 zero = 0;
	pid_t child;

	while ((option = getopt(argc, argv, "+o:s:c:")) != -1) {
		if (option == 'o')
			snprintf(object_path, sizeof(object_path), "%s", optarg);
		else if (option == 's')
			only = strtoull(optarg, NULL, 0);
		else if (option == 'c')
			cookie = strtoull(optarg, NULL, 0);
		else
			usage();
	}
	if (argc - optind < 2)
		usage();
	if (!object_path[0]) {
		char self[PATH_MAX];
		ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);

		self[length > 0 ? length : 0] = '\0';
		snprintf(object_path, sizeof(object_path), "%s/okprobe_read.bpf.o",
			 dirname(self));
	}
	events = parse_events(argv[optind], cookie, reports);
	if (!events)
		return 1;

	object = bpf_object__open_file(object_path, NULL);
	if (!object) {
		fprintf(stderr, "okprobe_read: opening %s: %s\n", object_path, strerror(errno));
		return 1;
	}
	/* Only the programs for these records' layouts are loaded. */
	bpf_object__for_each_program(program, object) {
		int wanted = 0;

		for (i = 0; i < events; i++)
			wanted |= !strcmp(bpf_program__name(program), reports[i].program);
		bpf_program__set_autoload(program, wanted);
	}
	if (bpf_object__load(object)) {
		fprintf(stderr, "okprobe_read: loading %s: %s\n", object_path, strerror(errno));
		return 1;
	}
	bpf_map_update_elem(bpf_map__fd(bpf_object__find_map_by_name(object, "only_value")),
			    &zero, &only, BPF_ANY);
	for (i = 0; i < events; i++) {
		struct event_report *report = &reports[i];

		LIBBPF_OPTS(bpf_tracepoint_opts, options, .bpf_cookie = report->cookie);
		program = bpf_object__find_program_by_name(object, report->program);
		if (!program) {
			fprintf(stderr, "okprobe_read: %s has no program %s\n", object_path,
				report->program);
			return 1;
		}
		report->link = bpf_program__attach_tracepoint_opts(program, report->group,
								  report->name, &options);
		if (!report->link) {
			fprintf(stderr, "okprobe_read: attaching to %s/%s: %s\n",
				report->group, report->name, strerror(errno));
			return 1;
		}
	}
	child = run(argv + optind + 1, &status);
	/* Every event's places named in one pass over /proc/kallsyms. */
	for (i = 0; i < events; i++) {
		read_counts(object, &reports[i], child);
		for (j = 0; j <= reports[i].frames; j++)
			places[count++] = reports[i].places[j];
	}
	symbolize(places, count, names);
	for (i = 0, count = 0; i < events; i++) {
		print_report(&reports[i], child, names + count);
		count += 1 + reports[i].frames;
		bpf_link__destroy(reports[i].link);
	}
	bpf_object__close(object);
	return child > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
