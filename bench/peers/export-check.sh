#!/usr/bin/env bash
# bench/peers/export-check.sh: train each minibatch model with gnnmpi,
# export it (train --save-model) with its logits (--save-logits), and check
# with bench/peers/load_gnnmpi.py that PyTorch (and PyG where importable)
# reproduces gnnmpi's predictions exactly and its logits within 1e-4, and
# that the peers read a .gnn of DATA as they read DATA (gnnfile.py).
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
# The peers' .gnn reader (gnnfile.py) gives what their csv reader gives,
# for the same graph converted by gnnmpi (Cora: sparse features, version 2).
"$bin" convert --data "$data" --out "$out/data.gnn" >/dev/null
"$py" - "$data" "$out/data.gnn" <<'PY'
import sys, numpy as np
sys.path.insert(0, "bench/peers")
from sage_torch import load
a, b = load(sys.argv[1], None), load(sys.argv[2], None)
for k, name in enumerate(("indptr", "indices", "features", "labels")):
    if not np.array_equal(a[k], b[k]):
        sys.exit(f"gnnfile.py: {name} of {sys.argv[2]} differ from {sys.argv[1]}'s")
if a[5] != b[5] or any(not np.array_equal(a[4][p], b[4][p]) for p in a[4]):
    sys.exit(f"gnnfile.py: the split of {sys.argv[2]} differs from {sys.argv[1]}'s")
print(f"gnnfile.py: {sys.argv[2]} reads as {sys.argv[1]} does")
PY
