package npy

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The fixtures in testdata were written by NumPy (testdata/gen.py; its
// version is in testdata/numpy-version.txt). The expected values below
// are gen.py's formulas, recomputed.

func fixture(t *testing.T, name string) *Array {
	t.Helper()
	a, err := Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	return a
}

// c34 is gen.py's c34: 3×4, element (i, j) = 0.5·(4i+j) - 1.
func c34() []float32 {
	out := make([]float32, 12)
	for i := range out {
		out[i] = 0.5*float32(i) - 1
	}
	return out
}

func TestNumPyArrays(t *testing.T) {
	// fortran_f8: 2×3×4, (i, j, k) = 100i + 10j + k.
	var f234 []float64
	for i := range 2 {
		for j := range 3 {
			for k := range 4 {
				f234 = append(f234, float64(100*i+10*j+k))
			}
		}
	}
	fi4 := make([]int32, 12)
	for i := range fi4 {
		fi4[i] = int32(i) - 5
	}
	be8 := make([]int64, 5)
	for i := range be8 {
		be8[i] = int64(i) * -3000000000
	}
	for _, tc := range []struct {
		file    string
		version byte
		dtype   DType
		fortran bool
		shape   []int64
		check   func(*testing.T, *Array)
	}{
		{"c_f4.npy", 1, Float32Type, false, []int64{3, 4}, func(t *testing.T, a *Array) {
			require.Equal(t, c34(), readAll[float32](t, a))
		}},
		{"v3_f4.npy", 3, Float32Type, false, []int64{3, 4}, func(t *testing.T, a *Array) {
			require.Equal(t, c34(), readAll[float32](t, a))
		}},
		{"fortran_f8.npy", 1, Float64Type, true, []int64{2, 3, 4}, func(t *testing.T, a *Array) {
			got := make([]float64, 24)
			require.NoError(t, ReadRows(a, got, 0, 2))
			require.Equal(t, f234, got)
			got32 := make([]float32, 12)
			require.NoError(t, ReadRows(a, got32, 1, 2))
			for i, v := range got32 {
				require.Equal(t, float32(f234[12+i]), v)
			}
		}},
		{"fortran_i4.npy", 1, Int32Type, true, []int64{3, 4}, func(t *testing.T, a *Array) {
			got := make([]int32, 12)
			require.NoError(t, ReadRows(a, got, 0, 3))
			require.Equal(t, fi4, got)
			got64 := make([]int64, 4)
			require.NoError(t, ReadRows(a, got64, 2, 3))
			require.Equal(t, []int64{3, 4, 5, 6}, got64)
		}},
		{"f16.npy", 1, Float16Type, false, []int64{2, 3}, func(t *testing.T, a *Array) {
			// Each value is exact in binary16; 0x7bff is 65504, the
			// largest half, and 0x0400 is 2⁻¹⁴, the smallest normal.
			require.Equal(t, []float32{0, 0.5, -2, 65504, float32(math.Pow(2, -14)), 1.5}, readAll[float32](t, a))
			require.Equal(t, []uint16{0x0000, 0x3800, 0xc000, 0x7bff, 0x0400, 0x3e00}, readAll[uint16](t, a))
		}},
		{"be_f4.npy", 1, DType{Kind: Float, Size: 4, BigEndian: true}, false, []int64{2, 3}, func(t *testing.T, a *Array) {
			require.Equal(t, []float32{0.25, 1.25, 2.25, 3.25, 4.25, 5.25}, readAll[float32](t, a))
		}},
		{"be_i8.npy", 1, DType{Kind: Int, Size: 8, BigEndian: true}, false, []int64{5}, func(t *testing.T, a *Array) {
			require.Equal(t, be8, readAll[int64](t, a))
		}},
		{"i32.npy", 1, Int32Type, false, []int64{5}, func(t *testing.T, a *Array) {
			want := []int64{-3, 0, 7, math.MaxInt32, math.MinInt32}
			require.Equal(t, want, readAll[int64](t, a))
		}},
		{"bool.npy", 1, BoolType, false, []int64{4}, func(t *testing.T, a *Array) {
			require.Equal(t, []int32{1, 0, 1, 1}, readAll[int32](t, a))
		}},
		{"u1.npy", 1, Uint8Type, false, []int64{3}, func(t *testing.T, a *Array) {
			require.Equal(t, []int64{0, 7, 255}, readAll[int64](t, a))
		}},
		{"u8.npy", 1, Uint64Type, false, []int64{3}, func(t *testing.T, a *Array) {
			got := make([]int64, 3)
			require.NoError(t, Read(a, got[:2], 0))
			require.Equal(t, []int64{0, 1}, got[:2])
			err := Read(a, got, 0)
			require.ErrorIs(t, err, ErrRange)
			require.ErrorContains(t, err, "u8.npy: value out of range: element 2: 18446744073709551615 does not fit int64")
		}},
		{"scalar_f8.npy", 1, Float64Type, false, []int64{}, func(t *testing.T, a *Array) {
			require.Equal(t, []float64{2.5}, readAll[float64](t, a))
		}},
		{"v2_i8.npy", 2, Int64Type, false, []int64{5}, func(t *testing.T, a *Array) {
			require.Equal(t, []int64{0, 7, 14, 21, 28}, readAll[int64](t, a))
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			a := fixture(t, tc.file)
			require.Equal(t, [2]byte{tc.version, 0}, a.Version)
			require.Equal(t, tc.dtype, a.DType)
			require.Equal(t, tc.fortran, a.Fortran)
			require.Equal(t, tc.shape, a.Shape)
			tc.check(t, a)
		})
	}
}

func TestNumPyObject(t *testing.T) {
	_, err := Open(filepath.Join("testdata", "object.npy"))
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorContains(t, err, "testdata/object.npy: ")
	require.ErrorContains(t, err, "object arrays")
}

func TestNumPyArchives(t *testing.T) {
	// gen.py's arrays: edge_index 2×10, (i%4, 3i%4); node_feat c34;
	// num_nodes_list [4].
	var edges []int64
	for i := range 10 {
		edges = append(edges, int64(i%4))
	}
	for i := range 10 {
		edges = append(edges, int64(3*i%4))
	}
	for _, tc := range []struct {
		file   string
		mapped bool
	}{
		{"savez.npz", true},
		{"savez_compressed.npz", false},
		{"zip64.npz", true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			z, err := OpenArchive(filepath.Join("testdata", tc.file))
			require.NoError(t, err)
			defer z.Close()
			require.Equal(t, []string{"edge_index", "node_feat", "num_nodes_list"}, z.Names())
			ei, err := z.Open("edge_index")
			require.NoError(t, err)
			defer ei.Close()
			require.Equal(t, tc.mapped, ei.Mapped())
			require.Equal(t, []int64{2, 10}, ei.Shape)
			require.Equal(t, edges, readAll[int64](t, ei))
			nf, err := z.Open("node_feat")
			require.NoError(t, err)
			defer nf.Close()
			require.Equal(t, c34(), readAll[float32](t, nf))
			nn, err := z.Open("num_nodes_list")
			require.NoError(t, err)
			defer nn.Close()
			require.Equal(t, []int64{4}, readAll[int64](t, nn))
		})
	}
}

