package graph

import (
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/npy"
)

// TestWritePapers checks that the directory WritePapers streams loads as
// the graph Papers builds in memory, and as WriteOGBBinary's copy of it.
func TestWritePapers(t *testing.T) {
	base := DefaultPapers(3*sbmChunkVertices + 123)
	base.Classes = 7
	base.Features = 6
	base.TrainFrac, base.ValidFrac, base.TestFrac = 0.05, 0.01, 0.02
	half := base
	half.Half = true
	bare := base
	bare.Features = 0
	bare.Degree = 0
	one := base
	one.Classes = 1
	one.Homophily = 0.5
	for _, tc := range []struct {
		name string
		p    PapersParams
	}{{"f32", base}, {"f16", half}, {"no features or edges", bare}, {"one class", one}} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := Papers(tc.p)
			require.NoError(t, err)
			require.NoError(t, want.Validate())
			streamed, copied := t.TempDir(), t.TempDir()
			require.NoError(t, WritePapers(streamed, tc.p))
			require.NoError(t, WriteOGBBinary(copied, want, false))
			for _, dir := range []string{streamed, copied} {
				got, err := Load(dir, ReadOptions{})
				require.NoError(t, err)
				assert.Equal(t, want.NumNodes, got.NumNodes)
				assert.Equal(t, want.Adj.Indptr, got.Adj.Indptr)
				assert.Equal(t, want.Adj.Indices, got.Adj.Indices)
				assert.Equal(t, want.Feat, got.Feat)
				assert.Equal(t, want.Labels, got.Labels)
				assert.Equal(t, want.Splits, got.Splits)
			}
			// The entries are stored, so they are mapped on read, and
			// features keep their dtype.
			z, err := npy.OpenArchive(filepath.Join(streamed, "raw", npzData))
			require.NoError(t, err)
			defer z.Close()
			a, err := z.Open(npzEdges)
			require.NoError(t, err)
			assert.True(t, a.Mapped())
			require.NoError(t, a.Close())
			if tc.p.Features > 0 {
				a, err := z.Open(npzFeat)
				require.NoError(t, err)
				want := npy.Float32Type
				if tc.p.Half {
					want = npy.Float16Type
				}
				assert.Equal(t, want, a.DType)
				require.NoError(t, a.Close())
			}
		})
	}
}

// TestPapersShape checks the generator's distributions: out-degree,
// homophily, class of each labelled vertex, and the time-like split.
func TestPapersShape(t *testing.T) {
	p := DefaultPapers(40000)
	p.Classes = 10
	p.Features = 0
	p.TrainFrac, p.ValidFrac, p.TestFrac = 0.1, 0.05, 0.05
	d, err := Papers(p)
	require.NoError(t, err)
	n := float64(p.Nodes)
	m := float64(d.Adj.NNZ())
	assert.InEpsilon(t, p.Degree, m/n, 0.02)
	var intra float64
	for u := range d.NumNodes {
		for _, v := range d.Adj.Indices[d.Adj.Indptr[u]:d.Adj.Indptr[u+1]] {
			require.NotEqual(t, u, v, "self-loop")
			if u%int64(p.Classes) == v%int64(p.Classes) {
				intra++
			}
		}
	}
	assert.InDelta(t, p.Homophily, intra/m, 0.01)
	s := d.Splits["time"]
	for k, tc := range []struct {
		ids  []int64
		frac float64
	}{{s.Train, p.TrainFrac}, {s.Valid, p.ValidFrac}, {s.Test, p.TestFrac}} {
		assert.InEpsilon(t, tc.frac*n, float64(len(tc.ids)), 0.1, "set %d", k)
		assert.True(t, slices.IsSorted(tc.ids))
		for _, u := range tc.ids {
			assert.Equal(t, int32(u%int64(p.Classes)), d.Labels[u])
		}
	}
	assert.Less(t, s.Train[len(s.Train)-1], s.Valid[0])
	assert.Less(t, s.Valid[len(s.Valid)-1], s.Test[0])
	var labelled int
	for _, l := range d.Labels {
		if l != Unlabelled {
			labelled++
		}
	}
	assert.Equal(t, len(s.Train)+len(s.Valid)+len(s.Test), labelled)
}

// TestWritePapersMemory checks that WritePapers holds pieces, not the
// graph: at GOMAXPROCS 1 its allocations stay below a bound far under the
// 16·E bytes of the edge array and the 4·n·f of the features.
func TestWritePapersMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 8M edges")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := DefaultPapers(1 << 19)
	p.Features = 16
	p.Degree = 16
	dir := t.TempDir()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	require.NoError(t, WritePapers(dir, p))
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	edgeBytes := 16 * uint64(p.Degree) * uint64(p.Nodes)
	featBytes := 4 * uint64(p.Features) * uint64(p.Nodes)
	// One piece's edges (with slack) and features (float32 and the
	// encoded copy), the archive and gzip writers' buffers (1 MiB each, 5
	// files), and the compressors' state.
	piece := uint64(sbmChunkVertices) * (2*16*uint64(p.Degree+1) + 6*uint64(p.Features))
	bound := piece + 12<<20
	t.Logf("allocated %d bytes; bound %d; edge array %d, features %d", alloc, bound, edgeBytes, featBytes)
	assert.Less(t, alloc, bound)
	assert.Less(t, bound, (edgeBytes+featBytes)/4)
}
