/* timed.c: run a command and write its wall-clock time (CLOCK_MONOTONIC, ns) to a file, so a
 * program's own elapsed can be measured inside a recorder (bench/trace/recorder.sh).
 * Usage: timed OUTFILE CMD [ARGS...] */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: timed OUTFILE CMD [ARGS...]\n"); return 2; }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pid_t p = fork();
    if (p == 0) { execvp(argv[2], argv + 2); perror(argv[2]); _exit(127); }
    int st = 0;
    waitpid(p, &st, 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    FILE *f = fopen(argv[1], "w");
    if (!f) { perror(argv[1]); return 2; }
    fprintf(f, "%lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
    fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
