// SPDX-License-Identifier: GPL-2.0
// OKP_HANDLER_PATH marks a function a probe hit runs (the breakpoint trap,
// the post trap, a detour's call): it goes into .kprobes.text, which the
// module loader enters into the kernel's kprobe blacklist, as __kprobes
// does in C. A kprobe there would re-enter the trap from inside okprobe's
// handler. The C++ core is built without ftrace's flags, so it is notrace
// already. tools/check-handler-paths checks both over everything reachable
// from the handler entry points of the built module. (Host builds get the
// same section: an executable's linker places it after .text.)
#pragma once

#define OKP_HANDLER_PATH [[gnu::section(".kprobes.text")]]
