package train

import (
	"math"
	"runtime"
	"slices"
	"sync"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/model"
)

// pieceable reports whether layer l of layer-wise inference can be
// computed from its halo in pieces (inferPieces): the layer sums its
// sources' input rows with weights (SAGE, GCN) and those rows are dense
// (a hidden layer's, or a store of dense feature rows).
func (t *trainer) pieceable(l int) bool {
	return t.m.Aggregation(l) != model.AggregateNone && (l > 0 || !t.store.Sparse())
}

// pieceRows returns the halo rows of one piece at input width fin: as
// many as fit in a chunk's bound (evalValues) shared by the other q−1
// ranks, at least one. The halo's rows are in ascending ids, so the ranks'
// pieces of one round tend to ask the same owner (at first all ask the
// lowest): a rank then serves up to q−1 pieces in a round, and the rows
// it receives and serves stay within q/(q−1) times the bound.
func (t *trainer) pieceRows(fin int) int {
	return int(max(1, t.evalValues()/(int64(fin)*int64(max(1, t.c.Size()-1)))))
}

// planPieces sets t.haloRounds: for every layer that takes several chunks,
// whose halo some rank cannot hold within the chunk bound (haloOnce
// false) and that pieceable allows, the number of pieces the rank with
// the most cuts its halo into (at least 1); 0 for the other layers. The
// ranks agree on the counts in one Allreduce, made only when some layer
// is computed in pieces. bounds are planChunks' chunk boundaries, padded.
// It is collective over t.c.
func (t *trainer) planPieces(bounds [][]int) error {
	L := len(bounds)
	rounds := make([]int64, L)
	some := false
	for l := range L {
		if len(bounds[l])-1 <= 1 || t.haloOnce[l] || !t.pieceable(l) {
			continue
		}
		fin := t.store.Cols()
		if l > 0 {
			fin = t.m.Layers[l-1].OutDim()
		}
		per := t.pieceRows(fin)
		rounds[l] = int64(max(1, (len(t.halo)+per-1)/per))
		some = true
	}
	t.haloRounds = nil
	if !some {
		return nil
	}
	if err := collective.AllreduceSlice(t.c, rounds, collective.Max); err != nil {
		return err
	}
	t.haloRounds = make([]int, L)
	for l, n := range rounds {
		t.haloRounds[l] = int(n)
	}
	return nil
}

