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
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/reboot.h>
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
 * harness's line for the test itself.
 */
static void report_subtests(const int *failed, const char *const *names,
			    const char *const *details, int count)
{
	int i;

	say("    KTAP version 1");
	say("    1..%d", count);
	for (i = 0; i < count; i++) {
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
	if (ret)
		return ret;
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
	CHECK(read_long(GONE_PARAMS "init_result") == -EINVAL,
	      "registering on freed init text returned %ld, not -EINVAL",
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

static int cover_steps(void)
{
	const long expected[COVER_BLOCKS] = { 3, 3, 2, 1, 0 };
	unsigned long target = module_symbol_address("okp_cover_target");
	long hits[COVER_BLOCKS];
	char command[64], states[1024], line[512];
	int blocks, reached, i, ret;

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
	STEP(cover_read(hits, &blocks, &reached, states, sizeof(states)));
	for (i = 0; i < COVER_BLOCKS; i++)
		CHECK(hits[i] == 0, "before any call: %s", states);
	CHECK(list_line("okp_cover_target", line, sizeof(line)) &&
	      strstr(line, "[COUNTER]"), "okprobe/list shows '%s'", line);
	CHECK(!write_file(TARGET_PARAMS "cover", "5"), "calling the target");
	CHECK(!write_file(TARGET_PARAMS "cover", "5"), "calling the target");
	CHECK(!write_file(TARGET_PARAMS "cover", "20"), "calling the target");
	STEP(cover_read(hits, &blocks, &reached, states, sizeof(states)));
	for (i = 0; i < COVER_BLOCKS; i++)
		CHECK(hits[i] == expected[i],
		      "block %d counted %ld, not %ld: %s", i, hits[i],
		      expected[i], states);
	CHECK(blocks == COVER_BLOCKS && reached == 4,
	      "blocks=%d reached=%d, not 5 and 4: %s", blocks, reached,
	      states);
	say("# okp_cover_target: %s", states);
	CHECK(!write_file(COVER_FILE, "clear"), "clear");
	CHECK(!list_line("okp_cover_target", line, sizeof(line)),
	      "list still shows '%s' after clear", line);
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

/* ---- The demo (make demo) ----------------------------------------------- */

/* Shows a file the way an operator would see it with cat. */
static int show(const char *path)
{
	static char text[8192];
	char *line;
	int ret = read_file(path, text, sizeof(text));

	CHECK(ret == 0, "reading %s: %s", path, strerror(-ret));
	say("# $ cat %s", path);
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		say("#   %s", line);
	return 0;
}

static int demo_step_load(void)
{
	STEP(load_okprobe(default_params));
	say("# $ insmod okprobe_sample.ko %s", sample_params);
	return load_module(SAMPLE_KO, sample_params) == 0 ? 0 :
	       fail("the sample client did not load");
}

static int demo_step_show(void)
{
	char line[512] = "", range[512];
	FILE *blacklist;
	int ranges = 0;

	STEP(show(SYSCTL_OPTIMIZATION));
	STEP(show(DEBUGFS_DIR "/enabled"));
	STEP(show(DEBUGFS_DIR "/list"));
	/*
	 * A stock kernel's blacklist runs to hundreds of ranges: its first
	 * lines show what a range is, a count the rest.
	 */
	blacklist = fopen(DEBUGFS_DIR "/blacklist", "re");
	CHECK(blacklist, "reading %s: %s", DEBUGFS_DIR "/blacklist",
	      strerror(errno));
	say("# $ head -n 15 %s", DEBUGFS_DIR "/blacklist");
	while (fgets(range, sizeof(range), blacklist)) {
		range[strcspn(range, "\n")] = '\0';
		if (++ranges <= 15)
			say("#   %s", range);
	}
	fclose(blacklist);
	if (ranges > 15)
		say("#   ... and %d more ranges (all of them: cat %s)",
		    ranges - 15, DEBUGFS_DIR "/blacklist");
	STEP(show(DEBUGFS_DIR "/jumps"));
	say("# (the optimizer turns the breakpoint into a jump: waiting for [OPTIMIZED] while reading)");
	CHECK(wait_listed_optimized(sample_where, line, sizeof(line)),
	      "the probe never showed [OPTIMIZED]: '%s'", line);
	STEP(show(DEBUGFS_DIR "/list"));
	STEP(show(DEBUGFS_DIR "/jumps"));
	say("# (reading /proc/self/stat 1000 times)");
	read_proc_repeatedly(1000);
	STEP(show(DEBUGFS_DIR "/list"));
	say("# $ sysctl debug.kprobes_optimization=0");
	CHECK(write_file(SYSCTL_OPTIMIZATION, "0") == 0, "writing the sysctl");
	STEP(show(DEBUGFS_DIR "/jumps"));
	say("# (reading /proc/self/stat 1000 times)");
	read_proc_repeatedly(1000);
	STEP(show(DEBUGFS_DIR "/list"));
	CHECK(list_line(sample_where, line, sizeof(line)) &&
	      !strstr(line, "[OPTIMIZED]"), "still optimized: '%s'", line);
	say("# $ sysctl debug.kprobes_optimization=1");
	CHECK(write_file(SYSCTL_OPTIMIZATION, "1") == 0, "writing the sysctl");
	return 0;
}

#define DEMO_EVENT TRACING "/events/demo/read"

/*
 * An operator's session with okprobe_events: a probe on ksys_read with
 * fetch arguments, its events from trace_pipe, a hist trigger's table
 * (where the kernel has hist triggers), its hits, its removal.
 */
static int demo_step_events(void)
{
	static char text[8192];
	char *line;
	int fd, got, shown = 0;

	mount_tracefs_if_needed();
	if (!exists(OKPROBE_EVENTS))
		return skip("this kernel has no okprobe_events (CONFIG_DYNAMIC_EVENTS)");
	say("# $ echo 'p:demo/read ksys_read fd=$arg1 count=$arg3:u64 comm=$comm' >> %s",
	    OKPROBE_EVENTS);
	CHECK(write_file(OKPROBE_EVENTS,
			 "p:demo/read ksys_read fd=$arg1 count=$arg3:u64 comm=$comm") == 0,
	      "defining demo/read");
	STEP(show(OKPROBE_EVENTS));
	clear_file(TRACING "/trace");
	say("# $ echo 1 > %s/enable", DEMO_EVENT);
	CHECK(write_file(DEMO_EVENT "/enable", "1") == 0, "enabling demo/read");
	if (exists(DEMO_EVENT "/hist")) {
		say("# $ echo 'hist:keys=comm:vals=count:sort=count.descending' > %s/trigger",
		    DEMO_EVENT);
		CHECK(write_file(DEMO_EVENT "/trigger",
				 "hist:keys=comm:vals=count:sort=count.descending") == 0,
		      "a hist trigger on demo/read");
	}
	say("# (reading /proc/self/stat 200 times)");
	read_proc_repeatedly(200);
	say("# $ head -5 %s/trace_pipe", TRACING);
	fd = open(TRACING "/trace_pipe", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	CHECK(fd >= 0, "opening trace_pipe: %s", strerror(errno));
	got = read(fd, text, sizeof(text) - 1);
	close(fd);
	CHECK(got > 0, "nothing in trace_pipe");
	text[got] = '\0';
	for (line = strtok(text, "\n"); line && shown < 5; line = strtok(NULL, "\n"))
		if (strstr(line, " read: (")) {
			say("#   %s", line);
			shown++;
		}
	CHECK(shown == 5, "only %d demo/read events in trace_pipe", shown);
	if (exists(DEMO_EVENT "/hist")) {
		STEP(show(DEMO_EVENT "/hist"));
		write_file(DEMO_EVENT "/trigger",
			   "!hist:keys=comm:vals=count:sort=count.descending");
	}
	CHECK(write_file(DEMO_EVENT "/enable", "0") == 0, "disabling demo/read");
	STEP(show(TRACING "/okprobe_profile"));
	say("# $ echo '-:demo/read' >> %s", OKPROBE_EVENTS);
	CHECK(write_file(OKPROBE_EVENTS, "-:demo/read") == 0, "removing demo/read");
	CHECK(!exists(DEMO_EVENT), "events/demo/read is still there");
	say("# (okprobe_events is empty again; events/demo/ is gone)");
	return 0;
}

/* okprobe-cover's demo: kernel functions of the read path, and reads. */
#define DEMO_COVER_ARGS "vfs_read rw_verify_area seq_read_iter -- sh -c 'for i in $(seq 300); do cat /proc/self/stat; done > /dev/null'"
static const char *const demo_covered[] = { "vfs_read", "rw_verify_area",
					    "seq_read_iter" };

/*
 * okprobe-cover on a few kernel functions while a workload reads
 * /proc/self/stat: with the tool where the guest has a shell (x86), through
 * debugfs okprobe/cover otherwise (riscv's guests have no busybox).
 */
static int demo_step_cover(void)
{
	static char output[16384];
	char command[96];
	size_t i;
	int status;

	if (exists(COVER_TOOL)) {
		status = run_shown("okprobe-cover " DEMO_COVER_ARGS,
				   "sh " COVER_TOOL " " DEMO_COVER_ARGS " 2>&1",
				   output, sizeof(output));
		CHECK(status == 0, "okprobe-cover exited with %d", status);
		CHECK(strstr(output, "total: ") && !strstr(output, "total: 0 of"),
		      "okprobe-cover reported no block reached");
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(demo_covered); i++) {
		snprintf(command, sizeof(command), "add 0x%lx",
			 kallsyms_address(demo_covered[i]));
		say("# $ echo add %s > %s", demo_covered[i], COVER_FILE);
		CHECK(!write_file(COVER_FILE, command), "%s (%s)", command,
		      demo_covered[i]);
	}
	say("# (reading /proc/self/stat 300 times)");
	read_proc_repeatedly(300);
	STEP(show(COVER_FILE));
	say("# $ echo clear > %s", COVER_FILE);
	CHECK(!write_file(COVER_FILE, "clear"), "clear");
	return 0;
}

static int demo_step_unload(void)
{
	CHECK(unload_module("okprobe_sample") == 0, "unloading the sample");
	return unload_okprobe();
}

/* ---- The benchmark (make bench) ------------------------------------------ */

/*
 * Per-hit cost of probes on the same instructions (+0 of each of
 * okprobe_bench.ko's targets), every configuration on every target
 * measured in each round, the rounds interleaved, medians reported. Prints
 * the table as "# bench: " lines for tools/bench; each sample also as a
 * "# sample: " line. Then the coverage of a sample of kernel instructions
 * ("# coverage: " lines; x86 only so far). Fails only when the run is
 * broken (a module does not load, a hit count is wrong), never on speed.
 */
#define BENCH_KO module_path("okprobe_bench.ko")
/* Only test guests have it (tools/bench puts it there). */
#define BENCH_SITES "/lib/okprobe/bench-sites.txt"
#define BENCH_CONTROL "/sys/kernel/debug/okprobe_bench/control"
#define KPROBES_LIST "/sys/kernel/debug/kprobes/list"
#define KERNEL_OPTIMIZATION "/proc/sys/debug/kprobes-optimization"
#define BENCH_MAX_ROUNDS 51
/* How long to wait for an optimizer to put a jump in. */
#define BENCH_OPTIMIZER_WAIT_MS 10000

/* An instruction every configuration probes: +0 of a function of the module. */
struct bench_target {
	const char *name;		/* the function, and okprobe_bench.ko's name */
	const char *instruction;	/* for the table */
	/* A function's entry (configurations BENCH_ON_ENTRY), not an instruction. */
	int entry;
};

static const struct bench_target bench_targets[] = {
#ifdef __x86_64__
	{ "okp_bench_target", "mov %rdi,%rax, 3 bytes (int3)", 0 },
#else
	{ "okp_bench_target", "addi t0,a0,2, 4 bytes (ebreak)", 0 },
	{ "okp_bench_target_c", "c.mv t0,a0, 2 bytes (c.ebreak)", 0 },
#endif
	{ "okp_bench_entry", "a C function's entry, its ftrace call site", 1 },
};

/* Which targets a configuration measures. */
enum { BENCH_ON_ALL, BENCH_ON_INSTRUCTION, BENCH_ON_ENTRY };

struct bench_config {
	const char *label;		/* the table's */
	const char *arm;		/* okprobe_bench.ko's */
	/* debug.kprobes-optimization; NULL where the kernel has no optprobes */
	const char *kernel_optimization;
	const char *okprobe_optimization;	/* debug.kprobes_optimization */
	int optimized;			/* measured only once the jump is in */
	int on;				/* BENCH_ON_* */
	/* The kernel may refuse it (no kprobes on ftrace): a row, not a failure. */
	int may_refuse;
	/*
	 * A trace event defined in this file (kprobe_events or
	 * okprobe_events) instead of a probe of okprobe_bench.ko's: the
	 * module runs the calls unprobed, the event's profile counts them.
	 */
	const char *event_file;
};

/*
 * The first configuration is the baseline. Every row sets both sysctls, the
 * other mechanism's to 0. riscv 6.1 has no optprobes (nor
 * debug.kprobes-optimization) and never boosts its kprobes.
 */
#ifdef __x86_64__
#define BENCH_KERNEL_OFF "0"
#define BENCH_KERNEL_ON "1"
#else
#define BENCH_KERNEL_OFF NULL
#define BENCH_KERNEL_ON NULL
#endif
/*
 * okprobe at a function's entry: through ftrace on x86 (no jump to wait
 * for), past the call site on riscv 6.12, where the jump is awaited.
 */
#define BENCH_ENTRY_JUMP (!IS_X86)

static const struct bench_config bench_configs[] = {
	{ .label = "no probe", .arm = "none",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "0" },
#ifdef __x86_64__
	{ .label = "kernel kprobe, optimization 0", .arm = "kprobe",
	  .kernel_optimization = "0", .okprobe_optimization = "0",
	  .on = BENCH_ON_INSTRUCTION },
	{ .label = "kernel kprobe, optimization 1", .arm = "kprobe",
	  .kernel_optimization = "1", .okprobe_optimization = "0",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION },
#else
	{ .label = "kernel kprobe", .arm = "kprobe",
	  .okprobe_optimization = "0", .on = BENCH_ON_INSTRUCTION },
#endif
	{ .label = "okprobe, post_handler (unboosted)", .arm = "okprobe-post",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "0",
	  .on = BENCH_ON_INSTRUCTION },
	{ .label = "okprobe, pre_handler (boosted)", .arm = "okprobe-pre",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "0",
	  .on = BENCH_ON_INSTRUCTION },
	{ .label = "okprobe, pre_handler, optimization 1", .arm = "okprobe-pre",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION },
	{ .label = "okprobe counter, optimization 1", .arm = "okprobe-count",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION },
#ifdef __x86_64__
	{ .label = "kernel kretprobe, optimization 0", .arm = "kretprobe",
	  .kernel_optimization = "0", .okprobe_optimization = "0",
	  .on = BENCH_ON_INSTRUCTION },
	{ .label = "kernel kretprobe, optimization 1", .arm = "kretprobe",
	  .kernel_optimization = "1", .okprobe_optimization = "0",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION },
#else
	{ .label = "kernel kretprobe", .arm = "kretprobe",
	  .okprobe_optimization = "0", .on = BENCH_ON_INSTRUCTION },
#endif
	/*
	 * Without entry_handler: at the function's exits where okprobe can
	 * prove them and a jump fits at each; the same probe told to hook
	 * the return address
	 * (OKPROBE_FLAG_RETURN_RETHOOK), as one with an entry_handler does.
	 */
	{ .label = "okretprobe, optimization 1", .arm = "okretprobe",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION },
	{ .label = "okretprobe with rethook, optimization 1",
	  .arm = "okretprobe-rethook",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = 1, .on = BENCH_ON_INSTRUCTION },
	{ .label = "a module's bare ftrace_ops (the floor)", .arm = "ftrace-ops",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "0",
	  .on = BENCH_ON_ENTRY, .may_refuse = 1 },
	{ .label = "kernel kprobe at +0", .arm = "kprobe",
	  .kernel_optimization = BENCH_KERNEL_ON, .okprobe_optimization = "0",
	  .on = BENCH_ON_ENTRY, .may_refuse = 1 },
	{ .label = "okprobe at +0", .arm = "okprobe-pre",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = BENCH_ENTRY_JUMP, .on = BENCH_ON_ENTRY },
	{ .label = "kernel kretprobe: entry and return", .arm = "kretprobe",
	  .kernel_optimization = BENCH_KERNEL_ON, .okprobe_optimization = "0",
	  .on = BENCH_ON_ENTRY, .may_refuse = 1 },
	{ .label = "okretprobe: entry and return", .arm = "okretprobe",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = 1, .on = BENCH_ON_ENTRY },
	{ .label = "okretprobe with rethook: entry and return",
	  .arm = "okretprobe-rethook",
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = BENCH_ENTRY_JUMP, .on = BENCH_ON_ENTRY },
	{ .label = "kernel kprobe event at +0 (arg, comm)", .arm = "kprobe-event",
	  .event_file = KPROBE_EVENTS,
	  .kernel_optimization = BENCH_KERNEL_ON, .okprobe_optimization = "0",
	  .on = BENCH_ON_ENTRY, .may_refuse = 1 },
	{ .label = "okprobe_events event at +0 (arg, comm)", .arm = "okprobe-event",
	  .event_file = OKPROBE_EVENTS,
	  .kernel_optimization = BENCH_KERNEL_OFF, .okprobe_optimization = "1",
	  .optimized = BENCH_ENTRY_JUMP, .on = BENCH_ON_ENTRY },
};

/* The event a configuration defines: okpbench/kern or okpbench/okp. */
static const char *bench_event_name(const struct bench_config *c)
{
	return strcmp(c->event_file, KPROBE_EVENTS) ? "okp" : "kern";
}

/* Defines and enables c's event on target; 0 or -errno. */
static int bench_event_define(const struct bench_config *c,
			      const char *target)
{
	char line[160], path[160];
	int ret;

	mount_tracefs_if_needed();
	snprintf(line, sizeof(line), "p:okpbench/%s %s arg=$arg1:u64 comm=$comm",
		 bench_event_name(c), target);
	ret = write_file(c->event_file, line);
	snprintf(path, sizeof(path), TRACING "/events/okpbench/%s/enable",
		 bench_event_name(c));
	if (!ret)
		ret = write_file(path, "1");
	return ret;
}

/* Disables and removes c's event: its hits (its profile's), or -1. */
static long bench_event_remove(const struct bench_config *c)
{
	static char profile[1 << 14];
	char path[160], name[64], *line;
	long hits = -1, count;

	snprintf(path, sizeof(path), TRACING "/events/okpbench/%s/enable",
		 bench_event_name(c));
	write_file(path, "0");
	if (!read_file(strcmp(c->event_file, KPROBE_EVENTS) ?
		       TRACING "/okprobe_profile" : TRACING "/kprobe_profile",
		       profile, sizeof(profile)))
		for (line = strtok(profile, "\n"); line;
		     line = strtok(NULL, "\n"))
			if (sscanf(line, "%63s %ld", name, &count) == 2 &&
			    !strcmp(name, bench_event_name(c)))
				hits = count;
	snprintf(path, sizeof(path), "-:okpbench/%s", bench_event_name(c));
	write_file(c->event_file, path);
	return hits;
}

#define BENCH_CONFIGS ARRAY_SIZE(bench_configs)
#define BENCH_ROWS (ARRAY_SIZE(bench_targets) * BENCH_CONFIGS)

/* One configuration on one target: a row of the table. */
struct bench_row {
	const struct bench_target *target;
	const struct bench_config *config;
	double ns_per_call[BENCH_MAX_ROUNDS];
	int traps;			/* breakpoint traps per hit */
	int optimized_rounds;		/* the jump was in for the whole run */
	int gave_up_waiting;		/* not optimized within the wait */
	int wrong_rounds;		/* hits != calls, misses, bad results */
	char wrong[160];		/* the first wrong run */
	char listed[256];		/* its kprobes/list or jumps line, round 0 */
	/* okprobe/jumps' reason when it refused the jump: not measured */
	char refused[160];
	/* Arming it was refused (a may_refuse configuration): not measured. */
	int arm_refused;
};

/* Target by target, in the order of bench_configs. */
static struct bench_row bench_rows[BENCH_ROWS];

/* Overridable from the kernel command line: bench_calls=, bench_rounds=. */
static unsigned long bench_calls = 100000;
static int bench_rounds = 21;
/* From okprobe_bench.ko: the kernel has CONFIG_PREEMPTION. */
static int bench_preemption = -1;
/* From okprobe_bench.ko: its batches run with interrupts off. */
static int bench_irqs_off;
/* What each kprobes-optimization sysctl was last set to. */
static char bench_kernel_optimization[4], bench_okprobe_optimization[4];

static long long now_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec * 1000LL + now.tv_nsec / 1000000;
}

/*
 * Sets a sysctl unless it already has value (last, what it was set to).
 * The kernel logs a line whenever its kprobes-optimization changes,
 * straight to the serial port: let the console finish our lines first, or
 * the message lands inside one.
 */
static int bench_set_sysctl(const char *path, char *last, const char *value)
{
	int ret;

	if (!strcmp(last, value))
		return 0;
	tcdrain(1);
	ret = write_file(path, value);
	if (!ret)
		snprintf(last, 4, "%s", value);
	return ret;
}

static int bench_set_optimization(const struct bench_config *c)
{
	int ret = 0;

	if (c->kernel_optimization)
		ret = bench_set_sysctl(KERNEL_OPTIMIZATION,
				       bench_kernel_optimization,
				       c->kernel_optimization);
	CHECK(ret == 0, "writing %s to %s: %s", c->kernel_optimization,
	      KERNEL_OPTIMIZATION, strerror(-ret));
	ret = bench_set_sysctl(SYSCTL_OPTIMIZATION, bench_okprobe_optimization,
			       c->okprobe_optimization);
	CHECK(ret == 0, "writing %s to %s: %s", c->okprobe_optimization,
	      SYSCTL_OPTIMIZATION, strerror(-ret));
	return 0;
}

/* Writes a command to okprobe_bench.ko, reads its reply; 0 or -errno. */
static int bench_command(const char *command, char *reply, size_t size)
{
	int ret = write_file(BENCH_CONTROL, command);

	if (ret)
		return ret;
	return read_file(BENCH_CONTROL, reply, size);
}

static int bench_is_kernel(const struct bench_row *row)
{
	return !strcmp(row->config->arm, "kprobe") ||
	       !strcmp(row->config->arm, "kretprobe");
}

/* Whether row's configuration measures row's target. */
static int bench_applies(const struct bench_row *row)
{
	switch (row->config->on) {
	case BENCH_ON_INSTRUCTION:
		return !row->target->entry;
	case BENCH_ON_ENTRY:
		return row->target->entry;
	default:
		return 1;
	}
}

/*
 * Where the probe of row is listed: kprobes/list ("name+0x0 ") or
 * okprobe/jumps ("name+0x0/size"); "name+0x" tells the targets apart, and
 * a row arms one probe. Its offset is not the row's to guess: both put a
 * +0 probe past an endbr64 (+0x4), which an IBT kernel's C functions
 * start with, its assembly ones up to 6.x too (SYM_FUNC_START), 7.x's not;
 * an entry's probe may sit on the call site or past it.
 */
static void bench_listed_line(const struct bench_row *row, char *line,
			      size_t size)
{
	char needle[96];

	snprintf(needle, sizeof(needle), "%s+0x", row->target->name);
	file_line(bench_is_kernel(row) ? KPROBES_LIST :
			DEBUGFS_DIR "/jumps", needle, line, size);
}

/*
 * Waits up to BENCH_OPTIMIZER_WAIT_MS for the armed probe's jump: for the
 * kernel, kprobes/list says [OPTIMIZED] (set when the probe is queued) and
 * the jmp is in the text (the optimizer ran); for okprobe,
 * OKPROBE_FLAG_OPTIMIZED; for an okprobe_events event, okprobe/jumps says
 * "optimized". 1 once it is, 0 after a note (and no more
 * waiting for row in later rounds). okprobe/jumps' "breakpoint: why" is a
 * refusal, not a wait: it is kept in row->refused at once.
 */
static int bench_wait_optimized(struct bench_row *row)
{
	long long deadline = now_ms() + BENCH_OPTIMIZER_WAIT_MS;
	int kernel = bench_is_kernel(row);
	/* An event's probe is okprobe_events', not the bench module's. */
	int event = row->config->event_file != NULL;
	char line[256], reply[128], *refusal;

	for (;;) {
		bench_listed_line(row, line, sizeof(line));
		if (event ? strstr(line, "  optimized ") != NULL :
			    bench_command("state", reply, sizeof(reply)) == 0 &&
				    strstr(reply, "optimized=1") &&
				    (!kernel || strstr(line, "[OPTIMIZED]")))
			return 1;
		refusal = kernel ? NULL : strstr(line, "  breakpoint: ");
		if (refusal) {
			snprintf(row->refused, sizeof(row->refused), "%s",
				 refusal + strlen("  breakpoint: "));
			return 0;
		}
		if (row->gave_up_waiting || now_ms() > deadline)
			break;
		usleep(20000);
	}
	if (!row->gave_up_waiting)
		say("# bench: note: %s, %s: not optimized within %d s: %s",
		    row->target->name, row->config->label,
		    BENCH_OPTIMIZER_WAIT_MS / 1000, line);
	row->gave_up_waiting = 1;
	return 0;
}

/* One sample of row: arm, run calls, disarm. */
static int bench_sample(struct bench_row *row, unsigned long calls, int round)
{
	const struct bench_config *c = row->config;
	const char *module_arm = c->event_file ? "none" : c->arm;
	unsigned long got_calls, hits, missed, bad;
	char command[128], reply[256], jump[16], event_jump[256];
	unsigned long long ns;
	long event_hits = 0;
	int ret, traps, wrong;

	STEP(bench_set_optimization(c));
	if (c->event_file) {
		ret = bench_event_define(c, row->target->name);
		if (ret) {
			bench_event_remove(c);
			if (c->may_refuse) {
				row->arm_refused = 1;
				snprintf(row->refused, sizeof(row->refused),
					 "refused here: %s", strerror(-ret));
				return 0;
			}
		}
		CHECK(ret == 0, "the %s event on %s: %s", bench_event_name(c),
		      row->target->name, strerror(-ret));
	}
	snprintf(command, sizeof(command), "arm %s %s", module_arm,
		 row->target->name);
	ret = bench_command(command, reply, sizeof(reply));
	/* Without rethook (riscv 6.1) okprobe has no return probes. */
	if (ret == -EOPNOTSUPP && !strncmp(module_arm, "okretprobe", 10) &&
	    !kallsyms_address("rethook_hook")) {
		row->arm_refused = 1;
		snprintf(row->refused, sizeof(row->refused),
			 "refused here: %s (no rethook in this kernel)",
			 strerror(-ret));
		return 0;
	}
	if (ret && c->may_refuse) {
		row->arm_refused = 1;
		snprintf(row->refused, sizeof(row->refused),
			 "refused here: %s%s", strerror(-ret),
			 bench_is_kernel(row) &&
			 !kallsyms_address("kprobe_ftrace_handler") ?
			 " (no kprobes on ftrace: not at a traced function's call site)" :
			 "");
		return 0;
	}
	CHECK(ret == 0, "%s: %s", command, strerror(-ret));
	CHECK(sscanf(reply, "%*s armed traps=%d preemption=%d irqs_off=%d",
		     &traps, &bench_preemption, &bench_irqs_off) == 3,
	      "%s replied '%s'", command, reply);
	if (c->optimized && !bench_wait_optimized(row) && row->refused[0]) {
		/* Nothing to measure: it would be the boosted row again. */
		write_file(BENCH_CONTROL, "disarm");
		return 0;
	}
	if (round == 0 && strcmp(module_arm, "none"))
		bench_listed_line(row, row->listed, sizeof(row->listed));
	snprintf(command, sizeof(command), "run %lu", calls);
	ret = bench_command(command, reply, sizeof(reply));
	/*
	 * An event's probe is okprobe_events': its jump, if any, was in
	 * for the run if it is still in now (okprobe/jumps).
	 */
	event_jump[0] = '\0';
	if (c->event_file && c->optimized)
		bench_listed_line(row, event_jump, sizeof(event_jump));
	if (ret == 0)
		ret = write_file(BENCH_CONTROL, "disarm");
	else
		write_file(BENCH_CONTROL, "disarm");
	if (c->event_file)
		event_hits = bench_event_remove(c);
	CHECK(ret == 0, "%s (%s %s): %s", command, c->arm, row->target->name,
	      strerror(-ret));
	reply[strcspn(reply, "\n")] = '\0';
	CHECK(sscanf(reply, "%*s calls=%lu ns=%llu hits=%lu missed=%lu bad=%lu traps=%d jump=%15s",
		     &got_calls, &ns, &hits, &missed, &bad, &traps, jump) == 7,
	      "run replied '%s'", reply);
	say("# sample: round %d %s, %s: %s", round, row->target->name,
	    c->label, reply);
	if (round < 0)
		return 0;	/* warm-up */
	row->ns_per_call[round] = (double)ns / got_calls;
	row->traps = traps;
	row->optimized_rounds += c->event_file ?
		strstr(event_jump, "  optimized ") != NULL :
		!strcmp(jump, "throughout");
	/* With its sysctl at 0 a probe must never be optimized. */
	wrong = got_calls != calls || missed || bad ||
		hits != (strcmp(module_arm, "none") ? calls : 0) ||
		(c->event_file && event_hits != (long)calls) ||
		(!c->optimized && strcmp(jump, "none"));
	if (wrong && !row->wrong_rounds++)
		snprintf(row->wrong, sizeof(row->wrong),
			 "round %d: %lu calls, %lu hits, %lu missed, %lu wrong results, jump %s, event hits %ld",
			 round, got_calls, hits, missed, bad, jump, event_hits);
	return 0;
}

static int bench_compare(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The value at quantile numerator/4 of count values (nearest rank). */
static double bench_quartile(const double *values, int count, int numerator)
{
	double sorted[BENCH_MAX_ROUNDS];

	memcpy(sorted, values, count * sizeof(*values));
	qsort(sorted, count, sizeof(*sorted), bench_compare);
	if (numerator == 2 && count % 2 == 0)
		return (sorted[count / 2 - 1] + sorted[count / 2]) / 2;
	return sorted[numerator * (count - 1) / 4];
}

static double bench_median(const double *values, int count)
{
	return bench_quartile(values, count, 2);
}

/* The row of the same target as row with configuration config. */
static const struct bench_row *bench_row_of(const struct bench_row *row,
					    const struct bench_config *config)
{
	size_t target = (row - bench_rows) / BENCH_CONFIGS;

	return &bench_rows[target * BENCH_CONFIGS + (config - bench_configs)];
}

/* The target's row whose configuration arms arm, optimized or not; or NULL. */
static const struct bench_row *bench_find(const struct bench_row *row,
					  const char *arm, int optimized)
{
	size_t i;

	for (i = 0; i < BENCH_CONFIGS; i++) {
		const struct bench_row *found =
			bench_row_of(row, &bench_configs[i]);

		if (!strcmp(bench_configs[i].arm, arm) &&
		    bench_configs[i].optimized == optimized &&
		    bench_applies(found))
			return found;
	}
	return NULL;
}

/*
 * Median over the rounds of (row's ns/call - its target's no-probe
 * ns/call): ns per hit.
 */
static double bench_ns_per_hit(const struct bench_row *row)
{
	const struct bench_row *none = bench_row_of(row, &bench_configs[0]);
	double differences[BENCH_MAX_ROUNDS];
	int round;

	for (round = 0; round < bench_rounds; round++)
		differences[round] = row->ns_per_call[round] -
				     none->ns_per_call[round];
	return bench_median(differences, bench_rounds);
}

/* " [OPTIMIZED]" when every round of an optimized row had its jump. */
static const char *bench_optimized_label(const struct bench_row *row)
{
	if (!row->config->optimized)
		return "";
	if (row->optimized_rounds == bench_rounds)
		return " [OPTIMIZED]";
	return row->optimized_rounds ? " [OPTIMIZED some rounds]" :
	       " (not optimized)";
}

static void bench_print_row(const struct bench_row *row, double kprobe)
{
	const struct bench_row *none = bench_row_of(row, &bench_configs[0]);
	double per_call, spread;
	char hit[16], ratio[16], label[80];

	if (row->refused[0]) {
		say("# bench: %-50s %s%s", row->config->label,
		    row->arm_refused ? "" : "not optimized: ", row->refused);
		say("# hit: %s|%s|-|-|-|%s%s", row->target->name,
		    row->config->label, row->arm_refused ? "" : "not optimized: ",
		    row->refused);
		return;
	}
	per_call = bench_median(row->ns_per_call, bench_rounds);
	spread = bench_quartile(row->ns_per_call, bench_rounds, 3) -
		 bench_quartile(row->ns_per_call, bench_rounds, 1);
	snprintf(label, sizeof(label), "%s%s", row->config->label,
		 bench_optimized_label(row));
	if (row == none) {
		snprintf(hit, sizeof(hit), "-");
		snprintf(ratio, sizeof(ratio), "-");
	} else {
		snprintf(hit, sizeof(hit), "%.1f", bench_ns_per_hit(row));
		if (kprobe > 0)
			snprintf(ratio, sizeof(ratio), "%.2f",
				 bench_ns_per_hit(row) / kprobe);
		else
			snprintf(ratio, sizeof(ratio), "-");
	}
	say("# bench: %-50s %5d %9.1f %8s %9s %5.0f%% %s", label, row->traps,
	    per_call, hit, ratio, per_call > 0 ? 100 * spread / per_call : 0,
	    row->wrong_rounds ? "WRONG" : "ok");
	/* The same row for tools/bench, which puts runs side by side. */
	say("# hit: %s|%s|%d|%.2f|%s|%s", row->target->name, label, row->traps,
	    per_call, hit, row->wrong_rounds ? "WRONG" : "ok");
}

/* Under the rows of a target: okprobe's jump against the kernel's. */
/* A ratio line of two rows of a target, when both were measured. */
static void bench_print_ratio(const char *what, const struct bench_row *ours,
			      const struct bench_row *kernel)
{
	if (!ours || !kernel || ours->refused[0] || kernel->refused[0] ||
	    bench_ns_per_hit(kernel) <= 0)
		return;
	say("# bench: %s (ns/hit): %.2f", what,
	    bench_ns_per_hit(ours) / bench_ns_per_hit(kernel));
}

static void bench_print_optimized_ratio(const struct bench_row *row)
{
	if (!row->target->entry) {
		bench_print_ratio("okretprobe optimized vs the kernel's kretprobe through a breakpoint",
				  bench_find(row, "okretprobe", 1),
				  bench_find(row, "kretprobe", 0));
		bench_print_ratio("okretprobe optimized vs the kernel's kretprobe optimized",
				  bench_find(row, "okretprobe", 1),
				  bench_find(row, "kretprobe", 1));
		bench_print_ratio("okretprobe with rethook vs the kernel's kretprobe optimized",
				  bench_find(row, "okretprobe-rethook", 1),
				  bench_find(row, "kretprobe", 1));
	}
	if (row->target->entry) {
		bench_print_ratio("okprobe at +0 vs the kernel's kprobe at +0",
				  bench_find(row, "okprobe-pre",
					     BENCH_ENTRY_JUMP),
				  bench_find(row, "kprobe", 0));
		bench_print_ratio("okretprobe vs the kernel's kretprobe, entry and return",
				  bench_find(row, "okretprobe", 1),
				  bench_find(row, "kretprobe", 0));
		bench_print_ratio("okretprobe with rethook vs the kernel's kretprobe, entry and return",
				  bench_find(row, "okretprobe-rethook",
					     BENCH_ENTRY_JUMP),
				  bench_find(row, "kretprobe", 0));
		bench_print_ratio("okprobe_events event vs the kernel's kprobe event, same line",
				  bench_find(row, "okprobe-event",
					     BENCH_ENTRY_JUMP),
				  bench_find(row, "kprobe-event", 0));
		return;
	}
	const struct bench_row *kernel = bench_find(row, "kprobe", 1);
	const struct bench_row *ours = bench_find(row, "okprobe-pre", 1);

	if (!kernel || !ours || ours->refused[0])
		return;
	say("# bench: okprobe optimized vs kernel optprobe (ns/hit): %.2f%s",
	    bench_ns_per_hit(kernel) > 0 ?
	    bench_ns_per_hit(ours) / bench_ns_per_hit(kernel) : 0,
	    kernel->optimized_rounds == bench_rounds &&
	    ours->optimized_rounds == bench_rounds ? "" :
	    " (not both optimized in every round: see above)");
}

static void bench_print_table(void)
{
	const struct bench_row *row, *reference;
	size_t i;

	say("# bench: batches %s", bench_irqs_off ?
	    "with preemption and interrupts off (the kernel traces irq flags)" :
	    "with preemption off");
	say("# bench: %-50s %5s %9s %8s %9s %6s %s", "configuration", "traps",
	    "ns/call", "ns/hit", "vs kprobe", "IQR", "hits");
	for (row = bench_rows; row < bench_rows + BENCH_ROWS;
	     row += BENCH_CONFIGS) {
		reference = bench_find(row, "kprobe", 0);
		say("# bench: %s+0: %s", row->target->name,
		    row->target->instruction);
		for (i = 0; i < BENCH_CONFIGS; i++)
			if (bench_applies(&row[i]))
				bench_print_row(&row[i],
						reference && !reference->refused[0] ?
						bench_ns_per_hit(reference) : 0);
		bench_print_optimized_ratio(row);
	}
	for (row = bench_rows; row < bench_rows + BENCH_ROWS; row++) {
		if (!bench_applies(row))
			continue;
		if (row->wrong_rounds)
			say("# bench: WRONG %s, %s in %d rounds, first %s",
			    row->target->name, row->config->label,
			    row->wrong_rounds, row->wrong);
		if (row->listed[0])
			say("# bench: %s, %s, %s: %s",
			    bench_is_kernel(row) ? "kprobes/list" :
			    "okprobe/jumps", row->target->name,
			    row->config->label, row->listed);
	}
	reference = bench_find(bench_rows, "kprobe", 0);
	if (IS_X86 && reference->traps == 2 && bench_preemption == 1)
		say("# bench: the kernel kprobe takes 2 traps per hit: CONFIG_PREEMPTION compiles kprobes' boosting out");
	if (!IS_X86)
		say("# bench: riscv kprobes never boost: an instruction they single-step takes 2 traps per hit");
	tcdrain(1);
}

/*
 * For tools/trace-hit: the text symbols of okprobe's modules, so that a
 * trace of single-stepped hits names them; then a pause in which the host
 * puts its breakpoint on the bench target before the first row runs.
 */
static void bench_print_module_symbols(void)
{
	FILE *kallsyms = fopen("/proc/kallsyms", "re");
	char line[256];

	if (!kallsyms)
		return;
	while (fgets(line, sizeof(line), kallsyms)) {
		line[strcspn(line, "\n")] = '\0';
		if (strstr(line, "\t[okprobe") &&
		    (strstr(line, " t ") || strstr(line, " T ")))
			say("# bench: symbol %s", line);
	}
	fclose(kallsyms);
	/* Each module's start and size: what lies outside is okprobe's code
	 * pages (detours, slots) or the kernel's.
	 */
	kallsyms = fopen("/proc/modules", "re");
	while (kallsyms && fgets(line, sizeof(line), kallsyms)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "okprobe", 7))
			say("# bench: module %s", line);
	}
	if (kallsyms)
		fclose(kallsyms);
	say("# bench: trace pause");
	tcdrain(1);
	sleep(3);
}

static int bench_load(void)
{
	const char *calls = getenv("bench_calls");
	const char *rounds = getenv("bench_rounds");
	char release[128] = "", version[512] = "";
	int ret;

	if (calls)
		bench_calls = strtoul(calls, NULL, 10);
	if (rounds)
		bench_rounds = atoi(rounds);
	CHECK(bench_calls > 0 && bench_rounds > 0 &&
	      bench_rounds <= BENCH_MAX_ROUNDS,
	      "bad bench_calls=%lu or bench_rounds=%d", bench_calls,
	      bench_rounds);
	if (!exists(BENCH_KO))
		return skip("no okprobe_bench.ko for this architecture");
	CHECK(kernel_has_kprobes, "this kernel has no kprobes to compare with");
	CHECK(!bench_configs[0].kernel_optimization ||
	      exists(KERNEL_OPTIMIZATION), "%s is missing: no optprobes?",
	      KERNEL_OPTIMIZATION);
	STEP(load_okprobe(default_params));
	ret = load_module(BENCH_KO, "");
	CHECK(ret == 0, "loading okprobe_bench.ko: %s", strerror(-ret));
	read_file("/proc/sys/kernel/osrelease", release, sizeof(release));
	read_file("/proc/version", version, sizeof(version));
	release[strcspn(release, "\n")] = '\0';
	version[strcspn(version, "\n")] = '\0';
	say("# bench: kernel %s", release);
	say("# bench: version %s", version);
	say("# bench: calls %lu", bench_calls);
	say("# bench: rounds %d", bench_rounds);
	if (getenv("bench_trace"))
		bench_print_module_symbols();
	return 0;
}

/*
 * okprobe_bench.ko's ruler, three times: a loop of a known number of
 * instructions against the guest's clock. Under -icount shift=0 (tools/bench's
 * instruction-count runs) the two agree; under plain TCG the line just
 * says how fast this guest executes.
 */
static void bench_ruler(void)
{
	char reply[128];
	int i;

	for (i = 0; i < 3; i++)
		if (bench_command("ruler", reply, sizeof(reply)) == 0) {
			reply[strcspn(reply, "\n")] = '\0';
			say("# bench: %s", reply);
		}
}

static int bench_measure(void)
{
	size_t i;
	int round, wrong = 0;

	if (!exists(BENCH_CONTROL))
		return skip("okprobe_bench.ko is not loaded");
	for (i = 0; i < BENCH_ROWS; i++) {
		bench_rows[i].target = &bench_targets[i / BENCH_CONFIGS];
		bench_rows[i].config = &bench_configs[i % BENCH_CONFIGS];
	}
	/*
	 * A warm-up round, not counted; then rounds in rotating order. A
	 * row whose jump okprobe refused is not measured again.
	 */
	for (i = 0; i < BENCH_ROWS; i++)
		if (bench_applies(&bench_rows[i]))
			STEP(bench_sample(&bench_rows[i], bench_calls, -1));
	for (round = 0; round < bench_rounds; round++)
		for (i = 0; i < BENCH_ROWS; i++) {
			struct bench_row *row = &bench_rows[(i + round) % BENCH_ROWS];

			if (bench_applies(row) && !row->refused[0])
				STEP(bench_sample(row, bench_calls, round));
		}
	bench_print_table();
	bench_ruler();
	for (i = 0; i < BENCH_ROWS; i++)
		wrong += bench_rows[i].wrong_rounds;
	CHECK(!wrong, "%d runs with wrong hit counts or results", wrong);
	return 0;
}

/*
 * Coverage: the sample of kernel instruction boundaries that tools/bench
 * drew from the vmlinux (okprobe_bench_sites: "symbol 0xoffset" lines),
 * registered with kernel kprobes, then with okprobe, one probe per site
 * with a counting pre_handler, by address (resolved here through
 * /proc/kallsyms, so that name lookups are not part of the timing).
 * Counts what each registers and optimizes and how long that takes, then
 * unregisters everything and checks that the text is back as it was.
 */
#define BENCH_MAX_SITES 16384
/* The sampler's comment line that describes the sample. */
#define BENCH_SITES_ABOUT "# okprobe bench sites: "
#define BENCH_MAX_REASONS 32
/* How long to wait for an optimizer to finish a whole sample. */
#define BENCH_COVERAGE_WAIT_MS 180000
/* How long unregistered probes may take to leave the text. */
#define BENCH_RESTORE_WAIT_MS 10000

struct bench_site {
	char name[256];
	unsigned long offset;
	unsigned long address;	/* the probed address, 0 if unresolved */
};

static struct bench_site bench_sites[BENCH_MAX_SITES];
static int bench_site_count;
/* The sample's own description (its first comment line). */
static char bench_sites_about[512];
/* optprobe_template_entry and _end in this kernel, for its slot size. */
static unsigned long bench_template_entry, bench_template_end;

/* A coverage pass of one mechanism, "kprobe" or "okprobe". */
struct bench_pass {
	const char *kind;		/* kprobe, okprobe or okprobe-many */
	int size;			/* the first size sites of the sample */
	int registered, moved, optimized, ftrace;
	char errors[160];		/* the module's "-errno:count,..." */
	long long register_ms, optimized_ms, unoptimize_ms, unregister_ms;
	long long requeue_ms;		/* the sysctl write of 1 with all unoptimized */
	int optimizer_done;		/* nothing left waiting in time */
	char steps[512];		/* okprobe: writer_steps' ns during the pass */
	long hits, missed;
	int text_changed;		/* sites not as before, after the pass */
	/*
	 * make check's scale suite: an optimizer not done within
	 * BENCH_COVERAGE_WAIT_MS fails the pass (make bench notes it).
	 */
	int strict;
};

/* Reasons for not optimizing, from okprobe/jumps, and how often. */
struct bench_reason {
	char why[160];
	int count;
};

static struct bench_reason bench_reasons[BENCH_MAX_REASONS];
static int bench_reason_count;
static long bench_detour_total, bench_detour_granules;
static int bench_detour_min, bench_detour_max;
/* kprobes/list and okprobe/jumps of a whole sample. */
static char bench_big_file[4 << 20];

static int bench_site_by_name(const void *a, const void *b)
{
	return strcmp(((const struct bench_site *)a)->name,
		      ((const struct bench_site *)b)->name);
}

/*
 * Functions left out of the sample: riscv's handle_break() is the kernel's
 * own ebreak handler, which 6.12's riscv kprobes do not blacklist. A
 * kernel kprobe at handle_break+0xc and any other one hit overflow the
 * stack through nested breakpoint traps (make bench ARCH=riscv, issue 35;
 * kprobe_events alone does it, testing.md; okprobe refuses the function).
 * The table says so.
 */
static const char *const bench_unguarded_trap_path[] = { "handle_break" };

static int bench_on_unguarded_trap_path(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bench_unguarded_trap_path); i++)
		if (!strcmp(name, bench_unguarded_trap_path[i]))
			return 1;
	return 0;
}

/* Reads the sample into bench_sites, sorted by name. */
static int bench_read_sites(void)
{
	FILE *file = fopen(BENCH_SITES, "re");
	char line[512], tag[16], *about;
	int left_out = 0, lr_sc = 0;

	CHECK(file, "cannot open %s", BENCH_SITES);
	bench_site_count = 0;
	while (fgets(line, sizeof(line), file)) {
		struct bench_site *site = &bench_sites[bench_site_count];

		if (!strncmp(line, BENCH_SITES_ABOUT, strlen(BENCH_SITES_ABOUT))) {
			about = line + strlen(BENCH_SITES_ABOUT);
			snprintf(bench_sites_about, sizeof(bench_sites_about),
				 "%.*s", (int)strcspn(about, "\n"), about);
		}
		tag[0] = '\0';
		if (line[0] == '#' || bench_site_count == BENCH_MAX_SITES ||
		    sscanf(line, "%255s %lx %15s", site->name, &site->offset,
			   tag) < 2)
			continue;
		if (bench_on_unguarded_trap_path(site->name)) {
			left_out++;
			continue;
		}
		/* The sampler's tag: riscv's lr, sc and what is between them. */
		if (!strcmp(tag, "lr-sc")) {
			lr_sc++;
			continue;
		}
		site->address = 0;
		bench_site_count++;
	}
	fclose(file);
	if (left_out)
		say("# coverage: left out %d sites in the kernel's own breakpoint handler (handle_break: its kprobes take them, and nested traps there overflowed the stack)",
		    left_out);
	if (lr_sc)
		say("# coverage: left out %d sites in LR/SC sequences: the kernel's kprobes take them, and the loop around one then never ends (the trap clears the reservation, the sc fails on every retry: uart_write+0x38 hung riscv-preempt's console); okprobe refuses them",
		    lr_sc);
	CHECK(bench_site_count > 0, "no sites in %s", BENCH_SITES);
	qsort(bench_sites, bench_site_count, sizeof(*bench_sites),
	      bench_site_by_name);
	return 0;
}

/*
 * Resolves every site through /proc/kallsyms in one pass (core-kernel text
 * symbols only: the sampler chose names no other symbol has); also finds
 * the kernel's optprobe template. Returns how many sites resolved.
 */
static int bench_resolve_sites(void)
{
	FILE *kallsyms = fopen("/proc/kallsyms", "re");
	char line[512], type, module[2];
	struct bench_site key, *found;
	unsigned long address;
	int resolved = 0, i;

	if (!kallsyms)
		return 0;
	while (fgets(line, sizeof(line), kallsyms)) {
		int fields = sscanf(line, "%lx %c %255s %1s", &address, &type,
				    key.name, module);

		if (fields == 3 && !strcmp(key.name, "optprobe_template_entry"))
			bench_template_entry = address;
		if (fields == 3 && !strcmp(key.name, "optprobe_template_end"))
			bench_template_end = address;
		if (fields != 3 || (type != 't' && type != 'T'))
			continue;
		found = bsearch(&key, bench_sites, bench_site_count,
				sizeof(*bench_sites), bench_site_by_name);
		if (!found)
			continue;
		/* Every site in that function: they are next to each other. */
		while (found > bench_sites && !strcmp(found[-1].name, key.name))
			found--;
		for (; found < bench_sites + bench_site_count &&
		       !strcmp(found->name, key.name); found++)
			found->address = address + found->offset;
	}
	fclose(kallsyms);
	for (i = 0; i < bench_site_count; i++)
		resolved += bench_sites[i].address != 0;
	return resolved;
}

/*
 * riscv: leaves out the sites in functions okprobe found on the trap exit
 * after sscratch is set (its blacklist, "trap exit"), and in the trap
 * entry (handle_exception ... __switch_to, "riscv entry code"). riscv
 * 6.1's own kprobes are not kept out of them and crash the kernel there:
 * a probe in __module_text_address, reached by the trap's stack walk,
 * recurses; one at _save_context+0x0, where every trap enters, traps
 * there for ever (make bench KERNEL=riscv-preempt, issue 35: both CPUs
 * stopped in patch_text_cb, one trapping at _save_context). Returns how
 * many sites it left out.
 */
static int bench_leave_out_trap_path(void)
{
	unsigned long start, end;
	int left_out = 0, i;
	char *line;

	if (IS_X86 || read_file(DEBUGFS_DIR "/blacklist", bench_big_file,
				sizeof(bench_big_file)))
		return 0;
	for (line = strtok(bench_big_file, "\n"); line;
	     line = strtok(NULL, "\n")) {
		if ((!strstr(line, "trap exit") &&
		     !strstr(line, "riscv entry code")) ||
		    sscanf(line, "0x%lx-0x%lx", &start, &end) != 2)
			continue;
		for (i = 0; i < bench_site_count; i++) {
			if (bench_sites[i].address >= start &&
			    bench_sites[i].address < end) {
				bench_sites[i].address = 0;
				left_out++;
			}
		}
	}
	return left_out;
}

/* Hands the resolved sites to okprobe_bench.ko. */
static int bench_send_sites(void)
{
	char command[64], reply[64];
	int i, ret;

	for (i = 0; i < bench_site_count; i++) {
		if (!bench_sites[i].address)
			continue;
		snprintf(command, sizeof(command), "site %lx",
			 bench_sites[i].address);
		ret = bench_command(command, reply, sizeof(reply));
		CHECK(ret == 0, "%s (%s+0x%lx): %s", command,
		      bench_sites[i].name, bench_sites[i].offset,
		      strerror(-ret));
	}
	return 0;
}

static int bench_count(const char *text, const char *needle)
{
	int count = 0;

	for (text = strstr(text, needle); text;
	     text = strstr(text + 1, needle))
		count++;
	return count;
}

/*
 * okprobe/jumps lines in state ("waiting", "optimized"): the state word
 * after two spaces and before a space, a colon or the line's end, so that
 * a symbol such as waiting_for_supplier_show is not counted.
 */
static int bench_count_state(const char *text, const char *state)
{
	size_t length = strlen(state);
	const char *at;
	int count = 0;

	for (at = strstr(text, "  "); at; at = strstr(at + 1, "  ")) {
		if (strncmp(at + 2, state, length))
			continue;
		if (at[2 + length] == ' ' || at[2 + length] == ':' ||
		    at[2 + length] == '\n' || at[2 + length] == '\0')
			count++;
	}
	return count;
}

/* The module's cover-state: jumps in the text, changed sites, hits. */
static int bench_cover_state(int *jumps, int *changed, long *hits,
			     long *missed, int *optimized)
{
	char reply[256];
	int ret = bench_command("cover-state", reply, sizeof(reply));

	CHECK(ret == 0, "cover-state: %s", strerror(-ret));
	CHECK(sscanf(reply, "cover-state jumps=%d changed=%d hits=%ld missed=%ld optimized=%d",
		     jumps, changed, hits, missed, optimized) == 5,
	      "cover-state replied '%s'", reply);
	return 0;
}

/* Registers the sites with pass->kind; fills registered, moved, errors. */
static int bench_cover(struct bench_pass *pass)
{
	unsigned long long ns;
	char command[64], reply[256];
	int sites, ret;

	snprintf(command, sizeof(command), "cover %s %d", pass->kind,
		 pass->size);
	ret = bench_command(command, reply, sizeof(reply));
	CHECK(ret == 0, "%s: %s", command, strerror(-ret));
	pass->errors[0] = '\0';
	CHECK(sscanf(reply, "%*s %*s sites=%d registered=%d ns=%llu moved=%d errors=%159s",
		     &sites, &pass->registered, &ns, &pass->moved,
		     pass->errors) >= 4,
	      "%s replied '%s'", command, reply);
	pass->register_ms = ns / 1000000;
	return 0;
}

/*
 * Polls until the optimizer of pass->kind is done with the sample: for the
 * kernel, every kprobe that kprobes/list shows [OPTIMIZED] (queued) has its
 * jmp in the text; for okprobe, no site in okprobe/jumps is "waiting".
 */
static int bench_wait_for_optimizer(struct bench_pass *pass, long long start)
{
	int kernel = !strcmp(pass->kind, "kprobe");
	int jumps = 0, changed, flagged = 0, waiting = 0;
	long long deadline = start + BENCH_COVERAGE_WAIT_MS;

	for (;;) {
		read_file(kernel ? KPROBES_LIST : DEBUGFS_DIR "/jumps",
			  bench_big_file, sizeof(bench_big_file));
		STEP(bench_cover_state(&jumps, &changed, &pass->hits,
				       &pass->missed, &flagged));
		if (kernel) {
			pass->optimized = bench_count(bench_big_file,
						      "[OPTIMIZED]");
			pass->ftrace = bench_count(bench_big_file, "[FTRACE]");
			pass->optimizer_done = jumps == pass->optimized;
		} else {
			waiting = bench_count_state(bench_big_file, "waiting");
			pass->optimized = bench_count_state(bench_big_file,
							    "optimized");
			pass->ftrace = bench_count_state(bench_big_file,
							 "ftrace");
			pass->optimizer_done = !waiting;
		}
		if (pass->optimizer_done || now_ms() > deadline)
			break;
		usleep(50000);
	}
	pass->optimized_ms = now_ms() - start;
	if (!pass->optimizer_done)
		say("# coverage: note: the %s optimizer was not done after %d s: %d jumps in the text, %d %s",
		    pass->kind, BENCH_COVERAGE_WAIT_MS / 1000, jumps,
		    kernel ? pass->optimized : waiting,
		    kernel ? "[OPTIMIZED] in kprobes/list" : "sites waiting");
	CHECK(!pass->strict || pass->optimizer_done,
	      "the %s optimizer was not done within its %d s deadline",
	      pass->kind, BENCH_COVERAGE_WAIT_MS / 1000);
	/* okprobe's three views of its jumps must agree. */
	CHECK(kernel || !pass->optimizer_done ||
	      (jumps == pass->optimized && flagged == pass->optimized),
	      "okprobe/jumps shows %d optimized, %d probes have OKPROBE_FLAG_OPTIMIZED, %d jumps are in the text",
	      pass->optimized, flagged, jumps);
	return 0;
}

/* Groups okprobe/jumps (in bench_big_file): detour sizes, refusals. */
static void bench_tally_jumps(void)
{
	char *line, *state, *why, *detour;
	int i, size;

	bench_reason_count = 0;
	bench_detour_total = bench_detour_granules = 0;
	bench_detour_min = bench_detour_max = 0;
	for (line = strtok(bench_big_file, "\n"); line;
	     line = strtok(NULL, "\n")) {
		/* "0xADDR  symbol+0xoff/0xsize  STATE[ region=N][ detour=N][: why]" */
		state = strstr(line, "  ");
		state = state ? strstr(state + 2, "  ") : NULL;
		if (!state)
			continue;
		state += 2;
		detour = strstr(state, " detour=");
		if (!strncmp(state, "optimized", 9) && detour) {
			size = atoi(detour + 8);
			bench_detour_total += size;
			bench_detour_granules += (size + 15) / 16;
			if (!bench_detour_min || size < bench_detour_min)
				bench_detour_min = size;
			if (size > bench_detour_max)
				bench_detour_max = size;
		}
		why = strstr(state, ": ");
		if (strncmp(state, "breakpoint", 10) || !why)
			continue;
		why += 2;
		for (i = 0; i < bench_reason_count &&
		     strcmp(bench_reasons[i].why, why); i++)
			;
		if (i == bench_reason_count) {
			if (i == BENCH_MAX_REASONS)
				continue;
			snprintf(bench_reasons[i].why,
				 sizeof(bench_reasons[i].why), "%s", why);
			bench_reasons[i].count = 0;
			bench_reason_count++;
		}
		bench_reasons[i].count++;
	}
}

/* Waits for every site's text to be what it was before the pass. */
static int bench_wait_restored(struct bench_pass *pass)
{
	long long deadline = now_ms() + BENCH_RESTORE_WAIT_MS;
	int jumps, flagged;
	long hits, missed;

	for (;;) {
		STEP(bench_cover_state(&jumps, &pass->text_changed, &hits,
				       &missed, &flagged));
		if (!pass->text_changed || now_ms() > deadline)
			break;
		usleep(50000);
	}
	/* A text not restored byte for byte breaks the run, bench or check. */
	CHECK(!pass->text_changed,
	      "after the %s pass %d sites' text is not what it was before",
	      pass->kind, pass->text_changed);
	return 0;
}

#define WRITER_STEPS DEBUGFS_DIR "/writer_steps"
#define MAX_WRITER_STEPS 16

struct writer_steps {
	int count;
	char name[MAX_WRITER_STEPS][16];
	unsigned long times[MAX_WRITER_STEPS], ns[MAX_WRITER_STEPS];
};

/* okprobe/writer_steps: each step's times and nanoseconds since load. */
static int read_writer_steps(struct writer_steps *steps)
{
	static char text[4096];
	char *line, *save = NULL;

	steps->count = 0;
	if (read_file(WRITER_STEPS, text, sizeof(text)) < 0)
		return -1;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		int i = steps->count;

		if (i == MAX_WRITER_STEPS)
			break;
		if (sscanf(line, "%15s %lu %lu", steps->name[i],
			   &steps->times[i], &steps->ns[i]) == 3)
			steps->count++;
	}
	return steps->count ? 0 : -1;
}

