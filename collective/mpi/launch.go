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
		return fmt.Errorf("srun started %d tasks without MPI (no PMI or PMIx in the environment), so each would run as an independent 1-rank job: launch with `srun --mpi=pmix` (or export SLURM_MPI_TYPE=pmix; ./run.sh does this)", n)
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
