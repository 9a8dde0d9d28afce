/* SPDX-License-Identifier: GPL-2.0 */
/* okprobe_test_target.ko's assembly targets (okprobe_test_target_fn.S, _riscv_fn.S). */
#ifndef OKPROBE_TEST_TARGET_H
#define OKPROBE_TEST_TARGET_H

long okp_gone_target(long a);
long okp_cover_target(long a);

#endif
