#!/usr/bin/env bash
# bench/scaling.sh: strong and weak scaling of gnnmpi as users run scaling
# studies (issue 21). Every workload runs at each rank count of NPS on each
# network of NETS; the final metrics object of every run is kept, reduced
# to one CSV row, drawn (PNG) and summed up in a generated Markdown report.
#
#   bench/scaling.sh                         # the whole sweep on this machine
#   NETS=shm NPS="1 2 4" bench/scaling.sh    # a part of it
#   SMOKE=1 bench/scaling.sh                 # tiny inputs, one epoch: checks the script
#   bench/scaling.sh --sbatch FILE [NODES [RANKS_PER_NODE]]
#                                            # write a Slurm batch script that runs the
#                                            # same sweep with srun on a real cluster
#                                            # (default 8 nodes × 4 ranks; np 1, 2, 4, …
#                                            # up to all of them; sbatch's command-line
#                                            # options override its #SBATCH lines)
#
# Workloads (WORKLOADS; strong: the same problem at every np; weak: the
# problem grows with np):
#   train-none, train-degree, train-vip   minibatch GraphSAGE (fanouts 10,5,
#           hidden 64) with no cache, the degree cache or the VIP cache
#           (--cache-frac 0.25). Strong: the SBM of SBM_NODES vertices
#           (default 100,000, mean degree 20, 64 dense features, 16 classes,
#           20% training vertices), global batch 1024. Weak: an SBM of
#           SBM_NODES/2·np vertices, 512 seeds per rank and minibatch, so a
#           rank computes the same number of minibatches at every np.
#           Metric: the median epoch time (evaluation excluded), the loader
#           not overlapped (--overlap=false) so the phases add up.
#   sample  bulk sampling alone on the 1.5D topology (--bulk 16, batch 256).
#           Strong: the strong SBM, every minibatch of EPOCHS epochs. Weak:
#           the weak SBMs. Metric: seconds of sampling.
#   spgemm  A·A of a Graph500 R-MAT graph by 1.5D SpGEMM (c = 1). Strong:
#           scale RMAT_SCALE (default 14). Weak: scale RMAT_SCALE−2+log2 np.
#           Metric: the product's seconds (the fastest of 3).
#   graph, pipe  full-graph training of an 8-layer GCNII (hidden 64) on
#           Coauthor Physics (random-20-30-seed0): graph parallelism, and
#           GNNPipe with 4 chunks. Strong only. Metric: the median epoch time.
#
# Networks (NETS): shm is mpirun on this machine (shared memory;
# --oversubscribe beyond the cores). hosts is HOSTS network namespaces
# (default 8: one rank per host up to np 8) joined by a bridge, Open MPI
# over TCP
# (bench/cluster/netns-hosts.sh; needs root; np ranks spread over the
# hosts by node), hosts-RATE the same with every link shaped to RATE by
# tc tbf (e.g. hosts-200mbit). Runs over hosts start at np 2 (np 1 is the
# shm run). HOST_WORKLOADS (default train-none train-vip spgemm graph pipe)
# and HOST_STUDIES (default strong) limit what runs over the hosts. cluster
# is srun -n NP --mpi=$SRUN_MPI inside a Slurm allocation (what the
# --sbatch script uses).
#
# Environment: NPS (default "1 2 4 8"), NETS (default "shm hosts
# hosts-200mbit"), STUDIES (default "strong weak"), WORKLOADS, EPOCHS
# (default 3), DATA_DIR (generated graphs, default bench/out/scaling/data),
# PHYSICS (default ../shared/data/coauthor-physics, else the CI path
# /work/shared/data/...), GNNMPI_BIN (default ./gnnmpi, built by
# ./run.sh build), OUT (default bench/out), SRUN_MPI (default pmix).
#
# Writes OUT/scaling.csv (one row per run), OUT/scaling.png,
# OUT/scaling.md and every run's JSON and log under OUT/scaling/; there
# too, per network and np ≥ 2, the network's calibration
# (net-NET-npNP.json from `gnnmpi predict --calibrate`; CALIBRATE=0 skips
# it), which bench/predict.sh uses.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH=$PATH:/usr/local/go/bin

