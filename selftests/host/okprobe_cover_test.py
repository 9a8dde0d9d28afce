#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""tools/okprobe-cover's choice of functions and its batches, against a
fake /proc/kallsyms and a fake debugfs okprobe/cover (a plain file: it
keeps the last write, and read back it lists no covered function, so the
tool ends with "nothing to cover"). The guests' okptest cover and
cover_module run it against okprobe.ko itself."""

import os
import subprocess
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "okprobe-cover")

KALLSYMS = """\
ffffffff81000000 T ext4_foo
ffffffff81000100 T ext4.bar
ffffffff81000200 t ext4xbar
ffffffff81000300 T vfs_read
ffffffff81000400 D ext4_data
ffffffffc0000000 t squashfs_a\t[squashfs]
ffffffffc0000100 t __pfx_squashfs_b\t[squashfs]
ffffffffc0000200 T squashfs_b\t[squashfs]
ffffffffc0000210 t $xrv64i2p1_m2p0\t[squashfs]
ffffffffc0000218 t .L0 \t[squashfs]
ffffffffc0000300 t ext4_in_module\t[other]
"""


class OkprobeCover(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        os.mkdir(os.path.join(self.dir.name, "okprobe"))
        self.cover = os.path.join(self.dir.name, "okprobe", "cover")
        self.kallsyms = os.path.join(self.dir.name, "kallsyms")
        self.write_kallsyms(KALLSYMS)

    def tearDown(self):
        self.dir.cleanup()

    def write_kallsyms(self, text):
        with open(self.kallsyms, "w") as f:
            f.write(text)
        open(self.cover, "w").close()

    def run_tool(self, *args):
        env = dict(os.environ, OKPROBE_DEBUGFS=self.dir.name,
                   OKPROBE_KALLSYMS=self.kallsyms)
        return subprocess.run(["sh", TOOL, "-k", "-t", "0", *args], env=env,
                              capture_output=True, text=True, timeout=60)

    def last_write(self):
        with open(self.cover) as f:
            return f.read().split()

    def test_a_glob_matches_whole_names_and_dots_are_dots(self):
        self.run_tool("-p", "ext4.*")
        self.assertEqual(self.last_write(), ["reach", "0xffffffff81000100"])
        self.run_tool("-p", "ext4?bar")
        self.assertEqual(self.last_write(), ["reach", "0xffffffff81000100",
                                             "0xffffffff81000200"])

    def test_a_glob_covers_every_module_unless_one_is_named(self):
        self.run_tool("-c", "-p", "ext4_*")
        self.assertEqual(self.last_write(), ["add", "0xffffffff81000000",
                                             "0xffffffffc0000300"])
        self.run_tool("-m", "other", "-p", "ext4_*")
        self.assertEqual(self.last_write(), ["reach", "0xffffffffc0000300"])

    def test_a_module_is_its_functions_without_padding_or_mapping_symbols(self):
        self.run_tool("-m", "squashfs")
        self.assertEqual(self.last_write(), ["reach", "0xffffffffc0000000",
                                             "0xffffffffc0000200"])

    def test_modules_add_up(self):
        self.run_tool("-m", "squashfs", "-m", "other")
        self.assertEqual(self.last_write(), ["reach", "0xffffffffc0000000",
                                             "0xffffffffc0000200",
                                             "0xffffffffc0000300"])
        result = self.run_tool("-m", "squashfs", "-m", "nosuch", "-m", "gone")
        self.assertEqual(result.returncode, 1)
        self.assertIn(": nosuch gone", result.stderr)

    def test_a_module_not_loaded_is_refused_by_name(self):
        result = self.run_tool("-m", "nosuch")
        self.assertEqual(result.returncode, 1)
        self.assertIn("not loaded (no function of it in", result.stderr)
        self.assertIn(": nosuch", result.stderr)
        self.assertEqual(self.last_write(), [])

    def test_functions_go_in_writes_of_200(self):
        self.write_kallsyms("".join(
            f"{0xffffffff82000000 + 16 * i:016x} T many_{i}\n"
            for i in range(450)))
        self.run_tool("-p", "many_*")
        words = self.last_write()
        self.assertEqual(words[0], "reach")
        self.assertEqual(len(words) - 1, 50, "450 = 200 + 200 + 50")
        self.assertEqual(words[1], f"0x{0xffffffff82000000 + 16 * 400:x}")

    def test_named_functions_in_one_read_and_a_missing_one_said(self):
        result = self.run_tool("vfs_read", "ext4_foo", "nosuch", "0x1234")
        self.assertEqual(self.last_write(), ["reach", "0x1234",
                                             "0xffffffff81000000",
                                             "0xffffffff81000300"])
        self.assertIn("no function nosuch in", result.stderr)

    def test_hidden_addresses_say_run_as_root(self):
        self.write_kallsyms("0000000000000000 T vfs_read\n")
        result = self.run_tool("vfs_read")
        self.assertEqual(result.returncode, 1)
        self.assertIn("hides addresses: run as root", result.stderr)


if __name__ == "__main__":
    unittest.main()
