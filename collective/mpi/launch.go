package mpi

import "errors"

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
