#!/usr/bin/env bash
# bench/ckptcost.sh: what a checkpoint write costs a minibatch step (issue
# 31, item 2), measured side by side in one run: coauthor-physics at np 2
# under mpirun (SAGE, hidden 256, fanouts 15,10, global batch 1024: issue
# 29's settings), EPOCHS epochs (default 3) without checkpoints and with a
# checkpoint every EVERY steps (default 5: --checkpoint-every 5steps, which
# also checkpoints at every epoch's end), alternated REPS times (default
# 2). The cost of one write is the difference of the median epoch times
# over the writes of an epoch; the step time is the plain run's epoch over
# its steps. (With a checkpoint every step the writes queue behind each
# other: the disk's rate, not a write's cost, is then measured.) Also the
# time rank 0's step loop was blocked in each checkpoint inside an epoch
# (the records' checkpoint_s over the writes inside the epoch): the file
# is written in the background, so on a machine whose cores the ranks do
# not all keep busy that is what a checkpoint costs.
#
#   bench/ckptcost.sh BIN GNN OUTCSV
#
# GNN: coauthor-physics as .gnn (bench/throughput.sh converts one to
# bench/out/cache/coauthor-physics.gnn).
set -euo pipefail
bin=$1 gnn=$2 csv=$3
EPOCHS=${EPOCHS:-3} REPS=${REPS:-2} EVERY=${EVERY:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
commit=$(git -C "$(dirname "$0")/.." rev-parse --short HEAD)
echo "variant,rep,epochs,steps_per_epoch,writes_per_epoch,median_epoch_s,median_checkpoint_s,checkpoint_bytes,loadavg_start,commit" >"$csv"
for rep in $(seq "$REPS"); do
	for variant in plain "every-${EVERY}steps"; do
		args=()
		if [ "$variant" != plain ]; then
			rm -rf "$work/ck"
			args=(--checkpoint "$work/ck" --checkpoint-every "${EVERY}steps")
		fi
		l0=$(cut -d' ' -f1 /proc/loadavg)
		mpirun --bind-to none -np 2 "$bin" train --data "$gnn" --split random-60-20-20-seed0 --model sage --hidden 256 \
			--fanouts 15,10 --global-batch-size 1024 --epochs "$EPOCHS" --eval-every 0 --metrics "$work/m.jsonl" \
			"${args[@]}" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
		size=0
		[ "$variant" != plain ] && size=$(du -cb "$work"/ck/*.bin | tail -1 | cut -f1)
		python3 - "$work/m.jsonl" "$variant" "$rep" "$size" "$l0" "$commit" "$EVERY" >>"$csv" <<'PY'
import json, statistics, sys
path, variant, rep, size, l0, commit, every = sys.argv[1:]
ep = [json.loads(l) for l in open(path) if l.strip()]
ep = [r for r in ep if "epoch" in r and "epoch_s" in r]
steps = ep[0]["batches"]
# Before steps EVERY, 2·EVERY, … of the epoch, and at its end.
writes = 0 if variant == "plain" else (steps - 1) // int(every) + 1
ck = statistics.median(r.get("checkpoint_s", 0) for r in ep)
print(f"{variant},{rep},{len(ep)},{steps},{writes},{statistics.median(r['epoch_s'] for r in ep):.4f},{ck:.4f},{size},{l0},{commit}")
PY
		rm -f "$work/m.jsonl"
	done
done
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
plain = statistics.median(float(r["median_epoch_s"]) for r in rows if r["variant"] == "plain")
ck = [r for r in rows if r["variant"] != "plain"]
with_ck = statistics.median(float(r["median_epoch_s"]) for r in ck)
steps, writes = int(rows[0]["steps_per_epoch"]), int(ck[0]["writes_per_epoch"])
step, write = plain / steps, (with_ck - plain) / writes
# checkpoint_s counts the writes inside the epoch, not the one at its end.
blocked = statistics.median(float(r["median_checkpoint_s"]) for r in ck) / (writes - 1)
print(f"ckptcost: {steps} steps and {writes} checkpoints an epoch; a step {step*1e3:.1f} ms; a checkpoint adds {write*1e3:.1f} ms "
      f"({write/step:.2f} steps) to the epoch, of which the step loop is blocked {blocked*1e3:.1f} ms ({blocked/step:.2f} steps)")
PY