// TestNumPyFortranCompressed reads rows of the Fortran-order arrays of
// NumPy's savez_compressed (deflated: streamed), each range in one
// forward pass of a new cursor, and refuses a range behind the last one
// on the same cursor.
func TestNumPyFortranCompressed(t *testing.T) {
	z, err := OpenArchive(filepath.Join("testdata", "fortran_compressed.npz"))
	require.NoError(t, err)
	defer z.Close()
	nf, err := z.Open("node_feat")
	require.NoError(t, err)
	defer nf.Close()
	require.False(t, nf.Mapped())
	require.True(t, nf.Fortran)
	require.Equal(t, []int64{2, 3, 4}, nf.Shape)
	for _, r := range [][2]int64{{0, 2}, {0, 1}, {1, 2}, {1, 1}} {
		c := nf.Cursor()
		got := make([]float64, (r[1]-r[0])*12)
		require.NoError(t, ReadRows(c, got, r[0], r[1]))
		require.NoError(t, c.Close())
		want := []float64{}
		for i := r[0]; i < r[1]; i++ {
			for j := range int64(3) {
				for k := range int64(4) {
					want = append(want, float64(100*i+10*j+k))
				}
			}
		}
		require.Equal(t, want, got, "rows %v", r)
	}
	ints, err := z.Open("ints")
	require.NoError(t, err)
	defer ints.Close()
	require.True(t, ints.Fortran)
	got := make([]int64, 8)
	require.NoError(t, ReadRows(ints, got, 1, 3))
	require.Equal(t, []int64{-1, 0, 1, 2, 3, 4, 5, 6}, got) // (i, j) = 4i + j - 5
	err = ReadRows(ints, got[:4], 0, 1)
	require.ErrorIs(t, err, ErrBackward)
	require.ErrorContains(t, err, "fortran_compressed.npz: ints")
}
