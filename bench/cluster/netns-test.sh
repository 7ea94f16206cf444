#!/usr/bin/env bash
# netns-test.sh: gnnmpi across two "hosts" on this machine, Open MPI over
# TCP. Each host is a network namespace (gnnmpi-h1, gnnmpi-h2) with its own
# UTS namespace (hostnames gnnmpi-h1, gnnmpi-h2, so Open MPI's session
# directories differ); their veth pairs (gnn0 inside, gnnmpi-p1/p2 outside)
# meet on a bridge in a third namespace (gnnmpi-sw), addresses 10.77.0.1 and
# .2/24 inside the namespaces only. mpirun runs in gnnmpi-h1 and starts the
# daemon on 10.77.0.2 through a plm_rsh_agent that enters gnnmpi-h2.
#
#   bench/cluster/netns-test.sh    (./run.sh test runs it as root)
#
# Checks: selftest at np 2 and 4 across the hosts; train --epochs 2 at np 2
# gives the losses of the same run in shared memory (relative 1e-4); the
# veth byte counters grew by at least the bytes the run reports sending; a
# cut link (the switch port of host 2 set down while train runs with
# --comm-timeout 10s) ends mpirun non-zero within 30 s with no gnnmpi or
# orted left in either namespace. Everything is torn down on exit. Needs
# root (CAP_NET_ADMIN, CAP_SYS_ADMIN); otherwise it says so and exits 0. It
# installs iproute2 and jq when missing.
# NETNS_TEST_KEEP=1 keeps the temp dir (logs).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PATH=$PATH:/usr/local/go/bin

NS1=gnnmpi-h1 NS2=gnnmpi-h2 SW=gnnmpi-sw
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
	apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || true
fi
command -v ip >/dev/null && command -v unshare >/dev/null || skip "needs ip (iproute2) and unshare (util-linux)"
command -v jq >/dev/null || skip "needs jq"
command -v mpirun >/dev/null && mpirun --version 2>/dev/null | grep -q "Open MPI" || skip "needs Open MPI's mpirun"
if ! ip netns add gnnmpi-probe 2>/dev/null; then skip "cannot create a network namespace (no CAP_NET_ADMIN?)"; fi
ip netns del gnnmpi-probe
unshare --uts true 2>/dev/null || skip "cannot create a UTS namespace (no CAP_SYS_ADMIN?)"

T=$(mktemp -d /tmp/gnnmpi-netns.XXXXXX)

# nspids NS: the pids of gnnmpi and orted processes in network namespace NS.
nspids() {
	local pid
	for pid in $(ip netns pids "$1" 2>/dev/null); do
		case "$(cat "/proc/$pid/comm" 2>/dev/null)" in gnnmpi | orted) echo "$pid" ;; esac
	done
}

cleanup() {
	local rc=$?
	set +e
	local ns pid
	for ns in $NS1 $NS2 $SW; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
	done
	sleep 0.2
	for ns in $NS1 $NS2 $SW; do ip netns del "$ns" 2>/dev/null; done # deletes veths and bridge
	if [ $rc -ne 0 ]; then
		for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }; done
	fi
	if [ "${NETNS_TEST_KEEP:-}" = 1 ]; then echo "netns-test: kept $T" >&2; else rm -rf "$T"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for ns in $NS1 $NS2 $SW; do
	if ip netns list | grep -qw "$ns"; then
		echo "netns-test: removing a stale namespace $ns" >&2
		for pid in $(ip netns pids "$ns"); do kill -9 "$pid" 2>/dev/null || true; done
		ip netns del "$ns"
	fi
	ip netns add "$ns"
done

# The network: a bridge in $SW, one veth pair per host.
ip -n $SW link add br0 type bridge
ip -n $SW link set br0 up
ip -n $SW link set lo up
for i in 1 2; do
	ns=gnnmpi-h$i
	ip link add gnnmpi-p$i netns $SW type veth peer name gnn0 netns "$ns"
	ip -n $SW link set gnnmpi-p$i master br0 up
	ip -n "$ns" addr add 10.77.0.$i/24 dev gnn0
	ip -n "$ns" link set gnn0 up
	ip -n "$ns" link set lo up
