package mpi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// The variables below are those seen under Slurm 22.05 (Debian) on one
// node: bench/cluster/slurm-test.sh starts it.
func TestCheckLaunch(t *testing.T) {
	step2 := map[string]string{ // srun -n 2, MpiDefault=none
		"SLURM_JOB_ID": "5", "SLURM_NTASKS": "2", "SLURM_NPROCS": "2",
		"SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "2", "SLURM_PROCID": "1",
	}
	for _, tc := range []struct {
		name     string
		env      map[string]string
		launched bool
		refused  bool
	}{
		{name: "plain process", env: nil},
		{name: "srun -n 2 without MPI", env: step2, refused: true},
		{name: "srun -n 2 --mpi=pmix", env: with(step2, "PMIX_RANK", "1", "PMIX_NAMESPACE", "slurm.pmix.5.0"), launched: true},
		{name: "srun -n 2 --mpi=pmi2", env: with(step2, "PMI_RANK", "1", "PMI_SIZE", "2", "PMI_FD", "5"), launched: true},
		{name: "srun -n 1 without MPI", env: with(step2, "SLURM_NTASKS", "1", "SLURM_STEP_NUM_TASKS", "1", "SLURM_PROCID", "0")},
		// A batch script (sbatch --ntasks=3) has SLURM_NTASKS and
		// SLURM_PROCID=0 but is one process: gnnmpi run there is one rank.
		{name: "batch script", env: map[string]string{"SLURM_JOB_ID": "3", "SLURM_NTASKS": "3", "SLURM_NPROCS": "3", "SLURM_PROCID": "0"}},
		// salloc's shell: the allocation's size only.
		{name: "salloc shell", env: map[string]string{"SLURM_JOB_ID": "4", "SLURM_NTASKS": "3", "SLURM_NPROCS": "3"}},
		// mpirun inside an allocation: the ranks inherit the batch
		// step's variables, or a 1-task srun's, and are MPI.
		{name: "mpirun in a batch script", env: map[string]string{"SLURM_NTASKS": "4", "SLURM_PROCID": "0", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_RANK": "2"}, launched: true},
		{name: "mpirun in a 4-task step", env: with(step2, "SLURM_STEP_NUM_TASKS", "4", "OMPI_COMM_WORLD_SIZE", "4"), launched: true},
		// What mpirun.mpich (MPICH 4.0.2 Hydra) sets for each rank.
		{name: "Hydra mpiexec", env: map[string]string{"PMI_RANK": "0", "PMI_SIZE": "4", "PMI_FD": "6", "MPI_LOCALNRANKS": "4"}, launched: true},
		{name: "step count without a task rank", env: map[string]string{"SLURM_STEP_NUM_TASKS": "4"}},
		{name: "unparsable step count", env: with(step2, "SLURM_STEP_NUM_TASKS", "2(x2)")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.launched, Launched(env(tc.env)))
			err := CheckLaunch(env(tc.env))
			if !tc.refused {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), "srun started 2 tasks without MPI")
			require.Contains(t, err.Error(), "srun --mpi="+SrunPlugin())
			require.Contains(t, err.Error(), "SLURM_MPI_TYPE="+SrunPlugin())
			require.NotContains(t, err.Error(), "\n")
		})
	}
}

// CheckWorld refuses a world smaller than the launch (MPICH under srun
// --mpi=pmix: every task a 1-rank world) and trusts a launcher's own count
// over the step of the daemons it started with srun.
func TestCheckWorld(t *testing.T) {
	step := map[string]string{"SLURM_JOB_ID": "5", "SLURM_STEP_NUM_TASKS": "2", "SLURM_PROCID": "1"}
	for _, tc := range []struct {
		name   string
		env    map[string]string
		size   int
		refuse string
	}{
		{name: "plain process", size: 1},
		{name: "srun --mpi=pmix, Open MPI", env: with(step, "PMIX_RANK", "1", "SLURM_MPI_TYPE", "pmix"), size: 2},
		{name: "srun --mpi=pmix, MPICH", env: with(step, "PMIX_RANK", "1", "SLURM_MPI_TYPE", "pmix"), size: 1, refuse: "srun --mpi=pmi2"},
		{name: "srun --mpi=pmi2, MPICH", env: with(step, "PMI_RANK", "1", "PMI_SIZE", "2"), size: 2},
		// mpirun -np 8 over 2 nodes: its daemons are a 2-task srun step.
		{name: "Open MPI mpirun across 2 allocated nodes", env: with(step, "OMPI_COMM_WORLD_SIZE", "8"), size: 8},
		{name: "Hydra across 2 allocated nodes", env: with(step, "PMI_SIZE", "8", "PMI_RANK", "3"), size: 8},
		{name: "Open MPI's mpirun, MPICH binary", env: map[string]string{"OMPI_COMM_WORLD_SIZE": "4"}, size: 1, refuse: "OMPI_COMM_WORLD_SIZE"},
		{name: "Hydra's mpiexec, Open MPI binary", env: map[string]string{"PMI_SIZE": "4", "PMI_RANK": "0"}, size: 1, refuse: "PMI_SIZE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckWorld(env(tc.env), tc.size)
			if tc.refuse == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.refuse)
			require.NotContains(t, err.Error(), "\n")
		})
	}
}

// with returns a copy of base with the key-value pairs kv set.
func with(base map[string]string, kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
