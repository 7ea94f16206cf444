package train

import (
	"slices"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/gpu/tier"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/partition"
	"gnnmpi/sampling"
	"gnnmpi/sparse"
)

// mask returns the membership of ids among the vertices [lo, hi), indexed
// from lo: ids outside the range are left out.
func mask(lo, hi int64, ids []int64) []bool {
	m := make([]bool, hi-lo)
	for _, g := range ids {
		if g >= lo && g < hi {
			m[g-lo] = true
		}
	}
	return m
}

// planInference finds the rank's inference halo (haloOf) and plans the
// layer-wise inference's chunks (planChunks), once: at setup when the
// loop evaluates, else before the first inference. It is collective over
// t.c.
func (t *trainer) planInference() error {
	if t.evalChunks != nil {
		return nil
	}
	if t.halo == nil && t.c.Rank() < t.ebook.Parts {
		t.halo = haloOf(t.d, t.ebook, t.c.Rank(), t.ebook.Owned(t.c.Rank()))
	}
	var err error
	t.evalChunks, err = t.planChunks()
	return err
}

// planChunks cuts the owned vertices, for every layer, into chunks whose
// gathered input (the distinct rows of the destinations and all their
// neighbours, times the layer's input width) stays within evalValues;
// every rank then takes as many exchange rounds as the rank with the most
// chunks. It returns the boundaries: chunk k of layer l is
// owned[b[l][k]:b[l][k+1]]. It also sets t.haloOnce: whether layer l,
// when it takes several chunks, fetches the rank's halo once (every
// rank's halo rows at the layer's input width fit within evalValues) or
// each chunk's inputs (a halo too large to hold beside the chunks), and
// t.haloRounds (planPieces): the layers of such a halo that are fetched
// in pieces instead. The ranks agree on the chunks and haloOnce in one
// Allreduce, and on the pieces in another, made only when some layer
// needs them.
func (t *trainer) planChunks() ([][]int, error) {
	owned := t.ebook.Owned(t.c.Rank())
	L := t.cfg.Model.Layers
	whole, err := t.wholeOnDevice(owned)
	if err != nil {
		return nil, err
	}
	if whole {
		t.inferWhole, t.haloOnce, t.haloRounds = true, make([]bool, L), nil
		return wholeBounds(L, len(owned)), nil
	}
	bounds := make([][]int, L)
	counts := make([]int64, 2*L) // the chunks of every layer, then its halo values
	seen := newStamps(t.d)       // chunk number + 1 that last counted the vertex
	limit := t.evalValues()
	for l := range L {
		fin := int64(t.store.Cols())
		if l > 0 {
			fin = int64(t.m.Layers[l-1].OutDim())
		}
		seen.clear()
		b := []int{0}
		chunk := int32(1)
		var rows int64
		// fresh counts the rows vertex g adds to the current chunk and
		// marks them.
		fresh := func(g int64) (add int64) {
			if seen.swap(g, chunk) != chunk {
				add++
			}
			for _, v := range t.d.Row(g) {
				if seen.swap(v, chunk) != chunk {
					add++
				}
			}
			return add
		}
		for k, g := range owned {
			add := fresh(g)
			// A chunk's gathered inputs stay within evalValues, on
			// one rank too (a hidden layer in one chunk reads the rank's
			// rows in place, but its block and the layer's intermediate
			// rows would grow with the graph).
			if rows > 0 && (rows+add)*fin > limit {
				b = append(b, k) // start a new chunk with g
				chunk++
				rows, add = 0, fresh(g)
			}
			rows += add
		}
		if len(owned) > 0 {
			b = append(b, len(owned))
		}
		bounds[l] = b
		counts[l] = int64(len(b) - 1)
		counts[L+l] = int64(len(t.halo)) * fin
	}
	if err := collective.AllreduceSlice(t.c, counts, collective.Max); err != nil {
		return nil, err
	}
	t.haloOnce = make([]bool, L)
	for l := range L {
		t.haloOnce[l] = counts[L+l] <= limit
		for int64(len(bounds[l])-1) < max(counts[l], 1) {
			bounds[l] = append(bounds[l], len(owned)) // empty rounds
		}
	}
	if err := t.planPieces(bounds); err != nil {
		return nil, err
	}
	return bounds, nil
}

