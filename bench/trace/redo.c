/* redo.c: seed 002's redo-log pattern as a test program for `iolab trace record` and replay.
 * THREADS threads each create redoN.log with O_WRONLY|O_CREAT|O_DIRECT and, ROUNDS times,
 * lseek to i MiB, write 32 KiB from an aligned buffer and fsync.
 * Usage: redo DIR [THREADS] [ROUNDS] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir;
static int rounds = 16;

static void *work(void *arg) {
    long n = (long)arg;
    char path[4096];
    snprintf(path, sizeof path, "%s/redo%ld.log", dir, n);
    int fd = open(path, O_WRONLY | O_CREAT | O_DIRECT, 0644);
    if (fd < 0) { perror(path); exit(1); }
    void *buf;
    if (posix_memalign(&buf, 4096, 32768)) exit(1);
    memset(buf, 'a' + (int)n, 32768);
    for (int i = 0; i < rounds; i++) {
        if (lseek(fd, (off_t)i * 1048576, SEEK_SET) < 0) { perror("lseek"); exit(1); }
        if (write(fd, buf, 32768) != 32768) { perror("write"); exit(1); }
        if (fsync(fd)) { perror("fsync"); exit(1); }
    }
    close(fd);
    free(buf);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: redo DIR [THREADS] [ROUNDS]\n"); return 2; }
    dir = argv[1];
    int threads = argc > 2 ? atoi(argv[2]) : 4;
    if (argc > 3) rounds = atoi(argv[3]);
    pthread_t t[64];
    if (threads < 1 || threads > 64) return 2;
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, work, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    return 0;
}
