#!/usr/bin/env bash
# bench/throughput.sh: minibatch GraphSAGE throughput of gnnmpi against a
# plain PyTorch peer (bench/peers/sage_torch.py) on the same data, in one
# run (issue 19's baseline): median epoch time (training only), test
# accuracy after the same epochs, peak RSS per rank and per-phase seconds.
#
#   bench/throughput.sh
#
# Both systems train the same model with the same settings: 2-layer
# GraphSAGE (mean), hidden 256, fanouts 15,10, dropout 0.5, Adam lr 0.01,
# weight decay 5e-4, EPOCHS epochs, evaluation (exact full-neighbour
# inference) after the last epoch only. The peer is one process with
# TORCH_THREADS threads and batch 1024, in each of its first-layer forms
# (TORCH_VARIANTS, default "dense embedding_bag spmm": --sparse-input of
# sage_torch.py; the SBMs' real-valued features run dense only), and
# gnnmpi is compared with the fastest of them, the strongest peer: the
# plot's ratios and the summary printed at the end use it. gnnmpi runs at np = 1, 2, 4 with
# --global-batch-size 1024: each rank takes 512 (np 2) or 256 (np 4) seeds a
# step and the gradients are summed, so every np takes about the same
# optimizer steps on 1024 seeds as the peer (the steps_per_epoch column;
# gnnmpi's ranks cut their own training vertices, so an unbalanced
# partition can add a step).
#
# Datasets (DATASETS): coauthor-physics, coauthor-cs, amazon-computers
# (split SPLIT, default random-60-20-20-seed0; features row-normalised as
# gnnmpi's --feature-norm row) and sbm20k (`gnnmpi gen sbm`: 20,000
# vertices, 128 real-valued features, symmetrized with `gnnmpi convert
# --symmetrize`, a no-op: the generator stores both directions; split
# "random", no feature normalisation). The default SBM (homophily 0.8)
# trains to about 99.8% in 2 epochs on both systems; sbm20k-hH generates it
# with homophily H instead (sbm20k-h0.2: about 88% after 10 epochs), for an
# accuracy comparison that is not saturated.
#
# Environment: EPOCHS (default 10), DATA (default ../shared/data), NPS
# (default "1 2 4"), DATASETS (default "coauthor-physics coauthor-cs
# amazon-computers sbm20k"), SYSTEMS (default "torch gnnmpi"),
# TORCH_THREADS (default 2), TORCH_VARIANTS, GNNMPI_FLAGS (extra flags of gnnmpi train,
# e.g. "--feature-format csr --overlap"), VARIANT (a label for this run's
# gnnmpi flags in the CSV and the plot), MPIRUN_ARGS (extra mpirun flags),
# APPEND=1 (add to bench/out/throughput.csv instead of starting it afresh).
#
# Writes bench/out/throughput.csv (one row per run), bench/out/throughput.png
# and the logs and JSONL metrics under bench/out/throughput/. The datasets
# are converted once, cached under bench/out/cache/.
set -euo pipefail
cd "$(dirname "$0")/.."
EPOCHS=${EPOCHS:-10}
DATA=${DATA:-../shared/data}
NPS=${NPS:-1 2 4}
DATASETS=${DATASETS:-coauthor-physics coauthor-cs amazon-computers sbm20k}
SYSTEMS=${SYSTEMS:-torch gnnmpi}
SPLIT=${SPLIT:-random-60-20-20-seed0}
TORCH_THREADS=${TORCH_THREADS:-2}
TORCH_VARIANTS=${TORCH_VARIANTS:-dense embedding_bag spmm}
GNNMPI_FLAGS=${GNNMPI_FLAGS:-}
VARIANT=${VARIANT:-}
OUT=bench/out
CACHE=$OUT/cache
LOGS=$OUT/throughput
mkdir -p "$LOGS" "$CACHE"
# Debian's python3-torch is built for the system Python, whatever python3
# comes first on PATH (pyenv, a virtualenv).
PY=/usr/bin/python3

as_root() { # as_root PKG...: install Debian packages, or say how
	if [ "$(id -u)" = 0 ]; then
		echo "bench/throughput.sh: installing $*" >&2
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
	else
		echo "bench/throughput.sh: missing packages; run: sudo apt-get install -y --no-install-recommends $*" >&2
		exit 1
	fi
}

if [[ " $SYSTEMS " == *" torch "* ]] && ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
	# OpenBLAS, not the reference BLAS that would otherwise satisfy
	# python3-torch's libblas.so.3.
	as_root python3-torch python3-numpy libopenblas0-pthread
