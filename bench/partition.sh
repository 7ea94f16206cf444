#!/usr/bin/env bash
# bench/partition.sh: edge cut and vertex balance of the distributed
# PT-Scotch partitioner (`partition --method ptscotch` under mpirun, every
# rank reading 1/p of the rows) at np 1, 2, 4 against METIS on rank 0 (the
# whole graph in memory), on the same symmetrized graphs.
#
#   bench/partition.sh [PARTS...]      default PARTS: 4 16
#
# Datasets: Cora (embedded) and coauthor-cs, coauthor-physics,
# amazon-computers from $DATA (default ../shared/data, OGB raw layout),
# each converted once with `convert --symmetrize`. edge_cut counts stored
# (directed) edges between parts, twice the undirected cut; balance is the
# largest part over the mean. Seed 1 for both; timings on a shared machine
# are indicative only.
#
# Writes bench/results/partition.csv:
# dataset,vertices,edges,parts,method,ranks,edge_cut,cut_fraction,balance,seconds
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-../shared/data}
PARTS=("$@")
[ ${#PARTS[@]} -gt 0 ] || PARTS=(4 16)
OUT=bench/results
mkdir -p "$OUT"
./run.sh build >/dev/null
G=./gnnmpi
if [ "$(id -u)" = 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

csv="$OUT/partition.csv"
echo "dataset,vertices,edges,parts,method,ranks,edge_cut,cut_fraction,balance,seconds" > "$csv"

# row NAME PARTS METHOD RANKS OUTPUT: parse a `partition` run's output.
row() {
	python3 - "$@" <<'PY' >> "$csv"
import re, sys
name, parts, method, ranks, text = sys.argv[1:6]
m = re.search(r"in ([0-9.]+)s: edge cut (\d+) of (\d+) \(.*\), sizes \[([0-9 ]+)\]", text)
if not m:
    sys.exit("bench/partition.sh: cannot parse:\n" + text)
secs, cut, edges = float(m[1]), int(m[2]), int(m[3])
sizes = [int(s) for s in m[4].split()]
n = sum(sizes)
bal = max(sizes) * len(sizes) / n
print(f"{name},{n},{edges},{parts},{method},{ranks},{cut},{cut/edges:.4f},{bal:.3f},{secs:.2f}")
PY
}

for spec in cora:data/cora coauthor-cs:"$DATA/coauthor-cs" coauthor-physics:"$DATA/coauthor-physics" amazon-computers:"$DATA/amazon-computers"; do
	name=${spec%%:*}
	src=${spec#*:}
	if [ ! -d "$src" ]; then
		echo "bench/partition.sh: $src missing; skipping $name" >&2
		continue
	fi
	gnn="$work/$name.gnn"
	$G convert --data "$src" --out "$gnn" --symmetrize --feature-format csr >/dev/null 2>&1
	for k in "${PARTS[@]}"; do
		out=$($G partition --data "$gnn" --parts "$k" --method metis --split none --seed 1 --book "$work/book" 2>/dev/null)
		row "$name" "$k" metis 1 "$out"
		for np in 1 2 4; do
			out=$(mpirun -np "$np" --oversubscribe ./gnnmpi partition --data "$gnn" --parts "$k" --method ptscotch --seed 1 --book "$work/book" 2>/dev/null)
			row "$name" "$k" ptscotch "$np" "$out"
		done
		tail -4 "$csv" >&2
	done
done
echo "wrote $csv" >&2
