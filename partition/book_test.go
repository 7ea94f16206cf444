package partition

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"gnnmpi/internal/textfile"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/sparse"
)

// checkBook checks the invariants of a partition book: every gid is
// owned by exactly one rank, Owner, LocalID, Owned and Sizes agree, and local
// ids follow ascending global ids within each part.
func checkBook(t *testing.T, b *Book, n int64) {
	t.Helper()
	require.Equal(t, n, b.NumNodes())
	if b.Part != nil {
		require.Len(t, b.Local, int(n))
	}
	sizes := b.Sizes()
	require.Len(t, sizes, b.Parts)
	seen := make([]int, n)
	var total int64
	for r := range b.Parts {
		owned := b.Owned(r)
		require.Equal(t, sizes[r], int64(len(owned)), "size of part %d", r)
		require.True(t, slices.IsSorted(owned), "Owned(%d) not ascending", r)
		for lid, gid := range owned {
			seen[gid]++
			require.Equal(t, r, b.Owner(gid), "Owner(%d)", gid)
			require.Equal(t, int64(lid), b.LocalID(gid), "LocalID(%d)", gid)
		}
		total += sizes[r]
	}
	require.Equal(t, n, total)
	for gid, c := range seen {
		require.Equal(t, 1, c, "gid %d owned %d times", gid, c)
	}
}

func TestNew(t *testing.T) {
	b, err := New([]int32{1, 0, 1, 2, 0, 1}, 4, "custom")
	require.NoError(t, err)
	assert.Equal(t, "custom", b.Method)
	assert.Equal(t, []int64{0, 0, 1, 0, 1, 2}, b.Local)
	assert.Equal(t, []int64{2, 3, 1, 0}, b.Sizes())
	assert.Equal(t, []int64{0, 2, 5}, b.Owned(1))
	assert.Empty(t, b.Owned(3))
	checkBook(t, b, 6)

	for _, tc := range []struct {
		name   string
		part   []int32
		parts  int
		method string
	}{
		{"zero-parts", []int32{}, 0, "m"},
		{"part-high", []int32{0, 2}, 2, "m"},
		{"part-negative", []int32{0, -1}, 2, "m"},
		{"empty-method", []int32{0}, 1, ""},
		{"method-space", []int32{0}, 1, "my method"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(tc.part, tc.parts, tc.method)
			assert.Error(t, err)
			assert.Nil(t, b)
		})
	}
}

func TestBookLiteral(t *testing.T) {
	// A book built as a literal, without caches, answers the same.
	part := []int32{2, 0, 2, 1, 0}
	want, err := New(part, 3, "x")
	require.NoError(t, err)
	lit := &Book{Parts: 3, Method: "x", Part: part, Local: want.Local}
	assert.Equal(t, want.Sizes(), lit.Sizes())
	for r := range 3 {
		assert.Equal(t, want.Owned(r), lit.Owned(r), "part %d", r)
	}
}

func TestBlock(t *testing.T) {
	for _, tc := range []struct {
		n     int64
		parts int
	}{
		{0, 1}, {0, 3}, {1, 4}, {10, 1}, {10, 3}, {10, 10}, {1000, 7}, {2708, 4},
	} {
		t.Run(fmt.Sprintf("n=%d/p=%d", tc.n, tc.parts), func(t *testing.T) {
			b := Block(tc.n, tc.parts)
			assert.Equal(t, "block", b.Method)
			assert.Equal(t, tc.parts, b.Parts)
			checkBook(t, b, tc.n)
			assert.True(t, slices.IsSorted(b.Part), "blocks not contiguous")
			sizes := b.Sizes()
			assert.LessOrEqual(t, slices.Max(sizes)-slices.Min(sizes), int64(1), "sizes %v", sizes)
			// The larger blocks come first.
			assert.True(t, slices.IsSortedFunc(sizes, func(a, b int64) int { return int(b - a) }), "sizes %v", sizes)
		})
	}
}

func TestRandom(t *testing.T) {
	for _, tc := range []struct {
		n     int64
		parts int
	}{
		{0, 2}, {1, 4}, {10, 3}, {1000, 7}, {2708, 4},
	} {
		t.Run(fmt.Sprintf("n=%d/p=%d", tc.n, tc.parts), func(t *testing.T) {
			b := Random(tc.n, tc.parts, 42)
			assert.Equal(t, "random", b.Method)
			checkBook(t, b, tc.n)
			sizes := b.Sizes()
			assert.LessOrEqual(t, slices.Max(sizes)-slices.Min(sizes), int64(1), "sizes %v", sizes)
			assert.Equal(t, b.Part, Random(tc.n, tc.parts, 42).Part, "same seed")
		})
	}
	a, b := Random(1000, 4, 1), Random(1000, 4, 2)
	assert.NotEqual(t, a.Part, b.Part, "different seeds")
	assert.False(t, slices.IsSorted(a.Part), "not shuffled")
}

