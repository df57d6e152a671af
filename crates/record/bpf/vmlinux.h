/* vmlinux.h, trimmed by hand: only the kernel types and fields iolab.bpf.c reads, each struct
 * marked preserve_access_index so clang emits CO-RE relocations and the loader (aya) moves
 * every field access to where the running kernel's BTF (/sys/kernel/btf/vmlinux) puts it.
 * Layouts here need not match any kernel: only names matter. Committed rather than generated
 * with bpftool at build time so that the build needs clang alone and does not depend on the
 * build machine's kernel (see crates/record/build.rs). */
#ifndef IOLAB_VMLINUX_H
#define IOLAB_VMLINUX_H

typedef unsigned char __u8;
typedef signed char __s8;
typedef unsigned short __u16;
typedef short __s16;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;
typedef __u8 u8;
typedef __s8 s8;
typedef __u16 u16;
typedef __s16 s16;
typedef __u32 u32;
typedef __s32 s32;
typedef __u64 u64;
typedef __s64 s64;
typedef _Bool bool;
#define true 1
#define false 0
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef long long loff_t;

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_RINGBUF = 27,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

#if defined(__TARGET_ARCH_x86)
struct pt_regs {
	unsigned long r10;
	unsigned long r9;
	unsigned long r8;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
};
#elif defined(__TARGET_ARCH_arm64)
struct pt_regs {
	unsigned long long regs[31];
	unsigned long long orig_x0;
};
#else
#error "iolab's eBPF recorder knows the system call registers of x86-64 and aarch64 only"
#endif

typedef struct {
	int counter;
} atomic_t;

struct signal_struct {
	atomic_t live;
};

/* The scheduler's accounting of a task (CONFIG_SCHED_INFO): run_delay is the time it has
 * waited on a run queue, in ns, summed since it began. */
struct sched_info {
	unsigned long long run_delay;
};

struct task_struct {
	int pid;
	int tgid;
	struct signal_struct *signal;
	struct sched_info sched_info;
};

struct file;

struct kiocb {
	struct file *ki_filp;
	loff_t ki_pos;
};

struct io_rw {
	struct kiocb kiocb;
	u64 addr;
	u32 len;
	int flags;
};

struct io_sync {
	struct file *file;
	loff_t len;
	loff_t off;
	int flags;
	int mode;
};

struct io_cqe {
	__u64 user_data;
	__s32 res;
	union {
		__u32 flags;
		int fd;
	};
};

struct io_cmd_data {
	struct file *file;
	__u8 data[56];
};

struct io_ring_ctx {
	struct {
		unsigned int flags;
	};
	struct {
		unsigned int sq_entries;
	};
	struct {
		unsigned int cq_entries;
	};
};

struct io_kiocb {
	union {
		struct file *file;
		struct io_cmd_data cmd;
	};
	u8 opcode;
	u16 buf_index;
	/* io_req_flags_t (u32, or u64 since 6.9): its low byte, the SQE's IOSQE_* bits, is all that is read */
	u8 flags;
	struct io_cqe cqe;
	struct io_ring_ctx *ctx;
};

struct io_uring_cqe {
	__u64 user_data;
	__s32 res;
	__u32 flags;
};

struct gendisk {
	int major;
	int first_minor;
};

struct request_queue {
	struct gendisk *disk;
};

struct request {
	struct request_queue *q;
	unsigned int cmd_flags;
	unsigned int __data_len;
	u64 __sector;
	u64 start_time_ns;
};

#pragma clang attribute pop

#endif
