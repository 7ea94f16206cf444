#!/usr/bin/env bash
# bench/peers/export-check.sh: train each minibatch model with gnnmpi,
# export it (train --save-model) with its logits (--save-logits), and check
# with bench/peers/load_gnnmpi.py that PyTorch (and PyG where importable)
# reproduces gnnmpi's predictions exactly and its logits within 1e-4.
#
#   bench/peers/export-check.sh GNNMPI OUTDIR [DATA [MODELS [RANKS]]]
#
# DATA is an OGB raw-layout directory (default: the repository's
# data/cora), MODELS a comma-separated list (default sage,gcn,gat), RANKS
# the in-process ranks of the training (default 2). It needs
# /usr/bin/python3 with torch and numpy (Debian's python3-torch); without
# them it says so and exits 0 (skipped).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$1 out=$2 data=${3:-data/cora} models=${4:-sage,gcn,gat} ranks=${5:-2}
py=/usr/bin/python3
if ! "$py" -c 'import torch, numpy' 2>/dev/null; then
	echo "export-check: skipped: $py cannot import torch and numpy (apt-get install python3-torch)" >&2
	exit 0
fi
mkdir -p "$out"
for m in ${models//,/ }; do
	"$bin" --ranks "$ranks" train --data "$data" --model "$m" --epochs 10 \
		--save-model "$out/$m.safetensors" --save-logits "$out/$m.npy" >"$out/$m.train.log" 2>&1 ||
		{ cat "$out/$m.train.log" >&2; exit 1; }
	"$py" bench/peers/load_gnnmpi.py --model "$out/$m.safetensors" --data "$data" --logits "$out/$m.npy" |
		tee "$out/$m.check.json"
done
