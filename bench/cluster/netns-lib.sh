# shellcheck shell=bash
# netns-lib.sh: "hosts" on this machine as network namespaces, for Open MPI
# over TCP. Source it (bash); sourcing defines functions and nothing else.
# bench/cluster/netns-hosts.sh is its command-line front end and
# bench/cluster/netns-test.sh its test.
#
# The network: N hosts (2..8), network namespaces gnnmpi-h1..gnnmpi-hN, each
# with a veth pair whose inside end is gnn0 (address 10.77.0.i/24, inside the
# namespace only) and whose outside end is gnnmpi-pi, a port of the bridge
# br0 in a third namespace, gnnmpi-sw (the switch). Every command run on a
# host also gets its own UTS namespace with hostname gnnmpi-hi, so Open MPI's
# session directories and hostnames differ between hosts. Nothing outside the
# namespaces changes.
#
# A state dir ($NETNS_DIR, default /tmp/gnnmpi-netns) holds what mpirun needs:
#   hostfile  "10.77.0.i slots=S" per host (S: $NETNS_SLOTS, default 2)
#   rsh       the plm_rsh_agent: "rsh HOST CMD..." runs CMD in HOST's
#             namespaces (ip netns exec gnnmpi-hi unshare --uts)
#   hosts     the number of hosts
#
# Functions (each returns non-zero, with a message on stderr, on failure):
#   netns_require             root, ip, unshare, Open MPI's mpirun, and the
#                             right to create network and UTS namespaces
#   netns_up N                make N hosts (removing stale ones first), wait
#                             until host 1 reaches host N, write the state dir
#   netns_down                kill everything in the namespaces, delete them
#                             (and with them the veths and the bridge), remove
#                             the state dir's files
#   netns_count               the number of hosts up (gnnmpi-h1, h2, ... present)
#   netns_rate RATE           tc tbf at RATE (tc units: 100mbit, 1gbit, 10mbps)
#                             on every host's link in both directions: the
#                             egress of gnn0 (host to switch) and of gnnmpi-pi
#                             (switch to host); "off" removes it. burst is
#                             10 ms of RATE, at least 128 KiB (two 64 KiB GSO
#                             packets; ≥ RATE/HZ for any HZ ≥ 100), and latency
#                             50ms (the queue holds 50 ms of RATE beyond the
#                             burst; later packets are dropped, as on a switch)
#   netns_mca                 print mpirun's options, one per line: hostfile,
#                             --map-by node, plm_rsh_agent, btl tcp,self,
#                             btl/oob_tcp_if_include 10.77.0.0/24,
#                             mpi_yield_when_idle 1, --bind-to none (every
#                             host sees all of the machine's cores and would
#                             bind its first rank to core 0: the hosts' ranks
#                             would share one core)
#   netns_mpirun NP PROG ARGS...
#                             mpirun -np NP PROG ARGS over the hosts, from host
#                             1, as root, with Open MPI's out-of-band keepalive
#                             at 5 + 3 × 2 s (a lost host is noticed in about
#                             11 s; the OMPI_MCA_oob_tcp_keepalive_* variables
#                             override it) and, if $NETNS_TIMEOUT is set,
#                             killed after that many seconds
#   netns_exec I CMD...       CMD in host I's namespaces (hostname gnnmpi-hI)
#   netns_pids NS             the pids of gnnmpi and orted processes in NS
#   netns_counter I NAME      host I's gnn0 counter NAME (tx_bytes, rx_bytes)
#   netns_throughput I J BYTES
#                             send BYTES over TCP from host I to host J
#                             (python3 on both ends) and print the receiver's
#                             rate in bytes/s (first byte to end of stream)

NETNS_PREFIX=gnnmpi
NETNS_SW=gnnmpi-sw
NETNS_NET=10.77.0

netns_dir() {
	echo "${NETNS_DIR:-/tmp/gnnmpi-netns}"
}

netns_require() {
	if [ "$(id -u)" != 0 ]; then
		echo "netns: needs root to create network namespaces" >&2
		return 1
	fi
	if ! command -v ip >/dev/null || ! command -v unshare >/dev/null; then
		echo "netns: needs ip (iproute2) and unshare (util-linux)" >&2
		return 1
	fi
	if ! command -v mpirun >/dev/null || ! mpirun --version 2>/dev/null | grep -q "Open MPI"; then
		echo "netns: needs Open MPI's mpirun" >&2
		return 1
	fi
	if ! ip netns add $NETNS_PREFIX-probe 2>/dev/null; then
		echo "netns: cannot create a network namespace (no CAP_NET_ADMIN?)" >&2
		return 1
	fi
	ip netns del $NETNS_PREFIX-probe
	if ! unshare --uts true 2>/dev/null; then
		echo "netns: cannot create a UTS namespace (no CAP_SYS_ADMIN?)" >&2
		return 1
	fi
}

