#!/usr/bin/env python3
"""Watches a process's open files and reports the most disk that its files under DIR held
at once (unnamed or deleted temporary files included, which `du` cannot see).

    python3 benches/fdwatch.py PID DIR [--interval 0.01] [--max-seconds 600]

Polls /proc/PID/fd until the process exits; prints one JSON object:
{"peak_bytes": allocated bytes (st_blocks * 512), "peak_size": apparent size, "samples": n,
 "df_used_delta_peak": the largest growth of the file system's used space seen meanwhile}.
The df figure is of the whole file system, so other writers disturb it; the fd figure is
exact for the process.
"""

import json
import os
import sys
import time


def main():
    pid = int(sys.argv[1])
    root = os.path.realpath(sys.argv[2])
    interval = 0.01
    max_seconds = 600.0
    if "--interval" in sys.argv:
        interval = float(sys.argv[sys.argv.index("--interval") + 1])
    if "--max-seconds" in sys.argv:
        max_seconds = float(sys.argv[sys.argv.index("--max-seconds") + 1])
    fd_dir = f"/proc/{pid}/fd"

    def df_used():
        st = os.statvfs(root)
        return (st.f_blocks - st.f_bfree) * st.f_frsize

    base_used = df_used()
    peak_bytes = peak_size = df_peak = 0
    samples = 0
    end = time.monotonic() + max_seconds
    while time.monotonic() < end:
        try:
            fds = os.listdir(fd_dir)
        except FileNotFoundError:
            break
        blocks = size = 0
        for fd in fds:
            path = os.path.join(fd_dir, fd)
            try:
                target = os.readlink(path)
                if not target.startswith(root + "/"):
                    continue
                st = os.stat(path)
            except OSError:
                continue
            if not (st.st_mode & 0o170000) == 0o100000:  # regular files only
                continue
            blocks += st.st_blocks * 512
            size += st.st_size
        peak_bytes = max(peak_bytes, blocks)
        peak_size = max(peak_size, size)
        df_peak = max(df_peak, df_used() - base_used)
        samples += 1
        time.sleep(interval)
    print(json.dumps({"peak_bytes": peak_bytes, "peak_size": peak_size, "samples": samples,
                      "df_used_delta_peak": df_peak}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
