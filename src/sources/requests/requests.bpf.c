// SPDX-License-Identifier: GPL-2.0
// Request latency as a client sees it, from the kernel: a request begins
// when its bytes are queued on a server connection of a JVM (BTF tracepoint
// sock:sk_data_ready, in softirq; before Linux 6.6, tcp:tcp_probe) and ends at the last send of its response
// (sock:sock_send_length, in the JVM's context) before the next request's
// bytes arrive. Server connections are those whose local port is one the
// agent put in `listeners` (a JVM's listening socket, in its network
// namespace): the JVM's own outgoing connections have other local ports.
// Times only, never payload. No kprobe and no tracefs: BTF tracepoints,
// with the kernel structures read through CO-RE.
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "requests.h"
#include "budget.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* The kernel's own types, reduced to the fields read here; CO-RE finds
 * each field's offset in the running kernel's BTF by its name. */
struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct net {
	struct ns_common ns;
} __attribute__((preserve_access_index));

typedef struct {
	struct net *net;
} possible_net_t;

struct sock_common {
	unsigned short skc_num;
	volatile unsigned char skc_state;
	possible_net_t skc_net;
} __attribute__((preserve_access_index));

struct sock {
	struct sock_common __sk_common;
	unsigned short sk_protocol;
} __attribute__((preserve_access_index));

struct sk_buff {
	unsigned int len;
	unsigned char *data;
} __attribute__((preserve_access_index));

struct tcp_sock {
	__u32 rcv_nxt;
	__u32 copied_seq;
	__u32 write_seq;
} __attribute__((preserve_access_index));

#define IPPROTO_TCP 6
#define SOCK_STREAM 1
#define TCP_CLOSE 7
#define TCP_LISTEN 10
/* Records one JVM may send in a second: two per request at 10,000
 * requests a second. A JVM flooded by connections cannot starve the
 * others' records in the shared ring buffer. */
#define RECORDS_PER_SECOND 20000
/* A connection is multiplexed from this many sends made while request
 * bytes waited unread, when they are at least a quarter of its requests. */
#define MULTIPLEXED_OVERLAPS 4

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024);
} requests SEC(".maps");

/* Puts the record type (and its kinds) in the object's BTF, which the
 * generated Rust types come from: a ring buffer's entries have no type. */
struct request_record record_layout = {};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct listener_key);
	__type(value, __u32);
} listeners SEC(".maps");

/* Bounded: a flood of connections evicts the least recently used, it
 * never grows the agent's kernel memory. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct connection_state);
} connections SEC(".maps");

/* Index 0: records the ring buffer had no room for; 1: records a JVM's
 * budget refused. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

static __always_inline void count_lost(__u32 index)
{
	__u64 *count = bpf_map_lookup_elem(&lost, &index);
	if (count)
		__sync_fetch_and_add(count, 1);
}

static __always_inline void send(__u64 connection, struct connection_state *state, __u64 end_ns,
				 enum record_kind kind, __u64 now)
{
	if (!within_budget(state->tgid, now, RECORDS_PER_SECOND)) {
		count_lost(1);
		return;
	}
	struct request_record *record = bpf_ringbuf_reserve(&requests, sizeof(*record), 0);
	if (!record) {
		count_lost(0);
		return;
	}
	record->connection = connection;
	record->start_ns = state->start_ns;
	record->end_ns = end_ns;
	record->tgid = state->tgid;
	record->port = state->port;
	record->kind = kind;
	record->pad = 0;
	bpf_ringbuf_submit(record, 0);
}

/* The request in flight ends: its last send is its end, when the response
 * took more than the first (which was already sent). */
static __always_inline void close_request(__u64 connection, struct connection_state *state,
					  __u64 now)
{
	if (state->first_send_ns && state->last_send_ns != state->first_send_ns &&
	    !state->multiplexed)
		send(connection, state, state->last_send_ns, RECORD_END, now);
}

/* Bytes arrived on `sk`: the next request begins on an idle server
 * connection of a JVM. */
