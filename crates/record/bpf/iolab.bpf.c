/* iolab.bpf.c: the kernel half of `iolab trace record --via ebpf` (crates/record).
 *
 * What it sees, for the process tree being recorded and nothing else (`traced`: the tgids of
 * the command and of every process it forks, followed through sched_process_fork and exit):
 *   - the system calls userspace asked for (`sysinfo`, indexed by this architecture's system
 *     call numbers), each with its entry and exit times (the kernel's monotonic clock), its six
 *     arguments, its result and the paths it names, read from the program's memory;
 *   - io_uring: every request submitted (opcode, fd or fixed index, offset, address, length,
 *     flags, user_data) and every completion, and the rings themselves (created, or first seen);
 *     the fds of fixed-file tables registered through io_uring_register(2);
 *   - libaio: each iocb io_submit(2) accepted and each io_event io_getevents(2) returned, copied
 *     raw from user memory;
 *   - with --level block: every request the block layer issued and completed on the devices
 *     userspace named (`devices`), with its sector, size, flags and times.
 * Every record goes to one ring buffer (`events`); a record that does not fit is counted in
 * `lost` by why, never dropped silently. Records are plain little-endian structs that
 * crates/record/src/wire.rs decodes field by field (its layouts must match these). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* bpf_ringbuf_* flags and query (uapi/linux/bpf.h) */
#define RB_NO_WAKEUP 1
#define RB_FORCE_WAKEUP 2
#define RB_AVAIL_DATA 0

/* Userspace is woken only once this many bytes wait in the ring (it also drains it every
 * 20 ms): a wakeup per record would cost more than the record. Set at load time. */
const volatile u64 wake_at = 1 << 20;

#define MAX_PATH 4096
#define MAX_SYSCALL 1024
#define MAX_IOCBS 256
#define MAX_FIXED 256

enum ev_type {
	EV_SYS = 1,
	EV_FORK = 2,
	EV_EXIT = 3,
	EV_URING_SUBMIT = 4,
	EV_URING_COMPLETE = 5,
	EV_RING = 6,
	EV_AIO_SUBMIT = 7,
	EV_AIO_DONE = 8,
	EV_FIXED_FILES = 9,
	EV_BLOCK = 10,
};

/* What userspace asks of a system call (sysinfo): `kind` its own code (0: not traced), the
 * arguments that are paths (-1: none), and a special capture. */
enum special {
	SP_NONE = 0,
	SP_OPEN_HOW = 1,       /* openat2: the flags of struct open_how at arg 2 */
	SP_AIO_SUBMIT = 2,     /* io_submit: the iocbs */
	SP_AIO_EVENTS = 3,     /* io_getevents, io_pgetevents: the io_events at arg 3 */
	SP_URING_REGISTER = 4, /* io_uring_register: fixed files */
	SP_READ_U64_ARG1 = 5,  /* io_setup: the context id it stored at arg 1 */
	SP_IOV_SUM = 6,        /* readv and kin: the iovecs' lengths (arg 1, count arg 2) summed at entry */
};

#define MAX_IOVS 1024 /* the kernel's UIO_MAXIOV: more is EINVAL */

struct sysinfo {
	u8 kind;
	s8 path1;
	s8 path2;
	u8 special;
};

enum lost_why {
	LOST_RING = 0,       /* the ring buffer was full */
	LOST_ENTRY = 1,      /* more threads in system calls than `entries` holds */
	LOST_TRACED = 2,     /* more processes than `traced` holds */
	LOST_IOCBS = 3,      /* iocbs or io_events past MAX_IOCBS in one call */
	LOST_FIXED = 4,      /* fixed files past MAX_FIXED in one registration */
	LOST_BLOCK = 5,      /* more block requests in flight than `blk_inflight` holds */
	LOST_RINGS = 6,      /* more io_uring rings than `rings` holds */
	LOST_N = 8,
};

struct config {
	u32 spawner;   /* a new process forked by this tgid is traced (the recorder itself) */
	u32 block;     /* record block requests */
	u32 syscalls;  /* record system calls and async I/O */
	u32 pad;
};

struct ev_head {
	u32 type;
	u32 tid;
	u32 tgid;
	u32 size;
	u64 ts;
};

