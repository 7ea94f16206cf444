package graph

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"gnnmpi/dense"
	"gnnmpi/internal/rng"
	"gnnmpi/sparse"
)

// Stream ids under a generator's seed. Chunk streams have the form
// (genStreamX, chunk) so that they never coincide with another generator
// stage's stream.
const (
	genStreamRMATEdges = iota + 1
	genStreamRMATPerm
	genStreamSBMLabels
	genStreamSBMCentroids
	genStreamSBMEdges
	genStreamSBMFeatures
	genStreamSBMSplit
)

// Fixed work-chunk sizes of the generators. The output depends on them (each
// chunk has its own random stream) but not on the number of goroutines, so
// changing them changes every generated graph.
const (
	rmatChunkEdges   = 1 << 16
	sbmChunkVertices = 1 << 13
)

// ErrGenParams is wrapped by the errors the generators return for invalid
// parameters.
var ErrGenParams = errors.New("graph: invalid generator parameters")

// RMATParams are the parameters of an R-MAT (recursive matrix) graph.
//
// The graph has 2^Scale vertices. EdgeFactor·2^Scale edges are drawn, each by
// descending Scale levels of the adjacency matrix and picking at each level
// the top-left, top-right, bottom-left or bottom-right quadrant with
// probability A, B, C and D = 1−A−B−C.
type RMATParams struct {
	Scale, EdgeFactor int
	A, B, C           float64
	Seed              uint64
	// Directed keeps the drawn edges as they are; otherwise the graph is
	// made symmetric.
	Directed bool
}

// DefaultRMAT returns the Graph500 parameters for scale and edgefactor:
// A=0.57, B=0.19, C=0.19 (so D=0.05), undirected, seed 1.
func DefaultRMAT(scale, edgefactor int) RMATParams {
	return RMATParams{
		Scale:      scale,
		EdgeFactor: edgefactor,
		A:          0.57,
		B:          0.19,
		C:          0.19,
		Seed:       1,
	}
}

// validate checks p and returns the number of edges to draw.
func (p RMATParams) validate() (int64, error) {
	if p.Scale < 1 || p.Scale > 40 {
		return 0, fmt.Errorf("%w: R-MAT scale %d outside [1,40]", ErrGenParams, p.Scale)
	}
	// Twice the edge count must fit an int64 (the edge list holds both
	// endpoints).
	if p.EdgeFactor < 1 || int64(p.EdgeFactor) > math.MaxInt64>>(p.Scale+1) {
		return 0, fmt.Errorf("%w: R-MAT edge factor %d outside [1,2^%d)", ErrGenParams, p.EdgeFactor, 62-p.Scale)
	}
	for _, x := range []float64{p.A, p.B, p.C} {
		if !(x >= 0 && x <= 1) {
			return 0, fmt.Errorf("%w: R-MAT probabilities A=%v B=%v C=%v not in [0,1]", ErrGenParams, p.A, p.B, p.C)
		}
	}
	// Allow for rounding in parameters such as 0.57+0.19+0.19+0.05.
	if p.A+p.B+p.C > 1+1e-9 {
		return 0, fmt.Errorf("%w: R-MAT probabilities A+B+C=%v > 1", ErrGenParams, p.A+p.B+p.C)
	}
	return int64(p.EdgeFactor) << p.Scale, nil
}

