#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Boot a test guest (x86-64 or riscv64) under QEMU, run okptest, judge it.

The guest's /init is selftests/okptest.c (static), which loads the
modules, runs one suite and prints TAP on the serial console. This side
builds the initramfs, runs QEMU with a timeout, parses the TAP and scans the
whole console for kernel problems: an Oops, BUG, WARNING, lockdep report,
RCU stall, panic, or a guest that never powers off fails the run even when
every TAP line says ok.

Used by tools/check and tools/demo; also a command:
  tools/guest_run.py --arch x86 --kernel vmlinuz --init okptest \
      --module okprobe.ko ... [--suite okprobe] [--log console.log]
"""

import argparse
import dataclasses
import glob
import os
import re
import socket
import stat
import subprocess
import sys
import tempfile
import time

import guest_emulator
import guest_hang

OPENSBI = "/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_dynamic.bin"

# Lines of a console that mean the kernel is unwell. Each is a failure.
KERNEL_PROBLEMS = [
    r"\bOops\b",
    r"\bBUG\b",
    r"WARNING:",
    r"Kernel panic",
    r"Unable to handle kernel",
    r"general protection fault",
    r"possible (circular|recursive) locking",
    r"inconsistent lock state",
    r"suspicious RCU usage",
    r"INFO: task .* blocked for more than",
    r"rcu: INFO: .*stall",
    r"soft lockup|hard LOCKUP",
    r"Call Trace:|Call trace:",
    r"\blockdep\b.*(turning off|disabled)",
]
KERNEL_PROBLEM_RE = re.compile("|".join(f"(?:{p})" for p in KERNEL_PROBLEMS))
# KTAP as kselftest_harness.h prints it: "ok 3 okprobe.unload", and for a
# skip "ok 4 # SKIP reason" (the name is on the harness's "#  RUN" line).
TAP_RESULT_RE = re.compile(
    r"^(not )?ok (\d+)(?: (.*?))?(?:\s*# (SKIP|TODO)\b\s*(.*))?$")
TAP_PLAN_RE = re.compile(r"^1\.\.(\d+)\b")
HARNESS_RUN_RE = re.compile(r"^#\s+RUN\s+(\S+) \.\.\.$")
HARNESS_END_RE = re.compile(r"^#\s+(OK|FAIL)\s+\S+$")
# A test's own sub-results (a KTAP subtest) are indented.
SUBTEST_INDENT = "    "


@dataclasses.dataclass
class TestResult:
    name: str
    passed: bool
    detail: str = ""
    skipped: bool = False
    # A guest test's own sub-results (a KTAP subtest), named after it.
    subtests: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class GuestRun:
    results: list
    console: str
    seconds: float
    # The longest stretch without console output, in seconds.
    longest_silence: float = 0.0

    @property
    def failed(self):
        return [r for r in self.results if not r.passed]


# ---- initramfs -------------------------------------------------------------

def _cpio_entry(name, mode, data=b"", rdev=(0, 0), ino=0):
    name_bytes = name.encode() + b"\0"
    fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1],
              len(name_bytes), 0]
    header = b"070701" + b"".join(b"%08X" % f for f in fields)
    out = header + name_bytes
    out += b"\0" * (-len(out) % 4)
    out += data
    out += b"\0" * (-len(out) % 4)
    return out


def build_initramfs(path, init, modules, busybox=None, extra_files=(),
                    trees=()):
    """Write a newc cpio with /init, the modules under /lib/okprobe, the
    console device node, (x86) busybox, and each directory of trees (a
    "make install" root) as it is. No root or cpio tool needed."""
    entries, directories = [], set()

    def directory(name):
        if name not in directories:
            directories.add(name)
            entries.append((name, stat.S_IFDIR | 0o755, b"", (0, 0)))

    def regular(name, source, mode=0o644):
        with open(source, "rb") as f:
            entries.append((name, stat.S_IFREG | mode, f.read(), (0, 0)))

    for d in ("bin", "sbin", "dev", "proc", "sys", "tmp", "lib",
              "lib/okprobe"):
        directory(d)
    # The kernel opens /dev/console for init before devtmpfs is mounted.
    entries.append(("dev/console", stat.S_IFCHR | 0o600, b"", (5, 1)))
    regular("init", init, 0o755)
    for module in modules:
        regular("lib/okprobe/" + os.path.basename(module), module)
    if busybox:
        regular("bin/busybox", busybox, 0o755)
        entries.append(("bin/sh", stat.S_IFLNK | 0o777, b"busybox", (0, 0)))
    for name, source, mode in extra_files:
        parts = name.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            directory("/".join(parts[:depth]))
        regular(name, source, mode)
    for tree in trees:
        for where, dirs, files in os.walk(tree):
            relative = os.path.relpath(where, tree)
            if relative != ".":
                directory(relative)
            dirs.sort()
            for name in sorted(files):
                source = os.path.join(where, name)
                regular(os.path.normpath(os.path.join(relative, name)),
                        source, os.stat(source).st_mode & 0o777)

    blob = b"".join(_cpio_entry(n, m, d, r, i + 1)
                    for i, (n, m, d, r) in enumerate(entries))
    blob += _cpio_entry("TRAILER!!!", 0)
    with open(path, "wb") as f:
        f.write(blob)


# ---- QEMU ------------------------------------------------------------------

def qemu_binary(arch):
    """The emulator arch's guests run on: Debian 13's QEMU for x86
    (tools/guest_emulator.py says why; OKPROBE_HOST_QEMU=1: the host's
    7.2, to compare), the host's for riscv."""
    if arch == "riscv":
        return "qemu-system-riscv64"
    if os.environ.get("OKPROBE_HOST_QEMU"):
        return "qemu-system-x86_64"
    return guest_emulator.emulator()


