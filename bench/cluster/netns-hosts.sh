#!/usr/bin/env bash
# netns-hosts.sh: N "hosts" on this machine as network namespaces, for
# running gnnmpi (or any MPI program) with Open MPI over TCP between them.
# The front end of bench/cluster/netns-lib.sh (see there for the network);
# needs root.
#
#   bench/cluster/netns-hosts.sh up N          N hosts (2..8) gnnmpi-h1..hN on a
#                                              bridge, addresses 10.77.0.i/24; writes
#                                              the hostfile and rsh agent into the state
#                                              dir and prints the dir
#   bench/cluster/netns-hosts.sh rate RATE     tc tbf at RATE (e.g. 200mbit, 1gbit) on
#                                              every host's link, both directions
#                                              (burst 10 ms of RATE, at least 128 KiB;
#                                              latency 50ms); "off" removes it
#   bench/cluster/netns-hosts.sh mpirun NP PROG [ARGS...]
#                                              mpirun -np NP PROG ARGS over the hosts
#                                              (one rank per host in turn, --map-by
#                                              node), started in host 1
#   bench/cluster/netns-hosts.sh mca           print mpirun's options, one per line
#   bench/cluster/netns-hosts.sh status        the hosts, their addresses and qdiscs
#   bench/cluster/netns-hosts.sh down          kill everything in the hosts, remove them
#
# Environment: NETNS_DIR, the state dir (default /tmp/gnnmpi-netns: hostfile,
# rsh, hosts); NETNS_SLOTS, slots per host in the hostfile (default 2, read by
# up); NETNS_TIMEOUT, seconds after which mpirun is killed (default none);
# OMPI_MCA_oob_tcp_keepalive_{time,intvl,probes} (default 5, 2, 3: a lost host
# ends the job in about 11 s).
#
# Example, a rate-limited run of 4 ranks on 2 hosts:
#   bench/cluster/netns-hosts.sh up 2
#   bench/cluster/netns-hosts.sh rate 200mbit
#   bench/cluster/netns-hosts.sh mpirun 4 "$PWD/gnnmpi" train --data "$PWD/data/cora"
#   bench/cluster/netns-hosts.sh down
# PROG must be an absolute path (or on PATH): the ranks start in the
# directory mpirun is started in, which the hosts share with this machine.
set -euo pipefail
# shellcheck source=bench/cluster/netns-lib.sh
. "$(dirname "$0")/netns-lib.sh"

usage() {
	sed -n '2,/^set -e/{/^set -e/d; s/^# \{0,1\}//; p}' "$0" >&2
	exit 2
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case "$cmd" in
up)
	[ $# -eq 1 ] || usage
	netns_require
	netns_up "$1"
	netns_dir
	;;
rate)
	[ $# -eq 1 ] || usage
	netns_rate "$1"
	;;
mpirun)
	[ $# -ge 2 ] || usage
	netns_mpirun "$@"
	;;
mca)
	netns_mca
	;;
status)
	n=$(netns_count)
	echo "$n hosts, state dir $(netns_dir)"
	for i in $(seq "$n"); do
		echo "gnnmpi-h$i: $(ip -n "gnnmpi-h$i" -br addr show gnn0 | awk '{print $3}')"
		echo "  gnn0:        $(tc -n "gnnmpi-h$i" qdisc show dev gnn0 root | head -1)"
		echo "  gnnmpi-p$i:   $(tc -n gnnmpi-sw qdisc show dev "gnnmpi-p$i" root | head -1)"
	done
	;;
down)
	[ $# -eq 0 ] || usage
	netns_down
	;;
-h | --help | help) usage ;;
*)
	echo "netns-hosts: unknown command $cmd" >&2
	usage
	;;
esac
