package train

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gnnmpi/collective"
	"gnnmpi/internal/f16"
	"gnnmpi/metrics"
	"gnnmpi/model"
)

// gradSync sums a step's host gradients over the ranks (phase
// metrics.PhaseGrad) and applies the optimizer, as PyTorch DDP does:
// every parameter's gradient is cut from its end into buckets of at most
// Config.GradBucketMB MiB of float32, taken from the last parameter to the
// first, so that the last layer's buckets come first. As
// model.BackwardEach reports a layer's gradients final, its buckets are
// handed, in order, to a goroutine that sums them one at a time, in place
// in the Params' G, on a communicator of its own (a collective.Dup of the
// trainer's), while the layers below are back-propagated. After backward
// the step waits for each bucket in turn and, with an optimizer that
// updates elementwise (model.RangeStepper: Adam, SGD), applies its update
// to that bucket at once, while the next bucket's sum is in flight. Every
// rank launches the same buckets in the same order, so the sums are those
// of one Allreduce of the whole gradient, element for element, and so are
// the bytes counted (the volume of an allreduce summed over the ranks is
// linear in its length).
//
// With one bucket (the model fits in GradBucketMB, or GradBucketMB is 0)
// there is nothing to overlap: the gradients are flattened into one
// vector, summed on the trainer's own communicator after backward, and the
// optimizer steps, as it always did. When the ranks share memory
// (collective.NewSharedSum) and the sums are float32, the params'
// gradients live in this rank's shared segment from the first step on
// (bind): backward adds into it, collective.SharedSum sums in place in
// rank order, and the optimizer reads the sums there, with no flattening,
// no message and no copy back.
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
	buckets []gradBucket
	flat    []float32             // the flat vector of the one bucket, when there is one and shared is nil
	shared  *collective.SharedSum // the one float32 bucket's sum when the ranks share memory
	bound   bool                  // the params' G are views of shared's Local (bind)
	half    []uint16              // the 16-bit words in flight, with a 16-bit GradDType (flat positions)
	scratch collective.Scratch16  // of the one goroutine that sums: the worker, or the step's with one bucket

	skew time.Duration // with shared: the time the sums waited in their first Sync (takeWait)

	next int        // the next bucket to launch in the current step
	jobs chan int   // buckets to sum, in order (nil with one bucket)
	done chan error // their results, in the same order
}

// gradBucket is one bucket: elements [lo, hi) of the flat gradient vector,
// all in param's G, final once the backward of layer is done.
type gradBucket struct{ lo, hi, param, layer int }