// RMAT returns an R-MAT graph in the style of the Graph500 Kronecker
// generator: EdgeFactor·2^Scale edges are drawn by recursive quadrant choice,
// vertex ids are relabelled by a seeded pseudo-random permutation (so that
// vertex id says nothing about degree), self-loops and duplicate edges are
// dropped and, unless p.Directed, every edge is stored in both directions.
//
// The result is a 2^Scale × 2^Scale pattern CSR (nil Values) whose rows are
// sorted and free of duplicates. It depends only on p, not on GOMAXPROCS:
// edges are drawn in fixed chunks of 2^16, chunk i from the stream
// rng.New(p.Seed, 1, i). Quadrant probabilities are resolved to 2^-32.
//
// RMAT returns an error wrapping ErrGenParams if Scale is outside [1, 40],
// EdgeFactor < 1 or too large, or A, B, C are not probabilities with
// A+B+C ≤ 1. Its peak memory is the edge list (8 bytes per drawn edge for
// Scale ≤ 32, 16 above) plus 8 bytes per stored entry before deduplication.
func RMAT(p RMATParams) (*sparse.CSR, error) {
	m, err := p.validate()
	if err != nil {
		return nil, err
	}
	if p.Scale <= 32 {
		return rmat[uint32](p, m), nil
	}
	return rmat[uint64](p, m), nil
}

// rmat draws the m edges of p into pairs of T and builds the CSR.
func rmat[T uint32 | uint64](p RMATParams, m int64) *sparse.CSR {
	const one = 1 << 32
	clamp := func(x float64) uint64 { return uint64(min(x, 1) * one) }
	tA := clamp(p.A)
	tAB := clamp(p.A + p.B)
	tABC := clamp(p.A + p.B + p.C)
	perm := newScrambler(p.Scale, rng.New(p.Seed, genStreamRMATPerm, 0))

	nchunks := int((m + rmatChunkEdges - 1) / rmatChunkEdges)
	chunks := make([][]T, nchunks)
	genParallel(nchunks, func(c int) {
		lo := int64(c) * rmatChunkEdges
		cnt := min(m-lo, rmatChunkEdges)
		r := rng.New(p.Seed, genStreamRMATEdges, uint64(c))
		e := make([]T, 2*cnt)
		for k := range cnt {
			var u, v uint64
			var x uint64
			for l := 0; l < p.Scale; l++ {
				// Two 32-bit uniforms per 64-bit draw.
				if l&1 == 0 {
					x = r.Uint64()
				} else {
					x >>= 32
				}
				t := x & (one - 1)
				// Quadrant: [0,A) top-left, [A,A+B) top-right,
				// [A+B,A+B+C) bottom-left, else bottom-right.
				ge1, ge2, ge3 := genB2U(t >= tA), genB2U(t >= tAB), genB2U(t >= tABC)
				u = u<<1 | ge2
				v = v<<1 | (ge1 ^ ge2 ^ ge3)
			}
			e[2*k] = T(perm.apply(u))
			e[2*k+1] = T(perm.apply(v))
		}
		chunks[c] = e
	})
	return genPairsToCSR(int64(1)<<p.Scale, chunks, !p.Directed)
}

