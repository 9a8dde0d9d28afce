#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""tools/okprobe-cover-lcov on objects gcc builds here with DWARF: a
relocatable one as a module is (functions in two sections, both at 0)
and a linked one as vmlinux is (its report's addresses slid as KASLR
slides them). Each report is made of the functions' real block starts
(the instructions after their branches, found with objdump), and each
tracefile is checked line by line against the source, whose lines are
marked, and rendered by genhtml where lcov is installed. okptest's
cover_lines runs the tool on okprobe/cover's own report in the guests."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "okprobe-cover-lcov")

# Every statement on a line of its own, each marked with the block it is
# in, so the expected hits are read off the source.
SOURCE = r"""
extern volatile long sink;
extern void note(long value);

__attribute__((noinline)) long pick(long a)
{
	long r = a;                         /* entry */
	if (a > 10) {                       /* entry */
		note(a);                        /* big */
		r = a * 3;                      /* big */
	} else {
		note(-a);                       /* small */
		r = a + 1;                      /* small */
	}
	sink = r;                           /* join */
	return r;                           /* join */
}

__attribute__((noinline, section(".text.unlikely"))) long rare(long a)
{
	sink = a;                           /* rare */
	return a - 1;                       /* rare */
}
"""


def marked_lines(source):
    """mark -> [line numbers] of SOURCE."""
    marks = {}
    for number, line in enumerate(source.splitlines(), 1):
        if match := re.search(r"/\* (\w+) \*/", line):
            marks.setdefault(match[1], []).append(number)
    return marks


def functions_of(path):
    """name -> (section, value, size) of path's functions (readelf -sW)."""
    sections = {}
    for line in subprocess.run(["readelf", "-SW", path], text=True,
                               capture_output=True, check=True).stdout.splitlines():
        if match := re.match(r"\s*\[\s*(\d+)\]\s+(\S+)", line):
            sections[match[1]] = match[2]
    found = {}
    for line in subprocess.run(["readelf", "-sW", path], text=True,
                               capture_output=True, check=True).stdout.splitlines():
        fields = line.split()
        if len(fields) == 8 and fields[3] == "FUNC":
            found[fields[7]] = (sections.get(fields[6]), int(fields[1], 16),
                                int(fields[2], 0))
    return found


def block_starts(path, section, name):
    """The offsets of name's basic blocks: its start, each branch's target
    inside it, each instruction after a branch (objdump -d)."""
    start, size = None, None
    lines = subprocess.run(["objdump", "-d", "-j", section, path], text=True,
                           capture_output=True, check=True).stdout.splitlines()
    instructions, inside = [], False
    for line in lines:
        if match := re.match(r"^([0-9a-f]+) <(\S+)>:$", line):
            inside = match[2] == name
            if inside:
                start = int(match[1], 16)
            continue
        if inside and (match := re.match(r"^\s+([0-9a-f]+):\t[0-9a-f ]+\t(\S+)\s*(\S*)", line)):
            instructions.append((int(match[1], 16), match[2], match[3]))
    size = instructions[-1][0] - start + 1 if instructions else 0
    starts = {0}
    for n, (address, mnemonic, operand) in enumerate(instructions):
        if mnemonic.startswith("j") or mnemonic.startswith("ret"):
            if n + 1 < len(instructions):
                starts.add(instructions[n + 1][0] - start)
            if re.fullmatch(r"[0-9a-f]+", operand):
                starts.add(int(operand, 16) - start)
    return sorted(s for s in starts if 0 <= s < size + 16)