done
# Reachability: a TCP connect to a closed port of host 2 is refused (no ping
# needed) once the new links are up.
reach=no
for _ in $(seq 20); do
	if (ip netns exec $NS1 timeout 2 bash -c 'exec 3<>/dev/tcp/10.77.0.2/9' 2>&1 || true) | grep -q refused; then
		reach=yes
		break
	fi
	sleep 0.25
done
if [ $reach = no ]; then
	fail "10.77.0.2 is not reachable from $NS1"
	exit 1
fi

# The rsh agent: "agent HOST CMD..." runs CMD in HOST's namespaces.
cat >"$T/rsh" <<'EOF'
#!/bin/sh
host=$1
shift
case "$host" in
10.77.0.1) n=1 ;;
10.77.0.2) n=2 ;;
*) echo "netns rsh agent: unknown host $host" >&2; exit 255 ;;
esac
exec ip netns exec gnnmpi-h$n unshare --uts sh -c "hostname gnnmpi-h$n && $*"
EOF
chmod +x "$T/rsh"
printf '10.77.0.1 slots=2\n10.77.0.2 slots=2\n' >"$T/hostfile"

# Its own Open MPI build (./gnnmpi may be an MPICH one).
go build -o "$T/gnnmpi" .
BIN=$T/gnnmpi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# run.sh's keepalive: a host behind a cut link is noticed in 5 + 3 × 2 s.
export OMPI_MCA_oob_tcp_keepalive_time=${OMPI_MCA_oob_tcp_keepalive_time:-5}
export OMPI_MCA_oob_tcp_keepalive_intvl=${OMPI_MCA_oob_tcp_keepalive_intvl:-2}
export OMPI_MCA_oob_tcp_keepalive_probes=${OMPI_MCA_oob_tcp_keepalive_probes:-3}
MCA=(--hostfile "$T/hostfile" --map-by node
	--mca plm_rsh_agent "$T/rsh" --mca plm_rsh_no_tree_spawn 1
	--mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24
	--mca mpi_yield_when_idle 1)

# hostsrun NP CMD...: mpirun NP ranks of CMD over both hosts, from inside
# host 1 (its own hostname), killed after 120 s.
hostsrun() {
	local np=$1
	shift
	ip netns exec $NS1 unshare --uts sh -c 'hostname gnnmpi-h1 && exec "$@"' sh \
		timeout -k 5 120 mpirun -np "$np" "${MCA[@]}" "$@"
}

# hosts NP ARGS...: gnnmpi ARGS on NP ranks over both hosts.
hosts() {
	local np=$1
	shift
	hostsrun "$np" "$BIN" "$@"
}

# counter NAME: host 1's gnn0 byte counter NAME (tx_bytes, rx_bytes).
counter() {
	ip netns exec $NS1 cat /sys/class/net/gnn0/statistics/"$1"
}

# 0. One rank per host, each with its own hostname.
names=$(hostsrun 2 hostname 2>"$T/hostname.log" | sort | paste -sd' ' || true)
echo "== hostnames of 2 ranks: $names" >&2
[ "$names" = "gnnmpi-h1 gnnmpi-h2" ] || fail "mpirun -np 2 hostname gave [$names], want [gnnmpi-h1 gnnmpi-h2] (log: $T/hostname.log)"

# 1. selftest across the hosts.
for np in 2 4; do
	echo "== selftest, np $np over 2 namespace hosts" >&2
	if ! hosts "$np" selftest >"$T/selftest$np.log" 2>&1; then
		fail "selftest np $np over the namespace hosts (log: $T/selftest$np.log)"
		tail -20 "$T/selftest$np.log" >&2
	fi
done

