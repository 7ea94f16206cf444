#!/usr/bin/env bash
# netns-test.sh: gnnmpi across three "hosts" on this machine, Open MPI over
# TCP, built with bench/cluster/netns-lib.sh (see there for the network):
# network namespaces gnnmpi-h1..h3, each command in its own UTS namespace
# (hostnames gnnmpi-h1..h3, so Open MPI's session directories differ), veth
# pairs (gnn0 inside, gnnmpi-p1..p3 outside) on a bridge in a third kind of
# namespace (gnnmpi-sw), addresses 10.77.0.1-3/24 inside the namespaces only.
# mpirun runs in gnnmpi-h1 and starts the daemons through a plm_rsh_agent
# that enters the host's namespace.
#
#   bench/cluster/netns-test.sh    (./run.sh test runs it as root)
#
# Checks: mpirun -np 3 hostname names the three hosts; selftest at np 2, 3
# (one rank per host) and 4; train --epochs 2 at np 2 gives the losses of
# the same run in shared memory (relative 1e-4) and the veth byte counters
# grew by at least the bytes the run reports sending; train --mode pipe
# (gcnii, 6 layers, 3 chunks) at np 3, one stage per host, gives the losses
# of the same run in shared memory, and host 3's veth moved at least the
# bytes its rank sends and receives point to point; a TCP stream from host
# 1 to host 2 under netns_rate 100mbit runs at 0.5-1.1x of 12.5 MB/s, at
# least 3x faster without it, and "off" removes the qdiscs; a cut link (the switch
# port of host 2 set down while train runs with --comm-timeout 10s) ends
# mpirun non-zero within 30 s with no gnnmpi or orted left in any
# namespace. Everything is torn down on exit. Needs root (CAP_NET_ADMIN,
# CAP_SYS_ADMIN); otherwise it says so and exits 0. It installs iproute2 and
# jq when missing. NETNS_TEST_KEEP=1 keeps the temp dir (logs).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PATH=$PATH:/usr/local/go/bin
# shellcheck source=bench/cluster/netns-lib.sh
. bench/cluster/netns-lib.sh

NS1=gnnmpi-h1 NS2=gnnmpi-h2 NS3=gnnmpi-h3 SW=gnnmpi-sw
FAILED=()

fail() {
	echo "netns-test: FAIL: $*" >&2
	FAILED+=("$*")
}

skip() {
	echo "netns-test: skipped: $*" >&2
	exit 0
}

