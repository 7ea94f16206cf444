#!/usr/bin/env bash
# bench/memprobe.sh [BIN]: the memory check's probes (issue 29) under real
# memory caps, one cgroup per rank (bench/memcap.sh; root, cgroup v1 or a
# writable v2 subtree). A probe that cannot fit must end with gnnmpi's own
# "out of memory" message on every rank and a non-zero exit, never a Go
# runtime crash ("fatal error") nor a kernel kill (rc 137); a probe that
# fits must exit 0. The "run" probes first train uncapped to measure their
# peak resident memory and read the check's estimated peak, then train
# again under a cap just above both (the larger of peak + 10% + 48 MiB and
# the estimate + 5%: the estimate errs high, by design, up to 1.5× the
# peak). Every run is one short epoch.
#
#   go build -o /tmp/gnnmpi . && bench/memprobe.sh /tmp/gnnmpi
#
# Writes bench/out/memprobe.csv: probe, ranks, cap (bytes), rc, verdict (ok
# or FAIL: why), estimate (bytes: the refused need, or the estimated peak of
# a run, rank 0's), peak (bytes: the largest rank's peak RSS of a run).
# Exits non-zero if any probe's verdict is not ok.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-./gnnmpi}")
DATA=${DATA:-../shared/data}
OUT=bench/out
mkdir -p "$OUT"
LOG=$(mktemp -d)
trap 'rm -rf "$LOG"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
CSV=$OUT/memprobe.csv
echo "probe,ranks,cap,rc,verdict,estimate,peak" > "$CSV"
G=$((1 << 30))
PHYS="--data $DATA/coauthor-physics --split random-60-20-20-seed0 --model sage --fanouts 15,10 --batch-size 1024 --epochs 1"
AMZN="--data $DATA/amazon-computers --split random-60-20-20-seed0 --model sage --fanouts 15,10 --batch-size 1024 --epochs 1"
status=0

# launch NP CAP ARGS...: trains under the cap (0: none) on NP ranks
# (mpirun when NP > 1), stderr to $LOG/err, metrics to $LOG/m.jsonl.
launch() {
	local np=$1 cap=$2
	shift 2
	local cmd=("$BIN")
	[ "$cap" = 0 ] || cmd=(bench/memcap.sh "$cap" "$BIN")
	rm -f "$LOG/m.jsonl"
	if [ "$np" -gt 1 ]; then
		mpirun --oversubscribe -np "$np" "${cmd[@]}" train "$@" --metrics "$LOG/m.jsonl" >/dev/null 2>"$LOG/err"
	else
		"${cmd[@]}" train "$@" --metrics "$LOG/m.jsonl" >/dev/null 2>"$LOG/err"
	fi
}

# peak: the largest peak_rss_bytes of the run's final record.
peak() {
	grep -o '"peak_rss_bytes":\[[0-9,]*\]' "$LOG/m.jsonl" 2>/dev/null | tail -1 | tr -dc '0-9,' | tr , '\n' | sort -n | tail -1
}

# record NAME NP CAP RC VERDICT ESTIMATE PEAK
record() {
	echo "$1,$2,$3,$4,$5,$6,$7" >> "$CSV"
	echo "$1 (np $2, cap $3): rc $4, $5, estimate $6, peak $7"
	[ "$5" = ok ] || { status=1; sed -n 1,20p "$LOG/err"; }
}

