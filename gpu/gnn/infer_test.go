package gnn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gnnmpi/dense"
	"gnnmpi/gpu/cuda"
	"gnnmpi/internal/rng"
	"gnnmpi/model"
	"gnnmpi/sparse"
)

// Every layer in evaluation on the device, from host rows, device rows,
// (the input layer) sparse rows and (SAGE, GCN) the aggregated sums,
// gives the host model's ForwardLayer (ForwardLayerAggregated) output, for GraphSAGE, GCN and GAT with dropout and attention dropout
// set (evaluation applies neither); a training step in between does not
// disturb it, nor it the step.
func TestInferLayerMatchesHost(t *testing.T) {
	c := open(t)
	const in, hidden, out = 12, 8, 5
	for _, kind := range model.MinibatchKinds {
		t.Run(fmt.Sprint(kind), func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 3))
			cfg, host, dm := evalModels(t, c, kind, in, hidden, out, 3)
			// Blocks of a chunk: 9 destinations, 30 sources (the
			// destinations first); a second chunk of other sizes.
			block := func(nd, ns int) *sparse.CSR {
				a := randBlock(r, nd, ns)
				if kind == model.KindGCN {
					a = gcnBlock(r, a)
				}
				return a
			}
			input := func(rows, cols int) *dense.Matrix { return randInput(r, rows, cols) }
			for _, sz := range [][2]int{{9, 30}, {20, 21}, {3, 3}} {
				nd, ns := sz[0], sz[1]
				fin := in
				for l := range cfg.Layers {
					a, x := block(nd, ns), input(ns, fin)
					want := host.ForwardLayer(l, a, x)
					got, err := dm.InferLayer(l, a, x)
					if err != nil {
						t.Fatal(err)
					}
					near(t, fmt.Sprintf("layer %d of %d×%d (host rows)", l, nd, ns), got.Data, want.Data, 1e-5)
					p, err := c.Alloc(int64(len(x.Data)) * 4)
					if err != nil {
						t.Fatal(err)
					}
					if err := cuda.CopyHtoD(c, p, x.Data); err != nil {
						t.Fatal(err)
					}
					got, err = dm.InferLayerDevice(l, a, p, x.Rows)
					c.Free(p)
					if err != nil {
						t.Fatal(err)
					}
					near(t, fmt.Sprintf("layer %d of %d×%d (device rows)", l, nd, ns), got.Data, want.Data, 1e-5)
					if l == 0 {
						xs := sparse.FromDense(x.Rows, x.Cols, x.Data)
						want := host.ForwardLayerSparse(0, a, xs)
						got, err := dm.InferLayerSparse(a, xs)
						if err != nil {
							t.Fatal(err)
						}
						near(t, fmt.Sprintf("layer 0 of %d×%d (sparse rows)", nd, ns), got.Data, want.Data, 1e-5)
					}
					if kind != model.KindGAT {
						// The sums of the sources' rows the block weighs
						// (mean for SAGE, Â for GCN), as inference in
						// pieces gathers them.
						agg := dense.New(nd, fin)
						for i := range nd {
							lo, hi := a.Indptr[i], a.Indptr[i+1]
							for e := lo; e < hi; e++ {
								wt := float32(1) / float32(hi-lo)
								if kind == model.KindGCN {
									wt = float32(a.Values[e])
								}
								for k, v := range x.Row(int(a.Indices[e])) {
									agg.Row(i)[k] += wt * v
								}
							}
						}
						xdst := &dense.Matrix{Rows: nd, Cols: fin, Data: x.Data[:nd*fin]}
						want := host.ForwardLayerAggregated(l, xdst, agg)
						got, err := dm.InferAggregated(l, xdst, agg)
						if err != nil {
							t.Fatal(err)
						}
						near(t, fmt.Sprintf("layer %d of %d×%d (aggregated)", l, nd, ns), got.Data, want.Data, 1e-5)
					}
					fin = host.Layers[l].OutDim()
				}
				// A training step between chunks: its results are the
				// host's, and the next chunk's too (the loop goes on).
				blocks := []*sparse.CSR{block(12, 25), block(6, 12), block(4, 6)}
				x := input(25, in)
				labels := []int32{0, 1, 2, 3}
				w0 := host.FlattenWeights(nil)
				logits := host.Forward(blocks, x, true, rng.New(1, 9))
				res, err := dm.Step(blocks, nil, x, labels, 1, rng.New(1, 9))
				if err != nil {
					t.Fatal(err)
				}
				near(t, "a step's logits after inference", res.Logits.Data, logits.Data, 1e-4)
				host.SetWeights(w0)
			}
		})
	}
}

