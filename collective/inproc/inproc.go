// Package inproc runs the ranks of a communicator as goroutines of one
// process.
//
// # Overview
//
// It implements collective.Comm with the semantics of the MPI backend, so
// that distributed algorithms are exercised by `go test` without mpirun and
// can be debugged in one process (`gnnmpi --ranks 4 …`):
//
//   - collectives rendezvous per call: every rank's arguments are checked
//     against the others' (same operation, root, type, conforming counts),
//     and a mismatch is returned as an error on every rank instead of
//     corrupting memory;
//   - reductions fold the ranks' contributions in rank order, so results are
//     deterministic;
//   - Send is synchronous (it returns once the matching Recv has taken the
//     message), the strictest behaviour MPI allows, so a program free of
//     deadlocks here is free of them under MPI;
//   - Options.Timeout bounds every blocking wait, so a deadlock fails with a
//     description of where each rank waits instead of hanging;
//   - Options.Hook sees every call first and can delay it or fail it, for
//     fault-injection tests;
//   - when a rank fails (Run) or calls Abort, every rank blocked in a call
//     returns collective.ErrAborted.
package inproc

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"gnnmpi/collective"
)

// Options configure a set of in-process ranks.
type Options struct {
	// Timeout bounds every blocking wait of a call; when it expires the job
	// is aborted with an error describing what each rank waits for. Zero
	// means no limit.
	Timeout time.Duration
	// Describe, when set, gives the context of a world rank's calls (its
	// phase, say) for the timeout's error, as the MPI backend's watchdog
	// does. It is called from any goroutine.
	Describe func(worldRank int) string
	// Grace bounds how long Run waits, once the job has failed, for the
	// ranks that have not returned: a rank stuck outside any call (a
	// computation that never ends) would otherwise keep Run waiting. Zero
	// means 3 seconds; a negative value waits without limit.
	Grace time.Duration
	// Hook, when set, is called at the start of every call. A non-nil error
	// is returned by that call without communicating; the hook may also
	// sleep to delay the call. It is called concurrently from all ranks.
	Hook func(Event) error
}

// Event describes a call, as seen by Options.Hook.
type Event struct {
	WorldRank int               // the calling rank in the world communicator
	Comm      int               // communicator id: 0 for the world, then in creation order
	Rank      int               // the calling rank in Comm
	Op        collective.OpKind // kind of call
	Seq       int64             // index of the call among this rank's collective calls on Comm
	Peer      int               // Send: destination; Recv: source; otherwise -1
}

type world struct {
	opt    Options
	abort  chan struct{}
	once   sync.Once
	err    error
	mu     sync.Mutex
	nextID int
	state  []map[int]string // per world rank and communicator id: what it is blocked in
}

func (w *world) fail(err error) {
	w.once.Do(func() {
		w.err = err
		close(w.abort)
	})
}

// cause returns the error that aborted the job, nil if none.
func (w *world) cause() error {
	select {
	case <-w.abort:
		return w.err
	default:
		return nil
	}
}

// setState records what rank waits for on communicator comm ("" once it no
// longer waits). A rank may wait on several communicators at once, from
// different goroutines.
func (w *world) setState(rank, comm int, s string) {
	w.mu.Lock()
	if s == "" {
		delete(w.state[rank], comm)
	} else {
		w.state[rank][comm] = s
	}
	w.mu.Unlock()
}

func (w *world) describe() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for r, m := range w.state {
		s := "running"
		if len(m) > 0 {
			waits := make([]string, 0, len(m))
			for _, x := range m {
				waits = append(waits, x)
			}
			sort.Strings(waits)
			s = strings.Join(waits, "; ")
		}
		fmt.Fprintf(&b, "\n  rank %d: %s", r, s)
		if w.opt.Describe != nil {
			if d := w.opt.Describe(r); d != "" {
				fmt.Fprintf(&b, " (%s)", d)
			}
		}
	}
	return b.String()
}

