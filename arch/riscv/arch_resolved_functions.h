/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unexported kernel functions riscv's glue calls: the rest of
 * src/kernel/resolved_functions.h, which includes it (no include guard).
 */
#include <linux/module.h>

OKP_RESOLVED_FUNCTION(__module_address, __module_address, 1);
