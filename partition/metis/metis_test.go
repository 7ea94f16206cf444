package metis

import (
	"math"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// csr builds a symmetric CSR from undirected edges of an n-vertex graph.
func csr(n int, edges [][2]int64) (xadj, adjncy []int64) {
	xadj = make([]int64, n+1)
	for _, e := range edges {
		xadj[e[0]+1]++
		xadj[e[1]+1]++
	}
	for i := 0; i < n; i++ {
		xadj[i+1] += xadj[i]
	}
	adjncy = make([]int64, xadj[n])
	next := slices.Clone(xadj[:n])
	for _, e := range edges {
		adjncy[next[e[0]]] = e[1]
		next[e[0]]++
		adjncy[next[e[1]]] = e[0]
		next[e[1]]++
	}
	return xadj, adjncy
}

// twoCliques returns two k-cliques {0..k-1} and {k..2k-1} joined by the
// single edge (k-1, k).
func twoCliques(k int) (xadj, adjncy []int64) {
	var edges [][2]int64
	for off := 0; off < 2*k; off += k {
		for i := 0; i < k; i++ {
			for j := i + 1; j < k; j++ {
				edges = append(edges, [2]int64{int64(off + i), int64(off + j)})
			}
		}
	}
	edges = append(edges, [2]int64{int64(k - 1), int64(k)})
	return csr(2*k, edges)
}

// grid returns the r×c 4-neighbour grid graph, vertex i*c+j at (i, j).
func grid(r, c int) (xadj, adjncy []int64) {
	var edges [][2]int64
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			v := int64(i*c + j)
			if j+1 < c {
				edges = append(edges, [2]int64{v, v + 1})
			}
			if i+1 < r {
				edges = append(edges, [2]int64{v, v + int64(c)})
			}
		}
	}
	return csr(r*c, edges)
}

// cut counts the undirected edges of a symmetric graph between parts.
func cut(xadj, adjncy []int64, part []int32) int64 {
	var c int64
	for i := 0; i+1 < len(xadj); i++ {
		for _, j := range adjncy[xadj[i]:xadj[i+1]] {
			if part[i] != part[j] {
				c++
			}
		}
	}
	return c / 2
}

// balance returns, for each constraint, the heaviest part's weight over the
// average part weight.
func balance(vwgt []int64, ncon, nparts int, part []int32) []float64 {
	w := make([][]float64, ncon)
	tot := make([]float64, ncon)
	for c := range w {
		w[c] = make([]float64, nparts)
	}
	for i, p := range part {
		for c := 0; c < ncon; c++ {
			x := float64(vwgt[i*ncon+c])
			w[c][p] += x
			tot[c] += x
		}
	}
	b := make([]float64, ncon)
	for c := range b {
		b[c] = slices.Max(w[c]) / (tot[c] / float64(nparts))
	}
	return b
}

func TestPartGraphTwoCliques(t *testing.T) {
	const k = 6
	xadj, adjncy := twoCliques(k)
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"kway", Options{Seed: 1}},
		{"kway-contig", Options{Seed: 1, Contiguous: true}},
		{"recursive", Options{Seed: 1, Recursive: true}},
		{"default-seed", Options{Seed: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			part, edgecut, err := PartGraph(xadj, adjncy, nil, 1, 2, tc.opt)
			require.NoError(t, err)
			require.Len(t, part, 2*k)
			assert.Equal(t, int64(1), edgecut, "edgecut")
			assert.Equal(t, int64(1), cut(xadj, adjncy, part), "recomputed cut")
			for i := 1; i < k; i++ {
				assert.Equal(t, part[0], part[i], "vertex %d", i)
				assert.Equal(t, part[k], part[k+i], "vertex %d", k+i)
			}
			assert.NotEqual(t, part[0], part[k])
		})
	}
}

func TestPartGraphMultiConstraint(t *testing.T) {
	// A 24×24 grid whose second constraint (think "train vertex") is
	// carried only by the left third of the columns: a cut into four
	// quadrant-like blocks would balance vertices but not constraint 1.
	const r, c, nparts, ncon = 24, 24, 4, 2
	xadj, adjncy := grid(r, c)
	vwgt := make([]int64, r*c*ncon)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			v := i*c + j
			vwgt[v*ncon] = 1
			if j < c/3 {
				vwgt[v*ncon+1] = 1
			}
		}
	}
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"kway", Options{Seed: 7}},
		{"recursive", Options{Seed: 7, Recursive: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			part, edgecut, err := PartGraph(xadj, adjncy, vwgt, ncon, nparts, tc.opt)
			require.NoError(t, err)
			assert.Equal(t, cut(xadj, adjncy, part), edgecut)
			for _, p := range part {
				require.True(t, p >= 0 && p < nparts, "part %d", p)
			}
			// METIS's default tolerance is 1.03 for k-way; allow slack
			// for the coarse granularity of 192 unit weights over 4
			// parts.
			for con, b := range balance(vwgt, ncon, nparts, part) {
				assert.LessOrEqual(t, b, 1.1, "constraint %d", con)
			}
		})
	}
}

