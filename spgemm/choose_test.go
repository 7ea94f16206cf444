package spgemm_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/metrics"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
	"gnnmpi/spgemm/spgemmtest"
)

// With every row sampled, Predict15D's bytes per rank are exactly the
// average over the ranks of what Mul15D sends, broadcast and reduction
// apart, for every c dividing p.
func TestPredict15DExact(t *testing.T) {
	ops := []operands{
		{"valued", spgemmtest.Random(51, 45, 38, 4, false, false), spgemmtest.Random(52, 38, 52, 3, false, false)},
		{"pattern", spgemmtest.Random(53, 45, 38, 4, true, false), spgemmtest.Random(54, 38, 52, 3, true, false)},
		{"rmat", rmat(t), rmat(t)},
	}
	for _, p := range []int{2, 4, 6, 8} {
		for _, op := range ops {
			t.Run(fmt.Sprintf("p=%d/%s", p, op.name), func(t *testing.T) {
				pred := spgemm.Predict15D(op.a, op.b, p, 8, 0)
				for _, v := range pred {
					bcast := make([]int64, p)
					reduce := make([]int64, p)
					run(t, p, func(c collective.Comm) error {
						cc := collective.WithStats(c, nil)
						s, err := prepare(cc, variant{algo: "1.5d", c: v.C}, sparse.PlusTimes[float64]{}, op.a, op.b, nil)
						if err != nil {
							return err
						}
						if _, err := s.mul(); err != nil {
							return err
						}
						// Broadcasts are Bcast calls, the reduction Alltoallv.
						ph := collective.SnapshotOf(cc)[metrics.PhaseSpGEMM]
						bcast[c.Rank()] = ph[collective.OpBcast.String()].SentBytes
						reduce[c.Rank()] = ph[collective.OpAlltoallv.String()].SentBytes
						return s.free()
					})
					var bsum, rsum int64
					for r := range p {
						bsum += bcast[r]
						rsum += reduce[r]
					}
					assert.InDelta(t, float64(bsum)/float64(p), v.Bcast, 1e-6, "c=%d broadcast", v.C)
					assert.InDelta(t, float64(rsum)/float64(p), v.Reduce, 1e-6, "c=%d reduction", v.C)
				}
			})
		}
	}
}

// Choose15D picks c = 1 for A·A of a power-law graph, whose partial
// products dwarf A, and c > 1 for a selection Q·B that reaches every row of
// B once, whose output is B's rows once.
func TestChoose15D(t *testing.T) {
	a := rmat(t)
	c, vs := spgemm.Choose15D(a, a, 4, 8)
	assert.Equal(t, 1, c, "A·A: %+v", vs)

	// B: A with values; Q: a random permutation.
	n := a.NRows
	b := &sparse.CSR{NRows: n, NCols: n, Indptr: a.Indptr, Indices: a.Indices, Values: make([]float64, a.NNZ())}
	q := &sparse.CSR{NRows: n, NCols: n, Indptr: make([]int64, n+1), Indices: make([]int64, n)}
	rnd := rand.New(rand.NewPCG(1, 2))
	for r := range n {
		q.Indptr[r+1] = r + 1
		q.Indices[r] = r
	}
	rnd.Shuffle(len(q.Indices), func(x, y int) { q.Indices[x], q.Indices[y] = q.Indices[y], q.Indices[x] })
	require.NoError(t, q.Validate())
	c, vs = spgemm.Choose15D(q, b, 4, 8)
	assert.Greater(t, c, 1, "Q·B: %+v", vs)
}
