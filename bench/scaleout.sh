#!/usr/bin/env bash
# bench/scaleout.sh: graphs larger than a rank's share (issue 20). Trains
# and samples from a partitioned dataset (`gnnmpi partition --out`) at
# np 1, 2, 4, 8, every rank reading only its parts, and records per rank
# the peak RSS, the state bytes by category (topology, features, cache,
# model), the epoch time and the bytes by phase; then the capped run.
#
#   bench/scaleout.sh
#
# Graphs (GRAPHS):
#   products-sbm  `gnnmpi gen sbm`: 2,400,000 vertices, mean degree 51.7
#                 (62M undirected edges, 124M stored), 100 dense features,
#                 47 classes, 8% train / 1.6% valid: ogbn-products' size.
#                 Partitioned by METIS (rank 0, whole graph in memory).
#   rmat22        `gnnmpi gen rmat --scale 22` with 100 planted features and
#                 47 classes: 4,194,304 vertices, 128M stored edges.
#                 Partitioned by METIS too (PT-Scotch writes the same
#                 directory from row blocks: `mpirun -np P gnnmpi partition
#                 --method ptscotch --out DIR`).
# Both are cut into 8 parts, so the same directory serves every np.
#
# Training: 2-layer GraphSAGE, hidden 128, fanouts 15,10, global batch
# 1024, bulk 64 (a rank's minibatches of an epoch sampled together: one
# pass of the 1.5D broadcasts per hop and epoch), EPOCHS epochs (default
# 2), evaluation after the last one with chunks of 16 MiB of gathered
# inputs (--eval-memory 16), topology 1.5d with c = 1 (the grid rows are
# the parts); for the first graph, at np 2 also the replicated topology
# (every rank reads all parts' adjacency), whose accuracy must be the
# same. Sampling: `gnnmpi sample` on the same topology, batch 1024, bulk
# 64, SAMPLE_BATCHES minibatches (default 256).
#
# The capped run (CAP=1, default): every rank in a memory cgroup of its own
# (bench/memcap.sh) limited to CAP_FRAC (default 0.4) of the np 1 training
# run's peak RSS; np 1 must fail with gnnmpi's own out-of-memory message
# (its check of the predicted footprint against the cgroup's limit), np 4
# must finish.
#
# Environment: NPS (default "1 2 4 8"), GRAPHS, EPOCHS, SAMPLE_BATCHES,
# CAP, CAP_FRAC, WORK (generated data, about 12 GB; default
# bench/out/scaleout/data), MPIRUN_ARGS, GNNMPI (a gnnmpi binary to run
# instead of building ./gnnmpi: another commit's, for a before/after
# comparison on the same data), REPLICATED (default 1; 0 skips the np 2
# replicated-topology run), CSV (default bench/out/scaleout.csv),
# EVAL_MEMORY (--eval-memory in MiB, default 16).
#
# Writes bench/out/scaleout.csv (one row per rank of every run),
# bench/out/scaleout-capped.csv, bench/out/scaleout.png and the logs under
# bench/out/scaleout/.
set -euo pipefail
cd "$(dirname "$0")/.."
NPS=${NPS:-1 2 4 8}
GRAPHS=${GRAPHS:-products-sbm rmat22}
EPOCHS=${EPOCHS:-2}
SAMPLE_BATCHES=${SAMPLE_BATCHES:-256}
CAP=${CAP:-1}
CAP_FRAC=${CAP_FRAC:-0.4}
OUT=bench/out
LOGS=$OUT/scaleout
WORK=${WORK:-$LOGS/data}
PARTS=8
PY=/usr/bin/python3
mkdir -p "$LOGS" "$WORK"
if [ -n "${GNNMPI:-}" ]; then
	G=$GNNMPI
else
	./run.sh build >/dev/null
	G=./gnnmpi
fi
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	commit+="-dirty"
fi
[ -n "${GNNMPI:-}" ] && commit="${COMMIT:-$(basename "$GNNMPI")}" # the binary's, not the tree's
load1() { cut -d' ' -f1-3 /proc/loadavg; }

# prepare GRAPH: generate and partition once; print the part directory.
prepare() {
	local g=$1 gnn=$WORK/$1.gnn dir=$WORK/$1-p$PARTS
	if [ ! -f "$dir/manifest.json" ]; then
		if [ ! -f "$gnn" ]; then
			case $g in
			products-sbm) $G gen sbm --nodes 2400000 --degree 51.7 --classes 47 --features 100 \
				--train-frac 0.08 --valid-frac 0.016 --out "$gnn.tmp.gnn" >&2 ;;
			rmat22) $G gen rmat --scale 22 --features 100 --classes 47 \
				--train-frac 0.08 --valid-frac 0.016 --out "$gnn.tmp.gnn" >&2 ;;
			*) echo "bench/scaleout.sh: unknown graph $g" >&2; exit 2 ;;
			esac
			mv "$gnn.tmp.gnn" "$gnn"
		fi
		$G partition --data "$gnn" --parts $PARTS --method metis --split none --book "$WORK/$g.book" --out "$dir" >&2
	fi
	echo "$dir"
}

csv=${CSV:-$OUT/scaleout.csv}
echo "graph,command,topology,np,rank,peak_rss_bytes,topology_bytes,features_bytes,cache_bytes,model_bytes,median_epoch_s,sample_s,test_acc,bytes_fetch,bytes_sample,bytes_spgemm,bytes_grad,bytes_eval,load_start,load_end,commit" > "$csv"

