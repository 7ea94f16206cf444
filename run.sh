#!/usr/bin/env bash
# run.sh: set up, build and launch gnnmpi.
#
#   ./run.sh                      train GraphSAGE on the embedded Cora on 4 ranks
#   ./run.sh [-n NP] CMD ARGS...  run `gnnmpi CMD ARGS...` on NP ranks (mpirun, or srun in Slurm)
#   ./run.sh test                 all tests: vet, gofmt, go test -race, MPI suites under mpirun,
#                                 and (as root) a one-node Slurm (bench/cluster/slurm-test.sh)
#   ./run.sh test cluster         the one-node Slurm test only
#   ./run.sh build                build ./gnnmpi only
#
# Environment: NP (ranks, default: cores), MPIRUN_ARGS (extra mpirun flags),
# GNNMPI_LAUNCHER=mpirun|srun (force a launcher), GNNMPI_SRUN_MPI (srun's
# --mpi plugin, default pmix: Debian's Open MPI starts only under pmix).
set -euo pipefail
cd "$(dirname "$0")"

PKGS=(libopenmpi-dev openmpi-bin libopenblas-dev libmetis-dev libptscotch-dev pkg-config gcc)

need_pkgs() {
	local missing=()
	for p in "${PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	echo "${missing[@]:-}"
}

setup() {
	if ! command -v dpkg-query >/dev/null; then
		command -v mpirun >/dev/null && pkg-config --exists ompi-c 2>/dev/null && return 0
		echo "run.sh: not a Debian/Ubuntu system: install OpenMPI (with pkg-config file ompi-c), OpenBLAS, METIS 5 and PT-Scotch 7 development files" >&2
		exit 1
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

build() {
	go build -o gnnmpi .
}

mpi_env() {
	if [ "$(id -u)" = 0 ]; then
		export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	fi
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
		exec srun -n "$np" --mpi="${GNNMPI_SRUN_MPI:-pmix}" ./gnnmpi "$@"
	fi
	mpi_env
	local args=(-np "$np")
	# Use the hostfile when it names hosts (the shipped one is only comments).
	if [ -f hostfile ] && grep -qv '^[[:space:]]*\(#\|$\)' hostfile; then
		args+=(--hostfile hostfile)
	elif [ "$np" -gt "$(nproc)" ]; then
		args+=(--oversubscribe)
	fi
	# shellcheck disable=SC2086
	exec mpirun "${args[@]}" ${MPIRUN_ARGS:-} ./gnnmpi "$@"
}

run_tests() {
	mpi_env
	echo "== go vet" >&2
	go vet ./...
	go vet -tags nompi ./...
	echo "== gofmt" >&2
	local unformatted
	unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
	if [ -n "$unformatted" ]; then
		echo "gofmt needed on: $unformatted" >&2
		exit 1
	fi
	echo "== go test -race ./..." >&2
	go test -race -timeout 20m ./...
	echo "== nompi, noblas build (pure Go apart from METIS)" >&2
	go build -tags nompi,noblas -o /dev/null .
	go vet -tags nompi,noblas ./...
	echo "== MPI suites under mpirun (np = 1, 2, 3, 4)" >&2
	GNNMPI_MPI_TESTS=1 go test -count=1 -v -timeout 15m ./internal/mpitest/
	if [ "$(id -u)" = 0 ]; then
		cluster_tests
	else
		echo "== one-node Slurm: skipped (needs root; ./run.sh test cluster)" >&2
	fi
}

cluster_tests() {
	echo "== one-node Slurm: srun, sbatch, srun without --mpi refused" >&2
	bench/cluster/slurm-test.sh
}

setup
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
