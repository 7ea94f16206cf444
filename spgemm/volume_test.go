package spgemm_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/metrics"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
	"gnnmpi/spgemm/spgemmtest"
)

// The expected traffic of each variant is derived here message by message
// from the operands, with the accounting conventions of collective's volume
// functions (a broadcast root sends its buffer to each of the others, which
// receive it once; an alltoallv counts what goes to and comes from other
// ranks). A sparse block of r rows and e entries travels as r int64 row
// offsets or lengths, e int64 column indices and e values of s bytes
// (s = 0 for a pattern, which sends no values): 8r + (8+s)e bytes.

// traffic is one rank's bytes sent and received.
type traffic struct{ sent, recv int64 }

// valSize is the bytes per value a matrix sends: 8 for float64, 0 for a
// pattern.
func valSize(a *sparse.CSR) int64 {
	if a.Values == nil {
		return 0
	}
	return 8
}

// nnzIn counts the entries of a in rows [r0, r1) and columns [c0, c1).
func nnzIn(a *sparse.CSR, r0, r1, c0, c1 int64) int64 {
	var n int64
	for i := r0; i < r1; i++ {
		for _, j := range a.Row(i) {
			if j >= c0 && j < c1 {
				n++
			}
		}
	}
	return n
}

// expect1D: rank r asks rank q for the R[r][q] distinct columns of its rows
// of A that fall in q's rows of B, which hold N[r][q] entries. Messages:
// request counts (one int64 to each other rank), the ids (8 bytes each),
// then the rows' lengths (8 bytes each), indices and values ((8+s)
// per entry):
//
//	sent = 8(p−1) + 8·Σ_q R[r][q] + 8·Σ_q R[q][r] + (8+s_B)·Σ_q N[q][r]
//	recv = 8(p−1) + 8·Σ_q R[q][r] + 8·Σ_q R[r][q] + (8+s_B)·Σ_q N[r][q]
func expect1D(a, b *sparse.CSR, arb, brb []int64, p int) []traffic {
	R := make([][]int64, p)
	N := make([][]int64, p)
	for r := range p {
		R[r], N[r] = make([]int64, p), make([]int64, p)
		seen := map[int64]bool{}
		for i := arb[r]; i < arb[r+1]; i++ {
			for _, k := range a.Row(i) {
				seen[k] = true
			}
		}
		for k := range seen {
			for q := range p {
				if q != r && k >= brb[q] && k < brb[q+1] {
					R[r][q]++
					N[r][q] += b.Degree(k)
				}
			}
		}
	}
	out := make([]traffic, p)
	sb := valSize(b)
	for r := range p {
		t := traffic{8 * int64(p-1), 8 * int64(p-1)}
		for q := range p {
			t.sent += 8*R[r][q] + 8*R[q][r] + (8+sb)*N[q][r]
			t.recv += 8*R[q][r] + 8*R[r][q] + (8+sb)*N[r][q]
		}
		out[r] = t
	}
	return out
}