// stamps marks vertices with a small number: an array over the vertices
// when the rank holds the whole graph, a map over those stamped when it
// holds a part (no array of n).
type stamps struct {
	dense []int32
	m     map[int64]int32
}

func newStamps(d *Data) *stamps {
	if d.Partitioned() {
		return &stamps{m: map[int64]int32{}}
	}
	return &stamps{dense: make([]int32, d.NumNodes())}
}

func (s *stamps) clear() {
	clear(s.dense)
	clear(s.m)
}

// swap stamps v with x and returns its previous stamp (0 if none).
func (s *stamps) swap(v int64, x int32) int32 {
	if s.m != nil {
		old := s.m[v]
		s.m[v] = x
		return old
	}
	old := s.dense[v]
	s.dense[v] = x
	return old
}

// evaluate runs exact layer-wise full-neighbour inference over every vertex
// (infer), or with Config.EvalFanouts evaluates the validation and test
// vertices alone (evaluateSampled), and returns the validation and test
// accuracy and the mean validation loss.
func (t *trainer) evaluate() (evaluation, error) {
	if t.cfg.EvalFanouts != nil {
		return t.evaluateSampled()
	}
	c := t.c
	defer collective.SetPhase(c, metrics.PhaseEval)()
	defer collective.SetPhase(t.lc, metrics.PhaseEval)() // the input layer's fetch
	t.releaseTraining()
	owned := t.ebook.Owned(c.Rank())
	h, err := t.infer(owned)
	if err != nil {
		return evaluation{}, err
	}
	var sc scores
	t.score(&sc, owned, h)
	return sc.evaluation(c)
}

// scores are the sums of an evaluation on a rank: hits and counts of the
// validation and test vertices, and the validation loss.
type scores struct{ valHits, val, testHits, test, valLoss float64 }

// score adds to sc the predictions of logits for the vertices ids, one row
// each.
func (t *trainer) score(sc *scores, ids []int64, logits *dense.Matrix) {
	for k, pred := range model.Argmax(logits) {
		g := ids[k]
		hit := 0.0
		if pred == t.d.Label(g) {
			hit = 1
		}
		if t.valMask[g-t.d.RowLo] {
			sc.valHits += hit
			sc.val++
			sc.valLoss += model.CrossEntropy(logits.Row(k), t.d.Label(g))
		}
		if t.testMask[g-t.d.RowLo] {
			sc.testHits += hit
			sc.test++
		}
	}
}

// evaluation sums sc over the ranks of c and returns the accuracies and
// the mean validation loss. It is collective over c.
func (sc *scores) evaluation(c collective.Comm) (evaluation, error) {
	if err := collective.AllreduceVars(c, collective.Sum, &sc.valHits, &sc.val, &sc.testHits, &sc.test, &sc.valLoss); err != nil {
		return evaluation{}, err
	}
	return evaluation{
		ValAcc:  sc.valHits / max(sc.val, 1),
		ValLoss: sc.valLoss / max(sc.val, 1),
		TestAcc: sc.testHits / max(sc.test, 1),
	}, nil
}

// releaseTraining drops the buffers training keeps for reuse and inference
// does not use, before inference allocates its own: the model's forward
// caches (Model.Release) and the host input rows of the pipeline's slots
// other than slot 0, which inference reuses. The next epoch allocates them
// again; results do not change.
func (t *trainer) releaseTraining() {
	t.m.Release()
	for _, s := range t.slots[min(1, len(t.slots)):] {
		s.x.dense, s.x.csr, s.x.deg = nil, nil, nil
	}
}