// genB2U converts a bool to 0 or 1; the compiler makes it branch-free.
func genB2U(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// scrambler is a seeded bijection of [0, 2^scale), after Graph500's scramble:
// on the low scale bits, adding a constant and multiplying by an odd constant
// are bijections, and so is bit reversal of those bits; two rounds mix high
// and low bits.
type scrambler struct {
	shift          uint
	k0, k1, m0, m1 uint64
}

func newScrambler(scale int, r *rand.Rand) scrambler {
	return scrambler{
		shift: uint(64 - scale),
		k0:    r.Uint64(),
		k1:    r.Uint64(),
		m0:    r.Uint64() | 1,
		m1:    r.Uint64() | 1,
	}
}

func (s scrambler) apply(v uint64) uint64 {
	v = bits.Reverse64((v+s.k0)*s.m0) >> s.shift
	return bits.Reverse64((v+s.k1)*s.m1) >> s.shift
}

// SBMParams are the parameters of a planted-partition stochastic block model
// with class-correlated features; see SBM.
type SBMParams struct {
	Nodes     int64
	Classes   int
	AvgDegree float64 // expected degree of a vertex
	Homophily float64 // expected fraction of a vertex's edges inside its class
	Features  int     // feature dimension; 0 for no features
	Signal    float64 // scale of the class centroid in the features
	TrainFrac float64 // fraction of vertices in the train set
	ValidFrac float64 // fraction of vertices in the validation set
	Seed      uint64
}

// DefaultSBM returns SBM parameters for a graph of the given size: 8 classes,
// average degree 10, homophily 0.8, 32 features with signal 0.25 and a
// 60/20/20 train/valid/test split, seed 1.
//
// With these values a linear classifier on a vertex's own features reaches
// about 50% accuracy (chance is 12.5%), and averaging features over the
// closed neighbourhood, as one GCN layer does, brings it above 90%.
func DefaultSBM(nodes int64) SBMParams {
	return SBMParams{
		Nodes:     nodes,
		Classes:   8,
		AvgDegree: 10,
		Homophily: 0.8,
		Features:  32,
		Signal:    0.25,
		TrainFrac: 0.6,
		ValidFrac: 0.2,
		Seed:      1,
	}
}

func (p SBMParams) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: SBM "+format, append([]any{ErrGenParams}, args...)...)
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	unit := func(x float64) bool { return x >= 0 && x <= 1 }
	switch {
	case p.Nodes < 1:
		return bad("nodes %d < 1", p.Nodes)
	case p.Classes < 1 || p.Classes > math.MaxInt32:
		return bad("classes %d outside [1,2^31)", p.Classes)
	case !finite(p.AvgDegree) || p.AvgDegree < 0:
		return bad("average degree %v", p.AvgDegree)
	case !unit(p.Homophily):
		return bad("homophily %v outside [0,1]", p.Homophily)
	case p.Features < 0:
		return bad("features %d < 0", p.Features)
	case p.Features > 0 && p.Nodes > math.MaxInt/int64(p.Features):
		return bad("%d×%d features too many", p.Nodes, p.Features)
	case !finite(p.Signal) || p.Signal < 0:
		return bad("signal %v", p.Signal)
	case !unit(p.TrainFrac) || !unit(p.ValidFrac) || p.TrainFrac+p.ValidFrac > 1+1e-9:
		return bad("split fractions train=%v valid=%v", p.TrainFrac, p.ValidFrac)
	}
	return nil
}

// SBM returns a planted-partition stochastic block model named "sbm".
//
// Labels are uniform over p.Classes. Each vertex u draws Poisson(AvgDegree/2)
// edge stubs; each stub joins u to a uniformly chosen other vertex of u's
// class with probability Homophily and otherwise to a uniformly chosen
// vertex of another class. Edges are stored in both directions with
// self-loops and duplicates removed, so a vertex's expected degree is
// AvgDegree and the expected fraction of edges inside a class is Homophily
// (up to the rare duplicates, and intra-class stubs of a vertex alone in its
// class, or inter-class stubs when there is one class, which are dropped).
// Generation takes O(Nodes + edges) time.
//
// Features are float32: row u is Signal·c + z, where c is u's class centroid,
// a random ±1 vector per class, and z is standard normal noise. The split
// "random" holds disjoint ascending Train, Valid and Test sets of
// round(TrainFrac·Nodes), round(ValidFrac·Nodes) and the remaining vertices.
// NumClasses is p.Classes even if some class happens to be empty.
//
// The result depends only on p, not on GOMAXPROCS. SBM returns an error
// wrapping ErrGenParams for invalid parameters.
func SBM(p SBMParams) (*Dataset, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	n := p.Nodes
	cl := sbmDrawClasses(p)
	return &Dataset{
		Name:       "sbm",
		NumNodes:   n,
		Adj:        sbmEdges(p, cl),
		Feat:       sbmFeatures(p, cl.labels),
		Labels:     cl.labels,
		NumClasses: p.Classes,
		Splits:     map[string]Split{"random": genRandomSplit(n, p.TrainFrac, p.ValidFrac, rng.New(p.Seed, genStreamSBMSplit, 0))},
	}, nil
}