/* "step=ns ..." of what the pass added to each step. */
static void writer_steps_delta(const struct writer_steps *before,
			       const struct writer_steps *after, char *out,
			       size_t size)
{
	size_t used = 0;
	int i;

	out[0] = '\0';
	for (i = 0; i < after->count && i < before->count && used < size; i++)
		used += snprintf(out + used, size - used, "%s%s=%lu",
				 i ? " " : "", after->name[i],
				 after->ns[i] - before->ns[i]);
}

/*
 * Where a pass is, on the console: a guest that hangs names the step, and
 * the long ones keep the console from a silence the runner would take
 * for a hang.
 */
static void bench_say_step(const struct bench_pass *pass, const char *step)
{
	say("# pass: %s %d: %s", pass->kind, pass->size, step);
}

/* The sysctl a pass's kind switches and its last written value, or NULL. */
static const char *bench_pass_sysctl(const struct bench_pass *pass,
				     char **last)
{
	int kernel = !strcmp(pass->kind, "kprobe");

	*last = kernel ? bench_kernel_optimization : bench_okprobe_optimization;
	/* Without optprobes (riscv 6.1) the kernel has no such sysctl. */
	if (kernel && !exists(KERNEL_OPTIMIZATION))
		return NULL;
	return kernel ? KERNEL_OPTIMIZATION : SYSCTL_OPTIMIZATION;
}

