/* SPDX-License-Identifier: GPL-2.0 */
/*
 * okprobe: fast, safe dynamic kernel probes from a module.
 *
 * The public C API for client modules. Client modules are built against
 * okprobe's Module.symvers (KBUILD_EXTRA_SYMBOLS) and depend on okprobe.ko.
 * Shaped like <linux/kprobes.h>; see Documentation/api.md.
 *
 * This header includes no kernel header: okprobe's C++ core reads it too.
 */
#ifndef _OKPROBE_H
#define _OKPROBE_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The interface revision this header describes. A client compares it with
 * okprobe_api_version() of the loaded module and refuses to run on a
 * mismatch rather than misinterpreting structures.
 */
#define OKPROBE_API_VERSION 9

/* Returns the OKPROBE_API_VERSION okprobe.ko was built with. */
int okprobe_api_version(void);

struct okprobe;
struct pt_regs;

/*
 * Runs before the probed instruction, with preemption off: in the
 * breakpoint handler's context, or, once the probe is optimized, called from
 * its detour with interrupts as they were at the probed instruction (treat
 * both like NMI context: no sleeping, no locks that other contexts hold).
 * regs->ip is the probed address + 1 (x86) or the probed address (riscv),
 * optimized or not. Return 0 to let the probed instruction run; return
 * nonzero after setting regs->ip yourself to skip it. While the probe is
 * optimized (OKPROBE_FLAG_OPTIMIZED) a changed regs->ip (riscv: epc or sp)
 * is ignored and the instruction runs, as for the kernel's optimized
 * kprobes; changes to the other registers are kept.
 *
 * At a function's entry (symbol+0, or its ftrace call site) on a kernel
 * whose ftrace saves registers, ftrace calls the handlers instead of a
 * breakpoint (OKPROBE_FLAG_FTRACE, as kprobes on ftrace): regs are what
 * ftrace saved at the call site, with regs->ip the site + 1 (x86) or the
 * site (riscv), the arguments as the function received them. A pre_handler
 * that sets regs->ip and returns nonzero makes the function resume there
 * (e.g. at its caller, to override it); with zero, the post_handler sees
 * regs->ip just past the call site. Elsewhere an entry probe goes to the
 * first instruction past the call site (okprobe.addr says where).
 */
typedef int (*okprobe_pre_handler_t)(struct okprobe *probe,
				     struct pt_regs *regs);
/*
 * Runs after the probed instruction, regs as it left them. flags is 0. A
 * probe with a post_handler keeps its address a breakpoint (never
 * optimized).
 */
typedef void (*okprobe_post_handler_t)(struct okprobe *probe,
				       struct pt_regs *regs,
				       unsigned long flags);

/*
 * What an argument-only handler sees (okprobe.args_handler): the registers
 * a call's arguments and return value travel in, the probed address and
 * the stack pointer there, as the probed code had them; not struct
 * pt_regs. Once the probe is optimized its detour saves only the registers
 * the handler's call may clobber, builds this record from them and calls
 * the handler directly: about half an optimized pre_handler hit's cost
 * (Documentation/api.md, "Argument-only probes"). As a breakpoint, or
 * beside other kinds of probes at its address, the record is made from
 * the trap's pt_regs, with the same values.
 *
 * A handler may change arg[] (and, on x86, ax): the probed code goes on
 * with the new values. ip and sp are read-only: changing them changes
 * nothing. Every other register, and the flags, are the probed code's
 * when it goes on.
 */
#if defined(__x86_64__)
#define OKPROBE_ARG_REGS 6 /* di, si, dx, cx, r8, r9 */
#elif defined(__riscv)
#define OKPROBE_ARG_REGS 8 /* a0 - a7 */
#endif
struct okprobe_args {
	/* The argument registers in the calling convention's order. */
	unsigned long arg[OKPROBE_ARG_REGS];
#if defined(__x86_64__)
	unsigned long ax; /* the return value register */
#endif
	unsigned long ip; /* the probed address */
	unsigned long sp; /* the stack pointer at the probed instruction */
};
/* The return value register: ax on x86, a0 (arg[0]) on riscv. */
#if defined(__x86_64__)
#define okprobe_args_return_value(args) ((args)->ax)
#elif defined(__riscv)
#define okprobe_args_return_value(args) ((args)->arg[0])
#endif
/*
 * Runs where a pre_handler would, in the same context (preemption off,
 * NMI-like), before the probed instruction.
 */
