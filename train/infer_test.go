package train

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/dense"
	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// randomHalos partitions g at random (seed 9) into p parts and returns
// the book and every rank's halo (haloRef).
func randomHalos(g *graph.Dataset, p int) (*partition.Book, [][]int64) {
	book := partition.Random(g.NumNodes, p, 9)
	halo := make([][]int64, p)
	for r := range p {
		halo[r] = haloRef(g, book, r)
	}
	return book, halo
}

// haloRef returns the halo of layer-wise inference on rank r, derived from
// the whole graph: the distinct neighbours of the vertices r owns that it
// does not own.
func haloRef(g *graph.Dataset, book *partition.Book, r int) []int64 {
	var halo []int64
	for _, v := range book.Owned(r) {
		for _, u := range g.Adj.Indices[g.Adj.Indptr[v]:g.Adj.Indptr[v+1]] {
			if book.Owner(u) != r {
				halo = append(halo, u)
			}
		}
	}
	slices.Sort(halo)
	return slices.Compact(halo)
}

// Inference computed in several chunks per layer fetches each halo row
// once per layer: every layer sends 8(p−1) + 8·R + 4·w·S bytes and
// receives 8(p−1) + 8·S + 4·w·R on rank r, with R its halo rows, S the
// rows of other ranks' halos it owns and w the layer's input width; GCN
// adds one exchange of the halo's degrees (a float32 each) at the first
// evaluation only. The outputs are the same in every evaluation and, up
// to rounding (a chunk's blocks number their sources in another order),
// those of inference in one chunk per layer.
func TestInferenceHaloBytes(t *testing.T) {
	g := sbm()
	for _, kind := range []model.Kind{model.KindSAGE, model.KindGCN} {
		for _, p := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s_p%d", kind, p), func(t *testing.T) {
				book, halo := randomHalos(g, p)
				err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
					c = collective.WithStats(c, nil)
					r := c.Rank()
					d, err := Distribute(g, "random", book, r)
					if err != nil {
						return err
					}
					cfg := testConfig(kind)
					// The largest halo's input rows fit in a chunk's
					// bound (so it is fetched once), but no rank's own
					// rows and halo together: the input layer takes
					// several chunks (a layer in one chunk fetches its
					// halo once too).
					var most int
					for _, h := range halo {
						most = max(most, len(h))
					}
					cfg.EvalMemory = int64(most * g.NumFeatures())
					tr, err := newTrainer(c, d, cfg)
					if err != nil {
						return err
					}
					if b := tr.evalChunks[0]; len(b) < 3 || !tr.haloOnce[0] {
						return fmt.Errorf("rank %d: the input layer in %d chunk(s), halo once %v; the test needs several sharing the halo", r, len(b)-1, tr.haloOnce[0])
					}
					var served int64 // rows of the other ranks' halos this rank owns
					for o := range p {
						if o != r {
							served += int64(len(slices.DeleteFunc(slices.Clone(halo[o]), func(v int64) bool { return book.Owner(v) != r })))
						}
					}
					R := int64(len(halo[r]))
					var wantSent, wantRecv int64
					width := int64(tr.store.Cols())
					for l := range cfg.Model.Layers {
						if l > 0 {
							width = int64(tr.m.Layers[l-1].OutDim())
						}
						wantSent += 8*int64(p-1) + 8*R + 4*width*served
						wantRecv += 8*int64(p-1) + 8*served + 4*width*R
					}
					degSent, degRecv := int64(0), int64(0)
					if kind == model.KindGCN && d.Partitioned() {
						degSent, degRecv = 8*int64(p-1)+8*R+4*served, 8*int64(p-1)+8*served+4*R
					}
					defer collective.SetPhase(c, metrics.PhaseEval)() // as evaluate does
					defer collective.SetPhase(tr.lc, metrics.PhaseEval)()
					var outs []*dense.Matrix
					for i := range 2 {
						before := collective.SnapshotOf(c)
						h, err := tr.infer(tr.ebook.Owned(r))
						if err != nil {
							return err
						}
						outs = append(outs, h)
						got := collective.SnapshotOf(c).Sub(before).Phase(metrics.PhaseEval)
						ws, wr := wantSent, wantRecv
						if i == 0 {
							ws, wr = ws+degSent, wr+degRecv
						}
						if got.SentBytes != ws || got.RecvBytes != wr {
							return fmt.Errorf("rank %d, evaluation %d: sent %d received %d bytes, want %d and %d", r, i, got.SentBytes, got.RecvBytes, ws, wr)
						}
					}
					// One chunk per layer (the fetch of each chunk's inputs,
					// as before the halo) computes the same rows.
					tr.cfg.EvalMemory = 1 << 40
					if tr.evalChunks, err = tr.planChunks(); err != nil {
						return err
					}
					tr.chunkCache, tr.chunkCached = nil, 0
					one, err := tr.infer(tr.ebook.Owned(r))
					if err != nil {
						return err
					}
					if !slices.Equal(outs[0].Data, outs[1].Data) {
						return fmt.Errorf("rank %d: two evaluations of the same model differ", r)
					}
					// A bound below the halo: every chunk fetches its own
					// inputs (the halo is not held), the same rows again.
					tr.cfg.EvalMemory = 16 * 60
					if tr.evalChunks, err = tr.planChunks(); err != nil {
						return err
					}
					if tr.haloOnce[0] {
						return fmt.Errorf("rank %d: a halo of %d rows over a bound of %d values is held", r, R, tr.cfg.EvalMemory)
					}
					tr.chunkCache, tr.chunkCached = nil, 0
					small, err := tr.infer(tr.ebook.Owned(r))
					if err != nil {
						return err
					}
					for i, v := range one.Data {
						for _, o := range [][]float32{outs[0].Data, small.Data} {
							if d := math.Abs(float64(v - o[i])); d > 1e-5*max(1, math.Abs(float64(v))) {
								return fmt.Errorf("rank %d: output %d in chunks %v, in one chunk %v", r, i, o[i], v)
							}
						}
					}
					return nil
				})
				require.NoError(t, err)
			})
		}
	}
}

