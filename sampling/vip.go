package sampling

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gnnmpi/sparse"
)

// VIP returns, for every vertex v, the probability that a minibatch of the
// node-wise sampler (NodeWise, with these fanouts) drawn from the training
// vertices train in batches of batch seeds reads v's features: its vertex
// inclusion probability, after SALIENT++ (Kaler et al., "Communication-
// Efficient Graph Neural Networks with Probabilistic Neighborhood Expansion
// Analysis and Caching", MLSys 2023).
//
// SALIENT++'s analysis propagates probabilities hop by hop: p⁰_v =
// batch/|train| on train (else 0), a vertex u of the hop-h frontier keeps
// each of its deg u neighbours with probability k_h(u) = min(1, f_h/deg u)
// (all for f_h < 0), and
//
//	p^{h+1}_v = 1 − ∏_{u : v ∈ N(u)} (1 − k_h(u) · p^h_u),
//	VIP_v     = 1 − ∏_h (1 − p^h_v),
//
// treating all these events as independent. Two of those independences do
// not hold for NodeWise, whose hop-(h+1) frontier is every source of hop h
// (the frontier of hop h included): a vertex of the frontier draws again at
// every later hop, and a vertex v reached from u makes u's probability feed
// back into v's own (v → u → v). On the test graphs the recurrence is off by
// up to 0.22 for single vertices (mean 0.007–0.053). VIP therefore computes the
// same quantity by belief propagation over the directed edges, which is
// exact on trees: the message of edge u→v is the probability that u, in
// the graph without v (the cavity), has not drawn v in hops 0..h, over the
// hop at which u entered the frontier:
//
//	P(v ∉ F_{h+1}) = (1 − p⁰_v) · ∏_{u : v ∈ N(u)} M^h_{u→v},
//	M^h_{u→v}     = (1 − π^h) + E^h,   E^h = (E^{h−1} + π^h − π^{h−1}) · (1 − k_h(u)),
//	π^h           = 1 − (1 − p⁰_u) · ∏_{w : u ∈ N(w), w ≠ v} M^{h−1}_{w→u},
//
// with π^h the cavity probability that u is in the hop-h frontier and E^h
// that it is and has not drawn v; VIP_v = P(v ∈ F_L). All products are sums
// of logarithms (log1p/expm1 keep tiny probabilities' digits). The seeds of a
// minibatch are still taken as independent, and cycles make it approximate;
// the Monte-Carlo test measures both. deg u counts u's distinct neighbours,
// as the sampler does; self-loops are ignored (a vertex drawing itself
// changes nothing).
//
// The rows of the vertices within len(fanouts)−1 hops of train come from
// top, one request per hop, so VIP is collective over a distributed
// topology; each rank computes the vector of its own training vertices over
// the whole graph, with memory only for the reachable part: its rows, four
// float64 and two int64 per edge, and an index of the vertices met (no
// array over all n vertices). The result is sparse, of length top.N(): the
// vertices met with a nonzero probability, ascending (every other vertex
// has VIP 0). It returns an error if batch < 1, a fanout is 0, a training
// vertex is out of range or repeated, or communication fails.
func VIP(top Topology, train []int64, batch int, fanouts []int) (*sparse.Vec, error) {
	n := top.N()
	l0, err := checkVIP(n, train, batch, fanouts) // log(1 − p⁰) on train
	if err != nil {
		return nil, err
	}
	sub, err := reachable(top, train, len(fanouts))
	if err != nil {
		return nil, err
	}
	nv := len(sub.ids)
	lp0 := make([]float64, nv) // log(1 − p⁰_v), by compact index
	for _, v := range train {
		lp0[sub.index(v)] = l0
	}
	m := len(sub.cols)
	logM := make([]float64, m) // log M^{h−1} per edge
	next := make([]float64, m)
	pi := make([]float64, m)  // π^{h−1}
	e := make([]float64, m)   // E^{h−1}
	in := make([]float64, nv) // Σ of the incoming edges' log M
	for _, f := range fanouts {
		sub.sumInto(in, logM)
		for r, u := range sub.verts {
			lo, hi := sub.ptr[r], sub.ptr[r+1]
			keep := 1.0
			if deg := hi - lo; f >= 0 && deg > int64(f) {
				keep = float64(f) / float64(deg)
			}
			base := lp0[u] + in[u]
			for k := lo; k < hi; k++ {
				if sub.cols[k] == u {
					continue // self-loop
				}
				c := base
				if rv := sub.rev[k]; rv >= 0 {
					c -= logM[rv]
				}
				p := min(1, max(0, -math.Expm1(c)))
				e[k] = (e[k] + p - pi[k]) * (1 - keep)
				pi[k] = p
				next[k] = floorLog(math.Log((1 - p) + e[k]))
			}
		}
		logM, next = next, logM
	}
	sub.sumInto(in, logM)
	vip := &sparse.Vec{N: n}
	for v, gid := range sub.ids {
		if x := -math.Expm1(lp0[v] + in[v]); x != 0 {
			vip.Indices = append(vip.Indices, gid)
			vip.Values = append(vip.Values, x)
		}
	}
	return vip, nil
}