// Planted returns the dataset of the square adj with labels, features and
// the split "random" drawn as SBM draws them from p (p.Nodes is taken from
// adj; AvgDegree and Homophily are not used): for generated graphs without
// their own, such as R-MAT, so that the trainers can run on them. The
// labels do not follow the edges, so only the features carry the class.
// It returns an error wrapping ErrGenParams for invalid parameters.
func Planted(name string, adj *sparse.CSR, p SBMParams) (*Dataset, error) {
	if adj.NRows != adj.NCols {
		return nil, fmt.Errorf("%w: planted labels on a %d×%d adjacency", ErrGenParams, adj.NRows, adj.NCols)
	}
	p.Nodes = adj.NRows
	if err := p.validate(); err != nil {
		return nil, err
	}
	cl := sbmDrawClasses(p)
	return &Dataset{
		Name:       name,
		NumNodes:   p.Nodes,
		Adj:        adj,
		Feat:       sbmFeatures(p, cl.labels),
		Labels:     cl.labels,
		NumClasses: p.Classes,
		Splits:     map[string]Split{"random": genRandomSplit(p.Nodes, p.TrainFrac, p.ValidFrac, rng.New(p.Seed, genStreamSBMSplit, 0))},
	}, nil
}

// sbmChunks returns the number of chunks of sbmChunkVertices vertices that
// n vertices fill. Each chunk draws from its own random stream, so that
// chunks can be generated in parallel.
func sbmChunks(n int64) int { return int((n + sbmChunkVertices - 1) / sbmChunkVertices) }

// sbmChunk returns the vertex range [lo, hi) of chunk c of n vertices.
func sbmChunk(c int, n int64) (lo, hi int64) {
	lo = int64(c) * sbmChunkVertices
	return lo, min(lo+sbmChunkVertices, n)
}

// sbmClasses is the planted partition of an SBM graph.
type sbmClasses struct {
	labels  []int32 // the class of each vertex
	off     []int64 // class k's vertices are members[off[k]:off[k+1]]
	members []int64 // the vertices grouped by class, ascending within a class
}

// sbmDrawClasses draws the class of each of the p.Nodes vertices uniformly
// and groups the vertices by class.
func sbmDrawClasses(p SBMParams) sbmClasses {
	n := p.Nodes
	labels := make([]int32, n)
	genParallel(sbmChunks(n), func(c int) {
		r := rng.New(p.Seed, genStreamSBMLabels, uint64(c))
		lo, hi := sbmChunk(c, n)
		for i := lo; i < hi; i++ {
			labels[i] = int32(r.IntN(p.Classes))
		}
	})
	off := make([]int64, p.Classes+1)
	for _, l := range labels {
		off[l+1]++
	}
	for k := 0; k < p.Classes; k++ {
		off[k+1] += off[k]
	}
	members := make([]int64, n)
	fill := slices.Clone(off[:p.Classes])
	for i, l := range labels {
		members[fill[l]] = int64(i)
		fill[l]++
	}
	return sbmClasses{labels: labels, off: off, members: members}
}

// sbmEdges draws the edge stubs of every vertex (see SBM) and returns the
// symmetric adjacency without self-loops or duplicates.
func sbmEdges(p SBMParams, cl sbmClasses) *sparse.CSR {
	n := p.Nodes
	half := p.AvgDegree / 2
	nchunks := sbmChunks(n)
	chunks := make([][]uint64, nchunks)
	genParallel(nchunks, func(c int) {
		r := rng.New(p.Seed, genStreamSBMEdges, uint64(c))
		lo, hi := sbmChunk(c, n)
		e := make([]uint64, 0, int(2*half*float64(hi-lo)*1.1)+16)
		for u := lo; u < hi; u++ {
			k := cl.labels[u]
			off, size := cl.off[k], cl.off[k+1]-cl.off[k]
			for s := genPoisson(r, half); s > 0; s-- {
				var v int64
				if r.Float64() < p.Homophily {
					if size < 2 {
						continue
					}
					for v = u; v == u; {
						v = cl.members[off+r.Int64N(size)]
					}
				} else {
					if n == size {
						continue
					}
					j := r.Int64N(n - size)
					if j >= off {
						j += size
					}
					v = cl.members[j]
				}
				e = append(e, uint64(u), uint64(v))
			}
		}
		chunks[c] = e
	})
	return genPairsToCSR(n, chunks, true)
}

