# SPDX-License-Identifier: GPL-2.0
"""Parts of the guest kernel's source, from Debian's linux-source-SERIES:
the host's for 6.1 (installed by tools/setup-host), trixie's or
trixie-backports' for the others, through tools/debian13.py's verified
apt. The package holds one tarball of the whole tree; only the parts
asked for are taken out of it, streamed (kernel_ftracetest.py's
ftracetest; make demo's sources for genhtml).
"""

import hashlib
import os
import shutil
import subprocess
import tempfile

import debian13
import guest_userland


def source(t):
    """(package, version, a .deb holding the tarball or the host's
    tarball) of t's kernel series."""
    if t.debian13:
        series = ".".join(t.debian13.release.split(".")[:2])
        package = f"linux-source-{series}"
        (deb,) = debian13.fetch([package], t.debian13.arch,
                                t.debian13.suite)
        return package, os.path.basename(deb), deb
    tarball = "/usr/src/linux-source-6.1.tar.xz"
    version = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", "linux-source-6.1"],
        text=True, capture_output=True, check=True).stdout
    return "linux-source-6.1", version, tarball


def extract(tarball_or_deb, directory, paths, strip):
    """The tree's files under paths (the tree's top directory left out,
    as "fs/squashfs") into directory, each path's first strip components
    after the top directory taken off too."""
    def command(tarball):
        # The tree's top directory is the tarball's name (Debian's
        # linux-source-SERIES.tar.xz has linux-source-SERIES/): each
        # pattern anchored there, so that "include" is not also every
        # other directory's include/ (tar's * matches slashes).
        top = os.path.basename(tarball).removesuffix(".tar.xz")
        return ["tar", "-xJ", "-C", directory, "--wildcards",
                "--strip-components", str(strip + 1),
                *(f"{top}/{path}/*" for path in paths)]

    if not tarball_or_deb.endswith(".deb"):
        subprocess.run(command(tarball_or_deb) + ["-f", tarball_or_deb],
                       check=True)
        return
    member = subprocess.run(["dpkg-deb", "-c", tarball_or_deb], text=True,
                            capture_output=True, check=True).stdout
    member = next(line.split()[-1] for line in member.splitlines()
                  if line.endswith(".tar.xz"))
    tar = command(member)
    deb = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", tarball_or_deb],
                           stdout=subprocess.PIPE)
    inner = subprocess.Popen(["tar", "-xO", member], stdin=deb.stdout,
                             stdout=subprocess.PIPE)
    deb.stdout.close()  # tar has it: dpkg-deb sees tar go
    done = subprocess.run(tar, stdin=inner.stdout)
    inner.stdout.close()
    if done.returncode or inner.wait() or deb.wait():
        raise SystemExit(f"kernel_source: no {' '.join(paths)} in "
                         f"{os.path.basename(tarball_or_deb)}")


def cached(name, package, key, make):
    """The cache's directory NAME-PACKAGE-HASH (HASH: of package and key),
    made by make(directory) into a fresh one once, the older ones of
    NAME-PACKAGE removed first; its path."""
    digest = hashlib.sha256(f"{package} {key}".encode()).hexdigest()[:16]
    out = guest_userland.cache_dir(f"{name}-{package}-{digest}")
    if os.path.exists(os.path.join(out, ".okprobe-done")):
        return out
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    for old in os.listdir(parent):
        if old.startswith(f"{name}-{package}-"):
            shutil.rmtree(os.path.join(parent, old))
    with tempfile.TemporaryDirectory(dir=parent) as tmp:
        made = os.path.join(tmp, "made")
        os.makedirs(made)
        make(made)
        open(os.path.join(made, ".okprobe-done"), "w").close()
        os.rename(made, out)
    return out


def tree(t, name, paths):
    """A cached directory with paths of t's kernel source, as the tree
    has them (name: the cache's, e.g. "cover-sources"), made once per
    source package version and paths."""
    package, version, tarball = source(t)

    def make(directory):
        guest_userland.say(f"taking {' '.join(paths)} from {package}")
        extract(tarball, directory, paths, 0)

    return cached(name, package, f"{version} {paths}", make)
