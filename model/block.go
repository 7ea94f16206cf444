package model

import (
	"sync"

	"gnnmpi/sparse"
)

// Block is the block a Conv computes on, an NDst×NSrc CSR (see Conv),
// together with the arrays that layers derive from the block alone:
//
//   - its Values as float32, scaled by a layer constant s (s = 1 for gcn
//     and resgcn, 1−α for gcnii), one per stored entry;
//   - the mean aggregator's row weights 1/|N(i)| (sage);
//   - the transpose (CSC order) of each weighting, which Backward gathers
//     through to compute dL/dx.
//
// A Block computes each of them on first use and hands the same arrays to
// every layer and every Shared copy that processes it, so a stack of L
// layers over one block keeps one copy instead of L, and a block that only
// runs forward (inference) never builds a transpose. They are kept as long
// as the Block is: make one Block per CSR for as long as the CSR is trained
// on (pipe's Trainer makes one per chunk), and drop it with the CSR.
//
// A Block is safe for concurrent use. The CSR must not change while the
// Block is in use; the derived arrays are read-only.
type Block struct {
	a *sparse.CSR

	mu     sync.Mutex
	scaled []*weighting // by scale, in order of first use
	mean   *weighting
}

// weighting is one weighting of a block's pattern: per stored entry (val)
// or per row (rowScale), and, once a Backward asked for it, its transpose.
type weighting struct {
	scale    float64   // val = float32(scale·Values)
	val      []float32 // nnz, or nil
	rowScale []float32 // NDst, or nil
	t        *transposed
}

// NewBlock returns a Block of a, deriving nothing yet. It will panic if a
// is nil.
func NewBlock(a *sparse.CSR) *Block {
	if a == nil {
		panic("model: nil block")
	}
	return &Block{a: a}
}

// CSR returns the block's matrix (nil for a nil Block).
func (b *Block) CSR() *sparse.CSR {
	if b == nil {
		return nil
	}
	return b.a
}

// Bytes returns the bytes of the arrays b has derived so far.
func (b *Block) Bytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var n int64
	for _, w := range b.scaled {
		n += w.bytes()
	}
	if b.mean != nil {
		n += b.mean.bytes()
	}
	return n
}

func (w *weighting) bytes() int64 {
	n := int64(len(w.val)+len(w.rowScale)) * 4
	if w.t != nil {
		n += int64(len(w.t.ptr))*8 + int64(len(w.t.row)+len(w.t.val))*4
	}
	return n
}

// scaledValues returns the weighting float32(s·Values) of every stored
// entry. The block must have Values.
func (b *Block) scaledValues(s float64) *weighting {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.scaled {
		if w.scale == s {
			return w
		}
	}
	w := &weighting{scale: s, val: make([]float32, len(b.a.Values))}
	for e, v := range b.a.Values {
		w.val[e] = float32(s * v)
	}
	b.scaled = append(b.scaled, w)
	return w
}

// meanWeights returns the mean aggregator's weighting: row i scaled by
// 1/|N(i)|, 0 for an empty row.
func (b *Block) meanWeights() *weighting {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mean == nil {
		b.mean = &weighting{rowScale: meanScale(b.a)}
	}
	return b.mean
}

// meanScale returns 1/|row i| for each row i of a (0 for an empty row):
// the row weights of a mean over the row's entries.
func meanScale(a *sparse.CSR) []float32 {
	inv := make([]float32, a.NRows)
	for i := range inv {
		if d := a.Indptr[i+1] - a.Indptr[i]; d > 0 {
			inv[i] = 1 / float32(d)
		}
	}
	return inv
}

// transpose returns the transpose of weighting w of b, building it on
// first use.
func (b *Block) transpose(w *weighting) *transposed {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.t == nil {
		t := &transposed{}
		t.build(b.a, w.val, w.rowScale)
		w.t = t
	}
	return w.t
}
