package tier

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/dense"
	"gnnmpi/gpu/cuda"
	"gnnmpi/gpu/gputest"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

func TestMain(m *testing.M) {
	code := m.Run()
	gputest.Remove()
	os.Exit(code)
}

// needFake points GNNMPI_CUDA_LIBDIR at the fake CUDA, skipping t without
// gcc.
func needFake(t *testing.T) { gputest.UseCUDA(t) }

// run builds, on each of q in-process ranks, the feature store of x over a
// random q-part book with a cache and hotness scores, and its tier store
// on the fake device, and calls fn with both.
func run(t *testing.T, q int, x *dense.Matrix, o alltoall.StoreOptions, fn func(rank int, fs *alltoall.Store, s *Store) error) {
	t.Helper()
	n := x.Rows
	r := rand.New(rand.NewPCG(uint64(q), 7))
	part := make([]int32, n)
	for v := range part {
		part[v] = int32(r.IntN(q))
	}
	book, err := partition.New(part, q, "test")
	if err != nil {
		t.Fatal(err)
	}
	err = inproc.Run(q, inproc.Options{Timeout: 30 * time.Second}, func(cm collective.Comm) error {
		owned := book.Owned(cm.Rank())
		local := dense.New(len(owned), x.Cols)
		for lid, gid := range owned {
			copy(local.Row(lid), x.Row(int(gid)))
		}
		score := make([]float64, n)
		sr := rand.New(rand.NewPCG(uint64(cm.Rank()), 8))
		for v := range score {
			score[v] = sr.Float64()
		}
		oo := o
		oo.Score, oo.CacheRows = sparse.VecFromDense(score), n/(3*q)
		fs, err := alltoall.NewStore(cm, book, local, oo)
		if err != nil {
			return err
		}
		c, err := cuda.Open(0)
		if err != nil {
			return err
		}
		defer c.Close()
		s, err := New(c, fs)
		if err != nil {
			return err
		}
		defer s.Close()
		return fn(cm.Rank(), fs, s)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Gather's matrix is bitwise the feature store's Fetch, for both dtypes
// (f16: gather_rows_f16's conversion on the device is internal/f16's, which
// Fetch uses, for normal, subnormal, zero, infinite and NaN halves), every
// device fraction, ragged widths (odd ones put f16 rows at 2-byte
// alignment) and ranks, with own, cached and remote rows and repeated
// ids; the reads add up, follow the tiers and count the dtype's bytes.
func TestGatherMatchesStore(t *testing.T) {
	needFake(t)
	const n = 120
	special := []float32{0, float32(math.Copysign(0, -1)), 3e-6, -6e-8, 1e-9, 65504, 7e4, float32(math.Inf(-1)), float32(math.NaN()), 0.1}
	for _, dt := range []alltoall.DType{alltoall.F32, alltoall.F16} {
		elem := map[alltoall.DType]int64{alltoall.F32: 4, alltoall.F16: 2}[dt]
		for _, q := range []int{1, 3} {
			for _, width := range []int{1, 33, 70} {
				for _, frac := range []float64{0, 0.3, 1} {
					t.Run(fmt.Sprintf("%s/q%d/w%d/gpu%v", dt, q, width, frac), func(t *testing.T) {
						r := rand.New(rand.NewPCG(uint64(width), 1))
						x := dense.New(n, width)
						for k := range x.Data {
							x.Data[k] = float32(r.NormFloat64())
							if r.IntN(8) == 0 {
								x.Data[k] = special[r.IntN(len(special))]
							}
						}
						testGather(t, q, n, width, frac, elem, x, alltoall.StoreOptions{GPUFrac: frac, DType: dt})
					})
				}
			}
		}
	}
}

// testGather is one case of TestGatherMatchesStore: values take elem
// bytes in the tiers.
func testGather(t *testing.T, q, n, width int, frac float64, elem int64, x *dense.Matrix, o alltoall.StoreOptions) {
	run(t, q, x, o, func(rank int, fs *alltoall.Store, s *Store) error {
		if s.Half() != (o.DType == alltoall.F16) {
			return fmt.Errorf("Half() = %v for a %s store", s.Half(), o.DType)
		}
		dRows, hRows := s.TierRows()
		if want := fs.Tiers()[0].Rows; dRows != want || dRows+hRows != fs.OwnRows()+fs.CachedRows() {
			return fmt.Errorf("tier rows %d + %d, store %v", dRows, hRows, fs.Tiers())
		}
		rr := rand.New(rand.NewPCG(uint64(rank), 2))
		var total Reads
		for _, size := range []int{40, 0, 200, 7} {
			ids := make([]int64, size)
			for i := range ids {
				ids[i] = rr.Int64N(int64(n))
			}
			want, wantCnt, err := fs.Fetch(ids)
			if err != nil {
				return err
			}
			b, err := s.Gather(ids)
			if err != nil {
				return err
			}
			if b.Rows != size || b.Cols != width || b.Counts != wantCnt {
				return fmt.Errorf("batch %d×%d %+v, want %d×%d %+v", b.Rows, b.Cols, b.Counts, size, width, wantCnt)
			}
			rd := b.Reads
			if rd.DeviceRows+rd.HostRows+rd.RemoteRows != int64(size) ||
				rd.RemoteRows != wantCnt.Rows-wantCnt.Local-wantCnt.Hits ||
				rd.HostBytes != elem*int64(width)*rd.HostRows ||
				rd.DeviceBytes != elem*int64(width)*rd.DeviceRows ||
				rd.RemoteBytes != elem*int64(width)*rd.RemoteRows ||
				(frac == 0 && rd.DeviceRows != 0) || (frac == 1 && rd.HostRows != 0) {
				return fmt.Errorf("reads %+v for counts %+v", rd, wantCnt)
			}
			total = total.Add(rd)
			if size == 0 {
				continue
			}
			got := make([]float32, size*width)
			if err := cuda.CopyDtoH(s.c, got, b.Ptr); err != nil {
				return err
			}
			for k := range got {
				if math.Float32bits(got[k]) != math.Float32bits(want.Data[k]) {
					return fmt.Errorf("row %d (vertex %d) col %d got: %v want: %v", k/width, ids[k/width], k%width, got[k], want.Data[k])
				}
			}
		}
		if s.Reads() != total {
			return fmt.Errorf("total reads %+v, sum %+v", s.Reads(), total)
		}
		return nil
	})
}

// Batches gathered into distinct Outs stay valid while later gathers
// run (the loader's ring of buffers): each still holds its Fetch.
func TestGatherToKeepsBatches(t *testing.T) {
	needFake(t)
	const n, width = 90, 13
	x := dense.New(n, width)
	r := rand.New(rand.NewPCG(3, 4))
	for k := range x.Data {
		x.Data[k] = float32(r.NormFloat64())
	}
	run(t, 2, x, alltoall.StoreOptions{GPUFrac: 0.5}, func(rank int, fs *alltoall.Store, s *Store) error {
		rr := rand.New(rand.NewPCG(uint64(rank), 5))
		outs := []*Out{s.NewOut(), s.NewOut(), s.NewOut()}
		defer func() {
			for _, o := range outs {
				o.Free()
			}
		}()
		var wants []*dense.Matrix
		var batches []Batch
		for k, size := range []int{30, 50, 70, 20, 60, 10} { // sizes grow and shrink: buffers are reallocated
			ids := make([]int64, size)
			for i := range ids {
				ids[i] = rr.Int64N(int64(n))
			}
			want, _, err := fs.Fetch(ids)
			if err != nil {
				return err
			}
			b, err := s.GatherTo(outs[k%len(outs)], ids)
			if err != nil {
				return err
			}
			if b.Ptr == 0 {
				return fmt.Errorf("gather %d: no output", k)
			}
			wants, batches = append(wants, want), append(batches, b)
			if len(batches) > len(outs) {
				wants, batches = wants[1:], batches[1:]
			}
			if k >= 2 && batches[0].Ptr == batches[1].Ptr {
				return fmt.Errorf("gather %d: two live batches share %#x", k, batches[0].Ptr)
			}
			for j, b := range batches {
				got := make([]float32, b.Rows*b.Cols)
				if err := cuda.CopyDtoH(s.c, got, b.Ptr); err != nil {
					return err
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(wants[j].Data[i]) {
						return fmt.Errorf("after gather %d: live batch %d element %d got %v want %v", k, j, i, got[i], wants[j].Data[i])
					}
				}
			}
		}
		return nil
	})
}

// A store of sparse rows is refused with ErrNotF32.
func TestNewRejectsSparse(t *testing.T) {
	needFake(t)
	x := sparse.FromDense(10, 4, make([]float32, 40))
	err := inproc.Run(1, inproc.Options{Timeout: 10 * time.Second}, func(cm collective.Comm) error {
		book, err := partition.New(make([]int32, 10), 1, "test")
		if err != nil {
			return err
		}
		fs, err := alltoall.NewSparseStore(cm, book, x, alltoall.StoreOptions{})
		if err != nil {
			return err
		}
		c, err := cuda.Open(0)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := New(c, fs); !errors.Is(err, alltoall.ErrNotF32) {
			return fmt.Errorf("New of a sparse store: %v, want ErrNotF32", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
