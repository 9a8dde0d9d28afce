# SPDX-License-Identifier: GPL-2.0
"""make bench's scale tables, for tools/bench: the scale table (the first
100, 1,000 and all sites of the sample registered, optimized and
unregistered by each way of registering), the one more probe after each
okprobe pass (its optimizer pass, which must stay flat across N), where a
registration's time goes (okprobe/writer_steps), build/bench/scale.svg
drawn with gnuplot, and the coverage table of the whole sample; also
--entries' sample of function entries. tools/bench parses the guest's
console into the rows these print."""

import os
import shutil
import subprocess
import textwrap

import okprobe_build as build

SCALE_SVG = os.path.join("bench", "scale.svg")

SCALE_KINDS = [("kprobe", "kernel kprobes, one by one"),
               ("okprobe", "okprobe, one by one"),
               ("okprobe-many", "okprobe_register_many()")]


def print_scale(scale, one_more):
    print("okprobe bench: scale, probes on the first N sites of the sample, "
          "in one boot")
    print()
    header = f"  {'N':>6} {'':28} {'registered':>10} {'optimized':>9} " \
             f"{'register s':>10} {'+ optimizer s':>13} " \
             f"{'sysctl 0 s':>10} {'sysctl 1 ms':>11} {'unregister s':>12}"
    print(header)
    for row in scale:
        label = dict(SCALE_KINDS).get(row["kind"], row["kind"])
        done = "" if row["done"] == "1" else " (optimizer not done)"
        requeue = row.get("requeue_ms", "0") if row["kind"] != "kprobe" \
            else "-"
        print(f"  {row['size']:>6} {label:28} {row['registered']:>10} "
              f"{row['optimized']:>9} {int(row['register_ms']) / 1000:>10.2f} "
              f"{int(row['optimized_ms']) / 1000:>13.2f} "
              f"{int(row['unoptimize_ms']) / 1000:>10.2f} {requeue:>11} "
              f"{int(row['unregister_ms']) / 1000:>12.2f}{done}")
    print()
    for line in textwrap.wrap(
            "register s: from the first registration to the last one's "
            "return; + optimizer s: from the first registration until no "
            "probe waits for its jump (the kernel: every [OPTIMIZED] kprobe "
            "has its jmp in the text); sysctl 0 s: the write of 0 to the "
            "optimization sysctl, which returns once every jump is out "
            "(the kernel's does too); sysctl 1 ms: okprobe's write of 1 "
            "with every site unoptimized, which only queues them for the "
            "optimizer; unregister s: one "
            "unregister_kprobes() / okprobe_unregister_many() of all, after "
            "optimization was turned off. okprobe_register_many() takes the "
            "sites the one-by-one pass took (it is all or nothing).", 76):
        print(f"  {line}")
    print()
    if one_more:
        print_one_more(one_more)


def print_one_more(one_more):
    print("okprobe bench: scale, one more probe after each okprobe pass, "
          "microseconds")
    print()
    print(f"  {'N':>6} {'':28} {'optimized':>9} {'unregister':>10} "
          f"{'register':>9} {'optimizer pass':>14} {'jump writes':>11} "
          f"{'rest':>6} {'passes':>6}")
    for row in one_more:
        label = dict(SCALE_KINDS).get(row["kind"], row["kind"])
        done = "" if row["done"] == "1" else " (not optimized)"
        us = {key: int(row[key]) / 1000 for key in
              ("unregister_ns", "register_ns", "pass_ns", "optimize_ns")}
        print(f"  {row['size']:>6} {label:28} {row['optimized']:>9} "
              f"{us['unregister_ns']:>10.0f} {us['register_ns']:>9.0f} "
              f"{us['pass_ns']:>14.0f} {us['optimize_ns']:>11.0f} "
              f"{us['pass_ns'] - us['optimize_ns']:>6.0f} "
              f"{row['passes']:>6}{done}")
    print()
    for line in textwrap.wrap(
            "With the pass's N probes registered and optimized, the first of "
            "them that is optimized (the same site for every N) "
            "unregistered and registered again: unregister, register: "
            "okprobe_unregister() (its grace periods included) and "
            "okprobe_register() of it, each until it returned; optimizer "
            "pass: the writer's time in the optimizer's pass that puts its "
            "jump in (okprobe/writer_steps optimizer_begin + "
            "optimizer_finish, the grace period between them not counted); "
            "jump writes: its optimize step, within the pass (text_poke "
            "and the CPUs' syncs, or stop_machine: under a busy host the "
            "noisy part); rest: the pass less its jump writes, where a walk "
            "over every site would show; passes: how many the optimizer "
            "ran meanwhile (an empty one only begins). Flat across N: "
            "a pass touches only the sites queued for it, not the "
            "optimized ones.", 76):
        print(f"  {line}")
    print()


