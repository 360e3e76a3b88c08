// SPDX-License-Identifier: GPL-2.0
// One record per HotSpot safepoint, from the JVM's own USDT probes: the
// whole stop (hs_private:safepoint__begin/__end), the VM operation run in it
// (hotspot:vmops__begin, mode 0), and the GC pauses inside it
// (hotspot:gc__begin/__end), each split in two when its memory managers say
// a young collection turned into a full one (hotspot:mem__pool__gc__begin/end).
// The state of a safepoint in flight is keyed by the JVM's tgid in an LRU
// map, so a JVM dying mid-safepoint leaks nothing. Each process may send RECORDS_PER_SECOND records a
// second: one process flooding its probe sites (any user can attach the
// agent to a copy of libjvm.so of their own) cannot fill the ring buffer
// that every JVM's records share; what it loses is counted in its budget.
// A JVM the configuration leaves out sends nothing: its probes still trap,
// but the agent reads no record of it.
// The licence is GPL because bpf_probe_read_user_str is a GPL-only helper.
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h>

#include "safepoints.h"
#include "budget.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Records one process may send in a second: HotSpot's busiest JVMs stop
 * a few hundred times a second. */
#define RECORDS_PER_SECOND 2000

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 * 1024 * 1024);
} events SEC(".maps");

/* The safepoint in flight per JVM, with what the memory-manager probes of
 * its current GC pause have said. */
struct inflight {
	struct safepoint_record record;
	/* The first memory manager of the current pause, and whether its first
	 * pool end was seen. */
	char manager[MANAGER_LEN];
	__u32 in_gc;
	__u32 manager_ended;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct inflight);
} inflight SEC(".maps");

/* Records the ring buffer had no room for: index 0. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* A zeroed value to start a safepoint from (too large for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct inflight);
} zero SEC(".maps");

/* The JVMs the configuration leaves out, by tgid: the agent writes them as
 * discovery finds them, and takes out those that exited and a pid a JVM it
 * measures was given. No kernel type is read here (CO-RE would need the
 * kernel's BTF, which a host or a chroot may lack). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} left_out_jvms SEC(".maps");

static __always_inline __u32 tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

static __always_inline struct inflight *current(void)
{
	__u32 key = tgid();
	return bpf_map_lookup_elem(&inflight, &key);
}

/* The collection in progress in the current safepoint, when there is one
 * and the record has room for it. */
static __always_inline struct gc_record *current_gc(struct inflight *state)
{
	if (!state || !state->in_gc)
		return 0;
	__u32 n = state->record.gc_count;
	if (n >= MAX_GCS)
		return 0;
	return &state->record.gcs[n];
}

SEC("usdt")
int BPF_USDT(safepoint_begin)
{
	__u32 key = tgid(), index = 0;
	if (bpf_map_lookup_elem(&left_out_jvms, &key))
		return 0;
	struct inflight *fresh = bpf_map_lookup_elem(&zero, &index);
	if (!fresh)
		return 0;
	__builtin_memset(fresh, 0, sizeof(*fresh));
	fresh->record.tgid = key;
	fresh->record.begin_ns = bpf_ktime_get_ns();
	bpf_map_update_elem(&inflight, &key, fresh, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(vmop_begin, const char *name, long len, int mode)
{
	struct inflight *state = current();
	if (!state || mode != 0 || state->record.operation_ns)
		return 0;
	state->record.operation_ns = bpf_ktime_get_ns();
	bpf_probe_read_user_str(state->record.operation, sizeof(state->record.operation), name);
	return 0;
}

SEC("usdt")
int BPF_USDT(gc_begin, int is_full)
{
	struct inflight *state = current();
	if (!state)
		return 0;
	__u32 n = state->record.gc_count;
	if (n >= MAX_GCS)
		return 0;
	state->record.gcs[n].begin_ns = bpf_ktime_get_ns();
	state->record.gcs[n].full = is_full ? 1 : 0;
	state->in_gc = 1;
	state->manager[0] = 0;
	state->manager_ended = 0;
	return 0;
}

SEC("usdt")
int BPF_USDT(gc_end)
{
	struct inflight *state = current();
	struct gc_record *gc = current_gc(state);
	if (!gc)
		return 0;
	gc->end_ns = bpf_ktime_get_ns();
	state->record.gc_count++;
	state->in_gc = 0;
	return 0;
}

static __always_inline bool same_manager(const char *a, const char *b)
{
	for (int i = 0; i < MANAGER_LEN; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			return true;
	}
	return true;
}

SEC("usdt")
int BPF_USDT(pool_begin, const char *manager)
{
	struct inflight *state = current();
	struct gc_record *gc = current_gc(state);
	if (!gc)
		return 0;
	char name[MANAGER_LEN] = {};
	bpf_probe_read_user_str(name, sizeof(name), manager);
	if (!state->manager[0]) {
		__builtin_memcpy(state->manager, name, MANAGER_LEN);
		return 0;
	}
	/* A second manager inside one pause: the young collection ended and a
	 * full one began (Parallel's escalation). */
	if (!gc->second_begin_ns && !same_manager(state->manager, name)) {
		gc->second_begin_ns = bpf_ktime_get_ns();
		__builtin_memcpy(gc->second_manager, name, MANAGER_LEN);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(pool_end, const char *manager)
{
	struct inflight *state = current();
	struct gc_record *gc = current_gc(state);
	if (!gc || state->manager_ended)
		return 0;
	state->manager_ended = 1;
	gc->first_end_ns = bpf_ktime_get_ns();
	bpf_probe_read_user_str(gc->first_manager, sizeof(gc->first_manager), manager);
	return 0;
}

SEC("usdt")
int BPF_USDT(safepoint_end)
{
	__u32 key = tgid();
	struct inflight *state = bpf_map_lookup_elem(&inflight, &key);
	if (!state)
		return 0;
	state->record.end_ns = bpf_ktime_get_ns();
	if (!within_budget(key, state->record.end_ns, RECORDS_PER_SECOND)) {
		bpf_map_delete_elem(&inflight, &key);
		return 0;
	}
	if (bpf_ringbuf_output(&events, &state->record, sizeof(state->record), 0)) {
		__u32 index = 0;
		__u64 *dropped = bpf_map_lookup_elem(&drops, &index);
		if (dropped)
			__sync_fetch_and_add(dropped, 1);
	}
	bpf_map_delete_elem(&inflight, &key);
	return 0;
}
