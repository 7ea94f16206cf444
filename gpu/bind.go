package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// localRankVars lists, in order of trust, the launcher variables that give a
// process its rank among the ranks on its node and the number of those ranks.
// The MPI launchers come before Slurm on purpose: an mpirun or mpiexec run
// inside an sbatch script (or Hydra bootstrapping its proxies with srun)
// leaves the inherited SLURM_LOCALID=0 in every rank, and binding on it would
// put all ranks of a node on one GPU.
var localRankVars = []struct{ rank, size string }{
	{"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"}, // Open MPI mpirun/prterun
	{"MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"},   // MVAPICH2 mpirun_rsh
	{"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},                       // MPICH and Intel MPI Hydra
	{"PMI_LOCAL_RANK", "PMI_LOCAL_SIZE"},                         // Cray PMI, PMI-2 launchers
}

// LocalRankFromEnv returns the local rank of this process (its rank among
// the processes of the job on the same node) and the number of such
// processes, as the launcher exported them. getenv is usually os.Getenv.
//
// The sources are tried in this order, and the first one whose rank is a
// non-negative integer below its size (when the size is known) wins:
//   - Open MPI: OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE;
//   - MVAPICH2: MV2_COMM_WORLD_LOCAL_RANK, MV2_COMM_WORLD_LOCAL_SIZE;
//   - MPICH/Intel MPI Hydra: MPI_LOCALRANKID, MPI_LOCALNRANKS;
//   - PMI: PMI_LOCAL_RANK, PMI_LOCAL_SIZE;
//   - Slurm srun: SLURM_LOCALID, with the size taken from this node's
//     entry (SLURM_NODEID) of SLURM_STEP_TASKS_PER_NODE or
//     SLURM_TASKS_PER_NODE ("2(x3),1" means 2 tasks on each of the first
//     three nodes and 1 on the fourth), else from SLURM_NTASKS_PER_NODE.
//
// Slurm comes last because an MPI launcher started inside a Slurm
// allocation leaves a stale SLURM_LOCALID in every rank it starts.
//
// ok is false when no source gives a local rank; size is 0 when the winning
// source gives a rank but no usable size. When ok is false the caller should
// compute the local rank itself; package collective does so with an MPI
// shared-memory split (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED) and
// passes the result to Bind. LocalRankFromEnv does no communication.
func LocalRankFromEnv(getenv func(string) string) (rank, size int, ok bool) {
	for _, v := range localRankVars {
		if rank, size, ok := rankAndSize(getenv(v.rank), parseCount(getenv(v.size))); ok {
			return rank, size, true
		}
	}
	return rankAndSize(getenv("SLURM_LOCALID"), slurmLocalSize(getenv))
}

// rankAndSize parses a local rank and checks it against size, which is 0
// when unknown.
func rankAndSize(rankVal string, size int) (int, int, bool) {
	rank, ok := parseNonNegative(rankVal)
	if !ok || (size > 0 && rank >= size) {
		return 0, 0, false
	}
	return rank, size, true
}

// slurmLocalSize returns the number of tasks of this Slurm step on this
// node, or 0 when the environment does not say.
func slurmLocalSize(getenv func(string) string) int {
	node, ok := parseNonNegative(getenv("SLURM_NODEID"))
	if !ok {
		node = -1
	}
	for _, v := range []string{"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"} {
		if n, ok := tasksOnNode(getenv(v), node); ok {
			return n
		}
	}
	return parseCount(getenv("SLURM_NTASKS_PER_NODE"))
}

// tasksOnNode returns the task count of node in a Slurm tasks-per-node list
// such as "4(x2)" or "2(x3),1". When node is negative (SLURM_NODEID unset)
// it answers only if every node has the same count.
func tasksOnNode(spec string, node int) (int, bool) {
	if spec == "" {
		return 0, false
	}
	uniform := -1
	for item := range strings.SplitSeq(spec, ",") {
		count, repeat := item, "1"
		if i := strings.IndexByte(item, '('); i >= 0 {
			if !strings.HasPrefix(item[i:], "(x") || !strings.HasSuffix(item, ")") {
				return 0, false
			}
			count, repeat = item[:i], item[i+len("(x"):len(item)-len(")")]
		}
		c, ok1 := parseNonNegative(count)
		r, ok2 := parseNonNegative(repeat)
		if !ok1 || !ok2 || c == 0 || r == 0 {
			return 0, false
		}
		switch {
		case node >= 0 && node < r:
			return c, true
		case node >= 0:
			node -= r
		case uniform >= 0 && uniform != c:
			return 0, false
		default:
			uniform = c
		}
	}
	if node >= 0 {
		return 0, false // SLURM_NODEID beyond the list
	}
	return uniform, true
}

// parseCount parses a positive count, returning 0 when s is not one.
func parseCount(s string) int {
	n, ok := parseNonNegative(s)
	if !ok {
		return 0
	}
	return n
}

// parseNonNegative parses a decimal integer ≥ 0, allowing surrounding spaces.
func parseNonNegative(s string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// Bind returns the device for the process with the given local rank: the
// local ranks of a node are dealt round-robin over devices, so local rank r
// gets devices[r%len(devices)] and, when there are more ranks than devices,
// several ranks share a device. The CUDA device ordinal to select is the
// same r%len(devices) when devices came from DiscoverSystem.
//
// Every rank of a node must pass the same devices slice (as DiscoverSystem
// gives when all ranks share one CUDA_VISIBLE_DEVICES) for the binding to
// spread ranks over devices. Bind returns an error wrapping ErrNoGPU when
// devices is empty. The local rank comes from LocalRankFromEnv or, failing
// that, from package collective's shared-memory split.
//
// It will panic if localRank is negative.
func Bind(localRank int, devices []Device) (Device, error) {
	if localRank < 0 {
		panic("gpu: negative local rank")
	}
	if len(devices) == 0 {
		return Device{}, &noGPUError{reason: fmt.Sprintf("no device to bind local rank %d to", localRank)}
	}
	return devices[localRank%len(devices)], nil
}
