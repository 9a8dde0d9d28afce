#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Debian's stock kernels for the guests (Debian 13's own, and the newer
ones trixie-backports carries), and a trixie build root to build okprobe
for them, without installing anything of trixie's into the (bookworm)
host.

- The kernels are pinned here, once, one line each (KERNELS). Their
  packages come from the host's own Debian mirror (read from its apt
  sources) through apt, run on a private configuration (Apt): apt-get
  update keeps a suite's index only if it verifies against the suite's
  InRelease, signed with Debian's archive keyring, and apt's downloader
  keeps a .deb only if it has the SHA256 that index names. They are
  unpacked with dpkg-deb -x into the cache, never installed; a run that
  finds them there runs no apt.
- An index on this network often fails apt's check (the riscv64 ones:
  "File has unexpected size", a mirror in mid-sync); it is then left out,
  with a line saying so, and the suite read under its other name
  (OTHER_NAME: stable, stable-backports), whose index often does verify.
- Debian 13's kernels are built with gcc-14 and their kbuild records
  compiler features bookworm's gcc-12 lacks: okprobe is built in a cached
  trixie root made by mmdebstrap (gcc-14, g++-14, their riscv64 cross
  compilers, pahole), with each pinned kernel's headers and kbuild unpacked
  into it as a target first needs them, and run with chroot.

    tools/debian13.py root             # prints the build root
    tools/debian13.py kernel TARGET    # prints the directory of its image
    tools/debian13.py kdir TARGET      # prints its headers in the root
"""

import argparse
import dataclasses
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import threading
import sys
import tempfile


@dataclasses.dataclass(frozen=True)
class Kernel:
    """A Debian kernel package a guest target runs: linux-*-RELEASE-FLAVOUR
    from SUITE (FLAVOUR: amd64, rt-amd64, riscv64)."""
    arch: str      # dpkg's: amd64 or riscv64
    release: str   # 6.12.107+deb13
    suite: str     # trixie, trixie-backports
    flavour: str   # amd64, rt-amd64, riscv64

    @property
    def name(self):
        """The kernel's uname -r."""
        return f"{self.release}-{self.flavour}"


# The pins, one line per guest target. Debian's archive keeps headers only
# for the newest backports (trixie-backports: 7.2.x and 7.3.x today), so
# following a newer kernel is changing its release here (or, for a new
# major version, adding its line; Documentation/building.md says how).
BACKPORTS_AMD64 = "7.3.4+deb13"
KERNELS = {
    "x86-6.12": Kernel("amd64", "6.12.107+deb13", "trixie", "amd64"),
    "riscv-6.12": Kernel("riscv64", "6.12.107+deb13", "trixie", "riscv64"),
    "x86-7.3": Kernel("amd64", BACKPORTS_AMD64, "trixie-backports", "amd64"),
    "x86-7.3-rt": Kernel("amd64", BACKPORTS_AMD64, "trixie-backports",
                         "rt-amd64"),
    "riscv-7.2": Kernel("riscv64", "7.2.11+deb13", "trixie-backports",
                        "riscv64"),
}
# The suite of the build root, the guests' tools and their libraries.
SUITE = "trixie"
CACHE = os.environ.get("OKPROBE_CACHE",
                       os.path.expanduser("~/.cache/okprobe"))
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# What the build root holds: the compilers Debian 13's kernels record,
# kbuild's tools, pahole for module BTF; dkms and openssl (its signing
# key) for "make install"/DKMS as a Debian 13 machine runs them; ccache
# (make check's module builds, see kbuild_env()); pyelftools and capstone
# for tools/check-handler-paths, which "make modules" runs.
ROOT_PACKAGES = ["gcc-14", "g++-14", "gcc-14-riscv64-linux-gnu",
                 "g++-14-riscv64-linux-gnu", "binutils-riscv64-linux-gnu",
                 "make", "bc", "bison", "flex", "libelf-dev", "libssl-dev",
                 "dwarves", "kmod", "xz-utils", "python3", "dkms",
                 "openssl", "ccache", "python3-pyelftools",
                 "python3-capstone"]