class CoverLcov(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = lambda name: os.path.join(self.dir.name, name)
        with open(self.path("target.c"), "w") as f:
            f.write(SOURCE)
        self.marks = marked_lines(SOURCE)

    def tearDown(self):
        self.dir.cleanup()

    def compile(self, *extra, output):
        subprocess.run(["gcc", "-g", "-O1", "-fno-inline", "-fcf-protection=none",
                        *extra, "-o", self.path(output), self.path("target.c")],
                       check=True)

    def run_tool(self, report, *args):
        with open(self.path("report.txt"), "w") as f:
            f.write(report)
        return subprocess.run([TOOL, *args, "-o", self.path("cover.info"),
                               self.path("report.txt")], text=True,
                              capture_output=True)

    def report_lines(self, address, name, size, module, blocks, hits_of,
                     reach=False):
        """okprobe/cover's report of one function: hits_of(offset)."""
        suffix = f" [{module}]" if module else ""
        lines = [f"function 0x{address:016x} {name}+0x0/0x{size:x}{suffix} "
                 f"blocks={len(blocks)} reached={sum(1 for b in blocks if hits_of(b))}"
                 + (" reach" if reach else "")]
        lines += [f"+0x{b:x} hits={hits_of(b)} breakpoint" for b in blocks]
        return lines

    def tracefile(self):
        """file -> {line: hits}, and file -> {function: hits}."""
        lines, functions, current = {}, {}, None
        with open(self.path("cover.info")) as f:
            for record in f.read().splitlines():
                if record.startswith("SF:"):
                    current = record[3:]
                    lines[current], functions[current] = {}, {}
                elif record.startswith("DA:"):
                    number, hits = record[3:].split(",")[:2]
                    lines[current][int(number)] = int(hits)
                elif record.startswith("FNDA:"):
                    hits, name = record[5:].split(",")
                    functions[current][name] = int(hits)
        return lines, functions

    def check_pick(self, lines, functions, calls_big, calls_small):
        source = [f for f in lines if f.endswith("target.c")]
        self.assertEqual(len(source), 1, lines)
        hits = lines[source[0]]
        total = calls_big + calls_small
        for mark, expected in (("entry", total), ("big", calls_big),
                               ("small", calls_small), ("join", total)):
            for line in self.marks[mark]:
                # gcc may fold a statement into the next one's code, so a
                # marked line can have no code of its own; the ones with
                # code must have their block's hits.
                if line in hits:
                    self.assertEqual(hits[line], expected,
                                     f"{mark} line {line}: {hits}")
        for mark in ("big", "small"):
            self.assertTrue(any(line in hits for line in self.marks[mark]),
                            f"no {mark} line in {hits}")
        self.assertEqual(functions[source[0]].get("pick"), total)

    def block_hits(self, path, section, name, calls_big, calls_small):
        """Hits of each block of name as a run with those calls gives,
        from each block's first line's mark."""
        starts = block_starts(path, section, name)
        symbol = functions_of(path)[name]
        marks = {line: mark for mark, numbers in self.marks.items()
                 for line in numbers}
        answer = subprocess.run(
            ["addr2line", "-e", path, *(["-j", section] if symbol[0] and
                                        path.endswith(".ko") else [])],
            input="".join(f"{symbol[1] + s:#x}\n" for s in starts),
            text=True, capture_output=True, check=True).stdout.splitlines()
        counts = {"entry": calls_big + calls_small, "join": calls_big + calls_small,
                  "big": calls_big, "small": calls_small, "rare": 0}
        hits = {}
        for start, where in zip(starts, answer):
            line = where.split(" (")[0].rpartition(":")[2]
            mark = marks.get(int(line)) if line.isdigit() else None
            hits[start] = counts.get(mark, calls_big + calls_small)
        return starts, symbol, hits

    def test_a_module_is_read_by_section(self):
        self.compile("-c", output="target.ko")
        starts, symbol, hits = self.block_hits(self.path("target.ko"), ".text",
                                               "pick", 2, 3)
        self.assertGreaterEqual(len(starts), 3, starts)
        rare = functions_of(self.path("target.ko"))["rare"]
        self.assertEqual(rare[0], ".text.unlikely")
        # Both functions at the start of their section: the same offset.
        report = self.report_lines(0xffffffffc0001000 + symbol[1], "pick",
                                   symbol[2], "target", starts,
                                   lambda b: hits[b])
        # One function in reach mode, one counted: both read.
        report += self.report_lines(0xffffffffc0003000, "rare", rare[2],
                                    "target", [0], lambda b: 1, reach=True)
        done = self.run_tool("\n".join(report) + "\n", "--module-dir",
                             self.dir.name)
        self.assertEqual(done.returncode, 0, done.stderr)
        lines, functions = self.tracefile()
        self.check_pick(lines, functions, 2, 3)
        source = next(f for f in lines if f.endswith("target.c"))
        for line in self.marks["rare"]:
            self.assertEqual(lines[source].get(line), 1, lines[source])
        self.assertEqual(functions[source]["rare"], 1)
        if shutil.which("genhtml"):
            rendered = subprocess.run(
                ["genhtml", "--quiet", "-o", self.path("html"),
                 self.path("cover.info")], text=True, capture_output=True)
            self.assertEqual(rendered.returncode, 0, rendered.stderr)
            self.assertTrue(os.path.exists(self.path("html/index.html")))

    def test_a_kernel_is_read_by_address_past_its_slide(self):
        self.compile("-nostdlib", "-static", "-Wl,--unresolved-symbols=ignore-all",
                     "-Wl,-e,pick", "-Wl,--defsym=sink=0x1000", output="vmlinux")
        path = self.path("vmlinux")
        starts, symbol, hits = self.block_hits(path, ".text", "pick", 4, 1)
        rare = functions_of(path)["rare"]
        slide = 0x1a000000
        report = self.report_lines(symbol[1] + slide, "pick", symbol[2], None,
                                   starts, lambda b: hits[b])
        report += self.report_lines(rare[1] + slide, "rare", rare[2], None,
                                    [0], lambda b: 0)
        done = self.run_tool("\n".join(report) + "\n", "--vmlinux", path)
        self.assertEqual(done.returncode, 0, done.stderr)
        lines, functions = self.tracefile()
        self.check_pick(lines, functions, 4, 1)
        source = next(f for f in lines if f.endswith("target.c"))
        for line in self.marks["rare"]:
            self.assertEqual(lines[source].get(line), 0, lines[source])

    def test_a_block_okprobe_refused_says_nothing_of_its_lines(self):
        self.compile("-c", output="target.ko")
        starts, symbol, hits = self.block_hits(self.path("target.ko"), ".text",
                                               "pick", 2, 3)
        report = self.report_lines(0xffffffffc0001000, "pick", symbol[2],
                                   "target", starts, lambda b: hits[b])
        done = self.run_tool("\n".join(report) + "\n", "--module-dir",
                             self.dir.name)
        self.assertEqual(done.returncode, 0, done.stderr)
        probed = next(iter(self.tracefile()[0].values()))
        # The last block (a return: its lines are its own) refused.
        refused = max(starts)
        report[-1] = f"+0x{refused:x} hits=0 refused: a jump label site (-16)"
        done = self.run_tool("\n".join(report) + "\n", "--module-dir",
                             self.dir.name)
        self.assertEqual(done.returncode, 0, done.stderr)
        with_refusal = next(iter(self.tracefile()[0].values()))
        self.assertLess(len(with_refusal), len(probed), (with_refusal, probed))
        for line, count in with_refusal.items():
            self.assertEqual(count, probed[line], (with_refusal, probed))

    def test_no_debuginfo_names_the_package_and_fails(self):
        report = ("function 0xffffffff81000000 vfs_read+0x0/0x40 blocks=1 reached=1\n"
                  "+0x0 hits=1 optimized\n")
        done = self.run_tool(report, "--release", "6.1.0-99-amd64",
                             "--vmlinux", self.path("missing"))
        self.assertEqual(done.returncode, 1)
        self.assertIn("no debuginfo for the kernel", done.stderr)
        self.assertIn("linux-image-6.1.0-99-amd64-dbg", done.stderr)


if __name__ == "__main__":
    unittest.main()
