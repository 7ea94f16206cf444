#!/usr/bin/env bash
# bench/spgemm.sh: distributed SpGEMM against the local kernel and the
# external baselines, on Graph500 R-MAT graphs (edge factor 16, symmetric,
# pattern, plus-times):
#
#   AA  C = A·A
#   QA  C = (Q·A)·A with Q selecting ROWS random rows of A (the shape of a
#       sampling step: a frontier's neighbourhoods times A; MulRowsSR
#       locally, the row subset distributed otherwise)
#
# for gnnmpi local at 1 and 2 threads, and 1d, 1.5d and 2d at np = 1, 2, 4
# and 8 (mpirun --oversubscribe: the machine may have fewer cores), plus
# bench/spgemm's GraphBLAS (1, 2 threads), scipy and CombBLAS (np 1, 4) for
# AA.
#
#   bench/spgemm.sh [SCALE...]      default "14 15 16"; 18 works but is slow
#
# Environment: NPS (default "1 2 4 8"), NP8_MAX_SCALE (largest scale run at
# np 8, default 15), ALGOS (default "1d 1.5d 1.5d-c2 2d"; 1.5d takes the
# c that gnnmpi predicts to send least, 1.5d-cN takes c = N where N divides
# np), CASES (default "AA QA"),
# ROWS (QA rows, default 4096), REPS (default 3), BASELINES (default 1; 0
# skips them), CB_MAX_SCALE (largest scale for CombBLAS, default 14: one
# product takes minutes at 16), TIMEOUT (seconds per run, default 900),
# MEM_GB (address-space limit per run, split over the ranks, default 64; Go reserves more address space than it touches),
# MPIRUN_ARGS (extra mpirun flags for gnnmpi, e.g. "--bind-to none": Open MPI
# binds each of up to 2 ranks to one core, which the Go runtime's GC then
# shares with the product).
# Writes bench/out/spgemm.csv (one row per run), bench/out/spgemm.png and
# the raw JSON under bench/out/spgemm/.
set -uo pipefail
cd "$(dirname "$0")/.."
SCALES=("$@")
[[ ${#SCALES[@]} == 0 ]] && SCALES=(14 15 16)
NPS=${NPS:-1 2 4 8}
NP8_MAX_SCALE=${NP8_MAX_SCALE:-15}
ALGOS=${ALGOS:-1d 1.5d 1.5d-c2 2d}
CASES=${CASES:-AA QA}
ROWS=${ROWS:-4096}
REPS=${REPS:-3}
BASELINES=${BASELINES:-1}
CB_MAX_SCALE=${CB_MAX_SCALE:-14}
TIMEOUT=${TIMEOUT:-900}
MEM_GB=${MEM_GB:-64}
read -r -a MPIRUN_EXTRA <<< "${MPIRUN_ARGS:-}"
OUT=bench/out
RAW=$OUT/spgemm
mkdir -p "$RAW"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
echo 1000 > /proc/self/oom_score_adj 2>/dev/null || true
# A binary of our own: ./gnnmpi may be in use by other runs.
G=$RAW/gnnmpi
go build -o "$G" . || exit 1
export GNNMPI=$G # for gen_rmat_mtx.sh
if [[ $BASELINES == 1 ]]; then
	[[ -x bench/spgemm/bin/graphblas && -x bench/spgemm/bin/combblas ]] || bench/spgemm/build.sh || BASELINES=0
fi
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
CSV=$OUT/spgemm.csv
echo "input,scale,case,rows,tool,algo,np,threads,grid,seconds,min_seconds,mflops,flops,nnz_c,sum_c,max_sent_bytes,total_sent_bytes,loadavg,commit,error" > "$CSV"

# record NAME SCALE CASE TOOL ALGO NP THREADS CMD...: runs CMD (which prints
# one JSON object, gnnmpi's or a baseline's line), keeps it under $RAW and
# appends a CSV row.
record() {
	local name=$1 scale=$2 case=$3 tool=$4 algo=$5 np=$6 threads=$7
	shift 7
	local load; load=$(cut -d' ' -f1 /proc/loadavg)
	local mem=$(((MEM_GB << 20) / np))
	echo "== $name (load $load)" >&2
	timeout "$TIMEOUT" bash -c "ulimit -v $mem; exec \"\$@\"" _ "$@" > "$RAW/$name.json" 2> "$RAW/$name.err"
	local rc=$?
	python3 - "$RAW/$name.json" "$rc" "$scale" "$case" "$tool" "$algo" "$np" "$threads" "$load" "$commit" "$ROWS" >> "$CSV" <<'PY'
import json, sys
path, rc, scale, case, tool, algo, np_, threads, load, commit, rows = sys.argv[1:]
row = dict(input=f"rmat{scale}", scale=scale, case=case, rows=rows if case == "QA" else "", tool=tool, algo=algo,
           np=np_, threads=threads, grid="", seconds="", min_seconds="", mflops="", flops="", nnz_c="", sum_c="",
           max_sent_bytes="", total_sent_bytes="", loadavg=load, commit=commit, error="")
try:
    text = open(path).read()
    if tool == "gnnmpi":
        s = json.loads(text)["spgemm"]
        row.update(seconds=s["seconds"], min_seconds=s["min_seconds"], mflops=round(s["mflops"], 1), flops=s["flops"],
                   nnz_c=s["nnz_c"], sum_c=s["sum_c"], max_sent_bytes=s["max_sent_bytes"], total_sent_bytes=s["total_sent_bytes"],
                   grid="x".join(map(str, s.get("grid") or [])))
    else:
        s = json.loads(text.strip().splitlines()[-1])
        row.update(seconds=s["seconds"], min_seconds=s.get("min_seconds", ""), nnz_c=s["nnz_c"], sum_c=s["sum_c"],
                   flops=s["sum_c"], mflops=round(s["sum_c"] / s["seconds"] / 1e6, 1))
    if rc != "0":
        row["error"] = f"exit {rc}"
except Exception as e:  # a failed or killed run
    row["error"] = f"exit {rc}: {type(e).__name__}"
print(",".join(str(row[k]) for k in ["input", "scale", "case", "rows", "tool", "algo", "np", "threads", "grid", "seconds",
      "min_seconds", "mflops", "flops", "nnz_c", "sum_c", "max_sent_bytes", "total_sent_bytes", "loadavg", "commit", "error"]))
PY
}

for s in "${SCALES[@]}"; do
	f=/tmp/rmat$s.mtx
	[[ -f $f ]] || bench/spgemm/gen_rmat_mtx.sh "$s" /tmp >&2 || exit 1
	for case in $CASES; do
		extra=(--a "$f" --square --reps "$REPS" --json)
		[[ $case == QA ]] && extra+=(--rows "$ROWS")
		for t in 1 2; do
			record "rmat$s-$case-local-t$t" "$s" "$case" gnnmpi local 1 "$t" "$G" spgemm --algo local --threads "$t" "${extra[@]}"
		done
		for np in $NPS; do
			((np == 8 && s > NP8_MAX_SCALE)) && continue
			for algo in $ALGOS; do
				args=(--algo "$algo")
				if [[ $algo == 1.5d-c* ]]; then # 1.5d with a given c
					c=${algo#1.5d-c}
					((np % c == 0)) || continue
					args=(--algo 1.5d --c "$c")
				fi
				record "rmat$s-$case-$algo-np$np" "$s" "$case" gnnmpi "$algo" "$np" 1 \
					mpirun -np "$np" --oversubscribe "${MPIRUN_EXTRA[@]}" "$G" spgemm "${args[@]}" "${extra[@]}"
			done
		done
		[[ $BASELINES == 1 && $case == AA ]] || continue
		for t in 1 2; do
			record "rmat$s-AA-graphblas-t$t" "$s" AA graphblas graphblas 1 "$t" bench/spgemm/bin/graphblas --threads "$t" --reps "$REPS" "$f"
		done
		record "rmat$s-AA-scipy" "$s" AA scipy scipy 1 1 /usr/bin/python3 bench/spgemm/scipy_mm.py --reps "$REPS" "$f"
		if ((s <= CB_MAX_SCALE)); then
			for np in 1 4; do
				record "rmat$s-AA-combblas-np$np" "$s" AA combblas combblas-2d "$np" 1 \
					env OMP_NUM_THREADS=1 mpirun -np "$np" --oversubscribe bench/spgemm/bin/combblas --reps "$REPS" "$f"
			done
		fi
	done
done
go run ./bench/plot spgemm "$CSV" "$OUT/spgemm.png"
echo "wrote $CSV and $OUT/spgemm.png" >&2