// infer computes the model's output rows of the vertices this rank owns in
// layer-wise inference (owned, ebook order): each rank computes a layer's
// output for its vertices, chunk by chunk, from the inputs of the
// vertices and their neighbours, fetched from their owners (phase "eval").
// A layer computed in one chunk fetches the chunk's inputs; a layer in
// several whose halo fits (t.haloOnce) fetches the rows of the rank's
// halo (t.halo) once, from the
// feature store for the input layer and from the previous layer's owners
// otherwise, and every chunk copies its inputs from those and the rank's
// own rows. Only one layer's halo rows are held at a time. A layer with
// t.haloRounds set fetches its halo in pieces instead (inferPieces).
// t.layerDone, if set, is called after each layer with its output.
func (t *trainer) infer(owned []int64) (*dense.Matrix, error) {
	defer func() { t.pieceNb = nil }()
	if err := t.planInference(); err != nil {
		return nil, err
	}
	if err := t.fetchHaloDegrees(); err != nil {
		return nil, err
	}
	if t.dev != nil { // the host model's weights: those of the last epoch, or a resumed run's
		if err := t.dev.loadWeights(t.m); err != nil {
			return nil, err
		}
	}
	var h *dense.Matrix
	var in *alltoall.Halo // the input layer's halo rows
	var hx *dense.Matrix  // a hidden layer's halo rows, in t.halo's order
	for l := range t.cfg.Model.Layers {
		if t.haloRounds != nil && t.haloRounds[l] > 0 {
			var err error
			if h, err = t.inferPieces(l, owned, h, t.haloRounds[l]); err != nil {
				return nil, err
			}
			in = nil
			if t.layerDone != nil {
				t.layerDone(l+1, h)
			}
			continue
		}
		if pass := t.rowPass(l, owned, h); pass != nil {
			h = t.inferRows(pass, l, len(owned), t.rowChunk)
			in = nil
			t.m.Release()
			if t.layerDone != nil {
				t.layerDone(l+1, h)
			}
			continue
		}
		var out *dense.Matrix
		b := t.evalChunks[l]
		// The chunk counts are padded to the ranks' maximum and haloOnce
		// is agreed, so every rank takes the same branch and makes the
		// same collective calls.
		halo := len(b)-1 > 1 && t.haloOnce[l]
		if halo {
			var err error
			if l == 0 {
				in, _, err = t.store.FetchHalo(in, t.halo)
			} else {
				hx, err = alltoall.ExchangeTo(t.c, hx, t.plannedHalo(), t.ebook, h)
			}
			if err != nil {
				return nil, err
			}
			if pass := t.haloRowPass(l, owned, h, hx); pass != nil {
				h = t.inferRows(pass, l, len(owned), func(lo, hi int) *sparse.CSR { return t.haloChunk(owned, lo, hi) })
				t.m.Release()
				if t.layerDone != nil {
					t.layerDone(l+1, h)
				}
				continue
			}
		}
		for k := range len(b) - 1 {
			lo, hi := b[k], b[k+1]
			dst := owned[lo:hi]
			ch := t.chunk(owned, lo, hi)
			t.normalize(ch)
			x := h
			var xg tier.Batch // the input rows on the device, when the tier store gathers them
			var err error
			buf := t.spare()
			switch {
			case l == 0 && halo: // the input rows, from the store and its halo
				if t.store.Sparse() {
					buf.x.csr = t.store.GatherSparseTo(buf.x.csr, in, ch.src)
				} else {
					buf.x.dense = t.store.GatherTo(buf.x.dense, in, ch.src)
				}
				x = buf.x.dense
			case l == 0 && t.dev != nil && t.dev.tier != nil: // the input rows, gathered on the device
				if xg, err = buf.gatherTiers(t.dev.tier, ch.src); err != nil {
					return nil, err
				}
			case l == 0: // the input rows, from the feature store
				if _, err = t.fetch(&buf.x, ch.src); err != nil {
					return nil, err
				}
				x = buf.x.dense
			case ch.inPlace:
			case halo:
				x = dense.Reuse(buf.x.dense, len(ch.src), h.Cols)
				for i, f := range t.sources(ch) {
					if f < 0 {
						copy(x.Row(i), h.Row(int(^f)))
					} else {
						copy(x.Row(i), hx.Row(int(f)))
					}
				}
				buf.x.dense = x
			default:
				if ch.plan == nil {
					ch.plan = alltoall.NewPlan(ch.src, t.ebook, t.c.Rank())
				}
				if x, err = alltoall.ExchangeTo(t.c, buf.x.dense, ch.plan, t.ebook, h); err != nil {
					return nil, err
				}
				buf.x.dense = x
			}
			if len(dst) == 0 {
				continue
			}
			var y *dense.Matrix
			switch {
			case t.dev != nil:
				t.inferDevice = t.dev.ctx.Name()
				var xs *sparse.Matrix[float32]
				if l == 0 && t.store.Sparse() {
					xs = buf.x.csr
				}
				if y, err = t.dev.inferLayer(l, ch.adj, x, xs, xg); err != nil {
					return nil, err
				}
			case l == 0 && t.store.Sparse():
				y = t.m.ForwardLayerSparse(0, ch.adj, buf.x.csr)
			default:
				y = t.m.ForwardLayer(l, ch.adj, x)
			}
			if out == nil {
				out = dense.New(len(owned), y.Cols)
			}
			copy(out.Data[lo*y.Cols:], y.Data)
		}
		if out == nil {
			out = dense.New(0, t.m.Layers[l].OutDim())
		}
		h = out
		in = nil      // the input layer's halo goes before the hidden layers' comes
		t.m.Release() // layer l's buffers (output, scratch, activation) go before layer l+1's come
		if t.layerDone != nil {
			t.layerDone(l+1, h)
		}
	}
	if err := t.releaseInference(); err != nil {
		return nil, err
	}
	return h, nil
}