// inferPieces computes layer l of layer-wise inference for the vertices
// the rank owns (owned, ebook order) from the previous layer's output h
// (the feature store for l = 0) by fetching the rank's halo in rounds
// pieces, each of at most pieceRows rows and each halo row in exactly one:
// piece k is t.halo's rows [k·P, (k+1)·P), fetched from the store (l = 0)
// or the rows' owners, and every destination then adds to its weighted
// sum (model.Aggregation) the terms of its neighbours below the next
// piece's first id, the rank's own rows among them, in ascending id
// order. Only one piece is held at a time, beside the sums (a row of the
// layer's input width per owned vertex); the layer's output is then
// computed from the sums in chunks (model.ForwardLayerAggregated),
// written over them when it is no wider than the input (the rest of
// their storage then holds the next layer's sums if it is large enough:
// the input layer's sums of 128 features per vertex hold a hidden layer's
// output and sums of 64). Every
// rank takes rounds exchanges (those past its last piece are empty), so
// rank r sends rounds·8(q−1) + 8·R + w·F·S bytes per layer and receives
// rounds·8(q−1) + 8·S + w·F·R, with R = len(t.halo), S the rows of other
// ranks' halos it owns, F the input width and w the bytes per value.
// The sums are those of the full-neighbour blocks in another order, so
// the outputs equal those computed in chunks up to rounding.
// It is collective over t.c (and the store's communicator for l = 0).
func (t *trainer) inferPieces(l int, owned []int64, h *dense.Matrix, rounds int) (*dense.Matrix, error) {
	r := t.c.Rank()
	fin := t.store.Cols()
	if l > 0 {
		fin = h.Cols
	}
	agg := t.m.Aggregation(l)
	per := t.pieceRows(fin)
	rows := t.evalRows(owned)
	// The sums go in the storage the previous layer's sums left beyond
	// its output (t.pieceSpare), when large enough.
	var sums *dense.Matrix
	if n := len(owned) * fin; l > 0 && len(t.pieceSpare) >= n {
		sums = &dense.Matrix{Rows: len(owned), Cols: fin, Data: t.pieceSpare[:n:n]}
		clear(sums.Data)
	} else {
		sums = dense.New(len(owned), fin)
	}
	t.pieceSpare = nil
	// own reads the input row of a vertex the rank owns, local id lid,
	// into scratch (l = 0) or in place.
	own := func(g, lid int64, scratch []float32) []float32 {
		if l > 0 {
			return h.Row(int(lid))
		}
		if !t.store.ReadResident(g, scratch) {
			panic("train: an owned inference source outside the store")
		}
		return scratch
	}
	deg := func(g int64) int64 { // GCN's full-graph degree of a destination or source
		if t.evalDeg == nil {
			return t.deg[g]
		}
		if q, lid := t.ebook.Locate(g); q == r {
			return int64(t.evalDeg.Data[lid])
		}
		k, ok := slices.BinarySearch(t.halo, g)
		if !ok {
			panic("train: an inference source outside the halo")
		}
		return t.haloDeg[k]
	}
	// weights returns destination i's neighbour count k (without itself
	// for GCN) and whether it neighbours itself.
	weights := func(i int) (k int64, self bool) {
		g := owned[i]
		nb := rows(i)
		_, self = slices.BinarySearch(nb, g)
		k = int64(len(nb))
		if agg == model.AggregateGCN && self {
			k--
		}
		return k, self
	}
	cursor := make([]int, len(owned))
	var piece *dense.Matrix
	for round := range rounds {
		lo := min(round*per, len(t.halo))
		hi := min(lo+per, len(t.halo))
		ids := t.halo[lo:hi]
		var err error
		if l == 0 {
			piece, _, err = t.store.FetchTo(piece, ids)
		} else {
			piece, err = alltoall.ExchangeTo(t.c, piece, alltoall.NewPlan(ids, t.ebook, r), t.ebook, h)
		}
		if err != nil {
			return nil, err
		}
		next := int64(math.MaxInt64) // the sources below it are summed this round
		if hi < len(t.halo) {
			next = t.halo[hi]
		}
		eachRange(len(owned), fin, func(a, b int, scratch []float32) {
			for i := a; i < b; i++ {
				g, sum := owned[i], sums.Row(i)
				nb := rows(i)
				c := cursor[i]
				if c == len(nb) && round > 0 {
					continue
				}
				k, self := weights(i)
				var w float32
				if agg == model.AggregateMean {
					w = model.MeanWeight(int(k))
				}
				if agg == model.AggregateGCN && round == 0 && !self {
					dense.Axpy(model.GCNWeight(deg(g), k, 0, true), own(g, int64(i), scratch), sum)
				}
				for ; c < len(nb) && nb[c] < next; c++ {
					v := nb[c]
					if agg == model.AggregateGCN {
						if v == g {
							w = model.GCNWeight(deg(g), k, 0, true)
						} else {
							w = model.GCNWeight(deg(g), k, deg(v), false)
						}
					}
					if q, lid := t.ebook.Locate(v); q == r {
						dense.Axpy(w, own(v, lid, scratch), sum)
						continue
					}
					j, ok := slices.BinarySearch(ids, v)
					if !ok {
						panic("train: an inference source outside its piece of the halo")
					}
					dense.Axpy(w, piece.Row(j), sum)
				}
				cursor[i] = c
			}
		})
	}
	piece = nil
	fout := t.m.Layers[l].OutDim()
	// A layer no wider than its input writes its output over the sums
	// already consumed: chunk [a, b)'s rows go to values [a·fout, b·fout),
	// before the next chunk's sums at b·fin.
	out := sums
	if fout > fin {
		out = dense.New(len(owned), fout)
	}
	step := int(max(1, t.evalValues()/int64(max(fin, fout))))
	var xdst *dense.Matrix
	for a := 0; a < len(owned); a += step {
		b := min(a+step, len(owned))
		s := &dense.Matrix{Rows: b - a, Cols: fin, Data: sums.Data[a*fin : b*fin]}
		switch {
		case agg != model.AggregateMean:
		case l > 0:
			xdst = &dense.Matrix{Rows: b - a, Cols: fin, Data: h.Data[a*fin : b*fin]}
		default:
			xdst = dense.Reuse(xdst, b-a, fin)
			for i := a; i < b; i++ {
				own(owned[i], int64(i), xdst.Row(i-a))
			}
		}
		var y *dense.Matrix
		if t.dev != nil {
			t.inferDevice = t.dev.ctx.Name()
			var err error
			if y, err = t.dev.m.InferAggregated(l, xdst, s); err != nil {
				return nil, err
			}
		} else {
			y = t.m.ForwardLayerAggregated(l, xdst, s)
		}
		copy(out.Data[a*fout:], y.Data)
	}
	if fout < fin {
		// The rest of the sums' storage is spare for the next layer's.
		n := len(owned) * fout
		out = &dense.Matrix{Rows: len(owned), Cols: fout, Data: sums.Data[:n:n]}
		if l+1 < len(t.m.Layers) {
			t.pieceSpare = sums.Data[n:]
		}
	}
	return out, nil
}

// evalRows returns the neighbours of owned[i] for inferPieces: d's row,
// ascending and distinct, as the full-neighbour block merges repeats. When
// some row is stored otherwise, every row is copied sorted and
// deduplicated into one array, once per inference for all its layers
// (t.pieceNb, dropped when infer returns).
func (t *trainer) evalRows(owned []int64) func(i int) []int64 {
	if t.pieceNb == nil {
		if !slices.ContainsFunc(owned, func(g int64) bool { return !strictlyAscending(t.d.Row(g)) }) {
			return func(i int) []int64 { return t.d.Row(owned[i]) }
		}
		var nnz int64
		for _, g := range owned {
			nnz += int64(len(t.d.Row(g)))
		}
		t.pieceNb = sortedCopy(len(owned), t.d.Adj.NCols, nnz, func(i int, row []int64) []int64 { return append(row, t.d.Row(owned[i])...) })
	}
	a := t.pieceNb
	return func(i int) []int64 { return a.Indices[a.Indptr[i]:a.Indptr[i+1]] }
}

// strictlyAscending reports whether row is sorted without repeats.
func strictlyAscending(row []int64) bool {
	for e := 1; e < len(row); e++ {
		if row[e-1] >= row[e] {
			return false
		}
	}
	return true
}

// eachRange calls f on contiguous ranges [a, b) covering [0, n), one per
// goroutine up to GOMAXPROCS, each with its own scratch row of width
// values, and returns when all have returned.
func eachRange(n, width int, f func(a, b int, scratch []float32)) {
	parts := max(1, min(runtime.GOMAXPROCS(0), n/64))
	var wg sync.WaitGroup
	for p := range parts {
		a, b := p*n/parts, (p+1)*n/parts
		wg.Go(func() { f(a, b, make([]float32, width)) })
	}
	wg.Wait()
}