# x86 guests run single-threaded TCG (the vCPUs take turns on one host
# thread, switching at translation-block boundaries): under the default
# multi-threaded TCG of QEMU 7.2, a breakpoint written or removed by one vCPU
# while another keeps executing that address left the other vCPUs executing
# a stale int3 forever. The kernel's own register_kprobe/unregister_kprobe
# hang the same way there (checked with the concurrency test's pattern);
# with thread=single neither does. Documentation/testing.md has the details.
def qemu_command(arch, kernel, initrd, append, smp=2, memory="1G", cpu="max",
                 extra=()):
    if arch == "x86":
        return [qemu_binary(arch), "-machine", "q35",
                "-accel", "tcg,thread=single", "-cpu", cpu,
                "-smp", str(smp), "-m", memory, "-nodefaults",
                "-display", "none", "-serial", "stdio", "-no-reboot",
                "-kernel", kernel, "-initrd", initrd, "-append", append] + \
            list(extra)
    if arch == "riscv":
        return [qemu_binary(arch), "-machine", "virt", "-smp", str(smp),
                "-m", memory, "-nodefaults", "-display", "none",
                "-serial", "stdio", "-no-reboot", "-bios", OPENSBI,
                "-kernel", kernel, "-initrd", initrd, "-append", append] + \
            list(extra)
    raise ValueError(f"unknown arch {arch}")


# How long a guest may take to reach /init, and be silent before it. The
# riscv64 6.1 test kernels (PROVE_LOCKING, so PROVE_RCU) used to hang now
# and then under QEMU TCG in early boot, right after "Running RCU-tasks
# wait API self tests": a deadlock of 6.1's Tasks RCU between the boot
# thread and the kthread it had just started, fixed upstream in 2023 and
# backported by tools/build-riscv-kernel (the ftrace variant hung in 7
# boots of 12 beside two busy host processes; QEMU's monitor showed CPU 0
# taking its ticks and idling, nothing pending). No okprobe code has run
# by then. A hang before init is still retried, for whatever else may
# cause one: a normal boot reaches init in under 10 s and is never silent
# for more than 7 s between two of its lines before it (riscv-preempt
# unpacking its initramfs beside the x86 lane), so 12 s of silence after
# its first line and before it runs /init is such a hang: boot again.
# Neither rule holds once the kernel has run /init: okptest's own start
# on a starved host took longer (make demo KERNEL=riscv-7.2, and x86's
# installed-tree guest in make check, beside two benches: 60 s from
# QEMU's start without its first line); the silence limit and the
# timeout still catch a hang there.
INIT_DEADLINE = 60
INIT_SILENCE = 12
EARLY_BOOT_RETRIES = 3


