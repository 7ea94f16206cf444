// Package cores counts the CPU cores a rank can use: the least of its
// GOMAXPROCS, its affinity mask and its share of the host's online CPUs
// among the ranks on the host.
package cores

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// onlineFile lists the host's online CPUs as ranges ("0-3,6").
const onlineFile = "/sys/devices/system/cpu/online"

// PerRank returns the cores one of local ranks on a host of online CPUs
// can use, with procs the rank's GOMAXPROCS and affinity the CPUs of its
// affinity mask: all three bound it (a rank bound to cores of its own has
// as many as its mask; unbound ranks share the host's), and it is at
// least 1. local ≤ 0 counts as 1.
func PerRank(procs, affinity, online, local int) int {
	return max(min(procs, affinity, online/max(local, 1)), 1)
}

// Mine returns PerRank for this process, one of local ranks on its host:
// its GOMAXPROCS, runtime.NumCPU (the affinity mask) and Online.
func Mine(local int) int {
	return PerRank(runtime.GOMAXPROCS(0), runtime.NumCPU(), Online(), local)
}

// Online returns the number of the host's online CPUs, or runtime.NumCPU
// when the list of online CPUs cannot be read.
func Online() int {
	b, err := os.ReadFile(onlineFile)
	if err != nil {
		return runtime.NumCPU()
	}
	n, ok := CountList(strings.TrimSpace(string(b)))
	if !ok || n == 0 {
		return runtime.NumCPU()
	}
	return n
}

// CountList returns the number of CPUs in a Linux CPU list ("0-3,6,8-9"),
// and false when s is not one.
func CountList(s string) (int, bool) {
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