# dpkg architecture of each guest arch.
ARCHES = {"x86": "amd64", "riscv": "riscv64"}


def say(text):
    print(f"debian13: {text}", file=sys.stderr, flush=True)


def mirror():
    """The Debian mirror the host's apt uses (deb822 or one-line sources)."""
    for path in ["/etc/apt/sources.list.d/debian.sources",
                 "/etc/apt/sources.list"]:
        if not os.path.exists(path):
            continue
        text = open(path).read()
        for uri in re.findall(r"^URIs:\s*(\S+)", text, re.M) + \
                re.findall(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.M):
            if not uri.rstrip("/").endswith("-security"):
                return uri.rstrip("/")
    sys.exit("debian13: no Debian mirror in the host's apt sources")


# Each suite's other name on the mirror. The proxy on this network serves
# a name's InRelease and its index files from different days (trixie-
# backports' riscv64 index is the one stable-backports' InRelease names),
# so an index that does not verify under one name often does under the
# other: same codename, same archive, a fallback.
OTHER_NAME = {"trixie": "stable", "trixie-backports": "stable-backports"}


class Apt:
    """apt itself, on a private configuration for one suite and arch: its
    sources, lists and cache under the okprobe cache, nothing of the
    host's /etc/apt or dpkg read or written. apt-get update keeps an index
    only if it verifies against its suite's InRelease, signed by a key of
    Debian's archive keyring (Signed-By); apt's downloader keeps a .deb
    only if it has the SHA256 that index names."""

    def __init__(self, suite, arch):
        self.suite, self.arch = suite, arch
        self.dir = os.path.join(CACHE, "debian13", "apt", f"{suite}-{arch}")
        self.verified = None  # not updated yet in this process

    def configure(self, suite):
        """The sources (suite, by name, from the host's mirror) and the
        configuration (APT_CONFIG, which apt reads first: /etc/apt's parts
        are not read)."""
        empty = os.path.join(self.dir, "empty")  # for /etc/apt's parts
        for sub in ("empty", "lists/partial"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        open(os.path.join(self.dir, "status"), "a").close()
        with open(os.path.join(self.dir, "sources.list"), "w") as f:
            f.write(f"deb [arch={self.arch} signed-by={KEYRING}] "
                    f"{mirror()} {suite} main\n")
        lists = os.path.join(self.dir, "lists")
        settings = {
            "Dir::Etc::Main": "/dev/null", "Dir::Etc::Parts": empty,
            "Dir::Etc::SourceList": os.path.join(self.dir, "sources.list"),
            "Dir::Etc::SourceParts": empty,
            "Dir::Etc::Preferences": "/dev/null",
            "Dir::Etc::PreferencesParts": empty,
            "Dir::Etc::Trusted": "/dev/null", "Dir::Etc::TrustedParts": empty,
            "Dir::State": self.dir, "Dir::State::Lists": lists,
            "Dir::State::Status": os.path.join(self.dir, "status"),
            "Dir::Cache": self.dir, "Dir::Cache::SrcPkgCache": "",
            "APT::Architecture": self.arch, "Acquire::Languages": "none",
            # The mirror serves Release files past their Valid-Until
            # (stable-backports'), as the host's apt configuration allows.
            "Acquire::Check-Valid-Until": "false",
            # As root, apt would download as _apt, who cannot write into
            # root's home.
            "APT::Sandbox::User": "root"}
        with open(os.path.join(self.dir, "apt.conf"), "w") as f:
            f.writelines(f'{name} "{value}";\n'
                         for name, value in settings.items())
            f.write(f'APT::Architectures {{ "{self.arch}"; }};\n')

    def run(self, command, *args):
        """command on this configuration; one at a time across processes
        (apt-get update gives up at once on a lock another one holds)."""
        env = dict(os.environ, APT_CONFIG=os.path.join(self.dir, "apt.conf"))
        with open(os.path.join(self.dir, "okprobe.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return subprocess.run([command, "-q", *args], env=env,
                                  text=True, capture_output=True)

    def update(self, suite):
        """apt-get update of suite's index: False, and said so, if it does
        not verify (it is then left out)."""
        self.configure(suite)
        done = self.run("apt-get", "update")
        errors = [line[len("E: Failed to fetch "):]
                  for line in done.stderr.splitlines()
                  if line.startswith("E: Failed to fetch ")]
        if done.returncode != 0 and not errors:
            sys.exit(f"debian13: apt-get update of {suite} failed:\n"
                     f"{done.stderr}")
        for error in errors:
            say(f"{suite}'s {self.arch} index does not verify (a mirror in "
                f"mid-sync?), left out: {error}")
        return not errors

    def records(self, packages):
        """{package: fields} of the newest version of each of packages the
        verified index holds (apt-cache show lists versions newest first;
        virtual and unknown names are left out)."""
        done = self.run("apt-cache", "show", *packages)
        found = {}
        for paragraph in done.stdout.split("\n\n"):
            fields = dict(re.findall(r"^([\w-]+):\s*(.*)$", paragraph,
                                     re.M))
            if "Package" in fields:
                found.setdefault(fields["Package"], fields)
        return found

    def find(self, packages):
        """records() of packages, the index updated once a process; under
        the suite's other name if its own did not verify and lacks one."""
        if self.verified is None:
            self.verified = self.update(self.suite)
        found = self.records(packages)
        if not self.verified and set(packages) - set(found):
            self.verified = True  # nothing else to try
            self.update(OTHER_NAME[self.suite])
            found = self.records(packages)
        return found

    def download(self, packages, directory):
        """The newest version of each of packages, downloaded into
        directory (named as in the pool) by apt's downloader, which
        checks its SHA256: {package: path}, or the name of one the index
        does not have."""
        found = self.find(packages)
        paths, triples = {}, []
        for package in packages:
            if package not in found:
                return package
            fields = found[package]
            say(f"downloading {package} {fields['Version']}")
            paths[package] = os.path.join(
                directory, os.path.basename(fields["Filename"]))
            triples += [f"{mirror()}/{fields['Filename']}", paths[package],
                        f"SHA256:{fields['SHA256']}"]
        done = self.run("/usr/lib/apt/apt-helper", "download-file", *triples)
        if done.returncode != 0:
            sys.exit(f"debian13: apt did not download {' '.join(packages)}:"
                     f"\n{done.stderr}")
        return paths


_APT = {}


def apt(suite, arch):
    """The Apt of suite and arch (one per process)."""
    return _APT.setdefault((suite, arch), Apt(suite, arch))


def fetch(packages, arch, suite=SUITE):
    """The verified .debs of packages (for arch, from suite), in the
    cache (named as in the pool); apt is not run for those already
    there."""
    directory = os.path.join(CACHE, "debian13", "debs")
    os.makedirs(directory, exist_ok=True)
    paths = {}
    for package in packages:
        cached = [os.path.join(directory, f) for f in os.listdir(directory)
                  if f.startswith(f"{package}_") and
                  f.endswith((f"_{arch}.deb", "_all.deb"))]
        if cached:
            paths[package] = cached[0]
    missing = [package for package in packages if package not in paths]
    if missing:
        with tempfile.TemporaryDirectory(dir=directory) as partial:
            downloaded = apt(suite, arch).download(missing, partial)
            if isinstance(downloaded, str):
                sys.exit(f"debian13: {suite}'s {arch} index has no "
                         f"{downloaded} (a pin in tools/debian13.py's "
                         f"KERNELS may have left the suite: Documentation/"
                         f"building.md, \"The next kernel\")")
            for package, path in downloaded.items():
                paths[package] = os.path.join(directory,
                                              os.path.basename(path))
                os.replace(path, paths[package])
    return [paths[package] for package in packages]


# What the guests get beside okptest: trace-cmd, to record okprobe_events'
# events the way operators do (okptest's probe_events_trace_cmd), with the
# libraries it needs. Debian 12 has no riscv64 port: Debian 13's serves both
# arches (its glibc runs on 6.1 kernels).
GUEST_PACKAGES = ["trace-cmd"]
GUEST_TOOLS_LAYOUT = 2  # bumped when guest_tools() lays the tree out anew
# Where each arch's dynamic loader must be (the program's PT_INTERP; the
# package ships it under /usr, where usrmerge's /lib symlinks point).
LOADERS = {"amd64": "lib64/ld-linux-x86-64.so.2",
           "riscv64": "lib/ld-linux-riscv64-lp64d.so.1"}
# Where the libraries are (okptest points LD_LIBRARY_PATH there); gconv's
# character sets, most of libc6, are left out.
TRIPLETS = {"amd64": "x86_64-linux-gnu", "riscv64": "riscv64-linux-gnu"}


def first_alternatives(fields):
    """The packages a package record (pre-)depends on, first
    alternatives."""
    names = []
    for field in ("Pre-Depends", "Depends"):
        for depend in fields.get(field, "").split(","):
            name = depend.split("|")[0].split("(")[0].strip()
            if name:
                names.append(name.split(":")[0])
    return names


def depends_closure(packages, arch):
    """packages and everything they (pre-)depend on, first alternatives,
    from the suite's verified index for arch."""
    index, asked, todo = {}, set(), list(packages)
    while todo:  # the records, one apt-cache call a level of depends
        asked.update(todo)
        index.update(apt(SUITE, arch).find(todo))
        todo = sorted({name for fields in index.values()
                       for name in first_alternatives(fields)} - asked)
    wanted, todo = [], list(packages)
    while todo:
        package = todo.pop()
        if package in wanted or package not in index:
            continue  # virtual packages: what provides them is listed
        wanted.append(package)
        todo += first_alternatives(index[package])
    return wanted


def unpacked_tree(name, packages, arch, layout, finish):
    """The cache's tree NAME-ARCH-KEY (KEY from the suite, layout and
    packages): packages and everything they depend on, unpacked with
    dpkg-deb -x into its root/, then finish(out, root) run once; made once
    and kept. Returns the tree's directory."""
    with _CACHE_LOCK:
        key = hashlib.sha256(" ".join(
            [SUITE, str(layout)] + packages).encode()).hexdigest()[:16]
        out = os.path.join(CACHE, "debian13", f"{name}-{arch}-{key}")
        if os.path.exists(os.path.join(out, ".okprobe-done")):
            return out
        shutil.rmtree(out, ignore_errors=True)
        root = os.path.join(out, "root")
        os.makedirs(root)
        for deb in fetch(depends_closure(packages, arch), arch):
            subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
        finish(out, root)
        open(os.path.join(out, ".okprobe-done"), "w").close()
        return out


def guest_tools(arch):
    """A tree for a guest's initramfs: GUEST_PACKAGES and their libraries,
    unpacked, documentation left out, the loader where programs look for
    it; made once per arch and cached."""
    def finish(out, root):
        for unused in ("usr/share", "etc", "usr/libexec", "usr/sbin",
                       f"usr/lib/{TRIPLETS[arch]}/gconv"):
            shutil.rmtree(os.path.join(root, unused), ignore_errors=True)
        loader = os.path.join(root, LOADERS[arch])
        found = [os.path.join(where, name)
                 for where, _, names in os.walk(os.path.join(root, "usr"))
                 for name in names
                 if name == os.path.basename(loader)]
        if not found:
            sys.exit(f"debian13: no {os.path.basename(loader)} in libc6")
        os.makedirs(os.path.dirname(loader), exist_ok=True)
        shutil.copy(found[0], loader)
    out = unpacked_tree("guest-tools", GUEST_PACKAGES, arch,
                        GUEST_TOOLS_LAYOUT, finish)
    return os.path.join(out, "root")


def kbuild_dir(kernel):
    """Where kernel's headers are inside the build root."""
    return f"/usr/src/linux-headers-{kernel.name}"


# tools/check prepares two targets at once: one of them makes the root.
_CACHE_LOCK = threading.RLock()


def build_root():
    """The trixie build root with gcc-14: made once, cached by what it
    holds; kernels' headers are added by headers(). One process at a time
    (the lock file): making a root removes the older ones, and two
    processes (make bench beside make check) once raced there."""
    with _CACHE_LOCK:
        os.makedirs(os.path.join(CACHE, "debian13"), exist_ok=True)
        with open(os.path.join(CACHE, "debian13", "root.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return _build_root()


def _build_root():
    key = hashlib.sha256(" ".join([SUITE] + ROOT_PACKAGES).encode()) \
        .hexdigest()[:16]
    root = os.path.join(CACHE, "debian13", f"root-{key}")
    if os.path.exists(os.path.join(root, ".okprobe-done")):
        return root
    parent = os.path.dirname(root)
    os.makedirs(parent, exist_ok=True)
    for old in os.listdir(parent):
        if old.startswith("root-"):
            shutil.rmtree(os.path.join(parent, old), ignore_errors=True)
    if not shutil.which("mmdebstrap"):
        subprocess.run(["apt-get", "install", "-y", "-qq",
                        "--no-install-recommends", "mmdebstrap"],
                       env=dict(os.environ,
                                DEBIAN_FRONTEND="noninteractive"),
                       check=True, stdout=subprocess.DEVNULL)
    os.makedirs(root)
    say(f"making the {SUITE} build root (mmdebstrap)")
    subprocess.run(["mmdebstrap", "--quiet", "--mode=root", "--variant=apt",
                    "--include=" + ",".join(ROOT_PACKAGES), SUITE,
                    os.path.join(root, "fs"), mirror()], check=True)
    open(os.path.join(root, ".okprobe-done"), "w").close()
    return root


def headers(kernel):
    """kernel's headers and kbuild, unpacked into the build root once
    (beside the other kernels'): the directory to build against, as the
    host sees it. The amd64 kbuild package serves every flavour of the
    release: its programs run on the host, the riscv64 cross build too."""
    with _CACHE_LOCK:
        root = build_root()
        done = os.path.join(root, f".okprobe-headers-{kernel.name}")
        if not os.path.exists(done):
            debs = fetch([f"linux-headers-{kernel.name}"], kernel.arch,
                         suite=kernel.suite)
            debs += fetch([f"linux-headers-{kernel.release}-common",
                           f"linux-kbuild-{kernel.release}"], "amd64",
                          suite=kernel.suite)
            for deb in debs:
                subprocess.run(["dpkg-deb", "-x", deb,
                                os.path.join(root, "fs")], check=True)
            open(done, "w").close()
        return os.path.join(root, "fs", kbuild_dir(kernel).lstrip("/"))


def kernel_image(kernel):
    """The unpacked stock kernel image of kernel: the directory holding
    vmlinuz (amd64; and vmlinux, the ELF inside it) or Image (riscv64),
    and config."""
    with _CACHE_LOCK:
        return _kernel_image(kernel)


def extract_vmlinux(out):
    """amd64: the ELF image inside vmlinuz (zstd since Debian 13), the
    bytes the census and the bench's sampler read; it has no symbols."""
    image = open(os.path.join(out, "vmlinuz"), "rb").read()
    start = image.find(b"\x28\xb5\x2f\xfd")  # a zstd frame
    # zstd complains about the bytes after the frame (the image's size),
    # but has written the frame's whole content by then.
    done = subprocess.run(["zstd", "-dc"], input=image[max(start, 0):],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if start < 0 or not done.stdout.startswith(b"\x7fELF"):
        sys.exit("debian13: no zstd-compressed ELF in vmlinuz")
    with open(os.path.join(out, "vmlinux.tmp"), "wb") as f:
        f.write(done.stdout)
    os.replace(os.path.join(out, "vmlinux.tmp"), os.path.join(out, "vmlinux"))


# Where a kernel image package keeps the image: 6.12's linux-image-*
# packages in /boot (riscv64's EFI-stub Image named vmlinux); 7.x's
# linux-binary-* in /usr/lib/modules/RELEASE.
IMAGE_PATHS = ["boot/vmlinuz-{name}", "boot/vmlinux-{name}",
               "usr/lib/modules/{name}/vmlinuz"]


def image_package(kernel):
    """The package holding kernel's image: linux-binary-* from 7.x (the
    image split from its modules), else the unsigned or the only
    linux-image-*."""
    candidates = [f"linux-binary-{kernel.name}",
                  f"linux-image-{kernel.name}-unsigned",
                  f"linux-image-{kernel.name}"]
    found = apt(kernel.suite, kernel.arch).find(candidates)
    for package in candidates:
        if package in found:
            return package
    sys.exit(f"debian13: {kernel.suite} has no image of {kernel.name}")


def _kernel_image(kernel):
    out = os.path.join(CACHE, "debian13", f"kernel-{kernel.name}")
    if os.path.exists(os.path.join(out, ".okprobe-done")):
        return out
    (deb,) = fetch([image_package(kernel)], kernel.arch, kernel.suite)
    shutil.rmtree(out, ignore_errors=True)
    unpacked = os.path.join(out, "root")
    os.makedirs(out)
    subprocess.run(["dpkg-deb", "-x", deb, unpacked], check=True)
    found = [path for path in (os.path.join(unpacked, p.format(
        name=kernel.name)) for p in IMAGE_PATHS) if os.path.exists(path)]
    if not found:
        sys.exit(f"debian13: no kernel image in {os.path.basename(deb)}")
    shutil.copy(found[0], os.path.join(
        out, "vmlinuz" if kernel.arch == "amd64" else "Image"))
    shutil.rmtree(unpacked)
    # The configuration, as kbuild records it beside the headers (7.x's
    # image packages no longer carry /boot/config-*).
    shutil.copy(os.path.join(headers(kernel), ".config"),
                os.path.join(out, "config"))
    if kernel.arch == "amd64":
        extract_vmlinux(out)
    open(os.path.join(out, ".okprobe-done"), "w").close()
    return out


def chroot(root, command, **kwargs):
    """command run inside the build root, with /proc mounted for it (DKMS
    and kmod read it) in a mount namespace of its own, so nothing stays
    mounted."""
    fs = os.path.join(root, "fs")
    script = 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"'
    return subprocess.run(["unshare", "--mount", "--propagation", "private",
                           "sh", "-c", script, fs] + command, **kwargs)


def inside(root, path):
    """path (under the root's fs) as the chroot sees it."""
    return "/" + os.path.relpath(path, os.path.join(root, "fs"))


def make_variables(kernel, zydis_dir=""):
    """What okprobe's Makefile needs to build for kernel inside the root;
    the Makefile itself decides the rest from the kernel's config, as on a
    Debian 13 machine."""
    variables = [f"KDIR={kbuild_dir(kernel)}",
                 "ARCH=x86" if kernel.arch == "amd64" else "ARCH=riscv"]
    if kernel.arch == "riscv64":
        variables.append("CROSS_COMPILE=riscv64-linux-gnu-")
    if zydis_dir:
        # Copied in on the host (the root has no Debian 12 source
        # packages): the Makefile sees the copy is current.
        variables.append(f"ZYDIS_DIR={zydis_dir}")
    return variables


def kbuild_env(env=None):
    """env (default: ours) for kbuild inside the root: its gcc through
    its ccache, whose cache lives in the root (and goes with it)."""
    env = dict(os.environ if env is None else env)
    env.update(PATH="/usr/lib/ccache:" + env.get("PATH", "/usr/bin:/bin"),
               CCACHE_DIR="/var/cache/okprobe-ccache")
    return env


def build_modules(root, tree, kernel, zydis_dir=""):
    """Builds okprobe and its test modules in tree (inside root) for
    kernel with the Makefile's "modules" target (kbuild, then the checks
    of okprobe.ko), under chroot."""
    headers(kernel)
    return chroot(root, ["make", "-C", inside(root, tree)] +
                  make_variables(kernel, zydis_dir) + ["modules"],
                  env=kbuild_env(), text=True, stdout=subprocess.PIPE,
                  stderr=subprocess.STDOUT)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("root", help="prints the build root")
    for command, says in (("kernel", "the directory of its image"),
                          ("kdir", "its headers in the root")):
        commands.add_parser(command, help="prints " + says).add_argument(
            "target", choices=list(KERNELS))
    options = parser.parse_args()
    if options.command == "root":
        print(build_root())
    elif options.command == "kernel":
        print(kernel_image(KERNELS[options.target]))
    else:
        print(headers(KERNELS[options.target]))


if __name__ == "__main__":
    main()
