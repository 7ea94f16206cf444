package graph

import "fmt"

// MaxClasses bounds the number of classes of a dataset: every label must
// lie in [0, MaxClasses). A model's output layer has a column per class
// (1 + the largest label), so a stray huge label, such as a vertex id or a
// hash written into the label column, would otherwise ask for a vast
// allocation. Readers refuse larger labels with a *ParseError naming the
// file and line; node-classification benchmarks have at most a few
// thousand classes.
const MaxClasses = 1 << 20

// Unlabelled is the label of a vertex without one: a NaN in OGB's
// node-label.npz (papers100M labels 1.5M of its 111M vertices), "nan" in
// node-label.csv. Such a vertex has no class, is never in a split (a split
// naming one is an error), and is left out of ClassCounts.
const Unlabelled = -1

// unlabelledSet records the unlabelled vertices of a whole graph, one bit
// each; nil when every vertex is labelled.
type unlabelledSet []uint64

// add marks vertex g of a graph of n vertices as unlabelled.
func (s *unlabelledSet) add(n, g int64) {
	if *s == nil {
		*s = make(unlabelledSet, (n+63)/64)
	}
	(*s)[g/64] |= 1 << (g % 64)
}

// has reports whether vertex g is unlabelled.
func (s unlabelledSet) has(g int64) bool { return s != nil && s[g/64]&(1<<(g%64)) != 0 }

// ClassCounts returns how many of labels fall in each class 0 …
// numClasses-1. Labels outside that range (Unlabelled) are not counted.
func ClassCounts(labels []int32, numClasses int) []int64 {
	counts := make([]int64, max(numClasses, 0))
	for _, l := range labels {
		if l >= 0 && int(l) < numClasses {
			counts[l]++
		}
	}
	return counts
}

// EmptyClasses returns the classes whose count is zero, ascending.
func EmptyClasses(counts []int64) []int {
	var empty []int
	for k, c := range counts {
		if c == 0 {
			empty = append(empty, k)
		}
	}
	return empty
}

// checkLabels reports the first label outside [0, numClasses), other
// than Unlabelled, of the labels section of the binary file at path.
func checkLabels(path string, labels []int32, numClasses int) error {
	for v, l := range labels {
		if (l < 0 && l != Unlabelled) || int(l) >= numClasses {
			return parseErr(path, 0, fmt.Sprintf("section labels: vertex %d has label %d outside [0,%d) (num_classes)", v, l, numClasses))
		}
	}
	return nil
}
