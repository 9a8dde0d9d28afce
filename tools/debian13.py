# SPDX-License-Identifier: GPL-2.0
"""Debian 13 (trixie) stock kernels for the guests, and a trixie build root
to build okprobe for them, without installing anything of trixie's into
the (bookworm) host.

- The kernel packages are pinned here, once (TRIXIE_KERNEL). They are
  downloaded from the host's own Debian mirror (read from its apt sources),
  each .deb checked against the SHA256 of the suite's Packages index, and
  unpacked with dpkg-deb -x into the cache, never installed.
- The index is checked against the suite's signed InRelease (gpgv with
  Debian's archive keyring). The riscv64 index on this network often fails
  that check (a mirror in mid-sync: the InRelease names another size); it
  is then used unverified, and says so, and every .deb is still checked
  against it.
- Debian 13's kernels are built with gcc-14 and their kbuild records
  compiler features bookworm's gcc-12 lacks: okprobe is built in a cached
  trixie root made by mmdebstrap (gcc-14, g++-14, their riscv64 cross
  compilers, pahole), with the kernel's headers and kbuild unpacked into it,
  and run with chroot.

    tools/debian13.py root             # prints the build root
    tools/debian13.py kernel amd64     # prints the directory of vmlinuz
"""

import hashlib
import lzma
import os
import re
import shutil
import subprocess
import threading
import sys
import urllib.request

# The one pin: linux-image-$TRIXIE_KERNEL-{amd64,riscv64} and their headers.
TRIXIE_KERNEL = "6.12.107+deb13"
SUITE = "trixie"
CACHE = os.environ.get("OKPROBE_CACHE",
                       os.path.expanduser("~/.cache/okprobe"))
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# What the build root holds: the compilers Debian 13's kernels record,
# kbuild's tools, pahole for module BTF; dkms and openssl (its signing
# key) for "make install"/DKMS as a Debian 13 machine runs them; ccache
# (make check's module builds, see kbuild_env()).
ROOT_PACKAGES = ["gcc-14", "g++-14", "gcc-14-riscv64-linux-gnu",
                 "g++-14-riscv64-linux-gnu", "binutils-riscv64-linux-gnu",
                 "make", "bc", "bison", "flex", "libelf-dev", "libssl-dev",
                 "dwarves", "kmod", "xz-utils", "python3", "dkms",
                 "openssl", "ccache"]
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


def download(url, path):
    with urllib.request.urlopen(url, timeout=300) as response, \
            open(path + ".tmp", "wb") as out:
        shutil.copyfileobj(response, out)
    os.replace(path + ".tmp", path)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def signed_hashes(directory):
    """SHA256 and size of each index file, from the verified InRelease."""
    path = os.path.join(directory, "InRelease")
    download(f"{mirror()}/dists/{SUITE}/InRelease", path)
    done = subprocess.run(["gpgv", "--keyring", KEYRING, path],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"debian13: {SUITE}'s InRelease does not verify:\n"
                 f"{done.stderr}")
    text = open(path).read()
    section = text.split("SHA256:", 1)[1]
    return {name: (digest, int(size)) for digest, size, name in
            re.findall(r"^ ([0-9a-f]{64})\s+(\d+)\s+(\S+)$", section, re.M)}


def packages_index(arch):
    """{package: fields} of the suite's main index for arch."""
    directory = os.path.join(CACHE, "debian13", "index", arch)
    os.makedirs(directory, exist_ok=True)
    name = f"main/binary-{arch}/Packages.xz"
    path = os.path.join(directory, "Packages.xz")
    download(f"{mirror()}/dists/{SUITE}/{name}", path)
    expected = signed_hashes(directory).get(name)
    if expected and expected[0] == sha256(path):
        say(f"{arch} index verified against {SUITE}'s signed InRelease")
    else:
        say(f"{arch} index does not match {SUITE}'s InRelease (a mirror in "
            f"mid-sync?): used unverified; each .deb is checked against it")
    index = {}
    for paragraph in lzma.decompress(open(path, "rb").read()).decode() \
            .split("\n\n"):
        fields = dict(re.findall(r"^([\w-]+):\s*(.*)$", paragraph, re.M))
        if "Package" in fields:
            index[fields["Package"]] = fields
    return index


def fetch(packages, arch, index=None):
    """The verified .debs of packages (for arch), in the cache."""
    directory = os.path.join(CACHE, "debian13", "debs")
    os.makedirs(directory, exist_ok=True)
    paths = []
    for package in packages:
        cached = [os.path.join(directory, f) for f in os.listdir(directory)
                  if f.startswith(f"{package}_") and
                  f.endswith((f"_{arch}.deb", "_all.deb"))]
        if cached:
            paths.append(cached[0])
            continue
        index = index or packages_index(arch)
        if package not in index:
            sys.exit(f"debian13: {SUITE}'s {arch} index has no {package} "
                     f"(the pin TRIXIE_KERNEL={TRIXIE_KERNEL} in "
                     f"tools/debian13.py may have left the suite)")
        fields = index[package]
        path = os.path.join(directory, os.path.basename(fields["Filename"]))
        say(f"downloading {package} {fields['Version']}")
        download(f"{mirror()}/{fields['Filename']}", path)
        if sha256(path) != fields["SHA256"]:
            os.unlink(path)
            sys.exit(f"debian13: {package}: SHA256 differs from the index")
        paths.append(path)
    return paths


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


