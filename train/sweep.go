package train

import (
	"fmt"
	"runtime"
	"time"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/metrics"
	"gnnmpi/sparse"
)

// SweepPoint is the feature traffic of one cache policy and fraction in
// FetchSweep, per epoch and summed over ranks unless said otherwise: the
// metrics' SweepPoint.
type SweepPoint = metrics.SweepPoint

// FetchSweep measures the feature traffic of cfg's training minibatches
// under every cache policy and fraction, without training: it samples
// epochs epochs of the schedule once (the training loop's seeds and keys),
// then for each policy computes the scores, and for each fraction builds
// the store (cfg.Replication, cfg.FeatureDType), replays every minibatch's
// fetch and reports the mean per epoch to each (in order, on every rank).
// cfg.Cache and cfg.CacheFrac are ignored.
//
// FetchSweep is collective over c, like Run.
func FetchSweep(c collective.Comm, d *Data, cfg Config, epochs int, policies []alltoall.CachePolicy, fracs []float64, each func(SweepPoint) error) error {
	cfg.Cache, cfg.CacheFrac = alltoall.CacheNone, 0
	cfg, err := cfg.Resolve(c.Size())
	if err != nil {
		return err
	}
	if epochs < 1 {
		return fmt.Errorf("train: sweep of %d epochs", epochs)
	}
	for _, pol := range policies {
		probe := cfg
		probe.Cache, probe.CacheFrac = pol, 1
		if pol == alltoall.CacheNone {
			probe.CacheFrac = 0
		}
		if err := probe.Validate(); err != nil {
			return err
		}
	}
	feat := d.Features(cfg.FeatureNorm.Resolve(d.NonNegative))
	t, err := newTrainer(c, d, cfg)
	if err != nil {
		return err
	}
	defer t.free()
	inputs, most, err := t.sweepInputs(epochs)
	if err != nil {
		return err
	}
	// One result buffer, as large as the longest input, serves every
	// fetch: with wide dense rows it is the largest allocation of the
	// sweep. Sparse rows are fetched sparse, into a buffer of their own.
	var xbuf *dense.Matrix
	if feat.CSR == nil {
		xbuf = dense.New(most, feat.Cols())
	}
	for _, pol := range policies {
		t0 := time.Now()
		score, err := t.scores(pol)
		if err != nil {
			return err
		}
		scoreS, err := slowest(c, time.Since(t0).Seconds())
		if err != nil {
			return err
		}
		for _, frac := range fracs {
			if pol == alltoall.CacheNone && frac > 0 {
				continue
			}
			pt := SweepPoint{Cache: string(pol), CacheFrac: frac, CacheRows: cacheRows(frac, d.Book.NumNodes(), d.Book.Parts), ScoreSeconds: scoreS}
			if xbuf, err = t.sweepPoint(&pt, feat, score, inputs, xbuf, epochs); err != nil {
				return err
			}
			if err := each(pt); err != nil {
				return err
			}
		}
	}
	return nil
}

// sweepInputs samples epochs epochs of the schedule (the training loop's
// seeds and keys) and returns every minibatch's input and the length of
// the longest.
func (t *trainer) sweepInputs(epochs int) (inputs [][]int64, most int, err error) {
	for e := 1; e <= epochs; e++ {
		mbs, err := t.sampleEpoch(t.cfg.Seed, e)
		if err != nil {
			return nil, 0, err
		}
		for _, mb := range mbs {
			inputs = append(inputs, mb.Input())
			most = max(most, len(mb.Input()))
		}
	}
	return inputs, most, nil
}

// sweepPoint builds the store of pt's cache (pt.CacheRows rows of highest
// score), replays the fetch of every input into xbuf and fills in pt's
// traffic per epoch over epochs epochs. It returns the grown xbuf.
func (t *trainer) sweepPoint(pt *SweepPoint, feat Features, score *sparse.Vec, inputs [][]int64, xbuf *dense.Matrix, epochs int) (*dense.Matrix, error) {
	c := t.c
	// Collect the previous store before building the next, so that the
	// heap never holds two (the fetches allocate too little for the
	// collector to run on its own in between).
	t.store = nil
	runtime.GC()
	t0 := time.Now()
	var err error
	if t.store, err = t.storeOf(feat, score, pt.CacheRows); err != nil {
		return xbuf, err
	}
	fillS, err := slowest(c, time.Since(t0).Seconds())
	if err != nil {
		return xbuf, err
	}
	before := collective.SnapshotOf(c)
	var cnt alltoall.Counts
	t0 = time.Now()
	restore := collective.SetPhase(t.lc, metrics.PhaseFetch) // the store's group is split from t.lc
	var sbuf *sparse.Matrix[float32]
	for _, ids := range inputs {
		var got alltoall.Counts
		if t.store.Sparse() {
			sbuf, got, err = t.store.FetchSparseTo(sbuf, ids)
		} else {
			xbuf, got, err = t.store.FetchTo(xbuf, ids)
		}
		if err != nil {
			restore()
			return xbuf, err
		}
		cnt = cnt.Add(got)
	}
	restore()
	secs := time.Since(t0).Seconds()
	sent := collective.SnapshotOf(c).Sub(before).Phase(metrics.PhaseFetch).SentBytes
	restore = collective.SetPhase(c, metrics.PhaseMetrics)
	err = collective.AllreduceVars(c, collective.Sum, &cnt.Rows, &cnt.Hits, &cnt.Remote, &sent)
	storeBytes, cached := t.store.Bytes(), int64(t.store.CachedRows())
	if err == nil {
		err = collective.AllreduceVars(c, collective.Max, &storeBytes, &cached)
	}
	if err == nil {
		secs, err = slowest(c, secs)
	}
	restore()
	if err != nil {
		return xbuf, err
	}
	e := float64(epochs)
	pt.FetchRows, pt.CacheHits, pt.RemoteRows = float64(cnt.Rows)/e, float64(cnt.Hits)/e, float64(cnt.Remote)/e
	pt.FetchBytes, pt.FetchSeconds, pt.FillSeconds = float64(sent)/e, secs/e, fillS
	pt.StoreBytesMax, pt.CachedRowsMax = storeBytes, cached
	return xbuf, nil
}

// slowest returns the largest x over the ranks.
//
// slowest is collective over c.
func slowest(c collective.Comm, x float64) (float64, error) {
	v := []float64{x}
	err := collective.AllreduceSlice(c, v, collective.Max)
	return v[0], err
}
