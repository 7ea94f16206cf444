package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/partition"
)

// planBuckets cuts every param from its end, last param first, so a
// bucket never spans two params and comes in the order backward finishes
// them.
func TestPlanBuckets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		offs    []int // of each param, then the total
		layerOf []int // of each param
		size    int
		want    []gradBucket
	}{
		{"one per param", []int{0, 6, 10}, []int{0, 1}, 10, []gradBucket{{6, 10, 1, 1}, {0, 6, 0, 0}}},
		{"cut from the end", []int{0, 6, 10}, []int{0, 1}, 4, []gradBucket{{6, 10, 1, 1}, {2, 6, 0, 0}, {0, 2, 0, 0}}},
		{"a short last piece", []int{0, 7}, []int{0}, 3, []gradBucket{{4, 7, 0, 0}, {1, 4, 0, 0}, {0, 1, 0, 0}}},
		{"two params a layer", []int{0, 4, 5, 9, 10}, []int{0, 0, 1, 1}, 2,
			[]gradBucket{{9, 10, 3, 1}, {7, 9, 2, 1}, {5, 7, 2, 1}, {4, 5, 1, 0}, {2, 4, 0, 0}, {0, 2, 0, 0}}},
		{"single elements", []int{0, 1, 2}, []int{0, 1}, 1, []gradBucket{{1, 2, 1, 1}, {0, 1, 0, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, planBuckets(tc.offs, tc.layerOf, tc.size))
		})
	}
}

// gradBytes returns the grad phase's bytes of one step over p ranks with
// n parameters of elemSize bytes: the allreduce volume summed over ranks.
func gradBytes(p, n, elemSize int) int64 {
	var b int64
	for r := range p {
		s, _ := collective.AllreduceVolume(r, p, n, elemSize)
		b += s
	}
	return b
}

// Buckets summed during backward, each stepped by the optimizer as it
// arrives, give the unbucketed run's epochs bit for bit (losses,
// accuracies, bytes): elementwise sums in the same rank order and an
// elementwise update, whatever the cut. The small sizes cut every
// weight matrix into many buckets.
func TestGradBucketsSameCurve(t *testing.T) {
	for _, tc := range []struct {
		kind model.Kind
		opt  Optimizer
	}{{model.KindSAGE, OptimizerAdam}, {model.KindGAT, OptimizerAdam}, {model.KindSAGE, OptimizerSGD}} {
		kind := tc.kind
		for _, p := range []int{2, 3} {
			cfg := testConfig(kind)
			cfg.Epochs = 3
			cfg.Optimizer, cfg.Momentum = tc.opt, 0.9
			cfg.GradBucketMB = 0
			want := runP(t, p, cfg, nil)
			for _, mb := range []float64{0.0001, 0.001, 25} {
				cfg.GradBucketMB = mb
				got := runP(t, p, cfg, nil)
				if mb == 0.0001 { // 26 elements a bucket
					require.Less(t, 4*bucketElems(mb, got.NumParams), got.NumParams, "%s: several buckets a param", kind)
				}
				require.Equal(t, untimed(want.Epochs), untimed(got.Epochs), "%s p=%d bucket %g MiB", kind, p, mb)
				for _, e := range got.Epochs {
					require.Equal(t, gradBytes(p, got.NumParams, 4)*int64(e.Batches), e.Bytes[metrics.PhaseGrad])
					require.Equal(t, e.PhaseSeconds[metrics.PhaseGrad], e.GradExposedSeconds)
				}
			}
		}
	}
}

// With bf16 or f16 the gradients travel in half the bytes; the curve is
// deterministic (the same seed twice, and bucketed or not, give the same
// losses), differs from float32's only by rounding, and stays close to it.
func TestGradHalfPrecision(t *testing.T) {
	for _, p := range []int{2, 3} {
		cfg := testConfig("sage")
		cfg.Epochs = 4
		f32 := runP(t, p, cfg, nil)
		for _, dt := range []GradDType{GradBF16, GradF16} {
			cfg.GradDType = dt
			cfg.GradBucketMB = 0
			a := runP(t, p, cfg, nil)
			cfg.GradBucketMB = 0.001
			b := runP(t, p, cfg, nil)
			require.Equal(t, untimed(a.Epochs), untimed(b.Epochs), "%s p=%d: bucketed", dt, p)
			c := runP(t, p, cfg, nil)
			require.Equal(t, losses(b), losses(c), "%s p=%d: same seed, same losses", dt, p)
			require.NotEqual(t, losses(f32), losses(a), "%s p=%d: rounded", dt, p)
			for i, e := range a.Epochs {
				half := gradBytes(p, a.NumParams, 2) * int64(e.Batches)
				require.Equal(t, half, e.Bytes[metrics.PhaseGrad], "%s p=%d epoch %d", dt, p, e.Epoch)
				require.Equal(t, f32.Epochs[i].Bytes[metrics.PhaseGrad], 2*half, "half of float32's")
				// bf16 keeps 8 significant bits (relative rounding ≤ 2⁻⁹ per
				// gradient): the curves differ by about 1e-4 here, while the
				// loss falls by 0.06 to 0.5 an epoch.
				require.InDelta(t, f32.Epochs[i].Loss, e.Loss, 0.01, "%s p=%d epoch %d", dt, p, e.Epoch)
			}
		}
	}
}

