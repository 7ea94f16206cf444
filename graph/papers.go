package graph

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"gnnmpi/dense"
	"gnnmpi/internal/f16"
	"gnnmpi/internal/rng"
	"gnnmpi/internal/textfile"
	"gnnmpi/npy"
	"gnnmpi/sparse"
)

// Stream ids of the papers generator under its seed, after the SBM's.
const (
	genStreamPapersCentroids = iota + 101
	genStreamPapersEdges
	genStreamPapersFeatures
	genStreamPapersSplit
)

// PapersParams are the parameters of a papers100M-like graph; see Papers.
type PapersParams struct {
	Nodes     int64
	Classes   int
	Degree    float64 // expected out-degree of a vertex
	Homophily float64 // expected fraction of a vertex's out-edges inside its class
	Features  int     // feature dimension; 0 for no features
	Signal    float64 // scale of the class centroid in the features
	// TrainFrac, ValidFrac and TestFrac are the expected fractions of all
	// vertices in each set; the other vertices are unlabelled.
	TrainFrac, ValidFrac, TestFrac float64
	Half                           bool // features rounded to float16 (written as float16)
	Seed                           uint64
}

// DefaultPapers returns papers100M-like parameters for a graph of n
// vertices: 172 classes, out-degree 15, homophily 0.8, 128 features with
// signal 0.25, 1.2% of the vertices in the train set, 0.12% in the
// validation set and 0.2% in the test set, float32 features, seed 1.
func DefaultPapers(n int64) PapersParams {
	return PapersParams{
		Nodes:     n,
		Classes:   172,
		Degree:    15,
		Homophily: 0.8,
		Features:  128,
		Signal:    0.25,
		TrainFrac: 0.012,
		ValidFrac: 0.0012,
		TestFrac:  0.002,
		Seed:      1,
	}
}

func (p PapersParams) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: papers "+format, append([]any{ErrGenParams}, args...)...)
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	unit := func(x float64) bool { return x >= 0 && x <= 1 }
	switch {
	case p.Nodes < 1:
		return bad("nodes %d < 1", p.Nodes)
	case p.Classes < 1 || p.Classes > MaxClasses:
		return bad("classes %d outside [1,%d]", p.Classes, MaxClasses)
	case !finite(p.Degree) || p.Degree < 0:
		return bad("degree %v", p.Degree)
	case !unit(p.Homophily):
		return bad("homophily %v outside [0,1]", p.Homophily)
	case p.Features < 0:
		return bad("features %d < 0", p.Features)
	case p.Features > 0 && p.Nodes > math.MaxInt/int64(p.Features):
		return bad("%d×%d features too many", p.Nodes, p.Features)
	case !finite(p.Signal) || p.Signal < 0:
		return bad("signal %v", p.Signal)
	case !unit(p.TrainFrac) || !unit(p.ValidFrac) || !unit(p.TestFrac) || p.TrainFrac+p.ValidFrac+p.TestFrac > 1+1e-9:
		return bad("split fractions train=%v valid=%v test=%v", p.TrainFrac, p.ValidFrac, p.TestFrac)
	}
	return nil
}

// papersGen generates the pieces of a papers graph: piece c is vertices
// [c·sbmChunkVertices, …), each stage of it from its own random stream,
// so that any piece can be regenerated alone and in any order.
type papersGen struct {
	p        PapersParams
	centroid []float32 // Classes×Features
	// Vertices [0, trainEnd) are train candidates, [trainEnd, validEnd)
	// valid candidates, the rest test candidates.
	trainEnd, validEnd int64
	labelled           float64 // probability that a vertex is labelled
}