# 2. train: the same losses as shared memory, traffic on the veth.
echo "== train np 2 over the hosts against shared memory" >&2
args=(train --data "$ROOT/data/cora" --epochs 2 --seed 3)
tx0=$(counter tx_bytes) rx0=$(counter rx_bytes)
if ! hosts 2 "${args[@]}" --metrics "$T/hosts.jsonl" >"$T/train-hosts.log" 2>&1; then
	fail "train over the namespace hosts (log: $T/train-hosts.log)"
	tail -20 "$T/train-hosts.log" >&2
fi
tx1=$(counter tx_bytes) rx1=$(counter rx_bytes)
if ! timeout 120 mpirun -np 2 --oversubscribe --mca mpi_yield_when_idle 1 "$BIN" "${args[@]}" --metrics "$T/shm.jsonl" >"$T/train-shm.log" 2>&1; then
	fail "train in shared memory (log: $T/train-shm.log)"
fi
if [ -s "$T/hosts.jsonl" ] && [ -s "$T/shm.jsonl" ]; then
	a=$(jq -c 'select(.epoch != null) | .loss' "$T/shm.jsonl" | paste -sd' ')
	b=$(jq -c 'select(.epoch != null) | .loss' "$T/hosts.jsonl" | paste -sd' ')
	echo "   losses: shared memory $a; namespace hosts $b" >&2
	if ! awk -v a="$a" -v b="$b" 'BEGIN {
		n = split(a, x, " "); m = split(b, y, " ")
		if (n != m || n == 0) exit 1
		for (i = 1; i <= n; i++) { d = x[i] - y[i]; if (d < 0) d = -d; if (d > 1e-4 * (x[i] < 0 ? -x[i] : x[i])) exit 1 }
	}'; then
		fail "losses differ: shared memory [$a], namespace hosts [$b]"
	fi
	sent=$(jq -s '[.[-1].comm.per_rank[] | .. | .sent_bytes? // empty] | add' "$T/hosts.jsonl")
	veth=$((tx1 - tx0 + rx1 - rx0))
	echo "   bytes: run reports $sent sent; host 1's gnn0 moved $veth (tx $((tx1 - tx0)), rx $((rx1 - rx0)))" >&2
	if [ -z "$sent" ] || [ "$sent" = null ] || [ "$sent" -le 0 ] || [ "$veth" -lt "$sent" ]; then
		fail "veth counters ($veth bytes) below the bytes the run sent ($sent)"
	fi
else
	fail "no metrics to compare"
fi

# 3. A cut link: host 2's switch port goes down while train communicates.
echo "== cut link: host 2's port down during train --comm-timeout 10s" >&2
hosts 2 --comm-timeout 10s train --data "$ROOT/data/cora" --epochs 1000000 --seed 3 >"$T/cut.log" 2>&1 &
job=$!
sleep 4
if ! kill -0 $job 2>/dev/null || ! grep -q "^epoch" "$T/cut.log"; then
	fail "the long train run is not training when the link would be cut (log: $T/cut.log)"
	tail -20 "$T/cut.log" >&2
else
	[ -n "$(nspids $NS2)" ] || fail "no gnnmpi rank runs in $NS2 before the cut"
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
	while [ -n "$(nspids $NS1)$(nspids $NS2)" ] &&
		awk -v a="$cut" -v b="$(date +%s.%N)" 'BEGIN { exit !(b - a < 30) }'; do
		sleep 0.2
	done
	gone=$(awk -v a="$cut" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	clean=yes
	for ns in $NS1 $NS2; do
		left=$(nspids "$ns")
		if [ -n "$left" ]; then
			clean=no
			fail "left running in $ns 30 s after the cut: $(ps -o pid=,comm= -p "$(echo $left | tr ' ' ,)" | paste -sd' ')"
			kill -9 $left 2>/dev/null || true
		fi
	done
	[ $clean = no ] || echo "   no gnnmpi or orted left in either namespace ${gone} s after the cut" >&2
fi

if [ ${#FAILED[@]} -gt 0 ]; then
	echo "netns-test: ${#FAILED[@]} check(s) failed:" >&2
	printf '  - %s\n' "${FAILED[@]}" >&2
	exit 1
fi
echo "netns-test: ok" >&2
