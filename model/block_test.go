package model

import (
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/dense"
)

// convPass is one Forward and Backward of a Conv: its output, input
// gradients and parameter gradients.
type convPass struct {
	out, dx, daux *dense.Matrix
	grads         [][]float32
}

// runConv runs c on block b (Forward, then Backward of dy) from zero
// gradients.
func runConv(c Conv, b *Block, x, aux, dy *dense.Matrix) convPass {
	zeroGrads(c.Params())
	var p convPass
	p.out = clone(c.Forward(b, x, aux))
	p.dx, p.daux = c.Backward(dy)
	p.grads = copyGrads(c.Params())
	return p
}

// TestBlockSharesDerivedArrays runs three layers of each kind and two
// Shared copies of the first on one Block: the Block derives its arrays
// once (one weighting and its transpose), and every pass equals the same
// pass on a Block of its own.
func TestBlockSharesDerivedArrays(t *testing.T) {
	for ki, kind := range convKinds {
		t.Run(string(kind), func(t *testing.T) {
			rnd := testRNG(uint64(500 + ki))
			cfg := convCfg(kind)
			w := cfg.Hidden
			a := convBlock(rnd, kind, tnd, tns)
			var convs []Conv
			for l := 1; l <= 3; l++ {
				convs = append(convs, NewConv(cfg, l, rnd, nil))
			}
			convs = append(convs, convs[0].Shared(), convs[0].Shared())
			x := randMatrix(rnd, tns, w)
			aux := convAux(rnd, convs[0], tnd, w)
			dy := randMatrix(rnd, tnd, w)

			shared := NewBlock(a)
			for i, c := range convs {
				got := runConv(c, shared, x, aux, dy)
				want := runConv(c, NewBlock(a), x, aux, dy)
				assert.Equal(t, want, got, "layer %d", i)
			}
			nnz, nd, ns := a.NNZ(), a.NRows, a.NCols
			perEntry := nnz * 4 // float32 values of Â (or, for sage, row weights)
			if kind == ConvSAGE {
				perEntry = nd * 4
			}
			transpose := (ns+1)*8 + nnz*(4+4) // column pointers, rows and values
			assert.Equal(t, perEntry+transpose, shared.Bytes(), "one weighting and one transpose")
		})
	}
}

// TestBlockConcurrent runs four gcnii layers (one weighting) and a gcn
// layer (another) on one Block from concurrent goroutines: the Block
// builds each array once and every result equals a sequential run (go test
// -race checks the Block's locking).
func TestBlockConcurrent(t *testing.T) {
	rnd := testRNG(510)
	a := gcnBlock(rnd, 300, 500, tdeg)
	cfg := convCfg(ConvGCNII)
	var convs []Conv
	for l := 1; l <= 4; l++ {
		convs = append(convs, NewConv(cfg, l, rnd, nil))
	}
	convs = append(convs, NewConv(convCfg(ConvGCN), 1, rnd, nil))
	w := cfg.Hidden
	x := randMatrix(rnd, 500, w)
	aux := randMatrix(rnd, 300, w)
	dy := randMatrix(rnd, 300, w)
	seq := NewBlock(a)
	var want []convPass
	for _, c := range convs {
		want = append(want, runConv(c, seq, x, aux, dy))
	}
	par := NewBlock(a)
	got := make([]convPass, len(convs))
	var wg sync.WaitGroup
	for i, c := range convs {
		wg.Go(func() { got[i] = runConv(c, par, x, aux, dy) })
	}
	wg.Wait()
	assert.Equal(t, want, got)
	assert.Equal(t, seq.Bytes(), par.Bytes())
}

