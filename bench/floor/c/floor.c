/* iolab-floor-c: the same loop as bench/floor (src/main.rs), in plain C, so bench/overhead.sh
 * can put iolab beside what a C program that issues the same calls reaches. Same modes, same
 * random offsets (xorshift64* with the same seed, uniform over the file's 4 KiB blocks), the
 * clock read once every 1024 operations, no per-operation timing or statistics.
 *
 *   cc -O2 -o iolab-floor-c bench/floor/c/floor.c
 *   iolab-floor-c pread FILE SECONDS
 *   iolab-floor-c pwrite /dev/null SECONDS
 *   iolab-floor-c pread-timed FILE SECONDS       the same, plus the least a loop that keeps a
 *   iolab-floor-c pwrite-timed /dev/null SECONDS latency per operation must do: one TSC read per
 *                                                operation (its completion stamp is the next one's
 *                                                issue stamp) and one increment of a log-linear
 *                                                histogram bucket (HDR's layout, 3 digits)
 *
 * Prints one line: `MODE ops=N elapsed_s=S ops_per_s=R` (the Rust floor's format). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define BS 4096
#define CHECK_EVERY 1024
#define NULL_RANGE (1ULL << 30)

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static inline uint64_t rng_next(void) {
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int usage(void) {
    fprintf(stderr, "usage: iolab-floor-c pread[-timed] FILE SECONDS | iolab-floor-c pwrite[-timed] /dev/null SECONDS\n");
    return 2;
}

int main(int argc, char **argv) {
    if (argc != 4) return usage();
    const char *mode = argv[1], *path = argv[2];
    char *end;
    double secs = strtod(argv[3], &end);
    if (*end || !(secs > 0)) return usage();
    int write_mode, timed = 0;
    if (!strcmp(mode, "pread")) write_mode = 0;
    else if (!strcmp(mode, "pwrite")) write_mode = 1;
    else if (!strcmp(mode, "pread-timed")) write_mode = 0, timed = 1;
    else if (!strcmp(mode, "pwrite-timed")) write_mode = 1, timed = 1;
    else return usage();

    int fd = open(path, write_mode ? O_WRONLY : O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "iolab-floor-c: opening %s: %s\n", path, strerror(errno));
        return 2;
    }
    uint64_t range = NULL_RANGE;
    if (!write_mode) {
        struct stat st;
        if (fstat(fd, &st) < 0) {
            fprintf(stderr, "iolab-floor-c: sizing %s: %s\n", path, strerror(errno));
            return 2;
        }
        range = (uint64_t)st.st_size;
    }
    uint64_t blocks = range / BS;
    if (blocks == 0) {
        fprintf(stderr, "iolab-floor-c: %s is smaller than one 4 KiB block\n", path);
        return 2;
    }
    static char buf[BS] __attribute__((aligned(4096)));
    memset(buf, 0xa5, sizeof buf);
    /* Latency counts in TSC ticks, HDR's bucket layout (2048 sub-buckets, 3 digits). */
    static uint32_t counts[64 << 10];
    uint64_t last = __rdtsc();
    double start = now_s(), elapsed;
    uint64_t ops = 0;
    for (;;) {
        for (int i = 0; i < CHECK_EVERY; i++) {
            off_t off = (off_t)(rng_next() % blocks) * BS;
            ssize_t r = write_mode ? pwrite(fd, buf, BS, off) : pread(fd, buf, BS, off);
            if (timed) {
                uint64_t t = __rdtsc(), d = (t - last) | 1;
                unsigned bucket = 53 - __builtin_clzll(d | 2047);
                counts[(((bucket + 1) << 10) + (d >> bucket) - 1024) & 0xffff]++;
                last = t;
            }
            if (r != BS) {
                if (r < 0) fprintf(stderr, "iolab-floor-c: %s at offset %lld: %s\n", mode, (long long)off, strerror(errno));
                else fprintf(stderr, "iolab-floor-c: short %s: %zd of %d bytes at offset %lld\n", mode, r, BS, (long long)off);
                return 1;
            }
        }
        ops += CHECK_EVERY;
        elapsed = now_s() - start;
        if (elapsed >= secs) break;
    }
    if (timed) {
        uint64_t seen = 0;
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) seen += counts[i];
        if (seen != ops) fprintf(stderr, "iolab-floor-c: %llu latencies for %llu ops\n", (unsigned long long)seen, (unsigned long long)ops);
    }
    printf("%s ops=%llu elapsed_s=%.3f ops_per_s=%.0f\n", mode, (unsigned long long)ops, elapsed, ops / elapsed);
    return 0;
}
