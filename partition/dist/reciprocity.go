package dist

import (
	"slices"

	"gnnmpi/collective"
	"gnnmpi/sparse"
)

// Rows are the rows of a graph one rank holds: row x of Adj (global column
// ids) is vertex IDs[x], ascending, or Lo+x when IDs is nil (a contiguous
// block).
type Rows struct {
	Adj *sparse.CSR
	Lo  int64
	IDs []int64
}

// vertex returns the global id of row x.
func (r Rows) vertex(x int64) int64 {
	if r.IDs == nil {
		return r.Lo + x
	}
	return r.IDs[x]
}

// Index returns the row of global vertex g, which r must hold.
// It will panic if r does not hold g.
func (r Rows) Index(g int64) int64 {
	if r.IDs == nil {
		if g < r.Lo || g >= r.Lo+r.Adj.NRows {
			panic("dist: a reverse edge sent to a rank that does not hold its row")
		}
		return g - r.Lo
	}
	x, ok := slices.BinarySearch(r.IDs, g)
	if !ok {
		panic("dist: a reverse edge sent to a rank that does not hold its row")
	}
	return int64(x)
}

// ReverseEdges sends the reverse (j, g) of every held edge (g, j) to the
// rank that holds row j (owner(j), a rank of c) and returns what each rank
// sent here, as flat (row, column) pairs whose rows this rank holds. It is
// collective over c.
func ReverseEdges(c collective.Comm, r Rows, owner func(int64) int) ([][]int64, error) {
	parts := make([][]int64, c.Size())
	for x := range r.Adj.NRows {
		g := r.vertex(x)
		for _, j := range r.Adj.Row(x) {
			o := owner(j)
			parts[o] = append(parts[o], j, g)
		}
	}
	return collective.AlltoallvSlices(c, parts)
}

// Reciprocity returns, summed over the ranks of c, the stored edges (i, j)
// whose reverse (j, i) is stored too (self-loops are their own reverse) and
// the stored edges, as graph.Reciprocity counts them for the whole graph:
// every rank holds the rows r (each row held by exactly one rank, owner(g)
// naming it), sends the reverse of its edges to the owners of their rows
// (ReverseEdges) and looks up what it receives. It is collective over c and
// returns the same on every rank.
func Reciprocity(c collective.Comm, r Rows, owner func(int64) int) (found, edges int64, err error) {
	recv, err := ReverseEdges(c, r, owner)
	if err != nil {
		return 0, 0, err
	}
	adj := r.Adj
	if !adj.RowsSorted() {
		adj = sparse.SortedRows(adj)
	}
	edges = adj.NNZ()
	for _, pairs := range recv {
		for k := 0; k < len(pairs); k += 2 {
			if _, ok := slices.BinarySearch(adj.Row(r.Index(pairs[k])), pairs[k+1]); ok {
				found++
			}
		}
	}
	err = collective.AllreduceVars(c, collective.Sum, &found, &edges)
	return found, edges, err
}
