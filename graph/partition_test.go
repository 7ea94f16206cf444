package graph

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/graph/metis"
	"gnnmpi/sparse"
)

// partCheckBook checks the invariants of a partition book: every gid is
// owned by exactly one rank, Owner, LocalID, Owned and Sizes agree, and local
// ids follow ascending global ids within each part.
func partCheckBook(t *testing.T, b *PartitionBook, n int64) {
	t.Helper()
	require.Equal(t, n, b.NumNodes())
	require.Len(t, b.Local, int(n))
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

func TestNewPartitionBook(t *testing.T) {
	b, err := NewPartitionBook([]int32{1, 0, 1, 2, 0, 1}, 4, "custom")
	require.NoError(t, err)
	assert.Equal(t, "custom", b.Method)
	assert.Equal(t, []int64{0, 0, 1, 0, 1, 2}, b.Local)
	assert.Equal(t, []int64{2, 3, 1, 0}, b.Sizes())
	assert.Equal(t, []int64{0, 2, 5}, b.Owned(1))
	assert.Empty(t, b.Owned(3))
	partCheckBook(t, b, 6)

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
			b, err := NewPartitionBook(tc.part, tc.parts, tc.method)
			assert.Error(t, err)
			assert.Nil(t, b)
		})
	}
}

func TestBookLiteral(t *testing.T) {
	// A book built as a literal, without caches, answers the same.
	part := []int32{2, 0, 2, 1, 0}
	want, err := NewPartitionBook(part, 3, "x")
	require.NoError(t, err)
	lit := &PartitionBook{Parts: 3, Method: "x", Part: part, Local: want.Local}
	assert.Equal(t, want.Sizes(), lit.Sizes())
	for r := range 3 {
		assert.Equal(t, want.Owned(r), lit.Owned(r), "part %d", r)
	}
}

func TestBlockPartition(t *testing.T) {
	for _, tc := range []struct {
		n     int64
		parts int
	}{
		{0, 1}, {0, 3}, {1, 4}, {10, 1}, {10, 3}, {10, 10}, {1000, 7}, {2708, 4},
	} {
		t.Run(fmt.Sprintf("n=%d/p=%d", tc.n, tc.parts), func(t *testing.T) {
			b := BlockPartition(tc.n, tc.parts)
			assert.Equal(t, "block", b.Method)
			assert.Equal(t, tc.parts, b.Parts)
			partCheckBook(t, b, tc.n)
			assert.True(t, slices.IsSorted(b.Part), "blocks not contiguous")
			sizes := b.Sizes()
			assert.LessOrEqual(t, slices.Max(sizes)-slices.Min(sizes), int64(1), "sizes %v", sizes)
			// The larger blocks come first.
			assert.True(t, slices.IsSortedFunc(sizes, func(a, b int64) int { return int(b - a) }), "sizes %v", sizes)
		})
	}
}

func TestRandomPartition(t *testing.T) {
	for _, tc := range []struct {
		n     int64
		parts int
	}{
		{0, 2}, {1, 4}, {10, 3}, {1000, 7}, {2708, 4},
	} {
		t.Run(fmt.Sprintf("n=%d/p=%d", tc.n, tc.parts), func(t *testing.T) {
			b := RandomPartition(tc.n, tc.parts, 42)
			assert.Equal(t, "random", b.Method)
			partCheckBook(t, b, tc.n)
			sizes := b.Sizes()
			assert.LessOrEqual(t, slices.Max(sizes)-slices.Min(sizes), int64(1), "sizes %v", sizes)
			assert.Equal(t, b.Part, RandomPartition(tc.n, tc.parts, 42).Part, "same seed")
		})
	}
	a, b := RandomPartition(1000, 4, 1), RandomPartition(1000, 4, 2)
	assert.NotEqual(t, a.Part, b.Part, "different seeds")
	assert.False(t, slices.IsSorted(a.Part), "not shuffled")
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
			b, err := NewPartitionBook(tc.part, 2, "test")
			require.NoError(t, err)
			assert.Equal(t, tc.cut, b.EdgeCut(adj))
		})
	}

	b, err := NewPartitionBook([]int32{0, 0, 0, 0, 1, 1}, 2, "test")
	require.NoError(t, err)
	train := []bool{true, true, false, false, false, true}
	none := make([]bool, 6)
	// Vertex counts 4 and 2 over mean 3; train counts 2 and 1 over mean 1.5.
	assert.Equal(t, []float64{4.0 / 3}, b.Balance())
	assert.Equal(t, []float64{4.0 / 3, 2 / 1.5, 1}, b.Balance(nil, train, none))
}

