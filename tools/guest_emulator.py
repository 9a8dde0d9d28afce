# SPDX-License-Identifier: GPL-2.0
"""The emulator the x86 guests run on: Debian 13's qemu-system-x86,
unpacked from its verified packages and run through its own dynamic
loader, never installed on the (bookworm) host.

Why not the host's QEMU 7.2: before 8.1, TCG computed cmpxchg16b's flags
in a helper from a stale cc_op when the translation block was entered
right after an iret, so a breakpoint after `cmpxchg16b; jne` (SLUB's fast
path in 6.12 and later) pushed garbage RFLAGS, TF and IOPL among them, and
the guest crashed on its return (Documentation/testing.md, "The x86
guests' emulator: Debian 13's QEMU"). QEMU 8.1 inlined cmpxchg16b. The riscv guests keep
the host's qemu-system-riscv64.

The packages (qemu-system-x86 and its depends) come through
tools/debian13.py's apt, which keeps only what verifies against trixie's
signed index; they are unpacked with dpkg-deb -x into the cache, once.
The host's glibc is older than trixie's, so the program runs under the
tree's own loader with the tree's libraries (--library-path); its
firmware comes from the tree (-L) and its modules (TCG itself is one)
from QEMU_MODULE_DIR, so nothing of the host's QEMU 7.2 is mixed in.

    tools/guest_emulator.py       # prints the wrapper, making it if needed
"""

import os
import subprocess
import sys

import debian13

PACKAGES = ["qemu-system-x86"]
LAYOUT = 1  # bumped when emulator() lays the tree out anew
TRIPLET = debian13.TRIPLETS["amd64"]


def emulator():
    """The path of an executable that runs Debian 13's
    qemu-system-x86_64 with the arguments it is given."""
    def finish(out, root):
        debian13.say("unpacked Debian 13's qemu-system-x86 for the x86 "
                     "guests")
        loader = os.path.join(root, "usr", debian13.LOADERS["amd64"])
        if not os.path.exists(loader):
            sys.exit(f"guest_emulator: no {loader} in trixie's libc6")
        libraries = ":".join(os.path.join(root, d, TRIPLET)
                             for d in ("usr/lib", "lib"))
        wrapper = os.path.join(out, "qemu-system-x86_64")
        with open(wrapper + ".tmp", "w") as f:
            f.write("#!/bin/sh\n"
                    "# Debian 13's QEMU under its own loader "
                    "(tools/guest_emulator.py).\n"
                    f"QEMU_MODULE_DIR={root}/usr/lib/{TRIPLET}/qemu "
                    f"exec {loader} --library-path {libraries} "
                    f"{root}/usr/bin/qemu-system-x86_64 "
                    f"-L {root}/usr/share/qemu "
                    f"-L {root}/usr/share/seabios \"$@\"\n")
        os.chmod(wrapper + ".tmp", 0o755)
        os.replace(wrapper + ".tmp", wrapper)
        version = subprocess.run([wrapper, "--version"], text=True,
                                 stdout=subprocess.PIPE)
        if version.returncode != 0 or "QEMU emulator" not in version.stdout:
            sys.exit("guest_emulator: Debian 13's qemu-system-x86_64 does "
                     f"not start: {wrapper} --version")
    out = debian13.unpacked_tree("qemu", PACKAGES, "amd64", LAYOUT, finish)
    return os.path.join(out, "qemu-system-x86_64")


if __name__ == "__main__":
    print(emulator())