type group struct {
	w       *world
	id      int
	members []int // world rank of each rank
	mu      sync.Mutex
	rounds  map[int64]*round
	boxes   []*mailbox
}

func newGroup(w *world, members []int) *group {
	w.mu.Lock()
	id := w.nextID
	w.nextID++
	w.mu.Unlock()
	g := &group{w: w, id: id, members: members, rounds: map[int64]*round{}, boxes: make([]*mailbox, len(members))}
	for i := range g.boxes {
		g.boxes[i] = &mailbox{notify: make(chan struct{})}
	}
	return g
}

// Comm is one in-process rank's communicator. Its methods must be called
// from one goroutine at a time; different communicators of one rank (a
// communicator and its duplicate, collective.Dup) may be used by different
// goroutines at once.
type Comm struct {
	g    *group
	rank int
	seq  int64
}

var (
	_ collective.Comm    = (*Comm)(nil)
	_ collective.Aborter = (*Comm)(nil)
	_ collective.Freer   = (*Comm)(nil)
)

// New returns the world communicators of p in-process ranks, indexed by
// rank. It will panic if p < 1.
func New(p int, opt Options) []*Comm {
	if p < 1 {
		panic("inproc: p < 1")
	}
	w := &world{opt: opt, abort: make(chan struct{}), state: make([]map[int]string, p)}
	for r := range w.state {
		w.state[r] = map[int]string{}
	}
	members := make([]int, p)
	for i := range members {
		members[i] = i
	}
	g := newGroup(w, members)
	out := make([]*Comm, p)
	for r := range out {
		out[r] = &Comm{g: g, rank: r}
	}
	return out
}

// Run runs fn on p in-process ranks, each in its own goroutine with its world
// communicator, and waits for all of them. The first rank to return an error
// or panic aborts the others (their pending calls return
// collective.ErrAborted). Run returns the cause, prefixed with its rank:
// the first error that does not wrap collective.ErrAborted (a rank that
// only saw another fail, through collective.Agree say, does not hide that
// rank's own error), else the first error. Once the job has failed, Run
// waits at most Options.Grace for the ranks still running, and says which
// it left behind. It returns nil when every rank returns nil.
func Run(p int, opt Options, fn func(c collective.Comm) error) error {
	comms := New(p, opt)
	w := comms[0].g.w
	type result struct {
		rank int
		err  error
	}
	done := make(chan result, p)
	for r := range comms {
		go func(r int) {
			var err error
			defer func() {
				if v := recover(); v != nil {
					err = fmt.Errorf("rank %d: panic: %v\n%s", r, v, debug.Stack())
				}
				if err != nil {
					w.fail(err)
				}
				done <- result{r, err}
			}()
			if e := fn(comms[r]); e != nil {
				err = fmt.Errorf("rank %d: %w", r, e)
			}
		}(r)
	}
	grace := opt.Grace
	if grace == 0 {
		grace = 3 * time.Second
	}
	running := make([]bool, p)
	for r := range running {
		running[r] = true
	}
	var primary error
	var expired <-chan time.Time
	abort := w.abort
	for left := p; left > 0; {
		select {
		case res := <-done:
			left--
			running[res.rank] = false
			if primary == nil && res.err != nil && !errors.Is(res.err, collective.ErrAborted) {
				primary = res.err
			}
			continue
		case <-abort:
			abort = nil
			if grace > 0 {
				t := time.NewTimer(grace)
				defer t.Stop()
				expired = t.C
			}
			continue
		case <-expired:
		}
		var stuck []string
		for r, run := range running {
			if run {
				stuck = append(stuck, fmt.Sprint(r))
			}
		}
		label := "rank"
		if len(stuck) > 1 {
			label = "ranks"
		}
		return fmt.Errorf("%w\n(%s %s still running %v after the job failed: left behind)",
			pick(w.cause(), primary), label, strings.Join(stuck, ", "), grace)
	}
	return pick(w.cause(), primary)
}

