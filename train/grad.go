package train

import (
	"fmt"
	"math"

	"gnnmpi/collective"
	"gnnmpi/internal/f16"
	"gnnmpi/metrics"
	"gnnmpi/model"
)

// gradSync sums a step's host gradients over the ranks (phase
// metrics.PhaseGrad) as PyTorch DDP does: the flat gradient vector
// (model.FlattenGrads order, layer 0 first) is cut from its end into
// buckets of Config.GradBucketMB MiB of float32 gradients, so that the
// last layers' buckets come first. As model.BackwardEach reports a layer's
// gradients final, the buckets lying in that layer and above are copied
// into the staging vector and handed, in order, to a goroutine that sums
// them one at a time on a communicator of their own (a collective.Dup of
// the trainer's), while the layers below are back-propagated; the step
// then waits for the rest (finish). Every rank launches the same buckets
// in the same order, so the sums are those of one Allreduce of the whole
// vector, element for element, and so are the bytes counted (the volume
// of an allreduce summed over the ranks is linear in its length).
//
// With one bucket (the model fits in GradBucketMB, or GradBucketMB is 0)
// there is nothing to overlap: finish sums the whole vector on the
// trainer's own communicator after backward, as it always did.
//
// With Config.GradDType bf16 or f16 every bucket travels as 16-bit words
// (collective.AllreduceSum16: float32 accumulation in rank order, one
// rounding; half the bytes), and is decoded back into the float32
// gradients the optimizer reads; the weights and optimizer state stay
// float32.
type gradSync struct {
	c       collective.Comm // the gradients' communicator: the trainer's with one bucket, else a duplicate the worker owns
	dtype   GradDType
	codec   collective.Codec16
	params  []*model.Param
	offs    []int // flat offset of each param, then the total
	layers  []int // flat offset of each layer's first param
	buckets []gradBucket
	flat    []float32 // the staging vector, NumParams float32
	half    []uint16  // its 16-bit copy with a 16-bit GradDType
	acc     []float32 // AllreduceSum16's scratch (one at a time: the worker's, or finish's)

	next int        // the next bucket to launch in the current step
	jobs chan int   // buckets to sum, in order (nil with one bucket)
	done chan error // their results, in the same order
}

// gradBucket is one bucket: elements [lo, hi) of the flat vector, final
// once layer's backward is done (the layer holding lo).
type gradBucket struct{ lo, hi, layer int }

// newGradSync returns the gradient exchange of model m over c. With more
// than one bucket it duplicates c (collective, under metrics.PhaseSetup)
// and starts the worker that close stops.
func newGradSync(c collective.Comm, m *model.Model, dtype GradDType, bucketMB float64) (*gradSync, error) {
	g := &gradSync{c: c, dtype: dtype, params: m.Params()}
	switch dtype {
	case GradBF16:
		g.codec = collective.Codec16{Decode: f16.DecodeBF16, Encode: f16.EncodeBF16}
	case GradF16:
		g.codec = collective.Codec16{Decode: f16.Decode, Encode: f16.Encode}
	}
	for _, layer := range m.Layers {
		g.layers = append(g.layers, len(g.offs))
		for range layer.Params() {
			g.offs = append(g.offs, 0)
		}
	}
	off := 0
	for i, p := range g.params {
		g.offs[i] = off
		off += len(p.W)
	}
	g.offs = append(g.offs, off)
	for l, first := range g.layers {
		g.layers[l] = g.offs[first]
	}
	n := m.NumParams()
	g.buckets = planBuckets(n, g.layers, bucketElems(bucketMB, n))
	g.flat = make([]float32, n)
	if dtype.half() {
		g.half = make([]uint16, n)
	}
	if len(g.buckets) <= 1 {
		return g, nil
	}
	restore := collective.SetPhase(c, metrics.PhaseSetup)
	gc, err := collective.Dup(c)
	restore()
	if err != nil {
		return nil, err
	}
	collective.SetPhase(gc, metrics.PhaseGrad) // the duplicate's own lane: only gradients travel on it
	g.c = gc
	g.jobs, g.done = make(chan int, len(g.buckets)), make(chan error, len(g.buckets))
	go g.work()
	return g, nil
}

// bucketElems returns the float32 elements of mb MiB, or n (one bucket)
// when mb is 0.
func bucketElems(mb float64, n int) int {
	if mb == 0 {
		return max(n, 1)
	}
	return max(int(mb*(1<<20)/4), 1)
}