/*
 * A pass's first half: turn the mechanism's optimization on, register
 * every site, wait for its optimizer, count.
 */
static int bench_pass_register(struct bench_pass *pass)
{
	int kernel = !strcmp(pass->kind, "kprobe");
	char *last;
	const char *sysctl = bench_pass_sysctl(pass, &last);
	struct writer_steps steps_before, steps_after;
	int timed = !kernel && read_writer_steps(&steps_before) == 0;
	long long start;
	int ret;

	ret = sysctl ? bench_set_sysctl(sysctl, last, "1") : 0;
	CHECK(ret == 0, "writing 1 to %s: %s", sysctl, strerror(-ret));
	bench_say_step(pass, "registering");
	start = now_ms();
	STEP(bench_cover(pass));
	bench_say_step(pass, "waiting for the optimizer");
	STEP(bench_wait_for_optimizer(pass, start));
	/* Where registering and optimizing the sites spent its time. */
	if (timed && read_writer_steps(&steps_after) == 0)
		writer_steps_delta(&steps_before, &steps_after, pass->steps,
				   sizeof(pass->steps));
	if (!strcmp(pass->kind, "okprobe"))
		bench_tally_jumps();
	return 0;
}

/*
 * Its second half: turn optimization off (both sysctls unoptimize
 * synchronously), unregister everything.
 */
static int bench_pass_unregister(struct bench_pass *pass)
{
	int kernel = !strcmp(pass->kind, "kprobe");
	char *last;
	const char *sysctl = bench_pass_sysctl(pass, &last);
	char reply[256];
	unsigned long long ns;
	long long start;
	int ret;

	bench_say_step(pass, "unoptimizing");
	start = now_ms();
	ret = sysctl ? bench_set_sysctl(sysctl, last, "0") : 0;
	pass->unoptimize_ms = now_ms() - start;
	CHECK(ret == 0, "writing 0 to %s: %s", sysctl, strerror(-ret));
	/*
	 * okprobe's write of 1 only queues the sites for the optimizer; how
	 * long it takes to return, then every jump out again before the
	 * unregistration is timed.
	 */
	if (!kernel && sysctl) {
		bench_say_step(pass, "optimization on and off again");
		start = now_ms();
		ret = bench_set_sysctl(sysctl, last, "1");
		pass->requeue_ms = now_ms() - start;
		CHECK(ret == 0, "writing 1 to %s: %s", sysctl, strerror(-ret));
		ret = bench_set_sysctl(sysctl, last, "0");
		CHECK(ret == 0, "writing 0 to %s: %s", sysctl, strerror(-ret));
	}
	/*
	 * The detours the writes of 0 withdrew are freed by the optimizer
	 * after a grace period, under the probe mutex: let it finish, so the
	 * unregistration is timed alone.
	 */
	sleep(1);
	bench_say_step(pass, "unregistering");
	ret = bench_command("uncover", reply, sizeof(reply));
	CHECK(ret == 0, "uncover: %s", strerror(-ret));
	CHECK(sscanf(reply, "uncover %*s unregistered=%*d ns=%llu", &ns) == 1,
	      "uncover replied '%s'", reply);
	pass->unregister_ms = ns / 1000000;
	return 0;
}

/*
 * One pass: register every site, wait for the optimizer, count,
 * unregister everything, and every site's text is what it was.
 */
static int bench_coverage_pass(struct bench_pass *pass)
{
	STEP(bench_pass_register(pass));
	STEP(bench_pass_unregister(pass));
	return bench_wait_restored(pass);
}

/*
 * The next "error:count" of a pass's refusals ("-1:100,-16:88"); moves
 * *errors past it. Returns 0 at the end.
 */
static int next_refusal(const char **errors, int *error, int *count)
{
	int length;

	if (sscanf(*errors, "%d:%d%n", error, count, &length) != 2)
		return 0;
	*errors += length + ((*errors)[length] == ',');
	return 1;
}

/* "-1:100,-16:88" -> "EPERM 100, EBUSY 88" */
static void bench_say_errors(const char *label, const char *errors)
{
	char out[512] = "";
	size_t used = 0;
	int error, count;

	while (used < sizeof(out) && next_refusal(&errors, &error, &count)) {
		const char *name = strerrorname_np(-error);

		used += snprintf(out + used, sizeof(out) - used, "%s%s %d",
				 used ? ", " : "", name ? name : "?", count);
	}
	say("# coverage: %s refused: %s", label, out[0] ? out : "none");
}

static int bench_reason_order(const void *a, const void *b)
{
	return ((const struct bench_reason *)b)->count -
	       ((const struct bench_reason *)a)->count;
}

static void bench_print_coverage(const struct bench_pass *k,
				 const struct bench_pass *o, int resolved)
{
	long optimized = o->optimized;
	int i;

	say("# coverage: sample: %s", bench_sites_about);
	say("# coverage: %d of %d resolved in /proc/kallsyms; one probe per site, a pre_handler that counts, registered by address one by one",
	    resolved, bench_site_count);
	say("# coverage: %-44s %14s %10s", "", "kernel kprobes", "okprobe");
	say("# coverage: %-44s %14d %10d", "registered", k->registered,
	    o->registered);
	say("# coverage: %-44s %14d %10d", "optimized (a jmp in the text)",
	    k->optimized, o->optimized);
	say("# coverage: %-44s %14d %10d", "on an ftrace site ([FTRACE], no int3)",
	    k->ftrace, o->ftrace);
	say("# coverage: %-44s %14lld %10lld", "ms to register, one by one",
	    k->register_ms, o->register_ms);
	say("# coverage: %-44s %14lld %10lld",
	    "ms from the first register to optimizer done", k->optimized_ms,
	    o->optimized_ms);
	say("# coverage: %-44s %14lld %10lld",
	    "ms to unoptimize all (sysctl to 0)", k->unoptimize_ms,
	    o->unoptimize_ms);
	say("# coverage: %-44s %14lld %10lld", "ms to unregister all (batch)",
	    k->unregister_ms, o->unregister_ms);
	say("# coverage: %-44s %14ld %10ld", "hits while registered",
	    k->hits, o->hits);
	say("# coverage: %-44s %14ld %10ld", "missed (a handler was running)",
	    k->missed, o->missed);
	bench_say_errors("kernel kprobes", k->errors);
	bench_say_errors("okprobe", o->errors);
	qsort(bench_reasons, bench_reason_count, sizeof(*bench_reasons),
	      bench_reason_order);
	say("# coverage: okprobe registered but not optimized, by reason (okprobe/jumps):");
	for (i = 0; i < bench_reason_count; i++)
		say("# coverage: %6d  %s", bench_reasons[i].count,
		    bench_reasons[i].why);
	if (optimized)
		say("# coverage: okprobe detour per optimized probe: mean %.1f bytes (min %d, max %d); %.1f allocated in 16-byte granules",
		    (double)bench_detour_total / optimized, bench_detour_min,
		    bench_detour_max, 16.0 * bench_detour_granules / optimized);
	if (bench_template_entry && bench_template_end > bench_template_entry)
		say("# coverage: kernel optprobe slot per optimized probe: %lu bytes = MAX_OPTINSN_SIZE: optprobe_template_end - optprobe_template_entry (%lu, this kernel's /proc/kallsyms) + MAX_OPTIMIZED_LENGTH (16 + 4) + JMP32_INSN_SIZE (5)",
		    bench_template_end - bench_template_entry + 25,
		    bench_template_end - bench_template_entry);
	tcdrain(1);
}

/*
 * Reads the sample, resolves it, leaves out riscv's trap exit and hands
 * the rest to okprobe_bench.ko; *resolved: how many sites it has.
 */
static int bench_prepare_sample(int *resolved)
{
	unsigned char byte;
	int left_out;

	STEP(bench_read_sites());
	*resolved = bench_resolve_sites();
	CHECK(*resolved > 0, "no site resolved in /proc/kallsyms");
	left_out = bench_leave_out_trap_path();
	if (left_out)
		say("# coverage: note: %d sites left out, in functions okprobe refuses on riscv's trap entry and exit: riscv 6.1's kprobes crash there",
		    left_out);
	*resolved -= left_out;
	/*
	 * The crng's first seeding flips a static key, rewriting jump labels
	 * in some sites' windows: a blocking getrandom() has it happen now
	 * (the riscv guests, without an entropy source, seeded it minutes in,
	 * in the middle of a pass), not while a pass's text is compared.
	 */
	CHECK(getrandom(&byte, 1, 0) == 1, "getrandom: %s", strerror(errno));
	return bench_send_sites();
}

/*
 * Whether the scale passes include kind: all of them, unless bench_kinds
 * (tools/bench --kinds) names some, e.g. "okprobe,okprobe-many".
 */
static int bench_runs_kind(const char *kind)
{
	const char *kinds = getenv("bench_kinds");
	size_t length = strlen(kind);
	const char *at;

	if (!kinds || !*kinds)
		return 1;
	for (at = kinds; (at = strstr(at, kind)); at += length)
		if ((at == kinds || at[-1] == ',') &&
		    (at[length] == ',' || !at[length]))
			return 1;
	return 0;
}

/* The sample sizes of the scale table (make bench's build/bench/scale.svg). */
static const int bench_scale_sizes[] = { 100, 1000, 10000 };

static void bench_say_scale(const struct bench_pass *pass)
{
	say("# scale: size=%d kind=%s registered=%d optimized=%d register_ms=%lld optimized_ms=%lld unoptimize_ms=%lld requeue_ms=%lld unregister_ms=%lld done=%d",
	    pass->size, pass->kind, pass->registered, pass->optimized,
	    pass->register_ms, pass->optimized_ms, pass->unoptimize_ms,
	    pass->requeue_ms, pass->unregister_ms, pass->optimizer_done);
	if (pass->steps[0])
		say("# steps: size=%d kind=%s registered=%d %s", pass->size,
		    pass->kind, pass->registered, pass->steps);
}

/*
 * For each size of the scale table (the largest: the whole sample), the
 * first size sites: kernel kprobes one by one, okprobe one by one, then
 * okprobe_register_many() of the sites okprobe took. The coverage table
 * is the largest size's one-by-one passes.
 */
static int bench_coverage(void)
{
	struct bench_pass kernel, ours, many;
	int resolved, result = 0, i, size;

	if (!exists(BENCH_CONTROL))
		return skip("okprobe_bench.ko is not loaded");
	if (!exists(BENCH_SITES))
		return skip("no " BENCH_SITES " (tools/bench makes it)");
	STEP(bench_prepare_sample(&resolved));
	for (i = 0; i < (int)ARRAY_SIZE(bench_scale_sizes) && !result; i++) {
		size = bench_scale_sizes[i];
		if (size > resolved || i == (int)ARRAY_SIZE(bench_scale_sizes) - 1)
			size = resolved;
		kernel = (struct bench_pass){ .kind = "kprobe", .size = size };
		ours = (struct bench_pass){ .kind = "okprobe", .size = size };
		many = (struct bench_pass){ .kind = "okprobe-many", .size = size };
		if (bench_runs_kind(kernel.kind))
			result = bench_coverage_pass(&kernel);
		if (!result && bench_runs_kind(ours.kind))
			result = bench_coverage_pass(&ours);
		if (!result && bench_runs_kind(many.kind))
			result = bench_coverage_pass(&many);
		if (!result) {
			if (bench_runs_kind(kernel.kind))
				bench_say_scale(&kernel);
			if (bench_runs_kind(ours.kind))
				bench_say_scale(&ours);
			if (bench_runs_kind(many.kind))
				bench_say_scale(&many);
		}
		if (size == resolved)
			break;
	}
	write_file(BENCH_CONTROL, "uncover");
	write_file(BENCH_CONTROL, "sites-clear");
	if (result)
		return result;
	bench_print_coverage(&kernel, &ours, resolved);
	return 0;
}

/*
 * An entry probe as a client of <linux/kprobes.h> writes it: the sample
 * client with symbol=ksys_read and no offset. Where ftrace saves registers
 * it is an ftrace probe ([FTRACE]); on a kernel whose ftrace does not
 * (riscv 6.12) it sits at the first instruction past the call site
 * ([AFTER FTRACE]); without ftrace at ksys_read+0 itself. It counts every
 * read; okprobe writes no byte there, so ksys_read stays out of the
 * kernel's kprobe blacklist and a kprobe_events probe at +0 (kprobes on
 * ftrace) counts the same reads beside it.
 */
#define ENTRY_READS 1000

/*
 * The hits column of kprobe_profile for event (GROUP/NAME; the file names
 * it by NAME alone), or -1.
 */
static long kprobe_profile_hits(const char *event)
{
	static char profile[1 << 14];
	const char *slash = strchr(event, '/');
	char *line;
	long hits = -1;

	if (read_file("/sys/kernel/tracing/kprobe_profile", profile,
		      sizeof(profile)))
		return -1;
	for (line = strtok(profile, "\n"); line; line = strtok(NULL, "\n")) {
		char name[128];
		long count;

		if (sscanf(line, "%127s %ld", name, &count) == 2 &&
		    (!strcmp(name, event) ||
		     (slash && !strcmp(name, slash + 1))))
			hits = count;
	}
	return hits;
}

#define FTRACE_ENABLED "/proc/sys/kernel/ftrace_enabled"

/* Whether entry_probe_steps() left the function tracer on (a failure). */
static int entry_tracer_started;

static int entry_probe_steps(void)
{
	const int has_ftrace = kallsyms_address("ftrace_caller") != 0;
	const int on_ftrace = kallsyms_address("kprobe_ftrace_handler") != 0;
	const int via_ftrace = kallsyms_address("ftrace_regs_caller") != 0;
	const char *const filter = getenv("okptest_tracer_functions");
	char line[512], tracers[512], current[64] = "";
	long before, after, event;
	int ret;

	STEP(load_okprobe(default_params));
	ret = load_module(SAMPLE_KO, "symbol=ksys_read");
	CHECK(ret == 0, "the sample client at ksys_read+0: %s", strerror(-ret));
	CHECK(list_line("ksys_read+", line, sizeof(line)),
	      "no ksys_read line in okprobe/list");
	if (via_ftrace)
		CHECK(strstr(line, " [FTRACE]"), "not through ftrace: %s", line);
	else if (has_ftrace)
		CHECK(strstr(line, " [AFTER FTRACE]"),
		      "not past the ftrace call site: %s", line);
	else
		CHECK(!strstr(line, "FTRACE]"), "ftrace without ftrace: %s",
		      line);
	CHECK(!via_ftrace || !blacklist_lists("ksys_read"),
	      "an ftrace entry probe put ksys_read in the kprobe blacklist");
	before = list_hits("ksys_read+");
	read_proc_repeatedly(ENTRY_READS);
	after = list_hits("ksys_read+");
	CHECK(after - before >= ENTRY_READS, "%ld hits for %d reads",
	      after - before, ENTRY_READS);
	/* The kernel's own probe at +0, at the same time, where both can. */
	if (via_ftrace && on_ftrace && exists(KPROBE_EVENTS)) {
		ret = write_file(KPROBE_EVENTS, "p:okptest/entry ksys_read");
		CHECK(ret == 0, "'p:okptest/entry ksys_read' beside okprobe: %s",
		      strerror(-ret));
		ret = write_file("/sys/kernel/tracing/events/okptest/entry/enable",
				 "1");
		CHECK(ret == 0, "enabling okptest/entry: %s", strerror(-ret));
		before = list_hits("ksys_read+");
		event = kprobe_profile_hits("okptest/entry");
		read_proc_repeatedly(ENTRY_READS);
		after = list_hits("ksys_read+");
		event = kprobe_profile_hits("okptest/entry") - event;
		write_file("/sys/kernel/tracing/events/okptest/entry/enable",
			   "0");
		CHECK(clear_okptest_events() == 0, "clearing kprobe_events");
		CHECK(after - before >= ENTRY_READS && event >= ENTRY_READS,
		      "okprobe %ld and the kprobe event %ld hits for %d reads",
		      after - before, event, ENTRY_READS);
	}
	/*
	 * The function tracer on every function, ksys_read's call site too;
	 * or (okptest_tracer_functions, a set_ftrace_filter line) on those
	 * only: riscv-ftrace's lockdep kernel spends two minutes of TCG
	 * tracing every function over these reads, and riscv-6.12 and the x86
	 * kernels trace every function here already.
	 */
	tracers[0] = '\0';
	read_file(TRACING "/available_tracers", tracers, sizeof(tracers));
	read_file(TRACING "/current_tracer", current, sizeof(current));
	if (strstr(tracers, "function") && (guest_init || !strcmp(current, "nop\n"))) {
		entry_tracer_started = 1;
		/* A write without O_TRUNC would add to a filter already set. */
		if (filter) {
			clear_file(TRACING "/set_ftrace_filter");
			CHECK(write_file(TRACING "/set_ftrace_filter", filter) == 0,
			      "set_ftrace_filter does not take '%s'", filter);
		}
		CHECK(write_file(TRACING "/current_tracer", "function") == 0,
		      "the function tracer does not start");
		before = list_hits("ksys_read+");
		read_proc_repeatedly(ENTRY_READS);
		after = list_hits("ksys_read+");
		CHECK(write_file(TRACING "/current_tracer", "nop") == 0,
		      "the function tracer does not stop");
		entry_tracer_started = 0;
		/* An empty filter: every function again, for what follows. */
		if (filter)
			clear_file(TRACING "/set_ftrace_filter");
		CHECK(after - before >= ENTRY_READS,
		      "%ld hits for %d reads under the function tracer",
		      after - before, ENTRY_READS);
	}
	/*
	 * sysctl kernel.ftrace_enabled=0 stops every ftrace callback: an
	 * entry probe through ftrace stays registered and counts nothing
	 * (as the kernel's kprobes on ftrace), then counts again at 1. One
	 * past the call site is a breakpoint or a jump: it goes on counting.
	 */
	ret = has_ftrace && exists(FTRACE_ENABLED) ?
		write_file(FTRACE_ENABLED, "0") : -ENOENT;
	/* Newer kernels (7.3) keep ftrace on and refuse the 0 ("deprecated"). */
	if (ret == -EOPNOTSUPP)
		say("# kernel.ftrace_enabled=0 is refused here (EOPNOTSUPP): nothing to stop");
	if (ret != -ENOENT && ret != -EOPNOTSUPP) {
		CHECK(ret == 0, "kernel.ftrace_enabled does not go 0: %s",
		      strerror(-ret));
		before = list_hits("ksys_read+");
		read_proc_repeatedly(ENTRY_READS);
		after = list_hits("ksys_read+");
		ret = write_file(FTRACE_ENABLED, "1");
		CHECK(ret == 0, "kernel.ftrace_enabled does not go back to 1");
		CHECK(via_ftrace ? after == before : after - before >= ENTRY_READS,
		      "%ld hits for %d reads with kernel.ftrace_enabled=0 (%s)",
		      after - before, ENTRY_READS,
		      via_ftrace ? "through ftrace" : "past the call site");
		before = list_hits("ksys_read+");
		read_proc_repeatedly(ENTRY_READS);
		after = list_hits("ksys_read+");
		CHECK(after - before >= ENTRY_READS,
		      "%ld hits for %d reads once kernel.ftrace_enabled is 1 again",
		      after - before, ENTRY_READS);
	}
	ret = unload_module("okprobe_sample");
	CHECK(ret == 0, "unloading the sample client: %s", strerror(-ret));
	return unload_okprobe();
}

