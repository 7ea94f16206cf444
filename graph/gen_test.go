package graph

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/internal/rng"
	"gnnmpi/sparse"
)

// genCheckSimple checks that a is a valid square pattern matrix whose rows are
// strictly increasing (sorted, no duplicates) and hold no self-loops, and if
// symmetric that every edge is present in both directions.
func genCheckSimple(t *testing.T, a *sparse.CSR, symmetric bool) {
	t.Helper()
	require.NoError(t, a.Validate())
	require.Equal(t, a.NRows, a.NCols)
	require.Nil(t, a.Values)
	for i := range a.NRows {
		row := a.Row(i)
		for k, j := range row {
			if i == j {
				t.Fatalf("self-loop at %d", i)
			}
			if k > 0 && row[k-1] >= j {
				t.Fatalf("row %d not strictly increasing: %v", i, row)
			}
			if symmetric {
				if _, ok := slices.BinarySearch(a.Row(j), i); !ok {
					t.Fatalf("edge %d→%d has no reverse", i, j)
				}
			}
		}
	}
}

func TestGenPairsToCSR(t *testing.T) {
	// Edges with a duplicate (0,1), a reversed duplicate (1,0), a
	// self-loop (2,2) and unsorted columns in row 3.
	pairs := []uint64{0, 1, 3, 2, 0, 1, 1, 0, 2, 2, 3, 0, 3, 1}
	for _, tc := range []struct {
		name      string
		symmetric bool
		indptr    []int64
		indices   []int64
	}{
		{"directed", false, []int64{0, 1, 2, 2, 5}, []int64{1, 0, 0, 1, 2}},
		{"symmetric", true, []int64{0, 2, 4, 5, 8}, []int64{1, 3, 0, 3, 3, 0, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Split over uneven chunks, as the generators do.
			chunks := [][]uint64{slices.Clone(pairs[:4]), slices.Clone(pairs[4:6]), slices.Clone(pairs[6:])}
			a := genPairsToCSR(4, chunks, tc.symmetric)
			assert.Equal(t, tc.indptr, a.Indptr)
			assert.Equal(t, tc.indices, a.Indices)
			genCheckSimple(t, a, tc.symmetric)
		})
	}
}

func TestScramblerBijective(t *testing.T) {
	for scale := 1; scale <= 14; scale++ {
		s := newScrambler(scale, rng.New(uint64(scale), 99))
		n := uint64(1) << scale
		seen := make([]bool, n)
		for v := range n {
			w := s.apply(v)
			require.Less(t, w, n, "scale %d", scale)
			require.False(t, seen[w], "scale %d: %d hit twice", scale, w)
			seen[w] = true
		}
	}
}

func TestRMATDeterministic(t *testing.T) {
	for _, tc := range []struct {
		name     string
		directed bool
	}{
		{"undirected", false},
		{"directed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultRMAT(12, 8)
			p.Directed = tc.directed
			a, err := RMAT(p)
			require.NoError(t, err)
			b, err := RMAT(p)
			require.NoError(t, err)
			assert.Equal(t, a, b, "same seed")
			p.Seed++
			c, err := RMAT(p)
			require.NoError(t, err)
			assert.NotEqual(t, a.Indices, c.Indices, "different seed")
		})
	}
}

// genWithGOMAXPROCS runs f with runtime.GOMAXPROCS set to p.
func genWithGOMAXPROCS(p int, f func()) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(p))
	f()
}