def depends_closure(packages, index):
    """packages and everything they (pre-)depend on, first alternatives."""
    wanted, todo = [], list(packages)
    while todo:
        package = todo.pop()
        if package in wanted or package not in index:
            continue  # virtual packages: what provides them is listed
        wanted.append(package)
        for field in ("Pre-Depends", "Depends"):
            for depend in index[package].get(field, "").split(","):
                name = depend.split("|")[0].split("(")[0].strip()
                if name:
                    todo.append(name.split(":")[0])
    return wanted


def guest_tools(arch):
    """A tree for a guest's initramfs: GUEST_PACKAGES and their libraries,
    unpacked, documentation left out, the loader where programs look for
    it; made once per arch and cached."""
    with _CACHE_LOCK:
        key = hashlib.sha256(" ".join(
            [SUITE, str(GUEST_TOOLS_LAYOUT)] + GUEST_PACKAGES).encode()) \
            .hexdigest()[:16]
        out = os.path.join(CACHE, "debian13", f"guest-tools-{arch}-{key}")
        if os.path.exists(os.path.join(out, ".okprobe-done")):
            return os.path.join(out, "root")
        shutil.rmtree(out, ignore_errors=True)
        index = packages_index(arch)
        root = os.path.join(out, "root")
        os.makedirs(root)
        for deb in fetch(depends_closure(GUEST_PACKAGES, index), arch, index):
            subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
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
        open(os.path.join(out, ".okprobe-done"), "w").close()
        return root


def headers_packages(arch):
    return [f"linux-headers-{TRIXIE_KERNEL}-{arch}",
            f"linux-headers-{TRIXIE_KERNEL}-common"]


def kbuild_dir(arch):
    """Where the kernel's headers are inside the build root."""
    return f"/usr/src/linux-headers-{TRIXIE_KERNEL}-{arch}"


# tools/check prepares two targets at once: one of them makes the root.
_CACHE_LOCK = threading.RLock()


def build_root():
    """The trixie build root with gcc-14 and both kernels' headers; made
    once, cached by what it holds."""
    with _CACHE_LOCK:
        return _build_root()


def _build_root():
    key = hashlib.sha256(" ".join([SUITE, TRIXIE_KERNEL] + ROOT_PACKAGES)
                         .encode()).hexdigest()[:16]
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
    # The kernels' headers and the amd64 kbuild tools, unpacked: both
    # headers packages point their scripts at the same linux-kbuild path,
    # whose amd64 programs then serve the riscv64 cross build too.
    debs = fetch(headers_packages("amd64") +
                 [f"linux-kbuild-{TRIXIE_KERNEL}"], "amd64")
    debs += fetch([f"linux-headers-{TRIXIE_KERNEL}-riscv64"], "riscv64")
    for deb in debs:
        subprocess.run(["dpkg-deb", "-x", deb, os.path.join(root, "fs")],
                       check=True)
    open(os.path.join(root, ".okprobe-done"), "w").close()
    return root


def kernel(arch):
    """The unpacked stock kernel image for arch (amd64 or riscv64): the
    directory holding vmlinuz (x86) or Image (riscv) and config."""
    with _CACHE_LOCK:
        return _kernel(arch)


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


def _kernel(arch):
    out = os.path.join(CACHE, "debian13", f"kernel-{TRIXIE_KERNEL}-{arch}")
    if os.path.exists(os.path.join(out, ".okprobe-done")):
        if arch == "amd64" and \
                not os.path.exists(os.path.join(out, "vmlinux")):
            extract_vmlinux(out)
        return out
    package = f"linux-image-{TRIXIE_KERNEL}-{arch}"
    if arch == "amd64":
        package += "-unsigned"
    (deb,) = fetch([package], arch)
    shutil.rmtree(out, ignore_errors=True)
    unpacked = os.path.join(out, "root")
    os.makedirs(out)
    subprocess.run(["dpkg-deb", "-x", deb, unpacked], check=True)
    boot = os.path.join(unpacked, "boot")
    release = f"{TRIXIE_KERNEL}-{arch}"
    # riscv64 ships the EFI-stub Image under the name vmlinux.
    image = "vmlinuz" if arch == "amd64" else "vmlinux"
    shutil.copy(os.path.join(boot, f"{image}-{release}"),
                os.path.join(out, "vmlinuz" if arch == "amd64" else "Image"))
    shutil.copy(os.path.join(boot, f"config-{release}"),
                os.path.join(out, "config"))
    shutil.rmtree(unpacked)
    if arch == "amd64":
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


def make_variables(arch, zydis_dir=""):
    """What okprobe's Makefile needs to build for the stock kernel of arch
    (amd64 or riscv64) inside the root; the Makefile itself decides the
    rest from the kernel's config, as on a Debian 13 machine."""
    variables = [f"KDIR={kbuild_dir(arch)}",
                 "ARCH=x86" if arch == "amd64" else "ARCH=riscv"]
    if arch == "riscv64":
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


def build_modules(root, tree, arch, zydis_dir=""):
    """Builds okprobe and its test modules in tree (inside root) for the
    stock kernel of arch (amd64 or riscv64) with the Makefile's "modules"
    target (kbuild, then the checks of okprobe.ko), under chroot."""
    return chroot(root, ["make", "-C", inside(root, tree)] +
                  make_variables(arch, zydis_dir) + ["modules"],
                  env=kbuild_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def main():
    if sys.argv[1:2] == ["root"]:
        print(build_root())
    elif sys.argv[1:2] == ["kernel"] and len(sys.argv) == 3:
        print(kernel(sys.argv[2]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
