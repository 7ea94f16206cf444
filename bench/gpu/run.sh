#!/usr/bin/env bash
# bench/gpu/run.sh: the hardware check and benchmark of gnnmpi's GPU path,
# one command on a machine with an NVIDIA GPU, from the directory that
# bench/gpu/pack.sh prepares (a prebuilt binary, its libraries, the data and
# the peers; no Go, MPI or Debian packages needed there).
#
#   PACK/run.sh OUT               on the GPU machine (PACK: the pack's directory)
#   bench/gpu/run.sh --fake OUT   here, on the fake CUDA libraries of the tests
#                                 (built with gcc; ./run.sh test runs this)
#
# It writes six files to OUT (the device tool brings back at most eight):
#   run.log            everything it printed
#   gpucheck.json      gnnmpi gpucheck's report (kernels, cuBLAS/cuSPARSE,
#                      the zero-copy gather benchmark with the link's bandwidth
#                      from NVML, Cora trained on the GPU against the CPU)
#   gpucheck.csv       device,driver,check,result,detail,numbers: one row a check
#   train.csv          device,driver,dataset,model,system,where,epochs,epoch_s,eval_s,test_acc,
#                      peak_device_bytes,max_loss_rel_diff: gnnmpi with --device cuda
#                      and --device cpu (GraphSAGE on each dataset, GCN and GAT on
#                      Cora; every epoch's loss compared), and the PyTorch and PyG
#                      peers on the same GPU where they import (eval_s: the last
#                      evaluation's seconds)
#   sbm-gnnmpi.jsonl   gnnmpi's metrics of the SBM's training below
#                      (train.csv also has a row of it with --bulk SBM_BULK,
#                      default 16, without evaluation, and the rows of a
#                      papers-like graph evaluated layer-wise and with
#                      --eval-fanouts: step 4b)
#   export.jsonl       bench/peers/load_gnnmpi.py --pyg on, one line a model: Cora's
#                      SAGE, GCN and GAT trained with --device cpu and SAGE with
#                      --device cuda, exported (--save-model, --save-logits) and
#                      rebuilt in plain PyTorch and in PyG (skipped with --fake)
# and keeps every run's metrics and output in WORK (default: a temporary
# directory, named in run.log). It fails when a check fails or the losses of cuda and cpu differ by more
# than LOSS_TOL (relative, default 1e-3).
#
# A products-size SBM (SBM_NODES vertices, default 2,400,000; --fake: 2,000;
# written as .gnn, which gnnmpi and the peers read without parsing text;
# 100 dense features; ogbn-products' split sizes, 8% training and 1.6%
# validation vertices), generated there by gnnmpi gen, is then trained by
# gnnmpi with --device cuda and by the peers, for time and device memory
# only, with the settings SALIENT uses on products: fanouts 15,10, batch
# 1024, hidden 128, 2 epochs. A papers-like graph (PAPERS_NODES, default
# 2,000,000; --fake: 3,000) is then evaluated both ways (step 4b). Steps
# left when BUDGET seconds (default 420) have passed are skipped, with a
# line saying so.
#
# Environment: EPOCHS (default 5; --fake: 2), LOSS_TOL, PYTHON (a python3
# with PyTorch; default: the first python3 on PATH), GNNMPI_CUDA_LIBDIR and
# GNNMPI_NCCL_LIBDIR (found from PyTorch's CUDA wheels when unset).
set -euo pipefail

fake=0
if [ "${1:-}" = --fake ]; then
	fake=1
	shift
fi
if [ $# -ne 1 ]; then
	echo "usage: run.sh [--fake] OUT" >&2
	exit 2
fi
OUT=$1
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"
exec > >(tee "$OUT/run.log") 2>&1
here=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-python3}
LOSS_TOL=${LOSS_TOL:-1e-3}