class Monitor:
    """QEMU's human monitor on a unix socket: one command at a time.

    Not the QEMU project's client library: qemu.qmp is on PyPI, which is
    out of reach here, and Debian 12 does not package it (apt-cache
    search finds no python3-qemu*); this needs only "send a line, read to
    the prompt"."""

    def __init__(self, path):
        self.path = path

    def command(self, text, timeout=60):
        """Run one monitor command; return what it printed."""
        return self.commands([text], timeout)[-1]

    def commands(self, texts, timeout=60):
        """Run commands in one session (one "cpu N" holds for the next);
        return what each printed."""
        replies = []
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(self.path)
            self._until_prompt(s)  # the greeting
            for text in texts:
                s.sendall(text.encode() + b"\n")
                replies.append(self._until_prompt(s).decode("utf-8",
                                                            "replace"))
        return replies

    @staticmethod
    def _until_prompt(s):
        """What the monitor prints up to its next prompt (or until it
        closes the connection)."""
        reply = b""
        while not reply.endswith(b"(qemu) "):
            chunk = s.recv(4096)
            if not chunk:
                break
            reply += chunk
        return reply


# A guest that prints nothing for this long is hung: the longest quiet
# stretch of a healthy make check guest is printed with each run ("longest
# silence") and stays well under it.
SILENCE_LIMIT = 300


@dataclasses.dataclass
class Boot:
    console: str
    seconds: float
    timed_out: bool
    # Where a hung guest was (tools/guest_hang.py), or "".
    hang: str = ""
    longest_silence: float = 0.0


# The kernel's lockup and stall detectors are set for hardware: a soft
# lockup after 20 s without a reschedule, an RCU stall after 21 s. Under
# TCG on a loaded 2-core host a kernel path that takes milliseconds on a
# CPU can take that long (6.1's function-tracer start, rewriting every
# call site in one non-preemptible pass, took 23 s in make check at
# 40e204d while ten targets built beside the guest): a report from the
# emulator's speed, not from a lockup. syzkaller's VM configurations raise
# them the same way (watchdog_thresh=55 and workqueue.watchdog_thresh=140
# on KVM; its emulated ones go to 165 and 420). A real lockup is still
# reported, after 110 s, and a hung guest is the runner's silence limit's
# to catch in any case.
TCG_WATCHDOGS = ("watchdog_thresh=55 workqueue.watchdog_thresh=140 "
                 "rcupdate.rcu_cpu_stall_timeout=100")


