#!/usr/bin/env bash
# bench/train.sh: per-phase epoch time and bytes of data-parallel GraphSAGE
# training at np = 1, 2, 4 (mpirun), on coauthor-physics (split
# random-60-20-20-seed0: 20,695 training vertices) and a 1M-vertex SBM,
# plus the GEMM throughput of the training path against OpenBLAS's own.
#
#   bench/train.sh [EPOCHS]        default 2 epochs per configuration
#
# Environment: DATA (default ../shared/data), NPS (default "1 2 4"),
# DATASETS (default "physics sbm1m").
# Writes bench/out/train.csv, bench/out/train.png, bench/out/gemm.csv,
# bench/out/gemm.png and the raw JSONL metrics under bench/out/train/.
set -euo pipefail
cd "$(dirname "$0")/.."
EPOCHS=${1:-2}
DATA=${DATA:-../shared/data}
NPS=${NPS:-1 2 4}
DATASETS=${DATASETS:-physics sbm1m}
OUT=bench/out
CACHE=$OUT/cache
mkdir -p "$OUT/train" "$CACHE"
./run.sh build >/dev/null
G=./gnnmpi

dataset_path() {
	case $1 in
	physics)
		[ -f "$CACHE/physics.gnn" ] || $G convert --data "$DATA/coauthor-physics" --out "$CACHE/physics.gnn" >&2
		echo "$CACHE/physics.gnn random-60-20-20-seed0"
		;;
	sbm1m)
		[ -f "$CACHE/sbm1m.gnn" ] || $G gen sbm --nodes 1000000 --seed 1 --out "$CACHE/sbm1m.gnn" >&2
		echo "$CACHE/sbm1m.gnn random"
		;;
	*) echo "bench/train.sh: unknown dataset $1" >&2; exit 2 ;;
	esac
}

echo "dataset,np,epochs,median_epoch_s,sample_s,fetch_s,compute_s,grad_s,fetch_bytes,grad_bytes,commit" > "$OUT/train.csv"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
for ds in $DATASETS; do
	read -r path split < <(dataset_path "$ds")
	for np in $NPS; do
		m="$OUT/train/$ds-np$np.jsonl"
		rm -f "$m"
		echo "== $ds np=$np" >&2
		NP=$np ./run.sh -n "$np" train --data "$path" --split "$split" --epochs "$EPOCHS" --eval-every 0 \
			--batch-size 1024 --partition metis --metrics "$m" >&2
		python3 - "$m" "$ds" "$np" "$EPOCHS" "$commit" >> "$OUT/train.csv" <<'PY'
import json, statistics, sys
path, ds, np_, epochs, commit = sys.argv[1:]
recs = [json.loads(l) for l in open(path)]
ep = [r for r in recs if not r.get("final")]
fin = [r for r in recs if r.get("final")][-1]
# Phase seconds: median over epochs of the slowest rank's time per phase.
ph = {k: statistics.median(e["phase_s"][k] for e in ep) for k in ("sample", "fetch", "compute", "grad")}
b = fin["bytes_per_epoch"]
print(f'{ds},{np_},{epochs},{fin["median_epoch_s"]:.4f},{ph["sample"]:.4f},{ph["fetch"]:.4f},{ph["compute"]:.4f},{ph["grad"]:.4f},{b.get("fetch",0)},{b.get("grad",0)},{commit}')
PY
	done
done
go run ./bench/plot phases "$OUT/train.csv" "$OUT/train.png"

# GEMM: raw Sgemm (OpenBLAS, gonum) against the SAGE layer's dense work,
# in one run.
go test -run '^$' -bench 'BenchmarkGEMM|BenchmarkSAGELayer' -benchtime 3x ./model/ | tee "$OUT/gemm.txt" >&2
python3 - "$OUT/gemm.txt" > "$OUT/gemm.csv" <<'PY'
import re, sys
print("impl,shape,gflops")
for line in open(sys.argv[1]):
    m = re.match(r'Benchmark(\w+)/(\S+?)-\d+\s.*?([\d.]+) GFLOP/s', line)
    if not m:
        continue
    kind, rest, g = m.groups()
    parts = dict(p.split("=", 1) for p in rest.split("/") if "=" in p)
    impl = parts.pop("impl", kind)
    if kind != "GEMM":
        impl = f"{kind.lower()}({impl})"
    # Group by the product's inner and output widths (k×n for GEMM, fin×fout
    # for the layer), which both share.
    shape = f'{parts.get("k", parts.get("fin"))}x{parts.get("n", parts.get("fout"))}'

    print(f"{impl},{shape},{g}")
PY
go run ./bench/plot gemm "$OUT/gemm.csv" "$OUT/gemm.png"
cat "$OUT/train.csv" "$OUT/gemm.csv"