func TestGeneratorsIndependentOfGOMAXPROCS(t *testing.T) {
	// Scale 13 × 16 has 2^17 edges: two R-MAT chunks, and SBM of 20000
	// vertices has three vertex chunks, so the parallel paths run.
	for _, tc := range []struct {
		name string
		gen  func() (any, error)
	}{
		{"rmat", func() (any, error) { return RMAT(DefaultRMAT(13, 16)) }},
		{"rmat-directed", func() (any, error) {
			p := DefaultRMAT(13, 16)
			p.Directed = true
			return RMAT(p)
		}},
		{"sbm", func() (any, error) { return SBM(DefaultSBM(20000)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want any
			for _, procs := range []int{1, 2, 5} {
				var got any
				var err error
				genWithGOMAXPROCS(procs, func() { got, err = tc.gen() })
				require.NoError(t, err)
				if want == nil {
					want = got
					continue
				}
				require.Equal(t, want, got, "GOMAXPROCS=%d", procs)
			}
		})
	}
}

func TestRMATStructure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scale    int
		ef       int
		directed bool
	}{
		{"scale1", 1, 4, false},
		{"scale5", 5, 16, false},
		{"scale11", 11, 16, false},
		{"scale11-directed", 11, 16, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultRMAT(tc.scale, tc.ef)
			p.Directed = tc.directed
			a, err := RMAT(p)
			require.NoError(t, err)
			require.Equal(t, int64(1)<<tc.scale, a.NRows)
			genCheckSimple(t, a, !tc.directed)
		})
	}
}

// genRMATExpectedEdges returns the expected number of distinct stored entries
// of an R-MAT graph: with m edges drawn independently, a cell of probability
// q is hit at least once with probability 1−(1−q)^m. When undirected, the
// cells (i,j) and (j,i) merge into one edge stored twice. The vertex
// permutation does not change the count.
func genRMATExpectedEdges(p RMATParams) float64 {
	n := 1 << p.Scale
	m := float64(p.EdgeFactor) * float64(n)
	quad := [2][2]float64{{p.A, p.B}, {p.C, 1 - p.A - p.B - p.C}}
	cell := func(i, j int) float64 {
		q := 1.0
		for l := range p.Scale {
			q *= quad[i>>l&1][j>>l&1]
		}
		return q
	}
	var e float64
	for i := range n {
		for j := range n {
			switch {
			case i == j:
			case p.Directed:
				e += 1 - math.Pow(1-cell(i, j), m)
			case i < j:
				e += 2 * (1 - math.Pow(1-cell(i, j)-cell(j, i), m))
			}
		}
	}
	return e
}

func TestRMATEdgeCount(t *testing.T) {
	for _, tc := range []struct {
		name     string
		directed bool
	}{
		{"undirected", false},
		{"directed", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultRMAT(10, 16)
			p.Directed = tc.directed
			want := genRMATExpectedEdges(p)
			// Average over seeds; the count of distinct edges
			// has standard deviation below √want ≈ 150.
			var got float64
			const seeds = 4
			for s := range uint64(seeds) {
				p.Seed = 100 + s
				a, err := RMAT(p)
				require.NoError(t, err)
				got += float64(a.NNZ()) / seeds
			}
			assert.InEpsilon(t, want, got, 0.02, "got: %v want: %v", got, want)
		})
	}
}

func TestRMATSkewed(t *testing.T) {
	a, err := RMAT(DefaultRMAT(14, 16))
	require.NoError(t, err)
	var maxDeg int64
	for i := range a.NRows {
		maxDeg = max(maxDeg, a.Degree(i))
	}
	mean := float64(a.NNZ()) / float64(a.NRows)
	// Graph500 graphs at this scale have hubs of degree in the thousands
	// against a mean near 30.
	assert.Greater(t, float64(maxDeg), 20*mean, "max degree %d mean %.1f", maxDeg, mean)
}

