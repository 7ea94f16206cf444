// Package memlimit reads how much memory this process may still allocate
// before the kernel refuses it or kills the process: the system's available
// memory, the process's memory cgroup (v1 or v2) and its address-space
// rlimit. Loaders compare a predicted footprint against it, so that a
// dataset too large for a rank fails with an error naming what did not fit
// instead of the out-of-memory killer's SIGKILL.
//
// It only reads files under /proc and /sys (and getrlimit); the
// computation is in Parse* functions that take the files' contents.
package memlimit

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Budget is the memory left to this process and what bounds it.
type Budget struct {
	Bytes  int64  // bytes that may still be allocated
	Source string // what bounds it: "MemAvailable", "cgroup v1 memory.limit_in_bytes /x", …
}

// String describes b, e.g. "3.2 GiB (cgroup v2 memory.max /job)".
func (b Budget) String() string {
	return fmt.Sprintf("%.2f GiB (%s)", float64(b.Bytes)/(1<<30), b.Source)
}

// Available returns the smallest of the limits that apply to this
// process: MemAvailable of /proc/meminfo, the limit of its memory cgroup
// less the cgroup's usage, and RLIMIT_AS less the process's virtual size.
// Limits that cannot be read are skipped; with none readable it returns an
// unlimited budget (math.MaxInt64, "unknown").
func Available() Budget {
	best := Budget{Bytes: math.MaxInt64, Source: "unknown"}
	take := func(b Budget, ok bool) {
		if ok && b.Bytes < best.Bytes {
			best = b
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		if b, ok := ParseMemInfo(data); ok {
			// The node's ranks share what the node has left.
			if k := LocalRanks(os.Getenv); k > 1 {
				b = Budget{Bytes: b.Bytes / int64(k), Source: fmt.Sprintf("MemAvailable / %d ranks on this node", k)}
			}
			take(b, true)
		}
	}
	if data, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		take(cgroupBudget(data))
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil && rl.Cur < math.MaxInt64 {
		if data, err := os.ReadFile("/proc/self/status"); err == nil {
			if vm, ok := statusField(data, "VmSize:"); ok {
				take(Budget{Bytes: int64(rl.Cur) - vm, Source: "RLIMIT_AS"}, true)
			}
		}
	}
	return best
}

// RSS returns the process's resident set in bytes now (VmRSS of
// /proc/self/status), or 0 where that is not available.
func RSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	v, _ := statusField(data, "VmRSS:")
	return v
}

// PeakRSS returns the process's peak resident set in bytes (VmHWM of
// /proc/self/status), or 0 where that is not available. Under mpirun a
// process is a rank.
func PeakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	v, _ := statusField(data, "VmHWM:")
	return v
}

// AnonRSS returns the process's anonymous resident memory in bytes now
// (RssAnon of /proc/self/status: heap and stacks, not the pages of mapped
// files), or 0 where that is not available.
func AnonRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	v, _ := statusField(data, "RssAnon:")
	return v
}

// The process-wide watch of anonymous memory and of the live heap
// (StartAnonWatch).
var (
	anonPeak  atomic.Int64
	livePeak  atomic.Int64
	anonWatch atomic.Bool
)

// StartAnonWatch starts sampling AnonRSS every interval for the rest of
// the process's life, for PeakAnon; later calls do nothing. The kernel
// keeps no peak of anonymous memory (VmHWM counts mapped files' pages
// too), so a peak between two samples can be missed.
func StartAnonWatch(every time.Duration) {
	if anonWatch.Swap(true) {
		return
	}
	sampleAnon()
	go func() {
		for range time.Tick(every) {
			sampleAnon()
		}
	}()
}

// sampleAnon raises anonPeak to AnonRSS now and livePeak to the heap
// the last collection found live.
func sampleAnon() {
	raise(&anonPeak, AnonRSS())
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		raise(&livePeak, int64(s[0].Value.Uint64()))
	}
}

// raise sets p to v if v is larger.
func raise(p *atomic.Int64, v int64) {
	for {
		old := p.Load()
		if v <= old || p.CompareAndSwap(old, v) {
			return
		}
	}
}

// PeakLiveHeap returns the largest heap that a garbage collection found
// live (runtime/metrics' /gc/heap/live:bytes) among the samples since
// StartAnonWatch, with a sample taken now; 0 without a watch. It is what
// the process needed of its heap, without the garbage the collector lets
// grow up to its soft limit, which PeakAnon counts.
func PeakLiveHeap() int64 {
	if !anonWatch.Load() {
		return 0
	}
	sampleAnon()
	return livePeak.Load()
}

// PeakAnon returns the largest anonymous resident memory sampled since
// StartAnonWatch, with a sample taken now; without a watch, AnonRSS now.
// Under mpirun a process is a rank.
func PeakAnon() int64 {
	if !anonWatch.Load() {
		return AnonRSS()
	}
	sampleAnon()
	return anonPeak.Load()
}

// LocalRanks returns the number of ranks the launcher started on this
// node, from its environment (Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE,
// MPICH's MPI_LOCALNRANKS, Slurm's SLURM_NTASKS_PER_NODE), or 1.
func LocalRanks(getenv func(string) string) int {
	for _, k := range []string{"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"} {
		if n, err := strconv.Atoi(getenv(k)); err == nil && n >= 1 {
			return n
		}
	}
	return 1
}

