/* iolab-seqdirect: sequential 1 MiB O_DIRECT writes in C, with one thing changed at a time, to
 * take apart why iolab, fio and dd write at different speeds to the same fast device
 * (docs/fidelity.md, "Sequential O_DIRECT"; bench/seqdirect.sh runs it).
 *
 *   iolab-seqdirect FILE MIB MODE
 *
 * Writes MIB MiB to FILE (created, O_EXCL: never an existing file) with pwrite at increasing
 * offsets, then removes it. Before each write the buffer is prepared by MODE:
 *   none      the buffer is filled once and not touched again (what iolab does, but for its
 *             8-byte offset stamp)
 *   stamp     the first 8 bytes get the offset (exactly iolab's per-write work)
 *   zero-read read(2) of the block from /dev/zero into the buffer (what dd if=/dev/zero does)
 *   memset    memset of the whole buffer (new data written by the CPU, the cheapest way)
 *   scramble  what fio's default scramble_buffers does: in every 512 bytes, the offset into
 *             one cache line and the time into another
 *   huge      like none, but the buffer is 2 MiB aligned and madvise(MADV_HUGEPAGE)'d, so the
 *             kernel can pin one huge page instead of 256 small ones
 * Prints: MODE mib=N elapsed_s=S mb_s=R prep_us=P thp_kb=H (P: mean time of the preparation
 * alone; H: the process's anonymous memory in huge pages at the end). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define BS (1 << 20)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: iolab-seqdirect FILE MIB none|stamp|zero-read|memset|scramble|huge\n");
        return 2;
    }
    const char *path = argv[1], *mode = argv[3];
    long mib = atol(argv[2]);
    if (mib <= 0) return 2;
    int huge = !strcmp(mode, "huge");
    size_t alloc = huge ? 4 << 20 : BS;
    unsigned char *raw = mmap(NULL, alloc, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return perror("mmap"), 1;
    unsigned char *buf = raw;
    if (huge) {
        buf = (unsigned char *)(((uintptr_t)raw + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
        if (madvise(buf, 2 << 20, MADV_HUGEPAGE) < 0) return perror("madvise"), 1;
    }
    for (size_t i = 0; i < BS; i++) buf[i] = (unsigned char)(i * 2654435761u >> 24);
    int zero = open("/dev/zero", O_RDONLY);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_DIRECT, 0644);
    if (fd < 0 || zero < 0) {
        fprintf(stderr, "iolab-seqdirect: opening %s: %s\n", path, strerror(errno));
        return 1;
    }
    double prep = 0, start = now_s();
    for (long k = 0; k < mib; k++) {
        off_t off = (off_t)k * BS;
        double p0 = now_s();
        if (!strcmp(mode, "stamp")) {
            memcpy(buf, &off, 8);
        } else if (!strcmp(mode, "zero-read")) {
            if (read(zero, buf, BS) != BS) return perror("read /dev/zero"), 1;
        } else if (!strcmp(mode, "memset")) {
            memset(buf, (int)k, BS);
        } else if (!strcmp(mode, "scramble")) {
            /* fio's small_content_scramble: in every 512 bytes, the offset into one of its 8
             * cache lines and the start time into the end of the first. */
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            unsigned line = (unsigned)((uint64_t)t.tv_nsec ^ (uint64_t)off) & 7;
            for (size_t s = 0; s < BS; s += 512) {
                uint64_t boff = (uint64_t)off + s, tv[2] = {(uint64_t)t.tv_sec, (uint64_t)t.tv_nsec};
                memcpy(buf + s + (line << 6), &boff, 8);
                memcpy(buf + s + 64 - 16, tv, 16);
            }
        } else if (strcmp(mode, "none") && !huge) {
            fprintf(stderr, "iolab-seqdirect: unknown mode %s\n", mode);
            return 2;
        }
        prep += now_s() - p0;
        if (pwrite(fd, buf, BS, off) != BS) {
            fprintf(stderr, "iolab-seqdirect: pwrite at %lld: %s\n", (long long)off, strerror(errno));
            return 1;
        }
    }
    double el = now_s() - start;
    /* Did the kernel back anything with huge pages? (AnonHugePages of the whole process.) */
    long thp_kb = 0;
    FILE *sm = fopen("/proc/self/smaps_rollup", "r");
    if (sm) {
        char line[256];
        while (fgets(line, sizeof line, sm))
            if (sscanf(line, "AnonHugePages: %ld kB", &thp_kb) == 1) break;
        fclose(sm);
    }
    close(fd);
    unlink(path);
    printf("%s mib=%ld elapsed_s=%.3f mb_s=%.0f prep_us=%.1f thp_kb=%ld\n", mode, mib, el, mib * (double)BS / el / 1e6,
           prep / mib * 1e6, thp_kb);
    return 0;
}