static int test_entry_probe(void)
{
	int ret;

	mount_tracefs_if_needed();
	ret = entry_probe_steps();
	if (ret) {
		write_file(FTRACE_ENABLED, "1");
		if (entry_tracer_started) {
			write_file(TRACING "/current_tracer", "nop");
			if (getenv("okptest_tracer_functions"))
				clear_file(TRACING "/set_ftrace_filter");
		}
		undo_sample_and_events();
	}
	return ret;
}

/* okprobe_selftest.ko's return probe tests alone (return_only=1). */
static int test_return_in_kernel(void)
{
	return in_kernel_part("return_only", "return probe", 1);
}

/*
 * Return probes as a user tries them, with the sample client's return=1
 * on real kernel functions: ksys_read's return values for one process
 * against the kernel's own r: kprobe event in a second phase; readers
 * killed inside ksys_read; okprobe unloaded while readers sleep inside it
 * (they return to their callers when woken); do_exit, which never
 * returns (the instances go back when the tasks are reaped).
 */
#define RETURN_READS 100
#define RETURN_SLEEPERS 8
#define SAMPLE_PARAMETERS "/sys/module/okprobe_sample/parameters/"

static long sample_counter(const char *name)
{
	char path[128], value[64];

	snprintf(path, sizeof(path), SAMPLE_PARAMETERS "%s", name);
	if (read_file(path, value, sizeof(value)))
		return -1;
	return strtol(value, NULL, 10);
}

/*
 * The sample client's counting probe (counter=1: OKPROBE_FLAG_COUNTER, no
 * handler) on the instruction unload_while_optimized optimizes in
 * ksys_read: listed [COUNTER], optimized (its detour only adds to a per-CPU
 * count), and okprobe_read_count() counts every read of two processes.
 */
static int test_counter_probe(void)
{
	const int reads = IS_X86 ? 3000 : 1000;
	char params[96], line[512] = "";
	long before, after;
	int optimized;

	snprintf(params, sizeof(params), "%s counter=1", sample_params);
	STEP(load_okprobe_and_sample_with(params));
	optimized = wait_listed_optimized(sample_where, line, sizeof(line));
	before = sample_counter("entries");
	read_from_two_processes(reads);
	after = sample_counter("entries");
	STEP(unload_sample_and_okprobe());
	CHECK(strstr(line, "[COUNTER]") || !optimized,
	      "okprobe/list shows '%s'", line);
	CHECK(optimized, "the counting probe never showed [OPTIMIZED]: '%s'",
	      line);
	CHECK(before >= 0 && after - before >= 2 * reads,
	      "counted %ld, then %ld: %ld for %d reads", before, after,
	      after - before, 2 * reads);
	return 0;
}

/*
 * A child that waits for a byte on go (with readv: neither ksys_read nor
 * an open), then makes RETURN_READS calls and exits: reads of 1, 2, ...
 * bytes of /dev/zero, or (opens) opens of /dev/zero (closed again: the
 * same descriptor each time) and of a missing file (-ENOENT) in turn.
 */
/*
 * What start_waiting_reader()'s child reads: /dev/zero, or a file
 * probe_events_position_steps() made.
 */
static const char *reader_file = "/dev/zero";

static pid_t start_waiting_reader(int *go, int opens)
{
	int pipes[2];
	pid_t child;

	if (pipe(pipes))
		return -1;
	child = fork();
	if (child == 0) {
		static char buffer[RETURN_READS];
		struct iovec byte = { buffer, 1 };
		int zero, i;

		close(pipes[1]);
		if (readv(pipes[0], &byte, 1) != 1)
			_exit(2);
		for (i = 0; opens && i < RETURN_READS; i++) {
			int fd = open(i % 2 ? "/nonexistent" : "/dev/zero",
				      O_RDONLY);

			if ((fd < 0) != (i % 2))
				_exit(3);
			if (fd >= 0)
				close(fd);
		}
		if (opens)
			_exit(0);
		zero = open(reader_file, O_RDONLY);
		for (i = 1; i <= RETURN_READS; i++)
			if (read(zero, buffer, i) != i)
				_exit(3);
		_exit(0);
	}
	close(pipes[0]);
	*go = pipes[1];
	return child;
}

static int finish_reader(pid_t child, int go)
{
	int status = 0;

	if (write(go, "g", 1) != 1)
		return -1;
	close(go);
	if (waitpid(child, &status, 0) != child)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* The r: event's returns and their sum, from the trace. */
static int traced_returns(long *sum)
{
	static char trace[1 << 17];
	char *line;
	int count = 0;

	*sum = 0;
	if (read_file(TRACING "/trace", trace, sizeof(trace)))
		return -1;
	for (line = strtok(trace, "\n"); line; line = strtok(NULL, "\n")) {
		char *value = strstr(line, " ret=");

		if (line[0] == '#' || !value)
			continue;
		/* $retval prints as unsigned hex: -2 is 0xff...fe. */
		*sum += (long)strtoull(value + 5, NULL, 0);
		count++;
	}
	return count;
}

/*
 * One function's returns for one child's RETURN_READS calls: okprobe's
 * (the sample client, pid=) and, in a second phase, the kernel's r: event
 * (filtered to the child), count and sum alike. opens: do_sys_openat2's
 * workload, whose sum is RETURN_READS / 2 times (the descriptor - 2).
 */
static int return_values_of(const char *symbol, int opens)
{
	const long reads_sum = RETURN_READS * (RETURN_READS + 1) / 2;
	char params[128], line[512], filter[64], event[128], needle[64];
	long returns, sum, entries, traced_sum;
	int go, ret, traced;
	pid_t child;

	child = start_waiting_reader(&go, opens);
	CHECK(child > 0, "fork: %s", strerror(errno));
	snprintf(params, sizeof(params), "symbol=%s return=1 pid=%d", symbol,
		 child);
	ret = load_module(SAMPLE_KO, params);
	if (ret) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	CHECK(ret == 0, "the sample client's return probe on %s: %s", symbol,
	      strerror(-ret));
	snprintf(needle, sizeof(needle), "%s+", symbol);
	CHECK(list_line(needle, line, sizeof(line)),
	      "no %s line in okprobe/list", symbol);
	CHECK(strstr(line, " [RETURN]"), "not a [RETURN] line: %s", line);
	ret = finish_reader(child, go);
	CHECK(ret == 0, "the child exited with %d", ret);
	returns = sample_counter("returns");
	sum = sample_counter("return_sum");
	entries = sample_counter("entries");
	ret = unload_module("okprobe_sample");
	CHECK(ret == 0, "unloading the sample client: %s", strerror(-ret));
	/*
	 * do_sys_openat2() returns an int on newer kernels (7.3): the upper half of
	 * rax, which a return probe reads whole as the kernel's own do
	 * (regs_return_value), is then undefined. The descriptors' sum is
	 * in the lower half.
	 */
	if (opens)
		sum = (int)sum;
	CHECK(entries == RETURN_READS && returns == RETURN_READS &&
	      (opens ? (sum + RETURN_READS) % (RETURN_READS / 2) == 0 &&
		       (sum + RETURN_READS) / (RETURN_READS / 2) >= 3 :
		       sum == reads_sum),
	      "%d calls of %s: %ld entries, %ld returns adding up to %ld",
	      RETURN_READS, symbol, entries, returns, sum);
	say("# okretprobe on %s: %ld returns adding up to %ld", symbol,
	    returns, sum);
	/* The kernel's own return probe, on the same workload. */
	if (!exists(KPROBE_EVENTS))
		return 0;
	child = start_waiting_reader(&go, opens);
	CHECK(child > 0, "fork: %s", strerror(errno));
	snprintf(event, sizeof(event), "r:okptest/ret %s ret=$retval", symbol);
	ret = write_file(KPROBE_EVENTS, event);
	if (!ret) {
		snprintf(filter, sizeof(filter), "common_pid == %d", child);
		ret = write_file(TRACING "/events/okptest/ret/filter", filter);
	}
	if (!ret)
		ret = write_file(TRACING "/trace", "");
	if (!ret)
		ret = write_file(TRACING "/events/okptest/ret/enable", "1");
	if (ret) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		clear_okptest_events();
	}
	/*
	 * Without kprobes on ftrace (riscv 6.12) the kernel refuses a kprobe,
	 * and so a kretprobe, at a traced function's call site.
	 */
	if (ret == -EINVAL && !kallsyms_address("kprobe_ftrace_handler")) {
		say("# the kernel's r: event on %s: refused (no kprobes on ftrace), nothing to compare",
		    symbol);
		return 0;
	}
	CHECK(ret == 0, "the kernel's r: event on %s: %s", symbol,
	      strerror(-ret));
	ret = finish_reader(child, go);
	write_file(TRACING "/events/okptest/ret/enable", "0");
	traced = traced_returns(&traced_sum);
	CHECK(clear_okptest_events() == 0, "clearing kprobe_events");
	CHECK(ret == 0, "the child exited with %d", ret);
	say("# the kernel's r: event on %s: %d returns adding up to %ld",
	    symbol, traced, traced_sum);
	/* The kernel's event types $retval by BTF: an int as an int. */
	if (opens)
		traced_sum = (int)traced_sum;
	CHECK(traced == returns && traced_sum == sum,
	      "okprobe saw %ld returns of %s adding up to %ld, the kernel's kretprobe %d adding up to %ld",
	      returns, symbol, sum, traced, traced_sum);
	return 0;
}

static int return_values_steps(void)
{
	STEP(return_values_of("ksys_read", 0));
	return return_values_of("do_sys_openat2", 1);
}

/* Children blocked in read() on a pipe: ksys_read is pending in each. */
static int start_blocked_readers(pid_t *children, int count, int *writer)
{
	int pipes[2], i;

	if (pipe(pipes))
		return -1;
	for (i = 0; i < count; i++) {
		children[i] = fork();
		if (children[i] == 0) {
			char byte;

			close(pipes[1]);
			_exit(read(pipes[0], &byte, 1) == 1 ? 0 : 4);
		}
	}
	close(pipes[0]);
	*writer = pipes[1];
	/* Long enough for every child to block in read(). */
	usleep(300 * 1000);
	return 0;
}

/*
 * Calls of the sample's return probe on ksys_read inside it now, but for
 * the read() that asks (the sample's entries less returns, taken at once).
 */
static long sample_pending(void)
{
	return sample_counter("pending") - 1;
}

static int kill_and_unload_steps(void)
{
	pid_t children[RETURN_SLEEPERS];
	int writer, ret, i, status, exited = 0;
	long pending, entries, returns, missed;

	/* Killed inside ksys_read: it returns (-ERESTARTSYS), they die. */
	ret = load_module(SAMPLE_KO, "symbol=ksys_read return=1");
	CHECK(ret == 0, "the sample client's return probe on ksys_read: %s",
	      strerror(-ret));
	CHECK(start_blocked_readers(children, RETURN_SLEEPERS, &writer) == 0,
	      "pipe: %s", strerror(errno));
	pending = sample_pending();
	for (i = 0; i < RETURN_SLEEPERS; i++)
		kill(children[i], SIGKILL);
	for (i = 0; i < RETURN_SLEEPERS; i++)
		if (waitpid(children[i], &status, 0) == children[i] &&
		    WIFSIGNALED(status))
			exited++;
	close(writer);
	CHECK(pending == RETURN_SLEEPERS,
	      "%ld calls pending inside ksys_read, not the %d blocked readers",
	      pending, RETURN_SLEEPERS);
	CHECK(exited == RETURN_SLEEPERS, "%d of %d readers were killed",
	      exited, RETURN_SLEEPERS);
	pending = sample_pending();
	CHECK(pending == 0, "%ld killed reads never returned", pending);
	/* okprobe goes away while readers sleep inside ksys_read. */
	CHECK(start_blocked_readers(children, RETURN_SLEEPERS, &writer) == 0,
	      "pipe: %s", strerror(errno));
	pending = sample_pending();
	ret = unload_module("okprobe_sample");
	if (!ret)
		ret = unload_okprobe();
	for (i = 0; i < RETURN_SLEEPERS; i++)
		if (write(writer, "x", 1) != 1)
			break;
	close(writer);
	exited = 0;
	for (i = 0; i < RETURN_SLEEPERS; i++)
		if (waitpid(children[i], &status, 0) == children[i] &&
		    WIFEXITED(status) && WEXITSTATUS(status) == 0)
			exited++;
	CHECK(pending == RETURN_SLEEPERS,
	      "%ld calls pending inside ksys_read at the unload, not %d",
	      pending, RETURN_SLEEPERS);
	CHECK(ret == 0, "unloading with readers inside ksys_read: %s",
	      strerror(-ret));
	CHECK(exited == RETURN_SLEEPERS,
	      "%d of %d readers got their byte after okprobe unloaded",
	      exited, RETURN_SLEEPERS);
	/* do_exit never returns: its instances go back at the reaping. */
	STEP(load_okprobe(default_params));
	ret = load_module(SAMPLE_KO, "symbol=do_exit return=1");
	CHECK(ret == 0, "the sample client's return probe on do_exit: %s",
	      strerror(-ret));
	/*
	 * 300 exits, far more than the pool's first 16 instances: taken
	 * instances go back when the tasks are reaped, so none is missed.
	 */
	for (i = 0; i < 300; i++) {
		pid_t child = fork();

		if (child == 0)
			_exit(0);
		if (child > 0)
			waitpid(child, NULL, 0);
	}
	entries = sample_counter("entries");
	returns = sample_counter("returns");
	missed = sample_counter("missed");
	ret = unload_module("okprobe_sample");
	CHECK(ret == 0, "unloading the sample client: %s", strerror(-ret));
	CHECK(entries >= 300 && returns == 0 && missed == 0,
	      "300 exits: %ld entries into do_exit, %ld returns, %ld missed",
	      entries, returns, missed);
	return 0;
}

/* ---- okprobe_events: probes from the shell, hits as trace events ----- */

#define EVENT_DIR TRACING "/events/okptest_ev"

/*
 * The values of name=N in the trace's lines of event (": event: ("), their
 * count, and whether every one also had want (NULL: anything).
 */
static int traced_values(const char *event, const char *name, long *sum,
			 const char *want, int *all_want)
{
	static char trace[1 << 18];
	char needle[80], field[80], *line;
	int count = 0;

	*sum = 0;
	*all_want = 1;
	snprintf(needle, sizeof(needle), " %s: (", event);
	snprintf(field, sizeof(field), " %s=", name);
	if (read_file(TRACING "/trace", trace, sizeof(trace)))
		return -1;
	for (line = strtok(trace, "\n"); line; line = strtok(NULL, "\n")) {
		char *value = strstr(line, field);

		if (line[0] == '#' || !strstr(line, needle) || !value)
			continue;
		*sum += strtol(value + strlen(field), NULL, 0);
		if (want && !strstr(line, want) && *all_want) {
			*all_want = 0;
			say("# not %s: %s", want, line);
		}
		count++;
	}
	return count;
}

/*
 * event (okptest_ev/NAME) on, filtered to one child's RETURN_READS
 * reads of 1..100 bytes: the events' count and the sum of name=.
 */
static int event_reads(const char *event, const char *name, long *sum,
		       const char *want, int *all_want)
{
	char path[160], filter[64];
	int go, ret, count;
	pid_t child;

	child = start_waiting_reader(&go, 0);
	if (child <= 0)
		return -1;
	snprintf(filter, sizeof(filter), "common_pid == %d", child);
	snprintf(path, sizeof(path), TRACING "/events/%s/filter", event);
	ret = write_file(path, filter);
	if (!ret)
		ret = clear_file(TRACING "/trace");
	snprintf(path, sizeof(path), TRACING "/events/%s/enable", event);
	if (!ret)
		ret = write_file(path, "1");
	if (ret) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return ret;
	}
	ret = finish_reader(child, go);
	write_file(path, "0");
	count = traced_values(strchr(event, '/') + 1, name, sum, want,
			      all_want);
	return ret ? -1 : count;
}

/*
 * A dereference with a known value: vfs_read()'s fourth argument points to
 * the file position (ksys_read()'s copy on its stack). The child reads a
 * file of 5050 bytes 1, 2, ..., 100 bytes at a time, so the position
 * before read i is i(i - 1)/2 and the positions add up to 166650. The
 * kernel's kprobe event with the same line must see the same.
 */
#define POSITION_FILE "/tmp/okptest-positions"
#define POSITIONS_SUM 166650L

static int probe_events_position_steps(void)
{
	static char bytes[RETURN_READS * (RETURN_READS + 1) / 2];
	const char *line = "vfs_read pos=+0($arg4):s64 count=$arg3:u64";
	char definition[128];
	long sum = 0, kernel_sum = 0;
	int fd, count, all, ret;

	fd = open(POSITION_FILE, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0 && write(fd, bytes, sizeof(bytes)) == sizeof(bytes),
	      "writing %s: %s", POSITION_FILE, strerror(errno));
	close(fd);
	snprintf(definition, sizeof(definition), "p:okptest_ev/pos %s", line);
	ret = write_file(OKPROBE_EVENTS, definition);
	CHECK(ret == 0, "defining okptest_ev/pos: %s", strerror(-ret));
	reader_file = POSITION_FILE;
	count = event_reads("okptest_ev/pos", "pos", &sum, NULL, &all);
	say("# okptest_ev/pos: %d events, positions adding up to %ld", count,
	    sum);
	/* Gone first: the kernel refuses kprobes where okprobe has one. */
	ret = write_file(OKPROBE_EVENTS, "-:okptest_ev/pos");
	CHECK(ret == 0, "removing okptest_ev/pos: %s", strerror(-ret));
	if (exists(KPROBE_EVENTS)) {
		snprintf(definition, sizeof(definition), "p:okptest/pos %s",
			 line);
		if (write_file(KPROBE_EVENTS, definition) == 0) {
			ret = event_reads("okptest/pos", "pos", &kernel_sum, NULL,
					  &all);
			clear_okptest_events();
			say("# the kernel's p:okptest/pos, same line: %d events adding up to %ld",
			    ret, kernel_sum);
			CHECK(ret == RETURN_READS && kernel_sum == POSITIONS_SUM,
			      "the kernel's event: %d events, positions adding up to %ld",
			      ret, kernel_sum);
		} else {
			say("# the kernel refuses p:okptest/pos (riscv 6.12: a kprobe at a traced function's entry)");
		}
	}
	reader_file = "/dev/zero";
	unlink(POSITION_FILE);
	CHECK(count == RETURN_READS && sum == POSITIONS_SUM,
	      "%d events of %d reads, positions adding up to %ld (not %ld)",
	      count, RETURN_READS, sum, POSITIONS_SUM);
	return 0;
}

/* The error_log's last entry has text, and its caret under column. */
static int error_logged(const char *text, int column)
{
	static char log[1 << 16];
	char *entry, *caret;

	if (read_file(TRACING "/error_log", log, sizeof(log)))
		return 0;
	entry = strstr(log, text);
	if (!entry)
		return 0;
	while (strstr(entry + 1, text))
		entry = strstr(entry + 1, text);
	caret = strstr(entry, "  Command: ");
	caret = caret ? strchr(caret, '\n') : NULL;
	if (!caret)
		return 0;
	/* The caret line: the prefix's 11 columns, then column more. */
	return strspn(caret + 1, " ") == (size_t)(11 + column) &&
	       caret[1 + 11 + column] == '^';
}

/*
 * A hist trigger on okptest_ev/read over the child's reads: one bucket of
 * its 100 reads and their counts. Triggers see every hit, before the
 * event's filter, so other tasks' buckets may be there too. Kernels
 * without CONFIG_HIST_TRIGGERS (Debian's riscv64) have no hist file.
 */
static int events_hist_steps(void)
{
	const long reads_sum = RETURN_READS * (RETURN_READS + 1) / 2;
	static char text[1 << 16];
	char *entry_line;
	int found = 0, all, ret;
	long sum;

	if (!exists(EVENT_DIR "/read/hist")) {
		say("# no hist triggers in this kernel (CONFIG_HIST_TRIGGERS)");
		return 0;
	}
	ret = write_file(EVENT_DIR "/read/trigger", "hist:keys=common_pid:vals=count");
	CHECK(ret == 0, "a hist trigger on okptest_ev/read: %s", strerror(-ret));
	event_reads("okptest_ev/read", "count", &sum, NULL, &all);
	ret = read_file(EVENT_DIR "/read/hist", text, sizeof(text));
	write_file(EVENT_DIR "/read/trigger", "!hist:keys=common_pid:vals=count");
	CHECK(ret == 0, "reading okptest_ev/read's hist");
	for (entry_line = strstr(text, "hitcount:"); entry_line;
	     entry_line = strstr(entry_line + 9, "hitcount:")) {
		char *counted = strstr(entry_line + 9, "count:");

		if (strtol(entry_line + 9, NULL, 10) == RETURN_READS &&
		    counted && strtol(counted + 6, NULL, 10) == reads_sum)
			found = 1;
	}
	CHECK(found, "no bucket of %d hits and %ld in the hist trigger's table:\n%s",
	      RETURN_READS, reads_sum, text);
	return 0;
}

