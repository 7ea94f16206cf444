package graph

import (
	"bufio"
	"compress/gzip"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/partition"
	"gnnmpi/partition/metis"
	"gnnmpi/sparse"
)

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
	random := partition.Random(d.NumNodes, parts, 1).EdgeCut(d.Adj)
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
			require.Equal(t, d.NumNodes, b.NumNodes())
			assert.Equal(t, parts, b.Parts)

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
				require.NoError(t, partition.Write(path, b))
				got, err := partition.Read(path)
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

// TestMetisPartitionFits checks that Fits sees MetisBytes of the graph's
// symmetric entries, counted without building them (a directed graph with
// a self-loop, and a symmetric one, flagged as such or not), with the
// constraints of the split,
// and that its error stops the partition before METIS runs.
func TestMetisPartitionFits(t *testing.T) {
	arcs := [][2]int64{{0, 1}, {1, 0}, {1, 2}, {2, 3}, {3, 0}, {2, 2}}
	adj := &sparse.CSR{NRows: 4, NCols: 4, Indptr: make([]int64, 5)}
	for _, a := range arcs {
		adj.Indptr[a[0]+1]++
		adj.Indices = append(adj.Indices, a[1])
	}
	for i := range 4 {
		adj.Indptr[i+1] += adj.Indptr[i]
	}
	for i := range 4 { // rows sorted
		slices.Sort(adj.Indices[adj.Indptr[i]:adj.Indptr[i+1]])
	}
	directed := &Dataset{Name: "directed", NumNodes: 4, Adj: adj}
	require.NoError(t, directed.Validate())
	sbm, err := SBM(DefaultSBM(300))
	require.NoError(t, err)
	split, _, _ := sbm.DefaultSplit()
	flagged := *sbm // both directions stored: counted as they are
	flagged.Symmetric, flagged.Name = true, "flagged"
	for _, tc := range []struct {
		d     *Dataset
		split string
		ncon  int
	}{{directed, "", 1}, {sbm, split, 4}, {&flagged, "", 1}} {
		var got []int64
		b, err := MetisPartitionOpts(tc.d, 2, MetisOptions{Split: tc.split, Seed: 1, Fits: func(need int64) error {
			got = append(got, need)
			return nil
		}})
		require.NoError(t, err, tc.d.Name)
		assert.Equal(t, int64(2), int64(b.Parts))
		m := Symmetrize(tc.d.Adj).NNZ()
		assert.Equal(t, []int64{MetisBytes(tc.d.NumNodes, m, tc.ncon)}, got, "%s: %d symmetric entries, %d constraints", tc.d.Name, m, tc.ncon)
	}
	assert.Equal(t, int64(4*(1108+12)+8*64), MetisBytes(4, 8, 1), "the directed graph: 8 symmetric entries with the self-loop")
	assert.Equal(t, int64(math.MaxInt64), MetisBytes(math.MaxInt64/2, 3, 1), "saturates")

	tooBig := errors.New("too big")
	_, err = MetisPartitionOpts(sbm, 2, MetisOptions{Fits: func(int64) error { return tooBig }})
	require.ErrorIs(t, err, tooBig)
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

func TestSubPartition(t *testing.T) {
	d, err := SBM(DefaultSBM(2000))
	require.NoError(t, err)
	book := partition.Block(d.NumNodes, 3)
	for _, method := range []partition.Method{partition.MethodMetis, partition.MethodRandom} {
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

// On a power-law graph, balancing the stored edges as well as the
// vertices evens out the parts' adjacency, which vertex balance alone
// leaves to the hubs.
func TestMetisPartitionEdges(t *testing.T) {
	adj, err := RMAT(DefaultRMAT(12, 8))
	require.NoError(t, err)
	d := &Dataset{Name: "rmat12", NumNodes: adj.NRows, Adj: adj}
	maxShare := func(b *partition.Book) float64 {
		edges := make([]int64, b.Parts)
		for v := range adj.NRows {
			edges[b.Owner(v)] += adj.Degree(v)
		}
		return float64(slices.Max(edges)) / float64(adj.NNZ())
	}
	plain, err := MetisPartitionOpts(d, 8, MetisOptions{Seed: 1})
	require.NoError(t, err)
	balanced, err := MetisPartitionOpts(d, 8, MetisOptions{Edges: true, Seed: 1})
	require.NoError(t, err)
	require.Less(t, maxShare(balanced), maxShare(plain), "edge balance lowers the largest part's share of the edges")
	require.Less(t, maxShare(balanced), 1.2/8, "within METIS's tolerance of an even share")
	sizes := balanced.Sizes()
	require.LessOrEqual(t, float64(slices.Max(sizes)), 1.1*float64(adj.NRows)/8, "vertices stay balanced")
}