def boot(arch, kernel, initrd, suite, timeout, log_path=None, echo=False,
         kernel_args="", on_line=None, cpu="max", qemu_extra=(), smp=2,
         silence=SILENCE_LIMIT, symbols=None, init_patience=1):
    """Run the guest; return a Boot. A guest that has not started init by
    INIT_DEADLINE (nor printed for INIT_SILENCE before it; both times
    init_patience for a slower guest), printed nothing
    for silence seconds or outlived
    timeout counts as timed out; past init, what its CPUs were doing is
    taken first (guest_hang.diagnose: QEMU's monitor, the kernel's SysRq
    over the serial line; symbols names the addresses). on_line(line,
    console, monitor), if given, sees each console line as it comes, with
    QEMU's monitor (tools/okprobe_build.py reads the running kernel's text
    through it)."""
    append = (f"console=ttyS0 panic=-1 sysrq_always_enabled {TCG_WATCHDOGS} "
              f"okptest={suite} {kernel_args}").strip()
    if arch == "riscv":
        append += " earlycon"
    command = qemu_command(arch, kernel, initrd, append, smp=smp, cpu=cpu,
                           extra=qemu_extra)
    # The serial port through QEMU's mux, so that the runner can send a
    # break (SysRq); every guest has a monitor ("info registers -a" shows
    # where each CPU is; OKPROBE_QEMU_MONITOR puts it where a developer
    # can reach it, Documentation/testing.md).
    command[command.index("stdio")] = "mon:stdio"
    monitor_path = os.environ.get("OKPROBE_QEMU_MONITOR") or \
        os.path.join(os.path.dirname(initrd), "monitor.sock")
    command += ["-monitor", f"unix:{monitor_path},server,nowait"]
    monitor = Monitor(monitor_path)
    start = time.monotonic()
    console = []
    result = Boot("", 0.0, False)
    log = open(log_path, "w") if log_path else None
    with subprocess.Popen(command, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          bufsize=0) as qemu:
        os.set_blocking(qemu.stdout.fileno(), False)
        pending = b""
        last_output = start
        # Past the kernel's "Run /init" a silence before okptest's first
        # line is its start on a starved host, not an early-boot hang
        # (ran_init() as the lines come, not over the console each poll).
        kernel_ran_init = False

        def take(chunk):
            nonlocal pending, kernel_ran_init
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                line = raw.decode("utf-8", "replace").rstrip("\r")
                console.append(line)
                kernel_ran_init = kernel_ran_init or RAN_INIT in line
                if log:
                    log.write(line + "\n")
                    log.flush()
                if echo:
                    print(line, flush=True)
                if on_line:
                    on_line(line, console, monitor)

        def drain(seconds):
            """Keeps the console flowing for seconds."""
            until = time.monotonic() + seconds
            while time.monotonic() < until and qemu.poll() is None:
                try:
                    chunk = qemu.stdout.read(65536)
                except BlockingIOError:
                    chunk = None
                if chunk:
                    take(chunk)
                else:
                    time.sleep(0.05)

        while True:
            chunk = None
            try:
                chunk = qemu.stdout.read(65536)
            except BlockingIOError:
                pass
            now = time.monotonic()
            if chunk:
                result.longest_silence = max(result.longest_silence,
                                             now - last_output)
                last_output = now
                take(chunk)
                continue
            if chunk == b"" or qemu.poll() is not None:
                if qemu.poll() is not None:
                    rest = qemu.stdout.read() or b""
                    pending += rest
                    break
            elapsed, quiet = now - start, now - last_output
            booted = started_init(console)
            # Before the kernel's first line (QEMU loading an installed
            # tree's initramfs on a busy host: 12 s and more) only the
            # deadline counts.
            if elapsed > timeout or quiet > silence or \
                    not booted and not kernel_ran_init and \
                    (elapsed > INIT_DEADLINE * init_patience or
                     last_output > start and
                     quiet > INIT_SILENCE * init_patience):
                result.timed_out = True
                result.longest_silence = max(result.longest_silence, quiet)
                if booted or kernel_ran_init:
                    why = (f"no console output for {quiet:.0f} s"
                           if quiet > silence else
                           f"still running after {elapsed:.0f} s")
                    lines, summary = guest_hang.diagnose(
                        arch, monitor, qemu.stdin, symbols, console, drain)
                    result.hang = f"{why}; {summary}"
                    for line in [f"# hang: {why}"] + lines:
                        take(line.encode() + b"\n")
                qemu.kill()
                break
            time.sleep(0.05)
        qemu.wait()
        if pending:
            console.append(pending.decode("utf-8", "replace").rstrip("\r"))
    if log:
        log.close()
    result.console = "\n".join(console)
    result.seconds = time.monotonic() - start
    return result


def started_init(lines):
    """okptest's first line has appeared: the kernel booted to /init."""
    return any(line.startswith("TAP version") for line in lines)


RAN_INIT = "Run /init as init process"