// The gradients' type and buckets are not the model's state: a float32
// checkpoint resumes with buckets (bit-identical to the uninterrupted
// run) or with bf16 (close to it).
func TestResumeWithOtherGradExchange(t *testing.T) {
	cfg := testConfig("sage")
	cfg.Epochs = 6
	full := runP(t, 2, cfg, nil)
	dir := t.TempDir()
	cfg.CheckpointDir, cfg.CheckpointEvery, cfg.Epochs = dir, 1, 3
	runP(t, 2, cfg, nil)

	cfg.Epochs, cfg.Resume, cfg.CheckpointEvery = 6, true, 100
	cfg.GradBucketMB = 0.001
	bucketed := runP(t, 2, cfg, nil)
	require.Equal(t, losses(full), losses(bucketed))

	cfg.GradBucketMB, cfg.GradDType = 0, GradBF16
	half := runP(t, 2, cfg, nil)
	require.Equal(t, losses(full)[:3], losses(half)[:3], "the checkpoint's history")
	for i := 3; i < 6; i++ {
		require.InDelta(t, full.Epochs[i].Loss, half.Epochs[i].Loss, 0.01, "epoch %d", i+1)
	}
}

// Bad gradient settings are errors naming the setting.
func TestGradConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"unknown dtype", func(c *Config) { c.GradDType = "f8" }, "gradient dtype"},
		{"negative bucket", func(c *Config) { c.GradBucketMB = -1 }, "gradient bucket"},
		{"NaN bucket", func(c *Config) { c.GradBucketMB = math.NaN() }, "gradient bucket"},
		{"half with nccl", func(c *Config) { c.GradDType, c.GradComm, c.Device = GradBF16, GradCommNCCL, DeviceCUDA }, "GradComm nccl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("sage")
			tc.edit(&cfg)
			require.ErrorContains(t, cfg.Validate(), tc.want)
		})
	}
}

// The device step (on the fake GPU) sums its staged gradients in bf16 as
// the host step does: half the bytes, and the CPU's bf16 curve to float32
// rounding.
func TestDeviceGradBF16(t *testing.T) {
	useFakeGPU(t)
	cfg := testConfig("sage")
	cfg.Epochs, cfg.GradDType = 3, GradBF16
	cpu := runP(t, 2, cfg, nil)
	cfg.Device = DeviceCUDA
	gpu := runP(t, 2, cfg, nil)
	for e := range cpu.Epochs {
		c, g := cpu.Epochs[e], gpu.Epochs[e]
		require.InDelta(t, c.Loss, g.Loss, 1e-4*math.Abs(c.Loss), "epoch %d", e+1)
		require.Equal(t, gradBytes(2, cpu.NumParams, 2)*int64(c.Batches), g.Bytes[metrics.PhaseGrad], "epoch %d", e+1)
	}
}

// unshared hides its communicator's collective.SharedMemory (and every
// other optional capability), as MPI ranks on several hosts would: the
// gradients are then summed by Allreduce.
type unshared struct{ collective.Comm }