// Random's stream is part of the format of every run's results: books
// from earlier versions (graph.RandomPartition, stream 101) must be
// reproduced exactly.
func TestRandomGolden(t *testing.T) {
	assert.Equal(t, []int32{2, 0, 1, 2, 0, 1, 2, 0, 1, 0, 2, 1}, Random(12, 3, 1).Part)
}

func TestEdgeCutAndBalance(t *testing.T) {
	// Path 0-1-2-3-4-5 stored in both directions, plus a self-loop on 0.
	adj := &sparse.CSR{
		NRows: 6, NCols: 6,
		Indptr:  []int64{0, 2, 4, 6, 8, 10, 11},
		Indices: []int64{0, 1, 0, 2, 1, 3, 2, 4, 3, 5, 4},
	}
	for _, tc := range []struct {
		name string
		part []int32
		cut  int64
	}{
		{"halves", []int32{0, 0, 0, 1, 1, 1}, 2},
		{"alternating", []int32{0, 1, 0, 1, 0, 1}, 10},
		{"one-part", []int32{0, 0, 0, 0, 0, 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(tc.part, 2, "test")
			require.NoError(t, err)
			assert.Equal(t, tc.cut, b.EdgeCut(adj))
		})
	}

	b, err := New([]int32{0, 0, 0, 0, 1, 1}, 2, "test")
	require.NoError(t, err)
	train := []bool{true, true, false, false, false, true}
	none := make([]bool, 6)
	// Vertex counts 4 and 2 over mean 3; train counts 2 and 1 over mean 1.5.
	assert.Equal(t, []float64{4.0 / 3}, b.Balance())
	assert.Equal(t, []float64{4.0 / 3, 2 / 1.5, 1}, b.Balance(nil, train, none))
}

func TestPanics(t *testing.T) {
	b := Block(5, 2)
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"owner-negative", func() { b.Owner(-1) }},
		{"owner-high", func() { b.Owner(5) }},
		{"localid-high", func() { b.LocalID(5) }},
		{"owned-high", func() { b.Owned(2) }},
		{"owned-negative", func() { b.Owned(-1) }},
		{"edgecut-shape", func() { b.EdgeCut(&sparse.CSR{NRows: 4, NCols: 4, Indptr: make([]int64, 5)}) }},
		{"balance-mask", func() { b.Balance(make([]bool, 4)) }},
		{"block-n", func() { Block(-1, 2) }},
		{"block-parts", func() { Block(5, 0) }},
		{"random-parts", func() { Random(5, 0, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Panics(t, tc.f)
		})
	}
}

func TestBookFile(t *testing.T) {
	b := Random(1000, 5, 9)
	for _, name := range []string{"book.txt", "book.txt.gz"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			// Overwrite an existing file.
			require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
			require.NoError(t, Write(path, b))
			got, err := Read(path)
			require.NoError(t, err)
			assert.Equal(t, b, got)
			checkBook(t, got, 1000)

			// No temporary files are left behind.
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1)

			// The header as documented.
			var first string
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			var sc *bufio.Scanner
			if strings.HasSuffix(name, ".gz") {
				zr, err := gzip.NewReader(f)
				require.NoError(t, err)
				sc = bufio.NewScanner(zr)
			} else {
				sc = bufio.NewScanner(f)
			}
			require.True(t, sc.Scan())
			first = sc.Text()
			assert.Equal(t, "gnnmpi-partition 1 nodes=1000 parts=5 method=random", first)
		})
	}
}

