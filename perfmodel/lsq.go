package perfmodel

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/mat"
)

// ErrTooFewRows is returned by the fits when there are fewer observations
// than parameters.
var ErrTooFewRows = errors.New("perfmodel: fewer observations than parameters")

// NonNegLeastSquares returns x ≥ 0 minimising ‖A·x − b‖₂ for the n×m
// matrix given by rows (each of length m) and the coefficient of
// determination R² of the fit (1 − SSres/SStot; 1 when b is constant and
// matched exactly). It uses an active set: it solves the unconstrained
// problem on the free columns with mat's QR least squares, fixes the most
// negative coefficient at zero, and repeats. Columns that are linearly
// dependent on the others are dropped (coefficient 0). It returns
// ErrTooFewRows when n < m.
func NonNegLeastSquares(rows [][]float64, b []float64) (x []float64, r2 float64, err error) {
	return leastSquares(rows, b, true)
}

// leastSquares is NonNegLeastSquares, or plain least squares when nonNeg
// is false.
func leastSquares(rows [][]float64, b []float64, nonNeg bool) ([]float64, float64, error) {
	n := len(rows)
	if n != len(b) {
		panic("perfmodel: rows and b differ in length")
	}
	if n == 0 {
		return nil, 0, ErrTooFewRows
	}
	m := len(rows[0])
	if n < m {
		return nil, 0, ErrTooFewRows
	}
	free := make([]bool, m)
	for j := range free {
		free[j] = true
	}
	// Drop all-zero columns (their coefficient is undetermined: 0).
	for j := range m {
		zero := true
		for i := range n {
			if rows[i][j] != 0 {
				zero = false
				break
			}
		}
		if zero {
			free[j] = false
		}
	}
	x := make([]float64, m)
	for {
		var cols []int
		for j, f := range free {
			if f {
				cols = append(cols, j)
			}
		}
		for j := range x {
			x[j] = 0
		}
		if len(cols) == 0 {
			break
		}
		sol, ok := solve(rows, b, cols)
		if !ok {
			// Rank deficient: drop the last free column and retry.
			free[cols[len(cols)-1]] = false
			continue
		}
		worst, wv := -1, 0.0
		for i, j := range cols {
			x[j] = sol[i]
			if nonNeg && sol[i] < wv {
				worst, wv = j, sol[i]
			}
		}
		if worst < 0 {
			break
		}
		free[worst] = false
	}
	return x, rSquared(rows, b, x), nil
}

// solve solves the least-squares problem on the given columns; ok is false
// when those columns are (numerically) linearly dependent.
func solve(rows [][]float64, b []float64, cols []int) ([]float64, bool) {
	n, k := len(rows), len(cols)
	a := mat.NewDense(n, k, nil)
	// Scale each column to unit max norm so the conditioning test below
	// does not depend on units (seconds vs bytes).
	scale := make([]float64, k)
	for c, j := range cols {
		for i := range n {
			scale[c] = math.Max(scale[c], math.Abs(rows[i][j]))
		}
		for i := range n {
			a.Set(i, c, rows[i][j]/scale[c])
		}
	}
	var qr mat.QR
	qr.Factorize(a)
	var r mat.Dense
	qr.RTo(&r)
	maxd := 0.0
	for i := range k {
		maxd = math.Max(maxd, math.Abs(r.At(i, i)))
	}
	for i := range k {
		if math.Abs(r.At(i, i)) <= 1e-10*maxd {
			return nil, false
		}
	}
	var x mat.Dense
	if err := qr.SolveTo(&x, false, mat.NewDense(n, 1, append([]float64(nil), b...))); err != nil {
		return nil, false
	}
	out := make([]float64, k)
	for c := range k {
		out[c] = x.At(c, 0) / scale[c]
	}
	return out, true
}

// rSquared returns 1 − SSres/SStot of the fit x (1 when SStot is 0 and the
// fit is exact, 0 when SStot is 0 and it is not).
func rSquared(rows [][]float64, b, x []float64) float64 {
	mean := 0.0
	for _, v := range b {
		mean += v / float64(len(b))
	}
	var res, tot float64
	for i, row := range rows {
		f := 0.0
		for j, v := range row {
			f += v * x[j]
		}
		res += (b[i] - f) * (b[i] - f)
		tot += (b[i] - mean) * (b[i] - mean)
	}
	if tot == 0 {
		if res <= 1e-24 {
			return 1
		}
		return 0
	}
	return 1 - res/tot
}
