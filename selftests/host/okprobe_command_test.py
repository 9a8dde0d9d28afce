#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tools/okprobe against a fake tracefs (OKPROBE_TRACEFS): what it writes
to okprobe_events, how it reads okprobe_events and okprobe_profile back,
and its line shorthands. The guest tests drive the real file
(okptest probe_events); these check the command's own logic."""

import importlib.machinery
import importlib.util
import json
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


# A stand-in for perf on PATH: buildid-list prints FAKE_RUNNING_ID for
# -k and FAKE_FILE_ID for -i; probe prints FAKE_PERF_OUT and
# FAKE_PERF_ERR and exits with FAKE_PERF_CODE. Each call's arguments, and
# the blacklist of the debugfs it was given, go to FAKE_PERF_LOG.
FAKE_PERF = """#!/usr/bin/env python3
import json, os, sys
env = os.environ
blacklist = os.path.join(env.get("DEBUGFS_PATH", "/nonexistent"), "kprobes", "blacklist")
with open(env["FAKE_PERF_LOG"], "a") as log:
    log.write(json.dumps({"argv": sys.argv[1:], "blacklist": open(blacklist).read()
                          if os.path.exists(blacklist) else None}) + "\\n")
if sys.argv[1] == "buildid-list":
    print(env["FAKE_RUNNING_ID"] if "-k" in sys.argv else env["FAKE_FILE_ID"])
    sys.exit(0)
sys.stdout.write(env.get("FAKE_PERF_OUT", ""))
sys.stderr.write(env.get("FAKE_PERF_ERR", ""))
sys.exit(int(env.get("FAKE_PERF_CODE", "0")))
"""


