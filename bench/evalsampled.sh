#!/usr/bin/env bash
# bench/evalsampled.sh: evaluation restricted to the validation and test
# vertices (train --eval-fanouts) against layer-wise inference over every
# vertex, side by side in one run, on a papers100M-like graph (gnnmpi gen
# papers: 0.3% of the vertices are validation and test vertices, as in
# ogbn-papers100M). For each rank count in NPS (default "1 2"; under
# mpirun above 1) and each evaluation (layer-wise; --eval-fanouts -1,-1,
# the vertices' whole receptive fields, exact; --eval-fanouts 15,10, a
# sample), REPS times alternating (default 2): train EPOCHS epochs
# (default 2), evaluating after each, and record the median evaluation
# seconds, the accuracies of the last, the evaluation's bytes per epoch
# and the peak RSS of rank 0 with the memory check's estimate of it. Then, on one rank, `gnnmpi infer --split
# test` of a model trained there (--save-model), layer-wise and with
# --eval-fanouts=-1,-1, REPS times alternating, into OUTCSV's sibling
# OUTCSV-infer.csv: the command's wall seconds (loading included), and
# whether the predictions are the same.
#
#   bench/evalsampled.sh BIN OUTCSV
#
# NODES (default 1000000) sizes the graph; it is generated once into
# bench/out/evalsampled. COMMIT names BIN's commit in the CSVs (default
# the tree's HEAD), for a binary built elsewhere.
set -euo pipefail
bin=$1 csv=$2
NODES=${NODES:-1000000} NPS=${NPS-1 2} REPS=${REPS:-2} EPOCHS=${EPOCHS:-2}
cd "$(dirname "$0")/.."
data=bench/out/evalsampled/papers$NODES
if [ ! -d "$data" ]; then
	mkdir -p bench/out/evalsampled
	"$bin" gen papers --nodes "$NODES" --degree 15 --features 128 --out "$data" >&2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
commit=${COMMIT:-$(git rev-parse --short HEAD)}
echo "nodes,np,evaluation,rep,epochs,median_eval_s,val_acc,test_acc,eval_bytes_per_epoch,peak_rss_bytes_rank0,estimated_peak_bytes_rank0,median_epoch_s,loadavg_start,commit" >"$csv"
for rep in $(seq "$REPS"); do
	for np in $NPS; do
		for ev in layerwise all sampled; do
			args=()
			case $ev in
			all) args=(--eval-fanouts=-1,-1) ;;
			sampled) args=(--eval-fanouts=15,10) ;;
			esac
			run=("$bin" --metrics "$work/m.jsonl" train --data "$data" --epochs "$EPOCHS" --eval-every 1
				--fanouts 15,10 --batch-size 1024 --hidden 128 "${args[@]}")
			[ "$np" -gt 1 ] && run=(mpirun -np "$np" --bind-to none "${run[@]}")
			load=$(cut -d' ' -f1 /proc/loadavg)
			rm -f "$work/m.jsonl"
			echo "== np $np, $ev, rep $rep (load $load)" >&2
			"${run[@]}" >"$work/log" 2>&1 || {
				tail -5 "$work/log" >&2
				exit 1
			}
			python3 - "$work/m.jsonl" "$NODES" "$np" "$ev" "$rep" "$load" "$commit" "$work/log" >>"$csv" <<'PY'
import json, re, statistics, sys
path, nodes, np_, ev, rep, load, commit, log = sys.argv[1:]
# Rank 0's estimated peaks: METIS's (a whole graph on several ranks) and training's.
est = [int(x) for x in re.findall(r"memory check: rank 0[ :].*?estimated peak (\d+) bytes", open(log).read())]
recs = [json.loads(l) for l in open(path) if l.strip()]
eps = [r for r in recs if "epoch" in r and r.get("val_acc") is not None]
fin = next(r for r in recs if r.get("final"))
evs = [r["phase_s"]["eval"] for r in eps]
eb = statistics.mean(r["bytes"].get("eval", 0) for r in eps)
print(",".join(str(x) for x in [nodes, np_, ev, rep, len(eps), round(statistics.median(evs), 4), round(eps[-1]["val_acc"], 4),
    round(eps[-1]["test_acc"], 4), int(eb), fin["peak_rss_bytes"][0], max(est) if est else "", round(fin["median_epoch_s"], 4), load, commit]))
PY
			tail -n 1 "$csv" >&2
		done
	done
done
icsv=${csv%.csv}-infer.csv
echo "nodes,np,inference,rep,wall_s,test_vertices,same_predictions,loadavg_start,commit" >"$icsv"
"$bin" train --data "$data" --epochs 1 --fanouts 15,10 --batch-size 1024 --hidden 128 --eval-every 0 \
	--save-model "$work/m.safetensors" >"$work/log" 2>&1 || {
	tail -5 "$work/log" >&2
	exit 1
}
for rep in $(seq "$REPS"); do
	for inf in layerwise all; do
		args=()
		[ "$inf" = all ] && args=(--eval-fanouts=-1,-1)
		load=$(cut -d' ' -f1 /proc/loadavg)
		s=$(date +%s.%N)
		"$bin" infer --model "$work/m.safetensors" --data "$data" --split test --out "$work/$inf.npy" "${args[@]}" >"$work/log" 2>&1 || {
			tail -5 "$work/log" >&2
			exit 1
		}
		wall=$(echo "$(date +%s.%N) - $s" | bc)
		/usr/bin/python3 - "$work" "$NODES" "$inf" "$rep" "$wall" "$load" "$commit" >>"$icsv" <<'PY'
import os, sys
import numpy as np
work, nodes, inf, rep, wall, load, commit = sys.argv[1:]
got = np.load(os.path.join(work, inf + ".npy"))
other = os.path.join(work, "layerwise.npy")
same = bool(np.array_equal(got, np.load(other))) if os.path.exists(other) else ""
print(",".join(str(x) for x in [nodes, 1, inf, rep, round(float(wall), 3), got.size, same, load, commit]))
PY
		tail -n 1 "$icsv" >&2
	done
done