// With one float32 bucket on ranks that share memory, the gradients are
// summed through collective.SharedSum (its wait is measured) and give the
// Allreduce's run bit for bit: the same losses, accuracies and bytes
// (the grad phase's an allreduce's volume).
func TestGradSharedSum(t *testing.T) {
	for _, kind := range []model.Kind{model.KindSAGE, model.KindGCN} {
		for _, p := range []int{1, 2, 3} {
			cfg := testConfig(kind)
			cfg.Epochs = 2
			run := func(wrap func(collective.Comm) collective.Comm) *Result {
				results := make([]*Result, p)
				book := partition.Random(sbm().NumNodes, p, 5)
				err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
					d, err := Distribute(sbm(), "random", book, c.Rank())
					if err != nil {
						return err
					}
					results[c.Rank()], err = Run(collective.WithStats(wrap(c), nil), d, cfg, Hooks{})
					return err
				})
				require.NoError(t, err)
				return results[0]
			}
			shared := run(func(c collective.Comm) collective.Comm { return c })
			plain := run(func(c collective.Comm) collective.Comm { return unshared{c} })
			require.Equal(t, untimed(plain.Epochs), untimed(shared.Epochs), "%s p=%d", kind, p)
			for i, e := range shared.Epochs {
				require.Equal(t, gradBytes(p, shared.NumParams, 4)*int64(e.Batches), e.Bytes[metrics.PhaseGrad], "%s p=%d", kind, p)
				require.Positive(t, e.GradWaitSeconds, "%s p=%d: the shared sum's barrier waited", kind, p)
				require.LessOrEqual(t, e.GradWaitSeconds, e.GradExposedSeconds, "%s p=%d: the wait is part of the exposed time", kind, p)
				require.Zero(t, plain.Epochs[i].GradWaitSeconds, "%s p=%d: Allreduce measures no wait", kind, p)
			}
		}
	}
}

// stepRecorder is an optimizer that keeps the summed gradients it is
// handed instead of updating.
type stepRecorder struct{ sums []float32 }

func (s *stepRecorder) Step(params []*model.Param) {
	s.sums = s.sums[:0]
	for _, p := range params {
		s.sums = append(s.sums, p.Grad()...)
	}
}
func (s *stepRecorder) State() []float32                    { return nil }
func (s *stepRecorder) AppendState(dst []float32) []float32 { return dst }
func (s *stepRecorder) SetState(state []float32) error      { return nil }

// A rank whose gradients ZeroGrad only marked (no backward wrote them: a
// step without seeds) adds zeros to the sum, not the stale values its
// storage still holds, with every exchange: the shared segment, one flat
// Allreduce and buckets.
func TestGradSyncMarkedZero(t *testing.T) {
	tests := []struct {
		name     string
		bucketMB float64
		wrap     func(collective.Comm) collective.Comm
		shared   bool
	}{
		{"shared", 0, func(c collective.Comm) collective.Comm { return c }, true},
		{"flat", 0, func(c collective.Comm) collective.Comm { return unshared{c} }, false},
		{"buckets", 1e-4, func(c collective.Comm) collective.Comm { return c }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := inproc.Run(2, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
				m, err := model.New(model.Config{Kind: model.KindSAGE, In: 5, Hidden: 8, Out: 3, Layers: 2}, rand.New(rand.NewPCG(1, 2)), nil)
				if err != nil {
					return err
				}
				g, err := newGradSync(tc.wrap(c), m, GradF32, tc.bucketMB)
				if err != nil {
					return err
				}
				defer g.close()
				if (g.shared != nil) != tc.shared || (len(g.buckets) > 1) != (tc.bucketMB > 0) {
					return fmt.Errorf("shared %t, %d buckets: not the exchange under test", g.shared != nil, len(g.buckets))
				}
				rec := &stepRecorder{}
				fill := func(v float32) {
					for _, p := range m.Params() {
						for i := range p.Grad() {
							p.Grad()[i] = v
						}
					}
				}
				// Step 1: both ranks write (1 and 2); the sums are 3.
				m.ZeroGrad()
				fill(float32(c.Rank() + 1))
				if _, err := g.step(rec); err != nil {
					return err
				}
				if want := slices.Repeat([]float32{3}, m.NumParams()); !slices.Equal(want, rec.sums) {
					return fmt.Errorf("step 1: sums %v, want %v", rec.sums, want)
				}
				// Step 2: rank 1 only marks its gradients, whose storage
				// holds step 1's sums; the sums are rank 0's 5.
				m.ZeroGrad()
				if c.Rank() == 0 {
					fill(5)
				}
				if _, err := g.step(rec); err != nil {
					return err
				}
				if want := slices.Repeat([]float32{5}, m.NumParams()); !slices.Equal(want, rec.sums) {
					return fmt.Errorf("rank %d, step 2: sums %v, want %v", c.Rank(), rec.sums, want)
				}
				return nil
			})
			require.NoError(t, err)
		})
	}
}