// The file is byte for byte what earlier versions (graph.WriteBook) wrote
// and read.
func TestWriteGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "book.txt")
	require.NoError(t, Write(path, Block(5, 2)))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "gnnmpi-partition 1 nodes=5 parts=2 method=block\n0\n0\n0\n1\n1\n", string(got))
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		path string
		b    *Book
	}{
		{"no-dir", filepath.Join(dir, "missing", "b.txt"), Block(4, 2)},
		{"bad-part", filepath.Join(dir, "b.txt"), &Book{Parts: 2, Method: "x", Part: []int32{0, 2}}},
		{"bad-method", filepath.Join(dir, "b.txt"), &Book{Parts: 1, Method: "a b", Part: []int32{0}}},
		{"bad-parts", filepath.Join(dir, "b.txt"), &Book{Parts: 0, Method: "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Error(t, Write(tc.path, tc.b))
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

func TestReadErrors(t *testing.T) {
	const header = "gnnmpi-partition 1 nodes=3 parts=2 method=m\n"
	const v2 = "gnnmpi-partition 2 nodes=3 parts=2 method=m\n"
	for _, tc := range []struct {
		name    string
		content string
		line    int
		msg     string
	}{
		{"empty", "", 1, "empty file"},
		{"magic", "gnnmpi-parts 1 nodes=3 parts=2 method=m\n0\n1\n0\n", 1, "bad header"},
		{"fields", "gnnmpi-partition 1 nodes=3 parts=2\n0\n1\n0\n", 1, "bad header"},
		{"version", "gnnmpi-partition 3 nodes=3 parts=2 method=m\n0\n1\n0\n", 1, "unsupported partition book version"},
		{"v2-first", v2 + "1\n2\n3\n", 2, "first offset 1, want 0"},
		{"v2-decreasing", v2 + "0\n2\n1\n", 4, "below the previous one"},
		{"v2-beyond", v2 + "0\n4\n4\n", 3, "beyond nodes=3"},
		{"v2-bad", v2 + "0\nx\n3\n", 3, `bad offset "x"`},
		{"v2-too-few", v2 + "0\n3\n", 4, "after 2 of parts+1 = 3 offsets"},
		{"v2-too-many", v2 + "0\n1\n3\n3\n", 5, "more than parts+1 = 3 offsets"},
		{"v2-last", v2 + "0\n1\n2\n", 4, "last offset 2, want nodes=3"},
		{"v2-parts-huge", "gnnmpi-partition 2 nodes=3 parts=100000000 method=m\n0\n", 1, "more than the file can hold"},
		{"nodes-key", "gnnmpi-partition 1 n=3 parts=2 method=m\n0\n1\n0\n", 1, "bad header field"},
		{"nodes-number", "gnnmpi-partition 1 nodes=x parts=2 method=m\n", 1, "not an integer"},
		{"nodes-negative", "gnnmpi-partition 1 nodes=-1 parts=2 method=m\n", 1, "bad node count"},
		{"nodes-huge", "gnnmpi-partition 1 nodes=1000000000000 parts=2 method=m\n0\n", 1, "more than the file can hold"},
		{"parts-zero", "gnnmpi-partition 1 nodes=3 parts=0 method=m\n0\n1\n0\n", 1, "bad part count"},
		{"method-empty", "gnnmpi-partition 1 nodes=3 parts=2 method=\n0\n1\n0\n", 1, "bad header field"},
		{"id-range", header + "0\n2\n0\n", 3, "part id 2 out of range [0,2)"},
		{"id-negative", header + "0\n1\n-1\n", 4, "part id -1 out of range"},
		{"id-bad", header + "0\nx\n0\n", 3, `bad part id "x"`},
		{"id-blank", header + "0\n\n0\n", 3, `bad part id ""`},
		{"too-few", header + "0\n1\n", 4, "unexpected end of file after 2 of nodes=3"},
		{"too-many", header + "0\n1\n0\n1\n", 5, "more than nodes=3 part ids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "book.txt")
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o644))
			b, err := Read(path)
			require.Error(t, err)
			assert.Nil(t, b)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.line, pe.Line, "line: %v", err)
			prefix := fmt.Sprintf("%s:%d: ", path, tc.line)
			assert.True(t, strings.HasPrefix(err.Error(), prefix), "got: %v want prefix: %s", err, prefix)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}

	t.Run("crlf", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "book.txt")
		require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(header+"0\n1\n0\n", "\n", "\r\n")), 0o644))
		b, err := Read(path)
		require.NoError(t, err)
		assert.Equal(t, []int32{0, 1, 0}, b.Part)
	})
	t.Run("missing", func(t *testing.T) {
		_, err := Read(filepath.Join(t.TempDir(), "none.txt"))
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
	t.Run("truncated-gzip", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "book.txt.gz")
		require.NoError(t, Write(path, Random(5000, 3, 1)))
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, data[:len(data)/2], 0o644))
		_, err = Read(path)
		var pe *ParseError
		require.ErrorAs(t, err, &pe)
		assert.ErrorIs(t, err, textfile.ErrTruncated)
	})
}

