/* The record the BPF program sends: `record.rs` reads it through the type
 * libbpf-cargo generates from the object's BTF (`types::safepoint_record`
 * of the skeleton), so a field added here is a field there. */
#ifndef SAFEPOINTS_H
#define SAFEPOINTS_H

#define MAX_GCS 4
#define OPERATION_LEN 48
#define MANAGER_LEN 24

struct gc_record {
	__u64 begin_ns;
	__u64 end_ns;
	/* The first memory manager's first pool end, and the begin of a second
	 * manager's collection in the same pause (0: none). */
	__u64 first_end_ns;
	__u64 second_begin_ns;
	__u32 full;
	__u32 pad;
	char first_manager[MANAGER_LEN];
	char second_manager[MANAGER_LEN];
};

struct safepoint_record {
	__u32 tgid;
	__u32 gc_count;
	__u64 begin_ns;
	/* When the VM operation began: the threads were stopped by then. */
	__u64 operation_ns;
	__u64 end_ns;
	char operation[OPERATION_LEN];
	struct gc_record gcs[MAX_GCS];
};

#endif