static int probe_events_steps(void)
{
	const long reads_sum = RETURN_READS * (RETURN_READS + 1) / 2;
	char text[4096], comm[32], want[64];
	long sum, kernel_sum;
	int count, all, ret, returns;

	STEP(load_okprobe(default_params));
	if (!exists(OKPROBE_EVENTS) && !exists(TRACING "/dynamic_events")) {
		STEP(unload_okprobe());
		return skip("the kernel has no dynamic trace events (CONFIG_DYNAMIC_EVENTS)");
	}
	CHECK(exists(OKPROBE_EVENTS), "no %s", OKPROBE_EVENTS);
	/* Written as a user would: a definition, read back canonical. */
	ret = write_file(OKPROBE_EVENTS,
			 "p:okptest_ev/read ksys_read fd=$arg1 count=$arg3:u64 comm=$comm\n");
	CHECK(ret == 0, "defining an event: %s", strerror(-ret));
	ret = write_file(OKPROBE_EVENTS, "r:okptest_ev/ret ksys_read ret=$retval:s64\n");
	/* Return probes need the kernel's rethook (not the riscv 6.1 ones). */
	returns = kallsyms_address("rethook_hook") != 0;
	CHECK(returns ? ret == 0 : ret == -EOPNOTSUPP,
	      "defining a return event: %s", strerror(-ret));
	CHECK(read_file(OKPROBE_EVENTS, text, sizeof(text)) == 0,
	      "reading okprobe_events");
	CHECK(strstr(text, "p:okptest_ev/read ksys_read fd=$arg1 count=$arg3:u64 comm=$comm\n") &&
	      (!returns || strstr(text, "r:okptest_ev/ret ksys_read ret=$retval:s64\n")),
	      "okprobe_events reads back:\n%s", text);
	CHECK(read_file(EVENT_DIR "/read/format", text, sizeof(text)) == 0,
	      "no format file for okptest_ev/read");
	CHECK(strstr(text, "field:u64 count;") &&
	      strstr(text, "field:__data_loc char[] comm;") &&
	      strstr(text, "print fmt:"),
	      "okptest_ev/read's format:\n%s", text);
	/* Every call of the child's 100 reads, with its arguments. */
	CHECK(read_file("/proc/self/comm", comm, sizeof(comm)) == 0, "no comm");
	comm[strcspn(comm, "\n")] = '\0';
	snprintf(want, sizeof(want), "comm=\"%s\"", comm);
	count = event_reads("okptest_ev/read", "count", &sum, want, &all);
	say("# okptest_ev/read: %d events, counts adding up to %ld", count, sum);
	CHECK(count == RETURN_READS && sum == reads_sum && all,
	      "%d events of the child's %d reads, counts adding up to %ld (not %ld)%s",
	      count, RETURN_READS, sum, reads_sum,
	      all ? "" : ", not every one with the child's comm");
	if (returns) {
		count = event_reads("okptest_ev/ret", "ret", &sum, NULL, &all);
		say("# okptest_ev/ret: %d events, return values adding up to %ld",
		    count, sum);
		CHECK(count == RETURN_READS && sum == reads_sum,
		      "%d return events of %d reads, adding up to %ld (not %ld)",
		      count, RETURN_READS, sum, reads_sum);
	}
	STEP(events_hist_steps());
	STEP(probe_events_position_steps());
	/* The kernel's own event, same line, same workload. */
	if (exists(KPROBE_EVENTS) &&
	    write_file(KPROBE_EVENTS,
		       "p:okptest/read ksys_read fd=$arg1 count=$arg3:u64 comm=$comm") == 0) {
		count = event_reads("okptest/read", "count", &kernel_sum, NULL,
				    &all);
		clear_okptest_events();
		CHECK(count == RETURN_READS && kernel_sum == reads_sum,
		      "the kernel's kprobe event: %d events adding up to %ld",
		      count, kernel_sum);
		say("# the kernel's p:okptest/read, same line: %d events adding up to %ld",
		    count, kernel_sum);
	}
	/* okprobe_profile: hits per event. */
	CHECK(read_file(TRACING "/okprobe_profile", text, sizeof(text)) == 0 &&
	      strstr(text, "read"), "okprobe_profile:\n%s", text);
	/* Removal: refused while enabled (on both CPUs), then done. */
	CHECK(write_file(EVENT_DIR "/read/enable", "1") == 0, "enabling again");
	read_proc_repeatedly(ENTRY_READS);
	ret = write_file(OKPROBE_EVENTS, "-:okptest_ev/read");
	CHECK(ret == -EBUSY, "removing an enabled event: %s, not EBUSY",
	      strerror(-ret));
	CHECK(write_file(EVENT_DIR "/read/enable", "0") == 0, "disabling");
	ret = write_file(OKPROBE_EVENTS, "-:okptest_ev/read");
	CHECK(ret == 0, "removing a disabled event: %s", strerror(-ret));
	CHECK(!exists(EVENT_DIR "/read"), "events/okptest_ev/read is still there");
	/* Bad lines: their errno, and an error_log entry with its caret. */
	ret = write_file(OKPROBE_EVENTS, "p:okptest_ev/bad ksys_read $retval");
	CHECK(ret == -EINVAL && error_logged("okprobe_events: error: $retval is not available on probe", 27),
	      "$retval in a p event: %s, error_log entry %s", strerror(-ret),
	      error_logged("$retval", 27) ? "right" : "wrong or missing");
	ret = write_file(OKPROBE_EVENTS, "p okptest_no_such_function");
	CHECK(ret == -ENOENT && error_logged("Invalid probed address or symbol", 2),
	      "an unknown symbol: %s", strerror(-ret));
	ret = write_file(OKPROBE_EVENTS, "p:okptest_ev/x type_show");
	CHECK(ret == -EADDRNOTAVAIL && error_logged("The symbol is not unique", 15),
	      "a name several functions have: %s", strerror(-ret));
	/* Refused addresses: the probe's errno, the kernel's entry. */
	ret = write_file(OKPROBE_EVENTS, "p:okptest_ev/x ksys_read+1");
	CHECK(ret == -EILSEQ &&
	      error_logged("Probe point is not an instruction boundary", 15),
	      "inside an instruction: %s", strerror(-ret));
	ret = write_file(OKPROBE_EVENTS, "p:okptest_ev/x notifier_call_chain");
	CHECK(ret == -EPERM && error_logged("Failed to register probe event", 15),
	      "a NOKPROBE function: %s", strerror(-ret));
	ret = write_file(OKPROBE_EVENTS, "p:okptest_ev/x ksys_read +0(%nosuch)");
	CHECK(ret == -EINVAL && error_logged("Invalid register name", 28),
	      "an unknown register: %s", strerror(-ret));
	ret = write_file(OKPROBE_EVENTS, "p:okptest_ev/read2 ksys_read");
	CHECK(ret == 0, "defining okptest_ev/read2: %s", strerror(-ret));
	ret = write_file(OKPROBE_EVENTS, "p:okptest_ev/read2 ksys_read");
	CHECK(ret == -EEXIST, "a second okptest_ev/read2: %s", strerror(-ret));
	/* Nor the name of a trace event that is not okprobe's. */
	if (exists(TRACING "/events/sched/sched_switch")) {
		ret = write_file(OKPROBE_EVENTS, "p:sched/sched_switch ksys_read");
		CHECK(ret == -EEXIST, "an event named sched/sched_switch: %s",
		      strerror(-ret));
	}
	/* ">": every event goes, and okprobe may leave. */
	CHECK(clear_file(OKPROBE_EVENTS) == 0, "truncating okprobe_events");
	CHECK(read_file(OKPROBE_EVENTS, text, sizeof(text)) == 0 && !text[0],
	      "okprobe_events after >: %s", text);
	CHECK(!exists(EVENT_DIR), "events/okptest_ev is still there");
	return unload_okprobe();
}

/*
 * Lines that mean the same to kprobe_events and okprobe_events: written
 * to both (the kernel's under group okptest, okprobe's under okptest_ev),
 * each must read back the same after the name and give the same format
 * fields (types, names, offsets, sizes); a bad line must get the same
 * errno from both, and the same error_log text and caret. ksys_read(fd,
 * buf, count) is the probed function; %REG names are the arch's.
 */
static const char *const same_lines[] = {
	"p ksys_read",
	"p ksys_read $stack $stack0 +0($stack)",
	"p ksys_read fd=$arg1 buf=$arg2 count=$arg3",
	"p ksys_read c=$arg3:u32 s=$arg3:s16 x=$arg3:x8 b=$arg3:b4@2/32",
	"p ksys_read comm=$comm",
	"p ksys_read first=+0($arg2):u8 word=+8(+0($stack)):x64",
	"p ksys_read bytes=+0($stack):u8[4]",
	"p ksys_read name=@init_task+0:x64",
	"p ksys_read \\\"immediate\" n=\\42",
	/* Typed: 6.12 types an untyped $retval from BTF, okprobe cannot. */
	"r ksys_read $retval:x64",
	"r ksys_read ret=$retval:s64 c=$comm",
	"r4 ksys_read ret=$retval:u32",
	"p ksys_read%return $retval:s32",
#ifdef __x86_64__
	"p ksys_read di=%di si=%si dx=%dx:u64 ip=%ip sp=%sp ax=%ax:s32",
#else
	"p ksys_read a0=%a0 a1=%a1 a2=%a2:u64 ra=%ra sp=%sp epc=%epc:s32",
#endif
};

static const char *const bad_lines[] = {
	"p ksys_read $retval",
	"p ksys_read $stack10000",
	"p ksys_read $arg10000",
	"p ksys_read $none_var",
	"p ksys_read %none_reg",
	"p ksys_read @12345678abcde",
	"p ksys_read arg1=\\x",
	"p ksys_read +0@0)",
	"p ksys_read +0ab1(@0)",
	"p ksys_read +0(+0(@0)",
	"p ksys_read +0($comm)",
	"p ksys_read &1",
	"p ksys_read +0(@11):u8[10",
	"p ksys_read +0(@11):u8[256]",
	"p ksys_read @11:unknown_type",
	"p ksys_read $stack0:string",
	"p ksys_read @11:b10@a/16",
	"p ksys_read =@11",
	"p ksys_read var.1=@11",
	"p ksys_read var1=@11 var1=@12",
	"p ksys_read arg1=",
	"r ksys_read+10",
	"p ksys_read%hoge",
	"p okptest_no_such_function",
	/* Static functions of that name in several files, on every kernel. */
	"p type_show",
	"p:/bar ksys_read",
	"p:foo/bar.1 ksys_read",
};

/* line with its name: "p:GROUP/eN rest" (r4 keeps its maxactive). */
static void named_line(char *to, size_t size, const char *line,
		       const char *group, int n)
{
	size_t head = strcspn(line, " ");

	snprintf(to, size, "%.*s:%s/e%d%s", (int)head, line, group, n,
		 line + head);
}

/* The text after "GROUP/eN " of the file's line for that event. */
static int read_back(const char *file, const char *group, int n, char *to,
		     size_t size)
{
	static char text[1 << 16];
	char needle[64], *line;

	snprintf(needle, sizeof(needle), ":%s/e%d ", group, n);
	if (read_file(file, text, sizeof(text)))
		return -1;
	line = strstr(text, needle);
	if (!line)
		return -1;
	line += strlen(needle);
	snprintf(to, size, "%.*s", (int)strcspn(line, "\n"), line);
	return 0;
}

/* The "field:" lines of an event's format, after the common ones. */
static int format_fields(const char *group, int n, char *to, size_t size)
{
	static char text[1 << 14];
	char path[160], *line;
	size_t used = 0;

	snprintf(path, sizeof(path), TRACING "/events/%s/e%d/format", group, n);
	if (read_file(path, text, sizeof(text)))
		return -1;
	to[0] = '\0';
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		if (strstr(line, "field:") && !strstr(line, "common_") &&
		    used + strlen(line) + 2 < size)
			used += snprintf(to + used, size - used, "%s\n", line);
	return 0;
}

/* The last error_log entry's message and caret, as one string. */
static void last_error(char *to, size_t size)
{
	static char log[1 << 16];
	char *entry, *next;

	to[0] = '\0';
	if (read_file(TRACING "/error_log", log, sizeof(log)))
		return;
	entry = strchr(log, '[');
	if (!entry)
		return;
	while ((next = strstr(entry + 1, "\n[")))
		entry = next + 1;
	/* "[time] LOCATION: error: TEXT\n  Command: ...\n  ...^": from TEXT. */
	next = strstr(entry, ": error: ");
	snprintf(to, size, "%s", next ? next + 9 : entry);
}

static int probe_events_like_kernel_steps(void)
{
	char ours[1024], theirs[1024], kernel_fields[1024], line[256],
		kernel_error[512], our_error[512];
	int i, ret, kernel_ret, differ;

	STEP(load_okprobe(default_params));
	if (!exists(KPROBE_EVENTS) || !exists(OKPROBE_EVENTS)) {
		STEP(unload_okprobe());
		return skip("the kernel has no kprobe_events, or okprobe no okprobe_events");
	}
	if (write_file(KPROBE_EVENTS, "p:okptest/probe ksys_read")) {
		STEP(unload_okprobe());
		return skip("the kernel takes no kprobe at ksys_read+0 (no kprobes on ftrace)");
	}
	clear_okptest_events();
	/*
	 * The kernel's first, then okprobe's, never both: where the
	 * kernel's kprobe is a breakpoint in the function, okprobe keeps
	 * out of that function (the coexistence rule).
	 */
	for (i = 0; i < (int)ARRAY_SIZE(same_lines); i++) {
		named_line(line, sizeof(line), same_lines[i], "okptest", i);
		kernel_ret = write_file(KPROBE_EVENTS, line);
		if (!kernel_ret) {
			CHECK(read_back(KPROBE_EVENTS, "okptest", i, theirs,
					sizeof(theirs)) == 0,
			      "'%s' does not read back from kprobe_events",
			      same_lines[i]);
			CHECK(format_fields("okptest", i, kernel_fields,
					    sizeof(kernel_fields)) == 0,
			      "'%s': no format file for the kernel's", same_lines[i]);
			snprintf(line, sizeof(line), "-:okptest/e%d", i);
			CHECK(write_file(KPROBE_EVENTS, line) == 0, "removing %s", line);
		}
		named_line(line, sizeof(line), same_lines[i], "okptest_ev", i);
		ret = write_file(OKPROBE_EVENTS, line);
		/* Without rethook (riscv 6.1) okprobe has no return probes. */
		if (ret == -EOPNOTSUPP && !kallsyms_address("rethook_hook") &&
		    (same_lines[i][0] == 'r' || strstr(same_lines[i], "%return")))
			continue;
		CHECK(kernel_ret == 0 && ret == 0,
		      "'%s': the kernel says %s, okprobe %s", same_lines[i],
		      strerror(-kernel_ret), strerror(-ret));
		CHECK(read_back(OKPROBE_EVENTS, "okptest_ev", i, ours, sizeof(ours)) == 0,
		      "'%s' does not read back from okprobe_events", same_lines[i]);
		CHECK(!strcmp(ours, theirs),
		      "'%s' reads back as '%s' from the kernel, '%s' from okprobe",
		      same_lines[i], theirs, ours);
		CHECK(format_fields("okptest_ev", i, ours, sizeof(ours)) == 0,
		      "'%s': no format file for okprobe's", same_lines[i]);
		CHECK(!strcmp(ours, kernel_fields),
		      "'%s' has the kernel's fields\n%s\nand okprobe's\n%s",
		      same_lines[i], kernel_fields, ours);
		snprintf(line, sizeof(line), "-:okptest_ev/e%d", i);
		CHECK(write_file(OKPROBE_EVENTS, line) == 0, "removing %s", line);
	}
	say("# %d lines read back alike, with the same fields", i);
	for (i = 0, differ = 0; i < (int)ARRAY_SIZE(bad_lines); i++) {
		kernel_ret = write_file(KPROBE_EVENTS, bad_lines[i]);
		last_error(kernel_error, sizeof(kernel_error));
		ret = write_file(OKPROBE_EVENTS, bad_lines[i]);
		last_error(our_error, sizeof(our_error));
		if (kernel_ret && ret == kernel_ret &&
		    !strcmp(our_error, kernel_error))
			continue;
		/*
		 * okprobe's errors are 6.1's. Three changed later: 6.12 types
		 * $argN from BTF ("This variable is not found at this probe
		 * point", ENOENT) and gives EINVAL for an unknown symbol and
		 * for a name several functions have (the same error_log text).
		 */
		if (kernel_ret && ret && (strstr(bad_lines[i], "$arg10000") ||
					  strstr(bad_lines[i], "no_such_function") ||
					  (strstr(bad_lines[i], "type_show") &&
					   !strcmp(our_error, kernel_error)))) {
			say("# '%s': %s here, %s from okprobe (6.1's); the kernel says '%.*s'",
			    bad_lines[i], strerror(-kernel_ret), strerror(-ret),
			    (int)strcspn(kernel_error, "\n"), kernel_error);
			continue;
		}
		differ++;
		say("# '%s': the kernel says %s, okprobe %s; the kernel's error_log entry\n%s\nokprobe's\n%s",
		    bad_lines[i], strerror(-kernel_ret), strerror(-ret),
		    kernel_error, our_error);
	}
	CHECK(!differ, "%d of %d bad lines refused otherwise than by the kernel",
	      differ, i);
	say("# %d bad lines refused alike, with the same error_log entry", i);
	clear_okptest_events();
	CHECK(clear_file(OKPROBE_EVENTS) == 0, "truncating okprobe_events");
	return unload_okprobe();
}

static int test_probe_events_like_kernel(void)
{
	int ret;

	mount_tracefs_if_needed();
	ret = probe_events_like_kernel_steps();
	if (ret && ret != RESULT_SKIP) {
		clear_okptest_events();
		clear_file(OKPROBE_EVENTS);
		unload_module("okprobe");
	}
	return ret;
}

static int test_probe_events(void)
{
	int ret;

	mount_tracefs_if_needed();
	ret = probe_events_steps();
	if (ret && ret != RESULT_SKIP) {
		write_file(EVENT_DIR "/read/enable", "0");
		write_file(EVENT_DIR "/ret/enable", "0");
		clear_file(OKPROBE_EVENTS);
		clear_okptest_events();
		unload_module("okprobe");
	}
	return ret;
}

/*
 * An okprobe_events test from userspace: steps on a mounted tracefs; after
 * a failure, the event it had on (enable_file) goes off and every event
 * and okprobe go, so the next test starts clean.
 */
static int events_test(int (*steps)(void), const char *enable_file)
{
	int ret;

	mount_tracefs_if_needed();
	ret = steps();
	if (ret && ret != RESULT_SKIP) {
		if (enable_file)
			write_file(enable_file, "0");
		clear_file(OKPROBE_EVENTS);
		unload_module("okprobe");
	}
	return ret;
}

/*
 * trace-cmd, as an operator records trace events: "trace-cmd record -e
 * GROUP:EVENT" over an okprobe_events event while okptest reads, then
 * "trace-cmd report", which reads the file back through libtraceevent and
 * the event's format file. make check's guests get Debian 13's trace-cmd
 * and its libraries under /usr (tools/debian13.py, guest_tools()).
 */
#define TRACE_CMD "/usr/bin/trace-cmd"
#define TRACE_CMD_DATA "/tmp/okptest-trace.dat"
#define TRACE_CMD_REPORT "/tmp/okptest-trace.txt"
#define TRACE_CMD_LOG "/tmp/okptest-trace-cmd.log"
/* Reads of a size nothing else reads, so the filter keeps only okptest's. */
#define TRACE_CMD_READ_SIZE 4093
#define TRACE_CMD_READ_SIZE_TEXT "4093"
#define TRACE_CMD_READS 100
#define TC_EVENT_DIR TRACING "/events/okptest_tc/read"

/* okptest's reads that the event counts: size TRACE_CMD_READ_SIZE. */
static void read_sized(int count)
{
	read_proc_sized(count, TRACE_CMD_READ_SIZE);
}

/* Starts trace-cmd with args, its output to out (or TRACE_CMD_LOG). */
static pid_t start_trace_cmd(char *const args[], const char *out)
{
	static char *const env[] = {
		"LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:/usr/lib/riscv64-linux-gnu",
		"PATH=/usr/bin:/bin:/sbin", NULL
	};
	pid_t child = fork();

	if (child == 0) {
		int log = open(TRACE_CMD_LOG, O_WRONLY | O_CREAT | O_APPEND, 0644);
		int to = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644) : log;

		dup2(open("/dev/null", O_RDONLY), 0);
		dup2(to, 1);
		dup2(log, 2);
		execve(TRACE_CMD, args, env);
		_exit(127);
	}
	return child;
}

/* Its exit status, or -1 if it did not end within seconds (then killed). */
static int wait_trace_cmd(pid_t child, int seconds)
{
	long long deadline = now_ms() + seconds * 1000LL;
	int status;

	while (now_ms() < deadline) {
		pid_t done = waitpid(child, &status, WNOHANG);

		if (done == child)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
		usleep(20000);
	}
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	return -1;
}

/* Whether the file reads as text (its first line). */
static int file_says(const char *path, const char *text)
{
	char content[64];

	return read_file(path, content, sizeof(content)) == 0 &&
	       !strncmp(content, text, strlen(text));
}

static int probe_events_trace_cmd_steps(void)
{
	static char report[1 << 20];
	char *const record[] = {
		"trace-cmd", "record", "-e", "okptest_tc:read",
		"-f", "count == " TRACE_CMD_READ_SIZE_TEXT,
		"-o", TRACE_CMD_DATA, NULL
	};
	char *const read_back[] = {
		"trace-cmd", "report", "-i", TRACE_CMD_DATA, NULL
	};
	char comm[32], want[64], log[2048];
	long long deadline;
	int status, events = 0, ours = 0, ret;
	pid_t recorder;
	char *line;

	if (!exists(TRACE_CMD))
		return skip("no " TRACE_CMD " here (make check's guests have Debian 13's)");
	STEP(load_okprobe(default_params));
	if (!exists(OKPROBE_EVENTS)) {
		STEP(unload_okprobe());
		return skip("the kernel has no dynamic trace events (CONFIG_DYNAMIC_EVENTS)");
	}
	ret = write_file(OKPROBE_EVENTS,
			 "p:okptest_tc/read ksys_read count=$arg3:u64 comm=$comm");
	CHECK(ret == 0, "defining okptest_tc/read: %s", strerror(-ret));
	unlink(TRACE_CMD_DATA);
	unlink(TRACE_CMD_LOG);
	recorder = start_trace_cmd(record, NULL);
	CHECK(recorder > 0, "fork: %s", strerror(errno));
	/* Recording once trace-cmd has enabled the event and tracing. */
	deadline = now_ms() + 60000;
	while (now_ms() < deadline &&
	       !(file_says(TC_EVENT_DIR "/enable", "1") &&
		 file_says(TRACING "/tracing_on", "1")))
		usleep(20000);
	usleep(200000);
	read_sized(TRACE_CMD_READS);
	kill(recorder, SIGINT);
	status = wait_trace_cmd(recorder, 120);
	if (read_file(TRACE_CMD_LOG, log, sizeof(log)))
		log[0] = '\0';
	CHECK(status == 0, "trace-cmd record exited with %d:\n%s", status, log);
	status = wait_trace_cmd(start_trace_cmd(read_back, TRACE_CMD_REPORT), 120);
	CHECK(status == 0, "trace-cmd report exited with %d", status);
	CHECK(read_file(TRACE_CMD_REPORT, report, sizeof(report)) == 0,
	      "no report");
	CHECK(read_file("/proc/self/comm", comm, sizeof(comm)) == 0, "no comm");
	comm[strcspn(comm, "\n")] = '\0';
	snprintf(want, sizeof(want), "comm=\"%s\"", comm);
	for (line = strtok(report, "\n"); line; line = strtok(NULL, "\n")) {
		if (!strstr(line, " read: "))
			continue;
		events++;
		ours += strstr(line, "count=" TRACE_CMD_READ_SIZE_TEXT) &&
			strstr(line, want);
		if (events == 1)
			say("# trace-cmd report: %s", line);
	}
	say("# trace-cmd recorded %d okptest_tc:read events, %d of okptest's %d reads",
	    events, ours, TRACE_CMD_READS);
	CHECK(events == TRACE_CMD_READS && ours == TRACE_CMD_READS,
	      "trace-cmd report has %d events, %d with okptest's count and comm, of %d reads",
	      events, ours, TRACE_CMD_READS);
	/* trace-cmd turned the event off again: it can go. */
	CHECK(file_says(TC_EVENT_DIR "/enable", "0"),
	      "trace-cmd left okptest_tc:read enabled");
	ret = write_file(OKPROBE_EVENTS, "-:okptest_tc/read");
	CHECK(ret == 0, "removing okptest_tc/read: %s", strerror(-ret));
	unlink(TRACE_CMD_DATA);
	unlink(TRACE_CMD_REPORT);
	return unload_okprobe();
}

static int test_probe_events_trace_cmd(void)
{
	return events_test(probe_events_trace_cmd_steps, TC_EVENT_DIR "/enable");
}

/*
 * perf, as "perf record -e GROUP:EVENT" and "perf stat -e GROUP:EVENT" open
 * an okprobe_events event: perf_event_open() of PERF_TYPE_TRACEPOINT with
 * the event's id, on okptest's own task. Counting first, then sampling
 * with PERF_SAMPLE_RAW, whose records are the event's, read from the
 * mmap'ed ring buffer.
 */
#define PF_EVENT_DIR TRACING "/events/okptest_pf/read"
#define PERF_READS 100
#define PERF_PAGES 8

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

/* The field's offset in the event's records, from its format file; -1. */
static int field_offset(const char *format_path, const char *field)
{
	char format[4096], *at;

	if (read_file(format_path, format, sizeof(format)))
		return -1;
	at = strstr(format, field);
	at = at ? strstr(at, "offset:") : NULL;
	return at ? atoi(at + 7) : -1;
}

static int probe_events_perf_steps(void)
{
	long page = sysconf(_SC_PAGESIZE), id;
	struct perf_event_mmap_page *control;
	int fd, offset, who, samples = 0, ours = 0, ret;
	unsigned long long count = 0, head, at, ring;
	char text[32], comm[32];
	uint8_t *data;

	STEP(load_okprobe(default_params));
	if (!exists(OKPROBE_EVENTS)) {
		STEP(unload_okprobe());
		return skip("the kernel has no dynamic trace events (CONFIG_DYNAMIC_EVENTS)");
	}
	ret = write_file(OKPROBE_EVENTS,
			 "p:okptest_pf/read ksys_read count=$arg3:u64 who=$comm");
	CHECK(ret == 0, "defining okptest_pf/read: %s", strerror(-ret));
	/* The id file is perf's (CONFIG_PERF_EVENTS). */
	if (read_file(PF_EVENT_DIR "/id", text, sizeof(text))) {
		CHECK(write_file(OKPROBE_EVENTS, "-:okptest_pf/read") == 0,
		      "removing okptest_pf/read");
		STEP(unload_okprobe());
		return skip("this kernel has no perf events (CONFIG_PERF_EVENTS)");
	}
	id = atol(text);
	/* " count;", not common_preempt_count's. */
	offset = field_offset(PF_EVENT_DIR "/format", " count;");
	who = field_offset(PF_EVENT_DIR "/format", " who;");
	CHECK(offset > 0 && who > 0, "no count or who field in okptest_pf/read's format");
	CHECK(read_file("/proc/self/comm", comm, sizeof(comm)) == 0, "no comm");
	comm[strcspn(comm, "\n")] = '\0';
	/* perf stat: a count of okptest's own reads. */
	fd = perf_open(id, 0);
	CHECK(fd >= 0, "perf_event_open(okptest_pf:read): %s", strerror(errno));
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	read_sized(PERF_READS);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	CHECK(read(fd, &count, sizeof(count)) == sizeof(count), "reading the count");
	close(fd);
	say("# perf counted %llu okptest_pf:read events of okptest's %d reads",
	    count, PERF_READS);
	/* Other tasks' reads are not okptest's: exactly its own. */
	CHECK(count == PERF_READS, "perf counted %llu of %d reads", count,
	      PERF_READS);
	/* perf record: each sample's raw record is the event's. */
	fd = perf_open(id, 1);
	CHECK(fd >= 0, "perf_event_open(sampling): %s", strerror(errno));
	control = mmap(NULL, (PERF_PAGES + 1) * page, PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd, 0);
	CHECK(control != MAP_FAILED, "mmap of perf's buffer: %s", strerror(errno));
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	read_sized(PERF_READS);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	head = __atomic_load_n(&control->data_head, __ATOMIC_ACQUIRE);
	ring = (unsigned long long)PERF_PAGES * page;
	data = (uint8_t *)control + page;
	for (at = 0; at + sizeof(struct perf_event_header) <= head;) {
		struct perf_event_header header;
		uint32_t size, location;
		uint64_t value;
		int32_t pid;
		int string_ok;

		memcpy(&header, data + at % ring, sizeof(header));
		if (!header.size)
			break;
		if (header.type == PERF_RECORD_SAMPLE &&
		    (at % ring) + header.size <= ring) {
			const uint8_t *raw = data + at % ring +
					     sizeof(header);

			memcpy(&size, raw, sizeof(size));
			/* trace_entry: type, flags, preempt_count, pid. */
			memcpy(&pid, raw + 4 + 4, sizeof(pid));
			memcpy(&value, raw + 4 + offset, sizeof(value));
			/* who: __data_loc, length << 16 | offset in the record. */
			memcpy(&location, raw + 4 + who, sizeof(location));
			string_ok = (location & 0xffff) + (location >> 16) <= size &&
				    (location >> 16) == strlen(comm) + 1 &&
				    !memcmp(raw + 4 + (location & 0xffff), comm,
					    strlen(comm) + 1);
			if (!samples++)
				say("# perf's first sample: %u bytes, pid %d, count %llu",
				    size, pid, (unsigned long long)value);
			ours += pid == getpid() && value == TRACE_CMD_READ_SIZE &&
				size >= (uint32_t)offset + 8 && string_ok;
		}
		at += header.size;
	}
	munmap(control, (PERF_PAGES + 1) * page);
	close(fd);
	say("# perf sampled %d okptest_pf:read records, %d with okptest's pid, count and comm",
	    samples, ours);
	CHECK(samples == PERF_READS && ours == PERF_READS,
	      "%d samples, %d with okptest's pid and count %d, of %d reads",
	      samples, ours, TRACE_CMD_READ_SIZE, PERF_READS);
	ret = write_file(OKPROBE_EVENTS, "-:okptest_pf/read");
	CHECK(ret == 0, "removing okptest_pf/read once perf let go: %s",
	      strerror(-ret));
	return unload_okprobe();
}

