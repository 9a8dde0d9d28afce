#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tools/okprobe against a fake tracefs (OKPROBE_TRACEFS): what it writes
to okprobe_events, how it reads okprobe_events and okprobe_profile back,
and its line shorthands. The guest tests drive the real file
(okptest probe_events); these check the command's own logic."""

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
COMMAND = os.path.join(ROOT, "tools", "okprobe")


def load_command():
    loader = importlib.machinery.SourceFileLoader("okprobe_command", COMMAND)
    spec = importlib.util.spec_from_loader("okprobe_command", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class FakeTracefs(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = self.dir.name
        self.write("okprobe_events", "p:okprobe/myread vfs_read count=$arg3:u64\n"
                   "r:okprobe/myread_ret vfs_read ret=$retval\n")
        self.write("okprobe_profile", "  myread                                              4711               3\n"
                   "  myread_ret                                            12               0\n")
        for event, enabled in (("myread", "1"), ("myread_ret", "0")):
            os.makedirs(os.path.join(self.root, "events", "okprobe", event))
            self.write(os.path.join("events", "okprobe", event, "enable"), enabled + "\n")
        self.write("error_log", "")

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text):
        with open(os.path.join(self.root, name), "w") as f:
            f.write(text)

    def read(self, name):
        with open(os.path.join(self.root, name)) as f:
            return f.read()

    def run_command(self, *args):
        env = dict(os.environ, OKPROBE_TRACEFS=self.root)
        return subprocess.run([sys.executable, COMMAND, *args], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def test_add_appends_the_line_and_reads_it_back(self):
        done = self.run_command("add", "p:other do_sys_openat2 path=+0($arg2):ustring")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(self.read("okprobe_events").endswith(
            "p:other do_sys_openat2 path=+0($arg2):ustring\n"))

    def test_add_takes_a_place_alone_or_after_p_colon(self):
        self.assertEqual(self.run_command("add", "p:vfs_read+5", "len=%dx").returncode, 0)
        self.assertEqual(self.run_command("add", "ksys_read+4 fd=%di").returncode, 0)
        lines = self.read("okprobe_events").splitlines()
        self.assertEqual(lines[-2], "p vfs_read+5 len=%dx")
        self.assertEqual(lines[-1], "p ksys_read+4 fd=%di")

    def test_list_shows_hits_misses_and_enabled(self):
        done = self.run_command("list")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("p:okprobe/myread vfs_read count=$arg3:u64\n    hits=4711 misses=3 [ENABLED]", done.stdout)
        self.assertIn("r:okprobe/myread_ret vfs_read ret=$retval\n    hits=12 misses=0\n", done.stdout)

    def test_del_writes_a_removal_and_all_truncates(self):
        self.assertEqual(self.run_command("del", "myread").returncode, 0)
        self.assertTrue(self.read("okprobe_events").endswith("-:myread\n"))
        self.assertEqual(self.run_command("del", "--all").returncode, 0)
        self.assertEqual(self.read("okprobe_events"), "")

    def test_without_the_module_it_says_so(self):
        os.remove(os.path.join(self.root, "okprobe_events"))
        done = self.run_command("list")
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("is okprobe.ko loaded", done.stderr)

    def test_top_prints_rates_highest_first(self):
        done = self.run_command("top", "-d", "0.05", "-n", "1")
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        self.assertTrue(lines[0].startswith("okprobe top"))
        self.assertEqual([line.split()[-1] for line in lines[2:]], ["myread", "myread_ret"])


class Logic(unittest.TestCase):
    def setUp(self):
        self.command = load_command()

    def test_canonical_line(self):
        line = self.command.canonical_line
        self.assertEqual(line("p:grp/ev vfs_read a=%di"), "p:grp/ev vfs_read a=%di")
        self.assertEqual(line("r10:ev  inet_csk_accept"), "r10:ev inet_csk_accept")
        self.assertEqual(line("p:vfs_read+5 len=%dx"), "p vfs_read+5 len=%dx")
        self.assertEqual(line("r:do_exit%return"), "r do_exit%return")
        self.assertEqual(line("vfs_read"), "p vfs_read")
        self.assertEqual(line("p:grp/ vfs_read"), "p:grp/ vfs_read")

    def test_rates(self):
        before = {"a": (100, 0), "b": (10, 1)}
        after = {"a": (150, 0), "b": (110, 3), "c": (7, 0)}
        rows = self.command.rates(before, after, 2.0)
        self.assertEqual([(row[2], row[0], row[1]) for row in rows],
                         [("b", 50.0, 1.0), ("a", 25.0, 0.0), ("c", 0.0, 0.0)])


if __name__ == "__main__":
    unittest.main()
