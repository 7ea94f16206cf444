#!/usr/bin/env bash
# gen_rmat_mtx.sh SCALE [OUTDIR]
#
# Writes the Graph500 R-MAT graph of the given scale (edge factor 16, A=0.57
# B=0.19 C=0.19, seed 1, symmetrized, self-loops and duplicates dropped) as
# two Matrix Market files in OUTDIR (default /tmp):
#   rmatS.mtx      pattern general   (both triangles stored)
#   rmatS-sym.mtx  pattern symmetric (lower triangle only; same matrix)
# It uses `gnnmpi gen rmat` (which writes the OGB raw layout, 0-based
# "src,dst" pairs with both directions) and converts the edge list with awk.
# GNNMPI (default: build from the repository into /tmp/gnnmpi-h) can point
# at an existing gnnmpi binary.
set -euo pipefail
scale=${1:?usage: gen_rmat_mtx.sh SCALE [OUTDIR]}
out=${2:-/tmp}
here=$(cd "$(dirname "$0")" && pwd)
bin=${GNNMPI:-/tmp/gnnmpi-h}
if [[ ! -x $bin ]]; then
  (cd "$here/../.." && go build -o "$bin" .)
fi
raw=$out/rmat$scale.ogb
rm -rf "$raw"
"$bin" gen rmat --scale "$scale" --edgefactor 16 --out "$raw" >&2
n=$(zcat "$raw/raw/num-node-list.csv.gz")
m=$(zcat "$raw/raw/num-edge-list.csv.gz")
{
  echo "%%MatrixMarket matrix coordinate pattern general"
  echo "% Graph500 R-MAT scale $scale edge factor 16 (gnnmpi gen rmat), symmetrized"
  echo "$n $n $m"
  zcat "$raw/raw/edge.csv.gz" | awk -F, '{print $1+1, $2+1}'
} > "$out/rmat$scale.mtx"
lower=$(zcat "$raw/raw/edge.csv.gz" | awk -F, '$1>$2{c++} END{print c+0}')
{
  echo "%%MatrixMarket matrix coordinate pattern symmetric"
  echo "% Graph500 R-MAT scale $scale edge factor 16 (gnnmpi gen rmat), lower triangle"
  echo "$n $n $lower"
  zcat "$raw/raw/edge.csv.gz" | awk -F, '$1>$2{print $1+1, $2+1}'
} > "$out/rmat$scale-sym.mtx"
echo "wrote $out/rmat$scale.mtx ($n x $n, $m entries) and $out/rmat$scale-sym.mtx ($lower entries)" >&2