if [ "${1:-}" = --sbatch ]; then
	file=${2:?usage: bench/scaling.sh --sbatch FILE [NODES [RANKS_PER_NODE]]}
	nodes=${3:-8}
	rpn=${4:-4}
	max=$((nodes * rpn))
	nps="" np=1
	while [ "$np" -le "$max" ]; do nps+="$np " np=$((np * 2)); done
	cat >"$file" <<EOF
#!/bin/bash
# A gnnmpi scaling sweep on a Slurm cluster, written by
# \`bench/scaling.sh --sbatch $file $nodes $rpn\`: the workloads of
# bench/scaling.sh at np ${nps% } over the cluster's network (srun steps in
# one allocation). Build on a login node first (./run.sh build), then from
# the repository:
#
#   sbatch $file
#
# Results: bench/out/scaling.csv, scaling.png, scaling.md (OUT to change).
#SBATCH --job-name=gnnmpi-scaling
#SBATCH --nodes=$nodes
#SBATCH --ntasks-per-node=$rpn
#SBATCH --cpus-per-task=1
#SBATCH --time=02:00:00
#SBATCH --output=gnnmpi-scaling-%j.out
set -euo pipefail
cd "\${SLURM_SUBMIT_DIR:-.}"
export NETS=cluster NPS="\${NPS:-${nps% }}" SRUN_MPI="\${SRUN_MPI:-pmix}"
exec bench/scaling.sh
EOF
	chmod +x "$file"
	echo "bench/scaling.sh: wrote $file ($nodes nodes × $rpn ranks, np ${nps% })" >&2
	exit 0
fi

NPS=${NPS:-1 2 4 8}
NETS=${NETS:-shm hosts hosts-200mbit}
STUDIES=${STUDIES:-strong weak}
WORKLOADS=${WORKLOADS:-train-none train-degree train-vip sample spgemm graph pipe}
HOST_WORKLOADS=${HOST_WORKLOADS:-train-none train-vip spgemm graph pipe}
HOST_STUDIES=${HOST_STUDIES:-strong}
HOSTS=${HOSTS:-8}
EPOCHS=${EPOCHS:-3}
SBM_NODES=${SBM_NODES:-100000}
RMAT_SCALE=${RMAT_SCALE:-14}
OUT=${OUT:-bench/out}
LOGS=$OUT/scaling
DATA_DIR=${DATA_DIR:-$LOGS/data}
SRUN_MPI=${SRUN_MPI:-pmix}
if [ "${SMOKE:-}" = 1 ]; then
	SBM_NODES=8000 RMAT_SCALE=10 EPOCHS=1
fi
PHYSICS=${PHYSICS:-}
for d in ../shared/data/coauthor-physics /work/shared/data/coauthor-physics; do
	[ -n "$PHYSICS" ] || { [ -d "$d" ] && PHYSICS=$d; }
done
mkdir -p "$LOGS" "$DATA_DIR"
if [ -z "${GNNMPI_BIN:-}" ]; then
	./run.sh build >/dev/null
	GNNMPI_BIN=$ROOT/gnnmpi
fi
G=$GNNMPI_BIN
NETNS=$ROOT/bench/cluster/netns-hosts.sh
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OPENBLAS_NUM_THREADS=1
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	commit+="-dirty"
fi

# ---- inputs, generated once -------------------------------------------

sbm() { # sbm NODES: the SBM of NODES vertices; prints its path
	local f=$DATA_DIR/sbm$1.gnn
	if [ ! -f "$f" ]; then
		$G gen sbm --nodes "$1" --degree 20 --features 64 --classes 16 --train-frac 0.2 --valid-frac 0.1 \
			--out "$f.tmp.gnn" >&2
		mv "$f.tmp.gnn" "$f"
	fi
	echo "$f"
}

rmat() { # rmat SCALE: the R-MAT graph of 2^SCALE vertices; prints its path
	local f=$DATA_DIR/rmat$1.mtx
	if [ ! -f "$f" ]; then
		$G gen rmat --scale "$1" --out "$f.tmp.mtx" >&2
		mv "$f.tmp.mtx" "$f"
	fi
	echo "$f"
}

