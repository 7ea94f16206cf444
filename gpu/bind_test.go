package gpu

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLocalRankFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		rank int
		size int
		ok   bool
	}{
		{name: "none", env: nil},
		{
			name: "open mpi",
			env:  map[string]string{"OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"},
			rank: 3, size: 4, ok: true,
		},
		{
			// mpirun inside sbatch: every rank inherits SLURM_LOCALID=0.
			name: "open mpi beats stale slurm",
			env: map[string]string{
				"OMPI_COMM_WORLD_LOCAL_RANK": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "4",
				"SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "1",
			},
			rank: 2, size: 4, ok: true,
		},
		{
			name: "hydra beats stale slurm",
			env: map[string]string{
				"MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2",
				"SLURM_LOCALID": "0", "SLURM_NODEID": "0", "SLURM_STEP_TASKS_PER_NODE": "1",
			},
			rank: 1, size: 2, ok: true,
		},
		{
			name: "open mpi rank without size",
			env:  map[string]string{"OMPI_COMM_WORLD_LOCAL_RANK": "1"},
			rank: 1, size: 0, ok: true,
		},
		{
			name: "malformed open mpi falls through",
			env: map[string]string{
				"OMPI_COMM_WORLD_LOCAL_RANK": "x", "OMPI_COMM_WORLD_LOCAL_SIZE": "4",
				"MV2_COMM_WORLD_LOCAL_RANK": "1", "MV2_COMM_WORLD_LOCAL_SIZE": "2",
			},
			rank: 1, size: 2, ok: true,
		},
		{
			name: "rank not below size falls through",
			env: map[string]string{
				"OMPI_COMM_WORLD_LOCAL_RANK": "4", "OMPI_COMM_WORLD_LOCAL_SIZE": "4",
			},
		},
		{
			name: "negative rank",
			env:  map[string]string{"OMPI_COMM_WORLD_LOCAL_RANK": "-1"},
		},
		{
			name: "mvapich2",
			env:  map[string]string{"MV2_COMM_WORLD_LOCAL_RANK": "0", "MV2_COMM_WORLD_LOCAL_SIZE": "8"},
			rank: 0, size: 8, ok: true,
		},
		{
			name: "hydra",
			env:  map[string]string{"MPI_LOCALRANKID": "5", "MPI_LOCALNRANKS": "6"},
			rank: 5, size: 6, ok: true,
		},
		{
			name: "pmi",
			env:  map[string]string{"PMI_LOCAL_RANK": "1", "PMI_LOCAL_SIZE": "2"},
			rank: 1, size: 2, ok: true,
		},
		{
			name: "pmi rank with spaces",
			env:  map[string]string{"PMI_LOCAL_RANK": " 1 "},
			rank: 1, size: 0, ok: true,
		},
		{
			name: "slurm ntasks per node",
			env:  map[string]string{"SLURM_LOCALID": "1", "SLURM_NTASKS_PER_NODE": "4"},
			rank: 1, size: 4, ok: true,
		},
		{
			name: "slurm uniform tasks per node",
			env:  map[string]string{"SLURM_LOCALID": "3", "SLURM_TASKS_PER_NODE": "4(x2)"},
			rank: 3, size: 4, ok: true,
		},
		{
			// srun -n 7 over 4 nodes: "2(x3),1"; node 3 has one task.
			name: "slurm uneven tasks per node",
			env: map[string]string{
				"SLURM_LOCALID": "0", "SLURM_NODEID": "3", "SLURM_TASKS_PER_NODE": "2(x3),1",
			},
			rank: 0, size: 1, ok: true,
		},
		{
			name: "slurm step list beats job list",
			env: map[string]string{
				"SLURM_LOCALID": "1", "SLURM_NODEID": "0",
				"SLURM_STEP_TASKS_PER_NODE": "2", "SLURM_TASKS_PER_NODE": "8",
			},
			rank: 1, size: 2, ok: true,
		},
		{
			name: "slurm uneven without node id uses ntasks per node",
			env: map[string]string{
				"SLURM_LOCALID": "1", "SLURM_TASKS_PER_NODE": "2(x3),1", "SLURM_NTASKS_PER_NODE": "2",
			},
			rank: 1, size: 2, ok: true,
		},
		{
			name: "slurm size unknown",
			env:  map[string]string{"SLURM_LOCALID": "1", "SLURM_TASKS_PER_NODE": "2(x3),1"},
			rank: 1, size: 0, ok: true,
		},
		{
			name: "slurm rank beyond size",
			env:  map[string]string{"SLURM_LOCALID": "4", "SLURM_NTASKS_PER_NODE": "4"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rank, size, ok := LocalRankFromEnv(func(k string) string { return tc.env[k] })
			assert.Equal(t, tc.ok, ok, "ok")
			assert.Equal(t, tc.rank, rank, "rank")
			assert.Equal(t, tc.size, size, "size")
		})
	}
}

