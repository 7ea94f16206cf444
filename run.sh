#!/usr/bin/env bash
# run.sh: set up, build and launch gnnmpi.
#
#   ./run.sh                      train GraphSAGE on the embedded Cora on 4 ranks
#   ./run.sh [-n NP] CMD ARGS...  run `gnnmpi CMD ARGS...` on NP ranks (mpirun, or srun in Slurm)
#   ./run.sh test                 all tests: vet, gofmt, go test -race, MPI suites under mpirun,
#                                 bench/gpu/run.sh --fake (the GPU check on the fake CUDA libraries),
#                                 the model export checked in PyTorch (bench/peers/export-check.sh, when
#                                 /usr/bin/python3 has torch),
#                                 and (as root) a one-node Slurm (bench/cluster/slurm-test.sh) and
#                                 three network-namespace hosts over TCP (bench/cluster/netns-test.sh)
#   ./run.sh test cluster         the one-node Slurm and namespace-hosts tests only
#   ./run.sh build                build ./gnnmpi only
#
# Environment: NP (ranks, default: cores), MPIRUN_ARGS (extra mpirun flags),
# GNNMPI_LAUNCHER=mpirun|srun (force a launcher), GNNMPI_SRUN_MPI (srun's
# --mpi plugin, default pmix: Debian's Open MPI starts only under pmix;
# pmi2 for an MPICH build),
# GNNMPI_MPI=openmpi|mpich (the MPI to build against and launch with;
# default: Open MPI when its development files are installed, else MPICH).
set -euo pipefail
cd "$(dirname "$0")"

PKGS=(libopenmpi-dev openmpi-bin mpich libmpich-dev libopenblas-dev libmetis-dev libptscotch-dev pkg-config gcc)

need_pkgs() {
	local missing=()
	for p in "${PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	echo "${missing[@]:-}"
}

setup() {
	if ! command -v dpkg-query >/dev/null; then
		if ! { command -v mpirun >/dev/null && pkg-config --exists ompi-c 2>/dev/null; } &&
			! { command -v mpirun.mpich >/dev/null && pkg-config --exists mpich 2>/dev/null; }; then
			echo "run.sh: not a Debian/Ubuntu system: install Open MPI (with pkg-config file ompi-c) or MPICH (pkg-config mpich, launcher mpirun.mpich), OpenBLAS, METIS 5 and PT-Scotch 7 development files" >&2
			exit 1
		fi
		return 0
	fi
	local missing
	missing=$(need_pkgs)
	if [ -n "$missing" ]; then
		if [ "$(id -u)" = 0 ]; then
			echo "run.sh: installing $missing" >&2
			export DEBIAN_FRONTEND=noninteractive
			apt-get update -qq >/dev/null
			# shellcheck disable=SC2086
			apt-get install -y -qq --no-install-recommends $missing >/dev/null
		else
			echo "run.sh: missing packages; run: sudo apt-get install -y $missing" >&2
			exit 1
		fi
	fi
	if ! command -v go >/dev/null; then
		if [ -x /usr/local/go/bin/go ]; then
			export PATH=$PATH:/usr/local/go/bin
		else
			echo "run.sh: Go 1.26 is required (https://go.dev/dl); put it on PATH" >&2
			exit 1
		fi
	fi
}

# choose_mpi sets MPI (openmpi or mpich), TAGS (go build tags selecting it
# in collective/mpi) and MPIRUN (its launcher), from GNNMPI_MPI or from what
# is installed (Open MPI first: it stays the default beside MPICH).
choose_mpi() {
	MPI=${GNNMPI_MPI:-}
	if [ -z "$MPI" ]; then
		if pkg-config --exists ompi-c 2>/dev/null; then MPI=openmpi; elif pkg-config --exists mpich 2>/dev/null; then MPI=mpich; else MPI=openmpi; fi
	fi
	case "$MPI" in
	openmpi) TAGS="" MPIRUN=mpirun ;;
	mpich) TAGS=mpich MPIRUN=mpirun.mpich ;;
	*)
		echo "run.sh: GNNMPI_MPI=$MPI: want openmpi or mpich" >&2
		exit 1
		;;
	esac
	if ! pkg-config --exists "$([ "$MPI" = mpich ] && echo mpich || echo ompi-c)" 2>/dev/null; then
		echo "run.sh: GNNMPI_MPI=$MPI but its development files are not installed" >&2
		exit 1
	fi
}

# mpich_installed: MPICH can be built against and launched beside the
# chosen MPI.
mpich_installed() {
	pkg-config --exists mpich 2>/dev/null && command -v mpirun.mpich >/dev/null
}

build() {
	go build -tags "$TAGS" -o gnnmpi .
}

mpi_env() {
	if [ "$(id -u)" = 0 ]; then
		export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	fi
	# Open MPI's out-of-band TCP keepalive: a host behind a cut link is
	# noticed after 5 + 3 × 2 s instead of the default 300 + 9 × 20 s
	# (the environment overrides these).
	export OMPI_MCA_oob_tcp_keepalive_time=${OMPI_MCA_oob_tcp_keepalive_time:-5}
	export OMPI_MCA_oob_tcp_keepalive_intvl=${OMPI_MCA_oob_tcp_keepalive_intvl:-2}
	export OMPI_MCA_oob_tcp_keepalive_probes=${OMPI_MCA_oob_tcp_keepalive_probes:-3}
}