typedef void (*okprobe_args_handler_t)(struct okprobe *probe,
				       struct okprobe_args *args);

/* okprobe.flags (written by okprobe once registered; read them freely) */
#define OKPROBE_FLAG_DISABLED	0x1	/* registered, handlers do not run */
#define OKPROBE_FLAG_GONE	0x2	/* its text went away (module unload) */
#define OKPROBE_FLAG_OPTIMIZED	0x4	/* a jump replaces its breakpoint */
/*
 * Someone else changed the text okprobe had written at its address:
 * okprobe leaves that text alone for good and runs none of its handlers.
 */
#define OKPROBE_FLAG_LOST	0x8
/* ftrace calls its handlers at the function's entry (no breakpoint) */
#define OKPROBE_FLAG_FTRACE	0x10
/*
 * A counting probe (set by the client before registering, with neither
 * handler): it only counts its hits, read with okprobe_read_count(). Once
 * optimized its detour adds one to a per-CPU counter and runs the
 * relocated instructions: no register save, no call. It has its address
 * to itself: no other probe may share it (-EBUSY either way).
 */
#define OKPROBE_FLAG_COUNTER	0x20
/*
 * In an okretprobe's kp, set by okprobe: its handler runs at the function's
 * exits (no probe at the entry, no return address replaced; see
 * okretprobe below).
 */
#define OKPROBE_FLAG_RETURN_EXITS	0x40
/*
 * In an okretprobe's kp, set by the client before registering: replace the
 * return address at every call (the kernel's rethook), as kretprobes do,
 * even where the handler could run at the exits. Ignored elsewhere.
 */
#define OKPROBE_FLAG_RETURN_RETHOOK	0x80
/*
 * Set by the client before registering: the probe keeps its breakpoint,
 * never a jump, as if it had a post_handler. For a probe that goes away
 * at its first hit (a one-shot probe, as okprobe-cover's reach probes):
 * a jump would be a detour built and a text patch for nothing.
 */
#define OKPROBE_FLAG_BREAKPOINT	0x100

struct okprobe {
	/* Where: symbol_name + offset, or addr (not both). */
	const char *symbol_name;
	unsigned long offset;
	/* In: the address to probe; out: the probed address. */
	void *addr;
	okprobe_pre_handler_t pre_handler;
	okprobe_post_handler_t post_handler;
	/*
	 * An argument-only probe's handler, instead of both of the others
	 * (-EINVAL with either): read once, when the probe is registered.
	 */
	okprobe_args_handler_t args_handler;
	/* Hits not handled because a probe handler was already running. */
	unsigned long nmissed;
	/* OKPROBE_FLAG_*; set OKPROBE_FLAG_DISABLED to register disabled. */
	unsigned int flags;
	/* okprobe's own: zero before registering, do not touch. */
	void *okp_site;
};

/*
 * Registers and arms a probe. May sleep. Returns 0 or a negative errno
 * (EINVAL, ENOENT, EILSEQ, EPERM, EBUSY, ENOMEM: Documentation/api.md)
 * and logs one line saying why.
 */
int okprobe_register(struct okprobe *probe);
/*
 * Disarms and unregisters; when it returns no handler of the probe is
 * running or will run, and the struct may be freed. May sleep. A probe that
 * is not registered is ignored.
 */
void okprobe_unregister(struct okprobe *probe);

/*
 * Registers count probes, all or nothing: on the first failure the ones
 * already registered are unregistered and its errno returned (-EINVAL for
 * count <= 0).
 */
int okprobe_register_many(struct okprobe **probes, int count);
/*
 * Unregisters count probes and waits for one grace period for the whole
 * batch instead of one per probe.
 */
void okprobe_unregister_many(struct okprobe **probes, int count);

