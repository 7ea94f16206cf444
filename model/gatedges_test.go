package model

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// AttendedEdges lists each destination's sources in the block's order
// with the self-loop added where the row lacks it; EdgeDestinations and
// EdgesBySource invert it: every edge once, under its destination and
// under its source, in increasing order.
func TestAttendedEdges(t *testing.T) {
	a := randBlock(rand.New(rand.NewPCG(3, 5)), 30, 45, 6)
	a.Indices[a.Indptr[2]] = 2 // row 2 has its self-loop already
	ptr, src := AttendedEdges(a, nil, []int32(nil))
	for i := range 30 {
		row := a.Row(int64(i))
		got := src[ptr[i]:ptr[i+1]]
		want := make([]int32, 0, len(row)+1)
		for _, j := range row {
			want = append(want, int32(j))
		}
		if !slices.Contains(want, int32(i)) {
			want = append(want, int32(i))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("row %d: sources %v, want %v", i, got, want)
		}
	}
	if ptr[3]-ptr[2] != int32(a.Indptr[3]-a.Indptr[2]) {
		t.Fatal("row 2 got a second self-loop")
	}
	dst := EdgeDestinations(ptr, nil)
	tptr, tedge := EdgesBySource(src, 45, nil, nil)
	seen := make([]bool, len(src))
	for j := range 45 {
		edges := tedge[tptr[j]:tptr[j+1]]
		if !slices.IsSorted(edges) {
			t.Fatalf("source %d: edges %v out of order", j, edges)
		}
		for _, e := range edges {
			if src[e] != int32(j) || seen[e] {
				t.Fatalf("source %d lists edge %d (source %d, seen %v)", j, e, src[e], seen[e])
			}
			seen[e] = true
			if e < ptr[dst[e]] || e >= ptr[dst[e]+1] {
				t.Fatalf("edge %d: destination %d does not hold it", e, dst[e])
			}
		}
	}
	if slices.Contains(seen, false) {
		t.Fatal("an edge is under no source")
	}
}
