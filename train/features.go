package train

import (
	"fmt"
	"slices"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/internal/rng"
	"gnnmpi/metrics"
	"gnnmpi/partition"
	"gnnmpi/sampling"
	"gnnmpi/sparse"
)

// StoreStats describe one rank's feature store (Result.Stores): the
// metrics' FeatureStore.
type StoreStats = metrics.FeatureStore

// featureComm returns the communicator of rank's replica group for
// feature replication c: the loader communicator t.lc itself for 1, else
// the column of a (p/c)×c grid split from it (reusing the 1.5D topology's
// grid when it has the same shape).
func (t *trainer) featureComm() (collective.Comm, error) {
	rc := t.cfg.Replication
	p := t.c.Size()
	if p%rc != 0 {
		return nil, fmt.Errorf("train: feature replication %d does not divide the %d ranks", rc, p)
	}
	if t.d.Book.Parts*rc != p {
		return nil, fmt.Errorf("train: the data was loaded for %d parts; %d ranks with feature replication %d need %d", t.d.Book.Parts, p, rc, p/rc)
	}
	if rc == 1 {
		return t.lc, nil
	}
	if t.grid != nil && t.grid.PC == rc {
		return t.grid.ColComm, nil
	}
	defer collective.SetPhase(t.lc, metrics.PhaseSetup)()
	g, err := collective.NewGrid(t.lc, p/rc, rc)
	if err != nil {
		return nil, err
	}
	t.fgrid = g
	return g.ColComm, nil
}

// ownedTrain returns the training vertices this rank draws its seeds
// from: those of its part, dealt round robin (in ascending id) over the c
// ranks that hold the part.
func ownedTrain(d *Data, rank, c int) []int64 {
	part, col := rank/c, rank%c
	var out []int64
	k := 0
	for _, g := range d.Split.Train {
		if d.Book.Owner(g) != part {
			continue
		}
		if k%c == col {
			out = append(out, g)
		}
		k++
	}
	return out
}

// evalBook returns the book of layer-wise inference over all p ranks: with
// feature replication c, part q's vertex of local id k goes to rank
// q·c + k mod c, so that every rank computes the outputs of a share of its
// own part. A contiguous book (made by partition.Contiguous, with no
// per-vertex arrays) is split instead into consecutive sub-ranges: part q's
// range into c ranges whose sizes differ by at most one, the first ones
// larger, rank q·c + j taking the j-th; each rank gets as many vertices as
// under the round-robin deal, and the evaluation book stays contiguous.
// Inference is exact under either assignment; only which rank computes a
// vertex, and so the bytes of evaluation, differ.
func evalBook(book *partition.Book, c int) (*partition.Book, error) {
	if c == 1 {
		return book, nil
	}
	if book.Part == nil {
		offsets := make([]int64, 0, book.Parts*c+1)
		for q := range book.Parts {
			lo, hi := book.Range(q)
			size, big := (hi-lo)/int64(c), (hi-lo)%int64(c)
			for j := range int64(c) {
				offsets = append(offsets, lo)
				lo += size
				if j < big {
					lo++
				}
			}
		}
		offsets = append(offsets, book.NumNodes())
		return partition.Contiguous(offsets, book.Method)
	}
	part := make([]int32, book.NumNodes())
	for g := range part {
		q, lid := book.Locate(int64(g))
		part[g] = int32(q)*int32(c) + int32(lid%int64(c))
	}
	return partition.New(part, book.Parts*c, book.Method)
}

// scores returns this rank's sparse cache scores under a cache policy (nil
// for none), over the vertices it knows: in-degree, VIP of its training
// vertices, SALIENT++'s VIP recurrence, or the access counts of simulated
// epochs. It is collective when the sampler's topology is distributed, and
// for the in-degree of a row block.
func (t *trainer) scores(policy alltoall.CachePolicy) (*sparse.Vec, error) {
	switch policy {
	case alltoall.CacheNone:
		return nil, nil
	case alltoall.CacheDegree:
		return t.inDegree()
	case alltoall.CacheVIP, CacheVIPRecurrence:
		nw, ok := t.sampler.(interface{ Topology() sampling.Topology })
		if !ok || t.cfg.Sampler != SamplerSAGE {
			return nil, fmt.Errorf("train: the %s cache models the node-wise sampler", policy)
		}
		if policy == CacheVIPRecurrence {
			return sampling.VIPRecurrence(nw.Topology(), t.owned, t.cfg.BatchSize, t.cfg.Fanouts)
		}
		return sampling.VIP(nw.Topology(), t.owned, t.cfg.BatchSize, t.cfg.Fanouts)
	case alltoall.CacheSim:
		return t.simulated(t.cfg.CacheSimEpochs)
	}
	return nil, fmt.Errorf("train: unknown cache policy %q", policy)
}

// inDegree returns the degree cache scores. A rank holding the whole
// adjacency (the replicated topology) scores every vertex by its in-degree,
// as it always has; a rank holding only its part's row block (global
// column ids) gets the in-degree of its halo and own vertices summed over
// the replica group (alltoall.InDegree, collective over t.fcomm, whose rank
// q holds part q's rows), counted under metrics.PhaseSetup.
func (t *trainer) inDegree() (*sparse.Vec, error) {
	adj, n := t.d.Adj, t.d.Book.NumNodes()
	if adj.NRows == n {
		s := make([]float64, n)
		for _, v := range adj.Indices {
			s[v]++
		}
		return sparse.VecFromDense(s), nil
	}
	defer collective.SetPhase(t.lc, metrics.PhaseSetup)()
	return alltoall.InDegree(t.fcomm, t.d.Book, adj)
}