struct ev_sys {
	struct ev_head h; /* ts: the call's exit */
	u64 start;
	s64 ret;
	u64 args[6];
	u64 extra;
	u32 nr;
	u16 kind;
	u16 flags;         /* bit 0: path 1 cut at MAX_PATH, bit 1: path 2 cut */
	u16 len1;
	u16 len2;
	u32 pad;
	u64 rd_start;      /* the thread's run-queue wait so far (sched_info.run_delay) at entry */
	u64 rd_end;        /* and at exit */
	/* then path 1 (len1 bytes with its NUL) and, when len2 > 0, path 2 at MAX_PATH bytes
	 * after the header's end (len2 bytes with its NUL) */
};

struct ev_fork {
	struct ev_head h;
	u32 child_tid;
	u32 child_tgid;
};

struct ev_exit {
	struct ev_head h;
	u32 group_dead;
	u32 pad;
};

struct ev_uring_submit {
	struct ev_head h;
	u64 ctx;
	u64 req;
	u64 user_data;
	u64 off;
	u64 addr;
	u64 len;
	s32 fd;
	u32 rw_flags;
	u8 opcode;
	u8 sqe_flags;
	u16 buf_index;
	u32 pad;
};

struct ev_uring_complete {
	struct ev_head h;
	u64 ctx;
	u64 req;
	u64 user_data;
	s32 res;
	u32 cflags;
};

struct ev_ring {
	struct ev_head h;
	u64 ctx;
	s32 fd;
	u32 sq_entries;
	u32 cq_entries;
	u32 flags;
};

struct ev_aio {
	struct ev_head h;
	u64 start;  /* the system call's entry */
	u64 ctx;    /* aio_context_t */
	u64 ptr;    /* io_submit: the iocb's address; io_getevents: 0 */
	u32 index;
	u32 pad;
	u8 raw[64]; /* struct iocb, or struct io_event (32 bytes) */
};

struct ev_fixed {
	struct ev_head h;
	u64 ctx;
	s32 ring_fd;
	u32 opcode;
	u32 offset;
	u32 nr;     /* fds in the registration */
	u32 got;    /* of them copied here (at most MAX_FIXED) */
	u32 pad;
	s32 fds[MAX_FIXED];
};

struct ev_block {
	struct ev_head h; /* ts: the completion */
	u64 issue;
	u64 queued;       /* rq->start_time_ns, 0 when the queue does not keep it */
	u64 sector;
	u32 dev;
	u32 bytes;
	u32 cmd_flags;
	s32 error;
};

struct entry {
	u64 start;
	u64 args[6];
	u64 extra;
	u32 nr;
	u32 pad;
	u64 rd;
};

struct blk_start {
	u64 issue;
	u64 queued;
	u64 sector;
	u32 bytes;
	u32 cmd_flags;
	u32 dev;
	u32 pad;
};

struct scratch {
	struct ev_sys sys;
	char paths[2 * MAX_PATH];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* set by userspace (--buffer) */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, u32);
} traced SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SYSCALL);
	__type(key, u32);
	__type(value, struct sysinfo);
} sysinfo SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LOST_N);
	__type(key, u32);
	__type(value, u64);
} lost SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);
	__type(value, struct entry);
} entries SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u64);
	__type(value, u32);
} rings SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, u32);
	__type(value, u32);
} devices SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, u64);
	__type(value, struct blk_start);
} blk_inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

static __always_inline void count_lost(u32 why)
{
	u64 *n = bpf_map_lookup_elem(&lost, &why);
	if (n)
		*n += 1;
}

static __always_inline u64 rb_flags(void)
{
	return bpf_ringbuf_query(&events, RB_AVAIL_DATA) >= wake_at ? RB_FORCE_WAKEUP : RB_NO_WAKEUP;
}

static __always_inline bool is_traced(u32 tgid)
{
	return bpf_map_lookup_elem(&traced, &tgid) != 0;
}

static __always_inline void head(struct ev_head *h, u32 type, u32 size, u64 pid_tgid, u64 ts)
{
	h->type = type;
	h->tid = (u32)pid_tgid;
	h->tgid = pid_tgid >> 32;
	h->size = size;
	h->ts = ts;
}