// A layer, an input or a block that does not conform is an error.
func TestInferLayerErrors(t *testing.T) {
	c := open(t)
	cfg := model.Config{Kind: model.KindSAGE, In: 4, Hidden: 3, Out: 2, Layers: 2}
	dm, err := New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	r := rand.New(rand.NewPCG(1, 1))
	a := randBlock(r, 3, 5)
	for _, tc := range []struct {
		name string
		l    int
		a    *sparse.CSR
		x    *dense.Matrix
		want string
	}{
		{"layer", 2, a, dense.New(5, 3), "layer 2 of a model of 2 layers"},
		{"width", 0, a, dense.New(5, 3), "input of 3 columns for layer 0 of 4 inputs"},
		{"rows", 0, a, dense.New(6, 4), "block of 5 sources for an input of 6 rows"},
		{"block", 1, randBlock(r, 6, 5), dense.New(5, 3), "block of 6 destinations and 5 sources"},
	} {
		if _, err := dm.InferLayer(tc.l, tc.a, tc.x); err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := dm.InferLayerSparse(a, nil); err == nil {
		t.Error("nil sparse input: no error")
	}
	if _, err := dm.InferAggregated(0, nil, dense.New(3, 4)); err == nil || !contains(err.Error(), "needs its destinations' 3×4 input rows") {
		t.Errorf("SAGE sums without the destinations' rows: got %v", err)
	}
	if _, err := dm.InferAggregated(1, dense.New(3, 4), dense.New(3, 4)); err == nil || !contains(err.Error(), "sums of 4 columns for layer 1 of 3 inputs") {
		t.Errorf("sums of the wrong width: got %v", err)
	}
}

// The whole model in evaluation on a minibatch's blocks, from host rows,
// device rows and sparse rows, gives the host model's logits (Forward and
// ForwardSparse without training), for GraphSAGE, GCN and GAT with dropout
// set; blocks that do not chain are an error.
func TestInferMatchesHost(t *testing.T) {
	c := open(t)
	const in, hidden, out = 12, 8, 5
	sizes := []int{40, 17, 6}
	for _, kind := range model.MinibatchKinds {
		t.Run(fmt.Sprint(kind), func(t *testing.T) {
			r := rand.New(rand.NewPCG(9, 4))
			cfg, host, dm := evalModels(t, c, kind, in, hidden, out, 2)
			blocks := make([]*sparse.CSR, cfg.Layers)
			for l := range blocks {
				blocks[l] = randBlock(r, sizes[l+1], sizes[l])
				if kind == model.KindGCN {
					blocks[l] = gcnBlock(r, blocks[l])
				}
			}
			x := randInput(r, sizes[0], in)
			want := host.Forward(blocks, x, false, nil)
			got, err := dm.Infer(blocks, x)
			if err != nil {
				t.Fatal(err)
			}
			near(t, "logits (host rows)", got.Data, want.Data, 1e-5)
			p, err := c.Alloc(int64(len(x.Data)) * 4)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Free(p)
			if err := cuda.CopyHtoD(c, p, x.Data); err != nil {
				t.Fatal(err)
			}
			if got, err = dm.InferDevice(blocks, p, x.Rows); err != nil {
				t.Fatal(err)
			}
			near(t, "logits (device rows)", got.Data, want.Data, 1e-5)
			xs := sparse.FromDense(x.Rows, x.Cols, x.Data)
			want = host.ForwardSparse(blocks, xs, false, nil)
			if got, err = dm.InferSparse(blocks, xs); err != nil {
				t.Fatal(err)
			}
			near(t, "logits (sparse rows)", got.Data, want.Data, 1e-5)
			if _, err := dm.Infer(blocks[:1], x); err == nil || !contains(err.Error(), "1 blocks for 2 layers") {
				t.Errorf("one block for two layers: got %v", err)
			}
			if _, err := dm.Infer([]*sparse.CSR{blocks[1], blocks[0]}, x); err == nil || !contains(err.Error(), "block 0 is 6×17; its input has 40 rows") {
				t.Errorf("blocks that do not chain: got %v", err)
			}
		})
	}
}

// evalModels returns a model of kind with dropout (GAT: two heads, three
// in the output layer, attention dropout) on the host and the same weights
// on the device, closed when t ends.
func evalModels(t *testing.T, c *cuda.Context, kind model.Kind, in, hidden, out, layers int) (model.Config, *model.Model, *Model) {
	t.Helper()
	cfg := model.Config{Kind: kind, In: in, Hidden: hidden, Out: out, Layers: layers, Dropout: 0.4}
	if kind == model.KindGAT {
		cfg.Heads, cfg.OutHeads, cfg.AttnDropout = 2, 3, 0.3
	}
	host, err := model.New(cfg, rng.New(1, 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	dm, err := New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dm.Close() })
	if err := dm.LoadWeights(host.FlattenWeights(nil)); err != nil {
		t.Fatal(err)
	}
	return cfg, host, dm
}

// randInput returns rows×cols input rows, a third of them zero, the rest
// normal.
func randInput(r *rand.Rand, rows, cols int) *dense.Matrix {
	x := dense.New(rows, cols)
	for k := range x.Data {
		if r.IntN(3) > 0 {
			x.Data[k] = float32(r.NormFloat64())
		}
	}
	return x
}