fi
# GNU time measures each gnnmpi rank's peak RSS (ru_maxrss, as the peer
# reports its own); without it (and not root) the RSS column stays empty.
if [ ! -x /usr/bin/time ]; then
	if [ "$(id -u)" = 0 ]; then as_root time; else echo "bench/throughput.sh: no /usr/bin/time (apt-get install time): no peak RSS of gnnmpi's ranks" >&2; fi
fi
./run.sh build >/dev/null
G=./gnnmpi
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# prepare DS: print "DIR GNN SPLIT NORM": the OGB directory the peer reads,
# the .gnn file gnnmpi reads (converted once), the split and the feature
# normalisation both use.
prepare() {
	case $1 in
	sbm20k | sbm20k-h*)
		# sbm20k-hH: homophily H instead of the generator's 0.8.
		local dir=$CACHE/$1 gen=(--nodes 20000 --features 128 --seed 1)
		[[ $1 == sbm20k-h* ]] && gen+=(--homophily "${1#sbm20k-h}")
		if [ ! -f "$CACHE/$1.gnn" ]; then
			rm -rf "$dir-gen" "$dir"
			$G gen sbm "${gen[@]}" --out "$dir-gen" >&2
			# gen sbm already stores both directions of every edge;
			# symmetrizing makes sure of it.
			$G convert --symmetrize --data "$dir-gen" --out "$dir" >&2
			$G convert --data "$dir" --out "$CACHE/$1.tmp.gnn" >&2
			mv "$CACHE/$1.tmp.gnn" "$CACHE/$1.gnn"
			rm -rf "$dir-gen"
		fi
		echo "$dir $CACHE/$1.gnn random none"
		;;
	*)
		[ -d "$DATA/$1/raw" ] || { echo "bench/throughput.sh: no dataset $DATA/$1" >&2; exit 2; }
		if [ ! -f "$CACHE/$1.gnn" ]; then
			$G convert --data "$DATA/$1" --out "$CACHE/$1.tmp.gnn" >&2
			mv "$CACHE/$1.tmp.gnn" "$CACHE/$1.gnn"
		fi
		echo "$DATA/$1 $CACHE/$1.gnn $SPLIT row"
		;;
	esac
}

csv=$OUT/throughput.csv
if [ "${APPEND:-0}" != 1 ] || [ ! -f "$csv" ]; then
	echo "dataset,system,variant,np,epochs,steps_per_epoch,median_epoch_s,test_acc,val_acc,peak_rss_per_rank_bytes,rss_source,sample_s,fetch_s,compute_s,grad_s,load_start,load_end,commit,flags" > "$csv"
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	commit+="-dirty"
fi
load1() { cut -d' ' -f1-3 /proc/loadavg; }

for ds in $DATASETS; do
	read -r dir gnn split norm < <(prepare "$ds")
	for sys in $SYSTEMS; do
		if [ "$sys" = torch ]; then
			variants=$TORCH_VARIANTS
			[ "$norm" = none ] && variants=dense # real-valued features: nothing sparse
			for tv in $variants; do
				log=$LOGS/$ds-torch-$tv.log
				echo "== $ds torch $tv ($TORCH_THREADS threads)" >&2
				l0=$(load1)
				# torch's BLAS (libblas.so.3: OpenBLAS) keeps its own thread
				# pool: hold it to the same thread count.
				OMP_NUM_THREADS=$TORCH_THREADS OPENBLAS_NUM_THREADS=$TORCH_THREADS \
					"$PY" bench/peers/sage_torch.py --data "$dir" --split "$split" --epochs "$EPOCHS" \
					--fanouts 15,10 --batch-size 1024 --hidden 256 --feature-norm "$norm" \
					--threads "$TORCH_THREADS" --sparse-input "$tv" | tee "$log" >&2
				l1=$(load1)
				blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null | sed 's|.*/\([^/]*\)/libblas.so.3$|\1|')
				"$PY" - "$log" "$ds" "$tv" "$l0" "$l1" "$commit" "${blas:-unknown}" >> "$csv" <<'PY'
import json, sys
log, ds, tv, l0, l1, commit, blas = sys.argv[1:]
r = json.loads(open(log).read().splitlines()[-1])
ph = r["phase_s"]
print(f'{ds},torch,{tv},1,{r["epochs"]},{r["steps_per_epoch"]},{r["epoch_s"]:.4f},{r["test_acc"]:.4f},{r["val_acc"]:.4f},'
      f'{r["peak_rss_bytes"]},ru_maxrss,{ph["sample"]:.4f},{ph["gather"]:.4f},{ph["compute"]:.4f},0,{l0},{l1},{commit},'
      f'torch {r["torch"]} threads {r["threads"]} blas {blas} sparse-input {tv}')