func TestPartGraphUFactor(t *testing.T) {
	xadj, adjncy := grid(30, 30)
	vwgt := make([]int64, 900)
	for i := range vwgt {
		vwgt[i] = 1
	}
	for _, tc := range []struct {
		name    string
		ufactor int
		limit   float64
	}{
		{"tight", 1, 1.01},
		{"default", 0, 1.04},
		{"loose", 300, 1.31},
	} {
		t.Run(tc.name, func(t *testing.T) {
			part, _, err := PartGraph(xadj, adjncy, vwgt, 1, 3, Options{UFactor: tc.ufactor})
			require.NoError(t, err)
			assert.LessOrEqual(t, balance(vwgt, 1, 3, part)[0], tc.limit)
		})
	}
}

func TestPartGraphDeterministic(t *testing.T) {
	xadj, adjncy := grid(20, 20)
	a, ca, err := PartGraph(xadj, adjncy, nil, 1, 5, Options{Seed: 3})
	require.NoError(t, err)
	b, cb, err := PartGraph(xadj, adjncy, nil, 1, 5, Options{Seed: 3})
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.Equal(t, ca, cb)
}

func TestPartGraphSelfLoopsIgnored(t *testing.T) {
	xadj, adjncy := twoCliques(4)
	// Add a self-loop to every vertex.
	n := len(xadj) - 1
	lx := make([]int64, n+1)
	var la []int64
	for i := 0; i < n; i++ {
		la = append(la, int64(i))
		la = append(la, adjncy[xadj[i]:xadj[i+1]]...)
		lx[i+1] = int64(len(la))
	}
	want, wcut, err := PartGraph(xadj, adjncy, nil, 1, 2, Options{})
	require.NoError(t, err)
	got, gcut, err := PartGraph(lx, la, nil, 1, 2, Options{})
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, wcut, gcut)
}

func TestPartGraphInputsUnmodified(t *testing.T) {
	xadj, adjncy := grid(10, 10)
	vwgt := make([]int64, 100)
	for i := range vwgt {
		vwgt[i] = int64(i%3 + 1)
	}
	x0, a0, w0 := slices.Clone(xadj), slices.Clone(adjncy), slices.Clone(vwgt)
	_, _, err := PartGraph(xadj, adjncy, vwgt, 1, 4, Options{})
	require.NoError(t, err)
	assert.Equal(t, x0, xadj)
	assert.Equal(t, a0, adjncy)
	assert.Equal(t, w0, vwgt)
}

func TestPartGraphTrivial(t *testing.T) {
	xadj, adjncy := twoCliques(3)
	for _, tc := range []struct {
		name         string
		xadj, adjncy []int64
		nparts       int
		want         []int32
	}{
		{"one-part", xadj, adjncy, 1, make([]int32, 6)},
		{"no-vertices", []int64{0}, nil, 4, []int32{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			part, edgecut, err := PartGraph(tc.xadj, tc.adjncy, nil, 1, tc.nparts, Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.want, part)
			assert.Zero(t, edgecut)
		})
	}
	t.Run("no-edges", func(t *testing.T) {
		part, edgecut, err := PartGraph([]int64{0, 0, 0, 0, 0}, nil, nil, 1, 2, Options{})
		require.NoError(t, err)
		assert.Len(t, part, 4)
		assert.Zero(t, edgecut)
	})
}

