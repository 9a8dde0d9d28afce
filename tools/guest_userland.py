# SPDX-License-Identifier: GPL-2.0
"""A Debian 13 userland for the guests, on a disk beside the initramfs:
bpftrace, bpftool, python3 (tools/okprobe), perf and trace-cmd as a Debian
user installs them, to test okprobe with the ecosystem's own programs.

- The image: the packages below and their dependency closure, from
  trixie's verified index (tools/debian13.py), unpacked with dpkg-deb -x
  into a tree with usrmerge's links and empty mount points, then made one
  read-only squashfs, uncompressed (TCG would spend more decompressing it
  than reading it). Made once per arch, cached by what it holds. It is too
  big for the initramfs (about 470 MB: bpftrace brings LLVM and clang).
- The modules a guest needs to read it (virtio_blk, squashfs and, where
  the kernel has them as modules, virtio's transport) come from the
  target kernel's own Debian package, with their dependencies
  (modinfo's depends=), decompressed, listed in load order; cached per
  kernel package.
- okptest mounts it on /debian when a test needs it and runs the programs
  there with chroot (selftests/okptest_userland.c); the image carries
  the mount points, since a squashfs cannot grow them.
"""

import glob
import hashlib
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import threading

import debian13

# What a user would apt-get install to trace with BPF, plus what
# bpftrace recommends (libc6-dev) and a shell: bpftrace runs some steps
# through /bin/sh (popen), and segfaults where there is none (bpftrace
# 0.23.2 calls fclose() on the NULL popen() gives back).
PACKAGES = ["bpftrace", "bpftool", "python3", "linux-perf", "trace-cmd",
            "dash", "coreutils", "libc6-dev",
            # tools/okprobe-cover's (awk, sed) and okprobe-cover-lcov's
            "mawk", "sed", "binutils", "python3-pyelftools"]
LAYOUT = 4  # bumped when image() lays the tree out anew
# Mount points okptest uses inside the image, and usrmerge's links
# (base-files makes them on a Debian system; nothing here runs it).
MOUNT_POINTS = ["proc", "sys", "dev", "tmp", "run", "opt/okprobe",
                "usr/lib/debug"]
MERGED = ["bin", "sbin", "lib", "lib64"]
# The alternatives the packages' maintainer scripts would set up (mawk's
# postinst makes awk), as links under usr/bin: (link, target).
ALTERNATIVES = [("awk", "mawk")]
# Where okptest finds the image (the guest's first virtio disk) and the
# modules it loads first, in order (their names start with their rank).
GUEST_MODULE_DIR = "lib/userland"
# Where the initramfs has tools/okprobe (bind-mounted on /opt/okprobe in
# the image).
GUEST_TOOL_DIR = "lib/okprobe-tools"
# The modules that read the disk; the first two are built in on Debian
# 13's kernels, modules on Debian 12's.
WANTED_MODULES = ["virtio_pci", "virtio_blk", "squashfs"]

_LOCK = threading.Lock()


def say(text):
    print(f"guest_userland: {text}", file=sys.stderr, flush=True)


def cache_dir(*parts):
    return os.path.join(debian13.CACHE, "userland", *parts)


