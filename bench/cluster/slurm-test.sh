#!/usr/bin/env bash
# slurm-test.sh: start a one-node Slurm on this machine and run gnnmpi under
# it, as a cluster user would. Needs root (it installs Debian's slurm-wlm
# and munge when missing, and runs the daemons as root); no systemd: munged,
# slurmctld and slurmd are started by hand with everything under a temp dir,
# and stopped on exit, failure included.
#
#   bench/cluster/slurm-test.sh      (./run.sh test cluster runs it)
#
# Checks: srun -n 4 --mpi=pmix selftest passes on 4 MPI ranks; a 2-rank
# train finishes with a loss; sbatch --wait of bench/sbatch/train.sbatch
# (2 ranks: metrics and checkpoint written) and of scaling.sbatch (np 1, 2,
# 4: a CSV row each) succeeds, and so does the sweep script that
# `bench/scaling.sh --sbatch` writes (a smoke-sized sweep, np 1 and 2);
# srun -n 1 (no --mpi) runs one rank; srun -n 2 without --mpi is refused by
# gnnmpi with the fix named, exit non-zero; with MPICH installed, an MPICH
# build runs selftest under srun --mpi=pmi2 and is refused under pmix
# (every task a world of one); the requeue cycle of train.sbatch (see
# requeue_cycle: the warning signal, scontrol requeue, SIGKILL of the step,
# scancel and resubmission at another rank count). Environment:
# SLURM_TEST_KEEP=1 keeps the temp dir (logs, slurm.conf); SLURM_TEST_PORT
# (default 6817: slurmctld, +1 slurmd); SLURM_TEST_ONLY=requeue runs the
# requeue cycle alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PATH=$PATH:/usr/local/go/bin