func TestPartGraphErrors(t *testing.T) {
	xadj, adjncy := twoCliques(3)
	// Two disconnected triangles: METIS refuses CONTIG on a disconnected
	// graph with METIS_ERROR.
	dx, da := csr(6, [][2]int64{{0, 1}, {1, 2}, {0, 2}, {3, 4}, {4, 5}, {3, 5}})
	ones := func(n int) []int64 {
		w := make([]int64, n)
		for i := range w {
			w[i] = 1
		}
		return w
	}
	for _, tc := range []struct {
		name         string
		xadj, adjncy []int64
		vwgt         []int64
		ncon, nparts int
		opt          Options
		want         error
	}{
		{"empty-xadj", nil, nil, nil, 1, 2, Options{}, ErrInput},
		{"xadj0", []int64{1, 1}, []int64{0}, nil, 1, 2, Options{}, ErrInput},
		{"xadj-decreasing", []int64{0, 2, 1, 2}, []int64{1, 2}, nil, 1, 2, Options{}, ErrInput},
		{"xadj-end", []int64{0, 1, 1}, []int64{1, 0}, nil, 1, 2, Options{}, ErrInput},
		{"adjncy-high", []int64{0, 1, 2}, []int64{1, 2}, nil, 1, 2, Options{}, ErrInput},
		{"adjncy-negative", []int64{0, 1, 2}, []int64{-1, 0}, nil, 1, 2, Options{}, ErrInput},
		{"ncon-zero", xadj, adjncy, nil, 0, 2, Options{}, ErrInput},
		{"ncon-without-vwgt", xadj, adjncy, nil, 2, 2, Options{}, ErrInput},
		{"vwgt-length", xadj, adjncy, ones(6), 2, 2, Options{}, ErrInput},
		{"vwgt-negative", xadj, adjncy, []int64{1, 1, -1, 1, 1, 1}, 1, 2, Options{}, ErrInput},
		{"vwgt-overflow", xadj, adjncy, []int64{1, 1, 1 << 31, 1, 1, 1}, 1, 2, Options{}, ErrOverflow},
		{"vwgt-total-overflow", xadj, adjncy, []int64{1 << 30, 1 << 30, 1, 1, 1, 1}, 1, 2, Options{}, ErrOverflow},
		{"nparts-zero", xadj, adjncy, nil, 1, 0, Options{}, ErrInput},
		{"nparts-overflow", xadj, adjncy, nil, 1, math.MaxInt32 + 1, Options{}, ErrOverflow},
		{"seed-overflow", xadj, adjncy, nil, 1, 2, Options{Seed: math.MaxInt32 + 1}, ErrOverflow},
		{"ufactor-negative", xadj, adjncy, nil, 1, 2, Options{UFactor: -1}, ErrInput},
		{"contiguous-recursive", xadj, adjncy, nil, 1, 2, Options{Contiguous: true, Recursive: true}, ErrInput},
		{"contiguous-disconnected", dx, da, nil, 1, 2, Options{Contiguous: true}, ErrMETIS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			part, edgecut, err := PartGraph(tc.xadj, tc.adjncy, tc.vwgt, tc.ncon, tc.nparts, tc.opt)
			require.ErrorIs(t, err, tc.want)
			assert.Nil(t, part)
			assert.Zero(t, edgecut)
		})
	}
}

func TestCodeError(t *testing.T) {
	for _, tc := range []struct {
		code int
		want error
	}{
		{statusOK, nil},
		{statusErrorInput, ErrInput},
		{statusErrorMemory, ErrMemory},
		{statusError, ErrMETIS},
		{0, ErrMETIS},
	} {
		err := codeError(tc.code)
		if tc.want == nil {
			assert.NoError(t, err, "code %d", tc.code)
			continue
		}
		assert.ErrorIs(t, err, tc.want, "code %d", tc.code)
	}
}

// TestSignalsRestored checks that a METIS failure, which goes through
// METIS's own SIGTERM handler, leaves Go's signal handling working.
func TestSignalsRestored(t *testing.T) {
	dx, da := csr(4, [][2]int64{{0, 1}, {2, 3}})
	_, _, err := PartGraph(dx, da, nil, 1, 2, Options{Contiguous: true})
	require.ErrorIs(t, err, ErrMETIS)

	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	defer signal.Stop(ch)
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	select {
	case s := <-ch:
		assert.Equal(t, syscall.SIGTERM, s)
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM not delivered to os/signal after a METIS call")
	}
}

func TestPartGraphConcurrent(t *testing.T) {
	xadj, adjncy := grid(16, 16)
	want, _, err := PartGraph(xadj, adjncy, nil, 1, 4, Options{Seed: 5})
	require.NoError(t, err)
	errs := make(chan error, 4)
	parts := make(chan []int32, 4)
	for range 4 {
		go func() {
			p, _, err := PartGraph(xadj, adjncy, nil, 1, 4, Options{Seed: 5})
			errs <- err
			parts <- p
		}()
	}
	for range 4 {
		require.NoError(t, <-errs)
		assert.Equal(t, want, <-parts)
	}
}
