package collective

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Hand-computed volumes of small cases.
func TestVolumes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sent, recv int64
		wantS      int64
		wantR      int64
	}{
		// p = 4, 10 float64: blocks 3,3,2,2. Rank 0 sends 10−3 = 7 elements in
		// reduce-scatter and 3·3 = 9 in allgather: 16·8 = 128 bytes.
		{"allreduce r0", first(AllreduceVolume(0, 4, 10, 8)), second(AllreduceVolume(0, 4, 10, 8)), 128, 128},
		// Rank 3: block 2: (10−2) + 3·2 = 14 elements = 112 bytes.
		{"allreduce r3", first(AllreduceVolume(3, 4, 10, 8)), second(AllreduceVolume(3, 4, 10, 8)), 112, 112},
		{"allreduce p=1", first(AllreduceVolume(0, 1, 10, 8)), second(AllreduceVolume(0, 1, 10, 8)), 0, 0},
		// Root of p = 3 sends 100 bytes twice.
		{"bcast root", first(BcastVolume(1, 1, 3, 100)), second(BcastVolume(1, 1, 3, 100)), 200, 0},
		{"bcast leaf", first(BcastVolume(0, 1, 3, 100)), second(BcastVolume(0, 1, 3, 100)), 0, 100},
		// counts 2,0,5 of int32 at rank 2: sends 5·4 to two ranks, receives 2·4.
		{"allgatherv", first(AllgathervVolume(2, []int{2, 0, 5}, 4)), second(AllgathervVolume(2, []int{2, 0, 5}, 4)), 40, 8},
		// Self part (index 1) excluded.
		{"alltoallv", first(AlltoallvVolume(1, []int{1, 9, 2}, []int{3, 9, 0}, 8)), second(AlltoallvVolume(1, []int{1, 9, 2}, []int{3, 9, 0}, 8)), 24, 24},
		{"split p=4", first(SplitVolume(4)), second(SplitVolume(4)), 48, 48},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.wantS, tc.sent)
			require.Equal(t, tc.wantR, tc.recv)
		})
	}
}

func first(a, _ int64) int64  { return a }
func second(_, b int64) int64 { return b }

func TestSnapshotSubAndPhases(t *testing.T) {
	s := NewStats()
	s.Add(OpAllreduce, 10, 10, 0)
	before := s.Snapshot()
	prev := s.SetPhase("fetch")
	require.Equal(t, DefaultPhase, prev)
	s.Add(OpAlltoallv, 5, 7, 0)
	s.Add(OpAlltoallv, 1, 1, 0)
	d := s.Snapshot().Sub(before)
	require.Equal(t, []string{"fetch"}, d.Phases())
	require.Equal(t, Count{Calls: 2, SentBytes: 6, RecvBytes: 8}, d.Phase("fetch"))
	require.Equal(t, int64(16), s.Snapshot().Total().SentBytes)
}

func TestBufOf(t *testing.T) {
	type label int32
	type weight float32
	type half uint16
	for _, tc := range []struct {
		b    Buf
		t    DType
		n    int
		size int64
	}{
		{BufOf([]byte{1, 2}), Byte, 2, 2},
		{BufOf([]int32{1}), Int32, 1, 4},
		{BufOf([]int64{1, 2, 3}), Int64, 3, 24},
		{BufOf([]float32{1}), Float32, 1, 4},
		{BufOf([]float64{}), Float64, 0, 0},
		{BufOf([]label{1, 2}), Int32, 2, 8},
		{BufOf([]weight{1}), Float32, 1, 4},
		{BufOf([]uint16{1, 2, 3}), Uint16, 3, 6},
		{BufOf([]half{1}), Uint16, 1, 2},
	} {
		require.Equal(t, tc.t, tc.b.DType())
		require.Equal(t, tc.n, tc.b.Len())
		require.Equal(t, tc.size, tc.b.Bytes())
	}
	x := []int64{1, 2, 3, 4}
	require.Equal(t, 16, len(BufOf(x).Slice(1, 3).Raw()))
	require.Nil(t, BufOf(x).Slice(2, 2).Ptr())
}