// pick returns the error Run reports: first, the error that failed the
// job, unless it only says another rank failed and primary (the first
// error that does not) is set.
func pick(first, primary error) error {
	if first == nil || primary == nil || !errors.Is(first, collective.ErrAborted) {
		return first
	}
	return primary
}

// Rank returns the rank of c.
func (c *Comm) Rank() int { return c.rank }

// Size returns the number of ranks of c.
func (c *Comm) Size() int { return len(c.g.members) }

// Abort ends the job: every rank's pending and later calls return
// collective.ErrAborted, and Run returns an error naming this rank.
func (c *Comm) Abort(code int) {
	c.g.w.fail(fmt.Errorf("inproc: rank %d called Abort(%d)", c.g.members[c.rank], code))
}

// Free releases nothing; it exists for symmetry with the MPI backend.
func (c *Comm) Free() error { return nil }

func (c *Comm) worldRank() int { return c.g.members[c.rank] }

func (c *Comm) hook(op collective.OpKind, seq int64, peer int) error {
	if err := c.g.w.cause(); err != nil {
		return collective.ErrAborted
	}
	if h := c.g.w.opt.Hook; h != nil {
		return h(Event{WorldRank: c.worldRank(), Comm: c.g.id, Rank: c.rank, Op: op, Seq: seq, Peer: peer})
	}
	return nil
}

