#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tools/guest_hang.py, what the guest runner asks a hung guest, against a
fake QEMU monitor and serial line: the registers of QEMU 7.2's "info
registers -a" on both arches, a stack dump with the monitor's echo in it,
symbols moved by the KASLR offset, the SysRq keys. make check's harness
self-test (selftest-all's hang) runs it against real guests."""

import io
import os
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import guest_hang  # noqa: E402

X86_REGISTERS = """\
CPU#0
RAX=0000000000000000 RBX=ffffffff9c5a0000 RCX=0000000000000001 RDX=0000000000000000
RSI=fffffe3c001c6958 RDI=ffffffff9c503d0b RBP=0000000000000002 RSP=fffffe3c001c68e0
RIP=ffffffff9c47e9c0 RFL=00000006 [-----P-] CPL=0 II=0 A20=1 SMM=0 HLT=0
CR0=80050033 CR2=fffffe3c001c4ff8 CR3=0000000038a22000 CR4=00751ef0
CPU#1
RSI=0000000000000000 RDI=fffffe5d13b4a7a8 RBP=0000000000000000 RSP=fffffe5d13b4a758
RIP=ffffffff9c601220 RFL=00000046 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT=1
CR0=80050033 CR2=0000000000000000 CR3=0000000001950000 CR4=00751ef0
"""

RISCV_REGISTERS = """\
CPU#0
 V      =   0
 pc       ffffffff80a6944c
 mhartid  0000000000000000
 scause   8000000000000005
 sepc     ffffffff80a6944c
 x0/zero  0000000000000000 x1/ra    ffffffff80a6b0e0 x2/sp    ff20000000013ec0 x3/gp    ffffffff81a3e8b8
"""

# The kernel as linked (nokaslr): _stext, two functions, _etext.
SYMBOLS = """\
ffffffff81000000 T _stext
ffffffff81c7e9a0 T find_bug
ffffffff81d03ce0 T irqentry_nmi_enter
ffffffff81d03d50 t irqentry_nmi_exit
ffffffff81e00000 T _etext
ffffffff81e00010 D some_data
"""
KASLR = 0x1a800000


class FakeMonitor:
    """Answers the commands guest_hang sends, and records them."""

    def __init__(self, registers, stacks):
        self.registers, self.stacks, self.sent = registers, stacks, []

    def command(self, text, timeout=60):
        return self.commands([text], timeout)[-1]

    def commands(self, texts, timeout=60):
        self.sent.append(texts)
        replies, cpu = [], None
        for text in texts:
            if text == "info registers -a":
                replies.append(self.registers)
            elif text.startswith("cpu "):
                cpu = int(text.split()[1])
                replies.append("")
            elif text.startswith("x/"):
                # The monitor echoes the command with terminal escapes.
                replies.append("\x1b[K\x1b[D" + text + "\r\n" +
                               self.stacks.get(cpu, ""))
        return replies


class GuestHang(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.symbols = os.path.join(self.dir.name, "kallsyms.txt")
        with open(self.symbols, "w") as f:
            f.write(SYMBOLS)

    def tearDown(self):
        self.dir.cleanup()

    def test_parses_both_arches_registers(self):
        x86 = guest_hang.parse_cpus("x86", X86_REGISTERS)
        self.assertEqual(x86[0]["pc"], 0xffffffff9c47e9c0)
        self.assertEqual(x86[0]["sp"], 0xfffffe3c001c68e0)
        self.assertEqual(x86[0]["cr2"], 0xfffffe3c001c4ff8)
        self.assertEqual(x86[1]["halted"], 1)
        riscv = guest_hang.parse_cpus("riscv", RISCV_REGISTERS)
        self.assertEqual(riscv[0]["pc"], 0xffffffff80a6944c)
        self.assertEqual(riscv[0]["ra"], 0xffffffff80a6b0e0)
        self.assertEqual(riscv[0]["sp"], 0xff20000000013ec0)
        self.assertEqual(riscv[0]["cause"], 0x8000000000000005)

    def test_names_kernel_text_through_the_kaslr_offset(self):
        symbols = guest_hang.Symbols(self.symbols)
        self.assertEqual(symbols.name(0xffffffff81c7e9c0 + KASLR, KASLR),
                         "find_bug+0x20")
        self.assertIsNone(symbols.name(0xffffffff81e00010 + KASLR, KASLR),
                          "data is not text")
        self.assertIsNone(symbols.name(0xffffffff81c7e9c0, None),
                          "no offset, no name")
        console = ["[    0.0] Linux", f"# okptest: _stext {0xffffffff81000000 + KASLR:#x}"]
        self.assertEqual(guest_hang.kaslr_offset(console, symbols), KASLR)
        self.assertIsNone(guest_hang.kaslr_offset(["TAP version 13"], symbols))

    def test_reports_where_each_cpu_is_and_what_its_stack_holds(self):
        stack = ("fffffe3c001c68e0: 0x0000000000000000 0x%016x\n"
                 "fffffe3c001c68f0: 0x%016x 0xffff888003c41000\n" %
                 (0xffffffff81d03d0b + KASLR, 0xffffffff81d03d0b + KASLR))
        monitor = FakeMonitor(X86_REGISTERS, {0: stack})
        console = [f"# okptest: _stext {0xffffffff81000000 + KASLR:#x}"]
        serial = io.BytesIO()
        drained = []
        lines, summary = guest_hang.diagnose(
            "x86", monitor, serial, self.symbols, console,
            lambda seconds: drained.append(seconds))
        self.assertIn("CPU 0 at 0xffffffff9c47e9c0 find_bug+0x20", summary)
        self.assertIn("cr2 0xfffffe3c001c4ff8", summary)
        # One name for a run of the same word; the echo is not a word.
        self.assertIn("on its stack: irqentry_nmi_enter+0x2b;", summary)
        self.assertIn("CPU 1 at 0xffffffff9c601220", summary)
        self.assertIn("halted", summary)
        self.assertIn(["cpu 0", "x/256xg 0xfffffe3c001c68e0"], monitor.sent)
        # A break, then each key, and the console drained after each.
        self.assertEqual(serial.getvalue(), b"\x01bl\x01bw\x01bt")
        self.assertEqual(len(drained), 3)
        self.assertIn("the kernel did not answer SysRq", summary)
        self.assertTrue(all(line.startswith("# hang: ") for line in lines))

    def test_says_when_the_kernel_answered_sysrq(self):
        console = []

        def drain(seconds):
            console.append("[   35.2] sysrq: Show backtrace of all active CPUs")
        _, summary = guest_hang.diagnose(
            "riscv", FakeMonitor(RISCV_REGISTERS, {}), io.BytesIO(), None,
            console, drain)
        self.assertIn("CPU 0 at 0xffffffff80a6944c", summary)
        self.assertIn("scause 0x8000000000000005", summary)
        self.assertIn("the kernel answered SysRq", summary)


if __name__ == "__main__":
    unittest.main()
