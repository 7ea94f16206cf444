#!/bin/bash
# bench/papers.sh GNNMPI DATA OUT: the papers-like dataset DATA (made by
# `gnnmpi gen papers` if missing: NODES vertices, 20M by default, 128
# float16 features) partitioned and trained for one epoch with no rank
# holding the graph, every rank in a memory cgroup of its own
# (bench/memcap.sh): np 1 under the 4 GiB cap (refused by gnnmpi's memory
# checks), np 4 under 4 GiB (4 parts) and np 8 under 2.5 GiB (8 parts).
# Logs, metrics and summary.txt (each step's exit status and wall time)
# go to OUT; the parts go beside DATA (DATA.parts, DATA.parts8; about
# 15 GB each at 20M vertices; the second is removed at the end). Needs
# root for the cgroups; see docs/data-formats.md.
set -u
B=$(realpath "$1") DATA=$2 O=$3
CAP=$(realpath "$(dirname "$0")/memcap.sh")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
G4=4294967296 G25=2684354560
mkdir -p "$O"
: > "$O/summary.txt"
step() {
	local name=$1
	shift
	echo "$name: $*" >> "$O/commands.txt"
	local t0 t1 rc
	t0=$(date +%s.%N)
	"$@" > "$O/$name.log" 2>&1
	rc=$?
	t1=$(date +%s.%N)
	echo "$name rc=$rc wall=$(echo "$t1 - $t0" | bc)" | tee -a "$O/summary.txt"
}
uptime | tee "$O/uptime.txt"
[ -d "$DATA/raw" ] || step gen "$B" gen papers --nodes "${NODES:-20000000}" --degree 15 --features 128 --feature-dtype f16 --out "$DATA"
rm -rf "$DATA.parts" "$DATA.parts8"
part="partition --data $DATA --symmetrize --method block"
train="train --split time --topology 1.5d --epochs 1 --eval-every 0 --global-batch-size 1024 --feature-dtype f16"
step part-np1 mpirun --bind-to none -np 1 "$CAP" $G4 "$B" $part --parts 4 --out "$DATA.parts"
step part-np4 mpirun --bind-to none --oversubscribe -np 4 "$CAP" $G4 /usr/bin/time -f "rank-maxrss-kb %M" "$B" $part --parts 4 --out "$DATA.parts"
step train-np1 mpirun --bind-to none -np 1 "$CAP" $G4 "$B" $train --data "$DATA.parts"
step train-np4 mpirun --bind-to none --oversubscribe -np 4 "$CAP" $G4 /usr/bin/time -f "rank-maxrss-kb %M" "$B" $train --data "$DATA.parts" --save-model "$O/model.safetensors" --metrics "$O/train-np4.jsonl"
step part-np8 mpirun --bind-to none --oversubscribe -np 8 "$CAP" $G25 /usr/bin/time -f "rank-maxrss-kb %M" "$B" $part --parts 8 --out "$DATA.parts8"
step train-np8 mpirun --bind-to none --oversubscribe -np 8 "$CAP" $G25 /usr/bin/time -f "rank-maxrss-kb %M" "$B" $train --data "$DATA.parts8" --metrics "$O/train-np8.jsonl"
rm -rf "$DATA.parts8"
uptime | tee -a "$O/uptime.txt"