if [ "$fake" = 1 ]; then
	# Here: build the binary and the fake libraries from the repository.
	repo=$(cd "$here/../.." && pwd)
	PACK=$WORK/pack
	"$repo/bench/gpu/pack.sh" "$PACK" >/dev/null
	(cd "$repo" && go run ./bench/gpu/fakes "$WORK/fakes")
	export GNNMPI_CUDA_LIBDIR=$WORK/fakes
	EPOCHS=${EPOCHS:-2}
	SBM_NODES=${SBM_NODES:-2000}
	PAPERS_NODES=${PAPERS_NODES:-3000}
	datasets=(cora)
	device="fake CUDA (gpu/gputest)"
	driver=fake
else
	PACK=$here
	EPOCHS=${EPOCHS:-5}
	SBM_NODES=${SBM_NODES:-2400000}
	PAPERS_NODES=${PAPERS_NODES:-2000000}
	datasets=(cora)
	[ -e "$PACK/data/coauthor-physics.gnn" ] && datasets+=(coauthor-physics)
	# The driver's directory, and the CUDA libraries of PyTorch's wheels
	# (site-packages/nvidia/*/lib, nvidia/cu13/lib): every directory holding
	# one goes on the loader's path, so that NVRTC also finds its builtins.
	libdirs=()
	for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/local/cuda/lib64; do
		[ -d "$d" ] && libdirs+=("$d")
	done
	site=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null || true)
	if [ -n "$site" ] && [ -d "$site/nvidia" ]; then
		while read -r d; do libdirs+=("$d"); done < <(find "$site/nvidia" -maxdepth 3 -type d -name lib | sort)
	fi
	for d in "${libdirs[@]}"; do
		if [ -z "${GNNMPI_CUDA_LIBDIR:-}" ] && compgen -G "$d/libnvrtc.so*" >/dev/null; then
			export GNNMPI_CUDA_LIBDIR=$d
		fi
		if [ -z "${GNNMPI_NCCL_LIBDIR:-}" ] && [ -e "$d/libnccl.so.2" ]; then
			export GNNMPI_NCCL_LIBDIR=$d
		fi
	done
	export LD_LIBRARY_PATH=$(
		IFS=:
		echo "${libdirs[*]}"
	)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	if command -v nvidia-smi >/dev/null; then
		device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
		driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
	else
		device=unknown driver=unknown
	fi
fi
export LD_LIBRARY_PATH=$PACK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
BIN=$PACK/gnnmpi
BUDGET=${BUDGET:-420}
SBM_TRAIN="--epochs 2 --fanouts 15,10 --hidden 128" # the SBM's training, gnnmpi's and the peers'; batch 1024
declare -A path
# A dataset is PACK/data/NAME.gnn (pack.sh converts coauthor-physics: the
# peers read .gnn too, without parsing csv.gz) or the OGB directory
# PACK/data/NAME.
for ds in "${datasets[@]}"; do
	path[$ds]=$PACK/data/$ds
	[ -e "$PACK/data/$ds.gnn" ] && path[$ds]=$PACK/data/$ds.gnn
done
# left prints the seconds of the budget left (0 when spent).
left() { echo $((BUDGET > SECONDS ? BUDGET - SECONDS : 0)); }
if [ "$fake" = 0 ]; then
	nvidia-smi || true
	"$PYTHON" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' || true
	"$PYTHON" -c 'import torch_geometric; print("torch_geometric", torch_geometric.__version__)' || true
fi
echo "gpu run: $device, driver $driver; work in $WORK; GNNMPI_CUDA_LIBDIR=${GNNMPI_CUDA_LIBDIR:-} GNNMPI_NCCL_LIBDIR=${GNNMPI_NCCL_LIBDIR:-}; epochs $EPOCHS"
# step prints a step's name with the seconds since the start.
step() { echo "[${SECONDS}s] $*"; }
status=0

# 1. gpucheck: the kernels, the libraries, the zero-copy benchmark and a
# short training on the GPU against the CPU.
# Each gnnmpi step has a time limit (STEP_S, default 150 s), so that a hang
# on new hardware costs one step, not the call.
STEP_S=${STEP_S:-150}
step gpucheck
if timeout "$STEP_S" "$BIN" gpucheck --data "$PACK/data/cora" --report "$OUT/gpucheck.json"; then
	echo "gpucheck: passed"
else
	echo "gpucheck: FAILED"
	status=1