fail() {
	echo "slurm-test: FAIL: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || fail "run as root (it starts munged, slurmctld and slurmd)"

missing=()
for p in slurmctld slurmd slurm-client munge; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "slurm-test: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

T=$(mktemp -d /tmp/gnnmpi-slurm.XXXXXX)
chmod 755 "$T"
PIDS=()
cleanup() {
	local rc=$?
	set +e
	if [ -f "$T/slurm.conf" ]; then
		SLURM_CONF=$T/slurm.conf timeout 20 scontrol shutdown >/dev/null 2>&1
	fi
	for pid in "${PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
	done
	if [ -n "${MUNGED:-}" ]; then kill "$MUNGED" 2>/dev/null && wait "$MUNGED" 2>/dev/null; fi
	if [ $rc -ne 0 ]; then
		for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
	fi
	if [ "${SLURM_TEST_KEEP:-}" = 1 ]; then echo "slurm-test: kept $T" >&2; else rm -rf "$T"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== build" >&2
go build -o "$T/gnnmpi" .

echo "== munged" >&2
mkdir -p "$T/munge"
chmod 711 "$T/munge" # munged wants its socket directory searchable by all
dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$T/munge/munge.key"
SOCK=$T/munge/munge.socket
# In the foreground, as this script's child: a daemon's parent would be
# PID 1, which need not reap it.
munged --foreground --force --socket="$SOCK" --key-file="$T/munge/munge.key" --log-file="$T/munged.log" \
	--pid-file="$T/munged.pid" --seed-file="$T/munge/seed" >"$T/munged.out" 2>&1 &
MUNGED=$!
for _ in $(seq 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
munge -S "$SOCK" -n | unmunge -S "$SOCK" >/dev/null || fail "munge round trip"

echo "== slurmctld, slurmd" >&2
H=$(hostname -s)
PORT=${SLURM_TEST_PORT:-6817}
mkdir -p "$T/state" "$T/spool"
cat >"$T/slurm.conf" <<CONF
ClusterName=gnnmpi
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SOCK,cred_expire=5
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# The requeue cycle: jobs may be requeued; KillWait (SIGTERM to SIGKILL)
# outlasts a Cora checkpoint; a requeued job may start again 5 s later
# (cred_expire, default 120 s) and the scheduler, which starts it once it
# is eligible, runs every second (sched_interval, default 60 s; backfill:
# bf_interval, default 30 s).
JobRequeue=1
KillWait=10
SchedulerParameters=bf_interval=1,sched_interval=1
NodeName=$H NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=debug Nodes=$H Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$T/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >"$T/slurmctld.out" 2>&1 &
PIDS+=($!)
slurmd -D -f "$SLURM_CONF" >"$T/slurmd.out" 2>&1 &
PIDS+=($!)
state=
for _ in $(seq 60); do
	state=$(sinfo -h -N -o %T 2>/dev/null || true)
	[ "$state" = idle ] && break
	sleep 0.5
done
[ "$state" = idle ] || fail "node not idle after 30 s (sinfo: ${state:-no answer})"
srun --mpi=list 2>&1 | grep -q pmix || fail "srun has no pmix plugin: $(srun --mpi=list 2>&1 | tr '\n' ' ')"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
B=$T/gnnmpi
S=(srun --chdir="$ROOT" --time=5)

echo "== srun -n 4 --mpi=pmix gnnmpi selftest" >&2
out=$("${S[@]}" -n 4 --mpi=pmix "$B" --json selftest) || fail "selftest under srun --mpi=pmix: exit $?"
grep -q '"backend": "mpi"' <<<"$out" || fail "selftest did not run on the MPI backend: $out"
grep -q '"ranks": 4' <<<"$out" || fail "selftest did not see 4 ranks: $out"
grep -q '"failed": 0' <<<"$out" || fail "selftest cases failed: $out"

echo "== srun -n 2 --mpi=pmix gnnmpi train" >&2
out=$("${S[@]}" -n 2 --mpi=pmix "$B" train --data data/cora --epochs 2 2>&1) || fail "train under srun: exit $?: $out"
grep -q '^epoch   2  loss [0-9]' <<<"$out" || fail "train printed no loss for epoch 2: $out"
grep -q '2 ranks (mpi' <<<"$out" || fail "train did not run on 2 MPI ranks: $out"

# The requeue cycle (issue 31) with bench/sbatch/train.sbatch as users
# submit it: a 2-rank Cora train with --global-batch-size 2 (70 steps an
# epoch) and a checkpoint after every step, so that a stop lands inside an
# epoch. Checked against an uninterrupted run of the same script (exactly
# equal per-epoch losses and accuracies, best epoch and test accuracy):
#   1. the time-limit warning (USR1 to the batch shell, as --signal=B:USR1
#      sends it: scancel --batch) makes gnnmpi checkpoint and exit 75 and
#      the script requeue its job; then `scontrol requeue` (SIGTERM to the
#      job, Slurm requeues) stops it again; each start resumes mid-epoch;
#   2. SIGKILL of the srun step (no checkpoint written at the kill): the
#      job fails; requeued, it resumes from the last completed checkpoint;
#   3. scancel (SIGTERM, exit 75, not requeued: a cancel stays one), then
#      the same OUT resubmitted at 1 rank: it resumes at the other rank
#      count with the losses within round-off (relative 1e-5).
requeue_cycle() {
	# --shuffle global with --global-batch-size: the elastic schedule, the
	# same global minibatches, samples and dropout masks at any rank count,
	# so the losses agree to round-off at another rank count.
	local epochs=5 args="--model sage --global-batch-size 2 --shuffle global --seed 3"
	cat >"$T/curve.py" <<'PY'
import json, sys
def curve(path):
    epochs, final, resumed = {}, None, []
    for line in open(path):
        r = json.loads(line)
        if r.get("final"):
            final = r
        elif "epoch" in r:
            epochs[r["epoch"]] = r  # a resumed epoch's record replaces none: it covers the whole epoch
            if r.get("from_step"):
                resumed.append("epoch %d step %d" % (r["epoch"], r["from_step"]))
    return epochs, final, resumed
mode, ref, got = sys.argv[1:4]
(re, rf, _), (ge, gf, resumed) = curve(ref), curve(got)
bad = []
if sorted(re) != sorted(ge):
    bad.append("epochs %s, want %s" % (sorted(ge), sorted(re)))
keys = ["loss", "train_acc", "val_acc", "val_loss", "test_acc"] if mode == "exact" else ["loss"]
for e in sorted(set(re) & set(ge)):
    for k in keys:
        a, b = re[e].get(k), ge[e].get(k)
        ok = a == b if mode == "exact" else abs(a - b) <= 1e-5 * abs(a)
        if not ok:
            bad.append("epoch %d %s %r, uninterrupted %r" % (e, k, b, a))
if mode == "exact":
    if gf is None or rf is None:
        bad.append("no final record")
    else:
        for k in ["best_epoch", "best_val_acc", "test_acc"]:
            if rf.get(k) != gf.get(k):
                bad.append("final %s %r, uninterrupted %r" % (k, gf.get(k), rf.get(k)))
if bad:
    print("; ".join(bad))
    sys.exit(1)
print("resumed at: " + (", ".join(resumed) or "epoch boundaries only"))
PY
	submit() { # submit NAME NTASKS: the job id
		sbatch --parsable --chdir="$ROOT" --nodes=1 --cpus-per-task=1 --time=5 --ntasks="$2" --output="$T/$1.out" \
			--export="ALL,GNNMPI_BIN=$B,EPOCHS=$epochs,CHECKPOINT_EVERY=1steps,ARGS=$args,OUT=$T/$1" \
			bench/sbatch/train.sbatch
	}
	state() { scontrol -o show job "$1" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
	ended() { # ended ID: waits (90 s at most) until the job has ended, prints its state
		local s=
		for _ in $(seq 180); do
			s=$(state "$1")
			case $s in PENDING | RUNNING | REQUEUED | REQUEUE_FED | REQUEUE_HOLD | COMPLETING | CONFIGURING | RESIZING | SUSPENDED) ;;
			*) echo "$s"; return ;;
			esac
			sleep 0.5
		done
		echo "still $s after 90 s"
	}
	reached() { # reached NAME EPOCH: waits (60 s at most) for NAME's record of EPOCH
		for _ in $(seq 120); do
			grep -q "^{\"epoch\":$2," "$T/$1/metrics.jsonl" 2>/dev/null && return 0
			sleep 0.5
		done
		fail "$1: no record of epoch $2 after 60 s: $(tail -20 "$T/$1.out" 2>/dev/null)"
	}
	same() { # same MODE NAME: NAME's curve against the uninterrupted run's
		local out
		out=$(python3 "$T/curve.py" "$1" "$T/ref/metrics.jsonl" "$T/$2/metrics.jsonl") ||
			fail "$2: not the uninterrupted run's curve: $out; log: $(tail -30 "$T/$2.out")"
		echo "   $2: $1 match, $out" >&2
	}
	local ref rq kj el s
	echo "== requeue cycle: train.sbatch, 2 ranks, an uninterrupted run and interrupted ones" >&2
	ref=$(submit ref 2) && rq=$(submit requeue 2) || fail "sbatch"

	# 1. The warning signal, then scontrol requeue.
	reached requeue 1
	scancel --batch --signal=USR1 "$rq" || fail "scancel --batch --signal=USR1"
	reached requeue 3
	grep -q 'requeueing job' "$T/requeue.out" || fail "USR1 did not requeue the job: $(cat "$T/requeue.out")"
	# srun passed USR1 on to both tasks (each rank reports its signal).
	[ "$(grep -c '^gnnmpi: rank [01]: user defined signal 1: stopping' "$T/requeue.out")" = 2 ] ||
		fail "USR1 did not reach both ranks: $(cat "$T/requeue.out")"
	scontrol requeue "$rq" || fail "scontrol requeue $rq"
	s=$(ended "$rq")
	[ "$s" = COMPLETED ] || fail "requeued job: $s: $(cat "$T/requeue.out")"
	[ "$(grep -c 'exit status 75 (stopped on request)' "$T/requeue.out")" -ge 2 ] ||
		fail "the requeued job did not stop with 75 twice: $(cat "$T/requeue.out")"
	[ "$(grep -c 'resuming from' "$T/requeue.out")" = 2 ] || fail "the job did not resume twice: $(cat "$T/requeue.out")"
	s=$(ended "$ref")
	[ "$s" = COMPLETED ] || fail "uninterrupted run: $s: $(cat "$T/ref.out")"
	same exact requeue
	grep -q 'from_step' "$T/requeue/metrics.jsonl" || fail "no start resumed inside an epoch"

	# 2. SIGKILL of the step: the job fails; requeued, it resumes.
	kj=$(submit kill 2) || fail "sbatch"
	reached kill 1
	scancel --signal=KILL "$kj.0" || fail "scancel --signal=KILL $kj.0"
	s=$(ended "$kj")
	[ "$s" = FAILED ] || fail "job whose step was killed: $s, want FAILED: $(cat "$T/kill.out")"
	scontrol requeue "$kj" || fail "scontrol requeue $kj (failed job)"
	s=$(ended "$kj")
	[ "$s" = COMPLETED ] || fail "requeued killed job: $s: $(cat "$T/kill.out")"
	grep -q 'resuming from' "$T/kill.out" || fail "the killed job did not resume: $(cat "$T/kill.out")"
	same exact kill

	# 3. scancel: a checkpoint and 75, not requeued; resubmitted at 1 rank.
	el=$(submit elastic 2) || fail "sbatch"
	reached elastic 1
	scancel "$el" || fail "scancel $el"
	s=$(ended "$el")
	[ "$s" = CANCELLED ] || fail "cancelled job: $s, want CANCELLED (not requeued): $(cat "$T/elastic.out")"
	grep -q 'exit status 75 (stopped on request)' "$T/elastic.out" || fail "scancel: no stop with 75: $(cat "$T/elastic.out")"
	el=$(submit elastic 1) || fail "sbatch"
	s=$(ended "$el")
	[ "$s" = COMPLETED ] || fail "resubmitted at 1 rank: $s: $(cat "$T/elastic.out")"
	same close elastic
}

if [ "${SLURM_TEST_ONLY:-}" != requeue ]; then
# The shipped batch scripts, shrunk to this node (options on sbatch's
# command line override their #SBATCH lines).
SB=(sbatch --wait --chdir="$ROOT" --nodes=1 --cpus-per-task=1 --time=5)
echo "== sbatch --wait bench/sbatch/train.sbatch" >&2
"${SB[@]}" --ntasks=2 --output="$T/train.out" --export="ALL,GNNMPI_BIN=$B,EPOCHS=2,OUT=$T/train" \
	bench/sbatch/train.sbatch >/dev/null || fail "train.sbatch: exit $?: $(cat "$T/train.out" 2>/dev/null)"
grep -q '"final":true' "$T/train/metrics.jsonl" || fail "train.sbatch wrote no final metrics: $(cat "$T/train.out")"
grep -q '"ranks":2' "$T/train/metrics.jsonl" || fail "train.sbatch did not run 2 ranks: $(cat "$T/train.out")"
[ -n "$(ls -A "$T/train/checkpoint" 2>/dev/null)" ] || fail "train.sbatch wrote no checkpoint"

echo "== sbatch --wait bench/sbatch/scaling.sbatch (np 1 2 4)" >&2
"${SB[@]}" --ntasks=4 --output="$T/scaling.out" --export="ALL,GNNMPI_BIN=$B,EPOCHS=1,NPS=1 2 4,OUT=$T/scaling" \
	bench/sbatch/scaling.sbatch >/dev/null || fail "scaling.sbatch: exit $?: $(cat "$T/scaling.out" 2>/dev/null)"
rows=$(grep -cE '^[124],[0-9.eE+-]+,[0-9.eE+-]+,[0-9.]+,[0-9.]+$' "$T/scaling/scaling.csv" || true)
[ "$rows" = 3 ] || fail "scaling.csv: $(cat "$T/scaling/scaling.csv" 2>/dev/null) $(cat "$T/scaling.out")"

echo "== sbatch --wait of bench/scaling.sh --sbatch (a small sweep over srun)" >&2
bench/scaling.sh --sbatch "$T/sweep.sbatch" 1 2 2>/dev/null || fail "scaling.sh --sbatch"
"${SB[@]}" --ntasks=2 --output="$T/sweep.out" \
	--export="ALL,GNNMPI_BIN=$B,SMOKE=1,NPS=1 2,STUDIES=strong,WORKLOADS=train-none spgemm,CALIBRATE=0,OUT=$T/sweep" \
	"$T/sweep.sbatch" >/dev/null || fail "the generated sweep: exit $?: $(tail -20 "$T/sweep.out" 2>/dev/null)"
rows=$(grep -c ',cluster,[12],.*,0,' "$T/sweep/scaling.csv" || true)
[ "$rows" = 4 ] || fail "the generated sweep's CSV has $rows successful cluster runs, want 4: $(cat "$T/sweep/scaling.csv")"
[ -s "$T/sweep/scaling.md" ] && [ -s "$T/sweep/scaling.png" ] || fail "the generated sweep wrote no report or chart"

echo "== srun -n 1 (no --mpi): one rank" >&2
out=$("${S[@]}" -n 1 "$B" --json selftest) || fail "single-task srun: exit $?"
grep -q '"ranks": 1' <<<"$out" || fail "single-task srun: $out"

echo "== srun -n 2 without --mpi: refused" >&2
if out=$("${S[@]}" -n 2 "$B" selftest 2>&1); then
	fail "srun -n 2 without --mpi ran: $out"
fi
[ "$(grep -c 'srun --mpi=pmix' <<<"$out")" = 2 ] || fail "refusal does not name the fix on both tasks: $out"

# MPICH (when installed, as in CI): srun's pmi2 plugin starts it; under
# pmix each task would be a 1-rank world, which gnnmpi refuses after
# MPI_Init on every task.
if pkg-config --exists mpich 2>/dev/null; then
	(cd "$ROOT" && go build -tags mpich -o "$T/gnnmpi-mpich" .) || fail "MPICH build"
	echo "== MPICH build: srun -n 2 --mpi=pmi2 gnnmpi selftest" >&2
	out=$("${S[@]}" -n 2 --mpi=pmi2 "$T/gnnmpi-mpich" --json selftest) || fail "MPICH selftest under srun --mpi=pmi2: exit $?"
	grep -q '"ranks": 2' <<<"$out" || fail "MPICH selftest did not see 2 ranks: $out"
	grep -q '"failed": 0' <<<"$out" || fail "MPICH selftest cases failed: $out"
	echo "== MPICH build: srun -n 2 --mpi=pmix: refused" >&2
	if out=$("${S[@]}" -n 2 --mpi=pmix "$T/gnnmpi-mpich" selftest 2>&1); then
		fail "MPICH build under srun --mpi=pmix ran: $out"
	fi
	[ "$(grep -c 'srun --mpi=pmi2' <<<"$out")" = 2 ] || fail "MPICH refusal does not name pmi2 on both tasks: $out"
else
	echo "== MPICH not installed: its srun checks skipped" >&2
fi
fi # SLURM_TEST_ONLY

requeue_cycle

echo "slurm-test: ok" >&2