physics() { # the Coauthor Physics dataset as .gnn; prints its path
	local f=$DATA_DIR/physics.gnn
	if [ ! -f "$f" ]; then
		[ -n "$PHYSICS" ] || { echo "bench/scaling.sh: no coauthor-physics (set PHYSICS)" >&2; return 1; }
		$G convert --data "$PHYSICS" --out "$f.tmp.gnn" >&2
		mv "$f.tmp.gnn" "$f"
	fi
	echo "$f"
}

log2() { # log2 N for a power of two N
	local n=$1 l=0
	while [ "$n" -gt 1 ]; do n=$((n / 2)) l=$((l + 1)); done
	echo $l
}

# args STUDY WORKLOAD NP: the gnnmpi command line of one run.
args() {
	local study=$1 w=$2 np=$3
	local common=(--seed 1 --json)
	case $w in
	train-*)
		local cache=${w#train-} data batch
		if [ "$study" = strong ]; then
			data=$(sbm "$SBM_NODES") batch=(--global-batch-size 1024)
		else
			data=$(sbm $((SBM_NODES / 2 * np))) batch=(--batch-size 512)
		fi
		local c=()
		[ "$cache" = none ] || c=(--cache-frac 0.25)
		echo train --data "$data" --model sage --fanouts 10,5 --hidden 64 "${batch[@]}" --cache "$cache" "${c[@]}" \
			--epochs "$EPOCHS" --eval-every "$EPOCHS" --overlap=false "${common[@]}"
		;;
	sample)
		local data
		if [ "$study" = strong ]; then data=$(sbm "$SBM_NODES"); else data=$(sbm $((SBM_NODES / 2 * np))); fi
		echo sample --data "$data" --topology 1.5d --fanouts 10,5 --batch-size 256 --bulk 16 --epochs "$EPOCHS" "${common[@]}"
		;;
	spgemm)
		local s=$RMAT_SCALE
		[ "$study" = strong ] || s=$((RMAT_SCALE - 2 + $(log2 "$np")))
		echo spgemm --a "$(rmat "$s")" --square --algo 1.5d --reps 3 --json
		;;
	graph | pipe)
		local chunks=()
		[ "$w" = graph ] || chunks=(--chunks 4)
		echo train --mode "$w" --data "$(physics)" --split random-20-30-seed0 --model gcnii --layers 8 --hidden 64 \
			"${chunks[@]}" --epochs $((EPOCHS + 2)) --eval-every $((EPOCHS + 2)) "${common[@]}"
		;;
	*)
		echo "bench/scaling.sh: unknown workload $w" >&2
		return 1
		;;
	esac
}

# launch NET NP CMD...: runs CMD on NP ranks over network NET.
launch() {
	local net=$1 np=$2
	shift 2
	case $net in
	shm)
		local a=(-np "$np" --mca mpi_yield_when_idle 1)
		[ "$np" -le "$(nproc)" ] || a+=(--oversubscribe)
		mpirun "${a[@]}" "$@"
		;;
	hosts*) "$NETNS" mpirun "$np" "$@" ;;
	cluster) srun -n "$np" --mpi="$SRUN_MPI" "$@" ;;
	*)
		echo "bench/scaling.sh: unknown network $net" >&2
		return 1
		;;
	esac
}

# ---- the sweep ---------------------------------------------------------

csv=$OUT/scaling.csv
echo "study,workload,net,np,hosts,seconds,metric,max_sent_bytes,total_sent_bytes,peak_rss_bytes,test_acc,flops,exit_code,json,commit" >"$csv"

