package npy

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeFile writes b to a new file in a temporary directory.
func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// rawNPY returns a .npy stream with the given version, dictionary and
// data, its header padded as NumPy pads it.
func rawNPY(major byte, dict string, data []byte) []byte {
	prefix := 10
	if major >= 2 {
		prefix = 12
	}
	n := (prefix+len(dict)+1+63)/64*64 - prefix
	b := append([]byte(Magic), major, 0)
	if major >= 2 {
		b = binary.LittleEndian.AppendUint32(b, uint32(n))
	} else {
		b = binary.LittleEndian.AppendUint16(b, uint16(n))
	}
	b = append(b, dict...)
	for len(b) < prefix+n-1 {
		b = append(b, ' ')
	}
	return append(append(b, '\n'), data...)
}

// npyBytes returns Write's stream of data.
func npyBytes[T Elem](t *testing.T, shape []int64, data []T) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, Write(&b, shape, data))
	return b.Bytes()
}

func readAll[T Elem](t *testing.T, a *Array) []T {
	t.Helper()
	got := make([]T, a.Len())
	require.NoError(t, Read(a, got, 0))
	return got
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shape := []int64{7, 3}
	i64 := make([]int64, 21)
	i32 := make([]int32, 21)
	f32 := make([]float32, 21)
	f64 := make([]float64, 21)
	h16 := make([]uint16, 21)
	for i := range i64 {
		i64[i] = int64(rng.Uint64())
		i32[i] = int32(rng.Uint32())
		f32[i] = float32(rng.NormFloat64())
		f64[i] = rng.NormFloat64()
		h16[i] = uint16(rng.UintN(0x7c00)) // finite, non-negative halves
	}
	for _, tc := range []struct {
		name  string
		write func() []byte
		check func(*Array)
	}{
		{"int64", func() []byte { return npyBytes(t, shape, i64) }, func(a *Array) { require.Equal(t, i64, readAll[int64](t, a)) }},
		{"int32", func() []byte { return npyBytes(t, shape, i32) }, func(a *Array) { require.Equal(t, i32, readAll[int32](t, a)) }},
		{"float32", func() []byte { return npyBytes(t, shape, f32) }, func(a *Array) { require.Equal(t, f32, readAll[float32](t, a)) }},
		{"float64", func() []byte { return npyBytes(t, shape, f64) }, func(a *Array) { require.Equal(t, f64, readAll[float64](t, a)) }},
		{"float16", func() []byte { return npyBytes(t, shape, h16) }, func(a *Array) { require.Equal(t, h16, readAll[uint16](t, a)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.write()
			a, err := Open(writeFile(t, "a.npy", b))
			require.NoError(t, err)
			defer a.Close()
			require.True(t, a.Mapped())
			require.Equal(t, shape, a.Shape)
			require.Zero(t, a.DataOffset%64, "data offset %d not 64-aligned", a.DataOffset)
			require.Equal(t, [2]byte{1, 0}, a.Version)
			tc.check(a)
		})
	}
}

// TestWriterRanks writes one file from several writers, each its rows in
// shuffled order, and reads it back.
func TestWriterRanks(t *testing.T) {
	for _, p := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprint("p=", p), func(t *testing.T) {
			const n, cols = 11, 5
			want := make([]float32, n*cols)
			for i := range want {
				want[i] = float32(i)*0.25 - 3
			}
			path := filepath.Join(t.TempDir(), "out.npy")
			f, err := os.Create(path)
			require.NoError(t, err)
			for r := p - 1; r >= 0; r-- { // last rank first: offsets, not order, place rows
				w := NewWriter[float32](f, []int64{n, cols})
				lo, hi := int64(r*n/p), int64((r+1)*n/p)
				require.NoError(t, w.WriteRows(lo, want[lo*cols:hi*cols]))
				if r == 0 {
					require.NoError(t, w.WriteHeader())
					st, err := f.Stat()
					require.NoError(t, err)
					require.Equal(t, w.Size(), st.Size())
				}
			}
			require.NoError(t, f.Close())
			a, err := Open(path)
			require.NoError(t, err)
			defer a.Close()
			require.Equal(t, want, readAll[float32](t, a))
		})
	}
}

