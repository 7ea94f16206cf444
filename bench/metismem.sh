#!/usr/bin/env bash
# bench/metismem.sh BIN OUTCSV GRAPH...: METIS's memory on rank 0 against
# the memory check's estimate of it (graph.MetisBytes). For each graph
# (a .gnn file or an OGB directory), `gnnmpi partition --parts 2` runs
# with --method metis under GNU time: its peak RSS against the estimated
# peak of the log's METIS line (the resident memory when METIS starts
# plus the estimated need, which that line names too); and with --method
# block, whose peak is the load's alone. One row per graph.
#
#   bench/metismem.sh ./gnnmpi bench/results/metis-memory.csv bench/out/evalsampled/papers1000000 …
set -euo pipefail
bin=$1 csv=$2
shift 2
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
commit=$(git rev-parse --short HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || commit+=-dirty
echo "graph,vertices,edges,peak_block_bytes,peak_metis_bytes,estimated_peak_bytes,estimate_over_peak,estimated_need_bytes,split,loadavg_start,commit" >"$csv"
for g in "$@"; do
	load=$(cut -d' ' -f1 /proc/loadavg)
	peak() { # peak METHOD: the run's peak RSS in bytes; its stderr in $work/METHOD.err
		/usr/bin/time -f %M -o "$work/$1.rss" "$bin" partition --data "$g" --parts 2 --method "$1" --book "$work/$1.book" \
			>"$work/$1.out" 2>"$work/$1.err"
		echo $(($(tail -1 "$work/$1.rss") * 1024))
	}
	pb=$(peak block)
	pm=$(peak metis)
	need=$(sed -n 's/.*METIS needs about [0-9.]* GiB (\([0-9]*\) bytes) more.*/\1/p' "$work/metis.err")
	est=$(sed -n 's/.*METIS needs .*(estimated peak \([0-9]*\) bytes).*/\1/p' "$work/metis.err")
	read -r n m < <("$bin" info --data "$g" 2>/dev/null | awk '/^nodes/ {n=$2} /^edges/ {m=$2} END {print n, m}')
	split=$(sed -n 's/.*balance (max\/mean) of split \([^:]*\):.*/\1/p' "$work/metis.out")
	python3 - "$g" "$n" "$m" "$pb" "$pm" "$est" "$need" "${split:-none}" "$load" "$commit" >>"$csv" <<'PY'
import sys
g, n, m, pb, pm, est, need, split, load, commit = sys.argv[1:]
print(",".join(str(x) for x in [g.rstrip("/").split("/")[-1], n, m, pb, pm, est, round(int(est) / int(pm), 3), need, split, load, commit]))
PY
	tail -n 1 "$csv" >&2
done