# debugfs okprobe/writer_steps, in the order the table shows them.
STEP_COLUMNS = [("proof", "proof"), ("claim", "claim"),
                ("recheck", "recheck"), ("plan", "plan"), ("arm", "arm"),
                ("arm_batch", "arm batch"), ("detour", "detour")]


def print_steps(steps):
    print("okprobe bench: where a registration's time goes, "
          "microseconds per registered probe")
    print()
    header = f"  {'N':>6} {'':28} " + \
        " ".join(f"{title:>9}" for _, title in STEP_COLUMNS) + \
        f" {'other':>9} {'register':>9} {'optimize':>9}"
    print(header)
    for row in steps:
        label = dict(SCALE_KINDS).get(row["kind"], row["kind"])
        count = max(int(row["registered"]), 1)

        def us(step):
            return int(row.get(step, "0")) / 1000 / count
        parts = [us(step) for step, _ in STEP_COLUMNS]
        total = us("register")
        # The arm batch is written after the registrations' own time.
        other = total - sum(parts) + us("arm_batch")
        print(f"  {row['size']:>6} {label:28} " +
              " ".join(f"{p:>9.1f}" for p in parts) +
              f" {other:>9.1f} {total + us('arm_batch'):>9.1f}"
              f" {us('optimize'):>9.1f}")
    print()
    for line in textwrap.wrap(
            "From okprobe/writer_steps during each pass's registrations and "
            "its optimizer. proof: the checks before the function is "
            "claimed (the instruction-boundary walk among them); claim: "
            "shutting kernel kprobes out of the function; recheck: the "
            "proof again on the claimed function; plan: whether a jump may "
            "replace the breakpoint (the whole function and its pieces "
            "decoded); arm: the breakpoint written and the CPUs synced (in "
            "register_many only noted); arm batch: register_many's one "
            "write of all of them; detour: building the detour; other: "
            "the rest of "
            "register_probe (the site, its slot, the indexes); register: "
            "all of it; optimize: the optimizer's jump writes.", 76):
        print(f"  {line}")
    print()


