# SPDX-License-Identifier: GPL-2.0
"""What a hung guest was doing, taken before the runner gives up on it.

A guest that stops printing (or outlives its timeout) is killed, and
before that tools/guest_run.py asks two witnesses, so that the next hang
names itself:

- the kernel, through the serial console's magic SysRq (a break, then a
  key: the runner boots every guest with sysrq_always_enabled): "l" the
  backtrace of every active CPU, "w" the blocked tasks, "t" every task.
  That needs a CPU that still takes interrupts.
- QEMU's monitor, which needs nothing of the guest: "info registers -a"
  for each CPU's pc and stack pointer (x86 also CR2, the last faulting
  address), and the words on top of each CPU's stack; those that point
  into kernel text are named through the guest kernel's symbols (a
  "symbol type name" file: System.map, or the kallsyms dump
  tools/okprobe_build.py makes), moved by the KASLR offset that okptest
  prints at start ("# okptest: _stext 0x...").

The result is a few "# hang: " lines for the console log and one summary
for the runner's failure line. Issue 35's hang, found by hand this way:
both CPUs in a double-fault loop, their stacks
irqentry_nmi_enter <- exc_int3 <- asm_exc_int3 <- exc_invalid_op.
"""

import bisect
import re
import time

# What okptest prints of the running kernel's text address.
STEXT_LINE = re.compile(r"^# okptest: _stext 0x([0-9a-f]+)")
# A break on the serial line: QEMU's mux chardev ("-serial mon:stdio")
# sends one for Ctrl-a b.
SERIAL_BREAK = b"\x01b"
SYSRQ_KEYS = (("l", 4), ("w", 3), ("t", 6))  # key, seconds to let it print
STACK_WORDS = 256
SHOWN_FRAMES = 12
ESCAPES = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]")


class Symbols:
    """Kernel text symbols from a "address type name" file."""

    def __init__(self, path):
        self.addresses, self.names = [], []
        self.stext = self.etext = None
        if not path:
            return
        try:
            with open(path) as f:
                rows = [line.split() for line in f]
        except OSError:
            return
        entries = []
        for row in rows:
            if len(row) < 3:
                continue
            try:
                address = int(row[0], 16)
            except ValueError:
                continue
            if row[2] == "_stext":
                self.stext = address
            elif row[2] == "_etext":
                self.etext = address
            if row[1] in "tTwW":
                entries.append((address, row[2]))
        entries.sort()
        self.addresses = [a for a, _ in entries]
        self.names = [n for _, n in entries]

    def name(self, address, offset):
        """"symbol+0xoff" for a running-kernel address, or None."""
        if self.stext is None or offset is None:
            return None
        linked = address - offset
        if not self.stext <= linked < (self.etext or 1 << 64):
            return None
        i = bisect.bisect_right(self.addresses, linked) - 1
        if i < 0:
            return None
        return f"{self.names[i]}+{linked - self.addresses[i]:#x}"


def kaslr_offset(console_lines, symbols):
    for line in console_lines:
        m = STEXT_LINE.match(line)
        if m and symbols.stext is not None:
            return int(m.group(1), 16) - symbols.stext
    return None


def parse_cpus(arch, text):
    """{cpu: {"pc", "sp", "cr2" or "cause", "halted"}} from
    "info registers -a"."""
    cpus, current = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*CPU#(\d+)", line)
        if m:
            current = cpus.setdefault(int(m.group(1)), {})
            continue
        if current is None:
            continue
        if arch == "x86":
            fields = dict(re.findall(r"\b(RIP|RSP|CR2|HLT)=([0-9a-f]+)",
                                     line))
            for key, name in (("RIP", "pc"), ("RSP", "sp"), ("CR2", "cr2"),
                              ("HLT", "halted")):
                if key in fields:
                    current[name] = int(fields[key], 16)
        else:
            for key, name in (("pc", "pc"), ("x2/sp", "sp"), ("x1/ra", "ra"),
                              ("scause", "cause"), ("sepc", "sepc")):
                m = re.search(rf"(?:^|\s){re.escape(key)}\s+([0-9a-f]+)",
                              line)
                if m:
                    current[name] = int(m.group(1), 16)
    return cpus


def stack_words(text):
    """The 64-bit words of an "x/Nxg" dump, in address order."""
    words = []
    for raw in text.encode().splitlines():
        line = ESCAPES.sub(b"", raw).decode(errors="replace")
        line = line[line.rfind("\r") + 1:]
        m = re.match(r"\s*[0-9a-f]{16}:((?:\s+0x[0-9a-f]+)+)\s*$", line)
        if m:
            words += [int(w, 16) for w in m.group(1).split()]
    return words


def monitor_report(arch, monitor, symbols, offset):
    """Lines naming where each CPU is and what its stack holds."""
    lines = []
    try:
        registers = monitor.command("info registers -a", timeout=20)
    except OSError as error:
        return [f"the monitor did not answer: {error}"]
    cpus = parse_cpus(arch, registers)

    def named(address):
        name = symbols.name(address, offset)
        return f"{address:#x} {name}" if name else f"{address:#x}"

    for cpu, regs in sorted(cpus.items()):
        if "pc" not in regs:
            continue
        facts = [f"CPU {cpu} at {named(regs['pc'])}"]
        if "ra" in regs:
            facts.append(f"ra {named(regs['ra'])}")
        if "cr2" in regs and regs["cr2"]:
            facts.append(f"cr2 {regs['cr2']:#x}")
        if "cause" in regs:
            facts.append(f"scause {regs['cause']:#x}")
        if regs.get("halted"):
            facts.append("halted")
        frames = []
        if "sp" in regs:
            try:
                words = stack_words(monitor.commands(
                    [f"cpu {cpu}", f"x/{STACK_WORDS}xg {regs['sp']:#x}"],
                    timeout=20)[-1])
            except OSError:
                words = []
            for word in words:
                name = symbols.name(word, offset)
                if name and (not frames or frames[-1] != name):
                    frames.append(name)
        line = ", ".join(facts)
        if frames:
            line += "; on its stack: " + " <- ".join(frames[:SHOWN_FRAMES])
        lines.append(line)
    return lines or ["no CPU in the monitor's registers"]


def sysrq(qemu_stdin, key):
    try:
        qemu_stdin.write(SERIAL_BREAK)
        qemu_stdin.flush()
        time.sleep(0.2)
        qemu_stdin.write(key.encode())
        qemu_stdin.flush()
        return True
    except OSError:
        return False


def diagnose(arch, monitor, qemu_stdin, symbols_path, console_lines, drain):
    """Ask the monitor, then the kernel (SysRq; drain(seconds) keeps
    reading the console meanwhile). Returns (lines for the log, one-line
    summary)."""
    symbols = Symbols(symbols_path)
    offset = kaslr_offset(console_lines, symbols)
    report = monitor_report(arch, monitor, symbols, offset) if monitor \
        else ["no QEMU monitor"]
    before = len(console_lines)
    for key, seconds in SYSRQ_KEYS:
        if qemu_stdin is None or not sysrq(qemu_stdin, key):
            break
        drain(seconds)
    answered = any("sysrq" in line.lower()
                   for line in console_lines[before:])
    report.append("the kernel answered SysRq l, w, t (above)" if answered
                  else "the kernel did not answer SysRq: no CPU takes "
                  "interrupts")
    return [f"# hang: {line}" for line in report], "; ".join(report)
