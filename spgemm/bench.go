package spgemm

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"time"
	"unsafe"

	"gnnmpi/collective"
	"gnnmpi/internal/rng"
	"gnnmpi/metrics"
	"gnnmpi/sparse"
)

// SampleRows returns k distinct rows of [0, m), sorted, from the rank-free
// stream (seed, "spgemm rows"), so every rank draws the same.
func SampleRows(m int64, k int, seed uint64) []int64 {
	r := rng.New(seed, 0x5367656d6d) // "Sgemm"
	picked := map[int64]bool{}
	out := make([]int64, 0, k)
	if int64(k) > m/2 { // dense: a partial shuffle
		perm := make([]int64, m)
		for i := range perm {
			perm[i] = int64(i)
		}
		for i := range k {
			j := int64(i) + r.Int64N(m-int64(i))
			perm[i], perm[j] = perm[j], perm[i]
		}
		out = append(out, perm[:k]...)
	} else {
		for len(out) < k {
			i := r.Int64N(m)
			if !picked[i] {
				picked[i] = true
				out = append(out, i)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Flops returns the scalar products of A·B: Σ over the entries (i, k) of
// A of the length of row k of B.
func Flops[T sparse.Scalar](a, b *sparse.Matrix[T]) int64 {
	var f int64
	for _, k := range a.Indices {
		f += b.Indptr[k+1] - b.Indptr[k]
	}
	return f
}

// BenchResult is the outcome of Bench; metrics.SpGEMM is its record in
// gnnmpi spgemm's output, field for field.
type BenchResult struct {
	Algo       string
	Semiring   string
	Threads    int
	Grid       []int // 1.5d: (p/c, c); 2d: (pr, pc)
	Staged     bool
	A          string
	B          string
	Rows       int
	M          int64
	K          int64
	N          int64
	NNZA       int64
	NNZARows   int64 // the entries of the rows of A multiplied
	NNZB       int64
	NNZC       int64
	Flops      int64
	Seconds    float64 // median over reps of the slowest rank's time
	SecondsMin float64
	Times      []float64 // every rep's slowest-rank time
	MFLOPS     float64
	SumC       float64 // sum of the values of C (true entries for or-and)
	Checksum   string  // spgemm.Checksum of C, hex
	Verified   *bool
	Load       float64
	C          int // 1.5d: the replication factor used
	// 1.5d with --c 0: the predicted bytes sent per rank for every c
	// (spgemm.Predict15D), of which the least chose C.
	Predicted []PredictedVolume
	// Bytes of one product (phase spgemm), per rank and over ranks.
	SentPerRank []int64
	RecvPerRank []int64
	MaxSent     int64
	MaxRecv     int64
	TotalSent   int64
}

// PredictedVolume is a Volume15D in BenchResult (an alias of an unnamed
// struct, as metrics.PredictedVolume is).
type PredictedVolume = struct {
	C           int
	BcastBytes  float64
	ReduceBytes float64
}

// valueSize returns the bytes of a T.
func valueSize[T sparse.Scalar]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// BenchOptions configure Bench.
type BenchOptions struct {
	// Algo is the product: "local" (rank 0 multiplies alone), "1d"
	// (Mul1D), "1.5d" (Mul15D on a Pr×Pc grid, Pc = C replicas) or "2d"
	// (Mul2D on a Pr×Pc grid).
	Algo string
	// Threads of each rank's local products, at least 1.
	Threads int
	// Staged asks the distributed products for their staged variant.
	Staged bool
	// C is 1.5d's replication factor; 0 chooses it by predicted traffic
	// (Choose15D). Pr and Pc are the grid of 1.5d (with C ≠ 0) and 2d.
	C, Pr, Pc int
	// Reps is the number of timed products, at least 1.
	Reps int
	// Rows, when positive, multiplies only that many rows of A, drawn by
	// SampleRows from Seed.
	Rows int
	Seed uint64
	// Verify compares every rank's block of C with the local product.
	Verify bool
	// Progress, when not nil, is called after each timed product and
	// before the verification.
	Progress func(format string, args ...any)
	// Log, when not nil, receives a line from each rank whose block
	// fails the verification.
	Log io.Writer
	// Write, when not nil, receives C in float64 on rank 0 (gathered
	// there by Gather, after the verification), to write it; its error
	// fails every rank (collective.RankZero).
	Write func(c *sparse.CSR) error
}

// Bench times the product C = A·B over sr with the layout o.Algo, as
// `gnnmpi spgemm` does, and returns its record and the last product.
// Every rank must call it with the same a, b and options: it is
// collective over c. The grid's splits count under phase metrics.PhaseSetup,
// the barriers and time reductions under metrics.PhaseTiming, the products
// under metrics.PhaseSpGEMM, and the summaries of C (scalar Allreduces,
// Checksum, two Allgathers of one int64), the verification and o.Write's
// Gather and status broadcast under metrics.PhaseVerify. 2d without a grid (Pr = 0) takes collective.GridDims. The record's byte
// counts are those of the first product's phase metrics.PhaseSpGEMM. With o.Verify, a
// block that differs from the local product makes Bench return an error
// after the record is complete.
//
// Bench will panic if o.Reps is less than 1.
func Bench[T sparse.Scalar, S sparse.Semiring[T]](c collective.Comm, sr S, a, b *sparse.Matrix[T], o BenchOptions) (*BenchResult, *Dist[T], func() error, error) {
	if o.Reps < 1 {
		panic("spgemm: reps < 1")
	}
	var rows []int64 // the rows of A multiplied, nil for all
	if o.Rows > 0 {
		rows = SampleRows(a.NRows, o.Rows, o.Seed)
	}
	aa := a
	if rows != nil {
		aa = sparse.SelectRows(a, rows)
	}
	res := &BenchResult{Algo: o.Algo, Threads: o.Threads, Staged: o.Staged, Rows: o.Rows, M: aa.NRows, K: a.NCols, N: b.NCols,
		NNZA: a.NNZ(), NNZARows: aa.NNZ(), NNZB: b.NNZ(), Flops: Flops(aa, b)}
	mul, free, err := layoutProduct(c, &o, sr, a, aa, b, rows, res)
	if err != nil {
		return nil, nil, nil, err
	}
	cd, first, err := timeProducts(c, &o, mul, res)
	if err != nil {
		free()
		return nil, nil, nil, err
	}
	defer collective.SetPhase(c, metrics.PhaseVerify)()
	if err := summarizeProduct(c, cd, first, res); err != nil {
		free()
		return nil, nil, nil, err
	}
	if o.Verify {
		if o.Progress != nil {
			o.Progress("verifying against the local product")
		}
		bad := int64(0)
		if msg := verifyBlock(sr, cd, a, b, rows, o.Threads); msg != "" {
			bad = 1
			if o.Log != nil {
				fmt.Fprintf(o.Log, "gnnmpi: rank %d: spgemm --verify: %s\n", c.Rank(), msg)
			}
		}
		if bad, err = collective.AllreduceScalar(c, bad, collective.Sum); err != nil {
			free()
			return nil, nil, nil, err
		}
		ok := bad == 0
		res.Verified = &ok
		if !ok {
			free()
			return res, nil, nil, fmt.Errorf("spgemm: --verify: %d of %d ranks hold a block that differs from the local product", bad, c.Size())
		}
	}
	if o.Write != nil {
		full, err := Gather(c, cd, 0)
		if err == nil {
			err = collective.RankZero(c, func() error { return o.Write(toCSR(full)) })
		}
		if err != nil {
			free()
			return nil, nil, nil, err
		}
	}
	return res, cd, free, nil
}

// layoutProduct distributes the operands for cfg.Algo (the grid's splits
// count under phase setup) and returns the product to time and what frees
// the grid. aa is a, or its rows when rows is not nil. For 1.5d without
// C it chooses c (and sets cfg.C, cfg.Pr and cfg.Pc) by predicted traffic and records the predictions in res.
func layoutProduct[T sparse.Scalar, S sparse.Semiring[T]](c collective.Comm, cfg *BenchOptions, sr S, a, aa, b *sparse.Matrix[T], rows []int64, res *BenchResult) (mul func() (*Dist[T], error), free func() error, err error) {
	p, me := c.Size(), c.Rank()
	o := &Options{Threads: cfg.Threads, Staged: cfg.Staged}
	free = func() error { return nil }
	defer collective.SetPhase(c, metrics.PhaseSetup)()
	switch cfg.Algo {
	case "local":
		mul = func() (*Dist[T], error) {
			// Rank 0 holds every row; the others hold empty blocks.
			rb := make([]int64, p+1)
			for x := 1; x <= p; x++ {
				rb[x] = aa.NRows
			}
			d := &Dist[T]{M: aa.NRows, N: b.NCols, RowBounds: rb, ColBounds: []int64{0, b.NCols}, I: me}
			if me != 0 {
				d.Local = &sparse.Matrix[T]{NCols: b.NCols, Indptr: []int64{0}, Indices: []int64{}, Values: []T{}}
				return d, nil
			}
			var err error
			lo := &sparse.Options{Threads: cfg.Threads}
			if rows != nil {
				d.Local, err = sparse.MulRowsSR(sr, rows, a, b, lo)
			} else {
				d.Local, err = sparse.MulSR(sr, a, b, lo)
			}
			return d, err
		}
	case "1d":
		da, db := Distribute1D(c, aa), Distribute1D(c, b)
		mul = func() (*Dist[T], error) { return Mul1D(c, sr, da, db, o) }
	case "1.5d", "2d":
		if cfg.Algo == "1.5d" && cfg.C == 0 {
			// Every rank holds the same operands, so all choose alike.
			var pred []Volume15D
			cfg.C, pred = Choose15D(aa, b, p, valueSize[T]())
			cfg.Pr, cfg.Pc = p/cfg.C, cfg.C
			for _, v := range pred {
				res.Predicted = append(res.Predicted, PredictedVolume{C: v.C, BcastBytes: v.Bcast, ReduceBytes: v.Reduce})
			}
		}
		if cfg.Algo == "2d" && cfg.Pr == 0 {
			cfg.Pr, cfg.Pc = collective.GridDims(p)
		}
		g, err := collective.NewGrid(c, cfg.Pr, cfg.Pc)
		if err != nil {
			return nil, nil, err
		}
		free = g.Free
		res.Grid = []int{cfg.Pr, cfg.Pc}
		if cfg.Algo == "1.5d" {
			res.C = cfg.C
			da, db := Distribute15D(g, aa), Distribute15D(g, b)
			mul = func() (*Dist[T], error) { return Mul15D(g, sr, da, db, o) }
		} else {
			da, db := Distribute2D(g, aa), Distribute2D(g, b)
			mul = func() (*Dist[T], error) { return Mul2D(g, sr, da, db, o) }
		}
	}
	return mul, free, nil
}

// timeProducts runs mul cfg.Reps times between barriers and records in res
// the slowest rank's time of each, their median and minimum, and the
// MFLOP/s. It returns the last product and the bytes of the first.
func timeProducts[T sparse.Scalar](c collective.Comm, cfg *BenchOptions, mul func() (*Dist[T], error), res *BenchResult) (*Dist[T], collective.Snapshot, error) {
	var cd *Dist[T]
	var first collective.Snapshot
	for rep := range cfg.Reps {
		cd = nil // let the previous product go before the next
		restore := collective.SetPhase(c, metrics.PhaseTiming)
		if err := c.Barrier(); err != nil {
			return nil, first, err
		}
		restore()
		before := collective.SnapshotOf(c)
		t := time.Now()
		var err error
		if cd, err = mul(); err != nil {
			return nil, first, err
		}
		dt := time.Since(t).Seconds()
		if rep == 0 {
			first = collective.SnapshotOf(c).Sub(before)
		}
		restore = collective.SetPhase(c, metrics.PhaseTiming)
		if dt, err = collective.AllreduceScalar(c, dt, collective.Max); err != nil {
			return nil, first, err
		}
		restore()
		res.Times = append(res.Times, dt)
		if cfg.Progress != nil {
			cfg.Progress("rep %d: %.3fs", rep+1, dt)
		}
	}
	sorted := slices.Clone(res.Times)
	sort.Float64s(sorted)
	res.Seconds, res.SecondsMin = sorted[len(sorted)/2], sorted[0]
	if len(sorted)%2 == 0 {
		res.Seconds = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	if res.Seconds > 0 {
		res.MFLOPS = float64(res.Flops) / res.Seconds / 1e6
	}
	return cd, first, nil
}

// summarizeProduct records in res C's entries, value sum and checksum, and
// every rank's bytes of one product (first, the snapshot of the first).
func summarizeProduct[T sparse.Scalar](c collective.Comm, cd *Dist[T], first collective.Snapshot, res *BenchResult) error {
	var nnz int64
	var vsum float64
	if cd.Replica == 0 {
		nnz = cd.Local.NNZ()
		for _, v := range cd.Local.Values {
			vsum += Float(v)
		}
	}
	var err error
	if res.NNZC, err = collective.AllreduceScalar(c, nnz, collective.Sum); err != nil {
		return err
	}
	if res.SumC, err = collective.AllreduceScalar(c, vsum, collective.Sum); err != nil {
		return err
	}
	h, err := Checksum(c, cd)
	if err != nil {
		return err
	}
	res.Checksum = fmt.Sprintf("%016x", h)
	ph := first.Phase(metrics.PhaseSpGEMM)
	sent, _, err := collective.AllgatherSlice(c, []int64{ph.SentBytes})
	if err != nil {
		return err
	}
	recv, _, err := collective.AllgatherSlice(c, []int64{ph.RecvBytes})
	if err != nil {
		return err
	}
	res.SentPerRank, res.RecvPerRank = sent, recv
	for r := range c.Size() {
		res.MaxSent, res.MaxRecv = max(res.MaxSent, sent[r]), max(res.MaxRecv, recv[r])
		res.TotalSent += sent[r]
	}
	return nil
}

// verifyBlock compares this rank's block of C with the same block of the
// local product of a and b (its rows: rows[RowOff:…] when rows is not nil),
// exactly, and describes the first difference ("" if none).
func verifyBlock[T sparse.Scalar, S sparse.Semiring[T]](sr S, cd *Dist[T], a, b *sparse.Matrix[T], rows []int64, threads int) string {
	m := cd.Local.NRows
	sel := make([]int64, m)
	for x := range sel {
		sel[x] = cd.RowOff() + int64(x)
		if rows != nil {
			sel[x] = rows[sel[x]]
		}
	}
	ref, err := sparse.MulRowsSR(sr, sel, a, b, &sparse.Options{Threads: threads})
	if err != nil {
		return err.Error()
	}
	if cd.ColBounds[cd.J] != 0 || cd.ColBounds[cd.J+1] != cd.N {
		ref = Distribute(ref, []int64{0, m}, cd.ColBounds, 0, cd.J, 0).Local
	}
	got := cd.Local
	if got.NRows != ref.NRows || got.NCols != ref.NCols {
		return fmt.Sprintf("block (%d,%d) is %d×%d, want %d×%d", cd.I, cd.J, got.NRows, got.NCols, ref.NRows, ref.NCols)
	}
	for i := range m {
		gr, wr := got.Row(i), ref.Row(i)
		if len(gr) != len(wr) {
			return fmt.Sprintf("row %d has %d entries, want %d", cd.RowOff()+i, len(gr), len(wr))
		}
		for x := range wr {
			g, w := got.Indptr[i]+int64(x), ref.Indptr[i]+int64(x)
			if got.Indices[g] != ref.Indices[w] || got.Values[g] != ref.Values[w] {
				return fmt.Sprintf("row %d entry %d: got (%d, %v), want (%d, %v)", cd.RowOff()+i, x,
					cd.ColOff()+got.Indices[g], got.Values[g], cd.ColOff()+ref.Indices[w], ref.Values[w])
			}
		}
	}
	return ""
}

// Float converts a value of a product to float64 (true is 1).
func Float[T sparse.Scalar](v T) float64 {
	switch x := any(v).(type) {
	case float64:
		return x
	case bool:
		if x {
			return 1
		}
		return 0
	}
	return 0
}

// toCSR returns a in float64 (Float of every value); a float64 matrix
// itself.
func toCSR[T sparse.Scalar](a *sparse.Matrix[T]) *sparse.CSR {
	if x, ok := any(a).(*sparse.CSR); ok {
		return x
	}
	out := &sparse.CSR{NRows: a.NRows, NCols: a.NCols, Indptr: a.Indptr, Indices: a.Indices, Values: make([]float64, a.NNZ())}
	for q, v := range a.Values {
		out.Values[q] = Float(v)
	}
	return out
}
