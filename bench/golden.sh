#!/usr/bin/env bash
# bench/golden.sh BIN OUTDIR: runs the Cora configurations that check a
# restructuring changed no result (every epoch's loss, accuracies and bytes),
# writing one JSONL file per configuration to OUTDIR. BIN is a gnnmpi built
# with MPI; the in-process ranks (--ranks N) run most of them.
#
#   bench/golden.sh /tmp/before/gnnmpi /tmp/before/out
#   bench/golden.sh ./gnnmpi /tmp/after/out
#   bench/golden.sh --compare /tmp/before/out /tmp/after/out
#
# --compare drops the keys that measure time or memory (*_s, peak_*_bytes,
# per-rank snapshots' seconds) and diffs the rest, key for key.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --compare ]; then
	status=0
	for f in "$2"/*.jsonl; do
		g="$3/$(basename "$f")"
		if ! diff <(go run ./bench/golden "$f") <(go run ./bench/golden "$g") >/dev/null; then
			echo "DIFFERS: $(basename "$f")"
			# head may close the pipe early: that is no failure of the script.
			diff <(go run ./bench/golden "$f") <(go run ./bench/golden "$g") | head -20 || true
			status=1
		else
			echo "same: $(basename "$f")"
		fi
	done
	exit $status
fi
BIN=$1 OUT=$2
mkdir -p "$OUT"
rm -f "$OUT"/*.jsonl
run() {
	local name=$1
	shift
	"$@" --metrics "$OUT/$name.jsonl" >/dev/null 2>"$OUT/$name.err" || { echo "FAILED: $name" >&2; cat "$OUT/$name.err" >&2; exit 1; }
}
D=data/cora E=5
run sage "$BIN" --ranks 2 train --data $D --model sage --epochs $E
run gcn "$BIN" --ranks 2 train --data $D --model gcn --epochs $E
run gat "$BIN" --ranks 2 train --data $D --model gat --epochs $E --heads 2
run ladies "$BIN" --ranks 2 train --data $D --model gcn --sampler ladies --fanouts 64,64 --epochs $E
run 15d "$BIN" --ranks 4 train --data $D --model sage --topology 1.5d --c 2 --bulk 4 --epochs $E
run 2d "$BIN" --ranks 4 train --data $D --model sage --topology 2d --epochs $E
run vip "$BIN" --ranks 4 train --data $D --model sage --cache vip --cache-frac 0.3 --replication 2 --epochs $E
run f16 "$BIN" --ranks 2 train --data $D --model sage --feature-dtype f16 --cache degree --cache-frac 0.2 --epochs $E
run sgd "$BIN" --ranks 2 train --data $D --model sage --optimizer sgd --momentum 0.9 --global-batch-size 96 --shuffle global --epochs $E
run graph "$BIN" --ranks 2 train --data $D --mode graph --model gcnii --layers 8 --hidden 32 --epochs $E
run pipe "$BIN" --ranks 4 train --data $D --mode pipe --model resgcn --layers 8 --hidden 32 --epochs $E
run hybrid "$BIN" --ranks 4 train --data $D --mode hybrid --pipelines 2 --model gcnii --layers 8 --hidden 32 --epochs $E
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run mpi-sage mpirun --oversubscribe -np 2 "$BIN" train --data $D --model sage --epochs $E
run mpi-pipe mpirun --oversubscribe -np 2 "$BIN" train --data $D --mode pipe --model gcnii --layers 4 --hidden 32 --epochs $E
echo "wrote $(ls "$OUT"/*.jsonl | wc -l) configurations to $OUT"
