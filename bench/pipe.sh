#!/usr/bin/env bash
# bench/pipe.sh: full-graph training of a deep model, graph parallelism
# against GNNPipe and the hybrid, at the same number of epochs:
#
#   bench/pipe.sh [DATASET...]    default "physics computers film sbm1m"
#
#   physics    coauthor-physics, split random-20-30-seed0 (published reference split)
#   computers  amazon-computers, split random-20-30-seed0, raw binary features
#              (row-normalised, the 32-layer GCNII does not learn in 50 epochs)
#   film       film (Actor), split geom-gcn-0
#   sbm1m      `gnnmpi gen sbm --nodes 1000000` (split random)
#
# Each run is one `mpirun -np NP gnnmpi train --mode MODE` with METIS
# parts (graph: one per rank; pipe: one; hybrid: PIPELINES) and METIS chunks.
# Environment: NPS (default 4), MODES (default "graph pipe hybrid"), MODELS
# (default gcnii), LAYERS (32), HIDDEN (100), EPOCHS (default 60),
# EVAL_EVERY (10), CHUNKS (4), PIPELINES (2), LR (0.01), PHYSICS /
# COMPUTERS / FILM (dataset paths; a .gnn file loads faster), TIMEOUT
# (seconds per run, default 3600), EXTRA (more train flags).
# Appends one row per run to bench/out/pipe.csv (bytes per epoch by phase,
# measured and analytical, median epoch time, accuracy, memory per rank)
# and keeps the JSONL metrics under bench/out/pipe/.
set -uo pipefail
cd "$(dirname "$0")/.."
DATASETS=("$@")
[[ ${#DATASETS[@]} == 0 ]] && DATASETS=(physics computers film sbm1m)
NPS=${NPS:-4}
MODES=${MODES:-graph pipe hybrid}
MODELS=${MODELS:-gcnii}
LAYERS=${LAYERS:-32}
HIDDEN=${HIDDEN:-100}
EPOCHS=${EPOCHS:-60}
EVAL_EVERY=${EVAL_EVERY:-10}
CHUNKS=${CHUNKS:-4}
PIPELINES=${PIPELINES:-2}
LR=${LR:-0.01}
EXTRA=${EXTRA:-}
PHYSICS=${PHYSICS:-../shared/data/coauthor-physics}
COMPUTERS=${COMPUTERS:-../shared/data/amazon-computers}
FILM=${FILM:-../shared/data/film}
TIMEOUT=${TIMEOUT:-3600}
OUT=bench/out
RAW=$OUT/pipe
CACHE=$OUT/cache
mkdir -p "$RAW" "$CACHE"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
G=$RAW/gnnmpi
go build -o "$G" . || exit 1
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
CSV=$OUT/pipe.csv
cols="dataset,model,mode,np,stages,pipelines,chunks,layers,hidden,epochs,act,act_grad,halo,grad,total,act_model,act_grad_model,halo_model,grad_model,halo_rows,median_epoch_s,best_epoch,best_val_acc,test_acc,state_mb_max,rss_mb_max,loadavg,commit,error"
[[ -f $CSV ]] || echo "$cols" > "$CSV"

for ds in "${DATASETS[@]}"; do
	case $ds in
	physics) data=(--data "$PHYSICS" --split random-20-30-seed0) ;;
	computers) data=(--data "$COMPUTERS" --split random-20-30-seed0 --feature-norm none) ;;
	film) data=(--data "$FILM" --split geom-gcn-0 --feature-norm none) ;;
	sbm1m)
		f=$CACHE/sbm1m.gnn
		[[ -f $f ]] || "$G" gen sbm --nodes 1000000 --seed 1 --out "$f" >&2 || exit 1
		data=(--data "$f" --split random --feature-norm none)
		;;
	*) echo "bench/pipe.sh: unknown dataset $ds (physics, computers, film, sbm1m)" >&2; exit 2 ;;
	esac
	for model in $MODELS; do
		for np in $NPS; do
			for mode in $MODES; do
				flags=(--mode "$mode")
				case $mode in
				graph) flags+=(--chunks 1) ;;
				pipe) flags+=(--chunks "$CHUNKS") ;;
				hybrid) flags+=(--chunks "$CHUNKS" --pipelines "$PIPELINES") ;;
				esac
				name=$ds-$model-$mode-np$np
				load=$(cut -d' ' -f1 /proc/loadavg)
				echo "== $name (load $load)" >&2
				rm -f "$RAW/$name.jsonl"
				# shellcheck disable=SC2086
				timeout "$TIMEOUT" mpirun -np "$np" "$G" --metrics "$RAW/$name.jsonl" train "${data[@]}" "${flags[@]}" \
					--partition metis --model "$model" --layers "$LAYERS" --hidden "$HIDDEN" --epochs "$EPOCHS" \
					--eval-every "$EVAL_EVERY" --lr "$LR" $EXTRA > "$RAW/$name.out" 2> "$RAW/$name.err"
				rc=$?
				python3 - "$RAW/$name.jsonl" "$rc" "$ds" "$model" "$mode" "$np" "$load" "$commit" "$cols" >> "$CSV" <<'PY'
import json, sys
path, rc, ds, model, mode, np_, load, commit, cols = sys.argv[1:]
cols = cols.split(",")
row = dict.fromkeys(cols, "")
row.update(dataset=ds, model=model, mode=mode, np=np_, loadavg=load, commit=commit)
try:
    fin = [json.loads(l) for l in open(path) if '"final"' in l][-1]
    c = fin["config"]
    row.update(stages=c["stages"], pipelines=c["pipelines"], chunks=c["chunks"], layers=c["model"]["Layers"],
               hidden=c["model"]["Hidden"], epochs=fin["epochs_run"], halo_rows=fin["halo_rows"],
               median_epoch_s=round(fin["median_epoch_s"], 4), best_epoch=fin["best_epoch"],
               best_val_acc=round(fin["best_val_acc"], 4), test_acc=round(fin["test_acc"], 4),
               state_mb_max=round(max(fin["state_bytes"]) / 2**20, 1), rss_mb_max=round(max(fin["peak_rss_bytes"]) / 2**20, 1))
    b, a = fin["bytes_per_epoch"], fin["analytical_bytes_per_epoch"]
    tot = 0
    # CSV columns by metrics phase (pipe.TrainPhases; "-" becomes "_").
    for ph in ("act", "act-grad", "halo", "grad"):
        col = ph.replace("-", "_")
        row[col] = b.get(ph, 0)
        row[col + "_model"] = a.get(ph, 0)
        tot += b.get(ph, 0)
    row["total"] = tot
except Exception as e:
    row["error"] = f"exit {rc}: {type(e).__name__}"
print(",".join(str(row[k]) for k in cols))
PY
			done
		done
	done
done
echo "wrote $CSV" >&2