// ParseMemInfo returns MemAvailable from the contents of /proc/meminfo.
func ParseMemInfo(data []byte) (Budget, bool) {
	v, ok := statusField(data, "MemAvailable:")
	return Budget{Bytes: v, Source: "MemAvailable"}, ok
}

// statusField returns the value of a "Name:  123 kB" line in bytes.
func statusField(data []byte, name string) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == name {
			v, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, false
			}
			if len(f) >= 3 && f[2] == "kB" {
				v <<= 10
			}
			return v, true
		}
	}
	return 0, false
}

// cgroupBudget reads the limit and usage of the memory cgroup named in
// /proc/self/cgroup: v1 (memory.limit_in_bytes, memory.usage_in_bytes
// under /sys/fs/cgroup/memory) or v2 (memory.max, memory.current under
// /sys/fs/cgroup or /sys/fs/cgroup/unified).
func cgroupBudget(procCgroup []byte) (Budget, bool) {
	v1, v2 := ParseProcCgroup(procCgroup)
	if v1 != "" {
		dir := filepath.Join("/sys/fs/cgroup/memory", v1)
		if b, ok := limitLeft(dir, "memory.limit_in_bytes", "memory.usage_in_bytes"); ok {
			b.Source = "cgroup v1 memory.limit_in_bytes " + v1
			return b, true
		}
	}
	if v2 != "" {
		for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
			if b, ok := limitLeft(filepath.Join(root, v2), "memory.max", "memory.current"); ok {
				b.Source = "cgroup v2 memory.max " + v2
				return b, true
			}
		}
	}
	return Budget{}, false
}

// ParseProcCgroup returns the memory cgroup paths of /proc/self/cgroup's
// contents: the v1 hierarchy with the memory controller and the v2 (unified)
// one, "" where absent.
func ParseProcCgroup(data []byte) (v1, v2 string) {
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2 = f[2]
		case strings.Contains(","+f[1]+",", ",memory,"):
			v1 = f[2]
		}
	}
	return v1, v2
}

// limitLeft returns limit − usage from the two files of dir; false if the
// limit is unlimited ("max" or ≥ 2⁶²) or a file cannot be read.
func limitLeft(dir, limitFile, usageFile string) (Budget, bool) {
	limit, ok := readNumber(filepath.Join(dir, limitFile))
	if !ok || limit >= 1<<62 {
		return Budget{}, false
	}
	usage, ok := readNumber(filepath.Join(dir, usageFile))
	if !ok {
		return Budget{}, false
	}
	if stat, err := os.ReadFile(filepath.Join(dir, "memory.stat")); err == nil {
		usage -= min(inactiveFile(stat), usage)
	}
	return Budget{Bytes: max(0, limit-usage)}, true
}

// inactiveFile returns the inactive file-backed bytes of a cgroup's
// memory.stat (total_inactive_file in v1, inactive_file in v2): page cache
// the kernel reclaims before it reaches the limit (the data files read at
// load), which the usage counts but a process can still allocate over,
// as container runtimes reckon the working set. It returns 0 if absent.
func inactiveFile(stat []byte) int64 {
	var v1, v2 int64
	for _, line := range strings.Split(string(stat), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "total_inactive_file":
			v1 = n
		case "inactive_file":
			v2 = n
		}
	}
	if v1 > 0 {
		return v1
	}
	return v2
}

// readNumber reads a file holding one integer ("max" reads as unlimited).
func readNumber(path string) (int64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return math.MaxInt64, true
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// ReleaseMapped tells the kernel that the pages of those buffers that lie
// in a shared file mapping (per /proc/self/maps) are not needed: madvise
// MADV_DONTNEED on the whole pages inside each buffer. The file's pages
// leave the process's resident set and are read again from the page cache
// when touched, so the buffers stay valid. Buffers on the heap, and a
// system without /proc, are left alone; the advice's failure too.
func ReleaseMapped(bufs ...[]byte) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	page := uintptr(syscall.Getpagesize())
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		p := unsafe.Pointer(unsafe.SliceData(b))
		lo := uintptr(p)
		if !FileMapped(maps, uint64(lo), uint64(lo)+uint64(len(b))) {
			continue
		}
		start := (lo + page - 1) &^ (page - 1)
		end := (lo + uintptr(len(b))) &^ (page - 1)
		if end > start {
			_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, start-lo)), end-start), syscall.MADV_DONTNEED)
		}
	}
}

// MappedBytes returns the bytes of those buffers that lie in a shared
// file mapping (per /proc/self/maps; 0 without /proc): memory the kernel
// may reclaim and read again from the file, unlike the heap's.
func MappedBytes(bufs ...[]byte) int64 {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0
	}
	var n int64
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		lo := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
		if FileMapped(maps, lo, lo+uint64(len(b))) {
			n += int64(len(b))
		}
	}
	return n
}

// FileMapped reports whether [lo, hi) lies inside one shared mapping of a
// file in maps, the contents of /proc/PID/maps ("lo-hi perms offset dev
// inode path" per line).
func FileMapped(maps []byte, lo, hi uint64) bool {
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || len(f[1]) < 4 || f[1][3] != 's' || f[4] == "0" {
			continue
		}
		a, b, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(a, 16, 64)
		end, err2 := strconv.ParseUint(b, 16, 64)
		if err1 == nil && err2 == nil && start <= lo && hi <= end {
			return true
		}
	}
	return false
}