// checkVIP checks VIP's arguments and returns log(1 − p⁰) of a training
// vertex, log(1 − batch/|train|).
func checkVIP(n int64, train []int64, batch int, fanouts []int) (float64, error) {
	if batch < 1 {
		return 0, fmt.Errorf("sampling: VIP with batch size %d", batch)
	}
	for _, f := range fanouts {
		if f == 0 {
			return 0, fmt.Errorf("sampling: VIP with fanout 0")
		}
	}
	if len(train) == 0 {
		return 0, nil
	}
	seen := make(map[int64]struct{}, len(train))
	for _, v := range train {
		if v < 0 || v >= n {
			return 0, fmt.Errorf("sampling: VIP: training vertex %d outside [0, %d)", v, n)
		}
		if _, ok := seen[v]; ok {
			return 0, fmt.Errorf("sampling: VIP: training vertex %d repeated", v)
		}
		seen[v] = struct{}{}
	}
	p0 := math.Min(1, float64(batch)/float64(len(train)))
	return floorLog(math.Log1p(-p0)), nil
}

// floorLog bounds a log-probability below, so that sums and differences of
// them stay finite (−745 is already a probability of 0 in float64).
func floorLog(x float64) float64 { return max(x, -1000) }

// subgraph holds the rows of the vertices within reach of the training
// vertices, gathered from a topology, over a compact numbering of the
// vertices met (the training vertices and every column of the rows): the
// compact index of a vertex is its rank among them by global id, so rows
// stay sorted.
type subgraph struct {
	ids   []int64 // global id of each compact index, ascending
	verts []int64 // compact index of the vertex of each row, rows in order of discovery
	ptr   []int64 // row r is cols[ptr[r]:ptr[r+1]], the row of verts[r]
	cols  []int64 // compact indices; sorted, distinct
	rev   []int64 // for edge u→v: the position of edge v→u, or −1 if v has no row here or no such edge
}

// index returns the compact index of a vertex met.
func (s *subgraph) index(gid int64) int64 {
	k, _ := slices.BinarySearch(s.ids, gid)
	return int64(k)
}

// reachable gathers the rows of the vertices within hops−1 hops of train:
// one collective row request per hop.
func reachable(top Topology, train []int64, hops int) (*subgraph, error) {
	seen := map[int64]int64{} // the vertices met; their compact index once known
	sub := &subgraph{ptr: []int64{0}}
	var frontier []int64
	for _, v := range train {
		if _, ok := seen[v]; !ok {
			seen[v] = 0
			frontier = append(frontier, v)
		}
	}
	for range hops {
		rows, err := top.rows(frontier, make([]uint64, len(frontier)), nil)
		if err != nil {
			return nil, err
		}
		var fresh []int64
		for i, u := range frontier {
			sub.verts = append(sub.verts, u)
			nb := rows.Row(int64(i))
			sub.cols = append(sub.cols, nb...)
			sub.ptr = append(sub.ptr, int64(len(sub.cols)))
			for _, v := range nb {
				if _, ok := seen[v]; !ok {
					seen[v] = 0
					fresh = append(fresh, v)
				}
			}
		}
		frontier = fresh
	}

	// Number the vertices met by ascending global id.
	sub.ids = make([]int64, 0, len(seen))
	for v := range seen {
		sub.ids = append(sub.ids, v)
	}
	slices.Sort(sub.ids)
	for k, v := range sub.ids {
		seen[v] = int64(k)
	}
	for r, u := range sub.verts {
		sub.verts[r] = seen[u]
	}
	for k, v := range sub.cols {
		sub.cols[k] = seen[v]
	}
	seen = nil
	row := make([]int32, len(sub.ids)) // row number + 1 by compact index, 0 if none
	for r, u := range sub.verts {
		row[u] = int32(r + 1)
	}

	sub.rev = make([]int64, len(sub.cols))
	for r, u := range sub.verts {
		for k := sub.ptr[r]; k < sub.ptr[r+1]; k++ {
			sub.rev[k] = -1
			if rv := row[sub.cols[k]]; rv > 0 {
				lo, hi := sub.ptr[rv-1], sub.ptr[rv]
				if j, ok := slices.BinarySearch(sub.cols[lo:hi], u); ok {
					sub.rev[k] = lo + int64(j)
				}
			}
		}
	}
	return sub, nil
}