// A layer whose halo some rank cannot hold within a chunk's bound fetches
// the halo in pieces, each halo row in exactly one: every layer sends
// k·8(p−1) + 8·R + 4·w·S bytes and receives k·8(p−1) + 8·S + 4·w·R on
// rank r, with k the pieces of the rank with the most (one Alltoall of
// counts each), R its halo rows, S the rows of other ranks' halos it owns
// and w the layer's input width (GCN adds its degrees at the first
// evaluation). The outputs are those of inference on one rank up to
// rounding (the sums are taken in another order), and the predictions
// the same.
func TestInferencePieces(t *testing.T) {
	g := sbm()
	for _, kind := range []model.Kind{model.KindSAGE, model.KindGCN} {
		// The outputs of one rank, by global id.
		var ref *dense.Matrix
		err := inproc.Run(1, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
			d, err := Distribute(g, "random", partition.Random(g.NumNodes, 1, 9), 0)
			if err != nil {
				return err
			}
			tr, err := newTrainer(c, d, testConfig(kind))
			if err != nil {
				return err
			}
			ref, err = tr.infer(tr.ebook.Owned(0))
			return err
		})
		require.NoError(t, err)
		for _, p := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s_p%d", kind, p), func(t *testing.T) {
				book, halo := randomHalos(g, p)
				err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
					c = collective.WithStats(c, nil)
					r := c.Rank()
					d, err := Distribute(g, "random", book, r)
					if err != nil {
						return err
					}
					cfg := testConfig(kind)
					// A third of the smallest halo's hidden rows: every
					// layer of every rank takes at least three pieces.
					least := len(halo[0])
					for _, h := range halo {
						least = min(least, len(h))
					}
					cfg.EvalMemory = int64(least * cfg.Model.Hidden / 3)
					tr, err := newTrainer(c, d, cfg)
					if err != nil {
						return err
					}
					R := int64(len(halo[r]))
					var served int64 // rows of the other ranks' halos this rank owns
					for o := range p {
						if o != r {
							served += int64(len(slices.DeleteFunc(slices.Clone(halo[o]), func(v int64) bool { return book.Owner(v) != r })))
						}
					}
					var wantSent, wantRecv int64
					width := int64(tr.store.Cols())
					for l := range cfg.Model.Layers {
						if l > 0 {
							width = int64(tr.m.Layers[l-1].OutDim())
						}
						if tr.haloRounds == nil || tr.haloRounds[l] < 3 {
							return fmt.Errorf("rank %d: layer %d in pieces %v, the test needs at least three", r, l, tr.haloRounds)
						}
						// The pieces of the rank with the most.
						var k int64
						for _, h := range halo {
							per := int(max(1, cfg.EvalMemory/(width*int64(p-1))))
							k = max(k, int64((len(h)+per-1)/per))
						}
						if int64(tr.haloRounds[l]) != k {
							return fmt.Errorf("rank %d: layer %d in %d rounds, want %d", r, l, tr.haloRounds[l], k)
						}
						wantSent += k*8*int64(p-1) + 8*R + 4*width*served
						wantRecv += k*8*int64(p-1) + 8*served + 4*width*R
					}
					if kind == model.KindGCN && d.Partitioned() {
						wantSent += 8*int64(p-1) + 8*R + 4*served
						wantRecv += 8*int64(p-1) + 8*served + 4*R
					}
					defer collective.SetPhase(c, metrics.PhaseEval)() // as evaluate does
					defer collective.SetPhase(tr.lc, metrics.PhaseEval)()
					before := collective.SnapshotOf(c)
					owned := tr.ebook.Owned(r)
					h, err := tr.infer(owned)
					if err != nil {
						return err
					}
					got := collective.SnapshotOf(c).Sub(before).Phase(metrics.PhaseEval)
					if got.SentBytes != wantSent || got.RecvBytes != wantRecv {
						return fmt.Errorf("rank %d: sent %d received %d bytes, want %d and %d", r, got.SentBytes, got.RecvBytes, wantSent, wantRecv)
					}
					preds, want := model.Argmax(h), model.Argmax(ref)
					for k, v := range owned {
						if preds[k] != want[v] {
							return fmt.Errorf("rank %d: vertex %d predicted %d, %d on one rank", r, v, preds[k], want[v])
						}
						for j, x := range h.Row(k) {
							if y := ref.Row(int(v))[j]; math.Abs(float64(x-y)) > 1e-5*max(1, math.Abs(float64(y))) {
								return fmt.Errorf("rank %d: vertex %d output %d is %v, %v on one rank", r, v, j, x, y)
							}
						}
					}
					return nil
				})
				require.NoError(t, err)
			})
		}
	}
}

