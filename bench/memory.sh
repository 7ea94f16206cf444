#!/usr/bin/env bash
# bench/memory.sh: memory against the state on a plain 1M-vertex graph
# (issue 29), gnnmpi beside the PyTorch peer in one run.
#
#   bench/memory.sh
#
# The graph: `gnnmpi gen sbm --nodes 1000000 --degree 20 --features 128`
# (dense real-valued features, split "random"), converted once to a .gnn
# file for gnnmpi and partitioned by METIS into 4 parts for np 4 (so that no
# rank partitions the whole graph at start-up); the peer reads the OGB
# directory. Training: 2-layer GraphSAGE, fanouts 10,5, hidden 64, batch
# 1024 (--global-batch-size 1024 for gnnmpi), EPOCHS epochs (default 1),
# evaluation (layer-wise inference over every vertex) after the last one.
# gnnmpi runs at np 1 (the .gnn file) and np 4 (the parts; with the
# default replicated topology every rank reads all parts' adjacency, and
# again with --topology 1.5d --c 1, each rank its part's rows), each rank's
# peak RSS (VmHWM) and state bytes from its final record; the peer
# (bench/peers/sage_torch.py, TORCH_THREADS threads) reports its
# ru_maxrss. SYSTEMS (default "gnnmpi torch") picks what runs; GNNMPI a
# binary to run instead of building this tree's; WORK (default
# bench/out/memory/data) holds the graph.
#
# Writes bench/out/memory.csv: system, np, rank, peak RSS, state bytes,
# peak / state, the limit 1.5·state + 300 MB, median epoch seconds, test
# accuracy, the load average before and after, the commit.
set -euo pipefail
cd "$(dirname "$0")/.."
EPOCHS=${EPOCHS:-1}
SYSTEMS=${SYSTEMS:-gnnmpi torch}
TORCH_THREADS=${TORCH_THREADS:-2}
OUT=bench/out
LOGS=$OUT/memory
WORK=${WORK:-$LOGS/data}
PY=/usr/bin/python3
mkdir -p "$LOGS" "$WORK"
if [ -n "${GNNMPI:-}" ]; then
	G=$GNNMPI
	commit=${COMMIT:-$(basename "$G")}
else
	./run.sh build >/dev/null
	G=./gnnmpi
	commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
fi
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
load1() { cut -d' ' -f1-3 /proc/loadavg; }

dir=$WORK/sbm1m gnn=$WORK/sbm1m.gnn parts=$WORK/sbm1m-p4
if [ ! -d "$dir/raw" ]; then
	rm -rf "$dir.tmp"
	$G gen sbm --nodes 1000000 --degree 20 --features 128 --seed 1 --out "$dir.tmp" >&2
	mv "$dir.tmp" "$dir"
fi
[ -f "$gnn" ] || { $G convert --data "$dir" --out "$gnn.tmp.gnn" >&2 && mv "$gnn.tmp.gnn" "$gnn"; }
[ -f "$parts/manifest.json" ] || $G partition --data "$gnn" --parts 4 --method metis --out "$parts" >&2

csv=$OUT/memory.csv
echo "system,np,rank,peak_rss_bytes,state_bytes,peak_over_state,limit_bytes,median_epoch_s,test_acc,load_start,load_end,commit" > "$csv"
flags=(--model sage --layers 2 --hidden 64 --fanouts 10,5 --global-batch-size 1024 --epochs "$EPOCHS" --eval-every "$EPOCHS" --split random --feature-norm none)
for sys in $SYSTEMS; do
	case $sys in
	gnnmpi)
		for run in 1 4 4-1.5d; do
			np=${run%%-*} data=$gnn topo=()
			[ "$np" -gt 1 ] && data=$parts
			[ "$run" = 4-1.5d ] && topo=(--topology 1.5d --c 1)
			m=$LOGS/gnnmpi-np$run.jsonl
			rm -f "$m"
			echo "== gnnmpi np=$run" >&2
			l0=$(load1)
			# --bind-to none: Open MPI binds a job of 1 or 2 ranks to one
			# core each; np 1 would get one of the machine's cores.
			mpirun --oversubscribe --bind-to none -np "$np" $G train --data "$data" "${topo[@]}" "${flags[@]}" --metrics "$m" 2>&1 | tee "$LOGS/gnnmpi-np$run.log" >&2
			"$PY" - "$m" "$run" "$l0" "$(load1)" "$commit" >> "$csv" <<'PY'
import json, sys
path, run, l0, l1, commit = sys.argv[1:]
np_, _, topo = run.partition("-")
system = "gnnmpi" + ("-" + topo if topo else "")
fin = [json.loads(l) for l in open(path) if '"final"' in l][-1]
sb = fin["state_bytes"]
for r, peak in enumerate(fin["peak_rss_bytes"]):
    state = sum(v[r] for v in sb.values())
    print(f'{system},{np_},{r},{peak},{state},{peak / state:.2f},{int(1.5 * state + 300e6)},'
          f'{fin["median_epoch_s"]:.3f},{fin["test_acc"]:.4f},{l0},{l1},{commit}')
PY
		done
		;;
	torch)
		echo "== torch ($TORCH_THREADS threads)" >&2
		l0=$(load1)
		OMP_NUM_THREADS=$TORCH_THREADS OPENBLAS_NUM_THREADS=$TORCH_THREADS "$PY" bench/peers/sage_torch.py --data "$dir" \
			--split random --epochs "$EPOCHS" --fanouts 10,5 --batch-size 1024 --hidden 64 --feature-norm none \
			--threads "$TORCH_THREADS" | tee "$LOGS/torch.log" >&2
		"$PY" - "$LOGS/torch.log" "$l0" "$(load1)" "$commit" >> "$csv" <<'PY'
import json, sys
log, l0, l1, commit = sys.argv[1:]
r = json.loads(open(log).read().splitlines()[-1])
print(f'torch,1,0,{r["peak_rss_bytes"]},,,,{r["epoch_s"]:.3f},{r["test_acc"]:.4f},{l0},{l1},torch {r["torch"]}')
PY
		;;
	esac
done
cat "$csv"