static __always_inline u64 sys_arg(struct pt_regs *regs, int i)
{
/* tp_btf hands a typed pointer: its fields are read directly (CO-RE relocated loads the
 * verifier checks against the kernel's BTF), without a probe_read call each. */
#if defined(__TARGET_ARCH_x86)
	switch (i) {
	case 0: return regs->di;
	case 1: return regs->si;
	case 2: return regs->dx;
	case 3: return regs->r10;
	case 4: return regs->r8;
	default: return regs->r9;
	}
#else
	switch (i) {
	case 0: return regs->regs[0];
	case 1: return regs->regs[1];
	case 2: return regs->regs[2];
	case 3: return regs->regs[3];
	case 4: return regs->regs[4];
	default: return regs->regs[5];
	}
#endif
}

/* ---- processes ---- */

SEC("tp_btf/sched_process_fork")
int handle_fork(u64 *ctx)
{
	struct task_struct *parent = (void *)ctx[0];
	struct task_struct *child = (void *)ctx[1];
	u32 ptgid = BPF_CORE_READ(parent, tgid);
	u32 ctid = BPF_CORE_READ(child, pid);
	u32 ctgid = BPF_CORE_READ(child, tgid);
	if (!is_traced(ptgid)) {
		u32 zero = 0;
		struct config *c = bpf_map_lookup_elem(&config, &zero);
		if (!c || c->spawner == 0 || c->spawner != ptgid || ctid != ctgid)
			return 0;
	}
	if (ctid == ctgid) {
		u32 one = 1;
		if (bpf_map_update_elem(&traced, &ctgid, &one, BPF_ANY))
			count_lost(LOST_TRACED);
	}
	struct ev_fork *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_RING);
		return 0;
	}
	head(&e->h, EV_FORK, sizeof(*e), bpf_get_current_pid_tgid(), bpf_ktime_get_ns());
	e->child_tid = ctid;
	e->child_tgid = ctgid;
	bpf_ringbuf_submit(e, rb_flags());
	return 0;
}

SEC("tp_btf/sched_process_exit")
int handle_exit(u64 *ctx)
{
	u64 pt = bpf_get_current_pid_tgid();
	u32 tid = (u32)pt, tgid = pt >> 32;
	if (!is_traced(tgid))
		return 0;
	struct task_struct *p = (void *)ctx[0];
	/* do_exit() has decremented signal->live before this tracepoint: 0 means the last thread */
	int live = BPF_CORE_READ(p, signal, live.counter);
	bpf_map_delete_elem(&entries, &tid);
	if (live == 0)
		bpf_map_delete_elem(&traced, &tgid);
	struct ev_exit *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_RING);
		return 0;
	}
	head(&e->h, EV_EXIT, sizeof(*e), pt, bpf_ktime_get_ns());
	e->group_dead = live == 0;
	e->pad = 0;
	bpf_ringbuf_submit(e, rb_flags());
	return 0;
}

/* ---- system calls ---- */

/* The calling thread's run-queue wait so far, ns (0 where the kernel keeps none). */
static __always_inline u64 run_delay(void)
{
	struct task_struct *t = (void *)bpf_get_current_task();
	return BPF_CORE_READ(t, sched_info.run_delay);
}

struct iov_loop {
	u64 base;
	u64 sum;
};

static long iov_one(u32 i, struct iov_loop *l)
{
	u64 len = 0;
	/* struct iovec { void *iov_base; size_t iov_len; } */
	bpf_probe_read_user(&len, sizeof(len), (void *)(l->base + (u64)i * 16 + 8));
	l->sum += len;
	return 0;
}

/* The bytes a vectored call asks for: its iovecs' lengths, read from the program's memory. */
static __always_inline u64 iov_sum(u64 iov, u64 cnt)
{
	struct iov_loop l = { .base = iov, .sum = 0 };
	u32 n = cnt > MAX_IOVS ? MAX_IOVS : cnt;
	bpf_loop(n, iov_one, &l, 0);
	return l.sum;
}