func TestTasksOnNode(t *testing.T) {
	for _, tc := range []struct {
		spec string
		node int // -1: SLURM_NODEID unset
		want int
		ok   bool
	}{
		{spec: "4", node: 0, want: 4, ok: true},
		{spec: "4", node: -1, want: 4, ok: true},
		{spec: "4", node: 1, ok: false},
		{spec: "4(x2)", node: 1, want: 4, ok: true},
		{spec: "4(x2)", node: 2, ok: false},
		{spec: "4(x2)", node: -1, want: 4, ok: true},
		{spec: "2(x3),1", node: 0, want: 2, ok: true},
		{spec: "2(x3),1", node: 2, want: 2, ok: true},
		{spec: "2(x3),1", node: 3, want: 1, ok: true},
		{spec: "2(x3),1", node: -1, ok: false},
		{spec: "1,2,3", node: 1, want: 2, ok: true},
		{spec: "2,2(x2)", node: -1, want: 2, ok: true},
		{spec: "", node: 0, ok: false},
		{spec: "4(2)", node: 0, ok: false},
		{spec: "4(x2", node: 0, ok: false},
		{spec: "4(x0)", node: 0, ok: false},
		{spec: "0", node: 0, ok: false},
		{spec: "a", node: 0, ok: false},
		{spec: "4(xb)", node: 0, ok: false},
	} {
		t.Run(fmt.Sprintf("%s/node=%d", tc.spec, tc.node), func(t *testing.T) {
			got, ok := tasksOnNode(tc.spec, tc.node)
			assert.Equal(t, tc.ok, ok, "ok")
			if tc.ok {
				assert.Equal(t, tc.want, got, "got: %v want: %v", got, tc.want)
			}
		})
	}
}

func TestBind(t *testing.T) {
	devices := []Device{{Index: 0, Name: "a"}, {Index: 1, Name: "b"}, {Index: 2, Name: "c"}}
	for _, tc := range []struct {
		localRank int
		want      int // index into devices
	}{
		{localRank: 0, want: 0},
		{localRank: 1, want: 1},
		{localRank: 2, want: 2},
		{localRank: 3, want: 0},
		{localRank: 7, want: 1},
	} {
		t.Run(fmt.Sprint("localRank=", tc.localRank), func(t *testing.T) {
			got, err := Bind(tc.localRank, devices)
			require.NoError(t, err)
			assert.Equal(t, devices[tc.want], got)
		})
	}
}

func TestBindNoDevices(t *testing.T) {
	for _, devices := range [][]Device{nil, {}} {
		_, err := Bind(0, devices)
		require.ErrorIs(t, err, ErrNoGPU)
		assert.EqualError(t, err, "gpu: no GPU: no device to bind local rank 0 to")
	}
}

func TestBindNegativePanics(t *testing.T) {
	assert.PanicsWithValue(t, "gpu: negative local rank", func() {
		Bind(-1, []Device{{}})
	})
}
