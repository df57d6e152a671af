#!/usr/bin/env python3
"""Write a large `strace -f -ttt -T -y` text for the parser benchmark: 8 threads doing seed 002's
redo-log pattern (lseek, 32 KiB O_DIRECT write, fsync), a quarter of the calls unfinished and
resumed, some reads and pwrites, until SIZE bytes. Usage: gen_strace.py OUT SIZE_MB"""
import sys

out, size = sys.argv[1], int(sys.argv[2]) * 1_000_000
t = 1795430443.000000
threads = [22059 + i for i in range(8)]
with open(out, "w") as f:
    n = 0
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