# refuse NAME NP CAP ARGS...: the probe must be refused by the check, with
# gnnmpi's own message on every rank, or on at least OWN ranks when OWN is
# set (METIS runs on rank 0 alone: the others exit as rank 0 fails, under
# Open MPI often before they print).
refuse() {
	local name=$1 np=$2 cap=$3 want=${OWN:-$2}
	shift 3
	launch "$np" "$cap" "$@"
	local rc=$? verdict=ok
	local own
	own=$(grep -c 'gnnmpi: rank [0-9]*: .*out of memory' "$LOG/err")
	if grep -q 'fatal error' "$LOG/err"; then
		verdict="FAIL: Go runtime crash"
	elif [ $rc -eq 137 ] || grep -qi 'killed' "$LOG/err"; then
		verdict="FAIL: killed (rc $rc)"
	elif [ $rc -eq 0 ]; then
		verdict="FAIL: ran"
	elif [ "$own" -lt "$want" ]; then
		verdict="FAIL: out-of-memory message on $own of $np ranks"
	fi
	local est
	est=$(sed -n 's/.*needs \(at least \|about \)\{0,1\}\([0-9.]*\) GiB\( more\)\{0,1\}, but.*/\2/p; s/.*needs \(at least \)\{0,1\}\([0-9.]*\) GiB more.*/\2/p' "$LOG/err" | head -1)
	[ -n "$est" ] && est=$(awk -v g="$est" 'BEGIN { printf "%.0f", g * 1073741824 }')
	record "$name" "$np" "$cap" "$rc" "$verdict" "${est:-}" ""
}

# estimated: the largest estimated peak of the run's memory check lines
# (rank 0's: METIS's, when it partitions, and training's).
estimated() {
	sed -n 's/.*memory check: .*estimated peak \([0-9]*\) bytes.*/\1/p' "$LOG/err" | sort -n | tail -1
}

# fit NAME NP ARGS...: measures the probe's peak and estimate uncapped,
# then it must run under a cap just above both.
fit() {
	local name=$1 np=$2
	shift 2
	launch "$np" 0 "$@" || { record "$name" "$np" 0 $? "FAIL: uncapped run failed" "" ""; return; }
	local p cap est
	p=$(peak)
	est=$(estimated)
	cap=$((p + p / 10 + 48 * 1024 * 1024))
	[ -n "$est" ] && [ $((est + est / 20)) -gt "$cap" ] && cap=$((est + est / 20))
	launch "$np" "$cap" "$@"
	local rc=$? verdict=ok
	[ $rc -eq 0 ] || verdict="FAIL: rc $rc under a cap above the peak and the estimate"
	record "$name" "$np" "$cap" "$rc" "$verdict" "${est:-}" "$(peak)"
	# Half the peak must be refused by the check, not by the kernel.
	refuse "$name-half" "$np" $((p / 2)) "$@"
}

refuse physics-hidden-1e8 1 $((2 * G)) $PHYS --hidden 100000000
refuse physics-hidden-1e8 2 $((2 * G)) $PHYS --hidden 100000000
refuse physics-gat-heads-1e6 1 $((2 * G)) $PHYS --model gat --heads 1000000
refuse cora-graph-gcnii-hidden-1e8 1 $((2 * G)) --data data/cora --mode graph --model gcnii --hidden 100000000 --epochs 1
refuse cora-graph-gcnii-hidden-1e8 2 $((2 * G)) --data data/cora --mode graph --model gcnii --hidden 100000000 --epochs 1
refuse cora-hidden-1e5 1 $((2 * G)) --data data/cora --model sage --hidden 100000 --epochs 1
fit amazon-computers-dense 1 $AMZN
fit physics-sparse 1 $PHYS
fit physics-sparse 2 $PHYS
# A whole graph on several ranks is partitioned by METIS on rank 0 first:
# at np 2 on a 150,000-vertex SBM that is rank 0's peak (about 316 MB,
# against 227 MB for training with a random partition).
SBM=$LOG/sbm150k.gnn
"$BIN" gen sbm --nodes 150000 --degree 20 --features 8 --out "$SBM" >/dev/null 2>&1
OWN=1 refuse sbm150k-metis-280MiB 2 $((280 << 20)) --data "$SBM" --epochs 1 --eval-every 0
OWN=1 fit sbm150k-metis 2 --data "$SBM" --epochs 1 --eval-every 0
echo "wrote $CSV"
exit $status