func newPapersGen(p PapersParams) *papersGen {
	g := &papersGen{p: p}
	f := p.Features
	cr := rng.New(p.Seed, genStreamPapersCentroids, 0)
	g.centroid = make([]float32, p.Classes*f)
	for i := range g.centroid {
		g.centroid[i] = float32(p.Signal)
		if cr.Uint64()&1 == 0 {
			g.centroid[i] = -g.centroid[i]
		}
	}
	g.labelled = p.TrainFrac + p.ValidFrac + p.TestFrac
	if g.labelled > 0 {
		n := float64(p.Nodes)
		g.trainEnd = int64(math.Round(n * p.TrainFrac / g.labelled))
		g.validEnd = int64(math.Round(n * (p.TrainFrac + p.ValidFrac) / g.labelled))
	}
	return g
}

// class returns the class of vertex u: u mod Classes.
func (g *papersGen) class(u int64) int64 { return u % int64(g.p.Classes) }

// classSize returns the number of vertices of class k.
func (g *papersGen) classSize(k int64) int64 {
	c := int64(g.p.Classes)
	if k >= g.p.Nodes {
		return 0
	}
	return (g.p.Nodes - k + c - 1) / c
}

// edges appends the out-edges of piece c to src and dst, in order of
// source.
func (g *papersGen) edges(c int, src, dst []int64) ([]int64, []int64) {
	p := g.p
	n, nc := p.Nodes, int64(p.Classes)
	r := rng.New(p.Seed, genStreamPapersEdges, uint64(c))
	lo, hi := sbmChunk(c, n)
	want := int(p.Degree*float64(hi-lo)*1.1) + 64
	src, dst = slices.Grow(src, want), slices.Grow(dst, want)
	for u := lo; u < hi; u++ {
		k := g.class(u)
		size := g.classSize(k)
		for s := genPoisson(r, p.Degree); s > 0; s-- {
			var v int64
			if r.Float64() < p.Homophily {
				if size < 2 {
					continue
				}
				for v = u; v == u; {
					v = k + nc*r.Int64N(size)
				}
			} else {
				if size == n {
					continue
				}
				for v = u; g.class(v) == k; {
					v = r.Int64N(n)
				}
			}
			src = append(src, u)
			dst = append(dst, v)
		}
	}
	return src, dst
}

// features writes the features of piece c, row-major, to feat.
func (g *papersGen) features(c int, feat []float32) {
	p := g.p
	f := p.Features
	r := rng.New(p.Seed, genStreamPapersFeatures, uint64(c))
	lo, hi := sbmChunk(c, p.Nodes)
	for u := lo; u < hi; u++ {
		k := int(g.class(u))
		row := feat[(u-lo)*int64(f) : (u-lo+1)*int64(f)]
		cen := g.centroid[k*f : (k+1)*f]
		for j := range row {
			row[j] = cen[j] + float32(r.NormFloat64())
			if p.Half {
				row[j] = f16.ToFloat32(f16.FromFloat32(row[j]))
			}
		}
	}
}

// split calls set(u, part) for each labelled vertex u of piece c, in
// ascending order, with part 0 (train), 1 (valid) or 2 (test).
func (g *papersGen) split(c int, set func(u int64, part int)) {
	r := rng.New(g.p.Seed, genStreamPapersSplit, uint64(c))
	lo, hi := sbmChunk(c, g.p.Nodes)
	for u := lo; u < hi; u++ {
		if !(r.Float64() < g.labelled) {
			continue
		}
		switch {
		case u < g.trainEnd:
			set(u, 0)
		case u < g.validEnd:
			set(u, 1)
		default:
			set(u, 2)
		}
	}
}

