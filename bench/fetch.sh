#!/usr/bin/env bash
# bench/fetch.sh: feature traffic of minibatch training against the static
# cache size α, for each cache policy (none, degree, vip, vip-recurrence,
# sim), with METIS and random partitions, at np = 4 and 8 (mpirun
# --oversubscribe), on
#
#   physics    coauthor-physics, split random-60-20-20-seed0 (8415 features)
#   computers  amazon-computers, split random-60-20-20-seed0 (767 features)
#   sbm1m      `gnnmpi gen sbm --nodes 1000000` (32 features, split random)
#
#   bench/fetch.sh [DATASET...]       default "physics computers sbm1m"
#
# Each run is one `gnnmpi fetch`: it samples EPOCHS epochs of the training
# minibatches once (fanouts 15,10, batch 1024 per rank, every rank
# training on the training vertices it owns), then replays their feature
# fetches under every policy and α, counting rows and bytes (phase fetch).
# Environment: NPS (default "4 8"), PARTS (default "metis random"), FRACS
# (default 0,0.01,0.05,0.1,0.2,0.5,1), POLICIES, FANOUTS, BATCH, EPOCHS
# (default 1), DTYPE (default f32), PHYSICS / COMPUTERS (dataset paths; a
# .gnn file loads faster), TIMEOUT (seconds per run, default 3600).
# Writes bench/out/fetch.csv (one row per dataset, partition, np, policy
# and α), bench/out/fetch.png and the raw JSON under bench/out/fetch/.
set -uo pipefail
cd "$(dirname "$0")/.."
DATASETS=("$@")
[[ ${#DATASETS[@]} == 0 ]] && DATASETS=(physics computers sbm1m)
NPS=${NPS:-4 8}
PARTS=${PARTS:-metis random}
FRACS=${FRACS:-0,0.01,0.05,0.1,0.2,0.5,1}
POLICIES=${POLICIES:-none,degree,vip,vip-recurrence,sim}
FANOUTS=${FANOUTS:-15,10}
BATCH=${BATCH:-1024}
EPOCHS=${EPOCHS:-1}
DTYPE=${DTYPE:-f32}
PHYSICS=${PHYSICS:-../shared/data/coauthor-physics}
COMPUTERS=${COMPUTERS:-../shared/data/amazon-computers}
TIMEOUT=${TIMEOUT:-3600}
OUT=bench/out
RAW=$OUT/fetch
CACHE=$OUT/cache
mkdir -p "$RAW" "$CACHE"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
G=$RAW/gnnmpi
go build -o "$G" . || exit 1
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
CSV=$OUT/fetch.csv
cols="dataset,partition,np,dtype,cache,cache_frac,cache_rows,fetch_rows,cache_hits,remote_rows,fetch_bytes,fetch_s,score_s,fill_s,store_bytes_max,cached_rows_max,loadavg,commit,error"
[[ -f $CSV ]] || echo "$cols" > "$CSV"

for ds in "${DATASETS[@]}"; do
	case $ds in
	physics) data=(--data "$PHYSICS" --split random-60-20-20-seed0) ;;
	computers) data=(--data "$COMPUTERS" --split random-60-20-20-seed0) ;;
	sbm1m)
		f=$CACHE/sbm1m.gnn
		[[ -f $f ]] || "$G" gen sbm --nodes 1000000 --seed 1 --out "$f" >&2 || exit 1
		data=(--data "$f" --split random)
		;;
	*) echo "bench/fetch.sh: unknown dataset $ds (physics, computers, sbm1m)" >&2; exit 2 ;;
	esac
	for np in $NPS; do
		for part in $PARTS; do
			name=$ds-$part-np$np-$DTYPE
			load=$(cut -d' ' -f1 /proc/loadavg)
			echo "== $name (load $load)" >&2
			timeout "$TIMEOUT" mpirun -np "$np" "$G" fetch "${data[@]}" --partition "$part" --fanouts "$FANOUTS" \
				--batch-size "$BATCH" --epochs "$EPOCHS" --cache "$POLICIES" --cache-frac "$FRACS" \
				--feature-dtype "$DTYPE" --json > "$RAW/$name.json" 2> "$RAW/$name.err"
			rc=$?
			python3 - "$RAW/$name.json" "$rc" "$ds" "$part" "$np" "$DTYPE" "$load" "$commit" "$cols" >> "$CSV" <<'PY'
import json, sys
path, rc, ds, part, np_, dtype, load, commit, cols = sys.argv[1:]
cols = cols.split(",")
base = dict.fromkeys(cols, "")
base.update(dataset=ds, partition=part, np=np_, dtype=dtype, loadavg=load, commit=commit)
try:
    pts = json.load(open(path))["points"]
except Exception as e:
    pts = []
    base["error"] = f"exit {rc}: {type(e).__name__}"
if not pts:
    print(",".join(str(base[k]) for k in cols))
for p in pts:
    row = dict(base)
    for k in cols:
        if k in p:
            row[k] = round(p[k], 4) if isinstance(p[k], float) else p[k]
    if rc != "0":
        row["error"] = f"exit {rc}"
    print(",".join(str(row[k]) for k in cols))
PY
		done
	done
done
go run ./bench/plot fetch "$CSV" "$OUT/fetch.png"
echo "wrote $CSV and $OUT/fetch.png" >&2
