package collective

import "time"

// counted decorates a Comm with byte accounting under the current phase of
// its lane l (the Stats' own lane unless made by Dup).
type counted struct {
	c Comm
	s *Stats
	l *lane
}

// WithStats returns c with every call counted in s (a new Stats if s is
// nil). Sub-communicators from Split are counted in the same s. The volume of
// each call is given by the functions of volume.go, from the call's arguments
// only, so equal programs give equal counts on every backend.
func WithStats(c Comm, s *Stats) Comm {
	if s == nil {
		s = NewStats()
	}
	return &counted{c: c, s: s, l: &s.root}
}

var (
	_ Comm      = (*counted)(nil)
	_ Counter   = (*counted)(nil)
	_ Aborter   = (*counted)(nil)
	_ Freer     = (*counted)(nil)
	_ Unwrapper = (*counted)(nil)
)

func (k *counted) Stats() *Stats { return k.s }

func (k *counted) Unwrap() Comm { return k.c }

// setPhase makes p the current phase of k's lane and returns the previous
// one.
func (k *counted) setPhase(p string) string { return k.s.setPhase(k.l, p) }

// phase returns the current phase of k's lane.
func (k *counted) phase() string { return k.s.phaseOf(k.l) }
func (k *counted) Rank() int     { return k.c.Rank() }
func (k *counted) Size() int     { return k.c.Size() }

func (k *counted) Abort(code int) {
	if !Abort(k.c, code) {
		panic("collective: Abort on a communicator without Abort")
	}
}

func (k *counted) Free() error { return Free(k.c) }

func (k *counted) Barrier() error {
	t := time.Now()
	err := k.c.Barrier()
	k.s.add(k.l, OpBarrier, 0, 0, time.Since(t))
	return err
}

func (k *counted) Bcast(buf Buf, root int) error {
	t := time.Now()
	err := k.c.Bcast(buf, root)
	sent, recv := BcastVolume(k.Rank(), root, k.Size(), buf.Bytes())
	k.s.add(k.l, OpBcast, sent, recv, time.Since(t))
	return err
}

func (k *counted) Allreduce(send, recv Buf, op Op) error {
	t := time.Now()
	err := k.c.Allreduce(send, recv, op)
	s, r := AllreduceVolume(k.Rank(), k.Size(), send.Len(), send.DType().Size())
	k.s.add(k.l, OpAllreduce, s, r, time.Since(t))
	return err
}

func (k *counted) Allgatherv(send, recv Buf, counts []int) error {
	t := time.Now()
	err := k.c.Allgatherv(send, recv, counts)
	if err == nil {
		s, r := AllgathervVolume(k.Rank(), counts, send.DType().Size())
		k.s.add(k.l, OpAllgatherv, s, r, time.Since(t))
	}
	return err
}

func (k *counted) Alltoallv(send Buf, sendCounts []int, recv Buf, recvCounts []int) error {
	t := time.Now()
	err := k.c.Alltoallv(send, sendCounts, recv, recvCounts)
	if err == nil {
		s, r := AlltoallvVolume(k.Rank(), sendCounts, recvCounts, send.DType().Size())
		k.s.add(k.l, OpAlltoallv, s, r, time.Since(t))
	}
	return err
}

func (k *counted) Send(buf Buf, dst, tag int) error {
	t := time.Now()
	err := k.c.Send(buf, dst, tag)
	var sent int64
	if dst != k.Rank() {
		sent = buf.Bytes()
	}
	k.s.add(k.l, OpSend, sent, 0, time.Since(t))
	return err
}

func (k *counted) Recv(buf Buf, src, tag int) (int, error) {
	t := time.Now()
	n, err := k.c.Recv(buf, src, tag)
	var recv int64
	if src != k.Rank() {
		recv = int64(n) * int64(buf.DType().Size())
	}
	k.s.add(k.l, OpRecv, 0, recv, time.Since(t))
	return n, err
}

func (k *counted) Split(color, key int) (Comm, error) {
	t := time.Now()
	sub, err := k.c.Split(color, key)
	s, r := SplitVolume(k.Size())
	k.s.add(k.l, OpSplit, s, r, time.Since(t))
	if err != nil || sub == nil {
		return nil, err
	}
	return &counted{c: sub, s: k.s, l: k.l}, nil
}

// SplitNode splits by node through the decorated communicator and counts
// it as a Split.
func (k *counted) SplitNode() (Comm, error) {
	t := time.Now()
	sub, err := SplitNode(k.c)
	s, r := SplitVolume(k.Size())
	k.s.add(k.l, OpSplit, s, r, time.Since(t))
	if err != nil || sub == nil {
		return nil, err
	}
	return &counted{c: sub, s: k.s, l: k.l}, nil
}

// Dup returns a duplicate of c: the same ranks in the same order, with a
// communication context of its own (a Split with one color, keyed by rank),
// so that collectives on c and on the duplicate never match each other. When
// c counts its traffic (WithStats), the duplicate counts into the same Stats
// but under a current phase of its own, which starts as c's and which
// SetPhase on the duplicate, or on any communicator split from it, changes
// without touching c's. One goroutine may then communicate on c while another
// communicates on the duplicate, each counting under its own phases (the
// backend must allow calls on different communicators at once; both
// backends of this module do).
//
// Dup is collective over c and counts as one Split.
func Dup(c Comm) (Comm, error) {
	d, err := c.Split(0, c.Rank())
	if err != nil {
		return nil, err
	}
	if k, ok := d.(*counted); ok {
		k.l = &lane{phase: k.phase()}
	}
	return d, nil
}

// Record counts in c's Stats, under the current phase of c's lane (see
// SetPhase), one call of kind k that sent sent and received recv bytes in
// d: a call made over c's ranks by another transport, such as an NCCL
// communicator on device buffers, that must be accounted exactly as the
// same call on c would be (compute sent and recv with the functions of
// volume.go). It does nothing when c does not count.
func Record(c Comm, k OpKind, sent, recv int64, d time.Duration) {
	if kc, ok := c.(*counted); ok {
		kc.s.add(kc.l, k, sent, recv, d)
		return
	}
	if s := StatsOf(c); s != nil {
		s.Add(k, sent, recv, d)
	}
}