// haloOf returns the halo of layer-wise inference on rank r: the distinct
// sources of the full-neighbour blocks of owned (the vertices and their
// neighbours in d) that r does not own under ebook, ascending.
func haloOf(d *Data, ebook *partition.Book, r int, owned []int64) []int64 {
	seen := newStamps(d)
	var halo []int64
	for _, g := range owned {
		for _, v := range d.Row(g) {
			if seen.swap(v, 1) == 0 && ebook.Owner(v) != r {
				halo = append(halo, v)
			}
		}
	}
	slices.Sort(halo)
	return halo
}

// plannedHalo returns the plan that fetches the rows of t.halo from their
// owners under ebook, made on first use.
func (t *trainer) plannedHalo() *alltoall.Plan {
	if t.haloPlan == nil {
		t.haloPlan = alltoall.NewPlan(t.halo, t.ebook, t.c.Rank())
	}
	return t.haloPlan
}

// fetchHaloDegrees fetches, at the first evaluation, the degrees of the
// halo's vertices when GCN normalises on a partitioned dataset (evalDeg
// set): one exchange of a float32 per halo vertex, so that every chunk's
// normalisation reads its sources' degrees locally. It is collective over
// t.c (every rank has evalDeg, or none has).
func (t *trainer) fetchHaloDegrees() error {
	if t.evalDeg == nil || t.haloDeg != nil {
		return nil
	}
	deg, err := fetchDegrees(t.c, t.ebook, t.evalDeg, t.plannedHalo(), t.halo)
	if err != nil {
		return err
	}
	t.haloDeg = deg
	return nil
}

// sources returns where ch's sources are in layer-wise inference: a row
// the rank owns, local id lid, as ^lid, and a halo vertex as its index in
// t.halo. It is made on first use and kept with the chunk.
// It will panic if a source is neither owned nor in the halo.
func (t *trainer) sources(ch *evalChunk) []int64 {
	if ch.from != nil {
		return ch.from
	}
	r := t.c.Rank()
	ch.from = make([]int64, len(ch.src))
	for i, g := range ch.src {
		if q, lid := t.ebook.Locate(g); q == r {
			ch.from[i] = ^lid
			continue
		}
		k, ok := slices.BinarySearch(t.halo, g)
		if !ok {
			panic("train: an inference source outside the halo")
		}
		ch.from[i] = int64(k)
	}
	return ch.from
}

