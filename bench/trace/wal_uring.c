/* A write-ahead log on io_uring (raw syscalls, no liburing): each round submits two 4 KiB
 * writes together and waits for both, then submits an fdatasync of the log and waits for it
 * before the next round's writes. What a database's log writer does: a commit's records are
 * durable before the next group goes out. Meanwhile a read of a pipe stays in flight on the
 * ring from the start to the end (a database's socket or event read): the ring is one deeper
 * than the log's own operations, so only the waits, not the depth, hold the order. Used by
 * crates/cli/tests/async_replay.rs to check that a replay keeps these waits.
 *
 *   wal_uring DIR ROUNDS      writes DIR/wal (2 x ROUNDS x 4 KiB)
 */
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int ring;
static unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
static struct io_uring_sqe *sqes;
static struct io_uring_cqe *cqes;

static void *map(size_t len, off_t what) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, what);
    if (p == MAP_FAILED) { perror("mmap"); exit(2); }
    return p;
}

static void setup(unsigned entries) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    ring = (int)syscall(__NR_io_uring_setup, entries, &p);
    if (ring < 0) { perror("io_uring_setup"); exit(3); }
    char *sq = map(p.sq_off.array + p.sq_entries * sizeof(unsigned), IORING_OFF_SQ_RING);
    char *cq = map(p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe), IORING_OFF_CQ_RING);
    sqes = map(p.sq_entries * sizeof(struct io_uring_sqe), IORING_OFF_SQES);
    sq_tail = (unsigned *)(sq + p.sq_off.tail);
    sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    sq_array = (unsigned *)(sq + p.sq_off.array);
    cq_head = (unsigned *)(cq + p.cq_off.head);
    cq_tail = (unsigned *)(cq + p.cq_off.tail);
    cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
}

static void queue(int op, int fd, void *buf, unsigned len, unsigned long long off, unsigned long long tag) {
    unsigned tail = *sq_tail, i = tail & *sq_mask;
    struct io_uring_sqe *s = &sqes[i];
    memset(s, 0, sizeof *s);
    s->opcode = (unsigned char)op;
    s->fd = fd;
    s->addr = (unsigned long long)(unsigned long)buf;
    s->len = len;
    s->off = off;
    if (op == IORING_OP_FSYNC) s->fsync_flags = IORING_FSYNC_DATASYNC;
    s->user_data = tag;
    sq_array[i] = i;
    __atomic_store_n(sq_tail, tail + 1, __ATOMIC_RELEASE);
}

/* Submit what is queued and wait until `n` completions came; each must have succeeded. */
static void submit_and_wait(unsigned submit, unsigned n) {
    if (syscall(__NR_io_uring_enter, ring, submit, n, IORING_ENTER_GETEVENTS, NULL, 0) < 0) {
        perror("io_uring_enter");
        exit(4);
    }
    for (unsigned got = 0; got < n;) {
        unsigned head = *cq_head;
        if (head == __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE)) {
            if (syscall(__NR_io_uring_enter, ring, 0, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) exit(4);
            continue;
        }
        struct io_uring_cqe *c = &cqes[head & *cq_mask];
        if (c->res < 0) { fprintf(stderr, "operation %llu: %s\n", c->user_data, strerror(-c->res)); exit(5); }
        __atomic_store_n(cq_head, head + 1, __ATOMIC_RELEASE);
        got++;
    }
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: wal_uring DIR ROUNDS\n"); return 1; }
    char path[4096];
    snprintf(path, sizeof path, "%s/wal", argv[1]);
    int rounds = atoi(argv[2]);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror(path); return 1; }
    static char buf[2][4096], byte;
    memset(buf, 'w', sizeof buf);
    int pipefd[2];
    if (pipe(pipefd) != 0) { perror("pipe"); return 1; }
    setup(8);
    queue(IORING_OP_READ, pipefd[0], &byte, 1, 0, 999999);
    submit_and_wait(1, 0);
    for (int r = 0; r < rounds; r++) {
        queue(IORING_OP_WRITE, fd, buf[0], 4096, (2ULL * r) * 4096, 3ULL * r);
        queue(IORING_OP_WRITE, fd, buf[1], 4096, (2ULL * r + 1) * 4096, 3ULL * r + 1);
        submit_and_wait(2, 2);
        queue(IORING_OP_FSYNC, fd, NULL, 0, 0, 3ULL * r + 2);
        submit_and_wait(1, 1);
    }
    /* The pipe's read completes now. */
    if (write(pipefd[1], "x", 1) != 1) { perror("write"); return 1; }
    submit_and_wait(0, 1);
    close(fd);
    return 0;
}