SEC("tp_btf/sys_enter")
int handle_sys_enter(u64 *ctx)
{
	u64 pt = bpf_get_current_pid_tgid();
	u32 tgid = pt >> 32, tid = (u32)pt;
	if (!is_traced(tgid))
		return 0;
	long id = (long)ctx[1];
	if (id < 0 || id >= MAX_SYSCALL)
		return 0;
	u32 nr = id;
	struct sysinfo *si = bpf_map_lookup_elem(&sysinfo, &nr);
	if (!si || si->kind == 0)
		return 0;
	struct pt_regs *regs = (void *)ctx[0];
	struct entry e = {};
	e.nr = nr;
	e.args[0] = sys_arg(regs, 0);
	e.args[1] = sys_arg(regs, 1);
	e.args[2] = sys_arg(regs, 2);
	e.args[3] = sys_arg(regs, 3);
	e.args[4] = sys_arg(regs, 4);
	e.args[5] = sys_arg(regs, 5);
	if (si->special == SP_IOV_SUM)
		e.extra = iov_sum(e.args[1], e.args[2]);
	e.rd = run_delay();
	e.start = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&entries, &tid, &e, BPF_ANY))
		count_lost(LOST_ENTRY);
	return 0;
}

struct aio_loop {
	u64 pt;
	u64 start;
	u64 ts;
	u64 ctx;
	u64 base;
	u32 type;
};

static long aio_one(u32 i, struct aio_loop *l)
{
	struct ev_aio *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_RING);
		return 0;
	}
	head(&e->h, l->type, sizeof(*e), l->pt, l->ts);
	e->start = l->start;
	e->ctx = l->ctx;
	e->index = i;
	e->pad = 0;
	__builtin_memset(e->raw, 0, sizeof(e->raw));
	if (l->type == EV_AIO_SUBMIT) {
		u64 iocb = 0;
		bpf_probe_read_user(&iocb, sizeof(iocb), (void *)(l->base + (u64)i * 8));
		e->ptr = iocb;
		bpf_probe_read_user(e->raw, 64, (void *)iocb);
	} else {
		e->ptr = 0;
		bpf_probe_read_user(e->raw, 32, (void *)(l->base + (u64)i * 32));
	}
	bpf_ringbuf_submit(e, rb_flags());
	return 0;
}

static __always_inline void aio_records(u64 pt, struct entry *en, u64 ts, long ret, u32 type)
{
	if (ret <= 0)
		return;
	struct aio_loop l = {
		.pt = pt,
		.start = en->start,
		.ts = ts,
		.ctx = en->args[0],
		.base = type == EV_AIO_SUBMIT ? en->args[2] : en->args[3],
		.type = type,
	};
	u32 n = ret;
	if (n > MAX_IOCBS) {
		count_lost(LOST_IOCBS);
		n = MAX_IOCBS;
	}
	bpf_loop(n, aio_one, &l, 0);
}

static __always_inline void fixed_files(u64 pt, struct entry *en, u64 ts, long ret)
{
	u32 op = en->args[1];
	u64 arg = en->args[2];
	u32 nr_args = en->args[3];
	u32 offset = 0, nr = 0;
	u64 fds = 0;
	u8 raw[32] = {};
	if (ret < 0)
		return;
	switch (op) {
	case 2: /* IORING_REGISTER_FILES: arg is the fds */
		fds = arg;
		nr = nr_args;
		break;
	case 6: /* IORING_REGISTER_FILES_UPDATE: struct io_uring_files_update { u32 offset, resv; u64 fds } */
		bpf_probe_read_user(raw, 16, (void *)arg);
		offset = *(u32 *)&raw[0];
		fds = *(u64 *)&raw[8];
		nr = nr_args;
		break;
	case 13: /* IORING_REGISTER_FILES2: struct io_uring_rsrc_register { u32 nr, flags; u64 resv2, data, tags } */
		bpf_probe_read_user(raw, 32, (void *)arg);
		nr = *(u32 *)&raw[0];
		fds = *(u64 *)&raw[16];
		break;
	case 14: /* IORING_REGISTER_FILES_UPDATE2: struct io_uring_rsrc_update2 { u32 offset, resv; u64 data, tags; u32 nr } */
		bpf_probe_read_user(raw, 32, (void *)arg);
		offset = *(u32 *)&raw[0];
		fds = *(u64 *)&raw[8];
		nr = *(u32 *)&raw[24];
		break;
	default:
		return;
	}
	struct ev_fixed *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_RING);
		return;
	}
	head(&e->h, EV_FIXED_FILES, sizeof(*e), pt, ts);
	e->ctx = en->extra;
	e->ring_fd = en->args[0];
	e->opcode = op;
	e->offset = offset;
	e->nr = nr;
	u32 got = nr < MAX_FIXED ? nr : MAX_FIXED;
	if (nr > MAX_FIXED)
		count_lost(LOST_FIXED);
	e->got = got;
	e->pad = 0;
	__builtin_memset(e->fds, 0xff, sizeof(e->fds));
	/* A NULL data pointer (a sparse table) leaves every slot -1. */
	u64 sz = (u64)got * 4;
	barrier_var(sz);
	if (fds && sz > 0 && sz <= sizeof(e->fds))
		bpf_probe_read_user(e->fds, sz, (void *)fds);
	bpf_ringbuf_submit(e, rb_flags());
}