def ran_init(lines):
    """The kernel has run /init (okptest may not have printed yet)."""
    return any(RAN_INIT in line for line in lines)


# ---- Judging ---------------------------------------------------------------

def parse_tap(console):
    """Return (planned count or None, {number: TestResult}, bailed out).

    A top-level result also carries its subtests' results (.subtests),
    named after it."""
    planned, results, bailed = None, {}, False
    diagnostics, subtests, sub_diagnostics = [], [], []
    running = None
    for raw in console.splitlines():
        raw = raw.rstrip("\r")
        line = raw.strip()
        if raw.startswith(SUBTEST_INDENT):
            if m := TAP_RESULT_RE.match(line):
                subtests.append(TestResult(
                    m.group(3) or f"subtest {m.group(2)}", not m.group(1),
                    m.group(5) or "; ".join(sub_diagnostics),
                    m.group(4) == "SKIP"))
                sub_diagnostics = []
            elif line.startswith("# "):
                sub_diagnostics.append(line[2:])
            continue
        if m := TAP_PLAN_RE.match(line):
            planned = int(m.group(1))
        elif m := HARNESS_RUN_RE.match(line):
            running, diagnostics, subtests = m.group(1), [], []
        elif HARNESS_END_RE.match(line):
            pass
        elif m := TAP_RESULT_RE.match(line):
            number = int(m.group(2))
            skipped = m.group(4) == "SKIP"
            name = m.group(3) or running or f"test {number}"
            detail = m.group(5) or "; ".join(diagnostics)
            result = TestResult(name, not m.group(1), detail, skipped)
            result.subtests = [TestResult(f"{name}: {t.name}", t.passed,
                                          t.detail, t.skipped)
                               for t in subtests]
            results[number] = result
            diagnostics, subtests, running = [], [], None
        elif line.startswith("# "):
            diagnostics.append(line[2:])
        elif line.startswith("Bail out!"):
            bailed = True
    return planned, results, bailed


# okptest's fault_injection test fails allocations on purpose between these
# two kernel log lines; an allocation that fails there may print the
# kernel's warn_alloc() report (its header, then a stack dump): that stack
# is the injected fault's, not a problem. Anything else there still is.
FAULTS_BEGIN = "okptest: injecting faults"
FAULTS_END = "okptest: no longer injecting faults"
WARN_ALLOC_RE = re.compile(r"vmalloc error: size|page allocation failure:")
# The header's stack dump starts within this many lines (CPU:, Hardware
# name:, Call Trace:).
WARN_ALLOC_STACK_LINES = 6


def kernel_problems(console):
    problems, injecting, since_warn_alloc = [], False, None
    for line in console.splitlines():
        if FAULTS_BEGIN in line:
            injecting = True
        elif FAULTS_END in line:
            injecting = False
        if since_warn_alloc is not None:
            since_warn_alloc += 1
        if injecting and WARN_ALLOC_RE.search(line):
            since_warn_alloc = 0
        if not KERNEL_PROBLEM_RE.search(line):
            continue
        if injecting and re.search(r"Call [Tt]race:", line) and \
                since_warn_alloc is not None and \
                since_warn_alloc <= WARN_ALLOC_STACK_LINES:
            continue
        problems.append(line)
    return problems