// Papers returns, in memory, the papers100M-like graph named "papers" that
// WritePapers writes.
//
// Vertex u has class u mod Classes. Each vertex u draws Poisson(Degree)
// out-edges; each joins u to a uniformly chosen other vertex of u's class
// with probability Homophily and otherwise to a uniformly chosen vertex of
// another class (an edge with no such vertex is dropped). Edges are
// directed, as citations are, and may repeat; they are stored in the order
// drawn, by ascending source. Features are Signal·c + z for u's class
// centroid c (a random ±1 vector per class) and standard normal noise z,
// rounded to float16 when Half. Labels and the split "time" mimic
// papers100M's: each vertex is labelled with probability
// TrainFrac+ValidFrac+TestFrac, and a labelled vertex is in the train,
// valid or test set according to its id (time order): the first
// TrainFrac/(TrainFrac+ValidFrac+TestFrac) of the ids are train, then
// valid, then test, so that each set's expected size is its fraction of
// Nodes. Other vertices are Unlabelled. NumClasses is Classes.
//
// The result depends only on p, not on GOMAXPROCS. Papers returns an error
// wrapping ErrGenParams for invalid parameters.
func Papers(p PapersParams) (*Dataset, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	g := newPapersGen(p)
	n := p.Nodes
	nchunks := sbmChunks(n)
	indptr := make([]int64, n+1)
	var indices, src []int64
	for c := range nchunks {
		src, indices = g.edges(c, src[:0], indices)
		for _, u := range src {
			indptr[u+1]++
		}
	}
	for i := range n {
		indptr[i+1] += indptr[i]
	}
	if indices == nil {
		indices = []int64{}
	}
	d := &Dataset{
		Name:       "papers",
		NumNodes:   n,
		Adj:        &sparse.CSR{NRows: n, NCols: n, Indptr: indptr, Indices: indices},
		Labels:     make([]int32, n),
		NumClasses: p.Classes,
	}
	if f := p.Features; f > 0 {
		d.Feat = dense.New(int(n), f)
		for c := range nchunks {
			lo, hi := sbmChunk(c, n)
			g.features(c, d.Feat.Data[lo*int64(f):hi*int64(f)])
		}
	}
	for i := range d.Labels {
		d.Labels[i] = Unlabelled
	}
	var parts [3][]int64
	for c := range nchunks {
		g.split(c, func(u int64, part int) {
			d.Labels[u] = int32(g.class(u))
			parts[part] = append(parts[part], u)
		})
	}
	for k := range parts {
		if parts[k] == nil {
			parts[k] = []int64{}
		}
	}
	d.Splits = map[string]Split{"time": {Train: parts[0], Valid: parts[1], Test: parts[2]}}
	return d, nil
}

// papersPieces generates the pieces of n vertices in batches of
// GOMAXPROCS, each piece by gen(c, w) on worker w's buffers, and calls
// emit(c, w) for each piece in ascending order. It stops at the first
// error of emit.
func papersPieces(nchunks int, gen func(c, w int), emit func(c, w int) error) error {
	workers := runtime.GOMAXPROCS(0)
	for lo := 0; lo < nchunks; lo += workers {
		hi := min(lo+workers, nchunks)
		genParallel(hi-lo, func(t int) { gen(lo+t, t) })
		for c := lo; c < hi; c++ {
			if err := emit(c, c-lo); err != nil {
				return err
			}
		}
	}
	return nil
}