// TestInferRows checks layer-wise inference in place on one rank
// (rowPass): SAGE's layers take the row pass, in several chunks or one,
// and give the same outputs as the chunks' relabelled blocks in one chunk
// (bit for bit: the test's BLAS is gonum's) and, up to rounding, in
// several; where projecting every vertex first would exceed a chunk's
// bound they aggregate first, the same outputs up to rounding. An
// adjacency whose rows are unsorted and repeat a neighbour gives the same
// outputs as its sorted, deduplicated rows; sparse features take the
// chunks for the input layer only, GCN for every layer.
func TestInferRows(t *testing.T) {
	g := sbm()
	book, err := partition.New(make([]int32, g.NumNodes), 1, "metis")
	require.NoError(t, err)
	type run struct {
		out    *dense.Matrix
		passes int
	}
	infer := func(t *testing.T, g *graph.Dataset, kind model.Kind, evalMemory int64, chunks bool) run {
		t.Helper()
		defer func(v bool) { noRowPass = v }(noRowPass)
		noRowPass = chunks
		var r run
		err := inproc.Run(1, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
			tr, err := evalTrainer(c, g, book, kind, evalMemory)
			if err != nil {
				return err
			}
			owned := tr.ebook.Owned(0)
			if tr.rowPass(0, owned, nil) != nil {
				r.passes++
			}
			tr.layerDone = func(l int, h *dense.Matrix) {
				if l < tr.cfg.Model.Layers && tr.rowPass(l, owned, h) != nil {
					r.passes++
				}
			}
			r.out, err = tr.infer(owned)
			return err
		})
		require.NoError(t, err)
		return r
	}
	one := infer(t, g, model.KindSAGE, 1<<40, true)
	for _, tc := range []struct {
		mem    int64
		passes int
	}{{1 << 40, 2}, {50 * 11 * 32, 2}, {16 * 60, 2}} { // 960 values: both layers aggregate first (600 rows of their projections exceed it)
		rows := infer(t, g, model.KindSAGE, tc.mem, false)
		require.Equal(t, tc.passes, rows.passes, "bound %d: layers in place", tc.mem)
		if tc.mem != 16*60 {
			require.Equal(t, bitsOf32(one.out.Data), bitsOf32(rows.out.Data), "bound %d: the rows of one chunk", tc.mem)
		}
		chunked := infer(t, g, model.KindSAGE, tc.mem, true)
		require.InDeltaSlice(t, one.out.Data, chunked.out.Data, 1e-5, "bound %d: the chunks, up to rounding", tc.mem)
		require.InDeltaSlice(t, one.out.Data, rows.out.Data, 1e-5, "bound %d", tc.mem)
	}

	// Unsorted rows with a repeated neighbour: sorted, deduplicated copies.
	got := infer(t, messyRows(g), model.KindSAGE, 50*11*32, false)
	require.Equal(t, 2, got.passes)
	require.Equal(t, bitsOf32(infer(t, g, model.KindSAGE, 50*11*32, false).out.Data), bitsOf32(got.out.Data))

	// Sparse features: the input layer takes the chunks. GCN has no row
	// form.
	sp := *g
	sp.FeatCSR, sp.Feat = sparse.FromDense(g.Feat.Rows, g.Feat.Cols, g.Feat.Data), nil
	require.Equal(t, 1, infer(t, &sp, model.KindSAGE, 50*11*32, false).passes)
	require.Equal(t, 0, infer(t, g, model.KindGCN, 50*11*32, false).passes)
}