// sumInto sets in[v] to the sum of logM over the edges into v.
func (s *subgraph) sumInto(in, logM []float64) {
	clear(in)
	for k, v := range s.cols {
		in[v] += logM[k]
	}
}

// VIPRecurrence returns SALIENT++'s vertex inclusion probabilities computed
// by its recurrence as written (see VIP): p⁰ on train, then
// p^{h+1}_v = 1 − ∏_{u : v ∈ N(u)} (1 − k_h(u) · p^h_u) and
// VIP_v = 1 − ∏_{h=0..L} (1 − p^h_v), in log space. It overestimates
// NodeWise's inclusion near the training vertices (the tests measure by how
// much); VIP is the exact-on-trees refinement. Its arguments, errors,
// communication (one row request per hop: the vertices of positive p^h) and
// sparse result are those of VIP; its memory is O(vertices met).
func VIPRecurrence(top Topology, train []int64, batch int, fanouts []int) (*sparse.Vec, error) {
	n := top.N()
	l0, err := checkVIP(n, train, batch, fanouts)
	if err != nil {
		return nil, err
	}
	// The vertices met, in order of discovery, with lp = log(1 − p^h_v)
	// and notVIP = log ∏_h (1 − p^h_v) of each.
	at := map[int64]int{}
	var gids []int64
	var lp, notVIP, next []float64
	add := func(v int64) int {
		i, ok := at[v]
		if !ok {
			i = len(gids)
			at[v] = i
			gids = append(gids, v)
			lp, notVIP, next = append(lp, 0), append(notVIP, 0), append(next, 0)
		}
		return i
	}
	for _, v := range train {
		i := add(v)
		lp[i], notVIP[i] = l0, l0
	}
	var support []int64
	for _, f := range fanouts {
		support = support[:0]
		for i, l := range lp {
			if l < 0 {
				support = append(support, gids[i])
			}
		}
		slices.Sort(support) // the sums below run in ascending vertex order
		rows, err := top.rows(support, make([]uint64, len(support)), nil)
		if err != nil {
			return nil, err
		}
		clear(next)
		for i, u := range support {
			nb := rows.Row(int64(i))
			keep := 1.0
			if f >= 0 && len(nb) > f {
				keep = float64(f) / float64(len(nb))
			}
			l := floorLog(math.Log1p(keep * math.Expm1(lp[at[u]])))
			for _, v := range nb {
				j := add(v) // may grow next: index it after
				next[j] += l
			}
		}
		for v, l := range next {
			lp[v] = floorLog(l)
			notVIP[v] = floorLog(notVIP[v] + l)
		}
	}
	type entry struct {
		gid int64
		x   float64
	}
	var out []entry
	for v, l := range notVIP {
		if x := -math.Expm1(l); x != 0 {
			out = append(out, entry{gids[v], x})
		}
	}
	slices.SortFunc(out, func(a, b entry) int { return cmp.Compare(a.gid, b.gid) })
	vip := &sparse.Vec{N: n, Indices: make([]int64, len(out)), Values: make([]float64, len(out))}
	for k, e := range out {
		vip.Indices[k], vip.Values[k] = e.gid, e.x
	}
	return vip, nil
}