fi

# 2. gnnmpi, --device cuda against --device cpu: GraphSAGE on each
# dataset, and GCN and GAT on Cora (CSR rows: --feature-format auto).
runs=()
for ds in "${datasets[@]}"; do runs+=("$ds:sage"); done
runs+=(cora:gcn cora:gat)
for run in "${runs[@]}"; do
	ds=${run%%:*} model=${run##*:}
	for where in cuda cpu; do
		step "train $ds --model $model --device $where"
		f=$WORK/$ds-$model-$where
		rm -f "$f.jsonl"
		if ! timeout "$STEP_S" "$BIN" --metrics "$f.jsonl" train --data "${path[$ds]}" --model "$model" --device "$where" \
			--epochs "$EPOCHS" --eval-every "$EPOCHS" >"$f.log" 2>&1; then
			echo "train $ds --model $model --device $where: FAILED"
			status=1
		fi
		tail -3 "$f.log"
	done
done

# 2b. Export: the models gnnmpi trained, rebuilt in PyTorch and in PyG.
if [ "$fake" = 0 ]; then
	: >"$OUT/export.jsonl"
	for run in cpu:sage cpu:gcn cpu:gat cuda:sage; do
		where=${run%%:*} model=${run##*:}
		step "export $model ($where)"
		f=$WORK/export-$model-$where
		if timeout "$STEP_S" "$BIN" train --data "$PACK/data/cora" --model "$model" --device "$where" --epochs 10 \
			--save-model "$f.safetensors" --save-logits "$f.npy" >"$f.log" 2>&1 &&
			timeout "$STEP_S" "$PYTHON" "$PACK/peers/load_gnnmpi.py" --model "$f.safetensors" --data "$PACK/data/cora" \
				--logits "$f.npy" --pyg on >"$f.check" 2>&1; then
			echo "export $model ($where): matched"
		else
			echo "export $model ($where): FAILED"
			status=1
		fi
		tail -n 3 "$f.log" "$f.check" || true
		grep '^{' "$f.check" | sed "s/^{/{\"device\": \"$where\", /" >>"$OUT/export.jsonl" || true
	done
fi

# 3. The products-size SBM: gnnmpi on the GPU only (time and memory).
bench=()
if [ "$SBM_NODES" -gt 0 ] && [ "$(left)" -gt 60 ]; then
	t0=$SECONDS
	step "sbm: gen"
	if "$BIN" gen sbm --nodes "$SBM_NODES" --features 100 --train-frac 0.08 --valid-frac 0.016 \
		--out "$WORK/sbm.gnn" >"$WORK/sbm-gen.log" 2>&1; then
		echo "sbm: $SBM_NODES vertices generated in $((SECONDS - t0)) s"
		path[sbm]=$WORK/sbm.gnn
		bench+=(sbm)
		rm -f "$WORK/sbm-cuda.jsonl"
		step "sbm: gnnmpi --device cuda"
		# shellcheck disable=SC2086
		if ! timeout "$(left)" "$BIN" --metrics "$WORK/sbm-cuda.jsonl" train --data "${path[sbm]}" --device cuda \
			$SBM_TRAIN --global-batch-size 1024 --eval-every 2 >"$WORK/sbm-cuda.log" 2>&1; then
			echo "train sbm --device cuda: FAILED or over the budget"
			status=1
		fi
		tail -3 "$WORK/sbm-cuda.log"
		cp "$WORK/sbm-cuda.jsonl" "$OUT/sbm-gnnmpi.jsonl" 2>/dev/null || true
		# Bulk sampling (SBM_BULK minibatches a round, sampled in parallel
		# over the host's cores; the same minibatches as --bulk 1), without
		# evaluation: the sampling is the SBM epoch's largest part.
		if [ "${SBM_BULK:-16}" -gt 1 ] && [ "$(left)" -gt 60 ]; then
			step "sbm: gnnmpi --device cuda --bulk ${SBM_BULK:-16}"
			rm -f "$WORK/sbm-bulk-cuda.jsonl"
			# shellcheck disable=SC2086
			if timeout "$(left)" "$BIN" --metrics "$WORK/sbm-bulk-cuda.jsonl" train --data "${path[sbm]}" --device cuda \
				$SBM_TRAIN --global-batch-size 1024 --eval-every 0 --bulk "${SBM_BULK:-16}" >"$WORK/sbm-bulk.log" 2>&1; then
				bench+=(sbm-bulk)
			else
				echo "train sbm --bulk ${SBM_BULK:-16}: FAILED or over the budget"
				status=1
			fi
			tail -n 3 "$WORK/sbm-bulk.log"
		fi
	else
		echo "sbm: gen failed"
		tail -3 "$WORK/sbm-gen.log"
		status=1
	fi
else
	echo "sbm: skipped (SBM_NODES=$SBM_NODES, $(left) s of the budget left)"
fi

# 4. The peers on the same GPU, where PyTorch sees it.
peers=()
if [ "$fake" = 0 ] && "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	# The SBM first: its comparison (SALIENT's settings) is the one the budget must not cut.
	for ds in "${bench[@]}" "${datasets[@]}"; do
		[ "$ds" = cora ] || [ "$ds" = sbm-bulk ] && continue
		for peer in torch pyg; do
			if [ "$(left)" -lt 30 ]; then
				echo "peer $peer on $ds: skipped (time budget spent)"
				continue
			fi
			step "peer $peer on $ds"
			args=(--epochs "$EPOCHS" --fanouts 25,10 --batch-size 32 --hidden 128) # gnnmpi's defaults
			# shellcheck disable=SC2206
			[ "$ds" = sbm ] && args=($SBM_TRAIN --batch-size 1024)
			if timeout "$(left)" "$PYTHON" "$PACK/peers/sage_$peer.py" --data "${path[$ds]}" --device cuda \
				"${args[@]}" >"$WORK/$ds-$peer.log" 2>&1; then
				peers+=("$ds:$peer")
			else
				echo "peer $peer on $ds: did not run"
			fi
			tail -3 "$WORK/$ds-$peer.log"
		done
	done
else
	echo "peers: skipped (no PyTorch with a CUDA device)"
fi

# 4b. Evaluation on a papers100M-like graph (gnnmpi gen papers:
# PAPERS_NODES vertices, 0.3% of them validation and test vertices), one
# epoch each: layer-wise inference over every vertex on the device, and the
# validation and test vertices alone (--eval-fanouts=-1,-1, exact). Last:
# the budget cuts it first.
if [ "${PAPERS_NODES:-0}" -gt 0 ] && [ "$(left)" -gt 60 ]; then
	step "papers: gen"
	if "$BIN" gen papers --nodes "$PAPERS_NODES" --degree 15 --features 128 --out "$WORK/papers" >"$WORK/papers-gen.log" 2>&1; then
		for ev in layerwise evalfanouts; do
			if [ "$(left)" -lt 30 ]; then
				echo "papers $ev: skipped (time budget spent)"
				continue
			fi
			name=papers
			args=()
			[ "$ev" = evalfanouts ] && name=papers-evalfanouts args=(--eval-fanouts=-1,-1)
			step "papers: gnnmpi --device cuda ${args[*]}"
			rm -f "$WORK/$name-cuda.jsonl"
			if timeout "$(left)" "$BIN" --metrics "$WORK/$name-cuda.jsonl" train --data "$WORK/papers" --device cuda \
				--epochs 1 --eval-every 1 --fanouts 15,10 --batch-size 1024 --hidden 128 "${args[@]}" >"$WORK/$name.log" 2>&1; then
				bench+=("$name")
			else
				echo "train papers ${args[*]}: FAILED or over the budget"
				status=1
			fi
			tail -n 3 "$WORK/$name.log"
		done
	else
		echo "papers: gen failed"
		tail -n 3 "$WORK/papers-gen.log"
		status=1
	fi
fi

# 5. The CSVs, naming the device and the driver.
DEVICE=$device DRIVER=$driver OUT=$OUT WORK=$WORK LOSS_TOL=$LOSS_TOL PEERS="${peers[*]:-}" RUNS="${runs[*]}" \
	BENCH="${bench[*]:-}" \
	"$PYTHON" - <<'PY' || status=1
import csv, json, os, sys

out, work = os.environ["OUT"], os.environ["WORK"]
device, driver = os.environ["DEVICE"], os.environ["DRIVER"]
tol = float(os.environ["LOSS_TOL"])
ok = True
with open(os.path.join(out, "gpucheck.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["device", "driver", "check", "result", "detail", "numbers"])
    try:
        rep = json.load(open(os.path.join(out, "gpucheck.json")))
        for c in rep.get("checks", []):
            w.writerow([device, driver, c.get("name"), c.get("result"), (c.get("detail") or "").split("\n")[0],
                        json.dumps(c["numbers"], sort_keys=True) if c.get("numbers") else ""])
    except (OSError, ValueError) as e:
        print(f"gpucheck.json: {e}")
        ok = False

def eval_s(rs):
    """The last evaluation's seconds of a gnnmpi run's epoch records."""
    ev = [r for r in rs if r.get("val_loss") is not None and "phase_s" in r]
    return ev[-1]["phase_s"].get("eval") if ev else None

def records(path):
    try:
        return [json.loads(l) for l in open(path) if l.strip()]
    except OSError:
        return []

rows = []
for run in os.environ["RUNS"].split():
    ds, model = run.split(":")
    runs = {w: records(os.path.join(work, f"{ds}-{model}-{w}.jsonl")) for w in ("cuda", "cpu")}
    losses = {w: [r["loss"] for r in rs if "epoch" in r and "loss" in r] for w, rs in runs.items()}
    diff = None
    if losses["cuda"] and len(losses["cuda"]) == len(losses["cpu"]):
        diff = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses["cuda"], losses["cpu"]))
        if diff > tol:
            print(f"{ds} {model}: losses of cuda and cpu differ by {diff:.3g} relative (> {tol})")
            ok = False
    else:
        print(f"{ds} {model}: no complete pair of runs to compare")
        ok = False
    for w, rs in runs.items():
        fin = next((r for r in rs if r.get("type") == "final" or r.get("final")), {})
        rows.append([device, driver, ds, model, "gnnmpi", w, len(losses[w]), fin.get("median_epoch_s"), eval_s(rs), fin.get("test_acc"), "", diff])
for ds in os.environ["BENCH"].split():
    rs = records(os.path.join(work, f"{ds}-cuda.jsonl"))
    fin = next((r for r in rs if r.get("type") == "final" or r.get("final")), {})
    epochs = sum(1 for r in rs if "epoch" in r and "loss" in r)
    cfg = fin.get("config", {})
    system = "gnnmpi"
    if cfg.get("bulk", 1) > 1:
        system += f" --bulk {cfg['bulk']}"
    if cfg.get("eval_fanouts"):
        system += " --eval-fanouts=" + ",".join(str(f) for f in cfg["eval_fanouts"])
    rows.append([device, driver, ds.split("-")[0], "sage", system, "cuda", epochs, fin.get("median_epoch_s"), eval_s(rs),
                 fin.get("test_acc") if fin.get("best_epoch") else "", "", ""])
for p in os.environ["PEERS"].split():
    ds, peer = p.split(":")
    res = {}
    for line in open(os.path.join(work, f"{ds}-{peer}.log")):
        if line.startswith("{"):
            res = json.loads(line)
    rows.append([device, driver, ds, "sage", peer, "cuda", res.get("epochs"), res.get("epoch_s"), res.get("eval_s"), res.get("test_acc"),
                 res.get("peak_device_bytes"), ""])
with open(os.path.join(out, "train.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["device", "driver", "dataset", "model", "system", "where", "epochs", "epoch_s", "eval_s", "test_acc",
                "peak_device_bytes", "max_loss_rel_diff"])
    w.writerows(rows)
for r in rows:
    print(",".join("" if v is None else str(v) for v in r))
sys.exit(0 if ok else 1)
PY
if [ "$status" = 0 ]; then echo "gpu run: passed"; else echo "gpu run: FAILED"; fi
exit "$status"
