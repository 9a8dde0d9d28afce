# SPDX-License-Identifier: GPL-2.0
"""The guest kernel's debuginfo on a disk of its own, for source-line
probes (tools/okprobe add --line, which runs perf probe on it).

- What a Debian user installs for that: the kernel's -dbg package
  (linux-image-RELEASE-dbg), whose vmlinux with DWARF lands in
  /usr/lib/debug/boot/vmlinux-RELEASE, where perf probe looks first.
- Only that one file is taken: the package is about 1 GB as a .deb and
  5 to 8 GB unpacked (every module's debuginfo). The .deb is streamed
  through dpkg-deb --fsys-tarfile until the vmlinux has gone by, then
  dropped; the vmlinux (600-800 MB) is made an uncompressed squashfs
  holding boot/vmlinux-RELEASE, cached per package and version. Each
  guest mounts it on the userland's /usr/lib/debug (read-only, shared).
- The package comes through the same verified apt as the kernel it
  belongs to: the host's for Debian 12's, tools/debian13.py's for
  Debian 13's and trixie-backports'.
"""

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile

import debian13
import guest_userland

# The targets whose guests get the disk: one kernel of each Debian
# generation make check runs (6.1, 6.12, the newest). About 1 GB to
# download each, once. Not riscv: Debian 13's perf (6.12) names no riscv
# register ("ELF MACHINE f3 is not supported") and names inlined places
# by riscv's mapping symbols ($xrv64i2p1_m2p0...+398), so perf probe
# makes no usable line there; backports' perf 7.3 does (operating.md,
# "Source lines"), but this network's mirror has no riscv64 build of it.
TARGETS = ("x86", "x86-6.12", "x86-7.3")
LAYOUT = 2  # bumped when image() lays the disk out anew
# Modules whose debuginfo the disk has too, as the package lays it out
# (lib/modules/RELEASE/kernel/.../MODULE.ko): make demo's coverage by
# source line of a real module (squashfs, which reads the userland disk).
DEBUG_MODULES = ("squashfs",)
# Where the userland image has the mount point (guest_userland's
# MOUNT_POINTS) and, in the initramfs, the file that tells okptest the
# disk is there (the guest's second virtio disk, after the userland).
MOUNT_POINT = "usr/lib/debug"
GUEST_MARKER = f"{guest_userland.GUEST_MODULE_DIR}/debuginfo"


def available(t):
    """Whether t's guests get the disk: t has the userland (perf) and is
    one of TARGETS."""
    return t.name in TARGETS and guest_userland.available(t)


def _package(t):
    """(debian13 kernel or None, uname -r, dbg package, version)."""
    kernel, image_package, version = guest_userland.modules_package(t)
    release = kernel.name if kernel else \
        image_package.removeprefix("linux-image-")
    return kernel, release, f"linux-image-{release}-dbg", version


def _extract_vmlinux(deb, release, root):
    """deb's vmlinux with DWARF, under root as the package has it: 6.x's
    packages have the file in boot/, 7.x's in lib/modules/RELEASE/ with
    a link in boot/; and DEBUG_MODULES' files. The stream is read until
    boot/'s entry, the vmlinux and the modules have gone by, then
    dpkg-deb is stopped. Whether the vmlinux came."""
    prefix = "./usr/lib/debug/"
    wanted = {f"boot/vmlinux-{release}", f"lib/modules/{release}/vmlinux"}
    modules = {f"{name}.ko" for name in DEBUG_MODULES}
    boot, found = f"boot/vmlinux-{release}", False
    dpkg = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb],
                            stdout=subprocess.PIPE)
    try:
        with tarfile.open(fileobj=dpkg.stdout, mode="r|") as tar:
            for info in tar:
                name = info.name.removeprefix(prefix)
                module = os.path.basename(name)
                if module in modules and \
                        name.startswith(f"lib/modules/{release}/") and \
                        info.isfile():
                    tar.extract(info, root, set_attrs=False)
                    modules.discard(module)
                elif name in wanted and (info.isfile() or info.issym()):
                    tar.extract(info, root, set_attrs=False)
                    found |= info.isfile()
                    wanted.discard(name)
                if found and boot not in wanted and not modules:
                    break
        return found
    finally:
        # Closing the pipe ends dpkg-deb's own children (its copier and
        # decompressor) too, on their next write.
        dpkg.stdout.close()
        dpkg.kill()
        dpkg.wait()


def image(t):
    """The squashfs with /usr/lib/debug's vmlinux of t's kernel and
    DEBUG_MODULES' debuginfo: its path, made once per dbg package version
    and cached."""
    kernel, release, package, version = _package(t)
    key = hashlib.sha256(f"{package} {version} {LAYOUT}".encode()) \
        .hexdigest()[:16]
    directory = guest_userland.cache_dir("debuginfo")
    path = os.path.join(directory, f"{release}-{key}.squashfs")
    if os.path.exists(path):
        return path
    os.makedirs(directory, exist_ok=True)
    for old in os.listdir(directory):
        if old.startswith(f"{release}-"):
            where = os.path.join(directory, old)
            if os.path.isdir(where):
                shutil.rmtree(where)  # an older disk's module_files()
            else:
                os.remove(where)
    guest_userland.say(f"taking vmlinux-{release} from {package} {version}")
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        deb = guest_userland.download(kernel, package, version, tmp,
                                      keep=False)
        tree = os.path.join(tmp, "tree")
        if not _extract_vmlinux(deb, release, tree):
            raise SystemExit(f"guest_debuginfo: no vmlinux-{release} in "
                             f"{package}")
        os.remove(deb)
        root = os.path.join(tree, MOUNT_POINT)
        partial = os.path.join(tmp, "image")
        subprocess.run(["mksquashfs", root, partial, "-noappend", "-noI",
                        "-noD", "-noF", "-noX", "-no-xattrs", "-all-root",
                        "-quiet", "-no-progress"],
                       check=True, stdout=subprocess.DEVNULL)
        os.replace(partial, path)
    return path


def release(t):
    """The kernel release (uname -r) of t's kernel."""
    return _package(t)[1]


def module_files(t):
    """DEBUG_MODULES' debuginfo files of t's kernel on the host, as the
    disk has them (unsquashfs'd once next to it): a directory for
    okprobe-cover-lcov's --module-dir."""
    path = image(t)
    out = path.removesuffix(".squashfs") + "-modules"
    if not os.path.isdir(out):
        with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as tmp:
            listed = subprocess.run(["unsquashfs", "-lc", path], text=True,
                                    capture_output=True, check=True).stdout
            wanted = [line.split("/", 1)[1] for line in listed.splitlines()
                      if os.path.basename(line) in
                      {f"{m}.ko" for m in DEBUG_MODULES}]
            subprocess.run(["unsquashfs", "-q", "-n", "-d",
                            os.path.join(tmp, "tree"), path, *wanted],
                           check=True, stdout=subprocess.DEVNULL)
            os.replace(os.path.join(tmp, "tree"), out)
    return out


def qemu_args(path):
    """QEMU's arguments for the disk, after the userland's: the guest's
    /dev/vdb, read-only (every guest shares the one file)."""
    return ["-drive", f"file={path},if=none,id=debuginfo,format=raw,"
            "readonly=on", "-device", "virtio-blk-pci,drive=debuginfo"]