[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
missing=()
command -v ip >/dev/null || missing+=(iproute2)
command -v jq >/dev/null || missing+=(jq)
if [ ${#missing[@]} -gt 0 ] && command -v apt-get >/dev/null; then
	echo "netns-test: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	if apt-get update -qq >/dev/null; then
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || true
	fi
fi
command -v jq >/dev/null || skip "needs jq"
command -v python3 >/dev/null || skip "needs python3 (the throughput check)"
why=$(netns_require 2>&1) || skip "${why#netns: }"

T=$(mktemp -d /tmp/gnnmpi-netns.XXXXXX)
export NETNS_DIR=$T

cleanup() {
	local rc=$?
	set +e
	netns_down
	if [ $rc -ne 0 ]; then
		for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }; done
	fi
	if [ "${NETNS_TEST_KEEP:-}" = 1 ]; then echo "netns-test: kept $T" >&2; else rm -rf "$T"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! netns_up 3; then
	fail "netns_up 3"
	exit 1
fi

# Its own Open MPI build (./gnnmpi may be an MPICH one).
go build -o "$T/gnnmpi" .
BIN=$T/gnnmpi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NETNS_TIMEOUT=120

# hosts NP ARGS...: gnnmpi ARGS on NP ranks over the hosts (netns_mpirun:
# from inside host 1, killed after $NETNS_TIMEOUT s).
hosts() {
	local np=$1
	shift
	netns_mpirun "$np" "$BIN" "$@"
}

# shm NP ARGS...: gnnmpi ARGS on NP ranks in shared memory.
shm() {
	local np=$1
	shift
	timeout 120 mpirun -np "$np" --oversubscribe --mca mpi_yield_when_idle 1 "$BIN" "$@"
}

# samelosses NAME A.jsonl B.jsonl: the epochs' losses of two runs agree
# (relative 1e-4).
samelosses() {
	local a b
	a=$(jq -c 'select(.epoch != null) | .loss' "$2" | paste -sd' ')
	b=$(jq -c 'select(.epoch != null) | .loss' "$3" | paste -sd' ')
	echo "   losses: shared memory $a; namespace hosts $b" >&2
	if ! awk -v a="$a" -v b="$b" 'BEGIN {
		n = split(a, x, " "); m = split(b, y, " ")
		if (n != m || n == 0) exit 1
		for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; if (d > 1e-4 * (x[i] < 0 ? -x[i] : x[i])) exit 1 }
	}'; then
		fail "$1: losses differ: shared memory [$a], namespace hosts [$b]"
	fi
}

# 0. One rank per host, each with its own hostname.
names=$(netns_mpirun 3 hostname 2>"$T/hostname.log" | sort | paste -sd' ' || true)
echo "== hostnames of 3 ranks: $names" >&2
[ "$names" = "gnnmpi-h1 gnnmpi-h2 gnnmpi-h3" ] || fail "mpirun -np 3 hostname gave [$names], want [gnnmpi-h1 gnnmpi-h2 gnnmpi-h3] (log: $T/hostname.log)"

# 1. selftest across the hosts.
for np in 2 3 4; do
	echo "== selftest, np $np over 3 namespace hosts" >&2
	if ! hosts "$np" selftest >"$T/selftest$np.log" 2>&1; then
		fail "selftest np $np over the namespace hosts (log: $T/selftest$np.log)"
		tail -20 "$T/selftest$np.log" >&2
	fi
done

# 2. train: the same losses as shared memory, traffic on the veth.
echo "== train np 2 over the hosts against shared memory" >&2
args=(train --data "$ROOT/data/cora" --epochs 2 --seed 3)
tx0=$(netns_counter 1 tx_bytes) rx0=$(netns_counter 1 rx_bytes)
if ! hosts 2 "${args[@]}" --metrics "$T/hosts.jsonl" >"$T/train-hosts.log" 2>&1; then
	fail "train over the namespace hosts (log: $T/train-hosts.log)"
	tail -20 "$T/train-hosts.log" >&2
fi
tx1=$(netns_counter 1 tx_bytes) rx1=$(netns_counter 1 rx_bytes)
if ! shm 2 "${args[@]}" --metrics "$T/shm.jsonl" >"$T/train-shm.log" 2>&1; then
	fail "train in shared memory (log: $T/train-shm.log)"
fi
if [ -s "$T/hosts.jsonl" ] && [ -s "$T/shm.jsonl" ]; then
	samelosses train "$T/shm.jsonl" "$T/hosts.jsonl"
	sent=$(jq -s '[.[-1].comm.per_rank[] | .. | .sent_bytes? // empty] | add' "$T/hosts.jsonl")
	veth=$((tx1 - tx0 + rx1 - rx0))
	echo "   bytes: run reports $sent sent; host 1's gnn0 moved $veth (tx $((tx1 - tx0)), rx $((rx1 - rx0)))" >&2
	if [ -z "$sent" ] || [ "$sent" = null ] || [ "$sent" -le 0 ] || [ "$veth" -lt "$sent" ]; then
		fail "veth counters ($veth bytes) below the bytes the run sent ($sent)"
	fi
else
	fail "train: no metrics to compare"
fi

# 3. pipe: one stage per host; activations and their gradients cross the
# links with Send/Recv.
echo "== train --mode pipe np 3 over the hosts against shared memory" >&2
args=(train --mode pipe --data "$ROOT/data/cora" --model gcnii --layers 6 --chunks 3 --epochs 2 --seed 3)
tx0=$(netns_counter 3 tx_bytes) rx0=$(netns_counter 3 rx_bytes)
if ! hosts 3 "${args[@]}" --metrics "$T/pipe-hosts.jsonl" >"$T/pipe-hosts.log" 2>&1; then
	fail "pipe over the namespace hosts (log: $T/pipe-hosts.log)"
	tail -20 "$T/pipe-hosts.log" >&2
fi
tx1=$(netns_counter 3 tx_bytes) rx1=$(netns_counter 3 rx_bytes)
if ! shm 3 "${args[@]}" --metrics "$T/pipe-shm.jsonl" >"$T/pipe-shm.log" 2>&1; then
	fail "pipe in shared memory (log: $T/pipe-shm.log)"
fi
if [ -s "$T/pipe-hosts.jsonl" ] && [ -s "$T/pipe-shm.jsonl" ]; then
	samelosses pipe "$T/pipe-shm.jsonl" "$T/pipe-hosts.jsonl"
	# Rank 2 (host 3, the last stage) sends activation gradients and receives
	# activations with Send/Recv, counted exactly (collectives count the
	# payload, not what their algorithm moves).
	sent=$(jq -s '[.[-1].comm.per_rank[2][] | .send?.sent_bytes // empty] | add' "$T/pipe-hosts.jsonl")
	recv=$(jq -s '[.[-1].comm.per_rank[2][] | .recv?.recv_bytes // empty] | add' "$T/pipe-hosts.jsonl")
	echo "   bytes: rank 2 (host 3) reports Send $sent, Recv $recv; host 3's gnn0 tx $((tx1 - tx0)), rx $((rx1 - rx0))" >&2
	if [ -z "$sent" ] || [ "$sent" = null ] || [ "$sent" -le 0 ] || [ $((tx1 - tx0)) -lt "$sent" ] ||
		[ -z "$recv" ] || [ "$recv" = null ] || [ "$recv" -le 0 ] || [ $((rx1 - rx0)) -lt "$recv" ]; then
		fail "pipe: host 3's veth (tx $((tx1 - tx0)), rx $((rx1 - rx0))) below rank 2's Send $sent, Recv $recv"
	fi
else
	fail "pipe: no metrics to compare"
fi

# 4. A rate limit: tbf at 100 Mbit/s on every link, both directions.
echo "== rate limit: a TCP stream from host 1 to host 2 with and without tbf 100mbit" >&2
limit=12500000 # 100 Mbit/s in bytes/s
if fast=$(netns_throughput 1 2 50000000) && netns_rate 100mbit && slow=$(netns_throughput 1 2 $((limit + limit / 2))); then
	echo "   unlimited $fast B/s; at 100mbit $slow B/s (limit $limit)" >&2
	awk -v s="$slow" -v l="$limit" 'BEGIN { exit !(s >= 0.5 * l && s <= 1.1 * l) }' ||
		fail "at 100mbit the stream ran at $slow B/s, not within 0.5-1.1x of $limit"
	[ "$fast" -ge $((3 * slow)) ] || fail "without the limit the stream ran at $fast B/s, not 3x the limited $slow B/s"
else
	fail "rate limit: a throughput measurement or netns_rate failed"
fi
netns_rate off || fail "netns_rate off"
for i in 1 2 3; do
	if tc -n gnnmpi-h$i qdisc show dev gnn0 root | grep -q tbf || tc -n $SW qdisc show dev gnnmpi-p$i root | grep -q tbf; then
		fail "a tbf qdisc is left on host $i's link after netns_rate off"
	fi
done

# 5. A cut link: host 2's switch port goes down while train communicates.
echo "== cut link: host 2's port down during train --comm-timeout 10s" >&2
hosts 2 --comm-timeout 10s train --data "$ROOT/data/cora" --epochs 1000000 --seed 3 >"$T/cut.log" 2>&1 &
job=$!
sleep 4
if ! kill -0 $job 2>/dev/null || ! grep -q "^epoch" "$T/cut.log"; then
	fail "the long train run is not training when the link would be cut (log: $T/cut.log)"
	tail -20 "$T/cut.log" >&2
else
	[ -n "$(netns_pids $NS2)" ] || fail "no gnnmpi rank runs in $NS2 before the cut"
	ip -n $SW link set gnnmpi-p2 down
	cut=$(date +%s.%N)
	for _ in $(seq 300); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
	end=$(date +%s.%N)
	took=$(awk -v a="$cut" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
	if kill -0 $job 2>/dev/null; then
		fail "mpirun still running 30 s after the cut"
		kill -9 $job 2>/dev/null || true
		wait $job 2>/dev/null || true
	else
		rc=0
		wait $job || rc=$?
		echo "   mpirun exited $rc ${took} s after the cut" >&2
		[ $rc -ne 0 ] || fail "mpirun exited 0 after a cut link"
		grep -iE "comm-timeout|timed out|blocked|lost|abort" "$T/cut.log" | head -5 | sed 's/^/   | /' >&2 || true
	fi
	# Every gnnmpi rank and orted must be gone within 30 s of the cut
	# (host 2's daemon notices the lost link by its own keepalive).
	while [ -n "$(netns_pids $NS1)$(netns_pids $NS2)$(netns_pids $NS3)" ] &&
		awk -v a="$cut" -v b="$(date +%s.%N)" 'BEGIN { exit !(b - a < 30) }'; do
		sleep 0.2
	done
	gone=$(awk -v a="$cut" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	clean=yes
	for ns in $NS1 $NS2 $NS3; do
		left=$(netns_pids "$ns")
		if [ -n "$left" ]; then
			clean=no
			mapfile -t pids <<<"$left"
			fail "left running in $ns 30 s after the cut: $(ps -o pid=,comm= -p "$(paste -sd, <<<"$left")" | paste -sd' ')"
			kill -9 "${pids[@]}" 2>/dev/null || true
		fi
	done
	[ $clean = no ] || echo "   no gnnmpi or orted left in any namespace ${gone} s after the cut" >&2
fi

if [ ${#FAILED[@]} -gt 0 ]; then
	echo "netns-test: ${#FAILED[@]} check(s) failed:" >&2
	printf '  - %s\n' "${FAILED[@]}" >&2
	exit 1
fi
echo "netns-test: ok" >&2