// bitsOf32 returns the bit patterns of x (+0 and −0 differ).
func bitsOf32(x []float32) []uint32 {
	b := make([]uint32, len(x))
	for i, v := range x {
		b[i] = math.Float32bits(v)
	}
	return b
}

// TestInferRowsHalo checks hidden layers in place on several ranks
// (haloRowPass): where a layer's chunks share one fetch of the halo, each
// rank computes SAGE's hidden layer over its own rows and the halo's in
// place, with the bytes of the chunks (TestInferenceHaloBytes counts
// them), and the outputs of the chunks up to rounding.
func TestInferRowsHalo(t *testing.T) {
	g := sbm()
	for _, p := range []int{2, 3} {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			book, halo := randomHalos(g, p)
			var most int
			for _, h := range halo {
				most = max(most, len(h))
			}
			outs := make([][2]*dense.Matrix, p)
			passes := make([]int, p)
			for k, chunks := range []bool{true, false} {
				defer func(v bool) { noRowPass = v }(noRowPass)
				noRowPass = chunks
				err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
					r := c.Rank()
					// The hidden layer in several chunks sharing the halo.
					tr, err := evalTrainer(c, g, book, model.KindSAGE, int64(most*testConfig(model.KindSAGE).Model.Hidden))
					if err != nil {
						return err
					}
					if b := tr.evalChunks[1]; len(b) < 3 || !tr.haloOnce[1] {
						return fmt.Errorf("rank %d: the hidden layer in %d chunk(s), halo once %v", r, len(b)-1, tr.haloOnce[1])
					}
					owned := tr.ebook.Owned(r)
					tr.layerDone = func(l int, h *dense.Matrix) {
						if l == 1 && !chunks && tr.haloRowPass(1, owned, h, dense.New(len(tr.halo), h.Cols)) != nil {
							passes[r]++
						}
					}
					outs[r][k], err = tr.infer(owned)
					return err
				})
				require.NoError(t, err)
			}
			for r := range p {
				require.Equal(t, 1, passes[r], "rank %d: the hidden layer in place", r)
				require.InDeltaSlice(t, outs[r][0].Data, outs[r][1].Data, 1e-5, "rank %d", r)
			}
		})
	}
}

// evalTrainer returns rank c.Rank()'s trainer of kind (testConfig, with
// EvalMemory evalMemory) on g distributed under book, split "random".
func evalTrainer(c collective.Comm, g *graph.Dataset, book *partition.Book, kind model.Kind, evalMemory int64) (*trainer, error) {
	d, err := Distribute(g, "random", book, c.Rank())
	if err != nil {
		return nil, err
	}
	cfg := testConfig(kind)
	cfg.EvalMemory = evalMemory
	return newTrainer(c, d, cfg)
}

// messyRows returns g with every adjacency row reversed (unsorted) and
// row 3 naming its first neighbour twice: the same graph to a
// full-neighbour block, which merges repeats.
func messyRows(g *graph.Dataset) *graph.Dataset {
	messy := *g
	adj := *g.Adj
	adj.Indices = slices.Clone(adj.Indices)
	adj.Indptr = slices.Clone(adj.Indptr)
	for i := range adj.NRows {
		slices.Reverse(adj.Indices[adj.Indptr[i]:adj.Indptr[i+1]])
	}
	v := adj.Indices[adj.Indptr[3]]
	adj.Indices = slices.Insert(adj.Indices, int(adj.Indptr[3]), v)
	for i := int64(4); i <= adj.NRows; i++ {
		adj.Indptr[i]++
	}
	messy.Adj = &adj
	return &messy
}

// TestInferencePiecesUnsorted checks that inference in pieces over rows
// stored unsorted with a repeated neighbour (evalRows' sorted copies)
// gives bit for bit the outputs of the same graph's sorted rows.
func TestInferencePiecesUnsorted(t *testing.T) {
	const p = 2
	g := sbm()
	book, halo := randomHalos(g, p)
	least := min(len(halo[0]), len(halo[1]))
	outs := make([][2]*dense.Matrix, p)
	for k, d := range []*graph.Dataset{g, messyRows(g)} {
		err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
			r := c.Rank()
			// Pieces in every layer.
			tr, err := evalTrainer(c, d, book, model.KindSAGE, int64(least*testConfig(model.KindSAGE).Model.Hidden/3))
			if err != nil {
				return err
			}
			if tr.haloRounds == nil || tr.haloRounds[0] < 2 || tr.haloRounds[1] < 2 {
				return fmt.Errorf("rank %d: pieces %v, the test needs several in each layer", r, tr.haloRounds)
			}
			outs[r][k], err = tr.infer(tr.ebook.Owned(r))
			return err
		})
		require.NoError(t, err)
	}
	for r := range p {
		require.Equal(t, bitsOf32(outs[r][0].Data), bitsOf32(outs[r][1].Data), "rank %d", r)
	}
}