# netns_list: the names of this library's namespaces that exist.
netns_list() {
	ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NETNS_PREFIX-(h[0-9]+|sw|probe)\$" || true
}

netns_count() {
	local n=0
	while ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$NETNS_PREFIX-h$((n + 1))"; do
		n=$((n + 1))
	done
	echo $n
}

netns_pids() {
	local pid
	for pid in $(ip netns pids "$1" 2>/dev/null); do
		case "$(cat "/proc/$pid/comm" 2>/dev/null)" in gnnmpi | orted) echo "$pid" ;; esac
	done
}

netns_down() {
	local ns pid dir
	for ns in $(netns_list); do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
	done
	sleep 0.2
	for ns in $(netns_list); do ip netns del "$ns" 2>/dev/null || true; done # deletes veths and bridge
	dir=$(netns_dir)
	rm -f "$dir/hostfile" "$dir/rsh" "$dir/hosts"
	rmdir "$dir" 2>/dev/null || true
}

netns_up() {
	local n=$1 i ns dir reach
	case "$n" in [2-8]) ;; *)
		echo "netns: netns_up: $n hosts; want 2 to 8" >&2
		return 1
		;;
	esac
	dir=$(netns_dir)
	if [ -n "$(netns_list)" ]; then
		echo "netns: removing stale namespaces: $(netns_list | paste -sd' ')" >&2
		netns_down
	fi
	mkdir -p "$dir" || return 1
	ip netns add $NETNS_SW || return 1
	ip -n $NETNS_SW link add br0 type bridge || return 1
	ip -n $NETNS_SW link set br0 up || return 1
	ip -n $NETNS_SW link set lo up || return 1
	for i in $(seq "$n"); do
		ns=$NETNS_PREFIX-h$i
		ip netns add "$ns" || return 1
		ip link add $NETNS_PREFIX-p"$i" netns $NETNS_SW type veth peer name gnn0 netns "$ns" || return 1
		ip -n $NETNS_SW link set $NETNS_PREFIX-p"$i" master br0 up || return 1
		ip -n "$ns" addr add $NETNS_NET."$i"/24 dev gnn0 || return 1
		ip -n "$ns" link set gnn0 up || return 1
		ip -n "$ns" link set lo up || return 1
	done
	# Reachability: a TCP connect to a closed port of host N is refused (no
	# ping needed) once the links are up.
	reach=no
	for _ in $(seq 20); do
		if (ip netns exec $NETNS_PREFIX-h1 timeout 2 bash -c "exec 3<>/dev/tcp/$NETNS_NET.$n/9" 2>&1 || true) | grep -q refused; then
			reach=yes
			break
		fi
		sleep 0.25
	done
	if [ $reach = no ]; then
		echo "netns: $NETNS_NET.$n is not reachable from $NETNS_PREFIX-h1" >&2
		return 1
	fi
	cat >"$dir/rsh" <<EOF
#!/bin/sh
# plm_rsh_agent for the namespace hosts (bench/cluster/netns-lib.sh):
# "rsh HOST CMD..." runs CMD in HOST's network namespace and a new UTS
# namespace with its hostname.
host=\$1
shift
case "\$host" in
$NETNS_NET.[1-$n]) i=\${host##*.} ;;
*) echo "netns rsh agent: unknown host \$host" >&2; exit 255 ;;
esac
exec ip netns exec $NETNS_PREFIX-h\$i unshare --uts sh -c "hostname $NETNS_PREFIX-h\$i && \$*"
EOF
	chmod +x "$dir/rsh"
	: >"$dir/hostfile"
	for i in $(seq "$n"); do echo "$NETNS_NET.$i slots=${NETNS_SLOTS:-2}" >>"$dir/hostfile"; done
	echo "$n" >"$dir/hosts"
}

# netns_bytes RATE: RATE (tc units) in bytes per second.
netns_bytes() {
	local r=${1,,} num unit
	if [[ ! $r =~ ^([0-9]+(\.[0-9]+)?)([kmgt]?)(bit|bps)$ ]]; then
		echo "netns: rate $1: want a number and one of bit, kbit, mbit, gbit, bps, kbps, mbps, gbps (e.g. 100mbit)" >&2
		return 1
	fi
	num=${BASH_REMATCH[1]} unit=${BASH_REMATCH[3]}${BASH_REMATCH[4]}
	awk -v x="$num" -v u="$unit" 'BEGIN {
		m["bit"] = 1 / 8; m["kbit"] = 1e3 / 8; m["mbit"] = 1e6 / 8; m["gbit"] = 1e9 / 8; m["tbit"] = 1e12 / 8
		m["bps"] = 1; m["kbps"] = 1e3; m["mbps"] = 1e6; m["gbps"] = 1e9; m["tbps"] = 1e12
		printf "%d\n", x * m[u]
	}'
}