func TestEncodeHeaderVersion2(t *testing.T) {
	// 25000 dimensions of 1 need a dictionary over 65535 bytes ("1, "
	// each), so the header is version 2.0 with a 4-byte length.
	shape := make([]int64, 25000)
	for i := range shape {
		shape[i] = 1
	}
	b := EncodeHeader(Float32Type, shape)
	require.Equal(t, byte(2), b[6])
	require.Zero(t, len(b)%64)
	require.Equal(t, len(b)-12, int(binary.LittleEndian.Uint32(b[8:12])))
	require.Equal(t, byte('\n'), b[len(b)-1])
	h, err := ParseHeader(EncodeHeader(Int64Type, []int64{3, 2}))
	require.NoError(t, err)
	require.Equal(t, [2]byte{1, 0}, h.Version)
	require.Equal(t, []int64{3, 2}, h.Shape)
}

// TestFortranRows reads rows of Go-written Fortran-order arrays of 2 and
// 3 dimensions, mapped and streamed.
func TestFortranRows(t *testing.T) {
	const n0, n1, n2 = 5, 3, 2
	// Element (i, j, k) = 100i + 10j + k, stored with i fastest.
	var data []byte
	for k := range n2 {
		for j := range n1 {
			for i := range n0 {
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(100*i+10*j+k)))
			}
		}
	}
	b := rawNPY(1, fmt.Sprintf("{'descr': '<f4', 'fortran_order': True, 'shape': (%d, %d, %d), }", n0, n1, n2), data)
	for _, mapped := range []bool{true, false} {
		a := openTestArray(t, b, mapped)
		require.Equal(t, mapped, a.Mapped())
		for _, r := range [][2]int64{{0, 5}, {1, 3}, {4, 5}, {2, 2}} {
			c := a.Cursor()
			got := make([]float32, (r[1]-r[0])*n1*n2)
			require.NoError(t, ReadRows(c, got, r[0], r[1]))
			require.NoError(t, c.Close())
			for i := r[0]; i < r[1]; i++ {
				for j := range int64(n1) {
					for k := range int64(n2) {
						want := float32(100*i + 10*j + k)
						require.Equal(t, want, got[((i-r[0])*n1+j)*n2+k], "rows %v (%d,%d,%d)", r, i, j, k)
					}
				}
			}
		}
		require.NoError(t, a.Close())
	}
}

// openTestArray opens the .npy stream b as a .npy file (mapped) or as
// the deflated entry "x" of an archive (streamed).
func openTestArray(t *testing.T, b []byte, mapped bool) *Array {
	t.Helper()
	if mapped {
		a, err := Open(writeFile(t, "x.npy", b))
		require.NoError(t, err)
		return a
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "x.npy", Method: zip.Deflate})
	require.NoError(t, err)
	_, err = w.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	z, err := OpenArchive(writeFile(t, "x.npz", buf.Bytes()))
	require.NoError(t, err)
	t.Cleanup(func() { z.Close() })
	a, err := z.Open("x")
	require.NoError(t, err)
	return a
}

// TestArchive writes archives stored and deflated and reads their arrays
// whole, by row ranges, and with two cursors side by side.
func TestArchive(t *testing.T) {
	const e = 100_000 // several 64 KiB chunks per row of edge_index
	edges := make([]int64, 2*e)
	for i := range e {
		edges[i], edges[e+i] = int64(i%97), int64((i*31)%89)
	}
	feat := make([]float32, 40*6)
	for i := range feat {
		feat[i] = float32(i) / 8
	}
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprint("compress=", compress), func(t *testing.T) {
			var buf bytes.Buffer
			aw := NewArchiveWriter(&buf, compress)
			require.NoError(t, Add(aw, "edge_index", []int64{2, e}, edges))
			require.NoError(t, Add(aw, "node_feat", []int64{40, 6}, feat))
			require.NoError(t, aw.Close())
			z, err := OpenArchive(writeFile(t, "d.npz", buf.Bytes()))
			require.NoError(t, err)
			defer z.Close()
			require.Equal(t, []string{"edge_index", "node_feat"}, z.Names())
			require.True(t, z.Has("node_feat"))
			require.False(t, z.Has("node_label"))

			ei, err := z.Open("edge_index")
			require.NoError(t, err)
			defer ei.Close()
			require.Equal(t, !compress, ei.Mapped())
			require.NoError(t, ei.RequireShape(2, -1))
			// Walk both rows in chunks with two cursors: one pass each.
			src, dst := ei.Cursor(), ei.Cursor()
			defer src.Close()
			defer dst.Close()
			const step = 7_001
			s, d := make([]int64, step), make([]int64, step)
			for lo := int64(0); lo < e; lo += step {
				k := min(step, e-lo)
				require.NoError(t, Read(src, s[:k], lo))
				require.NoError(t, Read(dst, d[:k], e+lo))
				require.Equal(t, edges[lo:lo+k], s[:k])
				require.Equal(t, edges[e+lo:e+lo+k], d[:k])
			}
			if compress {
				err := Read(src, s[:1], 0)
				require.ErrorIs(t, err, ErrBackward)
				require.ErrorContains(t, err, "d.npz: edge_index: ")
			}

			nf, err := z.Open("node_feat")
			require.NoError(t, err)
			defer nf.Close()
			got := make([]float32, 10*6)
			require.NoError(t, ReadRows(nf, got, 25, 35))
			require.Equal(t, feat[25*6:35*6], got)
		})
	}
}