// planBuckets cuts [0, n) from its end into buckets of size elements (the
// last one, at the start, shorter), in launch order. layers holds the flat
// offset of each layer's first element; a bucket is final once the
// backward of the layer holding its first element is done.
func planBuckets(n int, layers []int, size int) []gradBucket {
	var out []gradBucket
	for hi := n; hi > 0; hi -= size {
		lo := max(hi-size, 0)
		l := 0
		for k, o := range layers {
			if o <= lo {
				l = k
			}
		}
		out = append(out, gradBucket{lo: lo, hi: hi, layer: l})
	}
	return out
}

// close stops the worker and frees the duplicate communicator
// (collective when there is one).
func (g *gradSync) close() error {
	if g == nil || g.jobs == nil {
		return nil
	}
	close(g.jobs)
	g.jobs = nil
	return collective.Free(g.c)
}

// work sums the buckets it is handed, one at a time, in order.
func (g *gradSync) work() {
	for k := range g.jobs {
		b := g.buckets[k]
		g.done <- g.sum(g.c, b.lo, b.hi)
	}
}

// sum sums elements [lo, hi) of the staging vector over c, in place: as
// float32 by one Allreduce, or encoded to 16 bits, summed by
// AllreduceSum16 and decoded.
func (g *gradSync) sum(c collective.Comm, lo, hi int) error {
	x := g.flat[lo:hi]
	if !g.dtype.half() {
		return collective.AllreduceSlice(c, x, collective.Sum)
	}
	h := g.half[lo:hi]
	g.codec.Encode(h, x)
	if err := collective.AllreduceSum16(c, h, g.codec, g.acc); err != nil {
		return err
	}
	g.codec.Decode(x, h)
	return nil
}

// layerDone launches the buckets that are final once layer l's backward
// is done (model.BackwardEach's hook); with one bucket it does nothing.
func (g *gradSync) layerDone(l int) {
	if g.jobs == nil {
		return
	}
	for g.next < len(g.buckets) && g.buckets[g.next].layer >= l {
		b := g.buckets[g.next]
		g.copyRange(b.lo, b.hi, true)
		g.jobs <- g.next
		g.next++
	}
}

// finish completes the step's exchange after backward: it launches what
// is left (all of it with one bucket, or when backward had no seeds),
// waits for every bucket and writes the sums into the Params' G.
func (g *gradSync) finish() error {
	if g.jobs == nil {
		g.copyRange(0, len(g.flat), true)
		restore := collective.SetPhase(g.c, metrics.PhaseGrad)
		err := g.sum(g.c, 0, len(g.flat))
		restore()
		if err != nil {
			return err
		}
		g.copyRange(0, len(g.flat), false)
		return nil
	}
	g.layerDone(0)
	var first error
	for range g.buckets {
		if err := <-g.done; first == nil {
			first = err
		}
	}
	g.next = 0
	if first != nil {
		return first
	}
	g.copyRange(0, len(g.flat), false)
	return nil
}

// copyRange copies elements [lo, hi) of the flat gradient vector from the
// Params' G into the staging vector (in) or back (!in).
func (g *gradSync) copyRange(lo, hi int, in bool) {
	for i, p := range g.params {
		a, b := max(lo, g.offs[i]), min(hi, g.offs[i+1])
		if a >= b {
			continue
		}
		s, d := p.G[a-g.offs[i]:b-g.offs[i]], g.flat[a:b]
		if !in {
			s, d = d, s
		}
		copy(d, s)
	}
}

// sumFlat sums x, a whole flat gradient vector staged by the caller (the
// device step's), over c in g's dtype, blocking, under
// metrics.PhaseGrad.
func (g *gradSync) sumFlat(c collective.Comm, x []float32) error {
	defer collective.SetPhase(c, metrics.PhaseGrad)()
	if !g.dtype.half() {
		return collective.AllreduceSlice(c, x, collective.Sum)
	}
	h := make([]uint16, len(x))
	g.codec.Encode(h, x)
	if err := collective.AllreduceSum16(c, h, g.codec, nil); err != nil {
		return err
	}
	g.codec.Decode(x, h)
	return nil
}

// validateGrad checks GradDType and GradBucketMB.
func (c *Config) validateGrad() error {
	if _, err := ParseGradDType(string(c.GradDType)); c.GradDType != "" && err != nil {
		return err
	}
	if !(c.GradBucketMB >= 0) || math.IsInf(c.GradBucketMB, 0) {
		return fmt.Errorf("train: gradient bucket %v MiB; want a finite size ≥ 0 (0: one bucket)", c.GradBucketMB)
	}
	if c.GradDType.half() && c.GradComm == GradCommNCCL {
		return settingErrorf("train: %s %s sums the device gradients as float32; use %s %s with %s %s", SettingGradComm, GradCommNCCL, SettingGradComm, GradCommMPI, SettingGradDType, c.GradDType)
	}
	return nil
}
