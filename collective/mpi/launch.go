package mpi

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrNoMPI is returned by Init in binaries built with the nompi tag.
var ErrNoMPI = errors.New("mpi: this binary was built without MPI (tag nompi); rebuild without it to run under mpirun")

// Launched reports whether the process was started by an MPI launcher
// (mpirun, mpiexec, or srun with PMI/PMIx), judging by the environment that
// getenv reads.
func Launched(getenv func(string) string) bool {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"} {
		if getenv(v) != "" {
			return true
		}
	}
	return false
}

// CheckLaunch returns an error when the environment that getenv reads
// shows a launcher that started several copies of the program without
// starting MPI: each copy would then run as an independent 1-rank job,
// all exiting 0, writing the same files and interleaving their output.
// It returns nil under an MPI launcher (Launched) and for a single
// process.
//
// Recognised: a Slurm step (srun) of more than one task, told by
// SLURM_STEP_NUM_TASKS and SLURM_PROCID, which srun sets for every task
// and a batch script or salloc shell lacks (SLURM_NTASKS alone is the
// allocation's size, also set there, where one process is one rank).
// Other launchers are not judged: mpirun and Hydra's mpiexec always
// start MPI, and Cray's (aprun, PALS mpiexec) are an MPI launch for a
// binary linked with Cray MPICH, which finds its PMI from their variables.
func CheckLaunch(getenv func(string) string) error {
	if Launched(getenv) {
		return nil
	}
	if n, ok := tasks(getenv, "SLURM_STEP_NUM_TASKS", "SLURM_PROCID"); ok {
		plugin := SrunPlugin()
		return fmt.Errorf("srun started %d tasks without MPI (no PMI or PMIx in the environment), so each would run as an independent 1-rank job: launch with `srun --mpi=%s` (or export SLURM_MPI_TYPE=%s; ./run.sh does this)", n, plugin, plugin)
	}
	return nil
}

// tasks returns the task count in the variable size when it is above 1
// and the variable rank is set too.
func tasks(getenv func(string) string, size, rank string) (int, bool) {
	if getenv(rank) == "" {
		return 0, false
	}
	n, err := strconv.Atoi(getenv(size))
	return n, err == nil && n > 1
}

// SrunPlugin is the srun --mpi plugin this build's MPI starts under:
// pmix for Open MPI (Debian's has no Slurm PMI-2 support), pmi2 for MPICH
// (Debian's speaks Hydra's PMI, which srun's pmi2 plugin serves; under
// pmix every task would be a world of its own).
func SrunPlugin() string {
	if Implementation == "mpich" {
		return "pmi2"
	}
	return "pmix"
}

// CheckWorld returns an error when MPI started with a world of size ranks
// but the launcher, as the environment that getenv reads shows it, started
// a different number of processes: each then initialised MPI on its own
// (typically a 1-rank world), so the job would run as that many
// independent jobs. A launcher's own count wins: OMPI_COMM_WORLD_SIZE
// (Open MPI's mpirun) or PMI_SIZE (Hydra's mpiexec, srun --mpi=pmi2),
// since both start their daemons with srun inside an allocation, where a
// rank inherits the daemons' step (one task per node). Without them, a
// Slurm step of more than one task (SLURM_STEP_NUM_TASKS) must be the
// world: it is not when srun's --mpi plugin speaks a protocol the MPI
// library does not, as Debian's MPICH (Hydra's PMI client) under
// --mpi=pmix, which needs --mpi=pmi2.
func CheckWorld(getenv func(string) string, size int) error {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"} {
		n, err := strconv.Atoi(getenv(v))
		if err != nil {
			continue
		}
		if n != size {
			return fmt.Errorf("the launcher started %d processes (%s) but MPI sees a world of %d: gnnmpi was built with another MPI than the launcher's (use the mpirun of the MPI it was built with: GNNMPI_MPI, docs/architecture.md)", n, v, size)
		}
		return nil
	}
	if n, ok := tasks(getenv, "SLURM_STEP_NUM_TASKS", "SLURM_PROCID"); ok && n != size {
		plugin := getenv("SLURM_MPI_TYPE")
		if plugin == "" {
			plugin = "none given"
		}
		return fmt.Errorf("srun started %d tasks but MPI sees a world of %d: the MPI library did not connect through srun's --mpi plugin (%s), so each task would run as an independent job: MPICH builds need `srun --mpi=pmi2` (GNNMPI_SRUN_MPI=pmi2 for ./run.sh), Open MPI builds `srun --mpi=pmix`", n, size, plugin)
	}
	return nil
}