// identity reports whether src lists exactly the n rows of rank r under
// book, local ids 0..n−1, in order.
func identity(src []int64, book *partition.Book, r, n int) bool {
	if len(src) != n {
		return false
	}
	for i, g := range src {
		if q, lid := book.Locate(g); q != r || lid != int64(i) {
			return false
		}
	}
	return true
}

// normalize makes ch's adjacency from its block (adjacency), once. On a
// partitioned dataset GCN needs the degrees of the sources: the rank's
// own (evalDeg) and its halo's (haloDeg, fetched once by
// fetchHaloDegrees), so nothing is communicated here.
func (t *trainer) normalize(ch *evalChunk) {
	if ch.adj != nil {
		return
	}
	var deg []int64
	if t.evalDeg != nil {
		deg = make([]int64, len(ch.src))
		for i, f := range t.sources(ch) {
			if f < 0 {
				deg[i] = int64(t.evalDeg.Data[^f])
			} else {
				deg[i] = t.haloDeg[f]
			}
		}
	}
	ch.adj, ch.blk = t.adjacency(ch.blk, deg), sampling.Block{}
}

// evalChunk is one chunk of layer-wise inference: the destinations'
// full-neighbour adjacency (normalised for GCN) and the plan that gathers
// its sources. The same chunks recur in every evaluation and, where the
// boundaries agree, in every layer, so they are kept while their bytes
// fit those of one chunk's gathered inputs (4·evalValues); beyond that
// they are built again each time.
type evalChunk struct {
	blk     sampling.Block // the destinations' full-neighbour block, until adj is made from it
	adj     *sparse.CSR
	src     []int64        // the sources' global ids
	plan    *alltoall.Plan // gathers the sources in a layer of one chunk (made on first use)
	from    []int64        // where the sources are in a layer of several chunks (trainer.sources)
	inPlace bool           // the sources are this rank's rows in order: a hidden layer reads them in place
}

// chunk returns the chunk owned[lo:hi], building it on first use.
func (t *trainer) chunk(owned []int64, lo, hi int) *evalChunk {
	key := [2]int{lo, hi}
	if ch, ok := t.chunkCache[key]; ok {
		return ch
	}
	var blk sampling.Block
	ok := false
	if t.inferWhole && lo == 0 && hi == len(owned) {
		blk, ok = t.identityBlock(owned)
	}
	if !ok {
		blk = sampling.FullBlockRows(t.d.Adj, t.d.RowLo, owned[lo:hi])
	}
	ch := &evalChunk{blk: blk, src: blk.Src}
	// One rank, one chunk: the sources are this rank's rows in order, so
	// nothing is exchanged.
	ch.inPlace = identity(blk.Src, t.ebook, t.c.Rank(), len(owned))
	// A cached chunk holds 8 bytes per entry (column index), destination
	// (row offset) and source (its id, and where it is: trainer.sources);
	// the cache holds as many bytes as one chunk's gathered inputs.
	size := 8 * (int64(len(blk.Adj.Indices)) + blk.Adj.NRows + 1 + 2*int64(len(blk.Src)))
	// The one chunk of inference on the device is kept whatever its size
	// (one block of the rank's vertices, shared by the layers).
	if t.inferWhole || t.chunkCached+size <= 4*t.evalValues() {
		if t.chunkCache == nil {
			t.chunkCache = map[[2]int]*evalChunk{}
		}
		t.chunkCache[key] = ch
		t.chunkCached += size
	}
	return ch
}

// evalValues returns the values a chunk of layer-wise inference gathers at
// most, and a quarter of the bytes its cached blocks hold: EvalMemory, and
// with dense features no more than an eighth of the store's own values (at
// least 4 Mi), so that inference's buffers stay small beside the state
// (evalChunkValues).
func (t *trainer) evalValues() int64 {
	if t.store.Sparse() {
		return t.cfg.EvalMemory
	}
	return evalChunkValues(t.cfg.EvalMemory, featShape{rows: int64(t.store.OwnRows()), cols: int64(t.store.Cols()), nnz: -1})
}
