package gnn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"gnnmpi/dense"
	"gnnmpi/gpu/cuda"
	"gnnmpi/gpu/gputest"
	"gnnmpi/internal/rng"
	"gnnmpi/model"
	"gnnmpi/sparse"
)

// The tests run on the fake CUDA, cuBLAS and cuSPARSE (gpu/gputest),
// built once per test binary into a temporary directory.
func TestMain(m *testing.M) {
	code := m.Run()
	gputest.Remove()
	os.Exit(code)
}

// open opens the fake device, skipping without gcc or OpenBLAS.
func open(t *testing.T) *cuda.Context {
	t.Helper()
	gputest.Use(t)
	c, err := cuda.Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// randBlock returns an nd×ns block whose row i holds up to 4 random
// sources (row 1 none: an empty neighbourhood).
func randBlock(r *rand.Rand, nd, ns int) *sparse.CSR {
	a := &sparse.CSR{NRows: int64(nd), NCols: int64(ns), Indptr: make([]int64, nd+1)}
	for i := range nd {
		if i != 1 {
			for range 1 + r.IntN(4) {
				a.Indices = append(a.Indices, int64(r.IntN(ns)))
			}
		}
		a.Indptr[i+1] = int64(len(a.Indices))
	}
	a.Values = make([]float64, len(a.Indices))
	for k := range a.Values {
		a.Values[k] = 1
	}
	return a
}

// near fails t unless got is within rel·(1+|want|) of want, elementwise.
func near(t *testing.T, what string, got, want []float32, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for k := range want {
		if d := math.Abs(float64(got[k]) - float64(want[k])); !(d <= rel*(1+math.Abs(float64(want[k])))) {
			t.Fatalf("%s[%d] got: %v want: %v", what, k, got[k], want[k])
		}
	}
}

// gcnBlock returns block a with GCN's normalised values for random
// full-graph degrees at least its rows' (model.GCNNorm, as train sets
// them).
func gcnBlock(r *rand.Rand, a *sparse.CSR) *sparse.CSR {
	deg := make([]int64, a.NCols)
	for j := range deg {
		deg[j] = int64(4 + r.IntN(6))
	}
	return model.GCNNorm(a, deg[:a.NRows], deg)
}

// One step on the device, from the host input, from a device copy of it
// and from its sparse rows, gives the host model's logits, loss,
// gradients, updated weights and Adam moments, for GraphSAGE, GCN and GAT
// (two concatenated heads in hidden layers, three averaged in the output
// layer), with dropout on (the input's zeros draw nothing) and GAT's
// attention dropout, keyed by row and edge order (nil ids) and by the
// rows' global ids.
func TestStepMatchesHost(t *testing.T) {
	c := open(t)
	const in, hidden, out = 12, 8, 5
	sizes := []int{40, 17, 6} // sources of layer 0, …, seeds
	for _, kind := range model.MinibatchKinds {
		r := rand.New(rand.NewPCG(4, 22))
		cfg := model.Config{Kind: kind, In: in, Hidden: hidden, Out: out, Layers: 3, Dropout: 0.3}
		if kind == model.KindGAT {
			cfg.Heads, cfg.OutHeads, cfg.AttnDropout = 2, 3, 0.25
		}
		blocks := make([]*sparse.CSR, cfg.Layers)
		for l := range blocks {
			nd := 6
			if l+1 < len(sizes) {
				nd = sizes[l+1]
			}
			blocks[l] = randBlock(r, nd, sizes[l])
			if kind == model.KindGCN {
				blocks[l] = gcnBlock(r, blocks[l])
			}
		}
		x := randInput(r, sizes[0], in)
		xs := sparse.FromDense(x.Rows, x.Cols, x.Data)
		labels := make([]int32, 6)
		for k := range labels {
			labels[k] = int32(r.IntN(out))
		}
		const scale = 0.75
		// Global ids of the rows: layer l's sources are the first
		// sizes[l] (a block's destinations are its first sources).
		gids := make([]int64, sizes[0])
		for k, v := range r.Perm(1000)[:sizes[0]] {
			gids[k] = int64(v)
		}
		layerIDs := make([][]int64, cfg.Layers)
		for l := range layerIDs {
			layerIDs[l] = gids[:sizes[l]]
		}

		host, err := model.New(cfg, rng.New(1, 2), nil)
		if err != nil {
			t.Fatal(err)
		}
		w0 := host.FlattenWeights(nil)
		for _, tc := range []struct {
			input string
			ids   [][]int64
		}{
			{"host", nil}, {"device", nil}, {"sparse", nil},
			{"host", layerIDs}, {"device", layerIDs}, {"sparse", layerIDs},
		} {
			input, ids := tc.input, tc.ids
			t.Run(fmt.Sprintf("%s/input=%s/ids=%v", kind, input, ids != nil), func(t *testing.T) {
				host.SetWeights(w0)
				host.ZeroGrad()
				hopt, dopt := model.NewAdam(0.01, 5e-4), model.NewAdam(0.01, 5e-4)
				var logits *dense.Matrix
				if input == "sparse" {
					logits = host.ForwardSparseIDs(blocks, ids, xs, true, rng.New(1, 9))
				} else {
					logits = host.ForwardIDs(blocks, ids, x, true, rng.New(1, 9))
				}
				loss, dl := model.SoftmaxCrossEntropy(logits, labels)
				dense.Scale(scale, dl.Data)
				host.Backward(dl)
				grads := host.FlattenGrads(nil)
				hopt.Step(host.Params())

				dm, err := New(c, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer dm.Close()
				if err := dm.LoadWeights(w0); err != nil {
					t.Fatal(err)
				}
				var res Result
				switch input {
				case "device":
					p, aerr := c.Alloc(int64(len(x.Data)) * 4)
					if aerr != nil {
						t.Fatal(aerr)
					}
					defer c.Free(p)
					if err := cuda.CopyHtoD(c, p, x.Data); err != nil {
						t.Fatal(err)
					}
					res, err = dm.StepDevice(blocks, ids, p, x.Rows, labels, scale, rng.New(1, 9))
				case "sparse":
					res, err = dm.StepSparse(blocks, ids, xs, labels, scale, rng.New(1, 9))
				default:
					res, err = dm.Step(blocks, ids, x, labels, scale, rng.New(1, 9))
				}
				if err != nil {
					t.Fatal(err)
				}
				near(t, "logits", res.Logits.Data, logits.Data, 1e-4)
				if math.Abs(res.Loss-loss) > 1e-4*math.Abs(loss) {
					t.Fatalf("loss got: %v want: %v", res.Loss, loss)
				}
				g := make([]float32, dm.NumParams())
				if err := dm.Grads(g); err != nil {
					t.Fatal(err)
				}
				near(t, "gradients", g, grads, 1e-4)
				// GradPtr is the same flat buffer, which a device
				// Allreduce sums in place.
				gp := make([]float32, dm.NumParams())
				if err := cuda.CopyDtoH(c, gp, dm.GradPtr()); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(gp, g) {
					t.Fatal("the buffer at GradPtr is not the gradients Grads copies")
				}
				// The host-staged round trip an Allreduce makes.
				if err := dm.SetGrads(g); err != nil {
					t.Fatal(err)
				}
				if err := dm.AdamStep(dopt); err != nil {
					t.Fatal(err)
				}
				w := make([]float32, dm.NumParams())
				if err := dm.StoreWeights(w); err != nil {
					t.Fatal(err)
				}
				near(t, "weights", w, host.FlattenWeights(nil), 1e-4)
				if err := dm.StoreAdam(dopt); err != nil {
					t.Fatal(err)
				}
				near(t, "adam state", dopt.State(), hopt.State(), 1e-4)
			})
		}
	}
}

// What does not run on the device is an error naming the field; a length
// mismatch is an error, not a crash.
func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  model.Config
		flag string
	}{
		{model.Config{Kind: "gcnii", In: 3, Hidden: 2, Out: 2, Layers: 2}, "Kind gcnii"},
		{model.Config{Kind: "sage", In: 3, Hidden: 2, Out: 2, Layers: 2, Normalize: true}, "Normalize"},
	} {
		err := Check(tc.cfg)
		if !errors.Is(err, ErrUnsupported) || !contains(err.Error(), tc.flag) {
			t.Errorf("Check(%+v) = %v; want ErrUnsupported naming %s", tc.cfg, err, tc.flag)
		}
	}
	c := open(t)
	dm, err := New(c, model.Config{Kind: "sage", In: 3, Hidden: 2, Out: 2, Layers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	// The fake device (8.0) and NVRTC load the kernels as a CUBIN.
	if got := dm.Image(); got != "CUBIN sm_80" {
		t.Errorf("Image() = %q, want the CUBIN for sm_80", got)
	}
	if err := dm.LoadWeights(make([]float32, 3)); err == nil {
		t.Error("LoadWeights of a wrong length: no error")
	}
	if _, err := dm.Step([]*sparse.CSR{randBlock(rand.New(rand.NewPCG(1, 1)), 2, 4)}, nil, dense.New(4, 3), []int32{0, 1}, 1, nil); err == nil {
		t.Error("Step with one block for two layers: no error")
	}
	r := rand.New(rand.NewPCG(1, 1))
	b0, b1 := randBlock(r, 4, 6), randBlock(r, 2, 4)
	xs := sparse.FromDense(6, 3, make([]float32, 18))
	if _, err := dm.StepSparse([]*sparse.CSR{b0, b1}, nil, sparse.FromDense(6, 4, make([]float32, 24)), []int32{0, 1}, 1, nil); err == nil {
		t.Error("StepSparse with 4 input columns for 3: no error")
	}
	gcn, err := New(c, model.Config{Kind: "gcn", In: 3, Hidden: 2, Out: 2, Layers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer gcn.Close()
	b0.Values = nil
	if _, err := gcn.StepSparse([]*sparse.CSR{b0, gcnBlock(r, b1)}, nil, xs, []int32{0, 1}, 1, nil); err == nil || !contains(err.Error(), "no Values") {
		t.Errorf("GCN step on a block without Values: %v, want an error naming them", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
