#!/usr/bin/env bash
# bench/ckptcost.sh: what a checkpoint write costs a minibatch step (issue
# 31, item 2), measured side by side in one run: coauthor-physics at np 2
# under mpirun (SAGE, hidden 256, fanouts 15,10, global batch 1024: issue
# 29's settings), EPOCHS epochs (default 3) without checkpoints and with a
# checkpoint after every step (--checkpoint-every 1steps), alternated REPS
# times (default 2). The cost of one write is the difference of the median
# epoch times over the steps of an epoch; the step time is the plain run's
# epoch over its steps.
#
#   bench/ckptcost.sh BIN GNN OUTCSV
#
# GNN: coauthor-physics as .gnn (bench/throughput.sh converts one to
# bench/out/cache/coauthor-physics.gnn).
set -euo pipefail
bin=$1 gnn=$2 csv=$3
EPOCHS=${EPOCHS:-3} REPS=${REPS:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
commit=$(git -C "$(dirname "$0")/.." rev-parse --short HEAD)
echo "variant,rep,epochs,steps_per_epoch,median_epoch_s,checkpoint_bytes,loadavg_start,commit" >"$csv"
for rep in $(seq "$REPS"); do
	for variant in plain every-step; do
		args=()
		if [ "$variant" = every-step ]; then
			rm -rf "$work/ck"
			args=(--checkpoint "$work/ck" --checkpoint-every 1steps)
		fi
		l0=$(cut -d' ' -f1 /proc/loadavg)
		mpirun --bind-to none -np 2 "$bin" train --data "$gnn" --split random-60-20-20-seed0 --model sage --hidden 256 \
			--fanouts 15,10 --global-batch-size 1024 --epochs "$EPOCHS" --eval-every 0 --metrics "$work/m.jsonl" \
			"${args[@]}" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
		size=0
		[ "$variant" = every-step ] && size=$(du -cb "$work"/ck/*.bin | tail -1 | cut -f1)
		python3 - "$work/m.jsonl" "$variant" "$rep" "$size" "$l0" "$commit" >>"$csv" <<'PY'
import json, statistics, sys
path, variant, rep, size, l0, commit = sys.argv[1:]
ep = [json.loads(l) for l in open(path) if l.strip()]
ep = [r for r in ep if "epoch" in r and "epoch_s" in r]
print(f"{variant},{rep},{len(ep)},{ep[0]['batches']},{statistics.median(r['epoch_s'] for r in ep):.4f},{size},{l0},{commit}")
PY
		rm -f "$work/m.jsonl"
	done
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {v: statistics.median(float(r["median_epoch_s"]) for r in rows if r["variant"] == v) for v in ("plain", "every-step")}
steps = int(rows[0]["steps_per_epoch"])
step, write = by["plain"] / steps, (by["every-step"] - by["plain"]) / steps
print(f"ckptcost: {steps} steps an epoch; a step {step*1e3:.1f} ms; a checkpoint write adds {write*1e3:.1f} ms ({write/step:.2f} steps)")
PY