def image(arch):
    """The squashfs of PACKAGES for dpkg arch (amd64, riscv64): its
    path, made once and cached."""
    with _LOCK:
        key = hashlib.sha256(" ".join(
            [debian13.SUITE, arch, str(LAYOUT)] + PACKAGES).encode()) \
            .hexdigest()[:16]
        path = cache_dir(f"debian13-{arch}-{key}.squashfs")
        if os.path.exists(path):
            return path
        os.makedirs(os.path.dirname(path), exist_ok=True)
        for old in os.listdir(os.path.dirname(path)):
            if old.startswith(f"debian13-{arch}-"):
                os.remove(os.path.join(os.path.dirname(path), old))
        say(f"making the {arch} userland image ({' '.join(PACKAGES)})")
        with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as tmp:
            root = os.path.join(tmp, "root")
            os.makedirs(root)
            debs = debian13.fetch(debian13.depends_closure(PACKAGES, arch),
                                  arch)
            for deb in debs:
                subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
            for name in MERGED:
                where = os.path.join(root, name)
                if not os.path.lexists(where) and \
                        os.path.isdir(os.path.join(root, "usr", name)):
                    os.symlink(f"usr/{name}", where)
            for name in MOUNT_POINTS:
                os.makedirs(os.path.join(root, name), exist_ok=True)
            for link, target in ALTERNATIVES:
                where = os.path.join(root, "usr", "bin", link)
                if not os.path.lexists(where):
                    os.symlink(target, where)
            _compile_python(root)
            partial = os.path.join(tmp, "image")
            subprocess.run(["mksquashfs", root, partial, "-noappend",
                            "-noI", "-noD", "-noF", "-noX", "-no-xattrs",
                            "-all-root", "-quiet", "-no-progress"],
                           check=True, stdout=subprocess.DEVNULL)
            os.replace(partial, path)
        return path


