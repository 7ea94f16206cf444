package train

import (
	"os"
	"runtime"
	"strconv"
	"strings"

	"gnnmpi/collective"
	"gnnmpi/metrics"
)

// onlineCPUsFile lists the host's online CPUs as ranges ("0-3,6").
const onlineCPUsFile = "/sys/devices/system/cpu/online"

// resolveOverlap returns cfg with Overlap turned off when cfg.OverlapCores
// is positive and some rank has fewer cores than that (coresPerRank), and
// the number of cores of the rank with the fewest. The ranks agree: each
// rank's loader runs on a duplicate communicator, so either every rank
// overlaps or none does. It is collective over c, under
// metrics.PhaseSetup.
func resolveOverlap(c collective.Comm, cfg Config) (Config, int, error) {
	if !cfg.Overlap || cfg.OverlapCores <= 0 {
		return cfg, 0, nil
	}
	defer collective.SetPhase(c, metrics.PhaseSetup)()
	_, local, err := collective.LocalRank(c)
	if err != nil {
		return cfg, 0, err
	}
	cores := int64(coresPerRank(runtime.GOMAXPROCS(0), runtime.NumCPU(), onlineCPUs(), local))
	if err := collective.AllreduceVars(c, collective.Min, &cores); err != nil {
		return cfg, 0, err
	}
	if cores < int64(cfg.OverlapCores) {
		cfg.Overlap = false
	}
	return cfg, int(cores), nil
}

// coresPerRank returns the cores one of local ranks on a host of online
// CPUs can use, with procs the rank's GOMAXPROCS and affinity the CPUs of
// its affinity mask: all three bound it (a rank bound to its own cores
// has as many as its mask; unbound ranks share the host's), and it is at
// least 1.
func coresPerRank(procs, affinity, online, local int) int {
	return max(min(procs, affinity, online/max(local, 1)), 1)
}

// onlineCPUs returns the number of the host's online CPUs, or
// runtime.NumCPU when onlineCPUsFile cannot be read.
func onlineCPUs() int {
	b, err := os.ReadFile(onlineCPUsFile)
	if err != nil {
		return runtime.NumCPU()
	}
	n, ok := countCPUList(strings.TrimSpace(string(b)))
	if !ok || n == 0 {
		return runtime.NumCPU()
	}
	return n
}

// countCPUList returns the number of CPUs in a Linux CPU list ("0-3,6,8-9"),
// and false when s is not one.
func countCPUList(s string) (int, bool) {
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0, false
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, false
			}
		}
		n += b - a + 1
	}
	return n, true
}
