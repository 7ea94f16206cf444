#!/usr/bin/env bash
# bench/sample.sh: bulk matrix-based sampling (gnnmpi sample), sampled
# edges/s against the bulk size k, with the graph replicated on every rank
# or distributed in 1.5D (c = 1, 2), at np = 1, 2, 4 (mpirun
# --oversubscribe: the machine may have fewer cores), and the plain
# per-batch sampler (no matrix form, k = 1) as the baseline, on
#
#   physics  coauthor-physics, split random-60-20-20-seed0 (20,696 seeds)
#   rmat20   Graph500 R-MAT scale 20 (edge factor 16, symmetric), every
#            vertex a seed, MAX_BATCHES minibatches per epoch
#
#   bench/sample.sh [INPUT...]       default "physics rmat20"
#
# Environment: KS (default "1 4 16 64"), NPS (default "1 2 4"), SAMPLER
# (default sage), FANOUTS (default 15,10), BATCH (default 1024), EPOCHS
# (physics passes; default 12: 252 minibatches, 63 per rank at np 4),
# MAX_BATCHES (rmat20 minibatches, default 256), PHYSICS (the dataset; a
# .gnn file is faster to load, default ../shared/data/coauthor-physics),
# TIMEOUT (seconds per run, default 900), GNNMPI (a gnnmpi binary to run
# instead of building this tree's: another commit's, for a before/after
# comparison), CSV (default bench/out/sample.csv), TOPOLOGIES (default
# "replicated 1.5d-c1 1.5d-c2"), PLAIN (default 1; 0 skips the plain
# per-batch baseline).
# Writes bench/out/sample.csv (one row per run), bench/out/sample.png and
# the raw JSON under bench/out/sample/.
set -uo pipefail
cd "$(dirname "$0")/.."
INPUTS=("$@")
[[ ${#INPUTS[@]} == 0 ]] && INPUTS=(physics rmat20)
KS=${KS:-1 4 16 64}
NPS=${NPS:-1 2 4}
SAMPLER=${SAMPLER:-sage}
FANOUTS=${FANOUTS:-15,10}
BATCH=${BATCH:-1024}
EPOCHS=${EPOCHS:-12}
MAX_BATCHES=${MAX_BATCHES:-256}
PHYSICS=${PHYSICS:-../shared/data/coauthor-physics}
TIMEOUT=${TIMEOUT:-900}
OUT=bench/out
RAW=$OUT/sample
mkdir -p "$RAW"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
if [ -n "${GNNMPI:-}" ]; then
	G=$GNNMPI
	commit=${COMMIT:-$(basename "$G")}
else
	G=$RAW/gnnmpi
	go build -o "$G" . || exit 1
	commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
fi
CSV=${CSV:-$OUT/sample.csv}
echo "input,sampler,topology,c,np,bulk,minibatches,edges,seconds,edges_per_s,minibatches_per_s,sample_bytes,spgemm_bytes,bytes_per_minibatch,loadavg,commit,error" > "$CSV"

# record NAME INPUT SAMPLER TOPOLOGY C NP BULK CMD...: runs CMD (gnnmpi
# sample --json), keeps its output under $RAW and appends a CSV row.
record() {
	local name=$1 input=$2 sampler=$3 top=$4 c=$5 np=$6 bulk=$7
	shift 7
	local load; load=$(cut -d' ' -f1 /proc/loadavg)
	echo "== $name (load $load)" >&2
	timeout "$TIMEOUT" "$@" > "$RAW/$name.json" 2> "$RAW/$name.err"
	local rc=$?
	python3 - "$RAW/$name.json" "$rc" "$input" "$sampler" "$top" "$c" "$np" "$bulk" "$load" "$commit" >> "$CSV" <<'PY'
import json, sys
path, rc, inp, sampler, top, c, np_, bulk, load, commit = sys.argv[1:]
cols = ["input", "sampler", "topology", "c", "np", "bulk", "minibatches", "edges", "seconds", "edges_per_s",
        "minibatches_per_s", "sample_bytes", "spgemm_bytes", "bytes_per_minibatch", "loadavg", "commit", "error"]
row = dict.fromkeys(cols, "")
row.update(input=inp, sampler=sampler, topology=top, c=c, np=np_, bulk=bulk, loadavg=load, commit=commit)
try:
    s = json.load(open(path))["sample"]
    b = s["bytes"]
    sent = b.get("sample", 0) + b.get("spgemm", 0)
    row.update(minibatches=s["minibatches"], edges=s["edges"], seconds=round(s["seconds"], 4),
               edges_per_s=round(s["edges_per_s"]), minibatches_per_s=round(s["minibatches_per_s"], 2),
               sample_bytes=b.get("sample", 0), spgemm_bytes=b.get("spgemm", 0),
               bytes_per_minibatch=round(sent / max(1, s["minibatches"])))
    if rc != "0":
        row["error"] = f"exit {rc}"
except Exception as e:
    row["error"] = f"exit {rc}: {type(e).__name__}"
print(",".join(str(row[k]) for k in cols))
PY
}

for input in "${INPUTS[@]}"; do
	case $input in
	physics) data=(--data "$PHYSICS" --split random-60-20-20-seed0 --epochs "$EPOCHS") ;;
	rmat20)
		f=/tmp/rmat20.gnn
		[[ -f $f ]] || "$G" gen rmat --scale 20 --out "$f" >&2 || exit 1
		data=(--data "$f" --split all --max-batches "$MAX_BATCHES")
		;;
	*) echo "bench/sample.sh: unknown input $input (physics, rmat20)" >&2; exit 2 ;;
	esac
	common=("${data[@]}" --sampler "$SAMPLER" --fanouts "$FANOUTS" --batch-size "$BATCH" --json)
	for np in $NPS; do
		[ "${PLAIN:-1}" = 1 ] && record "$input-plain-np$np" "$input" plain replicated 1 "$np" 1 \
			mpirun -np "$np" "$G" sample "${data[@]}" --sampler plain --fanouts "$FANOUTS" --batch-size "$BATCH" --json
		for top in ${TOPOLOGIES:-replicated 1.5d-c1 1.5d-c2}; do
			c=1
			[[ $top == 1.5d-c* ]] && c=${top#1.5d-c}
			((np % c == 0)) || continue
			[[ $top == 1.5d-c2 && $np == 1 ]] && continue
			for k in $KS; do
				record "$input-$SAMPLER-$top-np$np-k$k" "$input" "$SAMPLER" "${top%-c*}" "$c" "$np" "$k" \
					mpirun -np "$np" "$G" sample "${common[@]}" --topology "${top%-c*}" --c "$c" --bulk "$k"
			done
		done
	done
done
go run ./bench/plot sample "$CSV" "$OUT/sample.png"
echo "wrote $CSV and $OUT/sample.png" >&2
