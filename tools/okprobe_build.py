# SPDX-License-Identifier: GPL-2.0
"""Shared steps of tools/check and tools/demo: fetch or build the guest
kernels, build okprobe for a target in its own copy of the tree, build the
in-guest test program.

A target is a (arch, kernel) pair: "x86" is Debian 12's stock 6.1 kernel,
"x86-rt" its PREEMPT_RT flavour;
"riscv-preempt", "riscv-ftrace", "riscv-nokprobes" and "riscv-debug" are
the riscv64 kernels built from Debian's linux-source-6.1
(tools/riscv-kernel*.config), "x86-debug" the x86-64 one
(tools/x86-kernel*.config);
"x86-6.12" and "riscv-6.12" are Debian 13's stock kernels, okprobe built
for them in a trixie build root (tools/debian13.py).
"""

import dataclasses
import os
import shutil
import subprocess
import threading

import debian13
import guest_debuginfo
import guest_userland
import kernel_ftracetest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.join(ROOT, "tools")
BUILD = os.path.join(ROOT, "build")
X86_RELEASE = os.environ.get("OKPROBE_X86_KERNEL", "6.1.0-56-amd64")
# Debian 12's PREEMPT_RT flavour of the same kernel ("x86-rt").
X86_RT_RELEASE = X86_RELEASE.replace("-amd64", "-rt-amd64")
RISCV_CROSS = "riscv64-linux-gnu-"
# What every guest gets (okprobe_bench.ko drives the hits of the test
# under the function tracer too).
MODULES = ["okprobe.ko", "samples/okprobe_sample.ko",
           "selftests/modules/okprobe_test_warn.ko",
           "selftests/modules/okprobe_selftest.ko",
           "selftests/modules/okprobe_test_target.ko",
           "selftests/modules/okprobe_test_gone.ko",
           "selftests/modules/okprobe_bench.ko"]


class StepFailed(Exception):
    def __init__(self, step, output):
        super().__init__(f"{step} failed")
        self.step = step
        self.output = output


def kbuild_env(env=None):
    """env (default: ours) for kbuild: gcc and g++ through ccache, by the
    masquerade directory of Debian's ccache package, its cache beside
    the other caches. make check builds the modules for seven kernels and
    again for make install and DKMS, about 40 s of CPU each from nothing;
    a run whose tree sits where the last one's did (a developer's, a
    clone at the same path) finds them all in the cache. No base
    directory: objects keep their absolute paths (__FILE__, debug info),
    so only the same path hits."""
    env = dict(os.environ if env is None else env)
    if os.path.isdir("/usr/lib/ccache") and shutil.which("ccache"):
        env.update(PATH="/usr/lib/ccache:" + env.get("PATH", "/usr/bin:/bin"),
                   CCACHE_DIR=os.path.join(debian13.CACHE, "ccache"))
    return env


