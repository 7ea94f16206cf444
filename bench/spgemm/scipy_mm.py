#!/usr/bin/python3
"""scipy_mm.py: SpGEMM baseline with scipy.sparse (single-threaded).

Reads a Matrix Market file with scipy.io.mmread (which expands symmetric and
skew-symmetric files; pattern entries become 1.0), converts it to a float64
CSR matrix (duplicates summed) and times C = A @ A. Only the product is
timed; the reported seconds are the median of --reps runs.

usage: /usr/bin/python3 scipy_mm.py [--reps R] FILE.mtx
stdout: one line of JSON; everything else goes to stderr.

Note: scipy's CSR product drops entries whose computed value is exactly 0,
so on real matrices with cancellation nnz_c can be below GraphBLAS's and
CombBLAS's structural count; on pattern / non-negative inputs they agree.
"""
import argparse
import json
import os
import statistics
import sys
import time

# Keep any BLAS the import chain pulls in single-threaded (the product itself
# is scipy's sequential C++ csr_matmat either way).
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402
import scipy  # noqa: E402
import scipy.io  # noqa: E402
import scipy.sparse  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("file")
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("--reps must be >= 1")

    t0 = time.perf_counter()
    a = scipy.io.mmread(args.file)
    a = scipy.sparse.csr_matrix(a, dtype=np.float64)
    a.sum_duplicates()
    if a.shape[0] != a.shape[1]:
        sys.exit(f"scipy_mm: {args.file}: A*A needs a square matrix, got {a.shape}")
    print(f"scipy_mm: {args.file}: {a.shape[0]} x {a.shape[1]}, nnz(A) = {a.nnz}, "
          f"read in {time.perf_counter() - t0:.2f}s, scipy {scipy.__version__}, "
          f"index dtype {a.indices.dtype}", file=sys.stderr)

    secs = []
    c = None
    for r in range(args.reps):
        c = None  # free the previous product before timing the next
        s = time.perf_counter()
        c = a @ a
        secs.append(time.perf_counter() - s)
        print(f"scipy_mm: rep {r}: {secs[-1]:.4f}s, nnz(C) = {c.nnz}", file=sys.stderr)

    out = {
        "tool": "scipy",
        "version": scipy.__version__,
        "threads": 1,
        "n": a.shape[0],
        "nnz_a": int(a.nnz),
        "nnz_c": int(c.nnz),
        "sum_c": float(c.sum()),
        "seconds": round(statistics.median(secs), 6),
        "min_seconds": round(min(secs), 6),
        "stat": "median",
        "reps": args.reps,
    }
    print(json.dumps(out, separators=(",", ":")))


if __name__ == "__main__":
    main()
