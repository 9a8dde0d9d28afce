# SPDX-License-Identifier: GPL-2.0
"""make bench's okprobe-cover tables, for tools/bench (issue 41): what
basic-block coverage costs. The arm/disarm table (okprobe/cover's reach
mode over about 1,000, 10,000 and 50,000 blocks of core-kernel functions,
against the kernel's kprobes registered at the same blocks), where
okprobe's arm and clear time goes (okprobe/writer_steps), the workload
table (a workload with no probes, with reach and with counts coverage,
interleaved, medians and slowdowns), and build/bench/cover.svg drawn with
gnuplot. The guest's side is selftests/okptest_bench_cover.c and
okptest_bench_cover_workload.c; tools/bench hands over the console."""

import argparse
import os
import statistics
import textwrap

import okprobe_build as build
from bench_scale import plot_two_panels

ARM_PREFIX = "# cover-arm: "
STEPS_PREFIX = "# cover-steps: "
DISCOVERY_PREFIX = "# cover-discovery: "
NOTE_PREFIX = "# cover-note: "
WORKLOAD_PREFIX = "# cover-workload: "
WORKLOAD_SET_PREFIX = "# cover-workload-set: "
COVER_SVG = os.path.join("bench", "cover.svg")

# What okptest takes (selftests/okptest_bench_cover.c): at most
# COVER_MAX_SIZES sizes of at most COVER_MAX_SIZE blocks each, a limit of
# 1 s to a day for the kernel's pass at each, 1 to 51 workload rounds.
COVER_MAX_SIZE = 60000
COVER_MAX_SIZES = 8
COVER_KPROBE_MAX_SECONDS = 86400
COVER_MAX_ROUNDS = 51
# The bench test's timeout (okptest's bench_timeout()): BENCH_SECONDS for
# the steps but the okprobe-cover ones, and for those the discovery, the
# kernel's limit and COVER_SIZE_SECONDS at each size, and
# COVER_ROUND_SECONDS a workload round; okptest.c and
# okptest_bench_cover.c have the same numbers.
BENCH_SECONDS = 4 * 1200
COVER_DISCOVERY_SECONDS = 600
COVER_SIZE_SECONDS = 300
COVER_ROUND_SECONDS = 300


def bench_seconds(sizes, kprobe_limit, rounds):
    """The guest's bench test's timeout for these okprobe-cover settings:
    8 * 1200 s with the defaults."""
    return BENCH_SECONDS + COVER_DISCOVERY_SECONDS + \
        len(sizes) * (kprobe_limit + COVER_SIZE_SECONDS) + \
        rounds * COVER_ROUND_SECONDS


def sizes_arg(text):
    """--cover-sizes: 1 to COVER_MAX_SIZES ascending sizes in blocks, each
    1 to COVER_MAX_SIZE, as okptest's cover_parse_sizes() takes them."""
    parts = text.split(",")
    sizes = [int(part) for part in parts
             if part.isascii() and part.isdigit()]
    if len(sizes) != len(parts) or not 1 <= len(sizes) <= COVER_MAX_SIZES \
            or any(not 1 <= size <= COVER_MAX_SIZE for size in sizes) \
            or any(a >= b for a, b in zip(sizes, sizes[1:])):
        raise argparse.ArgumentTypeError(
            f"{text!r}: 1 to {COVER_MAX_SIZES} comma-separated sizes in "
            f"blocks, ascending, each 1 to {COVER_MAX_SIZE}")
    return sizes