func TestRMATErrors(t *testing.T) {
	ok := DefaultRMAT(10, 16)
	for _, tc := range []struct {
		name string
		edit func(p *RMATParams)
	}{
		{"scale0", func(p *RMATParams) { p.Scale = 0 }},
		{"scale41", func(p *RMATParams) { p.Scale = 41 }},
		{"edgefactor0", func(p *RMATParams) { p.EdgeFactor = 0 }},
		{"edgefactor-overflow", func(p *RMATParams) { p.Scale = 40; p.EdgeFactor = 1 << 23 }},
		{"negative", func(p *RMATParams) { p.B = -0.1 }},
		{"nan", func(p *RMATParams) { p.A = math.NaN() }},
		{"sum", func(p *RMATParams) { p.A, p.B, p.C = 0.5, 0.3, 0.3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			tc.edit(&p)
			a, err := RMAT(p)
			assert.ErrorIs(t, err, ErrGenParams)
			assert.Nil(t, a)
		})
	}
}

func TestGenPoisson(t *testing.T) {
	for _, lambda := range []float64{0, 0.5, 5, 40, 1200} {
		t.Run(fmt.Sprint(lambda), func(t *testing.T) {
			r := rng.New(1, uint64(lambda*10))
			const n = 20000
			var sum, sum2 float64
			for range n {
				x := float64(genPoisson(r, lambda))
				sum += x
				sum2 += x * x
			}
			mean := sum / n
			variance := sum2/n - mean*mean
			// Mean and variance of Poisson(λ) are both λ; the
			// sample mean has standard error √(λ/n).
			assert.InDelta(t, lambda, mean, 5*math.Sqrt(lambda/n)+1e-9)
			assert.InDelta(t, lambda, variance, 0.1*lambda+1e-9)
		})
	}
}

func TestSBMDeterministic(t *testing.T) {
	p := DefaultSBM(5000)
	a, err := SBM(p)
	require.NoError(t, err)
	b, err := SBM(p)
	require.NoError(t, err)
	assert.Equal(t, a, b, "same seed")
	p.Seed++
	c, err := SBM(p)
	require.NoError(t, err)
	assert.NotEqual(t, a.Adj.Indices, c.Adj.Indices, "different seed: edges")
	assert.NotEqual(t, a.Labels, c.Labels, "different seed: labels")
	assert.NotEqual(t, a.Feat.Data, c.Feat.Data, "different seed: features")
	assert.NotEqual(t, a.Splits, c.Splits, "different seed: split")
}

// homophily returns the fraction of stored edges joining equal labels.
func genHomophily(d *Dataset) float64 {
	var same int64
	for i := range d.Adj.NRows {
		for _, j := range d.Adj.Row(i) {
			if d.Labels[i] == d.Labels[j] {
				same++
			}
		}
	}
	return float64(same) / float64(d.Adj.NNZ())
}

func TestSBMStructure(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(p *SBMParams)
	}{
		{"default", func(p *SBMParams) {}},
		{"heterophilous", func(p *SBMParams) { p.Homophily = 0.1; p.Classes = 3 }},
		{"dense", func(p *SBMParams) { p.AvgDegree = 40; p.Homophily = 0.5 }},
		{"one-class", func(p *SBMParams) { p.Classes = 1; p.Homophily = 1 }},
		{"no-features", func(p *SBMParams) { p.Features = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultSBM(20000)
			tc.edit(&p)
			d, err := SBM(p)
			require.NoError(t, err)
			require.NoError(t, d.Validate())
			assert.Equal(t, "sbm", d.Name)
			assert.Equal(t, p.Classes, d.NumClasses)
			assert.Equal(t, p.Features, d.NumFeatures())
			genCheckSimple(t, d.Adj, true)

			// Expected nnz is Nodes·AvgDegree; it is a sum of
			// Poisson stubs with relative standard deviation
			// 1/√(n·d/2) ≈ 0.3%.
			want := float64(p.Nodes) * p.AvgDegree
			assert.InEpsilon(t, want, float64(d.NumEdges()), 0.02, "edges")
			assert.InDelta(t, p.Homophily, genHomophily(d), 0.01, "homophily")

			// Labels roughly uniform.
			count := make([]int64, p.Classes)
			for _, l := range d.Labels {
				count[l]++
			}
			for k, c := range count {
				assert.InEpsilon(t, float64(p.Nodes)/float64(p.Classes), float64(c), 0.1, "class %d", k)
			}
		})
	}
}

