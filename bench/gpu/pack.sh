#!/usr/bin/env bash
# bench/gpu/pack.sh [DIR]: prepares what bench/gpu/run.sh needs on a GPU
# machine that has no Go, no MPI and no Debian packages, in one directory
# (default bench/out/gpupack, ignored by git; carry it to the machine):
#
#   gnnmpi        a nompi,noblas build (in-process ranks, pure-Go BLAS;
#                 CUDA, NVRTC, cuBLAS, cuSPARSE and NCCL are dlopened there)
#   lib/          the shared libraries it links beyond glibc (libmetis)
#   data/         cora, and coauthor-physics.gnn converted from ../shared/data
#                 when present
#   peers/        bench/peers' PyTorch and PyG scripts
#   run.sh        bench/gpu/run.sh
#
# It fails when the directory would exceed 64 MiB (the device tool's limit).
set -euo pipefail
cd "$(dirname "$0")/../.."
PACK=${1:-bench/out/gpupack}
rm -rf "$PACK"
mkdir -p "$PACK/lib" "$PACK/data" "$PACK/peers"
CGO_ENABLED=1 go build -tags nompi,noblas -trimpath -o "$PACK/gnnmpi" .
# Every library the binary links that glibc does not provide.
ldd "$PACK/gnnmpi" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
	grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
	while read -r lib; do cp -L "$lib" "$PACK/lib/"; done
cp -r data/cora "$PACK/data/"
if [ -d ../shared/data/coauthor-physics ]; then
	# As .gnn (sparse rows): smaller, and the peers (gnnfile.py) and gnnmpi
	# load it without parsing csv.gz.
	"$PACK/gnnmpi" convert --data ../shared/data/coauthor-physics --out "$PACK/data/coauthor-physics.gnn" >/dev/null
else
	echo "pack: ../shared/data/coauthor-physics not found; the pack has Cora only" >&2
fi
cp bench/peers/sage_torch.py bench/peers/sage_pyg.py bench/peers/load_gnnmpi.py bench/peers/gnnfile.py "$PACK/peers/"
cp bench/gpu/run.sh "$PACK/run.sh"
size=$(du -sb "$PACK" | cut -f1)
if [ "$size" -gt $((64 << 20)) ]; then
	echo "pack: $PACK is $size bytes, over the 64 MiB a device call carries" >&2
	exit 1
fi
echo "pack: $PACK, $((size >> 20)) MiB: $(ls "$PACK" | tr '\n' ' ')"