SEC("tp_btf/sys_exit")
int handle_sys_exit(u64 *ctx)
{
	u64 pt = bpf_get_current_pid_tgid();
	u32 tid = (u32)pt;
	struct entry *en = bpf_map_lookup_elem(&entries, &tid);
	if (!en)
		return 0;
	u64 ts = bpf_ktime_get_ns();
	long ret = (long)ctx[1];
	u32 nr = en->nr;
	struct sysinfo *si = bpf_map_lookup_elem(&sysinfo, &nr);
	if (!si) {
		bpf_map_delete_elem(&entries, &tid);
		return 0;
	}
	s8 p1 = si->path1, p2 = si->path2;
	u8 special = si->special;
	if (p1 < 0 && p2 < 0 && (special == SP_NONE || special == SP_IOV_SUM)) {
		/* The common case (reads, writes, fsyncs...): straight into the ring. */
		struct ev_sys *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
		if (!r) {
			count_lost(LOST_RING);
		} else {
			head(&r->h, EV_SYS, sizeof(*r), pt, ts);
			r->start = en->start;
			r->ret = ret;
			r->args[0] = en->args[0];
			r->args[1] = en->args[1];
			r->args[2] = en->args[2];
			r->args[3] = en->args[3];
			r->args[4] = en->args[4];
			r->args[5] = en->args[5];
			r->extra = en->extra;
			r->nr = nr;
			r->kind = si->kind;
			r->flags = 0;
			r->len1 = 0;
			r->len2 = 0;
			r->pad = 0;
			r->rd_start = en->rd;
			r->rd_end = run_delay();
			bpf_ringbuf_submit(r, rb_flags());
		}
		bpf_map_delete_elem(&entries, &tid);
		return 0;
	}
	u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s) {
		bpf_map_delete_elem(&entries, &tid);
		return 0;
	}
	struct ev_sys *e = &s->sys;
	e->start = en->start;
	e->ret = ret;
	e->args[0] = en->args[0];
	e->args[1] = en->args[1];
	e->args[2] = en->args[2];
	e->args[3] = en->args[3];
	e->args[4] = en->args[4];
	e->args[5] = en->args[5];
	e->extra = en->extra;
	e->nr = nr;
	e->kind = si->kind;
	e->flags = 0;
	e->len1 = 0;
	e->len2 = 0;
	e->pad = 0;
	e->rd_start = en->rd;
	e->rd_end = run_delay();
	if (special == SP_OPEN_HOW && ret >= 0) {
		u64 how = 0;
		bpf_probe_read_user(&how, sizeof(how), (void *)en->args[2]);
		e->extra = how;
	} else if (special == SP_READ_U64_ARG1 && ret == 0) {
		u64 v = 0;
		bpf_probe_read_user(&v, sizeof(v), (void *)en->args[1]);
		e->extra = v;
	}
	u32 len1 = 0, len2 = 0;
	if (p1 >= 0 && p1 < 6) {
		long n = bpf_probe_read_user_str(s->paths, MAX_PATH, (void *)en->args[p1 & 7]);
		if (n > 0) {
			len1 = n;
			if (n == MAX_PATH)
				e->flags |= 1;
		}
	}
	if (p2 >= 0 && p2 < 6) {
		long n = bpf_probe_read_user_str(s->paths + MAX_PATH, MAX_PATH, (void *)en->args[p2 & 7]);
		if (n > 0) {
			len2 = n;
			if (n == MAX_PATH)
				e->flags |= 2;
		}
	}
	e->len1 = len1;
	e->len2 = len2;
	/* Path 1 at the start of `paths`, path 2 (if any) at MAX_PATH: only what is used is sent. */
	u32 size = sizeof(struct ev_sys) + (len2 > 0 ? MAX_PATH + len2 : len1);
	if (size > sizeof(struct scratch))
		size = sizeof(struct scratch);
	head(&e->h, EV_SYS, size, pt, ts);
	if (bpf_ringbuf_output(&events, s, size, rb_flags()))
		count_lost(LOST_RING);
	if (special == SP_AIO_SUBMIT)
		aio_records(pt, en, ts, ret, EV_AIO_SUBMIT);
	else if (special == SP_AIO_EVENTS)
		aio_records(pt, en, ts, ret, EV_AIO_DONE);
	else if (special == SP_URING_REGISTER)
		fixed_files(pt, en, ts, ret);
	bpf_map_delete_elem(&entries, &tid);
	return 0;
}