netns_rate() {
	local rate=$1 n i bytes burst
	n=$(netns_count)
	if [ "$n" -lt 1 ]; then
		echo "netns: no hosts (netns_up first)" >&2
		return 1
	fi
	if [ "$rate" = off ]; then
		for i in $(seq "$n"); do
			tc -n $NETNS_PREFIX-h"$i" qdisc del dev gnn0 root 2>/dev/null || true
			tc -n $NETNS_SW qdisc del dev $NETNS_PREFIX-p"$i" root 2>/dev/null || true
		done
		return 0
	fi
	bytes=$(netns_bytes "$rate") || return 1
	if [ "$bytes" -le 0 ]; then
		echo "netns: rate $rate is zero" >&2
		return 1
	fi
	burst=$((bytes / 100))
	[ $burst -ge 131072 ] || burst=131072
	for i in $(seq "$n"); do
		tc -n $NETNS_PREFIX-h"$i" qdisc replace dev gnn0 root tbf rate "$rate" burst $burst latency 50ms || return 1
		tc -n $NETNS_SW qdisc replace dev $NETNS_PREFIX-p"$i" root tbf rate "$rate" burst $burst latency 50ms || return 1
	done
}

netns_mca() {
	local dir
	dir=$(netns_dir)
	printf '%s\n' --hostfile "$dir/hostfile" --map-by node \
		--mca plm_rsh_agent "$dir/rsh" --mca plm_rsh_no_tree_spawn 1 \
		--mca btl "${NETNS_BTL:-tcp,self}" --mca btl_tcp_if_include $NETNS_NET.0/24 --mca oob_tcp_if_include $NETNS_NET.0/24 \
		--mca mpi_yield_when_idle 1 --bind-to none
}

netns_exec() {
	local i=$1
	shift
	ip netns exec $NETNS_PREFIX-h"$i" unshare --uts sh -c "hostname $NETNS_PREFIX-h$i"' && exec "$@"' sh "$@"
}

netns_mpirun() {
	local np=$1 mca tmo=()
	shift
	if [ ! -f "$(netns_dir)/hostfile" ]; then
		echo "netns: no $(netns_dir)/hostfile (netns_up first, with the same NETNS_DIR)" >&2
		return 1
	fi
	mapfile -t mca < <(netns_mca)
	[ -z "${NETNS_TIMEOUT:-}" ] || tmo=(timeout -k 5 "$NETNS_TIMEOUT")
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		OMPI_MCA_oob_tcp_keepalive_time=${OMPI_MCA_oob_tcp_keepalive_time:-5} \
		OMPI_MCA_oob_tcp_keepalive_intvl=${OMPI_MCA_oob_tcp_keepalive_intvl:-2} \
		OMPI_MCA_oob_tcp_keepalive_probes=${OMPI_MCA_oob_tcp_keepalive_probes:-3} \
		netns_exec 1 "${tmo[@]}" mpirun -np "$np" "${mca[@]}" "$@"
}

netns_counter() {
	ip netns exec $NETNS_PREFIX-h"$1" cat /sys/class/net/gnn0/statistics/"$2"
}

netns_throughput() {
	local from=$1 to=$2 bytes=$3 out port=5999 rc=0 rpid
	out=$(mktemp) || return 1
	# The receiver writes "ready" once listening, then "BYTES SECONDS".
	ip netns exec $NETNS_PREFIX-h"$to" python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
s.settimeout(60)
print("ready", flush=True)
c, _ = s.accept()
c.settimeout(60)
n, t0 = 0, None
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    if t0 is None:
        t0 = time.monotonic()
    n += len(b)
print(n, time.monotonic() - t0, flush=True)
' "$NETNS_NET.$to" $port >"$out" &
	rpid=$!
	for _ in $(seq 100); do
		grep -q ready "$out" && break
		sleep 0.05
	done
	ip netns exec $NETNS_PREFIX-h"$from" timeout 120 python3 -c '
import socket, sys
n = int(sys.argv[3])
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=60)
buf = bytes(1 << 20)
while n > 0:
    k = min(n, len(buf))
    s.sendall(buf[:k])
    n -= k
s.shutdown(socket.SHUT_WR)
s.close()
' "$NETNS_NET.$to" $port "$bytes" || rc=$?
	wait $rpid || rc=$?
	if [ $rc -eq 0 ]; then
		awk -v want="$bytes" '$1 == "ready" { next } NF == 2 && $1 == want && $2 > 0 { printf "%.0f\n", $1 / $2; ok = 1 } END { exit !ok }' "$out" || {
			echo "netns: throughput $from -> $to: receiver said [$(paste -sd' ' "$out")]" >&2
			rc=1
		}
	fi
	rm -f "$out"
	return $rc
}
