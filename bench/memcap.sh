#!/bin/sh
# bench/memcap.sh LIMIT CMD...: run CMD in a memory cgroup of its own
# limited to LIMIT bytes: under mpirun (mpirun ... bench/memcap.sh LIMIT
# ./gnnmpi ...) every rank gets its own cgroup, so the limit is per rank.
#
# It uses the cgroup v1 memory controller (memory.limit_in_bytes) when the
# process's memory cgroup is v1, else cgroup v2 (memory.max): a child of
# the process's current cgroup, which must be writable (root, or a
# delegated subtree). Swap is not limited separately: with swap off, as
# here, the limit bounds what the rank holds. The cgroup is removed when
# CMD ends; CMD's exit status is returned.
set -eu
limit=$1
shift
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}
v1=$(sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}memory\(,[^:]*\)\{0,1\}:\(.*\)$/\3/p' /proc/self/cgroup)
if [ -n "$v1" ] && [ -d /sys/fs/cgroup/memory ]; then
	parent=/sys/fs/cgroup/memory${v1%/}
	cg=$parent/gnnmpi-cap-$$-r$rank
	mkdir "$cg"
	echo "$limit" > "$cg/memory.limit_in_bytes"
else
	v2=$(sed -n 's/^0::\(.*\)$/\1/p' /proc/self/cgroup)
	root=/sys/fs/cgroup
	[ -f $root/cgroup.controllers ] || root=/sys/fs/cgroup/unified
	parent=$root${v2%/}
	cg=$parent/gnnmpi-cap-$$-r$rank
	mkdir "$cg"
	echo "$limit" > "$cg/memory.max"
fi
echo $$ > "$cg/cgroup.procs"
set +e
"$@"
rc=$?
echo $$ > "$parent/cgroup.procs"
rmdir "$cg" 2>/dev/null
exit $rc