func TestContiguous(t *testing.T) {
	offsets := []int64{0, 3, 3, 7, 10}
	b, err := Contiguous(offsets, "relabelled")
	require.NoError(t, err)
	offsets[1] = 99 // the book keeps a copy
	assert.Nil(t, b.Part)
	assert.Nil(t, b.Local)
	assert.Equal(t, 4, b.Parts)
	assert.Equal(t, "relabelled", b.Method)
	assert.Equal(t, []int64{0, 3, 3, 7, 10}, b.Offsets())
	assert.Equal(t, []int64{3, 0, 4, 3}, b.Sizes())
	assert.Equal(t, []int64{7, 8, 9}, b.Owned(3))
	assert.Empty(t, b.Owned(1))
	lo, hi := b.Range(2)
	assert.Equal(t, [2]int64{3, 7}, [2]int64{lo, hi})
	checkBook(t, b, 10)

	// Every method answers as the same assignment given as a Part array.
	part := []int32{0, 0, 0, 2, 2, 2, 2, 3, 3, 3}
	ref, err := New(part, 4, "relabelled")
	require.NoError(t, err)
	assert.Equal(t, b.Offsets(), ref.Offsets(), "a Part book with contiguous parts has offsets too")
	for gid := range int64(10) {
		assert.Equal(t, ref.Owner(gid), b.Owner(gid), "Owner(%d)", gid)
		assert.Equal(t, ref.LocalID(gid), b.LocalID(gid), "LocalID(%d)", gid)
		r, lid := b.Locate(gid)
		rr, rlid := ref.Locate(gid)
		assert.Equal(t, [2]int64{int64(rr), rlid}, [2]int64{int64(r), lid}, "Locate(%d)", gid)
		assert.Equal(t, [2]int64{int64(b.Owner(gid)), b.LocalID(gid)}, [2]int64{int64(r), lid})
	}
	for r := range 4 {
		assert.Equal(t, ref.Owned(r), b.Owned(r))
		rlo, rhi := ref.Range(r)
		lo, hi := b.Range(r)
		assert.Equal(t, [2]int64{rlo, rhi}, [2]int64{lo, hi})
	}
	adj, err := sparse.FromCOO(10, 10, []int64{0, 1, 3, 4, 7, 9, 2}, []int64{1, 3, 4, 9, 8, 0, 5}, nil)
	require.NoError(t, err)
	assert.Equal(t, ref.EdgeCut(adj), b.EdgeCut(adj))
	mask := []bool{true, false, false, true, true, false, false, false, true, true}
	assert.Equal(t, ref.Balance(nil, mask), b.Balance(nil, mask))

	// A book whose parts are not id ranges has no offsets.
	assert.Nil(t, Random(10, 3, 1).Offsets())
	assert.Panics(t, func() { Random(10, 3, 1).Range(0) })
	assert.Panics(t, func() { b.Range(4) })
	assert.Panics(t, func() { b.Owner(10) })
	assert.Panics(t, func() { b.Owner(-1) })
	assert.Panics(t, func() { b.LocalID(10) })

	// Empty parts at either end.
	e, err := Contiguous([]int64{0, 0, 2, 2}, "m")
	require.NoError(t, err)
	assert.Equal(t, 1, e.Owner(0))
	assert.Equal(t, 1, e.Owner(1))
	checkBook(t, e, 2)

	for _, tc := range []struct {
		name    string
		offsets []int64
		method  string
		msg     string
	}{
		{"none", nil, "m", "0 parts"},
		{"one-offset", []int64{0}, "m", "0 parts"},
		{"first", []int64{1, 3}, "m", "first offset is 1"},
		{"decreasing", []int64{0, 4, 3}, "m", "offset 2 (3) is below offset 1 (4)"},
		{"method", []int64{0, 3}, "a b", "not a non-empty word"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Contiguous(tc.offsets, tc.method)
			require.Error(t, err)
			assert.Nil(t, b)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestContiguousFile(t *testing.T) {
	b, err := Contiguous([]int64{0, 4, 4, 9}, "metis")
	require.NoError(t, err)
	for _, name := range []string{"book.txt", "book.txt.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			require.NoError(t, Write(path, b))
			got, err := Read(path)
			require.NoError(t, err)
			assert.Equal(t, b, got)
			checkBook(t, got, 9)
			if name == "book.txt" {
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, "gnnmpi-partition 2 nodes=9 parts=3 method=metis\n0\n4\n4\n9\n", string(data))
			}
		})
	}
}

// On a book of one part, Locate's shortcut (part 0, local id gid) answers
// as Owner and LocalID do, for every kind of book that has one part: a
// Part array (Block), Contiguous, and a literal (no shortcut), and panics
// out of range.
func TestLocateOnePart(t *testing.T) {
	contig, err := Contiguous([]int64{0, 6}, "one")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		b    *Book
	}{
		{"block", Block(6, 1)},
		{"contiguous", contig},
		{"literal", &Book{Parts: 1, Method: "lit", Part: make([]int32, 6), Local: []int64{0, 1, 2, 3, 4, 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for gid := range int64(6) {
				r, lid := tc.b.Locate(gid)
				assert.Equal(t, [2]int64{int64(tc.b.Owner(gid)), tc.b.LocalID(gid)}, [2]int64{int64(r), lid}, "Locate(%d)", gid)
				assert.Equal(t, [2]int64{0, gid}, [2]int64{int64(r), lid})
			}
			assert.Panics(t, func() { tc.b.Locate(6) })
			assert.Panics(t, func() { tc.b.Locate(-1) })
		})
	}
}
