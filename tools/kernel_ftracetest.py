# SPDX-License-Identifier: GPL-2.0
"""The kernel's own tests of kprobe_events, for the guests: ftracetest and
its test.d/kprobe, from the source of the guest kernel's series, as the
kernel has them and rewritten for okprobe_events.

- The source: Debian's linux-source-SERIES (tools/kernel_source.py). Only
  tools/testing/selftests/ftrace is taken from its tarball, cached per
  package and version.
- The tree a guest gets (its initramfs, under lib/ftracetest): kernel/,
  ftracetest with test.d/functions and test.d/kprobe as they are, and
  okprobe/, the same with each file rewritten by REWRITES, so that every
  test writes okprobe_events where it wrote kprobe_events and looks for
  its events in okprobe's default group. okptest kernel_kprobe_tests runs
  both on the same boot and compares them test by test.
"""

import os
import re
import shutil
import tempfile

import guest_userland
import kernel_source

# The targets whose guests run them: x86's three kernel generations
# (ftracetest runs under busybox's sh, which only x86's guests have).
TARGETS = ("x86", "x86-6.12", "x86-7.3")
LAYOUT = 2  # bumped when tree() lays the tree out anew (or REWRITES change)
GUEST_DIR = "lib/ftracetest"
SELFTESTS = "tools/testing/selftests/ftrace"

# kprobe_events' names and okprobe_events' for them, in this order.
REWRITES = [
    # The probe list ([FTRACE], [OPTIMIZED]: okprobe's says them too) and
    # the optimization switch (okprobe's sysctl has an underscore).
    (re.compile(r"\.\./kprobes/list"), "../okprobe/list"),
    (re.compile(r"/sys/kernel/debug/kprobes/list"),
     "/sys/kernel/debug/okprobe/list"),
    (re.compile(r"/proc/sys/debug/kprobes-optimization"),
     "/proc/sys/debug/kprobes_optimization"),
    # The default group: kprobes, okprobe's okprobe.
    (re.compile(r"events/kprobes/"), "events/okprobe/"),
    (re.compile(r"([:=])kprobes/"), r"\1okprobe/"),
    (re.compile(r"\bkprobe_events\b"), "okprobe_events"),
    (re.compile(r"\bkprobe_profile\b"), "okprobe_profile"),
    # The error_log's location: its entries say "okprobe_events: error:".
    (re.compile(r"'trace_kprobe'"), "'okprobe_events'"),
]


def available(t):
    return t.name in TARGETS


def rewrite(text):
    """A test (or test.d/functions) for okprobe_events."""
    for pattern, replacement in REWRITES:
        text = pattern.sub(replacement, text)
    return text


def tree(t):
    """The tree for t's initramfs (GUEST_DIR/kernel and GUEST_DIR/okprobe),
    made once per source package version and cached."""
    package, version, source = kernel_source.source(t)

    def make(out):
        guest_userland.say(
            f"taking ftracetest and test.d/kprobe from {package}")
        with tempfile.TemporaryDirectory() as tmp:
            # tools/testing/selftests/ftrace's files, into tmp itself.
            kernel_source.extract(source, tmp, [SELFTESTS],
                                  SELFTESTS.count("/") + 1)
            for side in ("kernel", "okprobe"):
                top = os.path.join(out, GUEST_DIR, side)
                os.makedirs(os.path.join(top, "test.d", "kprobe"))
                shutil.copy(os.path.join(tmp, "ftracetest"), top)
                names = ["functions"] + [
                    os.path.join("kprobe", name) for name in sorted(
                        os.listdir(os.path.join(tmp, "test.d", "kprobe")))
                    if name.endswith(".tc")]
                for name in names:
                    with open(os.path.join(tmp, "test.d", name)) as f:
                        text = f.read()
                    with open(os.path.join(top, "test.d", name), "w") as f:
                        f.write(rewrite(text) if side == "okprobe" else text)

    return kernel_source.cached("ftracetest", package, f"{version} {LAYOUT}",
                                make)
