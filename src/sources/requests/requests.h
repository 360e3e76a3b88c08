/* The record the request-latency BPF program sends: `record.rs` reads it
 * through the type libbpf-cargo generates from the object's BTF
 * (`types::request_record` of the skeleton), so a field added here is a
 * field there. No payload is ever copied: a record holds times, the
 * connection's identity, the JVM and its port. */
#ifndef REQUESTS_H
#define REQUESTS_H

enum record_kind {
	/* The first send of the response to the request begun at `start_ns`. */
	RECORD_FIRST_SEND = 1,
	/* The request begun at `start_ns` ended at `end_ns`, its last send:
	 * sent when the next request's bytes arrive or the connection closes,
	 * and only when the response took more than one send. */
	RECORD_END = 2,
	/* The connection carries more than one request at a time (pipelining,
	 * HTTP/2, gRPC): none of its requests are measured from now on. */
	RECORD_MULTIPLEXED = 3,
};

struct request_record {
	/* The connection: its struct sock's address, for as long as it lives. */
	__u64 connection;
	/* When the request's first bytes were queued on the socket. */
	__u64 start_ns;
	/* The send this record is about (its end for RECORD_END). */
	__u64 end_ns;
	/* The JVM (its tgid) and the listening port the connection came in on. */
	__u32 tgid;
	enum record_kind kind;
	__u16 port;
	__u16 pad;
};

/* What the agent puts in `listeners`: a JVM's listening socket by its
 * network namespace and port. */
struct listener_key {
	__u32 netns;
	__u32 port;
};

/* One connection's request in flight, in `connections`. */
struct connection_state {
	__u64 start_ns;
	/* The first and the last send of the response so far (0: none yet). */
	__u64 first_send_ns;
	__u64 last_send_ns;
	__u32 tgid;
	__u16 port;
	/* Sends made while request bytes were waiting unread. A connection
	 * that carries one request at a time has few (TLS's own messages: 3
	 * of 25 HTTPS connections of the JDK's HttpsServer had two in a
	 * minute); multiplexing has one at most requests. */
	__u16 overlaps;
	/* Requests begun on the connection, as far as its bytes say (it
	 * stays at 65,535). */
	__u16 requests;
	__u16 multiplexed;
	/* The connection's `write_seq` when the request began: a send that
	 * leaves it there was the previous response's, traced late. */
	__u32 written_at_start;
};

#endif