def whole_number_arg(least, most, what):
    """An argparse type: a whole number from least to most."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not least <= value <= most:
            raise argparse.ArgumentTypeError(
                f"{text!r}: {what}, {least} to {most}")
        return value
    return parse


kprobe_limit_arg = whole_number_arg(
    1, COVER_KPROBE_MAX_SECONDS,
    "seconds (0 would be no limit: hours at 50,000 blocks)")
rounds_arg = whole_number_arg(1, COVER_MAX_ROUNDS, "rounds")


def fields(text):
    """The key=value fields of a line (okptest's "# PREFIX: k=v ..."
    lines; tools/bench's too), words without "=" left out."""
    return dict(field.split("=", 1) for field in text.split() if "=" in field)


def parse(console):
    """The console's okprobe-cover lines, by kind."""
    found = {prefix: [] for prefix in (ARM_PREFIX, STEPS_PREFIX,
                                       DISCOVERY_PREFIX, NOTE_PREFIX,
                                       WORKLOAD_PREFIX, WORKLOAD_SET_PREFIX)}
    for line in console.splitlines():
        for prefix, rows in found.items():
            if line.startswith(prefix):
                text = line[len(prefix):]
                rows.append(text if prefix == NOTE_PREFIX else fields(text))
    return found


def ms(ns):
    return int(ns) / 1e6


def ratio(numerator, denominator):
    """numerator / denominator to a decimal, "-" where either is missing
    or the denominator is 0."""
    if numerator is None or not denominator:
        return "-"
    return f"{numerator / denominator:.1f}"


def per_block(total, blocks):
    """total / blocks, or None for no blocks."""
    return total / blocks if blocks else None


def print_cover(console, kernel):
    """Every okprobe-cover table the console has lines for."""
    found = parse(console)
    if found[ARM_PREFIX]:
        print_arm(found, kernel)
        plot_arm(found[ARM_PREFIX], kernel)
    if found[STEPS_PREFIX]:
        print_steps(found[STEPS_PREFIX])
    if found[WORKLOAD_PREFIX]:
        print_workload(found[WORKLOAD_PREFIX], found[WORKLOAD_SET_PREFIX])


def print_arm(found, kernel):
    rows = found[ARM_PREFIX]
    print("okprobe bench: okprobe-cover's reach mode against the kernel's "
          f"kprobes on the same blocks ({kernel})")
    for discovery in found[DISCOVERY_PREFIX]:
        text = (
            "functions: core-kernel functions of /proc/kallsyms "
            f"({discovery['candidates']}) in a fixed order spread over the "
            "whole text, until their blocks reach each size; of the "
            f"{discovery['covered']} the discovery covered, "
            f"{discovery['ran']} ran while it watched (the guest idle, a "
            "kernel kprobe registered, hit and unregistered after each "
            f"write) and are left out, {discovery['refused_functions']} "
            "were refused whole.")
        for line in textwrap.wrap(text, 76, subsequent_indent="  "):
            print(f"  {line}")
    for note in found[NOTE_PREFIX]:
        print(f"  note: {note}")
    print()
    print(f"  {'':26} {'okprobe-cover reach':>19}   "
          f"{'kernel kprobes, one by one':>42}   "
          f"{'kernel/okprobe, a block':>23}")
    print(f"  {'blocks':>7} {'functions':>9} {'probed':>7} {'arm ms':>9} "
          f"{'clear ms':>9}   {'tried':>7} {'registered':>10} "
          f"{'register ms':>11} {'unregister ms':>13}   {'register':>10} "
          f"{'unregister':>12}")
    stopped = False
    for row in rows:
        arm, clear = ms(row["okprobe_arm_ns"]), ms(row["okprobe_clear_ns"])
        register = ms(row["kprobe_register_ns"])
        unregister = ms(row["kprobe_unregister_ns"])
        probed = int(row["probed"])
        tried = int(row.get("kprobe_sites", probed))
        registered = int(row["kprobe_registered"])
        mark = "*" if tried < probed else ""
        stopped |= tried < probed
        # A block each; no ratio where a pass probed or registered none.
        registering = ratio(per_block(register, tried),
                            per_block(arm, probed))
        unregistering = ratio(per_block(unregister, registered),
                              per_block(clear, probed))
        print(f"  {int(row['blocks']):>7} {row['functions']:>9} "
              f"{probed:>7} {arm:>9.1f} {clear:>9.1f}   "
              f"{str(tried) + mark:>7} {registered:>10} {register:>11.1f} "
              f"{unregister:>13.1f}   "
              f"{registering:>10} {unregistering:>12}")
    print()
    if stopped:
        print("  * the kernel's pass stopped at its time limit "
              "(tools/bench --cover-kprobe-limit)")
        print("    after trying that many of the probed blocks; its "
              "registrations slow down as")
        print("    it goes, so its ratio is a floor.")
        print()
    print("  refused (not probed, so not in the times):")
    for row in rows:
        print(f"  {int(row['blocks']):>7} blocks: okprobe "
              f"{row['okprobe_refused'].replace(',', ', ')}; the kernel's "
              f"kprobes, of okprobe's {row['probed']}: "
              f"{row['kprobe_refused'].replace(',', ', ')}")
    print()
    notes = (
        "blocks: the blocks okprobe/cover lists for the functions (refused "
        "ones too); probed: those it put a probe on, the addresses the "
        "kernel's kprobes then get. arm ms: okprobe's writes of "
        "\"reach 0xSTART ...\" to okprobe/cover, up to a page each "
        f"({rows[-1]['writes']} for the last row), each write one batch "
        "(every block of its functions decoded, registered, and their "
        "breakpoints written at once); clear ms: its one write of clear "
        "(one batch, one grace period). register ms: okprobe_bench.ko's "
        "register_kprobe() at each probed block, one by one, with a "
        "counting pre_handler and the kernel's debug.kprobes-optimization "
        "at 0 (reach mode's probes are breakpoints too; the kernel has "
        "no batch registration); unregister ms: one unregister_kprobes() "
        "of all it registered. kernel/okprobe, a block: the kernel's time "
        "per block over okprobe's. "
        "Every block's text is checked restored after each pass; "
        "plotted in build/bench/cover.svg.")
    for line in textwrap.wrap(notes, 76):
        print(f"  {line}")
    print()


# okprobe/writer_steps in the order the table shows them.
ARM_STEPS = [("proof", "proof"), ("claim", "claim"), ("recheck", "recheck"),
             ("plan", "plan"), ("arm", "arm"), ("arm_batch", "arm batch"),
             ("unregister", "unregister")]


def print_steps(rows):
    print("okprobe bench: where okprobe-cover's arm and clear time goes, "
          "microseconds per probed block")
    print()
    print(f"  {'blocks':>7} {'phase':6} {'write':>7} " +
          " ".join(f"{title:>10}" for _, title in ARM_STEPS) +
          f" {'other core':>10} {'optimizer':>10} {'rest':>8}")
    for row in rows:
        count = max(int(row["probed"]), 1)

        def us(step):
            return int(row.get(step, "0")) / 1000 / count
        write = us("write_ns")
        parts = [us(step) for step, _ in ARM_STEPS]
        # register covers proof ... arm (and a detour, never built here).
        core_rest = us("register") - sum(parts[:5]) - us("detour")
        # The optimizer's passes meanwhile (a kworker's): they take the
        # probe mutex from the writes only while the writes want it.
        optimizer = us("optimizer_begin") + us("optimizer_finish")
        rest = write - us("register") - us("arm_batch") - us("unregister")
        print(f"  {int(row['blocks']):>7} {row['phase']:6} {write:>7.1f} " +
              " ".join(f"{p:>10.1f}" for p in parts) +
              f" {core_rest:>10.1f} {optimizer:>10.1f} {rest:>8.1f}")
    print()
    for line in textwrap.wrap(
            "From okprobe/writer_steps around the arm writes and around the "
            "clear, over the probed blocks. write: the whole of the writes; "
            "proof, claim, recheck, plan, arm: okprobe_register's steps for "
            "each block (arm only notes the breakpoint in a batch); arm "
            "batch: the batch's one text write of all its breakpoints; "
            "unregister: okprobe_unregister_many() (arm: a function's +0 "
            "block that another block also starts, registered twice and "
            "dropped; clear: all of them, with the grace period); other "
            "core: the rest of the registrations (the site, its slot, the "
            "indexes); optimizer: the optimizer's passes between the two "
            "readings (optimizer_begin and optimizer_finish; reach probes "
            "never get a jump), which run in a kworker beside the writes "
            "and delay them only while holding the probe mutex they want; "
            "rest: the writes' time outside the core's steps: "
            "okprobe/cover's parsing, decoding each function into its "
            "blocks and allocating them, and any wait for the mutex "
            "meanwhile (for the optimizer, at most its column; the reach "
            "probes' own disarm work).", 76):
        print(f"  {line}")
    print()


def print_workload(rows, about):
    modes = [("none", "no probes"), ("reach", "reach coverage"),
             ("counts", "counts coverage (-c)")]
    by_mode = {mode: [row for row in rows if row["mode"] == mode]
               for mode, _ in modes}
    none = [int(row["ms"]) for row in by_mode["none"]]
    rounds = {int(row["round"]): row for row in by_mode["none"]}
    facts = about[0] if about else {}
    first = by_mode["reach"][0] if by_mode["reach"] else rows[0]
    print("okprobe bench: what coverage costs a workload, in one boot")
    print(f"  workload: Python reading 64 KiB of each of the "
          f"{rows[0]['files']} files of /usr on Debian's")
    print("            userland disk, the page cache dropped before each run")
    print(f"  covered:  every function of {facts.get('modules', '?')}")
    print(f"            ({first['functions']} functions, {first['blocks']} "
          f"blocks, {first['probed']} probed)")
    print(f"  rounds:   {len(none)}, each none, reach and counts, the "
          "order rotated each round;")
    print("            medians over the rounds")
    print()
    print(f"  {'':22} {'run ms':>8} {'vs none':>8} {'per round':>9} "
          f"{'arm ms':>7} {'reached':>8}")
    for mode, label in modes:
        runs = by_mode[mode]
        if not runs:
            continue
        median = statistics.median(int(row["ms"]) for row in runs)
        per_round = [int(row["ms"]) / int(rounds[int(row["round"])]["ms"])
                     for row in runs if int(row["round"]) in rounds]
        covered = mode != "none"
        arm = statistics.median(int(row["arm_ms"]) for row in runs)
        reached = statistics.median(int(row["reached"]) for row in runs)
        print(f"  {label:22} {median:>8.0f} "
              f"{median / statistics.median(none):>8.2f} "
              f"{statistics.median(per_round):>9.2f} "
              f"{arm if covered else '-':>7} "
              f"{reached if covered else '-':>8}")
    print()
    print_workload_states(by_mode)
    for mode, label in modes:
        times = " ".join(row["ms"] for row in by_mode[mode])
        print(f"  {mode:7} runs, ms: {times}")
    print()
    for line in textwrap.wrap(
            "run ms: the workload's wall time in the guest (Python's start "
            "included), arming not included; vs none: the median over no "
            "probes' median; per round: the median of each round's run "
            "over the same round's run with no probes. arm ms: the writes "
            "to okprobe/cover, and for counts the wait until every block "
            "that can have a jump has it. reached: blocks hit during the "
            "run. Every run read as many files as the others, and every "
            "covered function's text is checked as before after each "
            "clear.", 76):
        print(f"  {line}")
    print()


def print_workload_states(by_mode):
    """How each mode probed the blocks, and the hits counts mode saw in
    each state (its median run): what its slowdown is made of."""
    reach, counts = by_mode["reach"], by_mode["counts"]
    if not counts:
        return
    middle = sorted(counts, key=lambda row: int(row["ms"]))[len(counts) // 2]
    print(f"  {'how a block is probed':44} {'reach':>7} {'counts':>7} "
          f"{'hits in counts':>15}")
    states = ("optimized", "breakpoint", "ftrace")
    for state, what in zip(states, (
            "optimized (a counting detour)",
            "breakpoint (a trap at each hit)",
            "ftrace (its entry, ftrace's call)")):
        in_reach = reach[0][state] if reach else "-"
        print(f"  {what:44} {in_reach:>7} {middle[state]:>7} "
              f"{int(middle[state + '_hits']):>15,}")

    print(f"  {'reached, taken out at its first hit':44} "
          f"{reach[0]['disabled'] if reach else '-':>7} "
          f"{middle['disabled']:>7} {'-':>15}")
    print()
    for line in textwrap.wrap(
            "After the run (the first reach and the median counts run): "
            "reach's breakpoints, at a block or through ftrace at an entry, "
            "are taken out at their first hit, so what ran once costs "
            "nothing more; counts keeps every probe, and its hits are each "
            "state's in that run.", 76):
        print(f"  {line}")
    print()


def plot_arm(rows, kernel):
    """build/bench/cover.svg: arm and disarm milliseconds against blocks,
    log-log, okprobe-cover against the kernel's kprobes."""
    svg = os.path.join(build.BUILD, COVER_SVG)
    # The kernel's pass may have stopped at its limit: its x is the
    # blocks it tried.
    series = [(title, [(row.get(blocks, row["probed"]),
                        max(ms(row[arm]), 0.001),
                        max(ms(row[disarm]), 0.001)) for row in rows])
              for title, blocks, arm, disarm in (
                  ("okprobe-cover reach", "probed", "okprobe_arm_ns",
                   "okprobe_clear_ns"),
                  ("kernel kprobes", "kprobe_sites", "kprobe_register_ns",
                   "kprobe_unregister_ns"))]
    if not plot_two_panels(svg, series, "okprobe-cover against kernel "
                           f"kprobes on the same blocks, {kernel} guest "
                           "(QEMU TCG)", "probed blocks", "milliseconds",
                           ("arm (okprobe: batches; kprobes: one by one)",
                            "disarm (one batch each)")):
        print("bench: no gnuplot: build/bench/cover.svg not drawn")
        return
    print(f"bench: plot in {os.path.relpath(svg, build.ROOT)}")
    print()