def plot_two_panels(svg, series, title, xlabel, ylabel, panels):
    """An SVG of two log-log panels side by side, drawn by gnuplot:
    series is [(label, [(x, left y, right y)])], one line each in both
    panels; panels the left and right panels' titles. False when there is
    no gnuplot."""
    if not ensure_gnuplot():
        return False
    os.makedirs(os.path.dirname(svg), exist_ok=True)
    data = os.path.splitext(svg)[0] + ".dat"
    with open(data, "w") as out:
        for label, points in series:
            out.write(f'"{label}"\n')
            for x, left, right in points:
                out.write(f"{x} {left} {right}\n")
            out.write("\n\n")
    last = len(series) - 1
    script = f"""set terminal svg size 900,420 dynamic font "sans,11"
set output "{svg}"
set multiplot layout 1,2 title "{title}"
set logscale xy
set xlabel "{xlabel}"
set ylabel "{ylabel}"
set key top left
set grid
set title "{panels[0]}"
plot for [i=0:{last}] "{data}" index i using 1:2 with linespoints title columnheader(1)
set title "{panels[1]}"
plot for [i=0:{last}] "{data}" index i using 1:3 with linespoints title columnheader(1)
unset multiplot
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    return True


def plot_scale(scale, arch):
    """build/bench/scale.svg: register-and-optimize and unregister seconds
    against N, log-log, one line per way of registering."""
    svg = os.path.join(build.BUILD, SCALE_SVG)
    series = [(label, [(row["size"],
                        max(int(row["optimized_ms"]), 1) / 1000,
                        max(int(row["unregister_ms"]), 1) / 1000)
                       for row in scale if row["kind"] == kind])
              for kind, label in SCALE_KINDS]
    if not plot_two_panels(svg, series, f"okprobe against kernel kprobes, "
                           f"{arch['target']} guest (QEMU TCG), one boot",
                           "probes", "seconds",
                           ("register and optimize",
                            "unregister (one batch)")):
        print("bench: no gnuplot: build/bench/scale.svg not drawn")
        return
    print(f"bench: plot in {os.path.relpath(svg, build.ROOT)}")


def ensure_gnuplot():
    """gnuplot from Debian's gnuplot-nox, installed as tools/setup-host
    installs packages."""
    if shutil.which("gnuplot"):
        return True
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(sudo + ["apt-get", "install", "-y", "-qq",
                           "--no-install-recommends", "gnuplot-nox"],
                   env=env, stdout=subprocess.DEVNULL)
    return shutil.which("gnuplot") is not None


def print_coverage(coverage):
    print("okprobe bench: coverage of kernel instructions, kernel kprobes "
          "against okprobe")
    print()
    for line in coverage:
        print(f"  {line}")
    print()
    print("  Each site is registered with kernel kprobes (their sysctl 1), "
          "the optimizer")
    print("  awaited, counted, optimization turned off, all unregistered; "
          "then the same")
    print("  with okprobe (its sysctl 1). optimized: kprobes/list "
          "[OPTIMIZED] once the jmp")
    print("  is in the text; okprobe/jumps \"optimized\". \"optimizer done\": "
          "no [OPTIMIZED]")
    print("  kprobe without its jmp, no okprobe site \"waiting\" (the jumps "
          "in the text polled")
    print("  every 20 ms, the list read once they settle).")
    print()


def sample_entries(t, count):
    """count function entries ("symbol 0x0"), evenly spread over the
    guest kernel's functions whose entry is an ftrace call site (their
    address, or past an endbr64), each name used once in kallsyms: what
    the scale table then times is registering entry probes. Returns the
    path of the file."""
    symbols = build.kernel_symbols(t)
    sites_file = os.path.join(os.path.dirname(symbols),
                              "ftrace-sites-nokaslr.txt")
    with open(sites_file) as f:
        call_sites = {int(line, 16) for line in f if line.strip()}
    functions, uses = [], {}
    with open(symbols) as f:
        lines = [line.split() for line in f]
    for parts in lines:
        if len(parts) == 3 and parts[1] in "tT":
            uses[parts[2]] = uses.get(parts[2], 0) + 1
    for parts in lines:
        if len(parts) != 3 or parts[1] not in "tT":
            continue
        name, address = parts[2], int(parts[0], 16)
        if name.startswith(("__pfx_", "__cfi_")) or "." in name or \
                uses[name] != 1:
            continue
        if address in call_sites or address + 4 in call_sites:
            functions.append(name)
    stride = max(1, len(functions) // max(1, count))
    chosen = functions[stride // 2::stride][:count]
    path = os.path.join(t.build_dir, "bench-sites.txt")
    with open(path, "w") as f:
        for name in chosen:
            f.write(f"{name} 0x0\n")
    return path
