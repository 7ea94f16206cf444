package collective

import (
	"errors"
	"fmt"
)

// Grid is a pr×pc arrangement of the ranks of a communicator, with a
// communicator for each grid row and each grid column, after CombBLAS's
// CommGrid. Rank r of the parent sits at row r/pc, column r mod pc (row
// major), so the ranks of one grid row are consecutive.
//
// 2D algorithms (SUMMA) broadcast along RowComm and ColComm. A 1.5D
// algorithm with replication factor c uses a (p/c)×c grid: the c ranks of a
// grid row hold copies of one block (RowComm is the replica group) and the
// p/c ranks of a grid column hold one copy of every block (ColComm).
type Grid struct {
	// Comm is the parent communicator the grid was built from.
	Comm Comm
	// PR and PC are the numbers of grid rows and columns; PR·PC == Comm.Size().
	PR, PC int
	// Row and Col are this rank's coordinates.
	Row, Col int
	// RowComm holds the PC ranks of this grid row, ranked by column
	// (RowComm.Rank() == Col).
	RowComm Comm
	// ColComm holds the PR ranks of this grid column, ranked by row
	// (ColComm.Rank() == Row).
	ColComm Comm
}

// ErrGrid is wrapped by the errors NewGrid returns for dimensions that do
// not fit the communicator.
var ErrGrid = errors.New("collective: grid does not fit the communicator")

// NewGrid arranges the ranks of c as a pr×pc grid, splitting c into the row
// and column communicators. It is collective over c.
//
// NewGrid returns an error wrapping ErrGrid, before any communication and on
// every rank alike, if pr < 1, pc < 1 or pr·pc != c.Size().
func NewGrid(c Comm, pr, pc int) (*Grid, error) {
	p := c.Size()
	if pr < 1 || pc < 1 || pr*pc != p {
		return nil, fmt.Errorf("%w: %d×%d grid for %d ranks", ErrGrid, pr, pc, p)
	}
	r := c.Rank()
	g := &Grid{Comm: c, PR: pr, PC: pc, Row: r / pc, Col: r % pc}
	var err error
	if g.RowComm, err = c.Split(g.Row, g.Col); err != nil {
		return nil, fmt.Errorf("collective: grid row split: %w", err)
	}
	if g.ColComm, err = c.Split(g.Col, g.Row); err != nil {
		return nil, fmt.Errorf("collective: grid column split: %w", err)
	}
	return g, nil
}

// GridDims returns the most nearly square grid for p ranks: pr ≤ pc with
// pr·pc = p and pr as large as possible (√p×√p for a perfect square, 2×3
// for 6, 1×p for a prime). It will panic if p < 1.
func GridDims(p int) (pr, pc int) {
	if p < 1 {
		panic("collective: GridDims: p < 1")
	}
	for pr = 1; (pr+1)*(pr+1) <= p; pr++ {
	}
	for p%pr != 0 {
		pr--
	}
	return pr, p / pr
}

// Free releases the row and column communicators. It is collective over
// the grid's parent communicator; the parent itself is not freed.
func (g *Grid) Free() error {
	return errors.Join(Free(g.RowComm), Free(g.ColComm))
}
