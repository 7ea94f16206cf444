package train

import (
	"sync"
	"time"

	"gnnmpi/metrics"
)

// dataPath is the loader's own timing over a run (metrics.DataPath): every
// rank's seconds of sampling and fetching, from the epochs' summaries
// (which gather every rank's phase times anyway), the minibatches each
// rank prepared, and this rank's fetched bytes and fetch seconds.
type dataPath struct {
	batches   int64
	secs      []float64 // per rank: sample + fetch seconds
	bytes     int64     // this rank's fetched input rows (trainer.inputBytes)
	fetchSecs float64   // this rank's fetch seconds
}

// addEpoch adds this rank's preparation of an epoch, ls.
func (p *dataPath) addEpoch(ls *loadState) {
	p.batches += int64(len(ls.batches))
	p.bytes += ls.bytes
	p.fetchSecs += ls.secs[metrics.PhaseFetch]
}

// addRanks adds every rank's sample and fetch seconds of an epoch from the
// summary's vector all (rank r's times at all[w·r+1+k] for timePhases[k]).
func (p *dataPath) addRanks(all []float64, w int) {
	ranks := len(all) / w
	if len(p.secs) != ranks {
		p.secs = make([]float64, ranks)
	}
	for k, ph := range timePhases {
		if ph != metrics.PhaseSample && ph != metrics.PhaseFetch {
			continue
		}
		for r := range ranks {
			p.secs[r] += all[w*r+1+k]
		}
	}
}

// record returns the data path's record, or nil before any epoch ran. It
// measures the copy bandwidth (copyGBps) the first time the process needs
// it.
func (p *dataPath) record() *metrics.DataPath {
	if p.batches == 0 || len(p.secs) == 0 {
		return nil
	}
	d := &metrics.DataPath{Minibatches: p.batches, GatheredBytes: p.bytes, CopyGBps: copyGBps()}
	for _, s := range p.secs {
		d.MinibatchesPerS = append(d.MinibatchesPerS, rate(float64(p.batches), s))
	}
	d.GatherGBps = rate(float64(p.bytes), p.fetchSecs) / 1e9
	return d
}

// rate returns n/secs, or 0 when secs is not positive.
func rate(n, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return n / secs
}

// inputBytes returns the bytes of the input rows a fetch delivered into
// x, in the form t fetches them (not every field of x is current: a slot
// that inference used keeps its dense buffer beside the sparse rows):
// the device batch's float32 rows with a device tier, the arrays of
// sparse rows (int64 column indices, float32 values, int64 row offsets)
// from a sparse store, else rows × features × 4.
func (t *trainer) inputBytes(x *inputs) int64 {
	switch {
	case t.dev != nil && t.dev.tier != nil:
		return 4 * int64(x.gpu.Rows) * int64(x.gpu.Cols)
	case t.store.Sparse():
		return 12*x.csr.NNZ() + 8*(x.csr.NRows+1)
	default:
		return 4 * int64(len(x.dense.Data))
	}
}

// copyBufBytes is the size of the buffer copyGBps copies: larger than the
// last-level caches of the machines this runs on, so that the copy runs
// at memory speed.
const copyBufBytes = 32 << 20

var copyOnce = sync.OnceValue(measureCopy)

// copyGBps returns the process's copy bandwidth in GB/s (10⁹ bytes read
// per second), measured once per process (in-process ranks share it).
func copyGBps() float64 { return copyOnce() }

// measureCopy copies a buffer of copyBufBytes into another three times
// (the first also faults the pages in) and returns the best rate.
func measureCopy() float64 {
	src, dst := make([]byte, copyBufBytes), make([]byte, copyBufBytes)
	for i := range src {
		src[i] = byte(i)
	}
	best := 0.0
	for range 3 {
		t0 := time.Now()
		copy(dst, src)
		best = max(best, rate(copyBufBytes, time.Since(t0).Seconds()))
	}
	return best / 1e9
}