# record STUDY WORKLOAD NET NP HOSTS RC JSON: one CSV row from a run's JSON.
record() {
	/usr/bin/python3 - "$@" "$commit" >>"$csv" <<'PY'
import json, sys
study, w, net, np_, hosts, rc, path, commit = sys.argv[1:]
secs = metric = ms = ts = rss = acc = flops = ""
try:
    d = json.load(open(path))
except Exception:
    d = None
if d is not None and rc == "0":
    comm = d.get("comm", {})
    ms, ts = comm.get("max_sent_bytes", ""), comm.get("total_sent_bytes", "")
    if d["command"] == "train":
        secs, metric = d["median_epoch_s"], "median_epoch_s"
        rss, acc = max(d.get("peak_rss_bytes") or [0]), d.get("test_acc", "")
    elif d["command"] == "sample":
        s = d["sample"]
        secs, metric, rss = s["seconds"], "sample_s", max(s.get("peak_rss_bytes") or [0])
    elif d["command"] == "spgemm":
        s = d["spgemm"]
        secs, metric, flops = s["min_seconds"], "spgemm_min_s", s["flops"]
        ms, ts = s["max_sent_bytes"], s["total_sent_bytes"]
print(",".join(str(x) for x in [study, w, net, np_, hosts, secs, metric, ms, ts, rss, acc, flops, rc, path, commit]))
PY
}

hosts_up=no
cleanup() {
	if [ $hosts_up = yes ]; then "$NETNS" down >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

failed=0
for net in $NETS; do
	studies=$STUDIES workloads=$WORKLOADS
	case $net in
	hosts*)
		if [ "$(id -u)" != 0 ]; then
			echo "bench/scaling.sh: $net skipped: network namespaces need root" >&2
			continue
		fi
		if [ $hosts_up = no ]; then
			# One rank per host (as on a cluster of single-socket nodes):
			# with two per host, training at np 8 on this machine's 2 cores
			# took 3.1 s over TCP, against 1.0–1.1 s on 8 hosts of one.
			NETNS_SLOTS=$(((${NPS##* } + HOSTS - 1) / HOSTS)) "$NETNS" up "$HOSTS" >/dev/null
			hosts_up=yes
		fi
		rate=off
		[ "$net" = hosts ] || rate=${net#hosts-}
		"$NETNS" rate "$rate"
		studies=$HOST_STUDIES workloads=$HOST_WORKLOADS
		;;
	esac
	# The network's α–β calibration at every np (gnnmpi predict --calibrate),
	# for bench/predict.sh.
	if [ "${CALIBRATE:-1}" = 1 ]; then
		for np in $NPS; do
			[ "$np" -ge 2 ] || continue
			echo "== calibrate $net np $np" >&2
			cal=()
			case $net in hosts-*) cal=(--max-bytes 1048576 --min-reps 3) ;; esac # a slow link
			launch "$net" "$np" "$G" predict --calibrate "${cal[@]}" --out "$LOGS/net-$net-np$np.json" \
				>"$LOGS/net-$net-np$np.log" 2>&1 || echo "   calibration failed: $LOGS/net-$net-np$np.log" >&2
		done
	fi
	for study in $STUDIES; do
		case " $studies " in *" $study "*) ;; *) continue ;; esac
		for w in $WORKLOADS; do
			case " $workloads " in *" $w "*) ;; *) continue ;; esac
			[ "$study" = weak ] && case $w in graph | pipe) continue ;; esac
			for np in $NPS; do
				h=1
				case $net in
				hosts*)
					[ "$np" -ge 2 ] || continue
					h=$((np < HOSTS ? np : HOSTS))
					;;
				cluster) h=${SLURM_NNODES:-1} ;;
				esac
				tag=$study-$w-$net-np$np
				# shellcheck disable=SC2207
				cmd=($(args "$study" "$w" "$np"))
				echo "== $study $w $net np $np" >&2
				rc=0
				launch "$net" "$np" "$G" "${cmd[@]}" >"$LOGS/$tag.json" 2>"$LOGS/$tag.log" || rc=$?
				if [ $rc != 0 ]; then
					failed=$((failed + 1))
					echo "   failed ($rc): $LOGS/$tag.log" >&2
					tail -5 "$LOGS/$tag.log" >&2
				fi
				record "$study" "$w" "$net" "$np" "$h" "$rc" "$LOGS/$tag.json"
			done
		done
	done
done
if [ $hosts_up = yes ]; then
	"$NETNS" down >/dev/null
	hosts_up=no
fi

go run ./bench/plot scaling "$csv" "$OUT/scaling.png"
go run ./bench/plot scaling-report "$csv" "$OUT/scaling.md"
echo "bench/scaling.sh: $csv, $OUT/scaling.png, $OUT/scaling.md ($failed failed runs)" >&2
[ $failed = 0 ]