// expect15D on a q×c grid, rank (i, k) = i·c+k. Broadcasts: for every stage
// j ≡ k (mod c), the rank at row j sends B_j (rows_j row offsets, nnz(B_j)
// entries) to the q−1 others of grid column k. Reduction: rank (i, k) sends
// sub-block k′ (rows sub_k′) of its partial product P_ik (the terms of
// A_i·B over the rows of B in its stages, found here by a naive structural
// product) to rank (i, k′):
//
//	sent = Σ_{j∈S_k, j=i} (q−1)·(8·rows_j + (8+s_B)·nnz(B_j)) + Σ_{k′≠k} (8·sub_k′ + 16·nnz(P_ik[sub_k′]))
//	recv = Σ_{j∈S_k, j≠i} (8·rows_j + (8+s_B)·nnz(B_j)) + Σ_{k′≠k} (8·sub_k + 16·nnz(P_ik′[sub_k]))
func expect15D(a, b *sparse.CSR, arb, brb []int64, q, c int) []traffic {
	sb := valSize(b)
	out := make([]traffic, q*c)
	for i := range q {
		sub := spgemm.Bounds(arb[i+1]-arb[i], c)
		// nnzP[k][x]: entries of P_ik in sub-block x.
		nnzP := make([][]int64, c)
		for k := range c {
			nnzP[k] = make([]int64, c)
			for x := range c {
				for r := arb[i] + sub[x]; r < arb[i]+sub[x+1]; r++ {
					cols := map[int64]bool{}
					for _, kk := range a.Row(r) {
						j := 0
						for brb[j+1] <= kk {
							j++
						}
						if j%c != k {
							continue
						}
						for _, col := range b.Row(kk) {
							cols[col] = true
						}
					}
					nnzP[k][x] += int64(len(cols))
				}
			}
		}
		for k := range c {
			var t traffic
			for j := k; j < q; j += c {
				bytes := 8*(brb[j+1]-brb[j]) + (8+sb)*nnzIn(b, brb[j], brb[j+1], 0, b.NCols)
				if q == 1 {
					continue
				}
				if j == i {
					t.sent += int64(q-1) * bytes
				} else {
					t.recv += bytes
				}
			}
			for x := range c {
				if x == k {
					continue
				}
				t.sent += 8*(sub[x+1]-sub[x]) + 16*nnzP[k][x]
				t.recv += 8*(sub[k+1]-sub[k]) + 16*nnzP[x][k]
			}
			out[i*c+k] = t
		}
	}
	return out
}

// expect2D on a pr×pc grid, rank (i, j) = i·pc+j. The stages are the pieces
// [l, h) between the cuts of A's column bounds and B's row bounds. In each,
// the owner of A's columns l…h−1 in grid row i sends the slice (m_i row
// offsets) to the pc−1 others, and the owner of B's rows l…h−1 in grid
// column j sends that slice (h−l row offsets) to the pr−1 others:
//
//	sent = Σ_{stages, j owns} (pc−1)·(8m_i + (8+s_A)·nnz(A[i, l:h])) + Σ_{stages, i owns} (pr−1)·(8(h−l) + (8+s_B)·nnz(B[l:h, j]))
//	recv = the same terms over the stages the rank does not own, once each.
func expect2D(a, b *sparse.CSR, arb, acb, brb, bcb []int64, pr, pc int) []traffic {
	cuts := map[int64]bool{}
	for _, x := range acb {
		cuts[x] = true
	}
	for _, x := range brb {
		cuts[x] = true
	}
	var pts []int64
	for x := range cuts {
		pts = append(pts, x)
	}
	for x := 1; x < len(pts); x++ {
		for y := x; y > 0 && pts[y] < pts[y-1]; y-- {
			pts[y], pts[y-1] = pts[y-1], pts[y]
		}
	}
	owner := func(bounds []int64, l int64) int {
		x := 0
		for !(bounds[x] <= l && l < bounds[x+1]) {
			x++
		}
		return x
	}
	sa, sb := valSize(a), valSize(b)
	out := make([]traffic, pr*pc)
	for i := range pr {
		for j := range pc {
			var t traffic
			for s := 0; s+1 < len(pts); s++ {
				l, h := pts[s], pts[s+1]
				ja, ib := owner(acb, l), owner(brb, l)
				ba := 8*(arb[i+1]-arb[i]) + (8+sa)*nnzIn(a, arb[i], arb[i+1], l, h)
				bb := 8*(h-l) + (8+sb)*nnzIn(b, l, h, bcb[j], bcb[j+1])
				if pc > 1 {
					if j == ja {
						t.sent += int64(pc-1) * ba
					} else {
						t.recv += ba
					}
				}
				if pr > 1 {
					if i == ib {
						t.sent += int64(pr-1) * bb
					} else {
						t.recv += bb
					}
				}
			}
			out[i*pc+j] = t
		}
	}
	return out
}