// TestConvKeepsNoInput overwrites x and aux with NaN after Forward:
// Backward does not read them, for every kind, with NDst < NSrc and
// NDst = NSrc (a deep stack's widths in and out are equal, so GCN and SAGE
// aggregate first and keep no input).
func TestConvKeepsNoInput(t *testing.T) {
	for ki, kind := range convKinds {
		for _, ns := range []int{tns, tnd} {
			t.Run(fmt.Sprintf("%s/ns=%d", kind, ns), func(t *testing.T) {
				rnd := testRNG(uint64(520 + ki))
				cfg := convCfg(kind)
				w := cfg.Hidden
				a := convBlock(rnd, kind, tnd, ns)
				c := NewConv(cfg, 1, rnd, nil)
				x := randMatrix(rnd, ns, w)
				aux := convAux(rnd, c, tnd, w)
				dy := randMatrix(rnd, tnd, w)
				want := runConv(c, NewBlock(a), x, aux, dy)

				zeroGrads(c.Params())
				out := c.Forward(NewBlock(a), x, aux)
				assert.Equal(t, want.out, out)
				for _, m := range []*dense.Matrix{x, aux} {
					if m != nil {
						for i := range m.Data {
							m.Data[i] = float32(math.NaN())
						}
					}
				}
				var got convPass
				got.out = want.out
				got.dx, got.daux = c.Backward(dy)
				got.grads = copyGrads(c.Params())
				assert.Equal(t, want, got)
			})
		}
	}
}

// cacheBytes returns the capacity in bytes of the slices that v (a Conv)
// keeps, following pointers and matrices it holds but not its Params or
// its Block, whose arrays every layer on the block shares.
func cacheBytes(v reflect.Value) int64 {
	switch v.Kind() {
	case reflect.Pointer:
		switch v.Type() {
		case reflect.TypeFor[*Param](), reflect.TypeFor[*Block](), reflect.TypeFor[*weighting]():
			return 0
		}
		if v.IsNil() {
			return 0
		}
		return cacheBytes(v.Elem())
	case reflect.Struct:
		var n int64
		for i := range v.NumField() {
			n += cacheBytes(v.Field(i))
		}
		return n
	case reflect.Slice:
		return int64(v.Cap()) * int64(v.Type().Elem().Size())
	}
	return 0
}

// TestConvCacheBytes pins what each kind keeps per layer between Forward
// and Backward (cacheBytes), and checks that Backward keeps nothing more:
//
//	gcn:    Â·x (NDst×w) and the ReLU mask (NDst×w bits)
//	sage:   the neighbour means and the destinations' input rows
//	        (NDst×w each) and the ReLU mask
//	resgcn: x̂ (NSrc×w), 1/σ (NSrc) and Â·z (NDst×w)
//	gcnii:  S (NDst×w) and the ReLU mask
func TestConvCacheBytes(t *testing.T) {
	const nd, ns int64 = 200, 500
	for ki, kind := range convKinds {
		t.Run(string(kind), func(t *testing.T) {
			rnd := testRNG(uint64(530 + ki))
			cfg := convCfg(kind)
			c := NewConv(cfg, 1, rnd, nil)
			b := NewBlock(convBlock(rnd, kind, int(nd), int(ns)))
			x := randMatrix(rnd, int(ns), cfg.Hidden)
			aux := convAux(rnd, c, int(nd), cfg.Hidden)
			dy := randMatrix(rnd, int(nd), cfg.Hidden)
			w := int64(cfg.Hidden)
			mask := (nd*w + 63) / 64 * 8
			want := map[Kind]int64{
				ConvGCN:    nd*w*4 + mask,
				ConvSAGE:   2*nd*w*4 + mask,
				ConvResGCN: ns*w*4 + ns*4 + nd*w*4,
				ConvGCNII:  nd*w*4 + mask,
			}[kind]
			c.Forward(b, x, aux)
			assert.Equal(t, want, cacheBytes(reflect.ValueOf(c)), "after Forward")
			c.Backward(dy)
			assert.Equal(t, want, cacheBytes(reflect.ValueOf(c)), "after Backward")
			c.Forward(b, x, aux)
			assert.Equal(t, want, cacheBytes(reflect.ValueOf(c)), "after a second Forward")
		})
	}
}

func TestBlockPanics(t *testing.T) {
	assert.Panics(t, func() { NewBlock(nil) })
	var b *Block
	assert.Nil(t, b.CSR())
	rnd := testRNG(540)
	for _, kind := range convKinds {
		c := NewConv(convCfg(kind), 1, rnd, nil)
		require.Panics(t, func() { c.Forward(nil, randMatrix(rnd, tns, 5), randMatrix(rnd, tnd, 5)) }, kind)
	}
}