func TestPartitionPanics(t *testing.T) {
	b := BlockPartition(5, 2)
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
		{"block-n", func() { BlockPartition(-1, 2) }},
		{"block-parts", func() { BlockPartition(5, 0) }},
		{"random-parts", func() { RandomPartition(5, 0, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Panics(t, tc.f)
		})
	}
}

// partReadPairs reads a gzip-compressed CSV of "a,b" integer lines.
func partReadPairs(t *testing.T, path string) [][2]int64 {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	var pairs [][2]int64
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		var p [2]int64
		for k, s := range strings.Split(sc.Text(), ",") {
			require.Less(t, k, 2, "line %q", sc.Text())
			p[k], err = strconv.ParseInt(s, 10, 64)
			require.NoError(t, err)
		}
		pairs = append(pairs, p)
	}
	require.NoError(t, sc.Err())
	return pairs
}

// partLoadCora builds the Cora dataset (topology and planetoid split only)
// from the OGB-layout files in ../data/cora, without the package's readers.
func partLoadCora(t *testing.T) *Dataset {
	t.Helper()
	dir := filepath.Join("..", "data", "cora")
	nn := partReadPairs(t, filepath.Join(dir, "raw", "num-node-list.csv.gz"))
	require.Len(t, nn, 1)
	n := nn[0][0]
	edges := partReadPairs(t, filepath.Join(dir, "raw", "edge.csv.gz"))
	adj := &sparse.CSR{NRows: n, NCols: n, Indptr: make([]int64, n+1), Indices: make([]int64, len(edges))}
	for _, e := range edges {
		adj.Indptr[e[0]+1]++
	}
	for i := range n {
		adj.Indptr[i+1] += adj.Indptr[i]
	}
	next := slices.Clone(adj.Indptr[:n])
	for _, e := range edges {
		adj.Indices[next[e[0]]] = e[1]
		next[e[0]]++
	}
	var s Split
	for _, set := range []struct {
		name string
		dst  *[]int64
	}{{"train", &s.Train}, {"valid", &s.Valid}, {"test", &s.Test}} {
		for _, p := range partReadPairs(t, filepath.Join(dir, "split", "planetoid", set.name+".csv.gz")) {
			*set.dst = append(*set.dst, p[0])
		}
		slices.Sort(*set.dst)
	}
	d := &Dataset{Name: "cora", NumNodes: n, Adj: adj, Splits: map[string]Split{"planetoid": s}}
	require.NoError(t, d.Validate())
	return d
}

// partMasks returns the membership masks of a split's train, valid and test
// sets.
func partMasks(n int64, s Split) (train, valid, test []bool) {
	mask := func(set []int64) []bool {
		m := make([]bool, n)
		for _, v := range set {
			m[v] = true
		}
		return m
	}
	return mask(s.Train), mask(s.Valid), mask(s.Test)
}