// Every rank's bytes in phase spgemm equal the derived volume, for every
// variant, p, and valued or pattern operands.
func TestVolume(t *testing.T) {
	ops := []operands{
		{"valued", spgemmtest.Random(41, 45, 38, 4, false, false), spgemmtest.Random(42, 38, 52, 3, false, false)},
		{"pattern·valued", spgemmtest.Random(43, 45, 38, 4, true, false), spgemmtest.Random(44, 38, 52, 3, false, false)},
		{"valued·pattern", spgemmtest.Random(45, 45, 38, 4, false, false), spgemmtest.Random(46, 38, 52, 3, true, false)},
		{"n<p", spgemmtest.Random(47, 4, 5, 2, false, false), spgemmtest.Random(48, 5, 3, 2, false, false)},
	}
	for _, p := range ps {
		for _, v := range variants(p) {
			for _, op := range ops {
				t.Run(fmt.Sprintf("p=%d/%v/%s", p, v, op.name), func(t *testing.T) {
					a, b := op.a, op.b
					var want []traffic
					switch v.algo {
					case "1d":
						want = expect1D(a, b, bounds(v, a.NRows, p, 1), bounds(v, b.NRows, p, 2), p)
					case "1.5d":
						q := p / v.c
						want = expect15D(a, b, bounds(v, a.NRows, q, 1), bounds(v, b.NRows, q, 2), q, v.c)
					case "2d":
						want = expect2D(a, b, bounds(v, a.NRows, v.pr, 1), bounds(v, a.NCols, v.pc, 3),
							bounds(v, b.NRows, v.pr, 2), bounds(v, b.NCols, v.pc, 4), v.pr, v.pc)
					}
					got := make([]traffic, p)
					run(t, p, func(c collective.Comm) error {
						cc := collective.WithStats(c, nil)
						s, err := prepare(cc, v, sparse.PlusTimes[float64]{}, a, b, nil)
						if err != nil {
							return err
						}
						if _, err := s.mul(); err != nil {
							return err
						}
						ph := collective.SnapshotOf(cc).Phase(metrics.PhaseSpGEMM)
						got[c.Rank()] = traffic{ph.SentBytes, ph.RecvBytes}
						return s.free()
					})
					for r := range p {
						if got[r] != want[r] {
							t.Errorf("rank %d: got: %+v want: %+v", r, got[r], want[r])
						}
					}
				})
			}
		}
	}
}