// newGradSync returns the gradient exchange of model m over c. With more
// than one bucket it duplicates c (collective, under metrics.PhaseSetup)
// and starts the worker that close stops.
func newGradSync(c collective.Comm, m *model.Model, dtype GradDType, bucketMB float64) (*gradSync, error) {
	g := &gradSync{c: c, dtype: dtype, params: m.Params()}
	switch dtype {
	case GradBF16:
		g.codec = collective.Codec16{Decode: f16.DecodeBF16, Encode: f16.EncodeBF16, Add: f16.AddBF16}
	case GradF16:
		g.codec = collective.Codec16{Decode: f16.Decode, Encode: f16.Encode, Add: f16.Add}
	}
	var layerOf []int // of each param
	for l, layer := range m.Layers {
		for range layer.Params() {
			layerOf = append(layerOf, l)
		}
	}
	off := 0
	for _, p := range g.params {
		g.offs = append(g.offs, off)
		off += len(p.W)
	}
	g.offs = append(g.offs, off)
	n := m.NumParams()
	if dtype.half() {
		g.half = make([]uint16, n)
	}
	size := bucketElems(bucketMB, n)
	if size >= n {
		g.buckets = []gradBucket{{lo: 0, hi: n, param: -1}}
		if !dtype.half() {
			shared, err := collective.NewSharedSum(c, n)
			switch {
			case err == nil:
				g.shared = shared
				return g, nil
			case !errors.Is(err, collective.ErrNotShared):
				return nil, err
			}
		}
		g.flat = make([]float32, n)
		return g, nil
	}
	g.buckets = planBuckets(g.offs, layerOf, size)
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

// bucketElems returns the float32 elements of mb MiB (at least 1), or n
// (one bucket) when mb is 0.
func bucketElems(mb float64, n int) int {
	if mb == 0 {
		return n
	}
	return max(int(mb*(1<<20)/4), 1)
}

// planBuckets cuts every param's elements (param i holds flat elements
// [offs[i], offs[i+1]) and belongs to layer layerOf[i]) from their end
// into buckets of at most size elements, from the last param to the
// first: the order in which backward finishes them.
func planBuckets(offs, layerOf []int, size int) []gradBucket {
	var out []gradBucket
	for i := len(layerOf) - 1; i >= 0; i-- {
		for hi := offs[i+1]; hi > offs[i]; hi -= size {
			out = append(out, gradBucket{lo: max(hi-size, offs[i]), hi: hi, param: i, layer: layerOf[i]})
		}
	}
	return out
}

// close stops the worker and frees the duplicate communicator
// (collective when there is one).
func (g *gradSync) close() error {
	if g == nil {
		return nil
	}
	if g.shared != nil {
		if g.bound {
			for _, p := range g.params {
				p.BindGrad(make([]float32, len(p.W)))
			}
			g.bound = false
		}
		err := g.shared.Free()
		g.shared = nil
		return err
	}
	if g.jobs == nil {
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
		o := g.offs[b.param]
		g.done <- g.sum(g.c, g.params[b.param].Grad()[b.lo-o:b.hi-o], b.lo)
	}
}

// sum sums x, the gradients from flat element lo on, over c in place: as
// float32 by one Allreduce, or encoded to 16 bits, summed by
// AllreduceSum16 and decoded.
func (g *gradSync) sum(c collective.Comm, x []float32, lo int) error {
	if !g.dtype.half() {
		return collective.AllreduceSlice(c, x, collective.Sum)
	}
	h := g.half[lo : lo+len(x)]
	g.codec.Encode(h, x)
	if err := collective.AllreduceSum16(c, h, g.codec, &g.scratch); err != nil {
		return err
	}
	g.codec.Decode(x, h)
	return nil
}

// bind makes the params' gradients views of this rank's shared segment
// (their values copied), so that backward adds into the memory the other
// ranks read and the sums land where the optimizer reads them: nothing is
// flattened or copied back. close gives them Go memory again.
func (g *gradSync) bind() {
	local := g.shared.Local()
	for i, p := range g.params {
		v := local[g.offs[i]:g.offs[i+1]:g.offs[i+1]]
		p.BindGrad(v)
	}
	g.bound = true
}

// layerDone launches the buckets that are final once layer l's backward
// is done (model.BackwardEach's hook); with one bucket it does nothing.
func (g *gradSync) layerDone(l int) {
	if g.jobs == nil {
		return
	}
	for g.next < len(g.buckets) && g.buckets[g.next].layer >= l {
		g.jobs <- g.next
		g.next++
	}
}

// step completes the exchange after backward and applies opt: it launches
// the buckets left (all, when backward had no seeds), waits for each in
// turn and, when opt is a model.RangeStepper, updates that bucket's
// weights at once; otherwise it steps once all have arrived. It returns
// the time it was blocked waiting for sums (with one bucket: the
// flattening, the one Allreduce and the copy back, as before buckets),
// the step's exposed gradient exchange.
func (g *gradSync) step(opt model.Optimizer) (time.Duration, error) {
	if g.shared != nil {
		t0 := time.Now()
		if !g.bound {
			g.bind()
		}
		// The sum reads the segment itself: a gradient still marked zero
		// (no backward wrote it, as in a step without seeds) is cleared
		// there.
		for _, p := range g.params {
			p.Grad()
		}
		restore := collective.SetPhase(g.c, metrics.PhaseGrad)
		err := g.shared.Sum()
		restore()
		waited := time.Since(t0)
		g.skew += g.shared.Wait()
		if err != nil {
			return waited, err
		}
		opt.Step(g.params)
		return waited, nil
	}
	if g.jobs == nil {
		t0 := time.Now()
		off := 0
		for _, p := range g.params {
			off += copy(g.flat[off:], p.Grad())
		}
		restore := collective.SetPhase(g.c, metrics.PhaseGrad)
		err := g.sum(g.c, g.flat, 0)
		restore()
		if err == nil {
			off = 0
			for _, p := range g.params {
				off += copy(p.Grad(), g.flat[off:])
			}
		}
		waited := time.Since(t0)
		if err != nil {
			return waited, err
		}
		opt.Step(g.params)
		return waited, nil
	}
	g.layerDone(0)
	rs, ranged := opt.(model.RangeStepper)
	if ranged {
		rs.Begin(g.params)
	}
	var waited time.Duration
	var first error
	for _, b := range g.buckets {
		t0 := time.Now()
		err := <-g.done
		waited += time.Since(t0)
		if first == nil {
			first = err
		}
		if first == nil && ranged {
			rs.StepRange(g.params, b.lo, b.hi)
		}
	}
	g.next = 0
	if first != nil {
		return waited, first
	}
	if !ranged {
		opt.Step(g.params)
	}
	return waited, nil
}

// sumFlat sums x, a whole flat gradient vector staged by the caller (the
// device step's), over c in g's dtype, blocking, under
// metrics.PhaseGrad.
func (g *gradSync) sumFlat(c collective.Comm, x []float32) error {
	defer collective.SetPhase(c, metrics.PhaseGrad)()
	if g.shared != nil && !g.bound && c == g.c && len(x) == len(g.shared.Local()) {
		copy(g.shared.Local(), x)
		err := g.shared.Sum()
		g.skew += g.shared.Wait()
		copy(x, g.shared.Local())
		return err
	}
	if !g.dtype.half() {
		return collective.AllreduceSlice(c, x, collective.Sum)
	}
	if cap(g.half) < len(x) {
		g.half = make([]uint16, len(x))
	}
	h := g.half[:len(x)]
	g.codec.Encode(h, x)
	if err := collective.AllreduceSum16(c, h, g.codec, &g.scratch); err != nil {
		return err
	}
	g.codec.Decode(x, h)
	return nil
}

// takeWait returns the time the shared-memory sums waited for the other
// ranks' gradients since the last call (0 without them), and resets it.
func (g *gradSync) takeWait() time.Duration {
	w := g.skew
	g.skew = 0
	return w
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
