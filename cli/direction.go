package cli

import (
	"fmt"
	"strings"

	"gnnmpi/graph"
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

// checkDirection reports on rank 0 how many edges of g, a whole dataset
// loaded from path by one rank or replicated on all, have a reverse edge,
// warns when few have (see warnDirection), and returns that fraction on
// rank 0 (1 for a symmetric or symmetrized graph); other ranks return 0
// without computing it.
func checkDirection(env *Env, path string, g *graph.Dataset, symmetrized bool) float64 {
	if env.Comm.Rank() != 0 {
		return 0
	}
	recip := g.ReciprocityFraction()
	warnDirection(env, path, recip, symmetrized)
	return recip
}
