/* SPDX-License-Identifier: GPL-2.0 */
/*
 * okprobe: fast, safe dynamic kernel probes from a module.
 *
 * The public C API for client modules. Client modules are built against
 * okprobe's Module.symvers (KBUILD_EXTRA_SYMBOLS) and depend on okprobe.ko.
 */
#ifndef _OKPROBE_H
#define _OKPROBE_H

/*
 * The interface revision this header describes. A client compares it with
 * okprobe_api_version() of the loaded module and refuses to run on a
 * mismatch rather than misinterpreting structures.
 */
#define OKPROBE_API_VERSION 1

/* Returns the OKPROBE_API_VERSION okprobe.ko was built with. */
int okprobe_api_version(void);

#endif /* _OKPROBE_H */