func TestMetisPartitionCora(t *testing.T) {
	d := partLoadCora(t)
	// Cora: 2708 vertices, 10556 directed edges (5278 undirected, with
	// both directions stored); planetoid split 140/500/1000.
	require.Equal(t, int64(2708), d.NumNodes)
	require.Equal(t, int64(10556), d.NumEdges())
	train, valid, test := partMasks(d.NumNodes, d.Splits["planetoid"])

	const parts = 4
	random := RandomPartition(d.NumNodes, parts, 1).EdgeCut(d.Adj)
	for _, tc := range []struct {
		name  string
		split string
	}{
		{"vertices", ""},
		{"planetoid", "planetoid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := MetisPartition(d, parts, tc.split, 1)
			require.NoError(t, err)
			assert.Equal(t, "metis", b.Method)
			partCheckBook(t, b, d.NumNodes)

			cut := b.EdgeCut(d.Adj)
			bal := b.Balance(nil, train, valid, test)
			t.Logf("edge cut (directed) metis %d random %d; balance vertices/train/valid/test %.3f", cut, random, bal)
			// A random 4-way split cuts about 3/4 of the edges;
			// METIS cuts a small fraction of Cora's.
			assert.Less(t, float64(cut), 0.25*float64(random), "metis %d random %d", cut, random)
			// METIS's default imbalance tolerance is 1.03 per
			// constraint; 140 train vertices over 4 parts leave
			// little room, so allow 1.1.
			assert.LessOrEqual(t, bal[0], 1.1, "vertex balance")
			if tc.split != "" {
				assert.LessOrEqual(t, bal[1], 1.1, "train balance")
				assert.LessOrEqual(t, bal[2], 1.1, "valid balance")
				assert.LessOrEqual(t, bal[3], 1.1, "test balance")
			}

			// Same seed, same partition.
			again, err := MetisPartition(d, parts, tc.split, 1)
			require.NoError(t, err)
			assert.Equal(t, b.Part, again.Part)

			// Round trip through a file.
			for _, name := range []string{"cora.part", "cora.part.gz"} {
				path := filepath.Join(t.TempDir(), name)
				require.NoError(t, WriteBook(path, b))
				got, err := ReadBook(path)
				require.NoError(t, err)
				assert.Equal(t, b, got, name)
			}
		})
	}
}

func TestMetisPartitionDirected(t *testing.T) {
	// Two directed 4-cycles joined by one arc, each arc stored once, with
	// a self-loop: METIS must see the symmetric graph.
	arcs := [][2]int64{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {4, 5}, {5, 6}, {6, 7}, {7, 4}, {3, 4}, {2, 2}}
	adj := &sparse.CSR{NRows: 8, NCols: 8, Indptr: make([]int64, 9)}
	slices.SortFunc(arcs, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	for _, a := range arcs {
		adj.Indptr[a[0]+1]++
		adj.Indices = append(adj.Indices, a[1])
	}
	for i := range 8 {
		adj.Indptr[i+1] += adj.Indptr[i]
	}
	d := &Dataset{Name: "cycles", NumNodes: 8, Adj: adj}
	require.NoError(t, d.Validate())
	b, err := MetisPartition(d, 2, "", 3)
	require.NoError(t, err)
	assert.Equal(t, int64(1), b.EdgeCut(adj), "only the arc 3→4 is cut")
	assert.Equal(t, []int64{4, 4}, b.Sizes())
}

func TestMetisPartitionErrors(t *testing.T) {
	d, err := SBM(DefaultSBM(200))
	require.NoError(t, err)
	part := *d
	part.Rows = []int64{0, 1}
	noAdj := *d
	noAdj.Adj = nil
	for _, tc := range []struct {
		name  string
		d     *Dataset
		parts int
		split string
	}{
		{"rows", &part, 2, ""},
		{"no-adjacency", &noAdj, 2, ""},
		{"parts", d, 0, ""},
		{"split", d, 2, "nonexistent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := MetisPartition(tc.d, tc.parts, tc.split, 1)
			assert.Error(t, err)
			assert.Nil(t, b)
		})
	}

	// Errors of package metis are passed on, wrapped: a seed that does
	// not fit METIS's 32-bit idx_t.
	b, err := MetisPartition(d, 2, "random", 1<<40)
	assert.ErrorIs(t, err, metis.ErrOverflow)
	assert.Nil(t, b)
}