def _compile_python(root):
    """The tree's Python modules compiled, as Debian's py3compile does when
    the packages are installed (dpkg-deb -x runs no maintainer script).
    Without that python3 compiles each module it imports on every start,
    unable to keep them on the read-only image: about 6 s a start under
    TCG. Compiled by the trixie build root's python3, the same version
    (bytecode is arch-neutral, so riscv64's too), the tree bind-mounted
    into it in a mount namespace of its own."""
    sources = [os.path.join("/mnt/userland", os.path.relpath(path, root))
               for path in glob.glob(os.path.join(root, "usr/lib/python3*"))]
    if not sources:
        return
    fs = os.path.join(debian13.build_root(), "fs")
    os.makedirs(os.path.join(fs, "mnt", "userland"), exist_ok=True)
    script = ('tree=$1; shift; mount --bind "$tree" "$0/mnt/userland" && '
              'exec chroot "$0" python3 -m compileall -q -j 0 '
              '-s /mnt/userland -p / "$@"')
    # A module written for another Python version fails to compile, as
    # under py3compile: it is left as it is.
    subprocess.run(["unshare", "--mount", "--propagation", "private", "sh",
                    "-c", script, fs, root] + sources,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def available(t):
    """Whether t's guests get the image: Debian's stock kernels, whose
    packages have the modules (not the kernels built here)."""
    return bool(t.debian13) or t.name in ("x86", "x86-rt")


def qemu_args(path):
    """QEMU's arguments for the image as the guest's first virtio disk
    (/dev/vda), read-only: every guest shares the one file."""
    return ["-drive", f"file={path},if=none,id=userland,format=raw,"
            "readonly=on", "-device", "virtio-blk-pci,drive=userland"]


def modules_package(t):
    """(suite's Apt or None for the host's, package) holding t's
    kernel modules."""
    if t.debian13:
        kernel = t.debian13
        apt = debian13.apt(kernel.suite, kernel.arch)
        candidates = [f"linux-modules-{kernel.name}",
                      f"linux-image-{kernel.name}-unsigned",
                      f"linux-image-{kernel.name}"]
        found = apt.find(candidates)
        for package in candidates:
            if package in found:
                return kernel, package, found[package]["Version"]
        sys.exit(f"guest_userland: no modules package for {kernel.name}")
    import okprobe_build as build  # it imports this module's users
    release = build.X86_RT_RELEASE if t.name == "x86-rt" else \
        build.X86_RELEASE
    version = subprocess.run(
        ["apt-cache", "show", f"linux-image-{release}"], text=True,
        capture_output=True).stdout
    version = next((line.split(": ", 1)[1] for line in version.splitlines()
                    if line.startswith("Version: ")), None)
    if not version:
        sys.exit(f"guest_userland: apt knows no linux-image-{release}")
    return None, f"linux-image-{release}", version


def download(kernel, package, version, directory, keep=True):
    """The package's .deb: through debian13's verified apt (Debian 13's
    kernels; kept in its cache of packages unless keep is False, then in
    directory) or the host's (Debian 12's, in directory)."""
    if kernel and keep:
        return debian13.fetch([package], kernel.arch, kernel.suite)[0]
    if kernel:
        found = debian13.apt(kernel.suite, kernel.arch).download(
            [package], directory)
        if isinstance(found, str):
            sys.exit(f"guest_userland: {kernel.suite} has no {found}")
        return found[package]
    # As root into a directory of root's: apt's own user could not
    # write there, and says so.
    subprocess.run(["apt-get", "download", "-qq",
                    "-o", "APT::Sandbox::User=root", f"{package}={version}"],
                   cwd=directory, check=True, stdout=subprocess.DEVNULL)
    return os.path.join(directory, next(
        f for f in os.listdir(directory) if f.endswith(".deb")))


def _depends(path):
    """The modules path's module needs loaded first (modinfo)."""
    text = subprocess.run(["modinfo", "-F", "depends", path], text=True,
                          capture_output=True, check=True).stdout.strip()
    return [name for name in text.split(",") if name]


def modules(t):
    """The modules t's guest loads to mount the image, in load order:
    paths of uncompressed .ko files named RANK-NAME.ko, cached per
    kernel package. Modules the kernel has built in are left out."""
    with _LOCK:
        kernel, package, version = modules_package(t)
        key = hashlib.sha256(" ".join(
            [package, version] + WANTED_MODULES).encode()).hexdigest()[:16]
        out = cache_dir(f"modules-{package}-{key}")
        if os.path.exists(os.path.join(out, ".okprobe-done")):
            return sorted(os.path.join(out, f) for f in os.listdir(out)
                          if f.endswith(".ko"))
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        say(f"taking {', '.join(WANTED_MODULES)} from {package} {version}")
        with tempfile.TemporaryDirectory(dir=out) as tmp:
            deb = download(kernel, package, version, tmp)
            tree = os.path.join(tmp, "tree")
            os.makedirs(tree)
            # Only the modules' directory: the package is 100 MB unpacked.
            listing = subprocess.run(["dpkg-deb", "-c", deb], text=True,
                                     capture_output=True, check=True).stdout
            found = {}
            for line in listing.splitlines():
                member = line.split()[-1]
                name = os.path.basename(member)
                if "/kernel/" in member and name.endswith(
                        (".ko", ".ko.xz", ".ko.zst")):
                    found[name.split(".ko")[0].replace("-", "_")] = member
            order = []

            def take(name):
                if name in order or name not in found:
                    return  # loaded already, or built in
                path = os.path.join(tree, found[name].lstrip("./"))
                if not os.path.exists(path):
                    tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile",
                                            deb], stdout=subprocess.PIPE)
                    subprocess.run(["tar", "-x", "-C", tree, found[name]],
                                   stdin=tar.stdout, check=True)
                    tar.wait()
                if path.endswith(".xz"):
                    with lzma.open(path) as f:
                        data = f.read()
                    path = path[:-len(".xz")]
                    with open(path, "wb") as f:
                        f.write(data)
                elif path.endswith(".zst"):
                    subprocess.run(["zstd", "-dq", "--rm", path], check=True)
                    path = path[:-len(".zst")]
                for dependency in _depends(path):
                    take(dependency)
                order.append(name)
                shutil.copy(path, os.path.join(
                    out, f"{len(order):02d}-{name}.ko"))

            for name in WANTED_MODULES:
                take(name)
            if "squashfs" not in order or "virtio_blk" not in order:
                sys.exit(f"guest_userland: {package} has no squashfs or "
                         f"virtio_blk module")
        open(os.path.join(out, ".okprobe-done"), "w").close()
        return sorted(os.path.join(out, f) for f in os.listdir(out)
                      if f.endswith(".ko"))