/* ---- io_uring ---- */

static __always_inline void ring_seen(u64 pt, u64 ts, struct io_ring_ctx *ctx, s32 fd, u32 sq, u32 cq, u32 flags)
{
	u64 key = (u64)ctx;
	u32 one = 1;
	if (bpf_map_lookup_elem(&rings, &key))
		return;
	if (bpf_map_update_elem(&rings, &key, &one, BPF_NOEXIST)) {
		count_lost(LOST_RINGS);
		return;
	}
	struct ev_ring *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_RING);
		return;
	}
	head(&e->h, EV_RING, sizeof(*e), pt, ts);
	e->ctx = key;
	e->fd = fd;
	e->sq_entries = sq;
	e->cq_entries = cq;
	e->flags = flags;
	bpf_ringbuf_submit(e, rb_flags());
}

/* io_uring_create(int fd, void *ctx, u32 sq_entries, u32 cq_entries, u32 flags) */
SEC("tp_btf/io_uring_create")
int handle_uring_create(u64 *ctx)
{
	u64 pt = bpf_get_current_pid_tgid();
	if (!is_traced(pt >> 32))
		return 0;
	ring_seen(pt, bpf_ktime_get_ns(), (void *)ctx[1], (s32)ctx[0], (u32)ctx[2], (u32)ctx[3], (u32)ctx[4]);
	return 0;
}

/* io_uring_register(void *ctx, unsigned opcode, unsigned nr_files, unsigned nr_bufs, long ret):
 * the ring of the io_uring_register(2) call this thread is in. */
SEC("tp_btf/io_uring_register")
int handle_uring_register(u64 *ctx)
{
	u64 pt = bpf_get_current_pid_tgid();
	u32 tid = (u32)pt;
	struct entry *en = bpf_map_lookup_elem(&entries, &tid);
	if (en)
		en->extra = ctx[0];
	return 0;
}

SEC("tp_btf/io_uring_submit_req")
int handle_uring_submit(u64 *ctx)
{
	u64 pt = bpf_get_current_pid_tgid();
	if (!is_traced(pt >> 32))
		return 0;
	u64 ts = bpf_ktime_get_ns();
	/* tp_btf's typed pointer: fields are read directly (CO-RE relocated loads). */
	struct io_kiocb *req = (void *)ctx[0];
	struct io_ring_ctx *rctx = req->ctx;
	u64 key = (u64)rctx;
	if (!bpf_map_lookup_elem(&rings, &key))
		ring_seen(pt, ts, rctx, -1, BPF_CORE_READ(rctx, sq_entries), BPF_CORE_READ(rctx, cq_entries),
			  BPF_CORE_READ(rctx, flags));
	struct ev_uring_submit *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_RING);
		return 0;
	}
	head(&e->h, EV_URING_SUBMIT, sizeof(*e), pt, ts);
	u8 op = req->opcode;
	e->ctx = key;
	e->req = (u64)req;
	e->user_data = req->cqe.user_data;
	e->fd = req->cqe.fd;
	e->opcode = op;
	e->sqe_flags = req->flags;
	e->buf_index = req->buf_index;
	e->pad = 0;
	e->off = 0;
	e->addr = 0;
	e->len = 0;
	e->rw_flags = 0;
	switch (op) {
	case 1:  /* READV */
	case 2:  /* WRITEV */
	case 4:  /* READ_FIXED */
	case 5:  /* WRITE_FIXED */
	case 22: /* READ */
	case 23: /* WRITE */
	{
		struct io_rw *rw = (void *)&req->cmd;
		e->off = rw->kiocb.ki_pos;
		e->addr = rw->addr;
		e->len = rw->len;
		e->rw_flags = rw->flags;
		break;
	}
	case 3:  /* FSYNC */
	case 8:  /* SYNC_FILE_RANGE */
	case 17: /* FALLOCATE */
	{
		struct io_sync *sy = (void *)&req->cmd;
		e->off = BPF_CORE_READ(sy, off);
		e->len = BPF_CORE_READ(sy, len);
		e->rw_flags = op == 17 ? BPF_CORE_READ(sy, mode) : BPF_CORE_READ(sy, flags);
		break;
	}
	default:
		break;
	}
	bpf_ringbuf_submit(e, rb_flags());
	return 0;
}

