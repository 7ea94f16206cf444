#!/usr/bin/env bash
# build.sh: builds the SpGEMM baseline harnesses into bench/spgemm/bin/.
#
#   bin/graphblas   SuiteSparse:GraphBLAS (apt: libgraphblas-dev)
#   bin/combblas    CombBLAS 2D SUMMA     (apt: libcombblas-dev libopenmpi-dev openmpi-bin)
#   scipy_mm.py     needs no build; checked here (apt: python3-scipy, run with /usr/bin/python3)
#
# Exits non-zero with a message naming the missing package if a library or
# compiler is missing. CC, CXX (default mpicxx) and CFLAGS/CXXFLAGS may be
# overridden from the environment.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/bin
mkdir -p "$bin"
CC=${CC:-cc}
MPICXX=${MPICXX:-mpicxx}
CFLAGS=${CFLAGS:--O3 -march=native}
CXXFLAGS=${CXXFLAGS:--O3 -march=native}
fail=0

missing() { echo "build.sh: $1 — install it with: apt-get install -y $2" >&2; fail=1; }

have_header() { # have_header HEADER: found in the compiler's search path?
  echo "#include <$1>" | "$2" -x "$3" -E - >/dev/null 2>&1
}

command -v "$CC" >/dev/null || missing "C compiler '$CC' not found" "gcc"
command -v "$MPICXX" >/dev/null || missing "MPI C++ compiler '$MPICXX' not found" "libopenmpi-dev openmpi-bin"

# --- GraphBLAS --------------------------------------------------------------
if command -v "$CC" >/dev/null; then
  if ! have_header GraphBLAS.h "$CC" c; then
    missing "GraphBLAS.h not found (SuiteSparse:GraphBLAS)" "libgraphblas-dev"
  else
    # Debian's libgraphblas-dev: /usr/include/GraphBLAS.h, libgraphblas.so
    # (OpenMP inside the library; no extra flags needed).
    "$CC" $CFLAGS -Wall -o "$bin/graphblas" "$here/graphblas.c" -lgraphblas -lm \
      || { echo "build.sh: compiling graphblas.c failed (is libgraphblas-dev installed?)" >&2; fail=1; }
  fi
fi

# --- CombBLAS ---------------------------------------------------------------
# Debian's libcombblas-dev (1.6.2): headers in /usr/include/CombBLAS/ (include
# as "CombBLAS/CombBLAS.h", so -I/usr/include is enough), libraries
# /usr/lib/x86_64-linux-gnu/libCombBLAS.so, libGraphGenlib.so, libUsortlib.so.
# Its CMake config (/usr/lib/x86_64-linux-gnu/cmake/CombBLAS) exports the
# library with INTERFACE_COMPILE_DEFINITIONS THREADED and OpenMP, C++14, MPI:
# we match that with -DTHREADED -fopenmp -std=c++14 and compile with mpicxx.
# Threads per rank follow OMP_NUM_THREADS.
if command -v "$MPICXX" >/dev/null; then
  if ! have_header CombBLAS/CombBLAS.h "$MPICXX" c++; then
    missing "CombBLAS/CombBLAS.h not found" "libcombblas-dev"
  else
    "$MPICXX" $CXXFLAGS -std=c++14 -DTHREADED -fopenmp -Wno-deprecated-declarations \
      -o "$bin/combblas" "$here/combblas.cpp" -lCombBLAS -lGraphGenlib -lUsortlib \
      || { echo "build.sh: compiling combblas.cpp failed (is libcombblas-dev installed?)" >&2; fail=1; }
  fi
  command -v mpirun >/dev/null || missing "mpirun not found" "openmpi-bin"
fi

# --- scipy ------------------------------------------------------------------
if ! /usr/bin/python3 -c 'import scipy.sparse, scipy.io' 2>/dev/null; then
  missing "scipy not importable by /usr/bin/python3" "python3-scipy"
fi

if [[ $fail != 0 ]]; then
  echo "build.sh: FAILED (see above)" >&2
  exit 1
fi
echo "build.sh: built $(ls "$bin" | tr '\n' ' ')in $bin" >&2