# launch NP CMD...: run ./gnnmpi on NP ranks.
launch() {
	local np=$1
	shift
	local launcher=${GNNMPI_LAUNCHER:-}
	if [ -z "$launcher" ]; then
		if [ -n "${SLURM_JOB_ID:-}" ] && command -v srun >/dev/null; then launcher=srun; else launcher=mpirun; fi
	fi
	if [ "$launcher" = srun ]; then
		# Without --mpi (MpiDefault=none) srun would start np 1-rank jobs;
		# gnnmpi refuses that.
		# Open MPI starts under pmix; Debian's MPICH speaks PMI-1/2 (pmi2).
		local plugin=pmix
		[ "$MPI" = openmpi ] || plugin=pmi2
		exec srun -n "$np" --mpi="${GNNMPI_SRUN_MPI:-$plugin}" ./gnnmpi "$@"
	fi
	mpi_env
	local args=(-np "$np")
	# Use the hostfile when it names hosts (the shipped one is only comments;
	# Open MPI's format is "host slots=N", MPICH's Hydra's "host:N").
	if [ -f hostfile ] && grep -qv '^[[:space:]]*\(#\|$\)' hostfile; then
		if [ "$MPI" = mpich ]; then args+=(-f hostfile); else args+=(--hostfile hostfile); fi
	elif [ "$np" -gt "$(nproc)" ] && [ "$MPI" = openmpi ]; then
		args+=(--oversubscribe) # Hydra oversubscribes by default
	fi
	# shellcheck disable=SC2086
	exec "$MPIRUN" "${args[@]}" ${MPIRUN_ARGS:-} ./gnnmpi "$@"
}

run_tests() {
	mpi_env
	echo "== go vet" >&2
	go vet -tags "$TAGS" ./...
	go vet -tags nompi ./...
	echo "== gofmt" >&2
	local unformatted
	unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
	if [ -n "$unformatted" ]; then
		echo "gofmt needed on: $unformatted" >&2
		exit 1
	fi
	echo "== go test -race ./..." >&2
	go test -race -tags "$TAGS" -timeout 20m ./...
	echo "== nompi, noblas build (pure Go apart from METIS)" >&2
	go build -tags nompi,noblas -o /dev/null .
	go vet -tags nompi,noblas ./...
	echo "== model export: PyTorch reproduces gnnmpi's predictions on Cora (bench/peers/export-check.sh; skipped without python3-torch)" >&2
	local exportdir
	exportdir=$(mktemp -d)
	go build -tags "$TAGS" -o "$exportdir/gnnmpi" .
	bench/peers/export-check.sh "$exportdir/gnnmpi" "$exportdir" >&2
	rm -rf "$exportdir"
	echo "== MPI suites under $MPIRUN ($MPI; np = 1, 2, 3, 4)" >&2
	GNNMPI_MPI=$MPI GNNMPI_MPI_TESTS=1 go test -count=1 -v -timeout 15m ./cli/mpitest/
	if [ "$MPI" != mpich ] && mpich_installed; then
		# The whole suite, selftest included, takes about 2 minutes under
		# MPICH; the PT-Scotch cases skip (Debian's PT-Scotch links Open MPI).
		echo "== MPICH build and MPI suites under mpirun.mpich" >&2
		go vet -tags mpich ./...
		GNNMPI_MPI=mpich GNNMPI_MPI_TESTS=1 go test -count=1 -v -timeout 15m ./cli/mpitest/
	fi
	echo "== the GPU bindings against NVIDIA's real CUDA 11.8 (Debian non-free; no GPU needed)" >&2
	bench/gpu/toolchain-check.sh
	echo "== bench/gpu/run.sh --fake: the GPU machine's check on the fake CUDA libraries" >&2
	local gpuout
	gpuout=$(mktemp -d)
	if ! bench/gpu/run.sh --fake "$gpuout" >/dev/null 2>&1; then
		cat "$gpuout/run.log" >&2
		exit 1
	fi
	tail -3 "$gpuout/run.log" >&2
	if [ "$(id -u)" = 0 ]; then
		cluster_tests
	else
		echo "== one-node Slurm, namespace hosts: skipped (need root; ./run.sh test cluster)" >&2
	fi
}

cluster_tests() {
	echo "== one-node Slurm: srun, sbatch, srun without --mpi refused, the requeue cycle" >&2
	bench/cluster/slurm-test.sh
	echo "== three network-namespace hosts over TCP: selftest, train, pipe, veth counters, a tbf rate limit, a cut link" >&2
	bench/cluster/netns-test.sh
}

setup
choose_mpi
case "${1:-}" in
test)
	case "${2:-}" in
	"") run_tests ;;
	cluster) cluster_tests ;;
	*)
		echo "run.sh: unknown test set ${2}: use ./run.sh test [cluster]" >&2
		exit 2
		;;
	esac
	;;
build)
	build
	;;
*)
	if [ $# -eq 0 ]; then
		# The main job: GraphSAGE on the embedded Cora, 4 ranks.
		NP=${NP:-4}
		set -- train --data data/cora --model sage
	fi
	NP=${NP:-$(nproc)}
	if [ "${1:-}" = "-n" ]; then
		NP=$2
		shift 2
	fi
	build
	launch "$NP" "$@"
	;;
esac
