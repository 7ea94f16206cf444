#!/bin/bash
# Elastic resume drift (issue 31 item 3): uninterrupted 10-epoch runs at 2
# and 4 in-process ranks, and 5 epochs at p resumed to 10 at p' (4→2,
# 2→4); prints the largest relative per-epoch loss difference of each pair.
#   bench/elastic-resume.sh BIN DATA WORKDIR
# Environment: SHUF (default "--shuffle global"; "--topology 1.5d" for a
# partitioned directory, which takes the local shuffle), DROP (dropout,
# default 0.5: the masks are keyed by vertex, the same at any rank
# count).
set -e
B=${1:-./gnnmpi}; D=${2:-data/cora}; W=${3:-/tmp/elastic-measure}
rm -rf "$W"; mkdir -p "$W"
A="--data $D --global-batch-size 32 ${SHUF:---shuffle global} --seed 1 --dropout ${DROP:-0.5}"
for p in 2 4; do
  $B --ranks $p train $A --epochs 10 --metrics $W/u$p.jsonl >/dev/null 2>&1
  $B --ranks $p train $A --epochs 5 --checkpoint $W/c$p >/dev/null 2>&1
done
$B --ranks 4 train $A --epochs 10 --checkpoint $W/c2 --resume --metrics $W/r24.jsonl >/dev/null 2>&1
$B --ranks 2 train $A --epochs 10 --checkpoint $W/c4 --resume --metrics $W/r42.jsonl >/dev/null 2>&1
python3 - "$W" <<'PY'
import json, sys
w = sys.argv[1]
def losses(f):
    out = {}
    for line in open(f"{w}/{f}.jsonl"):
        o = json.loads(line)
        if "loss" in o and "epoch" in o:
            out[o["epoch"]] = o["loss"]
    return out
u2, u4, r24, r42 = (losses(f) for f in ("u2", "u4", "r24", "r42"))
def drift(a, b):
    return max(abs(a[e] - b[e]) / abs(a[e]) for e in b if e in a)
print("2 vs 4 ranks uninterrupted: %.2g" % drift(u2, u4))
print("4->2 resumed: vs 4 ranks %.2g, vs 2 ranks %.2g" % (drift(u4, r42), drift(u2, r42)))
print("2->4 resumed: vs 2 ranks %.2g, vs 4 ranks %.2g" % (drift(u2, r24), drift(u4, r24)))
PY