/*
 * Stop / resume running a registered probe's handlers. The breakpoint is
 * removed once no probe at its address is enabled. 0, or -EINVAL when the
 * probe is not registered (or, to enable, is gone), or (to enable an entry
 * probe) ftrace's errno when it refuses the function: the probe then stays
 * disabled. May sleep.
 */
int okprobe_disable(struct okprobe *probe);
int okprobe_enable(struct okprobe *probe);

/*
 * A registered probe's hits so far, into *count: every CPU's for a
 * counting probe (OKPROBE_FLAG_COUNTER), the handled hits of any other.
 * 0, or -EINVAL when the probe is not registered. May sleep.
 */
int okprobe_read_count(struct okprobe *probe, unsigned long long *count);

/*
 * Return probes, shaped like kretprobes (Documentation/api.md). An
 * okretprobe's kp says where the function is (symbol_name with offset 0,
 * or addr at its first byte); okprobe sets kp.pre_handler itself, and kp
 * reports flags and the entry address as for any probe. At every call of
 * the function (through ftrace or an optimized jump at its entry) okprobe
 * takes an instance, calls entry_handler with the entry's registers, and
 * replaces the return address (the kernel's rethook), so that handler
 * runs when the function returns, with the return value in
 * regs_return_value(regs) and instruction_pointer(regs) the caller's
 * return address. Without entry_handler and data, where okprobe can prove
 * every exit of the function and put a jump at each, it runs handler
 * at the exits instead (OKPROBE_FLAG_RETURN_EXITS): no entry probe, no
 * return address replaced; see api.md for what that changes.
 */
struct okretprobe;

struct okretprobe_instance {
	struct okretprobe *rp;
	/*
	 * Where the function returns to, in its caller (past a tail call:
	 * the first caller's): 0 in entry_handler, set for handler.
	 */
	unsigned long ret_addr;
	/* data_size bytes, the same for entry_handler and handler. */
	char data[];
};

/*
 * Both run with preemption off (entry_handler as a pre_handler does;
 * handler in the kernel's return trampoline), and must not sleep. An
 * entry_handler that returns nonzero drops the instance: no handler runs
 * for that call. handler's return value is ignored.
 */
typedef int (*okretprobe_handler_t)(struct okretprobe_instance *instance,
				    struct pt_regs *regs);

struct okretprobe {
	struct okprobe kp;
	okretprobe_handler_t handler;
	okretprobe_handler_t entry_handler;
	/*
	 * Instances to start with (0: okprobe chooses). Not a limit: the pool
	 * grows while the function is used, up to 65536 instances.
	 */
	int maxactive;
	/* Bytes of okretprobe_instance.data, at most 4096. */
	unsigned long data_size;
	/*
	 * Calls that got no instance (no memory, or the limit reached), plus
	 * returns whose handler did not run because another okprobe handler
	 * was running on the CPU.
	 */
	unsigned long nmissed;
	/* okprobe's own: zero before registering, do not touch. */
	void *okp_private;
};

/*
 * Registers a return probe. May sleep. 0, or a negative errno as for
 * okprobe_register(), plus EINVAL when kp is not a function's entry and
 * EOPNOTSUPP on a kernel without rethook (CONFIG_RETHOOK); logs one line
 * saying why.
 */
int okretprobe_register(struct okretprobe *rp);
/*
 * Unregisters: no handler of rp runs once it returns, and rp may be freed.
 * Calls still inside the function return to their callers without
 * handlers. May sleep.
 */
void okretprobe_unregister(struct okretprobe *rp);
/* All or nothing, as okprobe_register_many(). */
int okretprobe_register_many(struct okretprobe **rps, int count);
/* The grace periods of one unregistration for the whole batch. */
void okretprobe_unregister_many(struct okretprobe **rps, int count);
/*
 * No new instances while disabled; calls already inside the function
 * still run handler when they return (at the exits they do not). As
 * okprobe_disable/enable.
 */
int okretprobe_disable(struct okretprobe *rp);
int okretprobe_enable(struct okretprobe *rp);

#ifdef __cplusplus
}
#endif

#endif /* _OKPROBE_H */
