package gpucheck

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
	gpublas "gnnmpi/gpu/blas"
	"gnnmpi/gpu/cuda"
	"gnnmpi/nccl"
	"gnnmpi/sparse"
)

// checkSgemm compares cuBLAS's Sgemm with dense.Gemm for the four
// transpose cases, with alpha and beta. The context must be current.
func checkSgemm(c *cuda.Context, r *rand.Rand) error {
	b, err := gpublas.NewBLAS(0)
	if err != nil {
		return err
	}
	defer b.Close()
	const m, n, k = 67, 45, 33
	for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
		for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			d := &devBufs{c: c}
			a, bm, cm := randNormal(r, m*k), randNormal(r, k*n), randNormal(r, m*n)
			pa, err := devUpload(d, a)
			if err == nil {
				var pb, pc cuda.DevicePtr
				if pb, err = devUpload(d, bm); err == nil {
					if pc, err = devUpload(d, cm); err == nil {
						err = b.Sgemm(tA, tB, m, n, k, 1.5, uintptr(pa), uintptr(pb), -0.5, uintptr(pc))
						var got []float32
						if err == nil {
							got, err = devDownload[float32](c, pc, m*n)
						}
						if err == nil {
							dense.Gemm(dense.BLASOrDefault(nil), tA, tB, m, n, k, 1.5, a, bm, -0.5, cm)
							err = closeTo(fmt.Sprintf("sgemm %c%c", tA, tB), got, cm, 1e-4)
						}
					}
				}
			}
			d.free()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// cuda.Memory is the device memory that gpucheck hands to NCCL and to
// cuSPARSE's workspace.
var (
	_ nccl.DeviceMemory = cuda.Memory{}
	_ gpublas.Allocator = cuda.Memory{}
)

// checkSpMM compares cuSPARSE's SpMM with sparse.Mul for op(A) = A and
// Aᵀ. The context must be current.
func checkSpMM(c *cuda.Context, r *rand.Rand) error {
	s, err := gpublas.NewSparse(cuda.Memory{Ctx: c}, 0)
	if err != nil {
		return err
	}
	defer s.Close()
	const rows, cols, n = 83, 57, 19
	dd := make([]float64, rows*cols)
	for i := range dd {
		if r.IntN(4) == 0 {
			dd[i] = float64(float32(r.NormFloat64()))
		}
	}
	a := sparse.FromDense(rows, cols, dd)
	at := make([]float64, len(dd))
	for i := range rows {
		for j := range cols {
			at[j*rows+i] = dd[i*cols+j]
		}
	}
	aT := sparse.FromDense(cols, rows, at)
	off, ind, val := make([]int32, len(a.Indptr)), make([]int32, len(a.Indices)), make([]float32, len(a.Values))
	for i, p := range a.Indptr {
		off[i] = int32(p)
	}
	for i := range ind {
		ind[i], val[i] = int32(a.Indices[i]), float32(a.Values[i])
	}
	d := &devBufs{c: c}
	defer d.free()
	po := up(d, off)
	pi := up(d, ind)
	pv := up(d, val)
	if d.err != nil {
		return d.err
	}
	csr := gpublas.CSR{Rows: rows, Cols: cols, NNZ: len(ind), RowOffsets: uintptr(po), ColIndices: uintptr(pi), Values: uintptr(pv)}
	for _, tc := range []struct {
		t   blas.Transpose
		opA *sparse.CSR
	}{{blas.NoTrans, a}, {blas.Trans, aT}} {
		in, out := int(tc.opA.NCols), int(tc.opA.NRows)
		x, y := randNormal(r, in*n), randNormal(r, out*n)
		px := up(d, x)
		py := up(d, y)
		if d.err != nil {
			return d.err
		}
		if err := s.SpMM(tc.t, 2, csr, uintptr(px), n, 0.5, uintptr(py)); err != nil {
			return err
		}
		got, err := devDownload[float32](c, py, out*n)
		if err != nil {
			return err
		}
		xd := make([]float64, len(x))
		for i, v := range x {
			xd[i] = float64(v)
		}
		p, err := sparse.Mul(tc.opA, sparse.FromDense(in, n, xd))
		if err != nil {
			return err
		}
		want := make([]float32, len(y))
		for i := range want {
			want[i] = 0.5 * y[i]
		}
		for i := range p.NRows {
			for q := p.Indptr[i]; q < p.Indptr[i+1]; q++ {
				want[i*int64(n)+p.Indices[q]] += 2 * float32(p.Values[q])
			}
		}
		if err := closeTo(fmt.Sprintf("spmm %c", tc.t), got, want, 1e-4); err != nil {
			return err
		}
	}
	return nil
}