/* io_uring_complete(struct io_ring_ctx *ctx, void *req, struct io_uring_cqe *cqe) */
SEC("tp_btf/io_uring_complete")
int handle_uring_complete(u64 *ctx)
{
	u64 key = ctx[0];
	if (!bpf_map_lookup_elem(&rings, &key))
		return 0;
	struct io_uring_cqe *cqe = (void *)ctx[2];
	struct ev_uring_complete *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_RING);
		return 0;
	}
	head(&e->h, EV_URING_COMPLETE, sizeof(*e), bpf_get_current_pid_tgid(), bpf_ktime_get_ns());
	e->ctx = key;
	e->req = ctx[1];
	e->user_data = cqe->user_data;
	e->res = cqe->res;
	e->cflags = cqe->flags;
	bpf_ringbuf_submit(e, rb_flags());
	return 0;
}

/* ---- the block layer (--level block) ---- */

static __always_inline u32 rq_dev(struct request *rq)
{
	struct gendisk *disk = BPF_CORE_READ(rq, q, disk);
	if (!disk)
		return 0;
	u32 major = BPF_CORE_READ(disk, major);
	u32 minor = BPF_CORE_READ(disk, first_minor);
	return major << 20 | minor;
}

SEC("tp_btf/block_rq_issue")
int handle_rq_issue(u64 *ctx)
{
	u32 zero = 0;
	struct config *c = bpf_map_lookup_elem(&config, &zero);
	if (!c || !c->block)
		return 0;
	struct request *rq = (void *)ctx[0];
	u32 dev = rq_dev(rq);
	if (!bpf_map_lookup_elem(&devices, &dev))
		return 0;
	struct blk_start st = {};
	st.issue = bpf_ktime_get_ns();
	st.queued = BPF_CORE_READ(rq, start_time_ns);
	st.sector = BPF_CORE_READ(rq, __sector);
	st.bytes = BPF_CORE_READ(rq, __data_len);
	st.cmd_flags = BPF_CORE_READ(rq, cmd_flags);
	st.dev = dev;
	u64 key = (u64)rq;
	if (bpf_map_update_elem(&blk_inflight, &key, &st, BPF_ANY))
		count_lost(LOST_BLOCK);
	return 0;
}

/* block_rq_complete(struct request *rq, blk_status_t error, unsigned int nr_bytes) */
SEC("tp_btf/block_rq_complete")
int handle_rq_complete(u64 *ctx)
{
	u64 key = ctx[0];
	struct blk_start *st = bpf_map_lookup_elem(&blk_inflight, &key);
	if (!st)
		return 0;
	struct ev_block *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_RING);
		bpf_map_delete_elem(&blk_inflight, &key);
		return 0;
	}
	head(&e->h, EV_BLOCK, sizeof(*e), bpf_get_current_pid_tgid(), bpf_ktime_get_ns());
	e->issue = st->issue;
	e->queued = st->queued;
	e->sector = st->sector;
	e->dev = st->dev;
	e->bytes = st->bytes;
	e->cmd_flags = st->cmd_flags;
	e->error = (u8)ctx[1];
	bpf_ringbuf_submit(e, rb_flags());
	bpf_map_delete_elem(&blk_inflight, &key);
	return 0;
}
