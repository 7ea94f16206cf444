package cli

import (
	"fmt"
	"strings"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/partition/dist"
	"gnnmpi/sparse"
)

// lowReciprocity is the fraction of edges with a reverse edge below which
// loading warns that the graph looks directed: an undirected graph whose
// edge list stores each edge once has about 0, one stored both ways 1.
const lowReciprocity = 0.5

// symmetrizeUsage is the help text of every command's --symmetrize.
const symmetrizeUsage = "add the reverse of every edge on load (deduplicated): for undirected graphs whose edge list stores each edge once (a .gnn written by `convert --symmetrize` is already symmetric)"

// warnDirection reports on rank 0 the fraction of the edges of the dataset
// at path that have a reverse edge, and warns when it is low and the graph
// was not symmetrized.
func warnDirection(env *Env, path string, reciprocity float64, symmetrized bool) {
	if symmetrized {
		env.Progress("%s: symmetrized (the reverse of every edge added)", path)
		return
	}
	env.Progress("%s: %.1f%% of edges have a reverse edge", path, 100*reciprocity)
	if reciprocity < lowReciprocity {
		env.Warn("%s: only %.0f%% of edges have a reverse edge; if the graph is undirected, pass --symmetrize", path, 100*reciprocity)
	}
}

// warnClasses warns on rank 0 about classes below numClasses that no vertex
// of the dataset at path has.
func warnClasses(env *Env, path string, empty []int, numClasses int) {
	if len(empty) == 0 {
		return
	}
	names := make([]string, 0, 10)
	for _, k := range empty[:min(len(empty), 10)] {
		names = append(names, fmt.Sprint(k))
	}
	list := strings.Join(names, ", ")
	if len(empty) > 10 {
		list += ", …"
	}
	env.Warn("%s: %d of the %d classes have no vertex (class %s); the class count is 1 + the largest label, so check the labels", path, len(empty), numClasses, list)
}

// Warn prints a warning on rank 0's standard error and adds it to the
// final metrics object (key "warnings").
func (e *Env) Warn(format string, args ...any) {
	if e.Comm.Rank() != 0 {
		return
	}
	msg := fmt.Sprintf(format, args...)
	e.warnings = append(e.warnings, msg)
	fmt.Fprintf(e.Err, "gnnmpi %s: warning: %s\n", e.Command, msg)
}

// distReciprocity returns the fraction of edges of the dataset that the
// ranks of c hold by rows (d on this rank; owner gives the rank holding
// each row) whose reverse edge is in the graph (1 without edges):
// dist.Reciprocity over the held rows.
//
// distReciprocity is collective over c.
func distReciprocity(c collective.Comm, d *graph.Dataset, owner func(int64) int) (float64, error) {
	found, edges, err := dist.Reciprocity(c, heldRows(d), owner)
	if err != nil || edges == 0 {
		return 1, err
	}
	return float64(found) / float64(edges), nil
}

// heldRows returns the rows d holds, as package dist takes them.
func heldRows(d *graph.Dataset) dist.Rows { return dist.Rows{Adj: d.Adj, IDs: d.Rows} }

// distSymmetrized returns d with the reverse of every edge of the graph
// that the ranks of c hold by rows added to the held rows, deduplicated
// and sorted (as graph.Symmetrize, but without edge values).
//
// distSymmetrized is collective over c.
func distSymmetrized(c collective.Comm, d *graph.Dataset, owner func(int64) int) (*graph.Dataset, error) {
	held := heldRows(d)
	recv, err := dist.ReverseEdges(c, held, owner)
	if err != nil {
		return nil, err
	}
	nnz := d.Adj.NNZ()
	for _, pairs := range recv {
		nnz += int64(len(pairs) / 2)
	}
	rows, cols := make([]int64, 0, nnz), make([]int64, 0, nnz)
	for i := int64(0); i < d.Adj.NRows; i++ {
		for _, j := range d.Adj.Row(i) {
			rows, cols = append(rows, i), append(cols, j)
		}
	}
	for _, pairs := range recv {
		for k := 0; k < len(pairs); k += 2 {
			rows, cols = append(rows, held.Index(pairs[k])), append(cols, pairs[k+1])
		}
	}
	a, err := sparse.FromCOO(d.Adj.NRows, d.Adj.NCols, rows, cols, nil)
	if err != nil {
		return nil, err
	}
	s := *d
	s.Adj, s.Symmetric = graph.Dedupe(a), true
	return &s, nil
}

// checkDirection reports on rank 0 how many edges of g, a whole dataset
// loaded from path by one rank or replicated on all, have a reverse edge,
// warns when few have (see warnDirection), and returns that fraction on
// rank 0 (1 for a symmetric or symmetrized graph); other ranks return 0
// without computing it.
func checkDirection(env *Env, path string, g *graph.Dataset, symmetrized bool) float64 {
	if env.Comm.Rank() != 0 {
		return 0
	}
	recip := 1.0
	if !g.Symmetric {
		if r, m := graph.Reciprocity(g.Adj); m > 0 {
			recip = float64(r) / float64(m)
		}
	}
	warnDirection(env, path, recip, symmetrized)
	return recip
}