def judge(console, timed_out, label, hang=""):
    """Turn a console into results: one per TAP test, plus the console check
    and the power-off check (with where a hung guest was)."""
    planned, tap, bailed = parse_tap(console)
    results = []
    if planned is None:
        results.append(TestResult(f"{label}: TAP plan", False,
                                  "the guest printed no TAP plan"))
    elif planned == 0:
        # okptest skips a whole run it cannot start ("1..0 # SKIP why").
        why = next((line.partition("# SKIP")[2].strip()
                    for line in console.splitlines()
                    if line.startswith("1..0")), "")
        results.append(TestResult(f"{label}: TAP plan", False,
                                  f"the guest ran no test: {why}"))
    for number in range(1, (planned or 0) + 1):
        if number in tap:
            r = tap[number]
            results.append(TestResult(f"{label}: {r.name}", r.passed,
                                      r.detail, r.skipped))
            results += [TestResult(f"{label}: {t.name}", t.passed, t.detail,
                                   t.skipped) for t in r.subtests]
        else:
            results.append(TestResult(f"{label}: test {number}", False,
                                      "did not run"))
    if bailed:
        results.append(TestResult(f"{label}: bail out", False,
                                  "the guest bailed out"))
    problems = kernel_problems(console)
    results.append(TestResult(
        f"{label}: console free of Oops/BUG/WARNING/lockdep", not problems,
        "; ".join(problems[:5])))
    finished = "# okptest: done" in console and not timed_out
    results.append(TestResult(
        f"{label}: guest finished and powered off", finished,
        "" if finished else
        f"timed out (hang): {hang}" if timed_out and hang else
        "timed out (hang)" if timed_out else "okptest did not finish"))
    return results


def run(arch, kernel, init, modules, suite="okprobe", busybox=None,
        extra_files=(), timeout=600, log_path=None, echo=False, label=None,
        kernel_args="", trees=(), on_line=None, cpu="max", qemu_extra=(),
        smp=2, silence=SILENCE_LIMIT, symbols=None, init_patience=1):
    """Boot, judge. symbols: the guest kernel's "address type name" file,
    to name where a hung guest's CPUs were."""
    label = label or f"{arch}/{suite}"
    with tempfile.TemporaryDirectory() as tmp:
        initrd = os.path.join(tmp, "initramfs.cpio")
        build_initramfs(initrd, init, modules, busybox, extra_files, trees)
        if log_path:
            # An earlier run's hung attempts are not this run's.
            for stale in glob.glob(glob.escape(log_path) + ".attempt*"):
                os.remove(stale)
        for attempt in range(EARLY_BOOT_RETRIES + 1):
            done = boot(arch, kernel, initrd, suite, timeout, log_path, echo,
                        kernel_args, on_line, cpu, qemu_extra, smp, silence,
                        symbols, init_patience)
            # Only a hang before the kernel ran /init is retried: nothing
            # of okprobe's (nor any test) has run yet. Every retry is
            # reported.
            if not done.timed_out or ran_init(done.console.splitlines()) or \
                    attempt == EARLY_BOOT_RETRIES:
                break
            # Keep the hung attempt's console: the next boot would
            # overwrite the log, and with it what says why it hung.
            kept = ""
            if log_path:
                kept_path = f"{log_path}.attempt{attempt + 1}"
                os.replace(log_path, kept_path)
                kept = f" (its console: {kept_path})"
            print(f"# {label}: guest hung in early boot before init "
                  f"(attempt {attempt + 1}){kept}; booting again", flush=True)
    return GuestRun(judge(done.console, done.timed_out, label, done.hang),
                    done.console, done.seconds, done.longest_silence)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", required=True, choices=["x86", "riscv"])
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--init", required=True)
    parser.add_argument("--module", action="append", default=[])
    parser.add_argument("--busybox")
    parser.add_argument("--suite", default="okprobe")
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--log")
    parser.add_argument("--echo", action="store_true")
    parser.add_argument("--args", default="",
                        help="more kernel command line, e.g. "
                        "okptest_only=TEST,TEST (only those tests)")
    parser.add_argument("--cpu", default="max")
    args = parser.parse_args()
    result = run(args.arch, args.kernel, args.init, args.module, args.suite,
                 args.busybox, (), args.timeout, args.log, args.echo,
                 kernel_args=args.args, cpu=args.cpu)
    for r in result.results:
        status = "SKIP" if r.skipped else ("PASS" if r.passed else "FAIL")
        print(f"{status} {r.name}" + (f" -- {r.detail}" if r.detail and
                                       not r.passed or r.skipped else ""))
    print(f"{len(result.results) - len(result.failed)} passed, "
          f"{len(result.failed)} failed")
    return 1 if result.failed else 0


if __name__ == "__main__":
    sys.exit(main())
