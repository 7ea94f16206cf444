package sampling

// The implementations of VIP and VIPRecurrence over dense arrays of length
// n, as they were before the scores became sparse: the reference the sparse
// ones must reproduce bit for bit.

import (
	"fmt"
	"math"
	"slices"
)

// vipDense is VIP over arrays of length n, returning the dense vector.
func vipDense(top Topology, train []int64, batch int, fanouts []int) ([]float64, error) {
	n := top.N()
	lp0, err := seedLogsDense(n, train, batch, fanouts) // log(1 − p⁰_v)
	if err != nil {
		return nil, err
	}
	sub, err := reachableDense(top, train, len(fanouts))
	if err != nil {
		return nil, err
	}
	m := len(sub.cols)
	logM := make([]float64, m) // log M^{h−1} per edge
	next := make([]float64, m)
	pi := make([]float64, m) // π^{h−1}
	e := make([]float64, m)  // E^{h−1}
	in := make([]float64, n) // Σ of the incoming edges' log M
	for h, f := range fanouts {
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
		_ = h
	}
	sub.sumInto(in, logM)
	vip := make([]float64, n)
	for v := range vip {
		vip[v] = -math.Expm1(lp0[v] + in[v])
	}
	return vip, nil
}

// seedLogsDense checks VIP's arguments and returns log(1 − p⁰_v) for every
// vertex: log(1 − batch/|train|) on train, 0 elsewhere.
func seedLogsDense(n int64, train []int64, batch int, fanouts []int) ([]float64, error) {
	if batch < 1 {
		return nil, fmt.Errorf("sampling: VIP with batch size %d", batch)
	}
	for _, f := range fanouts {
		if f == 0 {
			return nil, fmt.Errorf("sampling: VIP with fanout 0")
		}
	}
	lp0 := make([]float64, n)
	if len(train) == 0 {
		return lp0, nil
	}
	p0 := math.Min(1, float64(batch)/float64(len(train)))
	for _, v := range train {
		if v < 0 || v >= n {
			return nil, fmt.Errorf("sampling: VIP: training vertex %d outside [0, %d)", v, n)
		}
		if lp0[v] != 0 {
			return nil, fmt.Errorf("sampling: VIP: training vertex %d repeated", v)
		}
		lp0[v] = floorLog(math.Log1p(-p0))
	}
	return lp0, nil
}

// subgraphDense holds the rows of the vertices within reach of the training
// vertices, gathered from a topology.
type subgraphDense struct {
	verts []int64 // vertices with a row, in order of discovery
	ptr   []int64 // row r is cols[ptr[r]:ptr[r+1]], the row of verts[r]
	cols  []int64 // sorted, distinct
	rev   []int64 // for edge u→v: the position of edge v→u, or −1 if v has no row here or no such edge
}

// reachableDense gathers the rows of the vertices within hops−1 hops of train:
// one collective row request per hop.
func reachableDense(top Topology, train []int64, hops int) (*subgraphDense, error) {
	n := top.N()
	row := make([]int32, n) // row number + 1, 0 if none yet
	seen := make([]bool, n)
	sub := &subgraphDense{ptr: []int64{0}}
	var frontier []int64
	for _, v := range train {
		if !seen[v] {
			seen[v] = true
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
			row[u] = int32(len(sub.verts) + 1)
			sub.verts = append(sub.verts, u)
			nb := rows.Row(int64(i))
			sub.cols = append(sub.cols, nb...)
			sub.ptr = append(sub.ptr, int64(len(sub.cols)))
			for _, v := range nb {
				if !seen[v] {
					seen[v] = true
					fresh = append(fresh, v)
				}
			}
		}
		frontier = fresh
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
func (s *subgraphDense) sumInto(in, logM []float64) {
	clear(in)
	for k, v := range s.cols {
		in[v] += logM[k]
	}
}

// vipRecurrenceDense is VIPRecurrence over arrays of length n, returning
// the dense vector.
func vipRecurrenceDense(top Topology, train []int64, batch int, fanouts []int) ([]float64, error) {
	n := top.N()
	// lp[v] = log(1 − p^h_v); notVIP[v] = log ∏_h (1 − p^h_v).
	lp, err := seedLogsDense(n, train, batch, fanouts)
	if err != nil {
		return nil, err
	}
	notVIP := slices.Clone(lp)
	next := make([]float64, n)
	var support []int64
	for _, f := range fanouts {
		support = support[:0]
		for v, l := range lp {
			if l < 0 {
				support = append(support, int64(v))
			}
		}
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
			l := floorLog(math.Log1p(keep * math.Expm1(lp[u])))
			for _, v := range nb {
				next[v] += l
			}
		}
		for v, l := range next {
			lp[v] = floorLog(l)
			notVIP[v] = floorLog(notVIP[v] + l)
		}
	}
	for v, l := range notVIP {
		notVIP[v] = -math.Expm1(l)
	}
	return notVIP, nil
}
