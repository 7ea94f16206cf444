package graph

import (
	"gnnmpi/collective"
	"gnnmpi/metrics"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
)

// BcastMatrixMarket returns on every rank of c the matrices of the Matrix
// Market files paths, read on rank 0 alone (ReadMatrixMarket). check, when
// not nil, runs on rank 0 after the reads; an error reading or checking
// fails every rank (collective.RankZero). progress, when not nil, is
// called on rank 0 before each read.
//
// BcastMatrixMarket is collective over c: the status broadcast of
// collective.RankZero, then each matrix broadcast from rank 0
// (spgemm.BcastMatrix) under phase metrics.PhaseLoad.
func BcastMatrixMarket(c collective.Comm, paths []string, check func(ms []*sparse.CSR) error, progress func(format string, args ...any)) ([]*sparse.CSR, error) {
	ms := make([]*sparse.CSR, len(paths))
	err := collective.RankZero(c, func() error {
		for i, path := range paths {
			if progress != nil {
				progress("reading %s", path)
			}
			var err error
			if ms[i], err = ReadMatrixMarket(path); err != nil {
				return err
			}
		}
		if check != nil {
			return check(ms)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	defer collective.SetPhase(c, metrics.PhaseLoad)()
	for i := range ms {
		if ms[i], err = spgemm.BcastMatrix(c, ms[i], 0); err != nil {
			return nil, err
		}
	}
	return ms, nil
}