static int test_probe_events_perf(void)
{
	return events_test(probe_events_perf_steps, NULL);
}

/* Whether return_under_tracer() left a tracer on (a failure). */
static int return_tracer_started;

static void stop_return_tracer(void)
{
	write_file(TRACING "/tracing_on", "1");
	write_file(TRACING "/current_tracer", "nop");
	clear_file(TRACING "/set_ftrace_filter");
	clear_file(TRACING "/set_ftrace_pid");
	return_tracer_started = 0;
}

/*
 * The sample's return probe on ksys_read while one of ftrace's tracers
 * traces it too: the function tracer (another ftrace_ops at the same call
 * site) or the function graph tracer, which like rethook replaces the
 * return address (the two hooks nest). The tracer starts once the probe is
 * registered, filtered to ksys_read in one child, which then makes
 * RETURN_READS calls: okprobe sees each return with its value, and the
 * tracer each call.
 */
static int return_under_tracer(const char *tracer)
{
	const long reads_sum = RETURN_READS * (RETURN_READS + 1) / 2;
	static char trace[1 << 17];
	long returns, sum, entries, traced = 0;
	char params[128], pid[32], *line;
	int go, ret, stopped;
	pid_t child;

	child = start_waiting_reader(&go, 0);
	CHECK(child > 0, "fork: %s", strerror(errno));
	snprintf(params, sizeof(params), "symbol=ksys_read return=1 pid=%d",
		 child);
	snprintf(pid, sizeof(pid), "%d", child);
	ret = load_module(SAMPLE_KO, params);
	if (!ret) {
		return_tracer_started = 1;
		ret = write_file(TRACING "/set_ftrace_filter", "ksys_read");
	}
	if (!ret)
		ret = write_file(TRACING "/set_ftrace_pid", pid);
	if (!ret)
		ret = write_file(TRACING "/trace", "");
	if (!ret)
		ret = write_file(TRACING "/current_tracer", tracer);
	if (ret) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	CHECK(ret == 0, "the %s tracer on ksys_read beside a return probe: %s",
	      tracer, strerror(-ret));
	ret = finish_reader(child, go);
	/* Another tracer empties the buffer: it is read before nop. */
	stopped = write_file(TRACING "/tracing_on", "0");
	if (!stopped)
		stopped = read_file(TRACING "/trace", trace, sizeof(trace));
	write_file(TRACING "/tracing_on", "1");
	if (!stopped)
		stopped = write_file(TRACING "/current_tracer", "nop");
	CHECK(stopped == 0, "the %s tracer does not stop: %s", tracer,
	      strerror(-stopped));
	stop_return_tracer();
	returns = sample_counter("returns");
	sum = sample_counter("return_sum");
	entries = sample_counter("entries");
	CHECK(unload_module("okprobe_sample") == 0,
	      "unloading the sample client");
	CHECK(ret == 0, "the child exited with %d", ret);
	for (line = strtok(trace, "\n"); line; line = strtok(NULL, "\n"))
		traced += line[0] != '#' && strstr(line, "ksys_read");
	say("# under the %s tracer: %ld entries, %ld returns adding up to %ld; %ld traced calls",
	    tracer, entries, returns, sum, traced);
	CHECK(entries == RETURN_READS && returns == RETURN_READS &&
	      sum == reads_sum,
	      "%d reads under the %s tracer: %ld entries, %ld returns adding up to %ld (not %ld)",
	      RETURN_READS, tracer, entries, returns, sum, reads_sum);
	CHECK(traced == RETURN_READS,
	      "the %s tracer traced %ld of the child's %d calls of ksys_read",
	      tracer, traced, RETURN_READS);
	return 0;
}

/* Whether the kernel has tracer (a word of available_tracers). */
static int has_tracer(const char *tracer)
{
	static const char separators[] = { ' ', '\n', '\0' };
	char tracers[512] = "", *word;

	read_file(TRACING "/available_tracers", tracers, sizeof(tracers));
	for (word = strtok(tracers, separators); word;
	     word = strtok(NULL, separators))
		if (!strcmp(word, tracer))
			return 1;
	return 0;
}

/* Each of ftrace's tracers the kernel has, if none is in use. */
static int return_tracers_steps(void)
{
	char current[64] = "";

	read_file(TRACING "/current_tracer", current, sizeof(current));
	if (!guest_init && strcmp(current, "nop\n")) {
		say("# a tracer is in use (%s): return probes beside tracers not tried",
		    current);
		return 0;
	}
	if (has_tracer("function"))
		STEP(return_under_tracer("function"));
	if (has_tracer("function_graph"))
		STEP(return_under_tracer("function_graph"));
	return 0;
}

static int return_probe_steps(void)
{
	int ret;

	STEP(load_okprobe(default_params));
	if (!kallsyms_address("rethook_hook")) {
		ret = load_module(SAMPLE_KO, "symbol=ksys_read return=1");
		if (ret == 0)
			unload_module("okprobe_sample");
		CHECK(ret == -EOPNOTSUPP,
		      "without rethook the sample's return probe: %s",
		      strerror(-ret));
		return unload_okprobe();
	}
	STEP(return_values_steps());
	STEP(return_tracers_steps());
	STEP(kill_and_unload_steps());
	return unload_okprobe();
}

static int test_return_probe(void)
{
	int ret;

	mount_tracefs_if_needed();
	ret = return_probe_steps();
	if (ret) {
		if (return_tracer_started)
			stop_return_tracer();
		undo_sample_and_events();
	}
	return ret;
}

/*
 * okprobe traced and probed itself, as an operator might try it: every
 * text symbol of okprobe.ko offered to kprobe_events is refused (its text
 * is in the kernel's kprobe blacklist), and with the function tracer on,
 * 6 * 10^5 hits (5 * 10^5 through the jump, 10^5 through the breakpoint
 * with a post_handler) count exactly and leave the console clean. Fewer
 * through the breakpoint: on riscv the trap path is traced, and a traced
 * trap costs about half a millisecond under TCG.
 */
#define TRACED_JUMP_HITS 500000
#define TRACED_TRAP_HITS 100000

/* kprobe_events lines taken on okprobe's text symbols, of *offered. */
static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Each function name once: a kprobe_events line names a symbol, and the
 * kernel resolves a name to one address. The assembler's local labels
 * (.L*, and riscv's $x mapping symbols), which riscv's okprobe.ko keeps in
 * its symbol table by the tens of thousands, are not functions: a line
 * each took the riscv-6.12 guest almost five minutes.
 */
static int kprobe_events_on_okprobe(int *offered, char *first, size_t size)
{
	enum { MAX_NAMES = 1 << 16 };
	static char *names[MAX_NAMES];
	FILE *symbols = fopen("/proc/kallsyms", "r");
	char line[512], name[256], module[64], event[320], type;
	unsigned long address;
	int taken = 0, count = 0, i;

	*offered = 0;
	first[0] = '\0';
	if (!symbols)
		return -1;
	while (fgets(line, sizeof(line), symbols) && count < MAX_NAMES) {
		if (sscanf(line, "%lx %c %255s [%63[^]]]", &address, &type,
			   name, module) != 4 ||
		    strcmp(module, "okprobe") || (type != 't' && type != 'T') ||
		    !strncmp(name, ".L", 2) || name[0] == '$')
			continue;
		names[count] = strdup(name);
		if (names[count])
			count++;
	}
	fclose(symbols);
	qsort(names, count, sizeof(names[0]), compare_names);
	for (i = 0; i < count; i++) {
		if (i && !strcmp(names[i], names[i - 1]))
			continue;
		snprintf(event, sizeof(event), "p:okptest/self%d %s", *offered,
			 names[i]);
		(*offered)++;
		if (write_file(KPROBE_EVENTS, event) == 0 && !taken++)
			snprintf(first, size, "%s", names[i]);
	}
	for (i = 0; i < count; i++)
		free(names[i]);
	clear_okptest_events();
	return taken;
}

static int traced_hits(const char *config, int want_jump)
{
	const int calls = want_jump ? TRACED_JUMP_HITS : TRACED_TRAP_HITS;
	char reply[256], command[64];
	unsigned long hits = 0, bad = 1;
	long long started;
	int tries;

	snprintf(command, sizeof(command), "arm %s", config);
	started = now_ms();
	CHECK(bench_command(command, reply, sizeof(reply)) == 0,
	      "%s: %s", command, reply);
	for (tries = 0; want_jump && tries < 600; tries++) {
		if (bench_command("state", reply, sizeof(reply)) == 0 &&
		    strstr(reply, "optimized=1"))
			break;
		usleep(100 * 1000);
	}
	say("# %s: armed%s in %lld ms", config,
	    want_jump ? " and optimized" : "", now_ms() - started);
	CHECK(!want_jump || strstr(reply, "optimized=1"),
	      "%s never optimized under the function tracer: %s", config,
	      reply);
	snprintf(command, sizeof(command), "run %d", calls);
	started = now_ms();
	CHECK(bench_command(command, reply, sizeof(reply)) == 0,
	      "%s: %s", command, reply);
	say("# %s: %d calls under the function tracer in %lld ms", config,
	    calls, now_ms() - started);
	CHECK(strstr(reply, "hits=") && strstr(reply, "bad=") &&
	      sscanf(strstr(reply, "hits="), "hits=%lu", &hits) == 1 &&
	      sscanf(strstr(reply, "bad="), "bad=%lu", &bad) == 1,
	      "%s: no hits/bad in '%s'", config, reply);
	bench_command("disarm", reply, sizeof(reply));
	CHECK(hits == (unsigned long)calls && bad == 0, "%s under the function tracer: %s",
	      config, reply);
	return 0;
}

static int traced_steps(void)
{
	char first[256];
	int offered, taken, ret;
	long long started;

	STEP(load_okprobe(default_params));
	started = now_ms();
	taken = kprobe_events_on_okprobe(&offered, first, sizeof(first));
	say("# kprobe_events refused %d of okprobe's %d text symbols in %lld ms",
	    offered - taken, offered, now_ms() - started);
	CHECK(offered > 50 && taken == 0,
	      "kprobe_events took %d of okprobe's %d text symbols (first %s)",
	      taken, offered, first);
	ret = load_module(BENCH_KO, "");
	CHECK(ret == 0, "loading okprobe_bench.ko: %s", strerror(-ret));
	started = now_ms();
	CHECK(write_file(TRACING "/current_tracer", "function") == 0,
	      "the function tracer does not start");
	say("# the function tracer started in %lld ms", now_ms() - started);
	STEP(traced_hits("okprobe-pre", 1));
	STEP(traced_hits("okprobe-post", 0));
	started = now_ms();
	CHECK(write_file(TRACING "/current_tracer", "nop") == 0,
	      "the function tracer does not stop");
	say("# the function tracer stopped in %lld ms", now_ms() - started);
	ret = unload_module("okprobe_bench");
	CHECK(ret == 0, "unloading okprobe_bench: %s", strerror(-ret));
	return unload_okprobe();
}

static int test_traced_okprobe(void)
{
	char tracers[512] = "";
	int ret;

	mount_tracefs_if_needed();
	read_file(TRACING "/available_tracers", tracers, sizeof(tracers));
	if (!strstr(tracers, "function"))
		return skip("the kernel has no function tracer");
	if (!exists(KPROBE_EVENTS))
		return skip("the kernel has no kprobe_events");
	if (!exists(BENCH_KO))
		return skip("no okprobe_bench.ko for this architecture");
	/* On a machine, the function tracer may be someone else's. */
	read_file(TRACING "/current_tracer", tracers, sizeof(tracers));
	if (!guest_init && strcmp(tracers, "nop\n"))
		return skip("the function tracer is in use (current_tracer is not nop)");
	ret = traced_steps();
	if (ret) {
		write_file(TRACING "/current_tracer", "nop");
		unload_module("okprobe_bench");
		unload_module("okprobe");
	}
	return ret;
}

/*
 * A storm over real kernel code: probes every few bytes (non-boundaries
 * are refused with EILSEQ, as documented) of the first 20 bytes of up to
 * 200 functions on the read/write/pipe syscall paths, registered one by
 * one through okprobe_bench.ko while two processes make those syscalls,
 * optimized, taken out by the sysctl and put back, then unregistered in
 * one batch. Every refusal must be a documented errno, the probes must
 * be hit, and every site's text must end as it began.
 */
#define STORM_FUNCTIONS 200
/*
 * riscv registers a site in ~0.15 s under TCG and load (liveness over the
 * whole function): 800 keep its storm near two minutes. okptest_storm_sites=
 * on the kernel command line sets another count (make check gives the
 * lockdep kernels, where each site costs twice as much and whose scale
 * suite registers 1,000 sites one by one, 200).
 */
static int storm_sites(void)
{
	const char *sites = getenv("okptest_storm_sites");

	return sites && atoi(sites) > 0 ? atoi(sites) : IS_X86 ? 1200 : 800;
}

#define STORM_SITES storm_sites()
#define STORM_SPAN 20

static const char *const storm_prefixes[] = {
	"ksys_", "vfs_", "do_sys_", "__do_sys_", "__x64_sys_read",
	"__x64_sys_write", "__x64_sys_getppid", "__riscv_sys_read",
	"__riscv_sys_write", "__riscv_sys_getppid",
	"rw_verify_area", "__fdget", "__fget", "fput", "__fput",
	"security_file_", "fsnotify", "pipe_", "new_sync_", "do_iter_",
	"copy_page_to_iter", "iov_iter_", "_copy_to_user", "_copy_from_user",
	"touch_atime", "atime_needs_update", "file_update_time", "anon_pipe_",
	"mutex_lock", "mutex_unlock", "__wake_up", "do_getppid", "__task_pid",
};

/*
 * riscv: what the trap exit's __trace_hardirqs_on/off reach on the lockdep
 * kernels (lockdep, the stack walk behind CALLER_ADDR1, RCU): refused with
 * EPERM where a breakpoint cannot be taken, probed where it can.
 */
static const char *const storm_trap_prefixes[] = {
	"__trace_hardirqs_", "trace_hardirqs_", "lockdep_", "lock_acquire",
	"lock_release", "lock_is_held", "mark_lock", "mark_held_locks",
	"__lock_acquire", "find_held_lock", "return_address",
	"walk_stackframe", "arch_stack_walk", "__kernel_text_address",
	"kernel_text_address", "is_module_text_address", "__module_address",
	"__is_insn_slot_addr", "save_return_addr", "__rcu_read_",
	"rcu_is_watching", "rcu_read_lock_", "rcu_preempt_deferred_qs",
};

/*
 * Where kernel developers put probes first (scheduler, allocator, timers,
 * interrupts, locks, printk, RCU): probed before the syscall paths,
 * whatever their addresses. Names this kernel lacks are skipped; those on
 * a trap path are refused with EPERM.
 */
static const char *const storm_hot[] = {
	"__schedule", "finish_task_switch", "try_to_wake_up",
	"wake_up_process", "schedule", "kfree", "kmem_cache_alloc",
	"kmem_cache_free", "__kmalloc", "kmalloc_trace", "handle_mm_fault",
	"hrtimer_interrupt", "__hrtimer_run_queues", "tick_sched_timer",
	"scheduler_tick", "update_process_times", "ktime_get", "sched_clock",
	"native_sched_clock", "irq_exit_rcu", "irq_enter_rcu", "__do_softirq",
	"run_timer_softirq", "rcu_note_context_switch", "rcu_sched_clock_irq",
	"_raw_spin_lock", "_raw_spin_unlock", "_raw_spin_lock_irqsave",
	"_raw_spin_unlock_irqrestore", "queued_spin_lock_slowpath",
	"mutex_unlock", "update_curr", "enqueue_task_fair",
	"dequeue_task_fair", "pick_next_task_fair", "account_process_tick",
	"_printk", "vprintk_emit", "console_unlock", "__wake_up_common",
	"generic_handle_domain_irq", "handle_irq_event", "__rcu_read_lock",
	"__rcu_read_unlock", "__cond_resched", "__might_resched",
};

static int storm_is_hot(const char *name)
{
	return in_list(name, storm_hot, ARRAY_SIZE(storm_hot));
}

struct storm_symbol {
	unsigned long address;
	char name[64];
};

static struct storm_symbol storm_symbols[1 << 17];

static int storm_by_address(const void *a, const void *b)
{
	unsigned long x = ((const struct storm_symbol *)a)->address;
	unsigned long y = ((const struct storm_symbol *)b)->address;

	return x < y ? -1 : x > y;
}

/* 1: a syscall-path function; 2: one the riscv trap exit reaches. */
static int storm_wanted(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(storm_prefixes); i++)
		if (!strncmp(name, storm_prefixes[i],
			     strlen(storm_prefixes[i])))
			return 1;
	for (i = 0; !IS_X86 && i < ARRAY_SIZE(storm_trap_prefixes); i++)
		if (!strncmp(name, storm_trap_prefixes[i],
			     strlen(storm_trap_prefixes[i])))
			return 2;
	return 0;
}

/*
 * How many bytes of a function the storm probes. The trap exit's lockdep
 * and stack-walk functions run dozens of times per lock operation: on a
 * kernel without kprobes (nothing of lockdep is on a trap path there) a
 * breakpoint on each of their first instructions made every lock
 * operation take ~30 traps, and under TCG a timer interrupt then outlasted
 * its tick: one hart stayed in interrupts for good while the other waited
 * in the optimizer's stop_machine() (a livelock of the emulator's speed,
 * seen as a hang). Their entry alone still shows whether each is refused
 * or probed.
 */
static int storm_span(const char *name)
{
	return storm_wanted(name) == 2 ? 1 : STORM_SPAN;
}

/*
 * The kernel's symbols into storm_symbols, by address (a name only for
 * text symbols: the next symbol ends a function); how many, or -errno.
 */
static int storm_load_symbols(void)
{
	FILE *symbols = fopen("/proc/kallsyms", "r");
	char line[512], name[256], module[64];
	unsigned long address;
	int count = 0;
	char type;

	if (!symbols)
		return -errno;
	while (fgets(line, sizeof(line), symbols) &&
	       count < (int)ARRAY_SIZE(storm_symbols)) {
		module[0] = '\0';
		if (sscanf(line, "%lx %c %255s [%63[^]]]", &address, &type, name,
			   module) < 3 || module[0])
			continue;
		storm_symbols[count].address = address;
		snprintf(storm_symbols[count].name,
			 sizeof(storm_symbols[count].name), "%.63s",
			 (type == 't' || type == 'T') ? name : "");
		count++;
	}
	fclose(symbols);
	qsort(storm_symbols, count, sizeof(storm_symbols[0]),
	      storm_by_address);
	return count;
}

/* Adds the sites; returns how many, or -errno. */
static int storm_add_sites(int step, int *functions)
{
	char reply[256], command[64];
	int count = storm_load_symbols(), sites = 0, i, offset;

	*functions = 0;
	if (count < 0)
		return count;
	bench_command("sites-clear", reply, sizeof(reply));
	/* The hot functions first, then the syscall paths. */
	for (i = 0; i + 1 < 2 * count && *functions < STORM_FUNCTIONS &&
		    sites < STORM_SITES; i++) {
		int hot_pass = i < count, at = hot_pass ? i : i - count;
		unsigned long size;

		if (at + 1 >= count || !storm_symbols[at].name[0])
			continue;
		size = storm_symbols[at + 1].address - storm_symbols[at].address;
		if (!size ||
		    (hot_pass ? !storm_is_hot(storm_symbols[at].name) :
				(storm_is_hot(storm_symbols[at].name) ||
				 !storm_wanted(storm_symbols[at].name))))
			continue;
		(*functions)++;
		for (offset = 0;
		     offset < storm_span(storm_symbols[at].name) &&
		     offset < (int)size && sites < STORM_SITES;
		     offset += step) {
			snprintf(command, sizeof(command), "site 0x%lx",
				 storm_symbols[at].address + offset);
			if (bench_command(command, reply, sizeof(reply)) == 0)
				sites++;
		}
	}
	return sites;
}

/*
 * Processes making read/write/pipe syscalls until killed (kill(-pid)):
 * two flat out (the storm: every CPU busy), or, paced, one that rests
 * 2 ms after every 50 rounds, so that probes are hit while the pass that
 * registers them still gets most of a CPU (the scale suite's 10,000
 * registrations took four times as long beside two busy processes).
 */
static pid_t storm_workload_of(int paced)
{
	pid_t pid = fork();

	/* Both sides: kill(-pid) must find the group whoever runs first. */
	if (pid > 0)
		setpgid(pid, pid);

	if (pid == 0) {
		const struct timespec rest = { .tv_nsec = 2000000 };
		unsigned long round;
		int fds[2];
		char byte = 'x';

		setpgid(0, 0);
		if (!paced)
			fork();
		if (pipe(fds))
			_exit(1);
		for (round = 1;; round++) {
			if (write(fds[1], &byte, 1) != 1 ||
			    read(fds[0], &byte, 1) != 1)
				_exit(1);
			getppid();
			if (paced && round % 50 == 0)
				nanosleep(&rest, NULL);
		}
	}
	return pid;
}

static pid_t storm_workload(void)
{
	return storm_workload_of(0);
}

static int storm_errnos_documented(const char *errors)
{
	int error, count;

	while (next_refusal(&errors, &error, &count))
		if (error != -EINVAL && error != -ENOENT && error != -EILSEQ &&
		    error != -EPERM && error != -EBUSY && error != -ENOMEM)
			return 0;
	return 1;
}

