/* SPDX-License-Identifier: GPL-2.0 */
/*
 * riscv code that runs with the MMU off, resuming from suspend or
 * hibernation, or that calls such code keeping values in temporaries
 * across the call (hand-written, outside the psABI): neither a breakpoint
 * nor a jump may go there. Debian's 6.12 kernel has them in plain .text
 * without NOKPROBE_SYMBOL. The glue refuses them at load
 * (okp_arch_blacklist()); the host census leaves them out of its check
 * that compiled code keeps no temporary across a call.
 */
#ifndef OKP_RISCV_MMU_OFF_FUNCTIONS_H
#define OKP_RISCV_MMU_OFF_FUNCTIONS_H

#define OKP_RISCV_MMU_OFF_FUNCTIONS                                 \
	"__cpu_resume_enter", "relocate_enable_mmu",                \
	"hibernate_restore_image", "hibernate_core_restore_code"

#endif