// simulated counts, per vertex, the minibatches of epochs simulated epochs
// whose input includes it: the real schedule and sampler with streams of
// their own, so the training epochs draw differently. The counts are kept
// for the vertices drawn only.
func (t *trainer) simulated(epochs int) (*sparse.Vec, error) {
	count := map[int64]float64{}
	seed := rng.Mix(t.cfg.Seed, streamSim)
	for e := 1; e <= epochs; e++ {
		mbs, err := t.sampleEpoch(seed, e)
		if err != nil {
			return nil, err
		}
		for _, mb := range mbs {
			for _, v := range mb.Input() {
				count[v]++
			}
		}
	}
	v := &sparse.Vec{N: t.d.Book.NumNodes(), Indices: make([]int64, 0, len(count))}
	for gid := range count {
		v.Indices = append(v.Indices, gid)
	}
	slices.Sort(v.Indices)
	v.Values = make([]float64, len(v.Indices))
	for k, gid := range v.Indices {
		v.Values[k] = count[gid]
	}
	return v, nil
}

// sampleEpoch samples every minibatch of one epoch of the schedule under
// seed, Bulk at a time, with the training loop's keys. It is collective
// when the topology is distributed.
func (t *trainer) sampleEpoch(seed uint64, epoch int) ([]*sampling.MiniBatch, error) {
	r := t.c.Rank()
	batches := t.sched.batches(seed, epoch, r)
	var out []*sampling.MiniBatch
	for i := 0; i < len(batches); i += t.cfg.Bulk {
		bulk := batches[i:min(i+t.cfg.Bulk, len(batches))]
		mbs, err := t.sampler.Sample(bulk, sampleKeys(seed, epoch, i, len(bulk), t.sampleRank(r)))
		if err != nil {
			return nil, err
		}
		out = append(out, mbs...)
	}
	return out, nil
}

// sampleKeys returns the sampling keys of the n minibatches from step i of
// an epoch on rank r: one stream per (seed, epoch, step, rank), or with
// r < 0 one per (seed, epoch, step), the same on every rank (the elastic
// schedule's: a vertex's neighbours are then drawn alike whatever the
// rank that samples it, so the step's samples do not depend on p).
func sampleKeys(seed uint64, epoch, i, n, r int) []uint64 {
	keys := make([]uint64, n)
	for x := range keys {
		if r < 0 {
			keys[x] = rng.Mix(seed, streamSample, uint64(epoch), uint64(i+x))
		} else {
			keys[x] = rng.Mix(seed, streamSample, uint64(epoch), uint64(i+x), uint64(r))
		}
	}
	return keys
}

// sampleRank is the rank that keys rank r's sampling streams (sampleKeys):
// r, or −1 with the elastic schedule.
func (t *trainer) sampleRank(r int) int {
	if t.sched.elastic {
		return -1
	}
	return r
}

// free releases the grids and the loader communicator the trainer built.
// It is collective.
func (t *trainer) free() error {
	if err := t.closeDevice(); err != nil {
		return err
	}
	for _, g := range []*collective.Grid{t.grid, t.fgrid} {
		if g != nil {
			if err := g.Free(); err != nil {
				return err
			}
		}
	}
	if err := t.gsync.close(); err != nil {
		return err
	}
	return collective.Free(t.lc)
}

// cacheRows returns ⌊frac·n/K⌋ for K parts.
func cacheRows(frac float64, n int64, parts int) int {
	return int(frac * float64(n) / float64(parts))
}

// newStore builds this rank's feature store of feat (its part's rows,
// dense or sparse) under a policy and cache fraction, with the run's dtype
// and GPU fraction, counting the cache fill under metrics.PhaseSetup. It is
// collective.
func (t *trainer) newStore(feat Features, policy alltoall.CachePolicy, frac float64) (*alltoall.Store, error) {
	score, err := t.scores(policy)
	if err != nil {
		return nil, err
	}
	return t.storeOf(feat, score, cacheRows(frac, t.d.Book.NumNodes(), t.d.Book.Parts))
}

// storeOf builds the store of feat with the given scores and cache rows:
// alltoall.NewStore for dense rows, alltoall.NewStoreHalf for half ones
// (Data.Feat16), alltoall.NewSparseStore for sparse
// ones (whose fetches move only the nonzeros). It is collective.
func (t *trainer) storeOf(feat Features, score *sparse.Vec, rows int) (*alltoall.Store, error) {
	defer collective.SetPhase(t.lc, metrics.PhaseSetup)() // the store's group is split from t.lc
	o := alltoall.StoreOptions{DType: t.cfg.FeatureDType, Score: score, CacheRows: rows, GPUFrac: t.cfg.GPUFrac}
	if feat.CSR != nil {
		return alltoall.NewSparseStore(t.fcomm, t.d.Book, feat.CSR, o)
	}
	if feat.Half != nil {
		return alltoall.NewStoreHalf(t.fcomm, t.d.Book, feat.Half, o)
	}
	return alltoall.NewStore(t.fcomm, t.d.Book, feat.Dense, o)
}

// storeStats gathers every rank's StoreStats.
func (t *trainer) storeStats() ([]StoreStats, error) {
	s := t.store
	tiers := s.Tiers()
	mine := []int64{s.Bytes(), int64(s.OwnRows()), int64(s.CachedRows()), int64(tiers[0].Rows), tiers[0].Bytes}
	defer collective.SetPhase(t.c, metrics.PhaseSetup)()
	all, _, err := collective.AllgatherSlice(t.c, mine)
	if err != nil {
		return nil, err
	}
	out := make([]StoreStats, t.c.Size())
	for r := range out {
		v := all[r*5 : r*5+5]
		out[r] = StoreStats{Bytes: v[0], OwnRows: v[1], CachedRows: v[2], GPURows: v[3], GPUBytes: v[4]}
	}
	return out, nil
}