func TestBookFile(t *testing.T) {
	b := RandomPartition(1000, 5, 9)
	for _, name := range []string{"book.txt", "book.txt.gz"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			// Overwrite an existing file.
			require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
			require.NoError(t, WriteBook(path, b))
			got, err := ReadBook(path)
			require.NoError(t, err)
			assert.Equal(t, b, got)
			partCheckBook(t, got, 1000)

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

func TestWriteBookErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		path string
		b    *PartitionBook
	}{
		{"no-dir", filepath.Join(dir, "missing", "b.txt"), BlockPartition(4, 2)},
		{"bad-part", filepath.Join(dir, "b.txt"), &PartitionBook{Parts: 2, Method: "x", Part: []int32{0, 2}}},
		{"bad-method", filepath.Join(dir, "b.txt"), &PartitionBook{Parts: 1, Method: "a b", Part: []int32{0}}},
		{"bad-parts", filepath.Join(dir, "b.txt"), &PartitionBook{Parts: 0, Method: "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Error(t, WriteBook(tc.path, tc.b))
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

func TestReadBookErrors(t *testing.T) {
	const header = "gnnmpi-partition 1 nodes=3 parts=2 method=m\n"
	for _, tc := range []struct {
		name    string
		content string
		line    int
		msg     string
	}{
		{"empty", "", 1, "empty file"},
		{"magic", "gnnmpi-parts 1 nodes=3 parts=2 method=m\n0\n1\n0\n", 1, "bad header"},
		{"fields", "gnnmpi-partition 1 nodes=3 parts=2\n0\n1\n0\n", 1, "bad header"},
		{"version", "gnnmpi-partition 2 nodes=3 parts=2 method=m\n0\n1\n0\n", 1, "unsupported partition book version"},
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
			b, err := ReadBook(path)
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
		b, err := ReadBook(path)
		require.NoError(t, err)
		assert.Equal(t, []int32{0, 1, 0}, b.Part)
	})
	t.Run("missing", func(t *testing.T) {
		_, err := ReadBook(filepath.Join(t.TempDir(), "none.txt"))
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
	t.Run("truncated-gzip", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "book.txt.gz")
		require.NoError(t, WriteBook(path, RandomPartition(5000, 3, 1)))
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, data[:len(data)/2], 0o644))
		_, err = ReadBook(path)
		var pe *ParseError
		require.ErrorAs(t, err, &pe)
		assert.ErrorIs(t, err, ErrTruncated)
	})
}

func ExamplePartitionBook() {
	// 10 vertices in 3 contiguous blocks of sizes 4, 3, 3.
	b := BlockPartition(10, 3)
	fmt.Println("sizes:", b.Sizes())
	fmt.Println("vertex 5: rank", b.Owner(5), "local id", b.LocalID(5))
	fmt.Println("rank 2 owns:", b.Owned(2))
	// Output:
	// sizes: [4 3 3]
	// vertex 5: rank 1 local id 1
	// rank 2 owns: [7 8 9]
}

func TestSubPartition(t *testing.T) {
	d, err := SBM(DefaultSBM(2000))
	require.NoError(t, err)
	book := BlockPartition(d.NumNodes, 3)
	for _, method := range []string{"metis", "random"} {
		chunk, err := SubPartition(d.Adj, book, 4, method, 7)
		require.NoError(t, err, method)
		// Every part is split into 4 non-empty chunks.
		sizes := map[[2]int32]int{}
		for gid, c := range chunk {
			require.True(t, c >= 0 && c < 4)
			sizes[[2]int32{book.Part[gid], c}]++
		}
		require.Len(t, sizes, 12, method)
		again, err := SubPartition(d.Adj, book, 4, method, 7)
		require.NoError(t, err)
		assert.Equal(t, chunk, again, "deterministic for a seed")
	}
	// METIS keeps more edges inside chunks than random chunks do.
	cut := func(chunk []int32) int {
		n := 0
		for i := range d.Adj.NRows {
			for _, j := range d.Adj.Row(i) {
				if book.Part[i] == book.Part[j] && chunk[i] != chunk[j] {
					n++
				}
			}
		}
		return n
	}
	m, _ := SubPartition(d.Adj, book, 4, "metis", 7)
	r, _ := SubPartition(d.Adj, book, 4, "random", 7)
	assert.Less(t, cut(m), cut(r)/2)

	_, err = SubPartition(d.Adj, book, 1000, "metis", 1)
	assert.ErrorContains(t, err, "fewer than 1000 chunks")
	_, err = SubPartition(d.Adj, book, 2, "block", 1)
	assert.ErrorContains(t, err, "want metis or random")
}
