package memlimit

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseMemInfo(t *testing.T) {
	b, ok := ParseMemInfo([]byte("MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   2048 kB\n"))
	require.True(t, ok)
	require.Equal(t, int64(2048<<10), b.Bytes)
	_, ok = ParseMemInfo([]byte("MemTotal: 1 kB\n"))
	require.False(t, ok)
}

func TestParseProcCgroup(t *testing.T) {
	v1, v2 := ParseProcCgroup([]byte("9:name=systemd:/\n4:memory:/job/rank1\n3:cpuset:/\n0::/user.slice\n"))
	require.Equal(t, "/job/rank1", v1)
	require.Equal(t, "/user.slice", v2)
	v1, v2 = ParseProcCgroup([]byte("0::/only.v2\n"))
	require.Equal(t, "", v1)
	require.Equal(t, "/only.v2", v2)
	v1, _ = ParseProcCgroup([]byte("5:cpu,memory:/both\n"))
	require.Equal(t, "/both", v1)
}

func TestLimitLeft(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		require.NoError(t, os.WriteFile(dir+"/"+name, []byte(s), 0o644))
	}
	write("memory.max", "1000\n")
	write("memory.current", "300\n")
	b, ok := limitLeft(dir, "memory.max", "memory.current")
	require.True(t, ok)
	require.Equal(t, int64(700), b.Bytes)
	write("memory.max", "max\n")
	_, ok = limitLeft(dir, "memory.max", "memory.current")
	require.False(t, ok, "an unlimited cgroup is no bound")
	write("memory.max", "200\n")
	b, _ = limitLeft(dir, "memory.max", "memory.current")
	require.Equal(t, int64(0), b.Bytes, "usage above the limit leaves nothing")

	// Inactive page cache is reclaimable: it does not count as used.
	write("memory.max", "1000\n")
	write("memory.stat", "anon 100\nfile 200\nactive_file 80\ninactive_file 120\n")
	b, _ = limitLeft(dir, "memory.max", "memory.current")
	require.Equal(t, int64(1000-(300-120)), b.Bytes)
	write("memory.stat", "cache 200\ninactive_file 20\ntotal_cache 200\ntotal_inactive_file 150\n")
	b, _ = limitLeft(dir, "memory.max", "memory.current")
	require.Equal(t, int64(1000-(300-150)), b.Bytes, "v1: the hierarchy's total")
	write("memory.stat", "total_inactive_file 500\n")
	b, _ = limitLeft(dir, "memory.max", "memory.current")
	require.Equal(t, int64(1000), b.Bytes, "never below no usage")
}

// Available always answers: on this machine at least MemAvailable.
func TestAvailable(t *testing.T) {
	b := Available()
	require.Positive(t, b.Bytes)
	require.NotEmpty(t, b.Source)
	require.Contains(t, b.String(), "GiB")
}

// The peak resident set of a running test is positive and at least what
// it touches.
func TestPeakRSS(t *testing.T) {
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = 1
	}
	require.GreaterOrEqual(t, PeakRSS(), int64(len(b)))
	_ = b[len(b)-1]
}

func TestLocalRanks(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	require.Equal(t, 1, LocalRanks(env(nil)))
	require.Equal(t, 4, LocalRanks(env(map[string]string{"OMPI_COMM_WORLD_LOCAL_SIZE": "4"})))
	require.Equal(t, 3, LocalRanks(env(map[string]string{"MPI_LOCALNRANKS": "3"})))
	require.Equal(t, 8, LocalRanks(env(map[string]string{"SLURM_NTASKS_PER_NODE": "8"})))
	require.Equal(t, 1, LocalRanks(env(map[string]string{"OMPI_COMM_WORLD_LOCAL_SIZE": "x"})))
}

// FileMapped finds a range inside a shared file mapping only; an
// anonymous or private mapping, or a range crossing a mapping's end, is
// not one.
func TestFileMapped(t *testing.T) {
	maps := []byte("7f0000000000-7f0000004000 r--s 00000000 08:01 1234 /data/x.gnn\n" +
		"7f0000004000-7f0000008000 rw-p 00000000 00:00 0 \n" +
		"7f0000008000-7f000000c000 r--p 00000000 08:01 99 /lib/libc.so\n")
	for _, tc := range []struct {
		lo, hi uint64
		want   bool
	}{
		{0x7f0000000100, 0x7f0000003000, true},
		{0x7f0000000100, 0x7f0000004100, false}, // crosses the end
		{0x7f0000004100, 0x7f0000005000, false}, // anonymous
		{0x7f0000008100, 0x7f0000009000, false}, // private
	} {
		if got := FileMapped(maps, tc.lo, tc.hi); got != tc.want {
			t.Errorf("FileMapped(%#x, %#x) = %v, want %v", tc.lo, tc.hi, got, tc.want)
		}
	}
}

// TestReleaseMapped requires MappedBytes to count a file mapping's
// buffer and not a heap buffer, and ReleaseMapped to leave a shared file
// mapping's contents readable and heap memory untouched.
func TestReleaseMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows")
	want := bytes.Repeat([]byte("gnnmpi rows "), 4096)
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, len(want), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Skip("mmap:", err)
	}
	defer syscall.Munmap(m)
	heap := append([]byte(nil), want...)
	assert.Equal(t, int64(len(m)-100+10), MappedBytes(m[100:], heap, nil, m[:10]), "the mapped buffers count, the heap's and nil do not")
	ReleaseMapped(m, heap)
	if !bytes.Equal(m, want) || !bytes.Equal(heap, want) {
		t.Fatal("ReleaseMapped changed the buffers' contents")
	}
}

// TestPeakAnon requires the watched peak to cover a buffer of 64 MiB
// touched while watching and released before PeakAnon, and no sample
// above the resident set's peak; and a live heap's peak, once the
// collector has run, within the anonymous peak.
func TestPeakAnon(t *testing.T) {
	if AnonRSS() == 0 {
		t.Skip("no RssAnon in /proc/self/status")
	}
	base := AnonRSS()
	StartAnonWatch(time.Millisecond)
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	time.Sleep(20 * time.Millisecond)
	runtime.KeepAlive(buf)
	buf = nil
	runtime.GC()
	peak := PeakAnon()
	assert.GreaterOrEqual(t, peak, base+60<<20, "the buffer was resident while watched")
	assert.LessOrEqual(t, peak, PeakRSS())
	live := PeakLiveHeap()
	assert.Greater(t, live, int64(0), "collections ran while watched")
	assert.LessOrEqual(t, live, peak+(8<<20), "the live heap is resident memory")
}
