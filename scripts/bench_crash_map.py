"""Time the crash map over max_num_seqs 1..512 x k 0..8 for every engine (goal: < 2 s on one core).

Run in a fresh process (the policies cache capture sizes), e.g.
`OMP_NUM_THREADS=1 python scripts/bench_crash_map.py`. CPU time is printed beside wall time
because a shared machine inflates the latter. The crash map keeps no sweep cache: on the 2-core
EPYC VM the former per-n table cache and plain per-cell dispatch both took about 2.0 s CPU, so
only identical cells share a summary and the V0 workloads are computed once per (S, k).
"""

import time

from graphlab.sizing.crash_maps import crash_map


def main() -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    frame = crash_map("all", range(1, 513), range(0, 9))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"crash map, all engines, max_num_seqs 1..512 x k 0..8: {len(frame)} cells, "
        f"{wall:.2f} s wall, {cpu:.2f} s CPU"
    )


if __name__ == "__main__":
    main()
