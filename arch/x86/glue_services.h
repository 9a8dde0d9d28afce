/* SPDX-License-Identifier: GPL-2.0 */
/*
 * x86's kernel services for the core: okp_glue_* functions implemented in
 * arch/x86/probes_glue.c.
 *
 * Only plain C types cross the boundary between okprobe's C glue (which
 * includes <linux/...> headers) and its freestanding C++ core (which never
 * does): integers, pointers, and the structs below.
 */
#ifndef OKPROBE_X86_GLUE_SERVICES_H
#define OKPROBE_X86_GLUE_SERVICES_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * What an x86 detour needs to do preempt_disable_notrace(),
 * this_cpu_ptr(&okp_cpu_states) and preempt_enable_notrace() itself around
 * its call of okp_core_optimized_hit (see arch/x86/detour.hpp).
 */
struct okp_detour_percpu {
	unsigned long cpu_states;	/* &okp_cpu_states (a per-CPU pointer) */
	long this_cpu_off;		/* %gs offset of this_cpu_off */
	long preempt_count;		/* %gs offset of __preempt_count */
	unsigned long preempt_schedule;	/* preempt_enable's call, or 0 */
};
void okp_glue_detour_percpu(struct okp_detour_percpu *percpu);

#ifdef __cplusplus
}
#endif

#endif /* OKPROBE_X86_GLUE_SERVICES_H */