def run(command, step, cwd=ROOT, env=None):
    """Run a command; return its stdout; raise StepFailed with its output."""
    done = subprocess.run(command, cwd=cwd, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise StepFailed(step, done.stdout)
    return done.stdout


@dataclasses.dataclass
class Target:
    name: str      # x86, x86-rt, riscv-preempt, ..., x86-6.12, riscv-6.12
    arch: str      # x86 or riscv
    kdir: str = ""
    kernel_image: str = ""
    modules: list = dataclasses.field(default_factory=list)
    okptest: str = ""
    zydis_dir: str = ""  # Debian 13's x86 build: the Zydis copied in
    # The Debian userland disk (guest_userland.py) and the modules that
    # read it, on the targets that get it (prepare_userland()).
    userland: str = ""
    userland_modules: list = dataclasses.field(default_factory=list)
    bpf_sample: list = dataclasses.field(default_factory=list)
    # The kernel's debuginfo disk (guest_debuginfo.py), where it has one.
    debuginfo: str = ""
    # The kernel's ftracetest for the initramfs (kernel_ftracetest.py).
    ftracetest: str = ""

    @property
    def cross(self):
        return RISCV_CROSS if self.arch == "riscv" else ""

    @property
    def build_dir(self):
        return os.path.join(BUILD, self.name)

    @property
    def tree(self):
        """The copy of the source tree the target builds in, so targets
        never share objects (inside the trixie root for Debian 13's
        targets, where its compilers run it under chroot)."""
        if self.debian13:
            return os.path.join(debian13.build_root(), "fs", "build",
                                self.name)
        return os.path.join(self.build_dir, "tree")

    @property
    def install_dir(self):
        """Where tools/check-install installs: beside the tree (inside
        the trixie root for Debian 13's targets, which install there)."""
        if self.debian13:
            return os.path.join(debian13.build_root(), "fs", "build",
                                f"{self.name}-install")
        return os.path.join(self.build_dir, "install")

    @property
    def debian13(self):
        """The Debian package of a stock kernel (Debian 13's or a newer
        one from trixie-backports), built for in the trixie root; None
        for the kernels built here or Debian 12's."""
        return debian13.KERNELS.get(self.name)

    # Debian 13's amd64 kernel has call depth tracking
    # (MITIGATION_CALL_DEPTH_TRACKING): retbleed=stuff turns it on where
    # the CPU is one retbleed affects. QEMU's TCG "max" CPU is not; its
    # Skylake-Client is ("Mitigation: Stuffing"), so the x86-6.12 suite
    # and census run with the boot's call and return rewriting live.
    @property
    def guest_cpu(self):
        return "Skylake-Client" if self.name == "x86-6.12" else "max"

    # riscv-preempt's storm, at 800 sites the longest test of make check
    # (lockdep doubles a registration's cost, and the x86 lane shares the
    # CPUs), runs 200 (its scale suite registers 1,000 sites one by one
    # under load). The in-kernel suite's long tests (randomized
    # coexistence, churn, hits across optimization cycles) run their full
    # counts once per arch, on x86 and riscv-7.2 (at half counts
    # riscv-7.2's event storm would take 5 functions, and no riscv kernel
    # would run it whole); the other whole suites, x86-7.3 and
    # riscv-preempt, run a quarter of them (testing.md, "what is not run
    # twice"). riscv-ftrace's entry_probe runs the function tracer on
    # ksys_read alone: over every function its lockdep kernel took two
    # minutes. The PREEMPT_RT kernels' entry_probe does the same: what the
    # tracer's rewrite of every call site does beside okprobe does not
    # depend on the preemption model, and it runs on the same sources
    # without PREEMPT_RT (x86, x86-7.3; 10-15 s of TCG each). On x86-rt
    # the 8250's handler runs in a thread; under TCG its edge interrupt
    # keeps firing while that thread transmits, and a long console dump
    # (the kallsyms listing) let the spurious-interrupt detector disable
    # IRQ 4 ("irq 4: nobody cared"), after which the console's tty never
    # drains: noirqdebug keeps that detector off (on x86-7.3-rt too).
    # x86-debug boots with 4-level paging (no5lvl): QEMU's "max" CPU has
    # LA57, and 6.1's identify_cpu() clears the boot CPU's capabilities
    # and reads them again while interrupts are on and before the
    # alternatives are patched; an interrupt then sees
    # pgtable_l5_enabled() false, and KASAN took the 5-level direct map
    # address of an IRQ descriptor's lock for a wild access (BUG: KASAN:
    # wild-memory-access in do_raw_spin_lock, 0.02 s into a boot).
    @property
    def guest_args(self):
        # entry_probe's function tracer on ksys_read alone: tracing every
        # function over its reads took 18-51 s of x86's TCG a kernel; x86
        # (6.1), riscv-6.12 and riscv-7.2 still trace every function there.
        only_read = "okptest_tracer_functions=ksys_read"
        rt = f"noirqdebug {only_read}"
        return {"x86-6.12": f"retbleed=stuff {only_read}",
                "x86-rt": rt,
                "x86-7.3": f"okptest_selftest_scale=25 {only_read}",
                "riscv-7.2": "okptest_selftest_scale=50",
                "x86-7.3-rt": rt,
                "riscv-preempt": "okptest_storm_sites=200 "
                                 "okptest_selftest_scale=25",
                "riscv-debug": "okptest_storm_sites=200 "
                               "okptest_selftest_scale=25",
                "x86-debug": "no5lvl okptest_storm_sites=200 "
                             "okptest_selftest_scale=25",
                "riscv-ftrace": "okptest_tracer_functions=ksys_read",
                }.get(self.name, "")

    # How many times a target's guest is slower than riscv-preempt's,
    # for its deadlines: the sanitizer kernel booted to /init in 83 s of
    # TCG (riscv-preempt in 25), and its whole suite took 2,563 s, near
    # three times the 900 s cap, with host builds beside it.
    @property
    def guest_slowness(self):
        return 4 if self.name.endswith("-debug") else 1

    # How many times the runner's early-boot limits (guest_run's
    # INIT_DEADLINE, INIT_SILENCE) a target's boot gets: riscv-debug's
    # kernel was silent 26 s of its own time after unpacking the
    # initramfs (KASAN, kmemleak and lockdep setting up), over 36 s of a
    # busy host's, and was taken for hung.
    @property
    def boot_patience(self):
        return 5 if self.name.endswith("-debug") else 1

    # How many of the sampled kernel instructions make check's scale
    # suite registers on this kernel (testing.md, "The scale suite").
    @property
    def scale_sites(self):
        return SCALE_SITES.get(self.name, 10000)


# A quarter of the sample (2,500 of make bench's 10,000, spread over the
# same text) on each arch's stock Debian 13 6.12 kernel, where issue 35's
# storm hung; 1,000 on the others but riscv-ftrace, 500 there (its
# lockdep kernel took 55 s over 1,000; riscv-preempt runs the 1,000 on
# the same source). make check's 20 minutes do not carry
# the whole 10,000 (its guest alone took 150-190 s on each 6.12 kernel,
# 5,000 about half that); make bench's 10,000-site passes, which fail on
# a missed deadline or a text not restored, run it whole (testing.md,
# "The scale suite").
SCALE_SITES = {"x86": 1000, "x86-rt": 1000, "x86-6.12": 2500,
               "x86-7.3": 1000, "x86-7.3-rt": 1000,
               "riscv-preempt": 1000, "riscv-6.12": 2500,
               "riscv-7.2": 1000, "riscv-ftrace": 500,
               "riscv-nokprobes": 1000, "riscv-debug": 500, "x86-debug": 500}


def target(name):
    return Target(name, "riscv" if name.startswith("riscv") else "x86")


def prepare_kernel(t):
    """Fetch (x86) or build (riscv) the guest kernel; set kdir and image."""
    if t.debian13:
        out = debian13.kernel_image(t.debian13)
        t.kernel_image = os.path.join(out, "vmlinuz" if t.arch == "x86"
                                      else "Image")
        t.kdir = debian13.headers(t.debian13)
    elif t.name == "x86-debug":
        out = run([os.path.join(TOOLS, "build-kernel"), "x86", "debug"],
                  "building the x86 debug kernel").strip().splitlines()[-1]
        t.kdir = out
        t.kernel_image = os.path.join(out, "arch/x86/boot/bzImage")
        prune_stale_kernels(out, "debug")
    elif t.arch == "x86":
        release = X86_RT_RELEASE if t.name == "x86-rt" else X86_RELEASE
        out = run([os.path.join(TOOLS, "fetch-x86-kernel"), release],
                  "fetching the x86 kernel").strip().splitlines()[-1]
        t.kernel_image = os.path.join(out, "vmlinuz")
        t.kdir = f"/usr/src/linux-headers-{release}"
        if not os.path.isdir(t.kdir):
            raise StepFailed("x86 headers", f"{t.kdir} is missing "
                             f"(linux-headers-{release})")
    else:
        variant = t.name.split("-", 1)[1]
        out = run([os.path.join(TOOLS, "build-riscv-kernel"), variant],
                  f"building the riscv {variant} kernel").strip()
        out = out.splitlines()[-1]
        t.kdir = out
        t.kernel_image = os.path.join(out, "arch/riscv/boot/Image")
        prune_stale_kernels(out, variant)


# x86-64's kernel image is mapped at __START_KERNEL_map + its physical
# address; booted with nokaslr, at the physical address it was linked for.
X86_START_KERNEL_MAP = 0xffffffff80000000


def kernel_symbols(t):
    """The guest kernel's text symbols and section bounds at their link
    addresses, dumped once from a guest booted with nokaslr (Debian's amd64
    vmlinuz has no symbol table and ships a stub System.map; its riscv64
    package has no vmlinux and no System.map), and its ftrace sites beside
    them (ftrace-sites-nokaslr.txt). On x86, also the running kernel's
    [_stext, _etext) as boot-time patching left it (runtime-text.bin), read
    through QEMU's monitor while the guest holds still. Cached beside the
    kernel image; returns the symbols file's path."""
    directory = os.path.dirname(t.kernel_image)
    path = os.path.join(directory, "kallsyms-nokaslr.txt")
    sites = os.path.join(directory, "ftrace-sites-nokaslr.txt")
    text = os.path.join(directory, "runtime-text.bin")
    wanted = [path, sites] + ([text] if t.arch == "x86" else [])
    if all(os.path.exists(p) for p in wanted):
        return path
    import guest_run
    dumped = []

    def read_text(line, console, monitor):
        if not line.startswith("# okptest: the kernel's text may be read") \
                or t.arch != "x86":
            return
        bounds = {}
        for seen in console:
            fields = seen.split()
            if seen.startswith("# kallsyms ") and len(fields) >= 5 and \
                    fields[4] in ("_stext", "_etext"):
                bounds[fields[4]] = int(fields[2], 16)
        start, end = bounds.get("_stext"), bounds.get("_etext")
        if not start or not end or end <= start:
            return
        # The file name quoted: HMP reads "SIZE /path" as a division.
        reply = monitor.command(f"pmemsave {start - X86_START_KERNEL_MAP:#x} "
                                f'{end - start:#x} "{text}.tmp"')
        if os.path.exists(text + ".tmp") and \
                os.path.getsize(text + ".tmp") == end - start:
            dumped.append(reply)

    run = guest_run.run(t.arch, t.kernel_image, t.okptest, [], "kallsyms",
                        timeout=900, cpu=t.guest_cpu,
                        kernel_args=f"nokaslr okptest_hold=5 {t.guest_args}",
                        log_path=os.path.join(t.build_dir,
                                              "console-kallsyms.log"),
                        on_line=read_text)
    lines = run.console.splitlines()
    symbols = [line[len("# kallsyms "):] for line in lines
               if line.startswith("# kallsyms ")]
    ftrace = [line[len("# ftrace "):] for line in lines
              if line.startswith("# ftrace ")]
    if run.failed or len(symbols) < 1000 or (t.arch == "x86" and not dumped):
        raise StepFailed(f"dumping the {t.name} kernel's symbols and text",
                         "\n".join(f"{r.name}: {r.detail[:200]}"
                                    for r in run.failed) or
                         "QEMU's monitor did not save the kernel's text")
    if dumped:
        os.replace(text + ".tmp", text)
    for name, content in ((sites, ftrace), (path, symbols)):
        with open(name + ".tmp", "w") as f:
            f.write("\n".join(content) + "\n")
        os.replace(name + ".tmp", name)
    return path


# Where okptest looks for the sample of kernel instructions (the bench and
# scale suites).
SITES_IN_GUEST = "lib/okprobe/bench-sites.txt"

# The host tests' build directory is one: its builds (tools/check's
# threads, the samplers) take turns.
HOST_BUILD = threading.Lock()


def sample_sites(t, count, name="bench-sites.txt"):
    """A sample of count instruction boundaries of the guest kernel's core
    text (every Nth of them, N = all / count), drawn from its vmlinux by
    okprobe_bench_sites (x86: function starts from the kallsyms dump) or
    okprobe_riscv_bench_sites (System.map; the raw Image and the kallsyms
    dump of a stock kernel), built alone, not with every host test.
    Returns the path of the "symbol offset" file, build/TARGET/name."""
    if t.arch == "x86":
        sampler = "okprobe_bench_sites"
        symbols = kernel_symbols(t)
        # Debian's vmlinux (its -dbg package) is cached beside its
        # vmlinuz; an own-built kernel's is in its tree.
        vmlinux = os.path.join(os.path.dirname(t.kernel_image), "vmlinux")
        if not os.path.exists(vmlinux):
            vmlinux = os.path.join(t.kdir, "vmlinux")
    elif os.path.exists(os.path.join(t.kdir, "System.map")):
        # An own-built kernel. (Debian's riscv64 headers carry a vmlinux
        # too: its BTF only, for the modules' BTF.)
        sampler = "okprobe_riscv_bench_sites"
        symbols = os.path.join(t.kdir, "System.map")
        vmlinux = os.path.join(t.kdir, "vmlinux")
    else:
        # Debian's riscv64 package ships the raw Image only: its symbols
        # come from a guest (riscv_kernel.hpp's load_raw_kernel).
        sampler = "okprobe_riscv_bench_sites"
        symbols = kernel_symbols(t)
        vmlinux = t.kernel_image
    with HOST_BUILD:
        run([os.path.join(TOOLS, "host-test"), "--build-only", sampler],
            f"building {sampler}")
    os.makedirs(t.build_dir, exist_ok=True)
    path = os.path.join(t.build_dir, name)
    run([os.path.join(BUILD, "host", sampler), vmlinux, symbols, str(count),
         path], "sampling kernel instructions")
    return path


def symbols_file(t):
    """The guest kernel's symbols, if at hand without a boot (for naming
    where a hung guest was): an own-built kernel's System.map, or the
    kallsyms dump kernel_symbols() made earlier; else None."""
    candidates = [os.path.join(t.kdir, "System.map"),
                  os.path.join(os.path.dirname(t.kernel_image),
                               "kallsyms-nokaslr.txt")]
    return next((p for p in candidates if os.path.exists(p)), None)


def prune_stale_kernels(current, variant):
    """Remove builds of the same variant made from other inputs (about
    1.5 GB each): the cache keeps one kernel per variant."""
    parent = os.path.dirname(current)
    for name in os.listdir(parent):
        path = os.path.join(parent, name)
        if name.startswith(f"{variant}-") and path != current:
            shutil.rmtree(path, ignore_errors=True)


def build_modules(t):
    """Build okprobe.ko and the test modules in build/TARGET/tree, a copy of
    the source tree, so targets never share objects."""
    os.makedirs(t.build_dir, exist_ok=True)  # logs, consoles
    tree = t.tree
    os.makedirs(tree, exist_ok=True)
    # What .gitignore ignores (build products, the Zydis copy) is neither
    # copied nor deleted, so the copy builds incrementally. Files are
    # compared by content and a changed one gets the time of the copy
    # (no -t): with the source's own mtime, an edit made while a previous
    # build ran could look older than the object built from the old text.
    run(["rsync", "-rlpD", "--checksum", "--delete", "--exclude=/.git",
         "--filter=:- .gitignore", f"{ROOT}/", f"{tree}/"],
        "copying the tree")
    if t.debian13:
        if t.arch == "x86":
            # The Makefile's own rule, on the host: the root has no
            # Debian 12 source packages to fetch Zydis from.
            t.zydis_dir = run([os.path.join(TOOLS, "fetch-zydis")],
                              "fetching Zydis").strip().splitlines()[-1]
            run(["make", "-C", tree, f"ZYDIS_DIR={t.zydis_dir}",
                 "zydis-sources"], "copying Zydis")
        done = debian13.build_modules(debian13.build_root(), tree,
                                      t.debian13, t.zydis_dir)
        if done.returncode != 0:
            raise StepFailed(f"building okprobe.ko for {t.name}", done.stdout)
        t.modules = [os.path.join(tree, m) for m in MODULES]
        return
    make = ["make", "-C", tree, f"ARCH={t.arch}", f"KDIR={t.kdir}"]
    if t.cross:
        make.append(f"CROSS_COMPILE={t.cross}")
    # Not -j: kbuild parallelism inside one small module gains little and
    # the riscv kernel build may share the cores.
    run(make + ["modules"], f"building okprobe.ko for {t.name}",
        env=kbuild_env())
    t.modules = [os.path.join(tree, m) for m in MODULES]


# The source of okprobe_test_target's okp_cover_target, by arch.
COVER_TARGET_SOURCES = {
    "x86": "selftests/modules/okprobe_test_target_fn.S",
    "riscv": "selftests/modules/okprobe_test_target_riscv_fn.S",
}


def cover_target_lines(arch):
    """okp_cover_target's lines in its source, for okptest's source-line
    coverage test: "FIRST,BIG,SMALL,END" (its first instruction's, the
    big and small blocks' labels 1: and 2:, and SYM_FUNC_END's)."""
    with open(os.path.join(ROOT, COVER_TARGET_SOURCES[arch])) as f:
        lines = f.read().splitlines()
    start = next(n for n, line in enumerate(lines, 1)
                 if "_START(okp_cover_target)" in line)
    marks = [start + 1]
    for label in ("1:", "2:", "SYM_FUNC_END(okp_cover_target)"):
        marks.append(next(n for n, line in enumerate(lines, 1)
                          if n > start and line.startswith(label)))
    return ",".join(map(str, marks))


def build_okptest(t):
    """Build the static in-guest test program for the target's arch."""
    # One per target: targets build at the same time.
    out = os.path.join(BUILD, f"okptest-{t.name}")
    cc = f"{t.cross}gcc" if t.cross else "gcc"
    kselftest = run([os.path.join(TOOLS, "fetch-kselftest")],
                    "extracting the kselftest harness").strip()
    # The harness's header is not -Wextra clean: a system header here.
    run([cc, "-static", "-O2", "-Wall", "-Wextra", "-Werror",
         "-isystem", kselftest,
         f'-DOKPTEST_COVER_LINES="{cover_target_lines(t.arch)}"', "-o", out,
         os.path.join(ROOT, "selftests/okptest.c")],
        f"building okptest for {t.arch}")
    t.okptest = out


def prepare_userland(t):
    """The Debian userland image and its modules for t's guests, where
    t's kernel is Debian's (guest_userland.available()), the kernel's
    debuginfo disk where it has one (guest_debuginfo.available()) and
    its ftracetest (kernel_ftracetest.available())."""
    if guest_userland.available(t):
        t.userland = guest_userland.image(debian13.ARCHES[t.arch])
        t.userland_modules = guest_userland.modules(t)
        t.bpf_sample = build_bpf_sample(t)
    if guest_debuginfo.available(t):
        t.debuginfo = guest_debuginfo.image(t)
    if kernel_ftracetest.available(t):
        t.ftracetest = kernel_ftracetest.tree(t)


# What the libbpf sample's loader is linked against: Debian 13's libbpf1
# and the libraries it needs, as the guest's userland has them.
BPF_SAMPLE_LIBS = ["libbpf1", "libelf1t64", "zlib1g", "libzstd1"]


def build_bpf_sample(t):
    """samples/bpf for t's guests, in build/TARGET/bpf-sample: the BPF
    object with the host's clang, the loader with t's compiler against
    the host's libbpf-dev headers (a subset of the newer library's API),
    linked against Debian 13's libbpf1 for t's arch, which the guest's
    userland runs it with. Its glibc is newer than the compiler's, so
    the libraries' own references are left to the dynamic loader."""
    out = os.path.join(t.build_dir, "bpf-sample")
    libs = os.path.join(out, "libs")
    arch = debian13.ARCHES[t.arch]
    if not os.path.exists(os.path.join(libs, ".okprobe-done")):
        shutil.rmtree(libs, ignore_errors=True)
        unpacked = os.path.join(libs, "root")
        os.makedirs(unpacked)
        for deb in debian13.fetch(BPF_SAMPLE_LIBS, arch):
            subprocess.run(["dpkg-deb", "-x", deb, unpacked], check=True)
        found = [where for where, _, names in os.walk(unpacked)
                 if "libbpf.so.1" in names]
        if not found:
            raise StepFailed("the libbpf sample", "no libbpf.so.1 in libbpf1")
        os.symlink(os.path.join(found[0], "libbpf.so.1"),
                   os.path.join(libs, "libbpf.so"))
        os.symlink(found[0], os.path.join(libs, "rpath"))
        # The host's libbpf headers, alone on an include path (a cross
        # compiler must not see the rest of /usr/include).
        os.makedirs(os.path.join(libs, "include"))
        os.symlink("/usr/include/bpf", os.path.join(libs, "include", "bpf"))
        open(os.path.join(libs, ".okprobe-done"), "w").close()
    cc = f"{t.cross}gcc" if t.cross else "gcc"
    run(["make", "-C", os.path.join(ROOT, "samples", "bpf"), f"OUT={out}",
         f"CC={cc}", "CLANG=clang-14",
         f"CPPFLAGS=-isystem {os.path.join(libs, 'include')}",
         f"LDFLAGS=-L{libs} -Wl,-rpath-link,{os.path.join(libs, 'rpath')} "
         "-Wl,--allow-shlib-undefined"],
        f"building the libbpf sample for {t.arch}")
    return [os.path.join(out, name) for name in ("okprobe_read",
                                                 "okprobe_read.bpf.o")]


def userland_files(t):
    """What t's initramfs and QEMU get for the userland disk: the
    initramfs files (the modules that read it, tools/okprobe for the
    tests that run it there) and QEMU's arguments."""
    if not t.userland:
        return [], []
    files = [(f"{guest_userland.GUEST_MODULE_DIR}/{os.path.basename(m)}",
              m, 0o644) for m in t.userland_modules]
    files += [(f"{guest_userland.GUEST_TOOL_DIR}/{name}",
               os.path.join(TOOLS, name), 0o755)
              for name in ("okprobe", "okprobe-cover", "okprobe-cover-lcov")]
    files += [(f"{guest_userland.GUEST_TOOL_DIR}/{os.path.basename(f)}", f,
               0o755) for f in t.bpf_sample]
    # The test module as built, with its DWARF (make install's copy, which
    # make check's guests load, is stripped): okptest cover_lines' -d.
    files += [(f"{guest_userland.GUEST_TOOL_DIR}/dwarf/{os.path.basename(m)}",
               m, 0o644) for m in t.modules
              if m.endswith("okprobe_test_target.ko")]
    args = guest_userland.qemu_args(t.userland)
    if t.debuginfo:
        # The marker names the disk okptest mounts on /usr/lib/debug.
        files.append((guest_debuginfo.GUEST_MARKER, "/dev/null", 0o644))
        args += guest_debuginfo.qemu_args(t.debuginfo)
    return files, args


def guest_tools(t):
    """The tree of programs a guest gets besides okptest (trace-cmd):
    Debian 13's, for t's arch (debian13.guest_tools())."""
    return debian13.guest_tools(debian13.ARCHES[t.arch])


def guest_extras(t):
    """What the initramfs gets besides init and modules: busybox, the
    loader script and okprobe-cover on x86 (Debian ships no riscv64
    busybox)."""
    if t.arch == "x86":
        return "/bin/busybox", [("sbin/okprobe-load",
                                 os.path.join(TOOLS, "okprobe-load"), 0o755),
                                ("sbin/okprobe-cover",
                                 os.path.join(TOOLS, "okprobe-cover"), 0o755)]
    return None, []
