// SPDX-License-Identifier: GPL-2.0
/*
 * okptest: the userspace side of okprobe's selftests, on the kernel's
 * kselftest harness (kselftest_harness.h, from Debian's linux-source; see
 * tools/fetch-kselftest). Each suite is a harness fixture; each test runs
 * in its own child with a timeout and reports KTAP.
 *
 * Two ways to run:
 *  - as PID 1 of a test guest's initramfs: it mounts what the tests need,
 *    runs the suite named by the kernel command line parameter
 *    okptest=SUITE with the modules under /lib/okprobe, and powers the
 *    guest off. The host side (tools/guest_run.py) parses the KTAP and
 *    also fails the run on any kernel warning in the console.
 *    okptest=machine runs the okprobe suite the second way, as a child,
 *    against modules installed by "make install" (okptest=machine-PART
 *    one of its parts, e.g. machine-essentials).
 *  - on a real machine, as root ("sudo make -C selftests run_tests"):
 *    against the okprobe.ko "make install" put under
 *    /lib/modules/$(uname -r)/extra (or $OKPROBE_MODULES), on the running
 *    kernel; it never reboots, mounts only what is not mounted, touches
 *    only its own kprobe events, and ends with a check of the kernel log.
 *
 * Statically linked for each guest architecture; no shell is needed (the
 * riscv64 guest has none).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/reboot.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(array) (sizeof(array) / sizeof((array)[0]))
#endif

/*
 * Where the modules are: a test guest's initramfs has them flat under
 * /lib/okprobe; "make install" puts them under
 * /lib/modules/KREL/extra/{,samples/,selftests/modules/}. Found by name
 * under the root at start-up.
 */
static char module_root[PATH_MAX / 2] = "/lib/okprobe";
static struct {
	const char *name;
	char path[PATH_MAX];
} module_files[] = {
	{ .name = "okprobe.ko" },	      { .name = "okprobe_sample.ko" },
	{ .name = "okprobe_test_warn.ko" },   { .name = "okprobe_selftest.ko" },
	{ .name = "okprobe_test_target.ko" }, { .name = "okprobe_test_gone.ko" },
	{ .name = "okprobe_bench.ko" },
};

static const char *module_path(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(module_files); i++)
		if (!strcmp(module_files[i].name, name))
			break;
	if (i == ARRAY_SIZE(module_files))
		abort(); /* a name missing from the table above */
	if (!module_files[i].path[0])
		snprintf(module_files[i].path, sizeof(module_files[i].path),
			 "%s/%s", module_root, name);
	return module_files[i].path;
}

/*
 * kbuild's modules_install compresses what it installs where the kernel
 * says so (Debian 13: CONFIG_MODULE_COMPRESS_XZ, okprobe.ko.xz).
 */
static const char *const module_compressions[] = { ".xz", ".zst", ".gz" };

/* file is name, or name as modules_install compressed it. */
static int module_file_named(const char *file, const char *name)
{
	size_t length = strlen(name);
	size_t i;

	if (strncmp(file, name, length))
		return 0;
	if (!file[length])
		return 1;
	for (i = 0; i < ARRAY_SIZE(module_compressions); i++)
		if (!strcmp(file + length, module_compressions[i]))
			return 1;
	return 0;
}

static int note_module_file(const char *path, const struct stat *st,
			    int type, struct FTW *ftw)
{
	size_t i;

	(void)st;
	if (type != FTW_F)
		return 0;
	for (i = 0; i < ARRAY_SIZE(module_files); i++)
		if (module_file_named(path + ftw->base, module_files[i].name))
			snprintf(module_files[i].path,
				 sizeof(module_files[i].path), "%s", path);
	return 0;
}

static void find_modules(void)
{
	nftw(module_root, note_module_file, 16, FTW_PHYS);
}

#define OKPROBE_KO module_path("okprobe.ko")
#define SAMPLE_KO module_path("okprobe_sample.ko")
#define WARN_KO module_path("okprobe_test_warn.ko")
#define SELFTEST_KO module_path("okprobe_selftest.ko")
#define TARGET_KO module_path("okprobe_test_target.ko")
#define GONE_KO module_path("okprobe_test_gone.ko")
#define SYSCTL_OPTIMIZATION "/proc/sys/debug/kprobes_optimization"
#define DEBUGFS_DIR "/sys/kernel/debug/okprobe"
#ifdef __x86_64__
#define IS_X86 1
#else
#define IS_X86 0
#endif

/* Running as a guest's PID 1 (else on a machine, as a user would). */
static int guest_init;

/* ---- Output -------------------------------------------------------------- */

/* One write() per line, so kernel messages cannot split a TAP line. */
static void say(const char *format, ...)
{
	char line[1024];
	va_list args;
	int length;

	va_start(args, format);
	length = vsnprintf(line, sizeof(line) - 1, format, args);
	va_end(args);
	if (length < 0)
		return;
	if (length > (int)sizeof(line) - 2)
		length = sizeof(line) - 2;
	line[length++] = '\n';
	if (write(1, line, length) < 0)
		_exit(1);
}

/* The reason the current test failed, reported as a TAP diagnostic. */
static char why[512];

static int fail(const char *format, ...)
{
	va_list args;

	va_start(args, format);
	vsnprintf(why, sizeof(why), format, args);
	va_end(args);
	return 1;
}

#define RESULT_SKIP 2
static int skip(const char *reason)
{
	snprintf(why, sizeof(why), "%s", reason);
	return RESULT_SKIP;
}

/*
 * A test's own sub-results (the in-kernel suite's), printed as a KTAP
 * subtest: indented, with their own numbering and plan, before the
 * harness's line for the test itself. failed[i]: 0, 1, or RESULT_SKIP
 * ("ok N name # SKIP detail").
 */
static void report_subtests(const int *failed, const char *const *names,
			    const char *const *details, int count)
{
	int i;

	say("    KTAP version 1");
	say("    1..%d", count);
	for (i = 0; i < count; i++) {
		if (failed[i] == RESULT_SKIP) {
			say("    ok %d %s # SKIP %s", i + 1, names[i],
			    details[i]);
			continue;
		}
		if (failed[i] && details[i][0])
			say("    # %s", details[i]);
		say("    %sok %d %s", failed[i] ? "not " : "", i + 1, names[i]);
	}
}

/* Evaluates a check; on failure, records where and returns from the test. */
#define CHECK(condition, ...)                                                  \
	do {                                                                   \
		if (!(condition))                                              \
			return fail(__VA_ARGS__);                              \
	} while (0)

/* Runs a sub-step returning 0 or a failure (already recorded in why). */
#define STEP(call)                                                             \
	do {                                                                   \
		int step_result = (call);                                      \
		if (step_result)                                               \
			return step_result;                                    \
	} while (0)

/* Whether name is one of list's count names. */
static int in_list(const char *name, const char *const *list, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++)
		if (!strcmp(name, list[i]))
			return 1;
	return 0;
}

/* ---- Files --------------------------------------------------------------- */

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Reads a whole small file into buffer (NUL-terminated); -errno on error. */
static int read_file(const char *path, char *buffer, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t used = 0;
	ssize_t got;

	if (fd < 0)
		return -errno;
	while (used + 1 < size &&
	       (got = read(fd, buffer + used, size - 1 - used)) > 0)
		used += got;
	buffer[used] = '\0';
	close(fd);
	return 0;
}

/* Writes text to path in one write(); 0 or -errno. */
static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Empties a tracefs list (set_ftrace_filter, set_ftrace_pid): O_TRUNC. */
static int clear_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/*
 * perf_event_open() of the trace event id as a tracepoint on okptest's
 * own task, disabled: counting, or sampling every hit with its raw
 * record. The fd, or -1 (errno).
 */