static __always_inline int arrived(struct sock *sk)
{
	__u64 connection = (__u64)sk, now = bpf_ktime_get_ns();
	struct connection_state *state = bpf_map_lookup_elem(&connections, &connection);
	if (state) {
		if (state->multiplexed)
			return 0;
		__u32 written = BPF_CORE_READ((struct tcp_sock *)sk, write_seq);
		if (!state->first_send_ns) {
			if (written == state->written_at_start)
				return 0; /* more bytes of the request in flight */
			/* Its response was written and answered before the
			 * sender's tracepoint fired (on loopback the client
			 * may be that fast): it ended now, within that answer's
			 * round trip. */
			state->first_send_ns = now;
			state->last_send_ns = now;
			send(connection, state, now, RECORD_FIRST_SEND, now);
		}
		close_request(connection, state, now);
		if (state->requests < 0xffff)
			state->requests++;
		state->start_ns = now;
		state->first_send_ns = 0;
		state->last_send_ns = 0;
		state->written_at_start = written;
		return 0;
	}
	if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP ||
	    BPF_CORE_READ(sk, __sk_common.skc_state) == TCP_LISTEN)
		return 0;
	struct listener_key key = {
		.netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum),
		.port = BPF_CORE_READ(sk, __sk_common.skc_num),
	};
	__u32 *tgid = bpf_map_lookup_elem(&listeners, &key);
	if (!tgid)
		return 0;
	struct connection_state fresh = {
		.start_ns = now,
		.requests = 1,
		.tgid = *tgid,
		.port = key.port,
		.written_at_start = BPF_CORE_READ((struct tcp_sock *)sk, write_seq),
	};
	bpf_map_update_elem(&connections, &connection, &fresh, BPF_ANY);
	return 0;
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(on_data_ready, struct sock *sk)
{
	return arrived(sk);
}

/* Before Linux 6.6, which has no sock:sk_data_ready: tcp:tcp_probe, at the
 * start of tcp_rcv_established, for each segment of an established
 * connection, its TCP header at skb->data. A segment with payload is an
 * arrival; a pure ACK is not. */
SEC("tp_btf/tcp_probe")
int BPF_PROG(on_tcp_probe, struct sock *sk, struct sk_buff *skb)
{
	unsigned char *header = BPF_CORE_READ(skb, data);
	__u8 data_offset = 0;
	if (bpf_probe_read_kernel(&data_offset, sizeof(data_offset), header + 12))
		return 0;
	if (BPF_CORE_READ(skb, len) <= (unsigned int)(data_offset >> 4) * 4)
		return 0;
	return arrived(sk);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(on_send, struct sock *sk, int ret, int flags)
{
	if (ret <= 0)
		return 0;
	__u64 connection = (__u64)sk;
	struct connection_state *state = bpf_map_lookup_elem(&connections, &connection);
	if (!state || state->multiplexed || state->tgid != bpf_get_current_pid_tgid() >> 32)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	struct tcp_sock *tcp = (struct tcp_sock *)sk;
	/* Nothing written since the request began: the late trace of the
	 * previous response's send, already ended by this request's bytes. */
	if (BPF_CORE_READ(tcp, write_seq) == state->written_at_start)
		return 0;
	if (BPF_CORE_READ(tcp, rcv_nxt) != BPF_CORE_READ(tcp, copied_seq) &&
	    state->overlaps < 0xffff && ++state->overlaps >= MULTIPLEXED_OVERLAPS &&
	    state->overlaps * 4 >= state->requests) {
		state->multiplexed = 1;
		send(connection, state, now, RECORD_MULTIPLEXED, now);
		return 0;
	}
	state->last_send_ns = now;
	if (!state->first_send_ns) {
		state->first_send_ns = now;
		send(connection, state, now, RECORD_FIRST_SEND, now);
	}
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(on_state, struct sock *sk, int oldstate, int newstate)
{
	if (newstate != TCP_CLOSE)
		return 0;
	__u64 connection = (__u64)sk;
	struct connection_state *state = bpf_map_lookup_elem(&connections, &connection);
	if (!state)
		return 0;
	close_request(connection, state, bpf_ktime_get_ns());
	bpf_map_delete_elem(&connections, &connection);
	return 0;
}
