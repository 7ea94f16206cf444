package graph

// ReciprocityFraction returns the fraction of the edges of d, a whole
// graph, whose reverse edge is in d (Reciprocity): 1 for a graph recorded
// as symmetric or without edges.
func (d *Dataset) ReciprocityFraction() float64 {
	if d.Symmetric {
		return 1
	}
	r, m := Reciprocity(d.Adj)
	if m == 0 {
		return 1
	}
	return float64(r) / float64(m)
}