// bombArchive returns an archive with one deflated entry "x.npy" holding
// the deflated bytes of b but declaring size as its uncompressed size.
func bombArchive(t *testing.T, b []byte, size uint64) []byte {
	t.Helper()
	var comp bytes.Buffer
	zw := zip.NewWriter(&comp)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "x.npy", Method: zip.Deflate})
	require.NoError(t, err)
	_, err = w.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	zr, err := zip.NewReader(bytes.NewReader(comp.Bytes()), int64(comp.Len()))
	require.NoError(t, err)
	raw, err := zr.File[0].OpenRaw()
	require.NoError(t, err)
	var out bytes.Buffer
	zw = zip.NewWriter(&out)
	fh := zr.File[0].FileHeader
	fh.UncompressedSize64 = size
	rw, err := zw.CreateRaw(&fh)
	require.NoError(t, err)
	_, err = io.Copy(rw, raw)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return out.Bytes()
}

// TestBadInput checks that every malformed input is an *Error naming the
// file (and entry) and wrapping the right sentinel.
func TestBadInput(t *testing.T) {
	dict := func(descr, shape string) string {
		return fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	}
	f4x4 := make([]byte, 16)
	huge := rawNPY(1, dict("<f4", "(1099511627776, 1099511627776)"), nil) // 2⁸⁰ elements
	for _, tc := range []struct {
		name    string
		file    []byte
		npz     bool // a deflated archive entry "x" rather than a .npy file
		want    error
		message string
	}{
		{"wrong magic", append([]byte("\x93NUMPZ\x01\x00"), make([]byte, 100)...), false, ErrFormat, "not a .npy file"},
		{"text file", []byte("0,1\n1,2\n"), false, ErrFormat, "not a .npy file"},
		{"short", []byte("\x93NUM"), false, ErrTruncated, "too short"},
		{"version 4", rawNPY(4, dict("<f4", "(4,)"), f4x4), false, ErrFormat, "unsupported format version 4.0"},
		{"version 1.1", append(append([]byte(Magic), 1, 1), rawNPY(1, dict("<f4", "(4,)"), f4x4)[8:]...), false, ErrFormat, "version 1.1"},
		{"header past end", rawNPY(1, dict("<f4", "(4,)"), f4x4)[:40], false, ErrTruncated, "header declares"},
		{"not a dict", rawNPY(1, "['<f4', False, (4,)]", f4x4), false, ErrFormat, "not a dict"},
		{"missing shape", rawNPY(1, "{'descr': '<f4', 'fortran_order': False, }", f4x4), false, ErrFormat, `missing key "shape"`},
		{"unknown key", rawNPY(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", f4x4), false, ErrFormat, `unexpected key "x"`},
		{"bad fortran_order", rawNPY(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (4,), }", f4x4), false, ErrFormat, "fortran_order"},
		{"negative dim", rawNPY(1, dict("<f4", "(-4,)"), f4x4), false, ErrFormat, "non-negative integer"},
		{"object dtype", rawNPY(1, dict("|O", "(2,)"), f4x4), false, ErrFormat, "object arrays"},
		{"structured dtype", rawNPY(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", f4x4), false, ErrFormat, "structured"},
		{"complex dtype", rawNPY(1, dict("<c8", "(2,)"), f4x4), false, ErrFormat, "unsupported kind"},
		{"odd size", rawNPY(1, dict("<f3", "(2,)"), f4x4), false, ErrFormat, "unsupported size"},
		{"2^80 elements", huge, false, ErrFormat, "2⁶³ bytes or more"},
		{"truncated data", rawNPY(1, dict("<f4", "(5,)"), f4x4), false, ErrTruncated, "declares 20 bytes of data, 16 present"},
		{"huge shape in npz", rawNPY(1, dict("<f4", "(1099511627776,)"), f4x4), true, ErrTruncated, "declares 4398046511104 bytes of data"},
		{"truncated in npz", rawNPY(1, dict("<i8", "(3,)"), f4x4), true, ErrTruncated, "the entry holds 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			var a *Array
			if tc.npz {
				var buf bytes.Buffer
				aw := NewArchiveWriter(&buf, true)
				w, e := aw.zw.CreateHeader(&zip.FileHeader{Name: "x.npy", Method: zip.Deflate})
				require.NoError(t, e)
				_, e = w.Write(tc.file)
				require.NoError(t, e)
				require.NoError(t, aw.Close())
				z, e := OpenArchive(writeFile(t, "bad.npz", buf.Bytes()))
				require.NoError(t, e)
				defer z.Close()
				a, err = z.Open("x")
			} else {
				a, err = Open(writeFile(t, "bad.npy", tc.file))
			}
			require.Nil(t, a)
			require.ErrorIs(t, err, tc.want)
			var e *Error
			require.ErrorAs(t, err, &e)
			if tc.npz {
				require.ErrorContains(t, err, "bad.npz: x: ")
			} else {
				require.ErrorContains(t, err, "bad.npy: ")
			}
			require.ErrorContains(t, err, tc.message)
		})
	}
}

func TestZipBomb(t *testing.T) {
	b := npyBytes(t, []int64{4}, []float32{1, 2, 3, 4})
	z, err := OpenArchive(writeFile(t, "bomb.npz", bombArchive(t, b, 1<<50)))
	require.NoError(t, err)
	defer z.Close()
	_, err = z.Open("x")
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorContains(t, err, "bomb.npz: x: ")
	require.ErrorContains(t, err, "beyond deflate's maximum ratio")

	_, err = z.Open("y")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "the archive holds x")

	_, err = OpenArchive(writeFile(t, "not.npz", b))
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorContains(t, err, "not.npz: not a .npz (zip) archive")
}

func TestConversion(t *testing.T) {
	i8 := npyBytes(t, []int64{3}, []int64{1, -5, 1 << 40})
	a := openTestArray(t, i8, true)
	defer a.Close()
	got := make([]int32, 2)
	require.NoError(t, Read(a, got, 0))
	require.Equal(t, []int32{1, -5}, got)
	err := Read(a, got, 1)
	require.ErrorIs(t, err, ErrRange)
	require.ErrorContains(t, err, "element 2: 1099511627776 does not fit int32")
	err = Read(a, make([]float32, 3), 0)
	require.ErrorIs(t, err, ErrDType)
	require.ErrorContains(t, err, "<i8 array read as float32")
	require.ErrorIs(t, a.RequireShape(3, 1), ErrShape)
	require.ErrorContains(t, a.RequireShape(3, -1), "shape (3,), want (3, *)")
	require.NoError(t, a.RequireShape(-1))

	f4 := openTestArray(t, npyBytes(t, []int64{2}, []float32{1.5, -2}), false)
	defer f4.Close()
	require.ErrorIs(t, Read(f4, make([]uint16, 2), 0), ErrDType)
	require.ErrorIs(t, Read(f4, make([]int64, 2), 0), ErrDType)
	f8 := make([]float64, 2)
	require.NoError(t, Read(f4.Cursor(), f8, 0))
	require.Equal(t, []float64{1.5, -2}, f8)
	require.True(t, strings.HasSuffix(f4.Name(), ".npz: x"))
}

// TestFortranRowsPieces reads row ranges of a streamed Fortran-order
// array whose columns are longer than ReadRows' buffer (16384 float32),
// so that each column is read in several pieces in one forward pass.
func TestFortranRowsPieces(t *testing.T) {
	const n, f = 40000, 3
	var data []byte
	for j := range f {
		for i := range n {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(10*i+j)))
		}
	}
	b := rawNPY(1, fmt.Sprintf("{'descr': '<f4', 'fortran_order': True, 'shape': (%d, %d), }", n, f), data)
	for _, mapped := range []bool{true, false} {
		a := openTestArray(t, b, mapped)
		for _, r := range [][2]int64{{0, n}, {100, 39999}, {16383, 32770}, {39999, n}} {
			c := a.Cursor()
			got := make([]float32, (r[1]-r[0])*f)
			require.NoError(t, ReadRows(c, got, r[0], r[1]))
			require.NoError(t, c.Close())
			for i := r[0]; i < r[1]; i++ {
				for j := range int64(f) {
					require.Equal(t, float32(10*i+j), got[(i-r[0])*f+j], "mapped %v, rows %v (%d,%d)", mapped, r, i, j)
				}
			}
		}
		require.NoError(t, a.Close())
	}
}
