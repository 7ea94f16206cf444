#!/usr/bin/env bash
# bench/load.sh: load time of the csv.gz (OGB raw layout) source against the
# binary .gnn format, through `gnnmpi info` (which validates and computes
# degree statistics after loading; load_seconds_max times the load alone).
#
#   bench/load.sh [SCALE]      default SCALE=20 (R-MAT, edge factor 16)
#
# Writes bench/out/load.csv: dataset,format,ranks,load_seconds (best of 3),ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${1:-20}
OUT=bench/out
mkdir -p "$OUT"
./run.sh build >/dev/null
G=./gnnmpi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# load_seconds PATH RANKS: the best of 3 runs (this machine is noisy).
load_seconds() {
	for _ in 1 2 3; do
		$G --ranks "$2" info --data "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["dataset"]["load_seconds_max"])'
	done | sort -g | head -1
}

echo "dataset,format,ranks,load_seconds,ratio" > "$OUT/load.csv"
measure() { # name csvdir
	local name=$1 src=$2
	$G convert --data "$src" --out "$work/$name.gnn" >&2
	for ranks in 1 2; do
		local tc tb
		tc=$(load_seconds "$src" $ranks)
		tb=$(load_seconds "$work/$name.gnn" $ranks)
		local ratio
		ratio=$(python3 -c "print(f'{$tc/$tb:.1f}')")
		echo "$name,csv.gz,$ranks,$tc,1.0" >> "$OUT/load.csv"
		echo "$name,gnn,$ranks,$tb,$ratio" >> "$OUT/load.csv"
		echo "$name ranks=$ranks: csv.gz ${tc}s, binary ${tb}s: ${ratio}x" >&2
	done
}

/usr/bin/time -f "gen rmat scale $SCALE: %e s, %M KiB max RSS" $G gen rmat --scale "$SCALE" --edgefactor 16 --out "$work/rmat$SCALE" >&2
measure "rmat-s$SCALE" "$work/rmat$SCALE"
measure cora data/cora
if [ -d ../shared/data/coauthor-physics ]; then
	measure coauthor-physics ../shared/data/coauthor-physics
fi
cat "$OUT/load.csv"