// sbmFeatures returns the p.Nodes×p.Features feature matrix of vertices of
// the given classes (see SBM), or nil when p.Features is 0.
func sbmFeatures(p SBMParams, labels []int32) *dense.Matrix {
	f := p.Features
	if f <= 0 {
		return nil
	}
	cr := rng.New(p.Seed, genStreamSBMCentroids, 0)
	centroid := make([]float32, p.Classes*f)
	for i := range centroid {
		centroid[i] = float32(p.Signal)
		if cr.Uint64()&1 == 0 {
			centroid[i] = -centroid[i]
		}
	}
	n := p.Nodes
	feat := dense.New(int(n), f)
	genParallel(sbmChunks(n), func(c int) {
		r := rng.New(p.Seed, genStreamSBMFeatures, uint64(c))
		lo, hi := sbmChunk(c, n)
		for i := lo; i < hi; i++ {
			row := feat.Data[i*int64(f) : (i+1)*int64(f)]
			cen := centroid[int(labels[i])*f : (int(labels[i])+1)*f]
			for j := range row {
				row[j] = cen[j] + float32(r.NormFloat64())
			}
		}
	})
	return feat
}

// genRandomSplit deals a random permutation of [0, n) into train, valid and
// test sets of round(train·n), round(valid·n) and the remaining vertices,
// each returned in ascending order.
func genRandomSplit(n int64, train, valid float64, r *rand.Rand) Split {
	nTrain := min(int64(math.Round(train*float64(n))), n)
	nValid := min(int64(math.Round(valid*float64(n))), n-nTrain)
	set := make([]uint8, n) // 0 test, 1 train, 2 valid
	for i := range nTrain + nValid {
		set[i] = 1
		if i >= nTrain {
			set[i] = 2
		}
	}
	// Fisher–Yates shuffle of the assignment.
	for i := n - 1; i > 0; i-- {
		j := r.Int64N(i + 1)
		set[i], set[j] = set[j], set[i]
	}
	s := Split{
		Train: make([]int64, 0, nTrain),
		Valid: make([]int64, 0, nValid),
		Test:  make([]int64, 0, n-nTrain-nValid),
	}
	for i, x := range set {
		switch x {
		case 1:
			s.Train = append(s.Train, int64(i))
		case 2:
			s.Valid = append(s.Valid, int64(i))
		default:
			s.Test = append(s.Test, int64(i))
		}
	}
	return s
}

// genPoisson draws from the Poisson distribution with mean lambda ≥ 0 in
// O(1+lambda) time (Knuth's multiplication method, applied to pieces of mean
// at most 500 so that e^-lambda does not underflow).
func genPoisson(r *rand.Rand, lambda float64) int64 {
	var k int64
	for ; lambda > 500; lambda -= 500 {
		k += genPoissonSmall(r, 500)
	}
	return k + genPoissonSmall(r, lambda)
}

func genPoissonSmall(r *rand.Rand, lambda float64) int64 {
	limit := math.Exp(-lambda)
	prod := 1.0
	for k := int64(0); ; k++ {
		prod *= r.Float64()
		if prod <= limit {
			return k
		}
	}
}