func TestSBMSplit(t *testing.T) {
	for _, tc := range []struct {
		name                string
		n                   int64
		train, valid        float64
		nTrain, nValid, nTe int
	}{
		{"default", 1000, 0.6, 0.2, 600, 200, 200},
		{"rounding", 7, 0.5, 0.25, 4, 2, 1},
		{"all-train", 50, 1, 0, 50, 0, 0},
		{"all-test", 50, 0, 0, 0, 0, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultSBM(tc.n)
			p.TrainFrac, p.ValidFrac = tc.train, tc.valid
			d, err := SBM(p)
			require.NoError(t, err)
			require.Equal(t, []string{"random"}, d.SplitNames())
			s := d.Splits["random"]
			assert.Len(t, s.Train, tc.nTrain)
			assert.Len(t, s.Valid, tc.nValid)
			assert.Len(t, s.Test, tc.nTe)
			seen := make([]int, tc.n)
			for _, set := range [][]int64{s.Train, s.Valid, s.Test} {
				assert.True(t, slices.IsSorted(set))
				for _, v := range set {
					seen[v]++
				}
			}
			for v, c := range seen {
				require.Equal(t, 1, c, "vertex %d", v)
			}
		})
	}
}

// genNearestMeanAccuracy fits class means of x on the train vertices and
// returns the accuracy of the nearest-mean rule (a linear classifier, since
// the noise is isotropic) on the test vertices.
func genNearestMeanAccuracy(d *Dataset, x []float32, f int) float64 {
	s := d.Splits["random"]
	mean := make([]float64, d.NumClasses*f)
	count := make([]float64, d.NumClasses)
	for _, v := range s.Train {
		l := int(d.Labels[v])
		count[l]++
		for j := range f {
			mean[l*f+j] += float64(x[int(v)*f+j])
		}
	}
	for l := range d.NumClasses {
		for j := range f {
			mean[l*f+j] /= count[l]
		}
	}
	var correct int
	for _, v := range s.Test {
		best, bestDist := -1, math.Inf(1)
		for l := range d.NumClasses {
			var dist float64
			for j := range f {
				diff := float64(x[int(v)*f+j]) - mean[l*f+j]
				dist += diff * diff
			}
			if dist < bestDist {
				best, bestDist = l, dist
			}
		}
		if best == int(d.Labels[v]) {
			correct++
		}
	}
	return float64(correct) / float64(len(s.Test))
}

func TestSBMFeaturesSeparateClasses(t *testing.T) {
	d, err := SBM(DefaultSBM(20000))
	require.NoError(t, err)
	f := d.NumFeatures()

	// Own features only.
	own := genNearestMeanAccuracy(d, d.Feat.Data, f)

	// Mean of own and neighbours' features: one GCN-style propagation.
	agg := make([]float32, len(d.Feat.Data))
	for i := range d.Adj.NRows {
		row := d.Adj.Row(i)
		dst := agg[i*int64(f) : (i+1)*int64(f)]
		for _, j := range append([]int64{i}, row...) {
			for k, x := range d.Feat.Row(int(j)) {
				dst[k] += x / float32(len(row)+1)
			}
		}
	}
	smoothed := genNearestMeanAccuracy(d, agg, f)
	t.Logf("nearest-mean accuracy: own features %.3f, neighbourhood mean %.3f", own, smoothed)

	chance := 1 / float64(d.NumClasses)
	assert.Greater(t, own, chance+0.25, "features should carry class signal")
	assert.Less(t, own, 0.9, "features alone should not solve the task")
	assert.Greater(t, smoothed, own+0.2, "neighbourhood averaging should help")
}

func TestSBMErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(p *SBMParams)
	}{
		{"nodes", func(p *SBMParams) { p.Nodes = 0 }},
		{"classes", func(p *SBMParams) { p.Classes = 0 }},
		{"degree", func(p *SBMParams) { p.AvgDegree = -1 }},
		{"degree-inf", func(p *SBMParams) { p.AvgDegree = math.Inf(1) }},
		{"homophily", func(p *SBMParams) { p.Homophily = 1.5 }},
		{"features", func(p *SBMParams) { p.Features = -1 }},
		{"signal", func(p *SBMParams) { p.Signal = math.NaN() }},
		{"train", func(p *SBMParams) { p.TrainFrac = -0.1 }},
		{"fractions", func(p *SBMParams) { p.TrainFrac, p.ValidFrac = 0.7, 0.4 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultSBM(100)
			tc.edit(&p)
			d, err := SBM(p)
			assert.ErrorIs(t, err, ErrGenParams)
			assert.Nil(t, d)
		})
	}
}

func BenchmarkRMAT(b *testing.B) {
	for _, scale := range []int{16, 20} {
		p := DefaultRMAT(scale, 16)
		b.Run(fmt.Sprintf("scale=%d/ef=16", scale), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := RMAT(p); err != nil {
					b.Fatal(err)
				}
			}
			edges := float64(int64(p.EdgeFactor) << p.Scale)
			b.ReportMetric(edges*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
		})
	}
}

func BenchmarkSBM(b *testing.B) {
	for _, n := range []int64{1e5, 1e6} {
		p := DefaultSBM(n)
		b.Run(fmt.Sprintf("n=%.0e/d=10/f=32", float64(n)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := SBM(p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*p.AvgDegree/2*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
		})
	}
}

func ExampleRMAT() {
	// A Graph500-style graph with 2^10 vertices and 16·2^10 drawn edges.
	a, err := RMAT(DefaultRMAT(10, 16))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("vertices:", a.NRows)
	fmt.Println("symmetric entries ≤ 2·drawn edges:", a.NNZ() <= 2*16<<10)
	// Output:
	// vertices: 1024
	// symmetric entries ≤ 2·drawn edges: true
}

func ExampleSBM() {
	p := DefaultSBM(10000)
	p.Classes = 4
	d, err := SBM(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := d.Splits["random"]
	fmt.Println(d.Name, d.NumNodes, "vertices,", d.NumClasses, "classes,", d.NumFeatures(), "features")
	fmt.Println("train/valid/test:", len(s.Train), len(s.Valid), len(s.Test))
	// Output:
	// sbm 10000 vertices, 4 classes, 32 features
	// train/valid/test: 6000 2000 2000
}

// Planted keeps the adjacency and draws labels, features and split as SBM
// does for the same parameters.
func TestPlanted(t *testing.T) {
	adj, err := RMAT(DefaultRMAT(9, 4))
	require.NoError(t, err)
	p := DefaultSBM(0)
	p.Classes, p.Features, p.TrainFrac, p.ValidFrac = 5, 12, 0.1, 0.05
	d, err := Planted("rm", adj, p)
	require.NoError(t, err)
	require.NoError(t, d.Validate())
	require.Same(t, adj, d.Adj)
	require.Equal(t, adj.NRows, d.NumNodes)
	require.Equal(t, 12, d.Feat.Cols)
	require.Equal(t, 5, d.NumClasses)
	s := d.Splits["random"]
	require.Len(t, s.Train, int(math.Round(0.1*float64(adj.NRows))))
	require.Len(t, s.Valid, int(math.Round(0.05*float64(adj.NRows))))
	p.Nodes = adj.NRows
	want, err := SBM(p)
	require.NoError(t, err)
	require.Equal(t, want.Labels, d.Labels, "labels drawn as SBM draws them")
	require.Equal(t, want.Feat.Data, d.Feat.Data)
	_, err = Planted("bad", &sparse.CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 0, 0}}, p)
	require.ErrorIs(t, err, ErrGenParams)
}
