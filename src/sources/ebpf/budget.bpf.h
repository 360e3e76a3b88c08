/* A budget of records a second per process, shared by the BPF programs:
 * one process flooding its probes cannot fill the ring buffer every
 * JVM's records share. The map `budgets` is each program's own. */
#ifndef BUDGET_BPF_H
#define BUDGET_BPF_H

#define NS_PER_SECOND 1000000000ULL

/* Each process's records this second, and those its budget refused. */
struct budget {
	__u64 window_ns;
	__u64 sent;
	__u64 throttled;
};

/* By tgid; least recently used processes make room for new ones. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct budget);
} budgets SEC(".maps");

/* Whether the process `key` may send one more record now, at most
 * `per_second` a second; a refusal is counted in its budget. */
static __always_inline bool within_budget(__u32 key, __u64 now, __u64 per_second)
{
	struct budget *budget = bpf_map_lookup_elem(&budgets, &key);
	if (!budget) {
		struct budget fresh = { .window_ns = now, .sent = 1 };
		bpf_map_update_elem(&budgets, &key, &fresh, BPF_ANY);
		return true;
	}
	if (now - budget->window_ns >= NS_PER_SECOND) {
		budget->window_ns = now;
		budget->sent = 0;
	}
	if (budget->sent >= per_second) {
		__sync_fetch_and_add(&budget->throttled, 1);
		return false;
	}
	__sync_fetch_and_add(&budget->sent, 1);
	return true;
}

#endif