static int storm_steps(void)
{
	struct bench_pass pass = { .kind = "okprobe" };
	int functions, sites, ret;
	char reply[256];
	long long start;
	pid_t workload;

	STEP(load_okprobe(default_params));
	ret = load_module(BENCH_KO, "");
	CHECK(ret == 0, "loading okprobe_bench.ko: %s", strerror(-ret));
	sites = storm_add_sites(IS_X86 ? 3 : 2, &functions);
	/*
	 * Spread over functions: at most 10 sites (of 20 bytes) each; and
	 * enough of what was asked for: more than 300 of the default 800 or
	 * x86's 1200, 3/8 of a smaller count (75 of the lockdep kernels'
	 * 200).
	 */
	CHECK(sites > (STORM_SITES >= 800 ? 300 : STORM_SITES * 3 / 8) &&
	      functions > sites / 10,
	      "only %d sites in %d syscall-path functions", sites, functions);
	workload = storm_workload();
	CHECK(workload > 0, "fork: %s", strerror(errno));
	start = now_ms();
	ret = bench_cover(&pass);
	if (!ret)
		ret = bench_wait_for_optimizer(&pass, start);
	if (!ret) {
		CHECK(write_file(SYSCTL_OPTIMIZATION, "0") == 0 &&
		      write_file(SYSCTL_OPTIMIZATION, "1") == 0,
		      "toggling %s", SYSCTL_OPTIMIZATION);
		ret = bench_wait_for_optimizer(&pass, now_ms());
	}
	if (!ret)
		ret = bench_command("uncover", reply, sizeof(reply));
	kill(-workload, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	if (ret)
		return ret; /* why says where */
	say("# storm: %d sites in %d functions: %d registered in %lld ms, %d optimized, %ld hits, refused %s",
	    sites, functions, pass.registered, pass.register_ms,
	    pass.optimized, pass.hits, pass.errors[0] ? pass.errors : "none");
	/*
	 * More than a quarter, whatever the count: the rest are documented
	 * refusals (on x86 most of them EILSEQ, the storm's stride landing
	 * inside instructions: about 470 of 1200 register there, 165 of
	 * 200 on riscv-preempt).
	 */
	CHECK(pass.registered * 4 > sites, "only %d of %d sites registered",
	      pass.registered, sites);
	CHECK(storm_errnos_documented(pass.errors),
	      "an undocumented errno among %s", pass.errors);
	CHECK(pass.hits > 0, "no probe of the storm was hit");
	STEP(bench_wait_restored(&pass));
	CHECK(!pass.text_changed, "%d sites' text is not as it was",
	      pass.text_changed);
	ret = unload_module("okprobe_bench");
	CHECK(ret == 0, "unloading okprobe_bench: %s", strerror(-ret));
	return unload_okprobe();
}

/*
 * A storm of okprobe_events events, as an operator might define them from
 * a list of functions: an entry event with arguments and $comm on each of
 * the storm's hot and syscall-path functions (storm_hot, storm_prefixes),
 * a return event on every third, all enabled at once by their group while
 * two processes make syscalls, then disabled and removed with ">". Every
 * refusal must be a documented errno (EADDRNOTAVAIL for a name several
 * functions have, EPERM where a probe may not go, EOPNOTSUPP for r events
 * without rethook), hits must come, and nothing may be left.
 */
#define EVENT_STORM_GROUP TRACING "/events/okptest_st"

/*
 * Each event's enable and disable is done alone (the tracing core calls
 * okprobe once per event) and waits for its text patches and a grace
 * period; an optimized probe's disable also takes its jump out then (on
 * riscv with a tasks-RCU grace period between the two steps). Under TCG
 * that is about 60 and 120 ms per event on x86 (300 functions took 90 s),
 * 340 ms per disable on riscv 6.12 and 5 s on riscv-preempt (lockdep)
 * under the storm's load. 80 functions (40 on riscv) meet every kind of
 * refusal; a target that repeats another's suite
 * (okptest_selftest_scale below 100) runs an eighth of them (10 on x86, 5
 * on riscv), whatever its scale: fewer would not meet every refusal.
 */
static int event_storm_functions(void)
{
	const char *scale = getenv("okptest_selftest_scale");
	int functions = IS_X86 ? 80 : 40;

	if (scale && atoi(scale) > 0 && atoi(scale) < 100)
		functions /= 8;
	return functions;
}

static int event_storm_errno_documented(int error)
{
	return error == -EADDRNOTAVAIL || error == -EPERM ||
	       error == -EOPNOTSUPP || error == -EBUSY || error == -ENOENT ||
	       error == -EILSEQ;
}

static int probe_events_storm_steps(void)
{
	static char profile[1 << 16];
	int count, i, functions = 0, defined = 0, hit = 0, kind, ret, refused;
	char line[256], errors[256] = "";
	long long start, hits = 0, enable_ms, disable_ms;
	int error_counts[160] = { 0 }, returns = 0, returns_hit = 0, disabled;
	pid_t workload;
	char *at;

	STEP(load_okprobe(default_params));
	if (!exists(OKPROBE_EVENTS)) {
		STEP(unload_okprobe());
		return skip("the kernel has no dynamic trace events (CONFIG_DYNAMIC_EVENTS)");
	}
	count = storm_load_symbols();
	CHECK(count > 0, "reading /proc/kallsyms: %s", strerror(-count));
	start = now_ms();
	for (i = 0; i < 2 * count && functions < event_storm_functions(); i++) {
		int hot_pass = i < count, at_symbol = hot_pass ? i : i - count;
		const char *name = storm_symbols[at_symbol].name;

		if (!name[0] ||
		    (hot_pass ? !storm_is_hot(name) :
				(storm_is_hot(name) || storm_wanted(name) != 1)))
			continue;
		for (kind = 0; kind < (functions % 3 ? 1 : 2); kind++) {
			snprintf(line, sizeof(line), kind ?
				 "r:okptest_st/r%d %s ret=$retval" :
				 "p:okptest_st/e%d %s a1=$arg1 a2=$arg2:u32 who=$comm",
				 functions, name);
			ret = write_file(OKPROBE_EVENTS, line);
			if (!ret) {
				defined++;
				continue;
			}
			if (-ret < (int)ARRAY_SIZE(error_counts))
				error_counts[-ret]++;
			/*
			 * A return probe on a .cold piece: okretprobe's
			 * EINVAL (entered by a jump, it has no return of its
			 * own; operating.md).
			 */
			CHECK(event_storm_errno_documented(ret) ||
			      (kind && ret == -EINVAL && strstr(name, ".cold")),
			      "'%s' refused with an undocumented %s", line,
			      strerror(-ret));
			/* Where the entry is refused, so is the return. */
			break;
		}
		functions++;
	}
	for (i = 1; i < (int)ARRAY_SIZE(error_counts); i++)
		if (error_counts[i])
			snprintf(errors + strlen(errors),
				 sizeof(errors) - strlen(errors), "%s-%d:%d",
				 errors[0] ? "," : "", i, error_counts[i]);
	say("# event storm: %d events defined over %d functions in %lld ms, refused %s",
	    defined, functions, now_ms() - start, errors[0] ? errors : "none");
	/*
	 * A name several functions have is refused (EADDRNOTAVAIL) before
	 * either kind is tried: of the rest, most must be defined. At half
	 * counts riscv-7.2 takes 5 functions, 3 of them such names. Under
	 * KASAN the trap path reaches KASAN's reports, and through printk
	 * the scheduler's wake-ups: those are refused (EPERM) as they must
	 * be, and counted out too.
	 */
	refused = error_counts[EADDRNOTAVAIL] +
		  (kallsyms_address("kasan_report") ? error_counts[EPERM] : 0);
	CHECK(defined > 0 && defined > (functions - refused) / 2,
	      "only %d events of %d functions (%d neither with a name other functions have nor on the trap path)",
	      defined, functions, functions - refused);
	/* All on at once, under load. */
	workload = storm_workload();
	CHECK(workload > 0, "fork: %s", strerror(errno));
	start = now_ms();
	ret = write_file(EVENT_STORM_GROUP "/enable", "1");
	enable_ms = now_ms() - start;
	if (!ret)
		sleep(2);
	start = now_ms();
	disabled = write_file(EVENT_STORM_GROUP "/enable", "0");
	disable_ms = now_ms() - start;
	kill(-workload, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	CHECK(ret == 0, "enabling okptest_st: %s", strerror(-ret));
	CHECK(disabled == 0 && file_says(EVENT_STORM_GROUP "/enable", "0"),
	      "disabling okptest_st: %s", strerror(-disabled));
	CHECK(read_file(TRACING "/okprobe_profile", profile,
			sizeof(profile)) == 0, "reading okprobe_profile");
	for (at = strtok(profile, "\n"); at; at = strtok(NULL, "\n")) {
		char event[64];
		long long event_hits, missed;

		/* The storm's events only: eN and rN. */
		if (sscanf(at, "%63s %lld %lld", event, &event_hits, &missed) == 3 &&
		    (event[0] == 'e' || event[0] == 'r') &&
		    event[1] >= '0' && event[1] <= '9') {
			hits += event_hits;
			hit += event_hits > 0;
			returns += event[0] == 'r';
			returns_hit += event[0] == 'r' && event_hits > 0;
		}
	}
	say("# event storm: enabled in %lld ms, %lld hits in 2 s, %d of %d events hit (%d of %d return events), disabled in %lld ms",
	    enable_ms, hits, hit, defined, returns_hit, returns, disable_ms);
	CHECK(hit > defined / 10, "only %d of %d events were hit", hit, defined);
	CHECK(!returns || returns_hit, "none of %d return events was hit", returns);
	/* ">" takes them all. */
	start = now_ms();
	ret = clear_file(OKPROBE_EVENTS);
	say("# event storm: removed in %lld ms", now_ms() - start);
	CHECK(ret == 0, "removing the storm's events: %s", strerror(-ret));
	CHECK(read_file(OKPROBE_EVENTS, profile, sizeof(profile)) == 0 &&
	      profile[0] == '\0', "okprobe_events still lists:\n%.300s", profile);
	CHECK(!exists(EVENT_STORM_GROUP), "events/okptest_st is still there");
	return unload_okprobe();
}

static int test_probe_events_storm(void)
{
	return events_test(probe_events_storm_steps, EVENT_STORM_GROUP "/enable");
}

static int test_storm(void)
{
	int ret;

	if (!exists(BENCH_KO))
		return skip("no okprobe_bench.ko for this architecture");
	ret = storm_steps();
	if (ret) {
		write_file(BENCH_CONTROL, "uncover");
		unload_module("okprobe_bench");
		unload_module("okprobe");
	}
	return ret;
}

/* ---- Scale: the whole sample, bounded (make check) ----------------------- */

/*
 * make check's scale suite (issue 35: a storm of probes hung Debian 13's
 * 6.12 and nothing caught it). The bench's sample of kernel instructions
 * (tools/check draws it as make bench does; how many sites each kernel
 * gets is tools/okprobe_build.py's Target.scale_sites) goes through two
 * passes, each with a deadline for its optimizer, while a process makes
 * syscalls (storm_workload_of, paced), so that probes are hit as they
 * come and go:
 *
 *   1. okprobe one by one, beside the kernel's kprobes where it has them:
 *      kprobe_events on every SCALE_BESIDE_EVERY-th site, enabled (as
 *      perf or bpftrace users plant them), then every site's
 *      registration, the optimizer, the sysctl off, on and off,
 *      everything unregistered in one batch. No function may end up
 *      holding both a kernel kprobe and an okprobe that patch its text
 *      (operating.md, "Next to the kernel's kprobes"): okprobe refuses
 *      theirs with EBUSY. Then the kernel's go.
 *   2. okprobe_register_many() of the sites the first pass took: it must
 *      take every one of them.
 *
 * After each pass every site's text (24 bytes around it) is what it was
 * before, byte for byte; every refusal has a documented errno; the hits
 * come. The runner judges the console (no Oops, WARNING, lockdep, RCU
 * stall) and the time: a guest silent for its silence limit is a hang.
 */
/*
 * Every 40th: about 220 kernel kprobes at 10,000 sites. Each one's
 * removal waits for a grace period: every 20th (438) took 30 s of
 * x86-6.12's guest.
 */
#define SCALE_BESIDE_EVERY 40
#define SCALE_GROUP "okptest_scale"
#define SCALE_EVENTS TRACING "/events/" SCALE_GROUP

/* okprobe/list and kprobes/list beside bench_big_file. */
static char scale_other_file[4 << 20];

/*
 * okprobe_register_many() of the sites the one-by-one pass took (the
 * others are left out, "not in this pass": ENODEV), under the same load.
 */
static int scale_many_pass(struct bench_pass *pass, int resolved)
{
	pid_t workload = storm_workload_of(1);
	int ret;

	CHECK(workload > 0, "fork: %s", strerror(errno));
	*pass = (struct bench_pass){ .kind = "okprobe-many", .size = resolved,
				     .strict = 1 };
	ret = bench_coverage_pass(pass);
	kill(-workload, SIGKILL);
	while (waitpid(workload, NULL, 0) < 0 && errno == EINTR)
		;
	if (ret)
		return ret;
	bench_say_scale(pass);
	CHECK(pass->hits > 0, "register_many(): no probe of %d was hit",
	      pass->registered);
	return 0;
}

/*
 * The kernel kprobes on the sample's every SCALE_BESIDE_EVERY-th site, as
 * kprobe_events by address; *defined: how many the kernel took.
 */
static int scale_define_kprobe_events(int *defined)
{
	char line[128];
	int i, ret, refused = 0;

	*defined = 0;
	for (i = 0; i < bench_site_count; i += SCALE_BESIDE_EVERY) {
		if (!bench_sites[i].address)
			continue;
		snprintf(line, sizeof(line), "p:" SCALE_GROUP "/s%d 0x%lx", i,
			 bench_sites[i].address);
		ret = write_file(KPROBE_EVENTS, line);
		if (ret) {
			refused++;
			continue;
		}
		(*defined)++;
	}
	say("# scale: beside: %d kprobe_events defined, %d refused by the kernel",
	    *defined, refused);
	CHECK(*defined > 0, "the kernel took none of the kprobe events");
	CHECK(!write_file(SCALE_EVENTS "/enable", "1"), "enabling %s",
	      SCALE_EVENTS);
	return 0;
}

static void scale_remove_kprobe_events(void)
{
	char line[64];
	int i;

	write_file(SCALE_EVENTS "/enable", "0");
	for (i = 0; i < bench_site_count; i += SCALE_BESIDE_EVERY) {
		snprintf(line, sizeof(line), "-:" SCALE_GROUP "/s%d", i);
		write_file(KPROBE_EVENTS, line);
	}
}

/*
 * "symbol" of a list line's "symbol+0xoff" field (the first field with a
 * '+'), into name; 0 if none.
 */
static int scale_line_symbol(const char *line, char *name, size_t size)
{
	const char *field = line, *plus;
	size_t length;

	while (*field) {
		field += strspn(field, " \t");
		length = strcspn(field, " \t");
		plus = memchr(field, '+', length);
		if (plus && plus > field && (size_t)(plus - field) < size) {
			memcpy(name, field, plus - field);
			name[plus - field] = '\0';
			return 1;
		}
		field += length;
	}
	return 0;
}

/*
 * One function, one owner: no okprobe that patches text (not [FTRACE])
 * in a function where the kernel has a kprobe that patches text (not
 * [FTRACE]). Returns how many okprobes break it; *first: the first one.
 */
static char scale_kernel_functions[4096][128];

static int scale_compare_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Whether name is one of count scale_kernel_functions (sorted). */
static int scale_kernel_function(const char *name, int count)
{
	return bsearch(name, scale_kernel_functions, count,
		       sizeof(scale_kernel_functions[0]),
		       scale_compare_name) != NULL;
}

static int scale_shared_functions(int *kernel_functions, char *first,
				  size_t size)
{
	char (*names)[128] = scale_kernel_functions;
	char *line, *save = NULL, name[128];
	int count = 0, shared = 0, i, kept;

	first[0] = '\0';
	if (read_file(KPROBES_LIST, scale_other_file, sizeof(scale_other_file)))
		return -1;
	for (line = strtok_r(scale_other_file, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (!strstr(line, "[FTRACE]") && count < 4096 &&
		    scale_line_symbol(line, names[count], sizeof(names[0])))
			count++;
	qsort(names, count, sizeof(names[0]), scale_compare_name);
	/* One name per function (a function may hold several kprobes). */
	for (i = 1, kept = count ? 1 : 0; i < count; i++)
		if (strcmp(names[i], names[kept - 1]))
			memmove(names[kept++], names[i], sizeof(names[0]));
	count = kept;
	*kernel_functions = count;
	if (read_file(DEBUGFS_DIR "/list", scale_other_file,
		      sizeof(scale_other_file)))
		return -1;
	save = NULL;
	for (line = strtok_r(scale_other_file, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "[FTRACE]") ||
		    !scale_line_symbol(line, name, sizeof(name)))
			continue;
		if (scale_kernel_function(name, count) && !shared++)
			snprintf(first, size, "%s", line);
	}
	return shared;
}

/* How many registrations errors ("-1:100,-16:88") refused with errno. */
static int scale_refusals(const char *errors, int errno_value)
{
	int error, count;

	while (next_refusal(&errors, &error, &count))
		if (error == -errno_value)
			return count;
	return 0;
}

/*
 * The kernel's kprobes' hits on the kprobe events (kprobe_profile names an
 * event without its group: sN).
 */
static long scale_kernel_hits(void)
{
	char *line, *save = NULL;
	long hits = 0, count;
	int index, length;

	if (read_file(TRACING "/kprobe_profile", scale_other_file,
		      sizeof(scale_other_file)))
		return -1;
	for (line = strtok_r(scale_other_file, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		length = 0;
		if (sscanf(line, " s%d%n %ld", &index, &length, &count) == 2 &&
		    line[length] == ' ')
			hits += count;
	}
	return hits;
}

/*
 * okprobe one by one over the whole sample, beside the kernel's kprobes
 * where it has them: no function ends up holding both, okprobe refuses
 * theirs with EBUSY, and once both are gone every site's text is what it
 * was.
 */
static int scale_one_by_one(struct bench_pass *pass, int resolved)
{
	int defined = 0, functions = 0, shared = -1, ret, changed, jumps;
	int flagged, beside = kernel_has_kprobes && exists(KPROBE_EVENTS);
	long kernel_hits = -1, hits, missed;
	char first[512];
	pid_t workload;

	*pass = (struct bench_pass){ .kind = "okprobe", .size = resolved,
				     .strict = 1 };
	if (beside)
		STEP(scale_define_kprobe_events(&defined));
	workload = storm_workload_of(1);
	CHECK(workload > 0, "fork: %s", strerror(errno));
	ret = bench_pass_register(pass);
	if (!ret) {
		if (beside)
			shared = scale_shared_functions(&functions, first,
							sizeof(first));
		ret = bench_pass_unregister(pass);
	}
	kill(-workload, SIGKILL);
	while (waitpid(workload, NULL, 0) < 0 && errno == EINTR)
		;
	if (beside) {
		kernel_hits = scale_kernel_hits();
		scale_remove_kprobe_events();
	}
	if (ret)
		return ret;
	bench_say_scale(pass);
	bench_say_errors(beside ? "beside the kernel's kprobes, okprobe" :
				  "okprobe", pass->errors);
	CHECK(storm_errnos_documented(pass->errors),
	      "an undocumented errno among %s", pass->errors);
	CHECK(pass->registered > resolved / 2,
	      "okprobe took only %d of %d sites", pass->registered, resolved);
	CHECK(pass->hits > 0, "no probe of %d was hit", pass->registered);
	if (beside) {
		say("# scale: beside: %d functions with a kernel kprobe that patches text; the kernel's kprobes hit %ld times, okprobe's %ld",
		    functions, kernel_hits, pass->hits);
		CHECK(shared == 0,
		      "%d okprobes in functions that hold a kernel kprobe, the first: %s",
		      shared, first);
		/* Theirs were in the sample: okprobe must have left them. */
		CHECK(functions > 0 && scale_refusals(pass->errors, EBUSY) > 0,
		      "no refusal (EBUSY) of okprobe's beside %d kernel kprobes",
		      defined);
	} else {
		say("# scale: no kernel kprobes in this kernel: okprobe alone");
	}
	/* Without a pass: every site of the sample, as before any pass. */
	STEP(bench_wait_restored(pass));
	STEP(bench_cover_state(&jumps, &changed, &hits, &missed, &flagged));
	CHECK(!changed, "%d sites' text not restored once the kprobes left",
	      changed);
	return 0;
}

static int scale_steps(void)
{
	struct bench_pass ours, many;
	int resolved, ret;

	if (!exists(BENCH_SITES))
		return skip("no " BENCH_SITES " (tools/check makes it)");
	STEP(load_okprobe(default_params));
	ret = load_module(BENCH_KO, "");
	CHECK(ret == 0, "loading okprobe_bench.ko: %s", strerror(-ret));
	STEP(bench_prepare_sample(&resolved));
	say("# scale: sample: %s", bench_sites_about);
	say("# scale: %d sites of %d resolved in /proc/kallsyms", resolved,
	    bench_site_count);
	STEP(scale_one_by_one(&ours, resolved));
	/* The sites the first pass took, in one batch: all of them. */
	STEP(scale_many_pass(&many, resolved));
	CHECK(many.registered == ours.registered,
	      "okprobe_register_many() took %d sites, one by one %d",
	      many.registered, ours.registered);
	CHECK(!write_file(BENCH_CONTROL, "sites-clear"), "sites-clear");
	ret = unload_module("okprobe_bench");
	CHECK(ret == 0, "unloading okprobe_bench: %s", strerror(-ret));
	return unload_okprobe();
}

static int test_scale(void)
{
	int ret;

	if (!exists(BENCH_KO))
		return skip("no okprobe_bench.ko for this architecture");
	mount_tracefs_if_needed();
	ret = scale_steps();
	if (ret) {
		write_file(BENCH_CONTROL, "uncover");
		if (exists(SCALE_EVENTS))
			scale_remove_kprobe_events();
		unload_module("okprobe_bench");
		unload_module("okprobe");
	}
	return ret;
}

static int bench_unload(void)
{
	int ret;

	if (!module_loaded("okprobe_bench"))
		return skip("okprobe_bench.ko is not loaded");
	bench_set_sysctl(KERNEL_OPTIMIZATION, bench_kernel_optimization, "1");
	bench_set_sysctl(SYSCTL_OPTIMIZATION, bench_okprobe_optimization, "1");
	ret = unload_module("okprobe_bench");
	CHECK(ret == 0, "unloading okprobe_bench: %s", strerror(-ret));
	return unload_okprobe();
}

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

/* ---- Injected faults ------------------------------------------------------- */

/*
 * Every allocation of a registration, an event's definition and enabling,
 * an unregistration and the jump optimizer, failed one at a time (issue
 * 37; testing.md, "Injected faults"), where the kernel has fault injection
 * (the debug kernels). A call's own allocations fail through this
 * thread's fail-nth, the kernel's way (syzkaller's too): failslab, told to
 * count GFP_KERNEL allocations, and okprobe's own fail_alloc point count
 * down, and the nth fails, whoever asks (okprobe's C++ core, its C glue,
 * the kernel functions it calls). The optimizer runs in a kworker, which
 * no fail-nth reaches: its allocations fail through okprobe's fail_alloc
 * attribute ("space" counts them). After each failure: an errno to the
 * caller or a success that did without, nothing listed, no event left,
 * ksys_read's text as before byte for byte (okprobe_bench.ko's sites), and
 * the same call without a fault succeeds.
 */
#define FAILSLAB "/sys/kernel/debug/failslab"
/*
 * The kernel log lines around the sweep: the allocation failures between
 * them may print warn_alloc()'s report with a stack, which the log checks
 * (here and tools/guest_run.py) know for the injected fault's.
 */
#define FAULTS_BEGIN "okptest: injecting faults"
#define FAULTS_END "okptest: no longer injecting faults"
#define WARN_ALLOC_STACK_RECORDS 6
#define FAIL_ALLOC DEBUGFS_DIR "/fail_alloc"
#define FAULT_FUNCTION "ksys_read"
/* More than any one call makes: a sweep that does not end is a failure. */
#define FAULT_MAX_ALLOCATIONS 3000

#define SAMPLE_REGISTERED "/sys/module/okprobe_sample/parameters/registered"

/*
 * One call swept: a write of text to path (the sample client's
 * "registered" parameter registers and unregisters its probe in the
 * writer's task, past the module loader's own allocations, which are the
 * kernel's; okprobe_events and an event's enable file).
 */
struct fault_call {
	const char *what;
	const char *sample;	/* the sample's parameters, loaded for the call */
	const char *path;	/* the file written */
	const char *text;	/* what is written */
	int (*before)(void);	/* each attempt's set-up, outside the window */
	int (*undo)(void);	/* takes back a call that succeeded */
	int (*after)(void);	/* takes back before()'s set-up */
	/* After a call that succeeded: that what it made is whole. */
	int (*works)(void);
	/* After a call that failed: what must hold, and its cleanup. */
	int (*failed)(void);
	int needs;		/* FAULT_NEEDS_*: what the kernel must have */
};

/* Return probes need rethook (not riscv 6.1's); events, dynamic events. */
#define FAULT_NEEDS_RETURNS 1
#define FAULT_NEEDS_EVENTS 2

static int fail_nth_fd = -1;
/* Where the kernel log stood when the last attempt began. */
static int fault_attempt_mark = -1;

/* okprobe_bench.ko keeps ksys_read's bytes: a site every 16 of them. */
static int fault_keep_text(void)
{
	unsigned long start = kallsyms_address(FAULT_FUNCTION), end = ~0UL;
	char command[64], reply[128];
	size_t i;

	CHECK(start, "no %s in /proc/kallsyms", FAULT_FUNCTION);
	for (i = 0; i < kernel_symbol_count; i++)
		if (kernel_symbols[i].address > start &&
		    kernel_symbols[i].address < end)
			end = kernel_symbols[i].address;
	CHECK(end != ~0UL && end - start < 4096, "%s's size is unknown",
	      FAULT_FUNCTION);
	for (; start < end; start += 16) {
		snprintf(command, sizeof(command), "site 0x%lx", start + 8);
		CHECK(bench_command(command, reply, sizeof(reply)) == 0,
		      "%s failed", command);
	}
	return 0;
}

/* Nothing of call c's left after its attempt n: no probe, no event, the text. */
static int fault_expect_clean(const char *what, int n)
{
	int jumps, changed, optimized;
	char list[1024] = "";
	long hits, missed;

	CHECK(!list_line(FAULT_FUNCTION "+", list, sizeof(list)),
	      "%s, allocation %d failed: okprobe/list shows '%.200s'", what,
	      n, list);
	CHECK(!exists(TRACING "/events/okpfault"),
	      "%s, allocation %d failed: the okpfault events are left", what,
	      n);
	STEP(bench_cover_state(&jumps, &changed, &hits, &missed, &optimized));
	CHECK(!changed, "%s, allocation %d failed: %d of %s's sites' text changed",
	      what, n, changed, FAULT_FUNCTION);
	return 0;
}

/*
 * Makes call c with this thread's nth fallible allocation failing (none
 * for n 0): *result is the call's, *fired whether the failure happened.
 * Nothing but the one system call runs between arming and reading back:
 * its file is opened before.
 */
static int fault_attempt(const struct fault_call *c, int n, int *result,
			 int *fired)
{
	int fd = open(c->path, O_WRONLY | O_CLOEXEC), length;
	char text[16] = "";

	if (fault_attempt_mark >= 0)
		close(fault_attempt_mark);
	fault_attempt_mark = kmsg_mark();
	CHECK(fd >= 0, "cannot open %s: %s", c->path, strerror(errno));
	length = snprintf(text, sizeof(text), "%d", n);
	if (n && pwrite(fail_nth_fd, text, length, 0) != length) {
		close(fd);
		return fail("cannot arm fail-nth: %s", strerror(errno));
	}
	*result = write(fd, c->text, strlen(c->text)) < 0 ? -errno : 0;
	*fired = 0;
	if (n) {
		memset(text, 0, sizeof(text));
		CHECK(pread(fail_nth_fd, text, sizeof(text) - 1, 0) > 0,
		      "cannot read fail-nth: %s", strerror(errno));
		*fired = atoi(text) == 0;
		CHECK(pwrite(fail_nth_fd, "0", 1, 0) == 1,
		      "cannot disarm fail-nth: %s", strerror(errno));
	}
	close(fd);
	return 0;
}

/* The errnos a sweep saw, and how often ("ENOMEM:12 EINVAL:1"). */
struct fault_tally {
	int errnos[8], counts[8], used, absorbed;
};

static void fault_count(struct fault_tally *t, int result)
{
	int i;

	if (!result) {
		t->absorbed++;
		return;
	}
	for (i = 0; i < t->used && t->errnos[i] != -result; i++)
		;
	if (i == t->used && t->used < 8)
		t->errnos[t->used++] = -result;
	if (i < t->used)
		t->counts[i]++;
}

/*
 * Every how many allocations the sweeps fail one: 1 (every one) unless
 * okptest_fault_stride says more (make check's debug part; the whole
 * sweep is make check-debug's). Allocation n is failed for n = 1,
 * 1 + stride, ... until the call makes fewer.
 */
static int fault_stride(void)
{
	const char *stride = getenv("okptest_fault_stride");

	return stride && atoi(stride) > 1 ? atoi(stride) : 1;
}

static void fault_say(const char *what, int allocations,
		      const struct fault_tally *t)
{
	char errnos[128] = "";
	int i, used = 0;

	for (i = 0; i < t->used; i++)
		used += snprintf(errnos + used, sizeof(errnos) - used, " %s:%d",
				 strerrorname_np(t->errnos[i]), t->counts[i]);
	if (fault_stride() > 1)
		say("# %s: %d to %d allocations, every %dth failed once:%s, done without %d",
		    what, allocations - fault_stride() + 1, allocations,
		    fault_stride(), errnos, t->absorbed);
	else
		say("# %s: %d allocations, each failed once:%s, done without %d",
		    what, allocations, errnos, t->absorbed);
}

/*
 * One attempt at call c with the nth allocation failing (none for n 0),
 * and what must hold after it: a success whole and taken back, a failure
 * cleaned up, nothing of it left.
 */
static int fault_once(const struct fault_call *c, int n, int *result,
		      int *fired)
{
	if (c->before)
		STEP(c->before());
	STEP(fault_attempt(c, n, result, fired));
	CHECK(*result == 0 || *fired, "%s with no allocation failed: %s",
	      c->what, strerror(-*result));
	if (!*result && c->works)
		STEP(c->works());
	if (!*result && c->undo)
		STEP(c->undo());
	if (*result && c->failed)
		STEP(c->failed());
	if (c->after)
		STEP(c->after());
	return fault_expect_clean(c->what, *fired ? n : 0);
}

static int fault_sweep_calls(const struct fault_call *c)
{
	struct fault_tally tally = { 0 };
	int n, result, fired;

	for (n = 1; n <= FAULT_MAX_ALLOCATIONS; n += fault_stride()) {
		STEP(fault_once(c, n, &result, &fired));
		if (!fired) {
			fault_say(c->what, n - 1, &tally);
			return 0;
		}
		fault_count(&tally, result);
		/* The same call again, with no failure, succeeds. */
		STEP(fault_once(c, 0, &result, &fired));
		CHECK(result == 0, "%s after allocation %d failed: %s", c->what,
		      n, strerror(-result));
	}
	return fail("%s: more than %d allocations", c->what,
		    FAULT_MAX_ALLOCATIONS);
}

static int fault_unload_sample(void)
{
	int ret = unload_module("okprobe_sample");

	CHECK(ret == 0, "unloading the sample: %s", strerror(-ret));
	return 0;
}

/* With the sample loaded as c wants it, its probe unregistered. */
static int fault_sweep(const struct fault_call *c)
{
	int ret;

	if (((c->needs & FAULT_NEEDS_RETURNS) &&
	     !kallsyms_address("rethook_hook")) ||
	    ((c->needs & FAULT_NEEDS_EVENTS) && !exists(OKPROBE_EVENTS))) {
		say("# %s: not on this kernel (no %s)", c->what,
		    c->needs & FAULT_NEEDS_RETURNS ? "rethook" :
						     "dynamic events");
		return 0;
	}
	if (c->sample) {
		ret = load_module(SAMPLE_KO, c->sample);
		CHECK(ret == 0, "the sample with %s: %s", c->sample,
		      strerror(-ret));
		CHECK(write_file(SAMPLE_REGISTERED, "0") == 0,
		      "cannot unregister the sample's probe");
	}
	ret = fault_sweep_calls(c);
	if (c->sample && !ret)
		STEP(fault_unload_sample());
	return ret;
}

static int fault_remove_events(void)
{
	write_file(OKPROBE_EVENTS, "-:okpfault/entry");
	write_file(OKPROBE_EVENTS, "-:okpfault/exit");
	CHECK(!exists(TRACING "/events/okpfault"), "cannot remove okpfault");
	return 0;
}

/*
 * Another event, enabled for the whole enabling sweep, so that the kernel
 * already records command lines when okpfault/entry is enabled: 6.1's
 * tracing_start_cmdline_record() ignores a failure to register its
 * sched_switch probe and its stop then unregisters what was never
 * registered (a WARNING in tracepoint_probe_unregister()), the kernel's
 * bug, which the sweep found and steps around.
 */
#define FAULT_HOLD_EVENT "okpfaulthold/read"

static int fault_hold_cmdlines(void)
{
	if (exists(TRACING "/events/" FAULT_HOLD_EVENT))
		return 0;
	CHECK(write_file(OKPROBE_EVENTS, "p:" FAULT_HOLD_EVENT " vfs_read") == 0 &&
	      write_file(TRACING "/events/" FAULT_HOLD_EVENT "/enable", "1") ==
		      0,
	      "cannot define and enable %s", FAULT_HOLD_EVENT);
	return 0;
}

static void fault_release_cmdlines(void)
{
	if (!exists(TRACING "/events/" FAULT_HOLD_EVENT))
		return;
	write_file(TRACING "/events/" FAULT_HOLD_EVENT "/enable", "0");
	write_file(OKPROBE_EVENTS, "-:" FAULT_HOLD_EVENT);
}

static int fault_define_event(void)
{
	STEP(fault_hold_cmdlines());
	CHECK(write_file(OKPROBE_EVENTS,
			 "p:okpfault/entry ksys_read fd=$arg1") == 0,
	      "cannot define okpfault/entry");
	return 0;
}

static int fault_disable_event(void)
{
	CHECK(write_file(TRACING "/events/okpfault/entry/enable", "0") == 0,
	      "cannot disable okpfault/entry");
	return 0;
}

static char fault_counter_params[96], fault_return_params[96];

static int fault_unregister_sample(void)
{
	CHECK(write_file(SAMPLE_REGISTERED, "0") == 0,
	      "cannot unregister the sample's probe");
	return 0;
}

/* The sample's probe, registered and optimized, for its unregistration. */
static int fault_optimized_sample(void)
{
	char line[512] = "";

	CHECK(write_file(SAMPLE_REGISTERED, "1") == 0,
	      "cannot register the sample's probe");
	CHECK(wait_listed_optimized(sample_where, line, sizeof(line)),
	      "the sample's probe never showed [OPTIMIZED]: '%s'", line);
	return 0;
}

/*
 * An unregistration cannot fail: a write of 0 that did had failed before
 * it reached the sample (sysfs's own buffer), and left the probe as it
 * was, registered.
 */
static int fault_still_registered(void)
{
	char text[8] = "";

	read_file(SAMPLE_REGISTERED, text, sizeof(text));
	CHECK(text[0] == '1', "a failed unregistration left registered=%s",
	      text);
	return fault_unregister_sample();
}

/* A registration that succeeded: its probe is listed and counts reads. */
static int fault_probe_works(void)
{
	long before = list_hits(sample_where);

	read_proc_repeatedly(20);
	CHECK(before >= 0 && list_hits(sample_where) >= before + 20,
	      "a registration that succeeded counts %ld, then %ld for 20 reads",
	      before, list_hits(sample_where));
	return 0;
}

/*
 * An event defined: listed, with its directory. Its files, or the whole
 * directory, may be missing: the kernel's event_create_dir() logs "Could
 * not create tracefs '...' entry" and goes on, and when the group's own
 * directory cannot be made, event_subsystem_dir() logs "Failed to create
 * system directory" and trace_add_event_call() keeps the event without
 * one, for kprobe_events' events as for these (found on x86-debug).
 */
static int fault_event_works(const char *event)
{
	char path[160], text[4096] = "";

	read_file(OKPROBE_EVENTS, text, sizeof(text));
	CHECK(strstr(text, event), "a definition that succeeded is not in okprobe_events: '%.200s'",
	      text);
	snprintf(path, sizeof(path), TRACING "/events/%s", event);
	if (!exists(path)) {
		int said = kmsg_contains(fault_attempt_mark,
					 "Failed to create system directory");

		fault_attempt_mark = -1; /* consumed */
		CHECK(said, "a definition that succeeded has no %s", path);
	}
	return 0;
}

static int fault_entry_event_works(void)
{
	return fault_event_works("okpfault/entry");
}

static int fault_exit_event_works(void)
{
	return fault_event_works("okpfault/exit");
}

/* An event enabled: its probe is listed and counts reads. */
static int fault_enabled_event_works(void)
{
	char line[512];

	CHECK(list_line("ksys_read+", line, sizeof(line)),
	      "an event enabled has no probe in okprobe/list");
	return 0;
}

static const struct fault_call fault_calls[] = {
	{ "a breakpoint probe's registration", sample_params,
	  SAMPLE_REGISTERED, "1", NULL, fault_unregister_sample, NULL,
	  fault_probe_works, NULL, 0 },
	{ "a counting probe's registration", fault_counter_params,
	  SAMPLE_REGISTERED, "1", NULL, fault_unregister_sample, NULL, NULL,
	  NULL, 0 },
	{ "a return probe's registration", fault_return_params,
	  SAMPLE_REGISTERED, "1", NULL, fault_unregister_sample, NULL, NULL,
	  NULL, FAULT_NEEDS_RETURNS },
	{ "an optimized probe's unregistration", sample_params,
	  SAMPLE_REGISTERED, "0", fault_optimized_sample, NULL, NULL, NULL,
	  fault_still_registered, 0 },
	{ "an event's definition", NULL, OKPROBE_EVENTS,
	  "p:okpfault/entry ksys_read fd=$arg1 count=$arg3:u64 comm=$comm",
	  NULL, fault_remove_events, NULL, fault_entry_event_works, NULL,
	  FAULT_NEEDS_EVENTS },
	{ "a return event's definition", NULL, OKPROBE_EVENTS,
	  "r:okpfault/exit ksys_read ret=$retval:s64", NULL,
	  fault_remove_events, NULL, fault_exit_event_works, NULL,
	  FAULT_NEEDS_EVENTS | FAULT_NEEDS_RETURNS },
	{ "an event's enabling", NULL,
	  TRACING "/events/okpfault/entry/enable", "1", fault_define_event,
	  fault_disable_event, fault_remove_events, fault_enabled_event_works,
	  NULL, FAULT_NEEDS_EVENTS },
};

/*
 * Waits (up to 60 s) until the sample's probe shows [OPTIMIZED], or
 * fail_alloc's failure happened and the probe no longer waits for the
 * optimizer; *fired tells which. 1 if optimized.
 */
static int fault_wait_optimizer(char *line, size_t size, int *fired)
{
	char times[32] = "", jumps[512] = "";
	int waited;

	for (waited = 0; waited < 60000; waited += 50) {
		read_proc_repeatedly(10);
		if (list_line(sample_where, line, size) &&
		    strstr(line, "[OPTIMIZED]"))
			break;
		read_file(FAIL_ALLOC "/times", times, sizeof(times));
		file_line(DEBUGFS_DIR "/jumps", sample_where, jumps,
			  sizeof(jumps));
		if (atoi(times) == 0 && !strstr(jumps, "waiting"))
			break;
		usleep(50000);
	}
	read_file(FAIL_ALLOC "/times", times, sizeof(times));
	*fired = atoi(times) == 0;
	return strstr(line, "[OPTIMIZED]") != NULL;
}

/*
 * The optimizer's nth allocation fails (fail_alloc's space: each asks
 * with size 1) while it makes the sample's probe a jump: the probe stays
 * a breakpoint that counts, or becomes a jump, and after its unload the
 * text is as before; a probe registered again optimizes.
 */
static int fault_optimizer_sweep(void)
{
	char line[512] = "", text[32];
	int n, ret, optimized, fired, stayed = 0;
	long before;

	for (n = 1; n <= FAULT_MAX_ALLOCATIONS; n += fault_stride()) {
		CHECK(write_file(SYSCTL_OPTIMIZATION, "0") == 0,
		      "cannot turn optimization off");
		ret = load_module(SAMPLE_KO, sample_params);
		CHECK(ret == 0, "loading the sample: %s", strerror(-ret));
		snprintf(text, sizeof(text), "%d", n);
		CHECK(write_file(FAIL_ALLOC "/space", text) == 0 &&
		      write_file(FAIL_ALLOC "/times", "1") == 0 &&
		      write_file(FAIL_ALLOC "/probability", "100") == 0,
		      "cannot arm %s", FAIL_ALLOC);
		CHECK(write_file(SYSCTL_OPTIMIZATION, "1") == 0,
		      "cannot turn optimization on");
		line[0] = '\0';
		optimized = fault_wait_optimizer(line, sizeof(line), &fired);
		write_file(FAIL_ALLOC "/probability", "0");
		write_file(FAIL_ALLOC "/times", "0");
		if (!fired) {
			CHECK(optimized, "never [OPTIMIZED] with no failure: '%s'",
			      line);
			STEP(fault_unload_sample());
			STEP(fault_expect_clean("the optimizer", 0));
			say("# the optimizer: up to %d allocations, every %dth failed once: %d times the probe stayed a breakpoint",
			    n - 1, fault_stride(), stayed);
			return 0;
		}
		stayed += !optimized;
		before = list_hits(sample_where);
		read_proc_repeatedly(100);
		CHECK(list_hits(sample_where) >= before + 100,
		      "the optimizer's allocation %d failed: the probe counts %ld, then %ld for 100 reads",
		      n, before, list_hits(sample_where));
		STEP(fault_unload_sample());
		STEP(fault_expect_clean("the optimizer", n));
	}
	return fail("the optimizer: more than %d allocations",
		    FAULT_MAX_ALLOCATIONS);
}

static int fault_steps(void)
{
	size_t i;
	int ret;

	STEP(load_okprobe(default_params));
	ret = load_module(BENCH_KO, "");
	CHECK(ret == 0, "loading okprobe_bench.ko: %s", strerror(-ret));
	STEP(fault_keep_text());
	for (i = 0; i < ARRAY_SIZE(fault_calls); i++)
		STEP(fault_sweep(&fault_calls[i]));
	fault_release_cmdlines();
	STEP(fault_optimizer_sweep());
	ret = unload_module("okprobe_bench");
	CHECK(ret == 0, "unloading okprobe_bench: %s", strerror(-ret));
	return unload_okprobe();
}

static int test_fault_injection(void)
{
	int ret;

	if (!exists("/proc/thread-self/fail-nth") || !exists(FAILSLAB))
		return skip("no fault injection in this kernel");
	if (!exists(BENCH_KO))
		return skip("no okprobe_bench.ko");
	/* Run alone (okptest_only), no earlier test has mounted it. */
	mount_tracefs_if_needed();
	snprintf(fault_counter_params, sizeof(fault_counter_params),
		 "%s counter=1", sample_params);
	snprintf(fault_return_params, sizeof(fault_return_params),
		 "symbol=%s return=1", FAULT_FUNCTION);
	fail_nth_fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);
	CHECK(fail_nth_fd >= 0, "cannot open fail-nth: %s", strerror(errno));
	/* Count GFP_KERNEL allocations too (failslab skips them by default). */
	CHECK(write_file(FAILSLAB "/ignore-gfp-wait", "N") == 0 &&
	      write_file(FAILSLAB "/verbose", "0") == 0,
	      "cannot set up %s", FAILSLAB);
	write_file("/dev/kmsg", FAULTS_BEGIN);
	ret = fault_steps();
	write_file("/dev/kmsg", FAULTS_END);
	write_file(FAILSLAB "/ignore-gfp-wait", "Y");
	close(fail_nth_fd);
	if (ret) {
		/* Events hold okprobe: they go first. */
		write_file(TRACING "/events/okpfault/entry/enable", "0");
		fault_remove_events();
		fault_release_cmdlines();
		unload_module("okprobe_sample");
		unload_module("okprobe_bench");
		unload_module("okprobe");
	}
	return ret;
}

/* ---- kmemleak ------------------------------------------------------------ */

#define KMEMLEAK "/sys/kernel/debug/kmemleak"

/*
 * kmemleak, where the kernel has it (the debug kernels): okptest clears
 * what the boot left when it starts (in a test guest); after the suite's hundreds of loads,
 * registrations, unregistrations and unloads of every kind, and another
 * cycle of each here, two scans (an object must stay unreferenced across
 * them, and be older than kmemleak's five seconds) find nothing.
 */
static int test_kmemleak_clean(void)
{
	static char report[8192];
	long long started;
	char params[96];
	int ret;

	if (!exists(KMEMLEAK))
		return skip("no kmemleak in this kernel");
	STEP(load_okprobe_and_sample());
	ret = unload_module("okprobe_sample");
	CHECK(ret == 0, "unloading the sample: %s", strerror(-ret));
	snprintf(params, sizeof(params), "symbol=ksys_read return=1");
	ret = load_module(SAMPLE_KO, params);
	/* Return probes need rethook, which riscv 6.1 has not. */
	CHECK(ret == 0 || ret == -EOPNOTSUPP, "the sample with %s: %s", params,
	      strerror(-ret));
	read_proc_repeatedly(100);
	ret = ret ? 0 : unload_module("okprobe_sample");
	CHECK(ret == 0, "unloading the sample: %s", strerror(-ret));
	if (exists(OKPROBE_EVENTS)) {
		CHECK(write_file(OKPROBE_EVENTS,
				 "p:okpleak/read ksys_read fd=$arg1") == 0 &&
		      write_file(TRACING "/events/okpleak/read/enable", "1") ==
			      0,
		      "cannot define and enable okpleak/read");
		read_proc_repeatedly(100);
		CHECK(write_file(TRACING "/events/okpleak/read/enable", "0") ==
			      0 &&
		      write_file(OKPROBE_EVENTS, "-:okpleak/read") == 0,
		      "cannot disable and remove okpleak/read");
	}
	STEP(unload_okprobe());
	sleep(6);
	started = now_ms();
	CHECK(write_file(KMEMLEAK, "scan") == 0, "cannot scan");
	CHECK(write_file(KMEMLEAK, "scan") == 0, "cannot scan");
	say("# kmemleak_clean: two scans took %lld s",
	    (now_ms() - started) / 1000);
	read_file(KMEMLEAK, report, sizeof(report));
	/* On a real machine, only what okprobe's modules allocated. */
	if (!getenv("okptest") && !strstr(report, "[okprobe"))
		return 0;
	if (report[0]) {
		char *line = strtok(report, "\n");
		int lines;

		/* The first reports whole, for their backtraces. */
		for (lines = 0; line && lines < 60; lines++) {
			say("# kmemleak: %s", line);
			line = strtok(NULL, "\n");
		}
		return fail("kmemleak reports unreferenced objects (above)");
	}
	return 0;
}

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
	int result;

	say("# %s", description);
	why[0] = '\0';
	result = test();
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
OKPTEST(okprobe, context_in_kernel, test_context_in_kernel, SHORT, "the calling-context and bad-input tests alone (okprobe_selftest.ko context_only=1): API calls from atomic context refused, NULLs, garbage structs and names, fuzz")
OKPTEST(okprobe, entry_in_kernel, test_entry_in_kernel, SHORT, "in-kernel entry probe tests alone (okprobe_selftest.ko entry_only=1)")
OKPTEST(okprobe, entry_probe, test_entry_probe, SHORT, "the sample client at ksys_read+0: through ftrace ([FTRACE]) or past its call site ([AFTER FTRACE]), every read counted, beside a kprobe_events probe at +0, under the function tracer, and with kernel.ftrace_enabled=0 (none through ftrace, all past the call site) and back")
OKPTEST(okprobe, return_in_kernel, test_return_in_kernel, LONG, "in-kernel return probe tests alone (okprobe_selftest.ko return_only=1)")
OKPTEST(okprobe, return_probe, test_return_probe, SHORT, "the sample client's return probe on ksys_read: return values as the kernel's r: event sees them, under the function and function graph tracers, readers killed inside, okprobe unloaded under sleeping readers, do_exit")
OKPTEST(okprobe, probe_events, test_probe_events, SHORT, "okprobe_events: events defined from the shell on ksys_read (arguments, $comm, $retval) count a child's reads as the kernel's kprobe event does; filter, hist trigger, profile; removal refused while enabled; bad lines get their errno and an error_log caret; > removes all")
OKPTEST(okprobe, probe_events_trace_cmd, test_probe_events_trace_cmd, SHORT, "okprobe_events with trace-cmd: record -e okptest_tc:read with a filter over 100 reads, report prints each with its count and comm")
OKPTEST(okprobe, probe_events_perf, test_probe_events_perf, SHORT, "okprobe_events with perf: perf_event_open of the event as a tracepoint counts okptest's 100 reads, and samples them with their raw records")
OKPTEST(okprobe, probe_events_storm, test_probe_events_storm, LONG, "a storm of okprobe_events events on hot and syscall-path kernel functions: defined with documented refusals, enabled at once under load, hit, removed with >")
OKPTEST(okprobe, probe_events_like_kernel, test_probe_events_like_kernel, SHORT, "okprobe_events against kprobe_events: the same lines read back alike with the same format fields; bad lines get the same errno and error_log entry")
OKPTEST(okprobe, int3_path_notifier, test_int3_path_notifier, SHORT, "x86: a breakpoint in hw_breakpoint_exceptions_notify, a die notifier every int3 runs, is hit by user-mode int3s and taken (it used to re-enter the trap forever)")
OKPTEST(okprobe, copied_templates, test_copied_templates, SHORT, "x86: ftrace's trampoline templates, which ftrace copies into each trampoline it makes, are listed whole in okprobe/blacklist and refused (EPERM)")
OKPTEST(okprobe, kprobe_events, test_kprobe_events, SHORT, "kprobe_events beside okprobe: refused in its function but on the ftrace site, taken once it is gone, and the other way round")
OKPTEST(okprobe, storm, test_storm, LONG, "a storm of probes over syscall-path kernel functions under load: documented refusals, optimized, toggled, text restored")
OKPTEST(okprobe, traced_okprobe, test_traced_okprobe, LONG, "okprobe under the function tracer: kprobe_events refused on all its text, 6 * 10^5 hits exact, console clean")
OKPTEST(okprobe, riscv_liveness, test_riscv_liveness, SHORT, "riscv: a probe optimizes under the psABI and, with psabi_liveness=0, stays a breakpoint and says why")
OKPTEST(okprobe, module_gone, test_module_gone, SHORT, "a probe on module text turns [GONE] on unload; freed init text is refused")
OKPTEST(okprobe, cover, test_cover, SHORT, "okprobe/cover: counting probes on every basic block of a test module's function count exactly the blocks known calls drive")
OKPTEST(okprobe, fault_injection, test_fault_injection, LONG, "every allocation of a registration (breakpoint, counting, return), an event's definition and enabling, an optimized probe's unregistration and the optimizer failed in turn (debug kernels): an errno or a success, nothing listed, the text as before, the call again succeeds")
/* Before the log check; make check's guests carry the sample. */
OKPTEST(okprobe, scale, test_scale, LONG, "the bench's sample of kernel instructions (" BENCH_SITES "): okprobe one by one beside kprobe_events, then register_many(), under a syscall load, each within its deadline, one owner per function, every site's text restored byte for byte")
OKPTEST(okprobe, kmemleak_clean, test_kmemleak_clean, LONG, "kmemleak (debug kernels): nothing unreferenced after the suite and a load, register, unregister, unload cycle of each kind")
OKPTEST(okprobe, kernel_log_clean, test_kernel_log_clean, SHORT, "nothing in the kernel log since okptest began matches a kernel problem (an oops, a warning, lockdep, RCU stalls)")

SUITE(demo)
OKPTEST(demo, load, demo_step_load, SHORT, "load okprobe.ko and the sample client")
OKPTEST(demo, show, demo_step_show, SHORT, "show the debugfs files; the probe goes [OPTIMIZED] and back with the sysctl")
OKPTEST(demo, events, demo_step_events, SHORT, "okprobe_events: a probe with fetch arguments from the shell, its events from trace_pipe, a hist trigger's table, its removal")
OKPTEST(demo, cover, demo_step_cover, SHORT, "okprobe-cover: basic-block coverage of vfs_read, rw_verify_area and seq_read_iter while reads run, then cleared")
OKPTEST(demo, unload, demo_step_unload, SHORT, "unload both; nothing is left behind")

/*
 * The benchmark's steps share what they measured, so they run in one
 * test (each in its own process, they could not).
 */
static int bench_run(void)
{
	static const char *const names[] = {
		"load okprobe.ko and okprobe_bench.ko",
		"measure every configuration; hit counts match calls",
		"register a sample of kernel instructions with kprobes, then okprobe; count, time, unregister",
		"unload both",
	};
	int (*const steps[])(void) = { bench_load, bench_measure,
				       bench_coverage, bench_unload };
	static char details[ARRAY_SIZE(steps)][sizeof(why)];
	const char *detail_of[ARRAY_SIZE(steps)];
	int failed[ARRAY_SIZE(steps)] = { 0 }, first = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		why[0] = '\0';
		/* Nothing to measure without the modules; unload regardless. */
		if (i == 0 || i == ARRAY_SIZE(steps) - 1 || !failed[0])
			failed[i] = steps[i]() == 1;
		snprintf(details[i], sizeof(details[i]), "%s", why);
		detail_of[i] = details[i];
		if (failed[i] && !first)
			first = i + 1;
	}
	report_subtests(failed, names, detail_of, ARRAY_SIZE(steps));
	if (first)
		snprintf(why, sizeof(why), "%s", details[first - 1]);
	return first ? 1 : 0;
}

SUITE(bench)
OKPTEST(bench, bench, bench_run, 3 * LONG, "the benchmark: per-hit cost and coverage, okprobe against kprobes")

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
	"probe_events_perf", "probe_events_storm", "probe_events_like_kernel",
	"kernel_log_clean",
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
	"entry_probe", "return_probe", "probe_events", "kprobe_events",
	"coexist_in_kernel", "context_in_kernel", "module_gone", "scale",
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
/* Both in one boot, as make check runs them: each is judged on its own. */
SUITE(selftest_fail_warn)
OKPTEST(selftest_fail_warn, deliberate_failure, test_deliberate_failure, SHORT, "harness self-test: a deliberately failing test")
OKPTEST(selftest_fail_warn, deliberate_warning, test_deliberate_warning, SHORT, "harness self-test: a module that WARNs")
/* Outlives the host's guest timeout: the guest must be seen to hang. */
SUITE(selftest_hang)
OKPTEST(selftest_hang, deliberate_hang, test_deliberate_hang, 3600, "harness self-test: a guest that hangs")

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

/*
 * okptest_only=NAME[,NAME...] on the kernel command line (a developer's
 * filter: tools/guest_run.py --args): only those tests of the suite run.
 */
static void keep_only_wanted(struct __fixture_metadata *f)
{
	static char copy[512];
	static const char *names[32];
	const char *only = getenv("okptest_only");
	size_t count = 0;
	char *name, *save = NULL;

	if (!only || !*only)
		return;
	snprintf(copy, sizeof(copy), "%s", only);
	for (name = strtok_r(copy, ",", &save); name && count < 32;
	     name = strtok_r(NULL, ",", &save))
		names[count++] = name;
	keep_tests(f, names, count);
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
			soak_timeout(f);
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