// WritePapers writes the graph Papers(p) returns to dir in OGB's binary
// layout, as WriteOGBBinary would write it uncompressed, but without
// holding it: raw/data.npz (edge_index 2×E int64, node_feat n×f float32 or
// float16 when p.Half, num_nodes_list, num_edges_list; stored entries, so
// that readers can map them and read rows by byte range), raw/node-label.npz
// (node_label n×1 float64, NaN for unlabelled vertices) and
// split/time/{train,valid,test}.csv.gz.
//
// Each piece of sbmChunkVertices vertices is generated from its own random
// streams, up to GOMAXPROCS pieces at a time, and regenerated by each pass
// that needs it: one counts the edges, one writes their sources, one their
// destinations, then the features, the labels and each split set. Memory is
// O(GOMAXPROCS·piece) whatever Nodes: about GOMAXPROCS·sbmChunkVertices·
// (16·Degree + 4·Features) bytes.
func WritePapers(dir string, p PapersParams) error {
	if err := p.validate(); err != nil {
		return err
	}
	g := newPapersGen(p)
	n := p.Nodes
	f := int64(p.Features)
	nchunks := sbmChunks(n)
	workers := runtime.GOMAXPROCS(0)
	srcs, dsts := make([][]int64, workers), make([][]int64, workers)
	raw := filepath.Join(dir, "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		return err
	}

	// Count the edges.
	var m int64
	genEdges := func(c, w int) { srcs[w], dsts[w] = g.edges(c, srcs[w][:0], dsts[w][:0]) }
	if err := papersPieces(nchunks, genEdges, func(_, w int) error { m += int64(len(srcs[w])); return nil }); err != nil {
		return err
	}

	err := writeArchive(filepath.Join(raw, npzData), false, func(aw *npy.ArchiveWriter) error {
		ew, err := npy.Create[int64](aw, npzEdges, []int64{2, m})
		if err != nil {
			return err
		}
		for _, row := range []*[][]int64{&srcs, &dsts} {
			if err := papersPieces(nchunks, genEdges, func(_, w int) error { return ew.Write((*row)[w]) }); err != nil {
				return err
			}
		}
		if err := ew.Finish(); err != nil {
			return err
		}
		srcs, dsts = nil, nil
		if f > 0 {
			feats := make([][]float32, workers)
			halves := make([][]uint16, workers)
			gen := func(c, w int) {
				lo, hi := sbmChunk(c, n)
				feats[w] = slices.Grow(feats[w][:0], int((hi-lo)*f))[:(hi-lo)*f]
				g.features(c, feats[w])
				if p.Half {
					halves[w] = slices.Grow(halves[w][:0], len(feats[w]))[:len(feats[w])]
					f16.Encode(halves[w], feats[w])
				}
			}
			if p.Half {
				fw, err := npy.Create[uint16](aw, npzFeat, []int64{n, f})
				if err != nil {
					return err
				}
				if err := papersPieces(nchunks, gen, func(_, w int) error { return fw.Write(halves[w]) }); err != nil {
					return err
				}
				if err := fw.Finish(); err != nil {
					return err
				}
			} else {
				fw, err := npy.Create[float32](aw, npzFeat, []int64{n, f})
				if err != nil {
					return err
				}
				if err := papersPieces(nchunks, gen, func(_, w int) error { return fw.Write(feats[w]) }); err != nil {
					return err
				}
				if err := fw.Finish(); err != nil {
					return err
				}
			}
		}
		if err := npy.Add(aw, npzNodes, []int64{1}, []int64{n}); err != nil {
			return err
		}
		return npy.Add(aw, npzEdgeCounts, []int64{1}, []int64{m})
	})
	if err != nil {
		return err
	}

	err = writeArchive(filepath.Join(raw, npzLabels), false, func(aw *npy.ArchiveWriter) error {
		lw, err := npy.Create[float64](aw, npzLabel, []int64{n, 1})
		if err != nil {
			return err
		}
		var buf []float64
		for c := range nchunks {
			lo, hi := sbmChunk(c, n)
			buf = buf[:0]
			for range hi - lo {
				buf = append(buf, math.NaN())
			}
			g.split(c, func(u int64, _ int) { buf[u-lo] = float64(g.class(u)) })
			if err := lw.Write(buf); err != nil {
				return err
			}
		}
		return lw.Finish()
	})
	if err != nil {
		return err
	}

	sd := filepath.Join(dir, "split", "time")
	if err := os.MkdirAll(sd, 0o755); err != nil {
		return err
	}
	for part, name := range splitParts {
		err := writeTable(sd, name, func(w *bufio.Writer) error {
			var ids []int64
			for c := range nchunks {
				ids = ids[:0]
				g.split(c, func(u int64, k int) {
					if k == part {
						ids = append(ids, u)
					}
				})
				if err := textfile.WriteInts(w, ids); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
