package collective

// RankZero runs fn on rank 0 only and makes every rank return its outcome,
// so that an error on rank 0 fails every rank together: rank 0 returns
// fn's error, the others ErrAborted (package main then aborts the job).
// It returns nil on every rank when fn succeeds. The other ranks do not
// call fn; they wait for rank 0's status.
//
// RankZero is collective over c: one Bcast of an int32 from rank 0, after
// fn returns.
func RankZero(c Comm, fn func() error) error {
	var err error
	if c.Rank() == 0 {
		err = fn()
	}
	status := []int32{0}
	if err != nil {
		status[0] = 1
	}
	if berr := BcastSlice(c, status, 0); berr != nil {
		return berr
	}
	if err != nil {
		return err
	}
	if status[0] != 0 {
		return ErrAborted
	}
	return nil
}