// wait blocks until ch is closed, the job is aborted, or the timeout
// expires (which aborts the job).
func (c *Comm) wait(ch <-chan struct{}, what string) error {
	select {
	case <-ch:
		return nil
	default:
	}
	w := c.g.w
	w.setState(c.worldRank(), c.g.id, fmt.Sprintf("%s on comm %d", what, c.g.id))
	defer w.setState(c.worldRank(), c.g.id, "")
	var timeout <-chan time.Time
	if w.opt.Timeout > 0 {
		t := time.NewTimer(w.opt.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ch:
		return nil
	case <-w.abort:
		// A call that completed before the abort completes: between the
		// check above and this select both may have become ready (the
		// rank that failed finished this very call, as the root of
		// collective.Agree's Bcast, then aborted the job), and select
		// picks at random among ready cases. Seen as a rare failure of
		// train's TestFullResumeFromOwnRows under -race.
		select {
		case <-ch:
			return nil
		default:
		}
		return collective.ErrAborted
	case <-timeout:
		ctx := fmt.Sprintf("past the timeout %v", w.opt.Timeout)
		if w.opt.Describe != nil {
			if d := w.opt.Describe(c.worldRank()); d != "" {
				ctx += "; " + d
			}
		}
		err := fmt.Errorf("%w: rank %d: %s on comm %d blocked for %v (%s); ranks:%s",
			ErrDeadlock, c.worldRank(), what, c.g.id, w.opt.Timeout, ctx, w.describe())
		w.fail(err)
		return err
	}
}

// call is one rank's arguments to a collective.
type call struct {
	op         collective.OpKind
	send       collective.Buf
	counts     []int // Allgatherv
	sendCounts []int // Alltoallv
	recvCounts []int // Alltoallv
	root       int
	red        collective.Op
	color, key int
}

// round is the rendezvous of one collective call on a group.
type round struct {
	seq           int64
	in            []call
	arrived, left int
	done, exit    chan struct{}
	err           error
	result        []byte  // Allreduce
	split         []*Comm // Split
}

// collective runs one collective call: it deposits cl, waits for every rank,
// lets each rank copy its output with out (which may read other ranks'
// buffers), and, when readOthers is set, waits until every rank has finished
// reading before returning, so that callers may reuse their buffers.
func (c *Comm) collective(cl call, readOthers bool, out func(rd *round)) error {
	seq := c.seq
	c.seq++
	if err := c.hook(cl.op, seq, -1); err != nil {
		return err
	}
	g := c.g
	g.mu.Lock()
	rd := g.rounds[seq]
	if rd == nil {
		rd = &round{seq: seq, in: make([]call, len(g.members)), done: make(chan struct{}), exit: make(chan struct{})}
		g.rounds[seq] = rd
	}
	rd.in[c.rank] = cl
	rd.arrived++
	if rd.arrived == len(rd.in) {
		rd.err = g.combine(rd)
		close(rd.done)
	}
	g.mu.Unlock()
	what := fmt.Sprintf("%s #%d", cl.op, seq)
	if err := c.wait(rd.done, what); err != nil {
		return err
	}
	if rd.err != nil {
		return rd.err
	}
	if out != nil {
		out(rd)
	}
	g.mu.Lock()
	rd.left++
	if rd.left == len(rd.in) {
		delete(g.rounds, seq)
		close(rd.exit)
	}
	g.mu.Unlock()
	if readOthers {
		return c.wait(rd.exit, what+" (exit)")
	}
	return nil
}

// combine checks that the ranks' calls agree and computes shared results.
// It runs once per round, by the last rank to arrive, under g.mu.
func (g *group) combine(rd *round) error {
	p := len(rd.in)
	first := rd.in[0]
	for r, cl := range rd.in {
		if cl.op != first.op {
			return fmt.Errorf("inproc: collective mismatch on comm %d call #%d: rank 0 called %s, rank %d called %s",
				g.id, rd.seq, first.op, r, cl.op)
		}
	}
	mismatch := func(format string, args ...any) error {
		return fmt.Errorf("inproc: %s #%d on comm %d: %s", first.op, rd.seq, g.id, fmt.Sprintf(format, args...))
	}
	switch first.op {
	case collective.OpBcast:
		if first.root < 0 || first.root >= p {
			return mismatch("root %d out of range [0,%d)", first.root, p)
		}
		for r, cl := range rd.in {
			if cl.root != first.root {
				return mismatch("rank 0 has root %d, rank %d has root %d", first.root, r, cl.root)
			}
			if cl.send.DType() != first.send.DType() || cl.send.Len() != first.send.Len() {
				return mismatch("rank 0 has %d×%s, rank %d has %d×%s", first.send.Len(), first.send.DType(), r, cl.send.Len(), cl.send.DType())
			}
		}
	case collective.OpAllreduce:
		for r, cl := range rd.in {
			if cl.red != first.red {
				return mismatch("rank 0 reduces with %s, rank %d with %s", first.red, r, cl.red)
			}
			if cl.send.DType() != first.send.DType() || cl.send.Len() != first.send.Len() {
				return mismatch("rank 0 has %d×%s, rank %d has %d×%s", first.send.Len(), first.send.DType(), r, cl.send.Len(), cl.send.DType())
			}
		}
		res := make([]byte, first.send.Bytes())
		copy(res, first.send.Raw())
		for _, cl := range rd.in[1:] {
			reduce(first.send.DType(), first.red, res, cl.send.Raw())
		}
		rd.result = res
	case collective.OpAllgatherv:
		for r, cl := range rd.in {
			if cl.send.DType() != first.send.DType() {
				return mismatch("rank 0 sends %s, rank %d sends %s", first.send.DType(), r, cl.send.DType())
			}
			for q := range cl.counts {
				if cl.counts[q] != first.counts[q] {
					return mismatch("rank 0 and rank %d disagree on the count of rank %d: %d vs %d", r, q, first.counts[q], cl.counts[q])
				}
			}
		}
	case collective.OpAlltoallv:
		for r, cl := range rd.in {
			if cl.send.DType() != first.send.DType() {
				return mismatch("rank 0 sends %s, rank %d sends %s", first.send.DType(), r, cl.send.DType())
			}
			for q := range rd.in {
				if cl.sendCounts[q] != rd.in[q].recvCounts[r] {
					return mismatch("rank %d sends %d elements to rank %d, which expects %d", r, cl.sendCounts[q], q, rd.in[q].recvCounts[r])
				}
			}
		}
	case collective.OpSplit:
		rd.split = g.split(rd.in)
	}
	return nil
}

// split forms the sub-groups of a Split round.
func (g *group) split(in []call) []*Comm {
	byColor := map[int][]int{}
	for r, cl := range in {
		if cl.color != collective.Undefined {
			byColor[cl.color] = append(byColor[cl.color], r)
		}
	}
	colors := make([]int, 0, len(byColor))
	for col := range byColor {
		colors = append(colors, col)
	}
	sort.Ints(colors)
	out := make([]*Comm, len(in))
	for _, col := range colors {
		rs := byColor[col]
		sort.SliceStable(rs, func(i, j int) bool { return in[rs[i]].key < in[rs[j]].key })
		members := make([]int, len(rs))
		for i, r := range rs {
			members[i] = g.members[r]
		}
		sub := newGroup(g.w, members)
		for i, r := range rs {
			out[r] = &Comm{g: sub, rank: i}
		}
	}
	return out
}

// Barrier returns once every rank has entered it.
func (c *Comm) Barrier() error {
	return c.collective(call{op: collective.OpBarrier}, false, nil)
}

// Bcast copies root's buf to every rank.
func (c *Comm) Bcast(buf collective.Buf, root int) error {
	return c.collective(call{op: collective.OpBcast, send: buf, root: root}, true, func(rd *round) {
		if c.rank != root {
			copy(buf.Raw(), rd.in[root].send.Raw())
		}
	})
}

// Allreduce stores the rank-ordered reduction of every rank's send in recv.
func (c *Comm) Allreduce(send, recv collective.Buf, op collective.Op) error {
	if send.DType() != recv.DType() || send.Len() != recv.Len() {
		return fmt.Errorf("inproc: Allreduce: send is %d×%s, recv is %d×%s", send.Len(), send.DType(), recv.Len(), recv.DType())
	}
	if op < collective.Sum || op > collective.Min {
		return fmt.Errorf("inproc: Allreduce: invalid operator %s", op)
	}
	return c.collective(call{op: collective.OpAllreduce, send: send, red: op}, false, func(rd *round) {
		copy(recv.Raw(), rd.result)
	})
}

// Allgatherv concatenates every rank's send into recv.
func (c *Comm) Allgatherv(send, recv collective.Buf, counts []int) error {
	total, err := collective.CheckCounts("Allgatherv", counts, c.Size())
	if err != nil {
		return err
	}
	if send.Len() != counts[c.rank] || recv.Len() != total || send.DType() != recv.DType() {
		return fmt.Errorf("inproc: Allgatherv on rank %d: send %d×%s, recv %d×%s, want %d and %d elements of one type",
			c.rank, send.Len(), send.DType(), recv.Len(), recv.DType(), counts[c.rank], total)
	}
	return c.collective(call{op: collective.OpAllgatherv, send: send, counts: counts}, true, func(rd *round) {
		off := 0
		for q, n := range counts {
			copy(recv.Slice(off, off+n).Raw(), rd.in[q].send.Raw())
			off += n
		}
	})
}

// Alltoallv exchanges packed per-rank parts.
func (c *Comm) Alltoallv(send collective.Buf, sendCounts []int, recv collective.Buf, recvCounts []int) error {
	ns, err := collective.CheckCounts("Alltoallv send", sendCounts, c.Size())
	if err != nil {
		return err
	}
	nr, err := collective.CheckCounts("Alltoallv recv", recvCounts, c.Size())
	if err != nil {
		return err
	}
	if send.Len() != ns || recv.Len() != nr || send.DType() != recv.DType() {
		return fmt.Errorf("inproc: Alltoallv on rank %d: send %d×%s, recv %d×%s, want %d and %d elements of one type",
			c.rank, send.Len(), send.DType(), recv.Len(), recv.DType(), ns, nr)
	}
	cl := call{op: collective.OpAlltoallv, send: send, sendCounts: sendCounts, recvCounts: recvCounts}
	return c.collective(cl, true, func(rd *round) {
		off := 0
		for q, n := range recvCounts {
			src := rd.in[q]
			soff := 0
			for i := 0; i < c.rank; i++ {
				soff += src.sendCounts[i]
			}
			copy(recv.Slice(off, off+n).Raw(), src.send.Slice(soff, soff+n).Raw())
			off += n
		}
	})
}

// Split partitions the communicator by color, ordering ranks by key.
func (c *Comm) Split(color, key int) (collective.Comm, error) {
	if color < 0 && color != collective.Undefined {
		return nil, fmt.Errorf("inproc: Split: negative color %d", color)
	}
	var sub *Comm
	err := c.collective(call{op: collective.OpSplit, color: color, key: key}, false, func(rd *round) {
		sub = rd.split[c.rank]
	})
	if err != nil || sub == nil {
		return nil, err
	}
	return sub, nil
}

type message struct {
	src, tag int
	data     []byte
	t        collective.DType
	n        int
	taken    chan struct{}
}

type mailbox struct {
	mu     sync.Mutex
	msgs   []*message
	notify chan struct{}
}

func (c *Comm) checkPeer(what string, peer, tag int) error {
	if peer < 0 || peer >= c.Size() {
		return fmt.Errorf("inproc: %s: rank %d out of range [0,%d)", what, peer, c.Size())
	}
	if tag < 0 {
		return fmt.Errorf("inproc: %s: negative tag %d", what, tag)
	}
	return nil
}

// Send delivers a copy of buf to dst and returns once dst has received it.
func (c *Comm) Send(buf collective.Buf, dst, tag int) error {
	if err := c.checkPeer("Send", dst, tag); err != nil {
		return err
	}
	if err := c.hook(collective.OpSend, -1, dst); err != nil {
		return err
	}
	m := &message{src: c.rank, tag: tag, data: append([]byte(nil), buf.Raw()...), t: buf.DType(), n: buf.Len(), taken: make(chan struct{})}
	box := c.g.boxes[dst]
	box.mu.Lock()
	box.msgs = append(box.msgs, m)
	close(box.notify)
	box.notify = make(chan struct{})
	box.mu.Unlock()
	return c.wait(m.taken, fmt.Sprintf("Send to %d tag %d", dst, tag))
}

// Recv receives the oldest message from src with tag into buf.
func (c *Comm) Recv(buf collective.Buf, src, tag int) (int, error) {
	if err := c.checkPeer("Recv", src, tag); err != nil {
		return 0, err
	}
	if err := c.hook(collective.OpRecv, -1, src); err != nil {
		return 0, err
	}
	box := c.g.boxes[c.rank]
	for {
		box.mu.Lock()
		for i, m := range box.msgs {
			if m.src != src || m.tag != tag {
				continue
			}
			box.msgs = append(box.msgs[:i], box.msgs[i+1:]...)
			box.mu.Unlock()
			close(m.taken)
			if m.t != buf.DType() {
				return 0, fmt.Errorf("inproc: Recv from %d tag %d: message of %s into a %s buffer", src, tag, m.t, buf.DType())
			}
			if m.n > buf.Len() {
				return 0, fmt.Errorf("inproc: Recv from %d tag %d: message of %d elements truncated to %d", src, tag, m.n, buf.Len())
			}
			copy(buf.Raw(), m.data)
			return m.n, nil
		}
		notify := box.notify
		box.mu.Unlock()
		if err := c.wait(notify, fmt.Sprintf("Recv from %d tag %d", src, tag)); err != nil {
			return 0, err
		}
	}
}

// ErrDeadlock is wrapped by the error of a call whose wait exceeded
// Options.Timeout; the error text says what every rank was waiting for.
var ErrDeadlock = errors.New("inproc: deadlock")
