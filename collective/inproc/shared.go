package inproc

import "gnnmpi/collective"

var _ collective.SharedMemory = (*Comm)(nil)

// AllocShared allocates nbytes on every rank and hands every rank all of
// them (collective): the ranks are goroutines of one process, so any
// memory is shared. Sync is a Barrier, whose rendezvous orders the ranks'
// memory accesses.
func (c *Comm) AllocShared(nbytes int) (collective.Shared, error) {
	own := make([]byte, nbytes)
	segs := make([][]byte, c.Size())
	err := c.collective(call{op: collective.OpBarrier, send: collective.BufOf(own)}, true, func(rd *round) {
		for q, cl := range rd.in {
			segs[q] = cl.send.Raw()
		}
	})
	if err != nil {
		return nil, err
	}
	return &shared{c: c, segs: segs}, nil
}

// shared is the in-process collective.Shared.
type shared struct {
	c    *Comm
	segs [][]byte
}

func (s *shared) Segment(r int) []byte { return s.segs[r] }
func (s *shared) Sync() error          { return s.c.Barrier() }
func (s *shared) Free() error          { return s.c.Barrier() }
