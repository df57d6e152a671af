#!/usr/bin/env python3
"""Write a large synthetic `strace -f -ttt -T -y` text for the parser benchmark, until SIZE bytes.

redo (default): 8 threads doing seed 002's redo-log pattern (lseek, 32 KiB O_DIRECT write, fsync),
a quarter of the writes unfinished and resumed around another thread's call, some preads.
fork: a fork-heavy program (a shell running a build): the parent forks one short-lived child after
another (5,000 alive at most); each opens a file, writes it in a few calls, fsyncs, closes and exits
(`+++ exited`), so the trace has hundreds of thousands of processes, never many at once.

Usage: gen_strace.py OUT SIZE_MB [redo|fork]"""
import sys

out, size = sys.argv[1], int(sys.argv[2]) * 1_000_000
mode = sys.argv[3] if len(sys.argv) > 3 else "redo"
t = 1795430443.000000


def redo(f):
    global t
    threads = [22059 + i for i in range(8)]
    f.write(f"22058 {t:.6f} execve(\"/tmp/redo\", [\"/tmp/redo\"], 0x7ffd /* 39 vars */) = 0 <0.000203>\n")
    for i, tid in enumerate(threads):
        f.write(f"22058 {t:.6f} clone3({{flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM, child_tid=0x7f66, parent_tid=0x7f66, exit_signal=0, stack=0x7f66, stack_size=0x7fff80, tls=0x7f66}} => {{parent_tid=[{tid}]}}, 88) = {tid} <0.000119>\n")
        f.write(f"{tid} {t:.6f} openat(AT_FDCWD</tmp/rt>, \"/data/redo{i}.log\", O_WRONLY|O_CREAT|O_DIRECT, 0644) = {3+i}</data/redo{i}.log> <0.000087>\n")
    written = 0
    r = 0
    while written < size:
        lines = []
        for i, tid in enumerate(threads):
            fd = f"{3+i}</data/redo{i}.log>"
            t += 0.000013
            off = (r % 256) * 1048576
            lines.append(f"{tid} {t:.6f} lseek({fd}, {off}, SEEK_SET) = {off} <0.000006>\n")
            t += 0.000011
            if r % 4 == 0:
                lines.append(f"{tid} {t:.6f} write({fd}, \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"..., 32768 <unfinished ...>\n")
                lines.append(f"{threads[(i+1)%8]} {t:.6f} futex(0x7f6603820990, FUTEX_WAKE_PRIVATE, 1) = 0 <0.000004>\n")
                lines.append(f"{tid} {t+0.0001:.6f} <... write resumed>) = 32768 <0.000310>\n")
            else:
                lines.append(f"{tid} {t:.6f} write({fd}, \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"..., 32768) = 32768 <0.000099>\n")
            t += 0.000021
            lines.append(f"{tid} {t:.6f} fsync({fd}) = 0 <0.001795>\n")
            if r % 16 == 0:
                lines.append(f"{tid} {t:.6f} pread64({fd}, \"\\0\\0\"..., 4096, 8192) = 4096 <0.000040>\n")
        s = "".join(lines)
        f.write(s)
        written += len(s)
        r += 1


def fork(f):
    global t
    parent = 1000
    f.write(f"{parent} {t:.6f} execve(\"/bin/sh\", [\"sh\", \"build.sh\"], 0x7ffd /* 39 vars */) = 0 <0.000203>\n")
    written = 0
    n = 0
    alive = []
    while written < size:
        lines = []
        pid = 2000 + n % 4_000_000
        n += 1
        t += 0.000010
        lines.append(f"{parent} {t:.6f} clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f) = {pid} <0.000050>\n")
        t += 0.000010
        lines.append(f"{pid} {t:.6f} openat(AT_FDCWD</build>, \"obj/f{n}.o\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3</build/obj/f{n}.o> <0.000020>\n")
        for k in range(4):
            t += 0.000005
            lines.append(f"{pid} {t:.6f} write(3</build/obj/f{n}.o>, \"\\177ELF\"..., 4096) = 4096 <0.000008>\n")
        lines.append(f"{pid} {t:.6f} fsync(3</build/obj/f{n}.o>) = 0 <0.000300>\n")
        lines.append(f"{pid} {t:.6f} close(3</build/obj/f{n}.o>) = 0 <0.000003>\n")
        alive.append(pid)
        if len(alive) >= 5000 or n % 2 == 0:
            done = alive.pop(0)
            lines.append(f"{done} {t:.6f} exit_group(0) = ?\n")
            lines.append(f"{done} {t:.6f} +++ exited with 0 +++\n")
        s = "".join(lines)
        f.write(s)
        written += len(s)


with open(out, "w") as f:
    (fork if mode == "fork" else redo)(f)