# record CMD TOPO NP JSON GRAPH L0 L1: append one row per rank.
record() {
	"$PY" - "$@" "$commit" >> "$csv" <<'PY'
import json, statistics, sys
cmd, topo, np_, path, graph, l0, l1, commit = sys.argv[1:]
if cmd == "train":
    recs = [json.loads(l) for l in open(path)]
    ep = [r for r in recs if not r.get("final")]
    fin = [r for r in recs if r.get("final")][-1]
    sb, rss = fin.get("state_bytes", {}), fin["peak_rss_bytes"]
    med, acc, st = fin["median_epoch_s"], fin["test_acc"], ""
    by = fin.get("bytes_per_epoch", {})
else:
    fin = json.load(open(path))["sample"]
    sb, rss, med, acc, st = {}, fin["peak_rss_bytes"], "", "", fin["seconds"]
    by = fin.get("bytes", {})
for r, peak in enumerate(rss):
    cat = [sb.get(k, [""] * len(rss))[r] for k in ("topology", "features", "cache", "model")]
    print(",".join(str(x) for x in [graph, cmd, topo, np_, r, peak, *cat, med, st, acc,
          *(by.get(k, 0) for k in ("fetch", "sample", "spgemm", "grad", "eval")), l0, l1, commit]))
PY
}

margs() { # margs NP: mpirun's arguments for NP ranks
	local a=(-np "$1")
	[ "$1" -gt "$(nproc)" ] && a+=(--oversubscribe)
	echo "${a[@]}" ${MPIRUN_ARGS:-}
}

train() { # train DIR NP TOPOLOGY TAG [WRAP...]: one training run, metrics to $LOGS/TAG.jsonl
	local dir=$1 np=$2 topo=$3 tag=$4
	shift 4
	rm -f "$LOGS/$tag.jsonl"
	# shellcheck disable=SC2046
	mpirun $(margs "$np") "$@" $G train --data "$dir" --topology "$topo" --c 1 --model sage --hidden 128 \
		--fanouts 15,10 --global-batch-size 1024 --bulk 64 --eval-memory "${EVAL_MEMORY:-16}" --epochs "$EPOCHS" --eval-every "$EPOCHS" \
		--metrics "$LOGS/$tag.jsonl" > "$LOGS/$tag.log" 2>&1
}

for g in $GRAPHS; do
	dir=$(prepare "$g")
	for np in $NPS; do
		echo "== $g np=$np train" >&2
		l0=$(load1)
		train "$dir" "$np" 1.5d "$g-train-np$np"
		record train 1.5d "$np" "$LOGS/$g-train-np$np.jsonl" "$g" "$l0" "$(load1)"
		echo "== $g np=$np sample" >&2
		l0=$(load1)
		# shellcheck disable=SC2046
		mpirun $(margs "$np") $G sample --data "$dir" --topology 1.5d --c 1 --fanouts 15,10 --batch-size 1024 \
			--bulk 64 --max-batches "$SAMPLE_BATCHES" --json > "$LOGS/$g-sample-np$np.json" 2> "$LOGS/$g-sample-np$np.log"
		record sample 1.5d "$np" "$LOGS/$g-sample-np$np.json" "$g" "$l0" "$(load1)"
	done
	if [ "$g" = "${GRAPHS%% *}" ] && [ "${REPLICATED:-1}" = 1 ]; then
		echo "== $g np=2 train, replicated topology" >&2
		l0=$(load1)
		train "$dir" 2 replicated "$g-train-np2-replicated"
		record train replicated 2 "$LOGS/$g-train-np2-replicated.jsonl" "$g" "$l0" "$(load1)"
	fi
done

if [ "$CAP" = 1 ]; then
	ccsv=$OUT/scaleout-capped.csv
	echo "graph,np,limit_bytes,np1_peak_bytes,exit_code,seconds,outcome,message,commit" > "$ccsv"
	g=${GRAPHS%% *}
	dir=$(prepare "$g")
	peak=$("$PY" -c "import csv,sys; print(max(int(r['peak_rss_bytes']) for r in csv.DictReader(open('$csv')) if r['graph']=='$g' and r['command']=='train' and r['np']=='1' and r['topology']=='1.5d'))")
	limit=$("$PY" -c "print(int($peak * $CAP_FRAC))")
	for np in 1 4; do
		echo "== $g np=$np capped at $limit bytes per rank" >&2
		t0=$(date +%s.%N)
		set +e
		train "$dir" "$np" 1.5d "$g-capped-np$np" "$PWD/bench/memcap.sh" "$limit"
		rc=$?
		set -e
		t1=$(date +%s.%N)
		"$PY" - "$g" "$np" "$limit" "$peak" "$rc" "$t0" "$t1" "$LOGS/$g-capped-np$np.log" "$commit" >> "$ccsv" <<'PY'
import sys
g, np_, limit, peak, rc, t0, t1, log, commit = sys.argv[1:]
text = open(log).read()
msg = next((l.strip() for l in text.splitlines() if "out of memory" in l and l.startswith("gnnmpi:")), "")
if rc == "0":
    outcome = "finished"
elif msg:
    outcome = "refused: gnnmpi's out-of-memory check"
elif "Killed" in text or "signal 9" in text:
    outcome = "killed by the kernel"
else:
    outcome = "failed"
print(",".join([g, np_, limit, peak, rc, f"{float(t1) - float(t0):.1f}", outcome, '"' + msg.replace('"', "'") + '"', commit]))
PY
	done
	cat "$ccsv"
fi
# The plot scales every run to np 1's.
[[ " $NPS " == *" 1 "* ]] && go run ./bench/plot scaleout "$csv" "$OUT/scaleout.png"
cat "$csv"