// With Stream.Degrees, every rank's bytes in phase spgemm of Mul15DStream
// are the derived ones: the gather of the plan (2 int64 per stage of the
// grid column), then per stage j either the broadcast of B_j or, when
// FetchVolume15D predicts it cheaper, the fetch of the rows of B_j that
// the rank's A_i names (8 bytes an id to the root, 8+s an entry back). A
// few selected rows fetch; a full A broadcasts; both are checked to occur.
func TestStreamFetchVolume(t *testing.T) {
	b := spgemmtest.Random(51, 80, 80, 5, false, true)
	sel := &sparse.CSR{NRows: 6, NCols: 80, Indptr: []int64{0, 1, 2, 3, 4, 5, 6}, Indices: []int64{3, 41, 42, 79, 3, 60}}
	// Row r of every: columns r, r+20, r+40, r+60 (mod 80), so that every
	// grid row's A names every row of B: fetching would send the ids of
	// all the rows, as many bytes as the row offsets, and broadcasting is
	// chosen (on a tie). Any row of B left unnamed makes the fetch cheaper.
	every := &sparse.CSR{NRows: 80, NCols: 80, Indptr: make([]int64, 81)}
	for r := range int64(80) {
		for x := range int64(4) {
			every.Indices = append(every.Indices, (r+20*x)%80)
		}
		slices.Sort(every.Indices[4*r:])
		every.Indptr[r+1] = 4 * (r + 1)
	}
	for _, op := range []struct {
		name  string
		a     *sparse.CSR
		fetch bool
	}{{"select", sel, true}, {"every", every, false}} {
		for _, qc := range [][2]int{{4, 1}, {2, 2}, {3, 1}, {3, 2}} {
			q, c := qc[0], qc[1]
			p := q * c
			t.Run(fmt.Sprintf("%s/%dx%d", op.name, q, c), func(t *testing.T) {
				arb, brb := spgemm.Bounds(op.a.NRows, q), spgemm.Bounds(b.NRows, q)
				// need[x][j], ent[x][j]: the distinct columns of A_x in
				// block j of B and their entries.
				need, ent := make([][]int64, q), make([][]int64, q)
				for x := range q {
					need[x], ent[x] = make([]int64, q), make([]int64, q)
					seen := map[int64]bool{}
					for r := arb[x]; r < arb[x+1]; r++ {
						for _, col := range op.a.Row(r) {
							if !seen[col] {
								seen[col] = true
								j := collective.BlockOf(brb, col)
								need[x][j]++
								ent[x][j] += b.Degree(col)
							}
						}
					}
				}
				want := make([]traffic, p)
				var fetched, broadcast int
				for rank := range p {
					i, k := rank/c, rank%c
					var w traffic
					var ns int
					for j := k; j < q; j += c {
						ns++
					}
					counts := make([]int, q)
					for x := range counts {
						counts[x] = 2 * ns
					}
					w.sent, w.recv = collective.AllgathervVolume(i, counts, 8)
					for j := k; j < q; j += c {
						nj, ej := make([]int64, q), make([]int64, q)
						for x := range q {
							nj[x], ej[x] = need[x][j], ent[x][j]
						}
						rows, nnz := brb[j+1]-brb[j], b.Indptr[brb[j+1]]-b.Indptr[brb[j]]
						fb, sb := spgemm.FetchVolume15D(q, j, rows, nnz, nj, ej, 8)
						if i == 0 {
							if sb < fb {
								fetched++
							} else {
								broadcast++
							}
						}
						switch {
						case sb >= fb:
							s, r := collective.BcastVolume(i, j, q, 8*rows+16*nnz)
							w.sent, w.recv = w.sent+s, w.recv+r
						case i == j:
							for x := range q {
								if x != j {
									w.recv += 8 * nj[x]
									w.sent += 16 * ej[x]
								}
							}
						default:
							w.sent += 8 * nj[i]
							w.recv += 16 * ej[i]
						}
					}
					want[rank] = w
				}
				require.Equal(t, op.fetch, fetched > 0, "fetched %d stages", fetched)
				require.Equal(t, !op.fetch, broadcast > 0, "broadcast %d stages", broadcast)
				got := make([]traffic, p)
				run(t, p, func(cm collective.Comm) error {
					cc := collective.WithStats(cm, nil)
					g, err := collective.NewGrid(cc, q, c)
					if err != nil {
						return err
					}
					ad := spgemm.Distribute(op.a, arb, []int64{0, 80}, g.Row, 0, g.Col)
					bd := spgemm.Distribute(b, brb, []int64{0, 80}, g.Row, 0, g.Col)
					s := &spgemm.Stream[float64]{Degrees: degrees(b), Chunk: func(int, []int64, *sparse.Matrix[float64]) error { return nil }}
					before := collective.SnapshotOf(cc)
					if err := spgemm.Mul15DStream(g, sparse.PlusTimes[float64]{}, ad, bd, s); err != nil {
						return err
					}
					ph := collective.SnapshotOf(cc).Sub(before).Phase(metrics.PhaseSpGEMM)
					got[cm.Rank()] = traffic{ph.SentBytes, ph.RecvBytes}
					return g.Free()
				})
				for r := range p {
					require.Equal(t, want[r], got[r], "rank %d", r)
				}
			})
		}
	}
}