PY
			done
			continue
		fi
		for np in $NPS; do
			tag=$ds-gnnmpi${VARIANT:+-$VARIANT}-np$np
			m=$LOGS/$tag.jsonl
			rss=$LOGS/$tag.rss
			rm -f "$m" "$rss".*
			echo "== $ds gnnmpi${VARIANT:+ ($VARIANT)} np=$np" >&2
			# --bind-to none: Open MPI binds a job of 1 or 2 ranks to one
			# core each, which would leave np 1 one of the peer's cores.
			margs=(-np "$np" --bind-to none)
			[ "$np" -gt "$(nproc)" ] && margs+=(--oversubscribe)
			l0=$(load1)
			# Each rank runs under GNU time, which writes its peak RSS
			# (KiB) to $rss.<rank>.
			wrap=()
			# shellcheck disable=SC2016
			[ -x /usr/bin/time ] && wrap=(sh -c 'exec /usr/bin/time -f %M -o "$0.${OMPI_COMM_WORLD_RANK:-0}" "$@"' "$rss")
			# shellcheck disable=SC2086
			mpirun "${margs[@]}" ${MPIRUN_ARGS:-} "${wrap[@]}" \
				$G train --data "$gnn" --split "$split" --model sage --layers 2 --hidden 256 --fanouts 15,10 \
				--global-batch-size 1024 --epochs "$EPOCHS" --eval-every "$EPOCHS" --feature-norm "$norm" \
				--metrics "$m" $GNNMPI_FLAGS 2>&1 | tee "$LOGS/$tag.log" >&2
			l1=$(load1)
			"$PY" - "$m" "$rss" "$ds" "$VARIANT" "$np" "$l0" "$l1" "$commit" "$GNNMPI_FLAGS" >> "$csv" <<'PY'
import glob, json, statistics, sys
path, rss, ds, variant, np_, l0, l1, commit, flags = sys.argv[1:]
recs = [json.loads(l) for l in open(path)]
ep = [r for r in recs if not r.get("final")]
fin = [r for r in recs if r.get("final")][-1]
# Phase seconds: median over epochs of the slowest rank's time per phase.
ph = {k: statistics.median(e["phase_s"].get(k, 0) for e in ep) for k in ("sample", "fetch", "compute", "grad")}
# Peak RSS per rank: gnnmpi's own figure (VmHWM) where the final metrics
# carry one, else GNU time's of every rank; the largest.
peak, src = fin.get("peak_rss_bytes"), "vmhwm"
if isinstance(peak, list):
    peak = max(peak) if peak else None
if not peak:
    kib = [int(open(f).read().split()[-1]) for f in glob.glob(rss + ".*")]
    peak, src = (max(kib) * 1024, "ru_maxrss") if kib else ("", "none")
steps = ep[-1].get("batches", "") if ep else ""
print(f'{ds},gnnmpi,{variant},{np_},{len(ep)},{steps},{fin["median_epoch_s"]:.4f},{fin["test_acc"]:.4f},{fin["best_val_acc"]:.4f},'
      f'{peak},{src},{ph["sample"]:.4f},{ph["fetch"]:.4f},{ph["compute"]:.4f},{ph["grad"]:.4f},{l0},{l1},{commit},{flags.replace(",", ";")}')
PY
		done
	done
done
go run ./bench/plot throughput "$csv" "$OUT/throughput.png"
cat "$csv"
# The summary: every gnnmpi run's epoch time against the strongest peer
# (the fastest PyTorch variant on the same dataset).
"$PY" - "$csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["median_epoch_s"]]
for ds in dict.fromkeys(r["dataset"] for r in rows):
    peers = [r for r in rows if r["dataset"] == ds and r["system"] == "torch"]
    if not peers:
        continue
    best = min(peers, key=lambda r: float(r["median_epoch_s"]))
    print(f"{ds}: strongest peer torch {best['variant']} {float(best['median_epoch_s']):.3f} s/epoch, "
          f"test {float(best['test_acc']):.4f}")
    for r in rows:
        if r["dataset"] == ds and r["system"] != "torch":
            print(f"  gnnmpi{' ' + r['variant'] if r['variant'] else ''} np{r['np']}: {float(r['median_epoch_s']):.3f} s "
                  f"= {float(r['median_epoch_s']) / float(best['median_epoch_s']):.3f}x, test {float(r['test_acc']):.4f}")
PY