class SourceLines(FakeTracefs):
    """add --line: perf probe --definition on the debuginfo, its lines
    into okprobe_events."""

    def setUp(self):
        super().setUp()
        self.bin = os.path.join(self.root, "bin")
        os.makedirs(self.bin)
        with open(os.path.join(self.bin, "perf"), "w") as f:
            f.write(FAKE_PERF)
        os.chmod(os.path.join(self.bin, "perf"), 0o755)
        self.vmlinux = os.path.join(self.root, "vmlinux")
        self.write("vmlinux", "")
        self.debugfs = os.path.join(self.root, "debug")
        os.makedirs(os.path.join(self.debugfs, "kprobes"))
        os.makedirs(os.path.join(self.debugfs, "okprobe"))
        with open(os.path.join(self.debugfs, "kprobes", "blacklist"), "w") as f:
            f.write("0xffffffff81001000-0xffffffff81001100\tvfs_read\n"
                    "0xffffffff81002000-0xffffffff81002040\tnmi_handle\n")
        with open(os.path.join(self.debugfs, "okprobe", "list"), "w") as f:
            f.write("0xffffffff81001019  vfs_read+0x19/0x100  hits=0\n")
        self.env = {"FAKE_RUNNING_ID": "abc", "FAKE_FILE_ID": "abc",
                    "FAKE_PERF_LOG": os.path.join(self.root, "perf.log")}

    def run_tool(self, *args, **env):
        """tools/okprobe on the fake tracefs and debugfs, the stand-in
        perf first on PATH."""
        environment = dict(os.environ, OKPROBE_TRACEFS=self.root,
                           OKPROBE_DEBUGFS=self.debugfs,
                           PATH=self.bin + os.pathsep + os.environ["PATH"],
                           **dict(self.env, **env))
        return subprocess.run([sys.executable, COMMAND, *args], env=environment,
                              text=True, capture_output=True)

    def run_line(self, spec, *extra, **env):
        return self.run_tool("add", "--line", spec, "--vmlinux", self.vmlinux,
                             *extra, **env)

    def perf_calls(self):
        with open(self.env["FAKE_PERF_LOG"]) as f:
            return [json.loads(line) for line in f]

    def test_every_instance_goes_into_okprobes_group(self):
        out = ("p:probe/fsnotify_access vfs_read+241\n"
               "p:probe/fsnotify_access do_sendfile+552 f=%di:x64\n")
        done = self.run_line("fsnotify_access", FAKE_PERF_OUT=out)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(self.read("okprobe_events").splitlines()[-2:],
                         ["p:okprobe/fsnotify_access vfs_read+241",
                          "p:okprobe/fsnotify_access do_sendfile+552 f=%di:x64"])
        self.assertIn("p:okprobe/fsnotify_access do_sendfile+552", done.stdout)
        probe = self.perf_calls()[-1]
        self.assertEqual(probe["argv"], ["probe", "--vmlinux", self.vmlinux,
                                         "--definition", "fsnotify_access"])

    def test_perfs_blacklist_leaves_out_what_okprobe_claimed(self):
        done = self.run_line("vfs_read:25 ret",
                             FAKE_PERF_OUT="p:probe/vfs_read_L25 vfs_read+259 ret=%bx:s64\n")
        self.assertEqual(done.returncode, 0, done.stderr)
        blacklist = self.perf_calls()[-1]["blacklist"]
        self.assertNotIn("vfs_read", blacklist)
        self.assertIn("nmi_handle", blacklist)

    def test_a_taken_name_gets_a_suffix_a_group_of_ones_own_stays(self):
        done = self.run_line("myread=vfs_read count",
                             FAKE_PERF_OUT="p:probe/myread vfs_read+0 count=%dx:x64\n")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertTrue(self.read("okprobe_events").endswith(
            "p:okprobe/myread_1 vfs_read+0 count=%dx:x64\n"))
        done = self.run_line("grp:ev=vfs_read", FAKE_PERF_OUT="p:grp/ev vfs_read+0\n")
        self.assertTrue(self.read("okprobe_events").endswith("p:grp/ev vfs_read+0\n"))

    def test_perfs_events_stay_apart_when_renamed(self):
        # perf names a second place x_1 where it sees no multiprobe events;
        # with okprobe/myread taken, the first becomes myread_1: the second
        # must not append to it.
        out = ("p:probe/myread vfs_read+5\n"
               "p:probe/myread_1 ksys_read+5\n")
        done = self.run_line("myread=vfs_read", FAKE_PERF_OUT=out)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(self.read("okprobe_events").splitlines()[-2:],
                         ["p:okprobe/myread_1 vfs_read+5",
                          "p:okprobe/myread_1_1 ksys_read+5"])

    def test_perfs_reason_is_quoted(self):
        done = self.run_line("nosuch", FAKE_PERF_CODE="254",
                             FAKE_PERF_ERR="Probe point 'nosuch' not found.\n"
                             "  Error: Failed to add events.\n")
        self.assertEqual(done.returncode, 1)
        self.assertIn("perf: Probe point 'nosuch' not found.", done.stderr)
        self.assertNotIn("Failed to add events", done.stderr)
        self.assertNotIn("nosuch", self.read("okprobe_events"))

    def test_a_mapping_symbol_is_no_place(self):
        done = self.run_line("fsnotify_access",
                             FAKE_PERF_OUT="p:probe/f $xrv64i2p1_m2p0+398\n")
        self.assertEqual(done.returncode, 1)
        self.assertIn("perf 7.x can", done.stderr)
        self.assertNotIn("$x", self.read("okprobe_events"))

    def test_another_kernels_debuginfo_is_refused(self):
        done = self.run_line("vfs_read", FAKE_FILE_ID="def",
                             FAKE_PERF_OUT="p:probe/vfs_read vfs_read+0\n")
        self.assertEqual(done.returncode, 1)
        self.assertIn("not the running kernel's debuginfo (build-id def, the kernel's abc)",
                      done.stderr)
        self.assertEqual(len(self.perf_calls()), 2)  # no perf probe

    def test_without_debuginfo_it_names_the_package(self):
        command = load_command()
        release = os.uname().release
        if any(os.path.exists(p.format(release=release)) for p in command.DEBUGINFO_PATHS):
            self.skipTest("this host has its kernel's debuginfo")
        done = self.run_tool("add", "--line", "vfs_read")
        self.assertEqual(done.returncode, 1)
        self.assertIn(f"no debuginfo for the running kernel {release}", done.stderr)
        self.assertIn(f"apt install linux-image-{release}-dbg", done.stderr)

    def test_vmlinux_only_with_line(self):
        done = self.run_command("add", "--vmlinux", self.vmlinux, "vfs_read")
        self.assertEqual(done.returncode, 1)
        self.assertIn("--vmlinux goes with --line", done.stderr)


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