static int perf_open(long id, int sampling)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = id;
	attr.disabled = 1;
	if (sampling) {
		attr.sample_period = 1;
		attr.sample_type = PERF_SAMPLE_RAW;
		attr.wakeup_events = 1;
	}
	return syscall(SYS_perf_event_open, &attr, 0, -1, -1,
		       PERF_FLAG_FD_CLOEXEC);
}

/* Debian's userland disk (okptest_userland.c), mounted on USERLAND. */
#define USERLAND "/debian"
#define USERLAND_DISK "/dev/vda"
#define USERLAND_MODULES "/lib/userland"
#define USERLAND_TOOLS "/lib/okprobe-tools"
#define USERLAND_OUT "/tmp/okptest-userland.out"
#define BPFTRACE "/usr/bin/bpftrace"

#define TRACING "/sys/kernel/tracing"
#define OKPROBE_EVENTS TRACING "/okprobe_events"

/* tracefs at its place, unless it is there (a machine's usually is). */
static void mount_tracefs_if_needed(void)
{
	if (!exists(TRACING "/README"))
		mount("tracefs", TRACING, "tracefs", 0, NULL);
}

/* ---- Kernel log ---------------------------------------------------------- */

/* A position in /dev/kmsg; later reads see only newer records. */
static int kmsg_mark(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/*
 * The message of the next record after mark's position (in record, its
 * newline kept), or NULL when there is none.
 */
static char *kmsg_next(int mark, char *record, size_t size)
{
	ssize_t got;
	char *message;

	for (;;) {
		got = read(mark, record, size - 1);
		if (got < 0 && errno == EPIPE)
			continue; /* overwritten records: keep reading */
		if (got <= 0)
			return NULL;
		record[got] = '\0';
		/* "prio,seq,time,flags;message\n": keep the message. */
		message = strchr(record, ';');
		return message ? message + 1 : record;
	}
}

/* Collects the messages of records written after mark. Consumes mark. */
static void kmsg_collect(int mark, char *text, size_t size)
{
	char record[2048];
	size_t used = 0;
	char *message;

	text[0] = '\0';
	if (mark < 0)
		return;
	while ((message = kmsg_next(mark, record, sizeof(record)))) {
		used += snprintf(text + used, size - used, "%s", message);
		if (used >= size - 1)
			break;
	}
	close(mark);
}

/* True when a record written after mark contains needle. Consumes mark. */
static int kmsg_contains(int mark, const char *needle)
{
	static char text[16384];

	kmsg_collect(mark, text, sizeof(text));
	return strstr(text, needle) != NULL;
}

/* ---- Modules ------------------------------------------------------------- */

#ifndef MODULE_INIT_COMPRESSED_FILE
#define MODULE_INIT_COMPRESSED_FILE 4 /* Linux 6.4's <linux/module.h> */
#endif

/*
 * Loads a module file with parameters; 0 or -errno. A compressed one is
 * the kernel's to decompress (CONFIG_MODULE_DECOMPRESS), as kmod's insmod
 * lets it.
 */
static int load_module(const char *path, const char *params)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	const char *dot = strrchr(path, '.');
	int flags = 0;
	int ret = 0;
	size_t i;

	if (fd < 0)
		return -errno;
	for (i = 0; dot && i < ARRAY_SIZE(module_compressions); i++)
		if (!strcmp(dot, module_compressions[i]))
			flags = MODULE_INIT_COMPRESSED_FILE;
	if (syscall(SYS_finit_module, fd, params, flags) != 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int unload_module(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

static int module_loaded(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/module/%s", name);
	return exists(path);
}

/* Address of a kernel symbol from /proc/kallsyms, or 0. */
/*
 * The core kernel's symbols (the lines of /proc/kallsyms without a
 * module), read once before the tests fork: each read of the file takes
 * a second or two under TCG, and the suite looks up dozens of names, some
 * absent (a whole read each). Modules' symbols come and go with the
 * tests: module_symbol_address() reads the file every time.
 */
struct kernel_symbol {
	unsigned long address;
	char *name;
	char type;
};

static struct kernel_symbol *kernel_symbols;
static size_t kernel_symbol_count;

static void load_kernel_symbols(void)
{
	FILE *kallsyms = fopen("/proc/kallsyms", "re");
	char line[512], symbol[256], module[128], type;
	struct kernel_symbol *grown;
	size_t capacity = 0;
	unsigned long address;

	if (!kallsyms)
		return;
	while (fgets(line, sizeof(line), kallsyms)) {
		if (sscanf(line, "%lx %c %255s %127s", &address, &type, symbol,
			   module) != 3)
			continue;
		if (kernel_symbol_count == capacity) {
			capacity = capacity ? 2 * capacity : 65536;
			grown = realloc(kernel_symbols,
					capacity * sizeof(*kernel_symbols));
			if (!grown)
				break;
			kernel_symbols = grown;
		}
		kernel_symbols[kernel_symbol_count].address = address;
		kernel_symbols[kernel_symbol_count].type = type;
		kernel_symbols[kernel_symbol_count].name = strdup(symbol);
		if (!kernel_symbols[kernel_symbol_count].name)
			break;
		kernel_symbol_count++;
	}
	fclose(kallsyms);
}

/* A module's symbol (or, before load_kernel_symbols(), any), from the file. */
static unsigned long module_symbol_address(const char *name)
{
	FILE *kallsyms = fopen("/proc/kallsyms", "re");
	char line[512], symbol[256], type;
	unsigned long address, found = 0;

	if (!kallsyms)
		return 0;
	while (!found && fgets(line, sizeof(line), kallsyms))
		if (sscanf(line, "%lx %c %255s", &address, &type, symbol) ==
			    3 &&
		    !strcmp(symbol, name))
			found = address;
	fclose(kallsyms);
	return found;
}

/* A core kernel symbol's address (the first of that name), or 0. */
static unsigned long kallsyms_address(const char *name)
{
	size_t i;

	if (!kernel_symbol_count)
		return module_symbol_address(name);
	for (i = 0; i < kernel_symbol_count; i++)
		if (!strcmp(kernel_symbols[i].name, name))
			return kernel_symbols[i].address;
	return 0;
}

/* ---- What kind of kernel this is ---------------------------------------- */

/* With CONFIG_KPROBES okprobe finds kallsyms_lookup_name by itself. */
static int kernel_has_kprobes;
/* The okprobe suite's part that runs (okprobe_parts), or NULL: all of it. */
static const char *running_part;
/* What every load passes: nothing, or the loader's parameter. */
static char default_params[64];

/*
 * The sample client probes ksys_read (the read syscall's body) at its first
 * instruction past the ftrace call site, where the kernel has one (okprobe
 * refuses ftrace sites): x86's is the 5-byte call __fentry__, riscv's the
 * 8 bytes of nops that ftrace turns into auipc+jalr (MCOUNT_INSN_SIZE).
 * okprobe checks that the offset is an instruction boundary.
 */
#ifdef __x86_64__
#define FTRACE_SITE_SIZE 5
#else
#define FTRACE_SITE_SIZE 8
#endif
static char sample_params[64];
/* The start of the probe's description in debugfs list and jumps. */
static char sample_where[64];
/* Where okprobe_test_gone.ko's probe on okp_gone_target+0 lands. */
static char gone_where[64] = "okp_gone_target+0x0/";
/* The endbr64 IBT kernels start functions with: where +0 probes land. */
static int entry_pad;

static void probe_kernel(void)
{
	int offset = kallsyms_address("ftrace_caller") ? FTRACE_SITE_SIZE : 0;

	/*
	 * IBT kernels (ibt_selftest is built with CONFIG_X86_KERNEL_IBT)
	 * start every function with a 4-byte endbr64, before the ftrace site.
	 */
	if (IS_X86 && kallsyms_address("ibt_selftest")) {
		entry_pad = 4;
		offset += entry_pad;
		/* symbol+0 is past it, for okprobe as for kprobes. */
		snprintf(gone_where, sizeof(gone_where),
			 "okp_gone_target+0x4/");
	}

	kernel_has_kprobes = kallsyms_address("register_kprobe") != 0;
	if (!kernel_has_kprobes)
		snprintf(default_params, sizeof(default_params),
			 "kallsyms_lookup_name=0x%lx",
			 kallsyms_address("kallsyms_lookup_name"));
	snprintf(sample_params, sizeof(sample_params),
		 "symbol=ksys_read offset=%d", offset);
	snprintf(sample_where, sizeof(sample_where), "ksys_read+0x%x/",
		 offset);
}

/* ---- Text bytes ---------------------------------------------------------- */

static uint32_t little_endian32(const unsigned char *bytes)
{
	return bytes[0] | bytes[1] << 8 | bytes[2] << 16 |
	       (uint32_t)bytes[3] << 24;
}

/* Whether text starts with a breakpoint: int3; ebreak or c.ebreak. */
static int is_breakpoint(const unsigned char *text)
{
	if (IS_X86)
		return text[0] == 0xcc;
	return little_endian32(text) == 0x00100073 ||
	       (text[0] | text[1] << 8) == 0x9002;
}

/*
 * Whether text starts with an optimized probe's jump: jmp rel32; auipc rd
 * then jalr x0 through rd (8-byte window) or c.jr rd (6-byte window).
 */
static int is_jump(const unsigned char *text)
{
	uint32_t auipc = little_endian32(text);
	uint32_t jalr = little_endian32(text + 4);
	unsigned int rd = (auipc >> 7) & 0x1f;
	unsigned int c_jr = text[4] | text[5] << 8;

	if (IS_X86)
		return text[0] == 0xe9;
	if ((auipc & 0x7f) != 0x17 || !rd)
		return 0;
	return ((jalr & 0x7fff) == 0x67 && ((jalr >> 15) & 0x1f) == rd) ||
	       c_jr == (0x8002 | rd << 7);
}

/* default_params followed by more, in buffer. */
static const char *params_with(char *buffer, size_t size, const char *more)
{
	snprintf(buffer, size, "%s%s%s", default_params,
		 default_params[0] ? " " : "", more);
	return buffer;
}

/* ---- Steps shared by tests ----------------------------------------------- */

static int expect_loaded_surfaces(void)
{
	static const char *const paths[] = {
		SYSCTL_OPTIMIZATION, DEBUGFS_DIR "/list",
		DEBUGFS_DIR "/enabled", DEBUGFS_DIR "/blacklist",
	};
	size_t i;

	CHECK(module_loaded("okprobe"), "/sys/module/okprobe is missing");
	for (i = 0; i < ARRAY_SIZE(paths); i++)
		CHECK(exists(paths[i]), "%s is missing", paths[i]);
	return 0;
}

static int expect_nothing_left(void)
{
	static const char *const paths[] = {
		"/sys/module/okprobe", SYSCTL_OPTIMIZATION, DEBUGFS_DIR,
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(paths); i++)
		CHECK(!exists(paths[i]), "%s still exists after unload",
		      paths[i]);
	return 0;
}

static int load_okprobe(const char *params)
{
	int ret = load_module(OKPROBE_KO, params);

	CHECK(ret == 0, "loading okprobe.ko (%s): %s", params,
	      strerror(-ret));
	return expect_loaded_surfaces();
}

static int unload_okprobe(void)
{
	int mark = kmsg_mark();
	int ret = unload_module("okprobe");

	CHECK(ret == 0, "unloading okprobe: %s", strerror(-ret));
	STEP(expect_nothing_left());
	CHECK(!kmsg_contains(mark, "leak"), "okprobe reported a leak");
	return 0;
}

/*
 * Loads okprobe with params, which must fail with errno expected and log
 * lines containing every needle (a NULL-terminated list).
 */
static int expect_load_failure(const char *params, int expected, ...)
{
	static char log[16384];
	int mark = kmsg_mark(), ret;
	const char *needle;
	va_list needles;

	ret = load_module(OKPROBE_KO, params);
	kmsg_collect(mark, log, sizeof(log));
	if (ret == 0)
		unload_module("okprobe");
	CHECK(ret == -expected, "load with '%s' returned %s, expected %s",
	      params, ret ? strerror(-ret) : "success", strerror(expected));
	CHECK(!module_loaded("okprobe"), "okprobe is loaded after failing");
	va_start(needles, expected);
	while ((needle = va_arg(needles, const char *))) {
		if (!strstr(log, needle)) {
			va_end(needles);
			return fail("no kernel log line containing '%s'",
				    needle);
		}
	}
	va_end(needles);
	return 0;
}

/*
 * The tests, a part file per suite or concern, included: one program and
 * one test list, the helpers above shared by all.
 */
#include "okptest_okprobe.c"
#include "okptest_cover.c"
#include "okptest_bench.c"
#include "okptest_entry_return.c"
#include "okptest_events.c"
#include "okptest_events_args.c"
#include "okptest_events_scenarios.c"
#include "okptest_userland.c"
#include "okptest_source_lines.c"
#include "okptest_cover_lines.c"
#include "okptest_cover_module.c"
#include "okptest_kernel_ftracetest.c"
#include "okptest_bench_bpf.c"
#include "okptest_bench_cover.c"
#include "okptest_bench_cover_arm.c"
#include "okptest_bench_cover_workload.c"
#include "okptest_demo.c"
#include "okptest_scale.c"

/* ---- Kernel facts for host-side analysis --------------------------------- */

/*
 * The section bounds host tools need beside the functions, to find a
 * stock kernel's tables in its raw image (riscv: no ELF, no System.map).
 * Only kernels with KALLSYMS_ALL list the data ones.
 */
static const char *const section_bounds[] = {
	"_start", "_end", "__start_rodata", "__end_rodata",
	"__start_ro_after_init", "__end_ro_after_init", "__start___ex_table",
	"__stop___ex_table", "__start___jump_table", "__stop___jump_table",
	"_sinittext", "_einittext", "_stext", "_etext",
};

static int is_section_bound(const char *name)
{
	return in_list(name, section_bounds, ARRAY_SIZE(section_bounds));
}

/*
 * Prints every text symbol of /proc/kallsyms, and the section bounds
 * above, as "# kallsyms ADDRESS TYPE NAME [MODULE]" lines; then each
 * ftrace site the kernel lists (6.6 and later) as "# ftrace ADDRESS".
 * Booted with nokaslr, the addresses match the kernel image's link
 * addresses, so host tools can find functions in the image extracted from
 * Debian's package (which carries no symbol table).
 */
static int dump_kallsyms(void)
{
	FILE *kallsyms = fopen("/proc/kallsyms", "re"), *sites;
	char line[512], out[600], name[256];
	size_t length;
	long count = 0, ftrace = 0;

	CHECK(kallsyms, "cannot open /proc/kallsyms");
	while (fgets(line, sizeof(line), kallsyms)) {
		char type;

		if (sscanf(line, "%*s %c %255s", &type, name) != 2 ||
		    (type != 't' && type != 'T' && !is_section_bound(name)))
			continue;
		length = snprintf(out, sizeof(out), "# kallsyms %s", line);
		if (write(1, out, length) < 0)
			break;
		count++;
	}
	fclose(kallsyms);
	CHECK(count > 1000, "only %ld text symbols", count);
	mount_tracefs_if_needed();
	sites = fopen(TRACING "/available_filter_functions_addrs", "re");
	while (sites && fgets(line, sizeof(line), sites)) {
		char *end;
		unsigned long address = strtoul(line, &end, 16);

		if (end == line)
			continue;
		length = snprintf(out, sizeof(out), "# ftrace %lx\n", address);
		if (write(1, out, length) < 0)
			break;
		ftrace++;
	}
	if (sites)
		fclose(sites);
	say("# %ld symbols, %ld ftrace sites", count, ftrace);
	/* What the boot patched text for (x86: stuffing is call depth tracking). */
	if (read_file("/sys/devices/system/cpu/vulnerabilities/retbleed", line,
		      sizeof(line)) == 0)
		say("# retbleed: %.*s", (int)strcspn(line, "\n"), line);
	return 0;
}

/*
 * With okptest_hold=SECONDS on the kernel command line: says so, then
 * keeps the kernel idle that long, for the host to read the running
 * kernel's text through QEMU's monitor (the bytes boot-time patching left:
 * alternatives, jump labels, static calls, ftrace's nops).
 */
static int hold_for_text_dump(void)
{
	const char *hold = getenv("okptest_hold");

	if (!hold)
		return skip("no okptest_hold= on the kernel command line");
	sync();
	say("# okptest: the kernel's text may be read now");
	sleep(atoi(hold));
	return 0;
}

/* ---- Harness self-tests (make check expects these runs to FAIL) ---------- */

static int test_deliberate_failure(void)
{
	return fail("this failure is deliberate: the harness must report it");
}

static int test_deliberate_warning(void)
{
	int ret = load_module(WARN_KO, "");

	CHECK(ret == 0, "loading okprobe_test_warn.ko: %s", strerror(-ret));
	ret = unload_module("okprobe_test_warn");
	CHECK(ret == 0, "unloading okprobe_test_warn: %s", strerror(-ret));
	return 0;
}

static int test_deliberate_hang(void)
{
	for (;;)
		pause();
	return 0;
}

#include "okptest_faults.c"

/* ---- The soak (make soak): okptest_soak.c ------------------------------- */

#include "okptest_soak.c"

/* ---- The kernel log -------------------------------------------------------- */

/* Where the kernel log stood when okptest started. */
static int kmsg_at_start = -1;

/*
 * What in a kernel message means the kernel is unwell: the patterns
 * tools/guest_run.py fails a guest's console on.
 */
static const char *const kernel_problems[] = {
	"Oops",
	"BUG:",
	"kernel BUG",
	"WARNING:",
	"Kernel panic",
	"Unable to handle kernel",
	"general protection fault",
	"possible circular locking",
	"possible recursive locking",
	"inconsistent lock state",
	"suspicious RCU usage",
	"blocked for more than",
	"rcu_sched self-detected stall",
	"rcu_preempt self-detected stall",
	"detected stalls on CPUs",
	"soft lockup",
	"hard LOCKUP",
	"Call Trace:",
	"Call trace:",
	"turning off the locking correctness validator",
};

static int test_kernel_log_clean(void)
{
	int problems = 0, injecting = 0, since_warn_alloc = -1;
	char record[2048], *message;
	size_t i;

	if (kmsg_at_start < 0)
		return skip("/dev/kmsg cannot be read");
	while ((message = kmsg_next(kmsg_at_start, record, sizeof(record)))) {
		message[strcspn(message, "\n")] = '\0';
		if (strstr(message, FAULTS_BEGIN))
			injecting = 1;
		else if (strstr(message, FAULTS_END))
			injecting = 0;
		if (since_warn_alloc >= 0)
			since_warn_alloc++;
		if (injecting && (strstr(message, "vmalloc error: size") ||
				  strstr(message, "page allocation failure:")))
			since_warn_alloc = 0;
		for (i = 0; i < ARRAY_SIZE(kernel_problems); i++)
			if (strstr(message, kernel_problems[i]))
				break;
		/* An injected fault's warn_alloc() stack (guest_run.py's rule). */
		if (i < ARRAY_SIZE(kernel_problems) && injecting &&
		    strstr(message, "Call ") && since_warn_alloc >= 0 &&
		    since_warn_alloc <= WARN_ALLOC_STACK_RECORDS)
			continue;
		if (i < ARRAY_SIZE(kernel_problems) && !problems++)
			snprintf(why, sizeof(why), "the kernel logged: %.400s",
				 message);
	}
	return problems ? 1 : 0;
}

/* ---- Suites: kselftest harness fixtures ------------------------------------ */

/*
 * Runs one of okptest's test functions as a harness test: its failure
 * reason becomes the test's diagnostic, a skip the harness's SKIP.
 */
static void run_test(struct __test_metadata *_metadata, int (*test)(void),
		     const char *description)
{
	long long started = now_ms();
	int result;

	say("# %s", description);
	why[0] = '\0';
	result = test();
	/* Where a guest's time goes (testing.md, "Two lanes"). */
	say("# took: %s %.1f s", _metadata->name, (now_ms() - started) / 1000.0);
	for (char *c = why; *c; c++)
		if (*c == '\n')
			*c = ' ';
	if (result == RESULT_SKIP)
		SKIP(return, "%s", why);
	if (result) {
		say("# %s", why);
		_metadata->passed = 0;
	}
}

/*
 * A suite is a fixture without data. Tests of a fixture run in the order
 * written, each in its own process with a timeout; the harness kills a
 * test that outlives it and goes on with the next. The timeouts are for
 * QEMU without KVM, where the slow tests take minutes.
 */
#define SUITE(suite)                                                           \
	FIXTURE(suite)                                                         \
	{                                                                      \
		int unused;                                                    \
	};                                                                     \
	FIXTURE_SETUP(suite)                                                   \
	{                                                                      \
	}                                                                      \
	FIXTURE_TEARDOWN(suite)                                                \
	{                                                                      \
	}

#define OKPTEST(suite, name, function, seconds, description)                  \
	TEST_F_TIMEOUT(suite, name, seconds)                                   \
	{                                                                      \
		run_test(_metadata, function, description);                    \
	}

/* Most tests take seconds; the long ones (TCG, riscv) a few minutes. */
#define SHORT 300
#define LONG 1200

SUITE(okprobe)
OKPTEST(okprobe, load, test_load, SHORT, "okprobe.ko loads and finds the core exception table")
OKPTEST(okprobe, sysctl_default, test_sysctl_default, SHORT, "sysctl kprobes_optimization defaults to 1")
OKPTEST(okprobe, sysctl_write, test_sysctl_write, SHORT, "sysctl kprobes_optimization takes 0 and 1")
OKPTEST(okprobe, sysctl_rejects, test_sysctl_rejects, SHORT, "sysctl kprobes_optimization rejects other values with EINVAL")
OKPTEST(okprobe, debugfs_list, test_debugfs_list, SHORT, "debugfs list exists and is empty")
OKPTEST(okprobe, debugfs_enabled, test_debugfs_enabled, SHORT, "debugfs enabled reads and takes 0/1")
OKPTEST(okprobe, debugfs_blacklist, test_debugfs_blacklist, SHORT, "debugfs blacklist covers okprobe, noinstr text, NOKPROBE symbols (and riscv entry code)")
OKPTEST(okprobe, sample_client, test_sample_client, SHORT, "sample client loads on okprobe and pins it")
OKPTEST(okprobe, unload, test_unload, SHORT, "unload leaves nothing behind")
OKPTEST(okprobe, load_unload_cycles, test_load_unload_cycles, SHORT, "10 load/unload cycles, okprobe's vmalloc pages (module, tables, detours) given back")
OKPTEST(okprobe, loader_parameter, test_loader_parameter, SHORT, "loads with kallsyms_lookup_name from /proc/kallsyms")
OKPTEST(okprobe, wrong_kallsyms_address, test_wrong_kallsyms_address, SHORT, "a wrong kallsyms_lookup_name address fails the load, naming it")
OKPTEST(okprobe, missing_symbol, test_missing_symbol, SHORT, "a missing kernel symbol fails the load, naming it")
OKPTEST(okprobe, no_kprobes_needs_parameter, test_no_kprobes_needs_parameter, SHORT, "without CONFIG_KPROBES a load without kallsyms_lookup_name= fails, naming it")
OKPTEST(okprobe, loader_script, test_loader_script, SHORT, "tools/okprobe-load loads okprobe")
OKPTEST(okprobe, in_kernel_probes, test_in_kernel_probes, LONG, "in-kernel probe tests (okprobe_selftest.ko)")
OKPTEST(okprobe, syscall_probe_under_load, test_syscall_probe_under_load, SHORT, "a probe on ksys_read counts every read of two concurrent processes")
OKPTEST(okprobe, unload_while_optimized, test_unload_while_optimized, SHORT, "the client unloads while its optimized probe is hit on every CPU")
OKPTEST(okprobe, counter_probe, test_counter_probe, SHORT, "the sample client's counting probe (counter=1) on ksys_read: [COUNTER], optimized, every read of two processes counted")
OKPTEST(okprobe, enable_disable_switches, test_enable_disable_switches, SHORT, "okprobe_disable/enable and debugfs enabled stop and resume hits, removing the breakpoint")
OKPTEST(okprobe, coexist_in_kernel, test_coexist_in_kernel, SHORT, "the kernel kprobe coexistence matrix alone (okprobe_selftest.ko coexist_only=1), on kernel functions (strscpy, memchr_inv)")
OKPTEST(okprobe, args_in_kernel, test_args_in_kernel, SHORT, "the argument-only probe tests alone (okprobe_selftest.ko args_only=1): the record against pt_regs on the same calls, on the module's targets and at every instruction of int_sqrt, gcd, kstrtoull, sort_r; every CPU at once")
OKPTEST(okprobe, context_in_kernel, test_context_in_kernel, SHORT, "the calling-context and bad-input tests alone (okprobe_selftest.ko context_only=1): API calls from atomic context refused, NULLs, garbage structs and names, fuzz")
OKPTEST(okprobe, entry_in_kernel, test_entry_in_kernel, SHORT, "in-kernel entry probe tests alone (okprobe_selftest.ko entry_only=1)")
OKPTEST(okprobe, entry_probe, test_entry_probe, SHORT, "the sample client at ksys_read+0: through ftrace ([FTRACE]) or past its call site ([AFTER FTRACE]), every read counted, beside a kprobe_events probe at +0, under the function tracer, and with kernel.ftrace_enabled=0 (none through ftrace, all past the call site) and back")
OKPTEST(okprobe, return_in_kernel, test_return_in_kernel, LONG, "in-kernel return probe tests alone (okprobe_selftest.ko return_only=1)")
OKPTEST(okprobe, return_probe, test_return_probe, SHORT, "the sample client's return probe on ksys_read: return values as the kernel's r: event sees them, under the function and function graph tracers, readers killed inside, okprobe unloaded under sleeping readers, do_exit")
OKPTEST(okprobe, probe_events, test_probe_events, SHORT, "okprobe_events: events defined from the shell on ksys_read (arguments, $comm, $retval) count a child's reads as the kernel's kprobe event does; filter, hist trigger, profile; removal refused while enabled; bad lines get their errno and an error_log caret; > removes all")
OKPTEST(okprobe, probe_events_trace_cmd, test_probe_events_trace_cmd, SHORT, "okprobe_events with trace-cmd: record -e okptest_tc:read with a filter over 100 reads, report prints each with its count and comm")
OKPTEST(okprobe, probe_events_perf, test_probe_events_perf, SHORT, "okprobe_events with perf: perf_event_open of the event as a tracepoint counts okptest's 100 reads, and samples them with their raw records")
OKPTEST(okprobe, probe_events_args, test_probe_events_args, SHORT, "okprobe_events on the argument-only path: a register-only line's probe is [ARGS] (one reading %bx or %s1 is not), on pt_regs while perf has the event and back after, every read an entry each way; optimized on okprobe_bench.ko's target onto the short detour, every call an entry with its argument")
OKPTEST(okprobe, probe_events_bpf, test_probe_events_bpf, SHORT, "okprobe_events with BPF: a tracepoint program attached as libbpf does (perf event on CPU 0, PERF_EVENT_IOC_SET_BPF) counts okptest's 100 reads on the other CPU and sums their count field; a kprobe program and bpf_get_func_ip() refused; the event and okprobe stay while it is attached")
OKPTEST(okprobe, probe_events_bpf_recursion, test_probe_events_bpf_recursion, SHORT, "BPF programs that hit okprobes: a program on a ksys_read event updates a hash map where another event is, and that event's own program, run from a socket filter's update, hits itself: each nested hit is a miss of the inner event, nothing recurses")
OKPTEST(okprobe, probe_events_bpftrace, test_probe_events_bpftrace, LONG, "okprobe_events with Debian's bpftrace: one-liners on events at ksys_read's entry, a block past it and its return count dd's 100 reads as bpftrace's kprobe:/kretprobe: (fentry:/fexit: where the kernel takes no kprobe at an entry) do on the same places; bpftool perf lists them as tracepoints")
OKPTEST(okprobe, probe_events_libbpf, test_probe_events_libbpf, LONG, "the libbpf sample (samples/bpf, Debian 13's libbpf1) on events at ksys_read's entry, a block past it and its return: dd's 100 reads counted and summed, the attach cookie, the probed address and the probed place's stack")
OKPTEST(okprobe, okprobe_tool, test_okprobe_tool, SHORT, "tools/okprobe with Debian's python3 on the real tracefs: add, trace streams 100 faccessat() calls and stops on SIGINT, list, top, a bad line's errno, del")
OKPTEST(okprobe, source_line_probe, test_source_line_probe, LONG, "tools/okprobe add --line with Debian's perf on the kernel's -dbg vmlinux: without it, a message naming the package and no event; vfs_read:25 with its local ret and vfs_read%return record the sizes okptest read, as the kernel's kprobe_events does on perf's same line")
OKPTEST(okprobe, source_line_inlined, test_source_line_inlined, LONG, "tools/okprobe add --line of fsnotify_access, an inline: one event, a line per instance as perf probe finds them; okptest's reads, readv()s and sendfile()s each recorded once, by the instance in their own path")
OKPTEST(okprobe, kernel_ftracetest, test_kernel_ftracetest, LONG, "the kernel's own tests of kprobe_events (its ftracetest and test.d/kprobe, from Debian's linux-source of the kernel's series) rewritten for okprobe_events: each passes, or ends as it ends on kprobe_events (but for the listed differences)")
OKPTEST(okprobe, probe_events_storm, test_probe_events_storm, LONG, "a storm of okprobe_events events on hot and syscall-path kernel functions: defined with documented refusals, enabled at once under load, hit, removed with >")
OKPTEST(okprobe, probe_events_like_kernel, test_probe_events_like_kernel, SHORT, "okprobe_events against kprobe_events: the same lines read back alike with the same format fields; bad lines get the same errno and error_log entry")
OKPTEST(okprobe, probe_events_scenarios, test_probe_events_scenarios, SHORT, "okprobe_events against kprobe_events, scenario by scenario, with the same transcript: lines appended to an event (the kernel's refusals, each line's own fetch, armed at once while enabled, removed line by line), SYM+OFFS past the symbol's end, MOD:SYM of a module loaded later, gone while unloaded, armed again on reload, entry and return; a module's function by name, its arguments by name from the module's BTF")
OKPTEST(okprobe, int3_path_notifier, test_int3_path_notifier, SHORT, "x86: a breakpoint in hw_breakpoint_exceptions_notify, a die notifier every int3 runs, is hit by user-mode int3s and taken (it used to re-enter the trap forever)")
OKPTEST(okprobe, copied_templates, test_copied_templates, SHORT, "x86: ftrace's trampoline templates, which ftrace copies into each trampoline it makes, are listed whole in okprobe/blacklist and refused (EPERM)")
OKPTEST(okprobe, kprobe_events, test_kprobe_events, SHORT, "kprobe_events beside okprobe: refused in its function but on the ftrace site, taken once it is gone, and the other way round")
OKPTEST(okprobe, storm, test_storm, LONG, "a storm of probes over syscall-path kernel functions under load: documented refusals, optimized, toggled, text restored")
OKPTEST(okprobe, traced_okprobe, test_traced_okprobe, LONG, "okprobe under the function tracer: kprobe_events refused on all its text, 6 * 10^5 hits exact, console clean")
OKPTEST(okprobe, riscv_liveness, test_riscv_liveness, SHORT, "riscv: a probe optimizes under the psABI and, with psabi_liveness=0, stays a breakpoint and says why")
OKPTEST(okprobe, module_gone, test_module_gone, SHORT, "a probe on module text turns [GONE] on unload; freed init text is refused")
OKPTEST(okprobe, cover, test_cover, SHORT, "okprobe/cover: counting probes on every basic block of a test module's function count exactly the blocks known calls drive")
OKPTEST(okprobe, cover_lines, test_cover_lines, SHORT, "tools/okprobe-cover-lcov in Debian's userland: okprobe/cover's report of a test module's function as an lcov tracefile from the module's DWARF, each source line run as often as the calls that drive it")
OKPTEST(okprobe, cover_module, test_cover_module, LONG, "tools/okprobe-cover over every function of the Debian modules serving the userland's disk and of a test module, reach then counts, while Python reads the disk and unloads and loads the test module: thousands of blocks, the gone module's hits kept and nothing of it armed, every byte of the Debian modules' text as before")
OKPTEST(okprobe, cover_beside, test_cover_beside, SHORT, "okprobe-cover's reach probes beside kprobe_events: a kernel kprobe in a function makes okprobe refuse its blocks (EBUSY), a function okprobe covers refuses the kernel's (EINVAL), both count a call, and the text is whole once both leave")
OKPTEST(okprobe, fault_injection, test_fault_injection, LONG, "every allocation of a registration (breakpoint, counting, return), an event's definition and enabling, an optimized probe's unregistration and the optimizer failed in turn (debug kernels): an errno or a success, nothing listed, the text as before, the call again succeeds")
/* Before the log check; make check's guests carry the sample. */
OKPTEST(okprobe, scale, test_scale, LONG, "the bench's sample of kernel instructions (" BENCH_SITES "): okprobe one by one beside kprobe_events, then register_many(), under a syscall load, each within its deadline, one owner per function, every site's text restored byte for byte")
OKPTEST(okprobe, kmemleak_clean, test_kmemleak_clean, LONG, "kmemleak (debug kernels): nothing unreferenced after the suite and a load, register, unregister, unload cycle of each kind")
OKPTEST(okprobe, kernel_log_clean, test_kernel_log_clean, SHORT, "nothing in the kernel log since okptest began matches a kernel problem (an oops, a warning, lockdep, RCU stalls)")

SUITE(demo)
OKPTEST(demo, load, demo_step_load, SHORT, "load okprobe.ko and the sample client")
OKPTEST(demo, show, demo_step_show, SHORT, "show the debugfs files; the probe goes [OPTIMIZED] and back with the sysctl")
OKPTEST(demo, events, demo_step_events, SHORT, "okprobe_events: a probe with fetch arguments from the shell, its events from trace_pipe, a hist trigger's table, its removal")
OKPTEST(demo, bpftrace, demo_step_bpftrace, LONG, "bpftrace (Debian's, on the guest's userland disk) on an okprobe_events event: a one-liner summing read sizes by process while dd reads")
OKPTEST(demo, source_line, demo_step_source_line, LONG, "a probe on a source line with a local variable: okprobe add --line 'vfs_read:25 ret' (Debian's perf probe on the kernel's -dbg DWARF), the values dd's reads returned")
OKPTEST(demo, cover, demo_step_cover, SHORT, "okprobe-cover: basic-block coverage of vfs_read, rw_verify_area and seq_read_iter while reads run, then cleared")
OKPTEST(demo, cover_module, demo_step_cover_module, LONG, "okprobe-cover over a whole Debian module (squashfs) while Python reads the disk it serves: its report to the host for lcov, genhtml and a screenshot")
OKPTEST(demo, unload, demo_step_unload, SHORT, "unload both; nothing is left behind")

/*
 * The benchmark's steps share what they measured, so they run in one
 * test (each in its own process, they could not). bench_steps
 * (tools/bench --steps) names the measuring steps to run; loading and
 * unloading always run. A measuring step's result names it ("cover-arm:
 * ..."), and one that did not run says why as a skip: tools/bench
 * reports those, and fails when a step it was asked for measured nothing.
 */
static int bench_run(void)
{
	static const char *const names[] = {
		"load okprobe.ko and okprobe_bench.ko",
		"hits: measure every configuration; hit counts match calls",
		"bpf: bpftrace on the same places by kprobe:, okprobe_events and fentry:; its counts match calls",
		"scale: register a sample of kernel instructions with kprobes, then okprobe; count, time, unregister",
		"cover-arm: okprobe-cover's reach mode on 1,000 to 50,000 blocks, then kernel kprobes on the same; time, text restored",
		"cover-workload: a workload with no probes, reach and counts coverage of the disk's modules, interleaved; text restored",
		"unload both",
	};
	static const char *const keys[] = { NULL, "hits", "bpf", "scale",
					    "cover-arm", "cover-workload", NULL };
	int (*const steps[])(void) = { bench_load, bench_measure, bench_bpf,
				       bench_coverage, bench_cover_arm,
				       bench_cover_workload, bench_unload };
	static char details[ARRAY_SIZE(steps)][sizeof(why)];
	const char *detail_of[ARRAY_SIZE(steps)];
	int failed[ARRAY_SIZE(steps)] = { 0 }, first = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		why[0] = '\0';
		/* Nothing to measure without the modules; unload regardless. */
		if (i && i != ARRAY_SIZE(steps) - 1 && failed[0]) {
			failed[i] = RESULT_SKIP;
			snprintf(why, sizeof(why), "the modules did not load");
		} else if (keys[i] && !bench_runs_step(keys[i])) {
			failed[i] = RESULT_SKIP;
			snprintf(why, sizeof(why),
				 "not in bench_steps (tools/bench --steps)");
		} else {
			failed[i] = steps[i]();
			/* A step's own skip (no okprobe/cover, say) stays one. */
			if (failed[i] != RESULT_SKIP)
				failed[i] = failed[i] == 1;
		}
		snprintf(details[i], sizeof(details[i]), "%s", why);
		detail_of[i] = details[i];
		if (failed[i] == 1 && !first)
			first = i + 1;
	}
	report_subtests(failed, names, detail_of, ARRAY_SIZE(steps));
	if (first)
		snprintf(why, sizeof(why), "%s", details[first - 1]);
	return first ? 1 : 0;
}

SUITE(bench)
/*
 * BENCH_SECONDS for the steps but the okprobe-cover ones (x86-rt's kernel
 * scale pass took 39 minutes), and what those may take with their
 * settings, cover_steps_seconds(): bench_timeout() sets it at the start,
 * 8 * LONG with the defaults. tools/bench's guest timeout is the same and
 * a margin, so that the guest says which step ran out first.
 */
#define BENCH_SECONDS (4 * LONG)
OKPTEST(bench, bench, bench_run, 8 * LONG, "the benchmark: per-hit cost and coverage, okprobe against kprobes")

SUITE(scale)
OKPTEST(scale, scale, test_scale, LONG, "the bench's sample of kernel instructions (Target.scale_sites of them): okprobe one by one beside kprobe_events, then register_many(), under a syscall load, each within its deadline, one owner per function, every site's text restored byte for byte")

SUITE(kallsyms)
OKPTEST(kallsyms, dump_kallsyms, dump_kallsyms, SHORT, "print the kernel's text symbols")
OKPTEST(kallsyms, hold_for_text_dump, hold_for_text_dump, SHORT, "keep the kernel idle while the host reads its text")

/*
 * make soak: okptest_soak_seconds of random operations (its timeout is
 * set from them, soak_timeout()), then kmemleak and the kernel log.
 */
SUITE(soak)
OKPTEST(soak, soak, test_soak, LONG, "random operations on every kind of probe, events, sysctls, tracers and client modules under load for okptest_soak_seconds; at the end nothing left and every sampled site's text as before")
OKPTEST(soak, kmemleak_clean, test_kmemleak_clean, LONG, "kmemleak (debug kernels): nothing unreferenced after the soak and a load, register, unregister, unload cycle of each kind")
OKPTEST(soak, kernel_log_clean, test_kernel_log_clean, SHORT, "nothing in the kernel log since okptest began matches a kernel problem (an oops, a warning, lockdep, RCU stalls)")

/* One test, for working on it: okptest=storm. */
SUITE(storm)
OKPTEST(storm, storm, test_storm, LONG, "a storm of probes over syscall-path kernel functions under load")

/*
 * The ftrace suite: what only the riscv ftrace kernel has, the one riscv
 * kernel whose ftrace saves registers: entry and return probes through
 * ftrace ([FTRACE]), kprobes on ftrace beside them, the function tracer
 * over okprobe's text under lockdep. The rest of the suite runs there as
 * on riscv-preempt (the same 6.1 source); a probe past an ftrace call site
 * and okprobe_events on ftrace kernels, on riscv-6.12 and riscv-7.2.
 */
static const char *const ftrace_tests[] = {
	"load", "unload", "entry_in_kernel", "entry_probe", "return_in_kernel",
	"return_probe", "kprobe_events", "traced_okprobe", "scale",
	"kernel_log_clean",
};

/*
 * okptest=return: the entry and return probe tests from userspace, for
 * working on them.
 */
static const char *const return_tests[] = {
	"load", "unload", "entry_probe", "return_in_kernel", "return_probe",
	"kernel_log_clean",
};

/* okptest=events: okprobe_events' tests, for working on them. */
static const char *const events_tests[] = {
	"load", "unload", "probe_events", "probe_events_trace_cmd",
	"probe_events_perf", "probe_events_args", "probe_events_bpf",
	"probe_events_bpf_recursion", "probe_events_bpftrace",
	"probe_events_libbpf", "okprobe_tool", "source_line_probe",
	"source_line_inlined", "kernel_ftracetest", "probe_events_storm",
	"probe_events_like_kernel", "kernel_log_clean",
};

/*
 * The essentials suite: what make check runs on a pinned kernel that is
 * neither the oldest nor the newest of its arch, whose whole suite runs
 * there (testing.md, "The kernel matrix"): load and unload, one probe of
 * each kind on a real kernel function (breakpoint, optimized, counting,
 * entry, return, event), kprobe_events beside okprobe, the coexistence
 * matrix, a client's calls from every context (what a preemption model
 * changes, PREEMPT_RT's sleeping spinlocks among it), the scale sample.
 */
static const char *const essentials_tests[] = {
	"load", "debugfs_blacklist", "sample_client", "unload",
	"syscall_probe_under_load",
	"enable_disable_switches", "unload_while_optimized", "counter_probe",
	"entry_probe", "return_probe", "probe_events", "probe_events_args",
	"probe_events_bpf", "probe_events_bpf_recursion", "probe_events_bpftrace", "probe_events_libbpf", "okprobe_tool",
	"source_line_probe", "source_line_inlined", "kprobe_events", "coexist_in_kernel", "args_in_kernel", "context_in_kernel", "module_gone", "scale",
	"kernel_log_clean",
};

/*
 * The debug part: what make check runs on the sanitizer kernels (x86-debug,
 * riscv-debug), whose whole suite is make check-debug's: load and unload
 * cycles, one probe of each kind on a real kernel function, events beside
 * the kernel's, a client's calls from every context (sleeping in atomic
 * context is reported there), a module going away under its probes, the
 * fault sweep (at okptest_fault_stride), kmemleak, the kernel log.
 */
static const char *const debug_tests[] = {
	"load", "load_unload_cycles", "sample_client", "unload",
	"syscall_probe_under_load", "unload_while_optimized", "counter_probe",
	"entry_probe", "return_probe", "probe_events", "kprobe_events",
	"context_in_kernel", "module_gone", "fault_injection",
	"kmemleak_clean", "kernel_log_clean",
};

/* The suites that are a part of the okprobe suite's tests, in its order. */
static const struct {
	const char *name;
	const char *const *tests;
	size_t count;
} okprobe_parts[] = {
	{ "ftrace", ftrace_tests, ARRAY_SIZE(ftrace_tests) },
	{ "return", return_tests, ARRAY_SIZE(return_tests) },
	{ "events", events_tests, ARRAY_SIZE(events_tests) },
	{ "essentials", essentials_tests, ARRAY_SIZE(essentials_tests) },
	{ "debug", debug_tests, ARRAY_SIZE(debug_tests) },
};

/* Harness self-tests: make check expects these runs to FAIL. */
SUITE(selftest_fail)
OKPTEST(selftest_fail, deliberate_failure, test_deliberate_failure, SHORT, "harness self-test: a deliberately failing test")
SUITE(selftest_warn)
OKPTEST(selftest_warn, deliberate_warning, test_deliberate_warning, SHORT, "harness self-test: a module that WARNs")
/* Outlives the host's guest timeout: the guest must be seen to hang. */
SUITE(selftest_hang)
OKPTEST(selftest_hang, deliberate_hang, test_deliberate_hang, 3600, "harness self-test: a guest that hangs")
/*
 * All three in one boot, as make check runs them: each is judged on its
 * own (the hang last, since nothing runs after it).
 */
SUITE(selftest_all)
OKPTEST(selftest_all, deliberate_failure, test_deliberate_failure, SHORT, "harness self-test: a deliberately failing test")
OKPTEST(selftest_all, deliberate_warning, test_deliberate_warning, SHORT, "harness self-test: a module that WARNs")
OKPTEST(selftest_all, deliberate_hang, test_deliberate_hang, 3600, "harness self-test: a guest that hangs")

/* ---- Running ------------------------------------------------------------- */

/*
 * Keeps only the tests of fixture f that names lists, in their order;
 * returns how many it kept.
 */
static size_t keep_tests(struct __fixture_metadata *f,
			 const char *const *names, size_t count)
{
	struct __test_metadata *t, *next, *kept = NULL;
	size_t kept_count = 0;

	for (t = f->tests; t; t = next) {
		next = t->next;
		if (!in_list(t->name, names, count))
			continue;
		kept_count++;
		/* The harness's list: head->prev is the tail. */
		t->next = NULL;
		if (!kept) {
			kept = t;
			t->prev = t;
		} else {
			kept->prev->next = t;
			t->prev = kept->prev;
			kept->prev = t;
		}
	}
	f->tests = kept;
	return kept_count;
}

/* The comma-separated names of text, split in copy: how many, in names. */
static size_t split_names(const char *text, char *copy, size_t size,
			  const char **names, size_t max)
{
	char *name, *save = NULL;
	size_t count = 0;

	snprintf(copy, size, "%s", text);
	for (name = strtok_r(copy, ",", &save); name && count < max;
	     name = strtok_r(NULL, ",", &save))
		names[count++] = name;
	return count;
}

/*
 * okptest_only=NAME[,NAME...] on the kernel command line (a developer's
 * filter: tools/guest_run.py --args): only those tests of the suite run.
 */
static void keep_only_wanted(struct __fixture_metadata *f)
{
	static char copy[512];
	static const char *names[32];
	const char *only = getenv("okptest_only");

	if (!only || !*only)
		return;
	keep_tests(f, names, split_names(only, copy, sizeof(copy), names,
					 ARRAY_SIZE(names)));
}

/*
 * okptest_skip=NAME[,NAME...] on the kernel command line (tools/check's
 * per-target arguments): those tests of the suite do not run there.
 */
static void drop_skipped(struct __fixture_metadata *f)
{
	static char copy[512];
	static const char *skipped[32], *kept[256];
	const char *text = getenv("okptest_skip");
	struct __test_metadata *t;
	size_t count, kept_count = 0;

	if (!text || !*text)
		return;
	count = split_names(text, copy, sizeof(copy), skipped, ARRAY_SIZE(skipped));
	for (t = f->tests; t && kept_count < ARRAY_SIZE(kept); t = t->next)
		if (!in_list(t->name, skipped, count))
			kept[kept_count++] = t->name;
	keep_tests(f, kept, kept_count);
}

/*
 * The soak runs as long as okptest_soak_seconds says: its harness timeout
 * (compiled in) is made that and half an hour for the removal at its end.
 */
static void soak_timeout(struct __fixture_metadata *f)
{
	const char *seconds = getenv("okptest_soak_seconds");
	struct __test_metadata *t;

	for (t = f->tests; seconds && t; t = t->next)
		if (!strcmp(f->name, "soak") && !strcmp(t->name, "soak") &&
		    atol(seconds) > 0)
			t->timeout = atol(seconds) + 1800;
}

/* The bench's timeout, from its okprobe-cover settings (bench_cover_*). */
static void bench_timeout(struct __fixture_metadata *f)
{
	struct __test_metadata *t;

	for (t = f->tests; t; t = t->next)
		if (!strcmp(f->name, "bench") && !strcmp(t->name, "bench"))
			t->timeout = BENCH_SECONDS + cover_steps_seconds();
}

/*
 * Keeps only the named fixture in the harness's list: the harness runs
 * every registered test, and 6.1's has no option to pick a fixture.
 * Suite names on the command line use '-', fixture names '_'; "ftrace",
 * "return", "events", "essentials" and "debug" are parts of the okprobe
 * fixture (okprobe_parts).
 */
static int select_suite(const char *wanted)
{
	struct __fixture_metadata *f;
	char name[64];
	size_t part;

	for (part = 0; part < ARRAY_SIZE(okprobe_parts); part++)
		if (!strcmp(wanted, okprobe_parts[part].name))
			break;
	snprintf(name, sizeof(name), "%s",
		 part < ARRAY_SIZE(okprobe_parts) ? "okprobe" : wanted);
	for (char *c = name; *c; c++)
		if (*c == '-')
			*c = '_';
	for (f = __fixture_list; f; f = f->next)
		if (!strcmp(f->name, name)) {
			f->next = NULL;
			f->prev = f;
			__fixture_list = f;
			/* A part naming a test that is gone is a bug. */
			if (part < ARRAY_SIZE(okprobe_parts) &&
			    keep_tests(f, okprobe_parts[part].tests,
				       okprobe_parts[part].count) !=
			    okprobe_parts[part].count)
				return -1;
			if (part < ARRAY_SIZE(okprobe_parts))
				running_part = okprobe_parts[part].name;
			keep_only_wanted(f);
			drop_skipped(f);
			soak_timeout(f);
			bench_timeout(f);
			return 0;
		}
	return -1;
}

/*
 * Runs one suite under the harness; does not return. argv is main's, given
 * without its arguments (newer harnesses parse options from it).
 */
static void run_suite(const char *wanted, char **argv)
{
	if (select_suite(wanted)) {
		say("TAP version 13");
		say("Bail out! no test suite '%s' (or it names a test that is gone)",
		    wanted);
		exit(KSFT_FAIL);
	}
	find_modules();
	load_kernel_symbols();
	probe_kernel();
	/* Where the kernel's text is (KASLR): a hung guest's addresses. */
	say("# okptest: _stext 0x%lx", kallsyms_address("_stext"));
	kmsg_at_start = kmsg_mark();
	/*
	 * kmemleak_clean judges what okptest's tests leave, not the boot: in
	 * a test guest (okptest= on its command line), what kmemleak found
	 * before is cleared; a real machine's reports are left alone.
	 */
	if (getenv("okptest") && exists(KMEMLEAK))
		write_file(KMEMLEAK, "clear");
	exit(test_harness_run(1, argv));
}

static int is_mounted(const char *where)
{
	char mounts[16384], needle[128];

	snprintf(needle, sizeof(needle), " %s ", where);
	return read_file("/proc/mounts", mounts, sizeof(mounts)) == 0 &&
	       strstr(mounts, needle);
}

static void mount_if_needed(const char *type, const char *where)
{
	if (!is_mounted(where))
		mount(type, where, type, 0, NULL);
}

static void mount_filesystems(void)
{
	mkdir("/proc", 0755);
	mkdir("/sys", 0755);
	mkdir("/dev", 0755);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
}

/* Busybox (x86 guests only) provides the shell tools/okprobe-load needs. */
static void install_busybox(void)
{
	pid_t child;

	if (!exists("/bin/busybox"))
		return;
	child = fork();
	if (child == 0) {
		execl("/bin/busybox", "busybox", "--install", "-s", "/bin",
		      (char *)NULL);
		_exit(127);
	}
	if (child > 0)
		waitpid(child, NULL, 0);
}

/*
 * KTAP for a run that cannot start on this machine: kselftest's "skip"
 * exit status, and the reason.
 */
static int machine_skip(const char *format, ...)
{
	char reason[512];
	va_list args;

	va_start(args, format);
	vsnprintf(reason, sizeof(reason), format, args);
	va_end(args);
	say("TAP version 13");
	say("1..0 # SKIP %s", reason);
	return KSFT_SKIP;
}

/*
 * On a machine: the installed modules, the running kernel, nothing of
 * the machine's changed beyond what the tests themselves undo.
 */
static int machine_main(int argc, char **argv)
{
	const char *modules = getenv("OKPROBE_MODULES");
	struct utsname kernel;

	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: %s [SUITE]  (as root; default okprobe)\n",
			argv[0]);
		return 2;
	}
	if (geteuid() != 0)
		return machine_skip("okptest loads kernel modules: run it as root");
	uname(&kernel);
	if (modules)
		snprintf(module_root, sizeof(module_root), "%s", modules);
	else
		snprintf(module_root, sizeof(module_root),
			 "/lib/modules/%s/extra", kernel.release);
	find_modules();
	if (!exists(OKPROBE_KO))
		return machine_skip("no okprobe.ko under %s: run make install first (or set OKPROBE_MODULES)",
				    module_root);
	if (module_loaded("okprobe"))
		return machine_skip("okprobe is loaded: the suite loads and unloads it itself; unload it and its clients first");
	mount_if_needed("debugfs", "/sys/kernel/debug");
	mount_tracefs_if_needed();
	run_suite(argc == 2 ? argv[1] : "okprobe", argv);
	return KSFT_FAIL; /* not reached */
}

/*
 * PID 1 of a test guest: the suite runs in a child (the harness exits when
 * done, and PID 1 must not), then the guest powers off.
 */
static int guest_main(char **argv)
{
	const char *wanted = getenv("okptest");
	pid_t child;

	guest_init = 1;
	mount_filesystems();
	install_busybox();
	setenv("PATH", "/bin:/sbin", 1);
	if (!wanted)
		wanted = "okprobe";
	child = fork();
	if (child == 0) {
		/*
		 * The okprobe suite (machine) or one of its parts
		 * (machine-essentials, ...) as on a machine, from the
		 * installed tree.
		 */
		if (!strcmp(wanted, "machine"))
			execl("/init", "okptest", (char *)NULL);
		else if (!strncmp(wanted, "machine-", 8))
			execl("/init", "okptest", wanted + 8, (char *)NULL);
		else
			run_suite(wanted, argv);
		_exit(127);
	}
	if (child > 0)
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
	say("# okptest: done");
	sync();
	reboot(RB_POWER_OFF);
	return 0;
}

int main(int argc, char **argv)
{
	if (getpid() == 1)
		return guest_main(argv);
	return machine_main(argc, argv);
}