// genPairsToCSR builds the n×n pattern CSR of the edges held in chunks as
// consecutive (src, dst) pairs, dropping self-loops and duplicates, with
// sorted rows. If symmetric, every edge is stored in both directions. It
// releases the chunks (sets them to nil) once their edges are placed.
//
// It is a counting sort: a parallel pass counts row lengths, a second
// scatters columns into place (atomically, so within-row order is arbitrary),
// and a third sorts and deduplicates each row, which makes the result
// independent of scheduling.
func genPairsToCSR[T uint32 | uint64](n int64, chunks [][]T, symmetric bool) *sparse.CSR {
	indptr := make([]int64, n+1)
	genParallel(len(chunks), func(c int) {
		genEdges(chunks[c], symmetric, func(u, _ int64) { atomic.AddInt64(&indptr[u+1], 1) })
	})
	for i := range n {
		indptr[i+1] += indptr[i]
	}
	nnz := indptr[n]
	indices := make([]int64, nnz)
	next := slices.Clone(indptr[:n])
	genParallel(len(chunks), func(c int) {
		genEdges(chunks[c], symmetric, func(u, v int64) { indices[atomic.AddInt64(&next[u], 1)-1] = v })
		chunks[c] = nil
	})

	return genSortDedupRows(n, indptr, indices, next)
}

// genEdges calls edge(u, v) for each pair (u, v) of the consecutive
// (src, dst) pairs in e but self-loops, in order, and edge(v, u) right
// after it when symmetric.
func genEdges[T uint32 | uint64](e []T, symmetric bool, edge func(u, v int64)) {
	for k := 1; k < len(e); k += 2 {
		u, v := int64(e[k-1]), int64(e[k])
		if u == v {
			continue
		}
		edge(u, v)
		if symmetric {
			edge(v, u)
		}
	}
}

// genSortDedupRows sorts the columns of each row of the n-row CSR
// (indptr, indices), removes duplicates and compacts indices in place,
// returning the resulting pattern matrix; it reuses indptr and indices. scratch
// is any slice of length n; it is overwritten.
func genSortDedupRows(n int64, indptr, indices, scratch []int64) *sparse.CSR {
	nnz := indptr[n]
	deg := scratch[:n]
	blocks := genRowBlocks(indptr, 32*runtime.GOMAXPROCS(0))
	genParallel(len(blocks)-1, func(b int) {
		for i := blocks[b]; i < blocks[b+1]; i++ {
			row := indices[indptr[i]:indptr[i+1]]
			slices.Sort(row)
			deg[i] = int64(len(slices.Compact(row)))
		}
	})

	// Compact in place: row i moves left to start at w ≤ indptr[i].
	var w int64
	for i := range n {
		start, d := indptr[i], deg[i]
		if w != start {
			copy(indices[w:w+d], indices[start:start+d])
		}
		indptr[i] = w
		w += d
	}
	indptr[n] = w
	indices = indices[:w]
	if w < nnz-nnz/8 {
		indices = slices.Clone(indices) // give back the slack
	}
	return &sparse.CSR{NRows: n, NCols: n, Indptr: indptr, Indices: indices}
}

// genRowBlocks splits the rows of indptr into about nblocks ranges of similar
// nnz: block b is rows [blocks[b], blocks[b+1]).
func genRowBlocks(indptr []int64, nblocks int) []int64 {
	n := int64(len(indptr) - 1)
	target := max(indptr[n]/int64(nblocks), 1)
	blocks := []int64{0}
	for i := range n {
		if indptr[i+1]-indptr[blocks[len(blocks)-1]] >= target {
			blocks = append(blocks, i+1)
		}
	}
	if blocks[len(blocks)-1] != n {
		blocks = append(blocks, n)
	}
	return blocks
}

// genParallel runs f(0), …, f(tasks-1) on up to GOMAXPROCS goroutines.
func genParallel(tasks int, f func(task int)) {
	workers := min(runtime.GOMAXPROCS(0), tasks)
	if workers <= 1 {
		for t := range tasks {
			f(t)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				t := int(next.Add(1) - 1)
				if t >= tasks {
					return
				}
				f(t)
			}
		})
	}
	wg.Wait()
}
