// SPDX-License-Identifier: GPL-2.0
/*
 * A BPF program on an okprobe_events event, as libbpf users write one:
 * okprobe's events are tracepoints to BPF (Documentation/operating.md), so
 * the program is a tracepoint program whose context is the event's
 * record, laid out as the event's format file says. It counts the hits of
 * each process and sums the event's first field, a u64 (a read's size:
 * 'p:okprobe/myread ksys_read count=$arg3:u64', or what ksys_read
 * returned: 'r:okprobe/myret ksys_read count=$retval:u64'), and keeps the
 * probed address, the attach cookie and the kernel stack of the last hit,
 * apart for each attachment (by its cookie). okprobe_read.c loads it,
 * attaches it by the events' names and reports.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/*
 * A record, as the event's format file lays it out: the kernel's common
 * header (8 bytes; 12 on 6.1's PREEMPT_RT, two more counters, so the
 * fields start at 16 there), then a p event's __probe_ip or an r event's
 * __probe_func and __probe_ret_ip, then the event's own fields. A
 * tracepoint program may read its context at constant offsets only, so
 * there is one program per layout; the loader picks the one the format
 * file describes.
 */
#define RECORD(header, kind, probe_fields)                                   \
	struct okprobe_##kind##_record_##header {                            \
		__u8 common[header];                                         \
		__u64 probe[probe_fields];                                   \
		__u64 value;                                                 \
	}
RECORD(8, entry, 1);
RECORD(16, entry, 1);
RECORD(8, return, 2);
RECORD(16, return, 2);

/*
 * What is kept per process (tgid) and attachment (its cookie: the loader
 * attaches each event it is given with a cookie of its own).
 */
struct okprobe_read_key {
	__u64 cookie;
	__u32 tgid;
	__u32 unused;
};

#define STACK_DEPTH 32
struct okprobe_read_counts {
	__u64 hits;
	__u64 sum;
	__u64 cookie;
	__u64 probe_ip;
	/* The last hit's stack: its size in bytes, or a negative errno. */
	__s64 stack_bytes;
	__u64 stack[STACK_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct okprobe_read_key);
	__type(value, struct okprobe_read_counts);
} counts SEC(".maps");

/* Key 0: only hits whose value equals this count (0: every hit). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} only_value SEC(".maps");

static __always_inline void count(void *ctx, __u64 probe_ip, __u64 value)
{
	struct okprobe_read_key key = {
		.cookie = bpf_get_attach_cookie(ctx),
		.tgid = bpf_get_current_pid_tgid() >> 32,
	};
	struct okprobe_read_counts fresh = {}, *kept;
	__u32 zero = 0;
	__u64 *only = bpf_map_lookup_elem(&only_value, &zero);

	if (only && *only && *only != value)
		return;
	kept = bpf_map_lookup_elem(&counts, &key);
	if (!kept) {
		bpf_map_update_elem(&counts, &key, &fresh, BPF_NOEXIST);
		kept = bpf_map_lookup_elem(&counts, &key);
		if (!kept)
			return;
	}
	__sync_fetch_and_add(&kept->hits, 1);
	__sync_fetch_and_add(&kept->sum, value);
	kept->cookie = key.cookie;
	kept->probe_ip = probe_ip;
	/*
	 * The stack of the probed place (okprobe hands perf the hit's regs),
	 * kept in the process's own entry: a stack map's buckets are shared
	 * by every process's stacks, and one taken by another stack answers
	 * EEXIST.
	 */
	kept->stack_bytes = bpf_get_stack(ctx, kept->stack, sizeof(kept->stack), 0);
}

/* count_entry_8 ... count_return_16: the program for each layout. */
#define PROGRAM(header, kind)                                                \
	SEC("tracepoint")                                                    \
	int count_##kind##_##header(struct okprobe_##kind##_record_##header *record) \
	{                                                                    \
		count(record, record->probe[0], record->value);              \
		return 0;                                                    \
	}
PROGRAM(8, entry)
PROGRAM(16, entry)
PROGRAM(8, return)
PROGRAM(16, return)

char LICENSE[] SEC("license") = "GPL";
