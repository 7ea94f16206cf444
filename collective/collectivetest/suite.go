// Package collectivetest is the conformance suite that every
// collective.Comm backend must pass.
//
// # Overview
//
// Cases returns the cases; each is run by every rank of a communicator with
// the same arguments. A case performs its collective calls unconditionally
// and only then checks what it received, so that the ranks' calls stay
// aligned even when a check fails; it returns an error describing the first
// difference. When the communicator counts bytes (collective.WithStats), each
// case also checks the counted volume of every call against the closed forms
// of package collective.
//
// The in-process backend runs the suite from `go test`; the MPI backend runs
// it under mpirun through `gnnmpi selftest`.
package collectivetest

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gnnmpi/collective"
	"gnnmpi/metrics"
)

// Case is one conformance check.
type Case struct {
	Name     string
	MinRanks int // the case is skipped on smaller communicators
	Fn       func(c collective.Comm) error
}

// Cases returns the conformance cases in a fixed order.
func Cases() []Case {
	return []Case{
		{"RankSize", 1, rankSize},
		{"Barrier", 1, barrier},
		{"Bcast", 1, bcast},
		{"AllreduceSum", 1, allreduceOp(collective.Sum)},
		{"AllreduceMax", 1, allreduceOp(collective.Max)},
		{"AllreduceMin", 1, allreduceOp(collective.Min)},
		{"AllreduceInPlace", 1, allreduceInPlace},
		{"AllreduceSmallInts", 1, allreduceSmallInts},
		{"AllgathervUneven", 1, allgathervUneven},
		{"AlltoallvUneven", 1, alltoallvUneven},
		{"AlltoallvLarge", 1, alltoallvLarge},
		{"AlltoallvUint16", 1, alltoallvUint16},
		{"Helpers", 1, helpers},
		{"SendRecvRing", 2, sendRecvRing},
		{"SendRecvOrderAndShort", 2, sendRecvOrder},
		{"Split", 1, split},
		{"SplitUndefined", 2, splitUndefined},
		{"SplitNested", 4, splitNested},
		{"ConcurrentComms", 1, concurrentComms},
		{"SharedSum", 1, sharedSum},
	}
}

// Run runs every case that fits c's size, in order, and returns the error of
// each case by name (nil for a pass); skipped cases are absent. Every rank of
// c must call it. A case whose collective call itself fails ends the run
// with that error, since the communicator is then broken.
func Run(c collective.Comm) (map[string]error, error) {
	out := map[string]error{}
	for _, tc := range Cases() {
		if c.Size() < tc.MinRanks {
			continue
		}
		err := tc.Fn(c)
		var ce *commError
		if errors.As(err, &ce) {
			return out, fmt.Errorf("%s: %w", tc.Name, ce.err)
		}
		out[tc.Name] = err
	}
	return out, nil
}

// IsCommError reports whether a case's error is a failure of the
// communicator itself (after which the ranks' calls may no longer be
// aligned) rather than a wrong result.
func IsCommError(err error) bool {
	var e *commError
	return errors.As(err, &e)
}

// commError marks a failure of the communicator itself, as opposed to a
// wrong result.
type commError struct{ err error }

func (e *commError) Error() string { return e.err.Error() }
func (e *commError) Unwrap() error { return e.err }

func ce(err error) error {
	if err == nil {
		return nil
	}
	return &commError{err}
}

// checker accumulates the first wrong result of a case.
type checker struct{ err error }

func (k *checker) failf(format string, args ...any) {
	if k.err == nil {
		k.err = fmt.Errorf(format, args...)
	}
}

func (k *checker) equal(what string, got, want any) {
	if fmt.Sprint(got) != fmt.Sprint(want) {
		k.failf("%s: got: %v want: %v", what, got, want)
	}
}

// volume checks that the traffic counted since before is exactly want,
// per kind of call, when c counts.
type volume struct {
	c      collective.Comm
	before collective.Snapshot
	want   map[string]collective.Count
}

func track(c collective.Comm) *volume {
	v := &volume{c: c, want: map[string]collective.Count{}}
	if s := collective.StatsOf(c); s != nil {
		v.before = s.Snapshot()
	}
	return v
}

func (v *volume) expect(op collective.OpKind, sent, recv int64) {
	w := v.want[op.String()]
	w.Calls++
	w.SentBytes += sent
	w.RecvBytes += recv
	v.want[op.String()] = w
}

func (v *volume) check(k *checker) {
	s := collective.StatsOf(v.c)
	if s == nil {
		return
	}
	d := s.Snapshot().Sub(v.before).WithoutTime()
	got := map[string]collective.Count{}
	for _, ops := range d {
		for op, cnt := range ops {
			g := got[op]
			g.Calls += cnt.Calls
			g.SentBytes += cnt.SentBytes
			g.RecvBytes += cnt.RecvBytes
			got[op] = g
		}
	}
	k.equal("counted volume", got, v.want)
}

func rankSize(c collective.Comm) error {
	var k checker
	p, r := c.Size(), c.Rank()
	all, counts, err := collective.AllgatherSlice(c, []int64{int64(r), int64(p)})
	if err != nil {
		return ce(err)
	}
	for q := 0; q < p; q++ {
		k.equal(fmt.Sprintf("rank %d's (rank,size)", q), all[2*q:2*q+2], []int64{int64(q), int64(p)})
		k.equal("count", counts[q], 2)
	}
	return k.err
}

func barrier(c collective.Comm) error {
	v := track(c)
	for i := 0; i < 3; i++ {
		if err := c.Barrier(); err != nil {
			return ce(err)
		}
		v.expect(collective.OpBarrier, 0, 0)
	}
	var k checker
	v.check(&k)
	return k.err
}

// value returns an exactly representable test value for element i of rank r.
func value(r, i int) float64 { return float64((r+1)*1000 + i%997 - 300) }

func bcast(c collective.Comm) error {
	var k checker
	p, r := c.Size(), c.Rank()
	v := track(c)
	for root := 0; root < p; root++ {
		for _, n := range []int{0, 1, 7, 1000} {
			f32 := make([]float32, n)
			f64 := make([]float64, n)
			i64 := make([]int64, n)
			i32 := make([]int32, n)
			by := make([]byte, n)
			if r == root {
				for i := range n {
					f32[i], f64[i], i64[i], i32[i], by[i] = float32(value(root, i)), value(root, i), int64(value(root, i)), int32(value(root, i)), byte(root*31+i)
				}
			}
			for _, b := range []collective.Buf{collective.BufOf(f32), collective.BufOf(f64), collective.BufOf(i64), collective.BufOf(i32), collective.BufOf(by)} {
				if err := c.Bcast(b, root); err != nil {
					return ce(err)
				}
				s, rv := expBcast(r, root, p, b.Bytes())
				v.expect(collective.OpBcast, s, rv)
			}
			for i := range n {
				if f32[i] != float32(value(root, i)) || f64[i] != value(root, i) || i64[i] != int64(value(root, i)) ||
					i32[i] != int32(value(root, i)) || by[i] != byte(root*31+i) {
					k.failf("root %d n %d element %d: got %v %v %v %v %v", root, n, i, f32[i], f64[i], i64[i], i32[i], by[i])
					break
				}
			}
		}
	}
	v.check(&k)
	return k.err
}

func reduceRef(op collective.Op, p, i int) float64 {
	acc := value(0, i)
	for q := 1; q < p; q++ {
		x := value(q, i) * sign(q)
		switch op {
		case collective.Sum:
			acc += x
		case collective.Max:
			acc = math.Max(acc, x)
		case collective.Min:
			acc = math.Min(acc, x)
		}
	}
	return acc
}

// sign alternates the sign of odd ranks' values so Max and Min differ.
func sign(r int) float64 {
	if r%2 == 1 {
		return -1
	}
	return 1
}

func allreduceOp(op collective.Op) func(c collective.Comm) error {
	return func(c collective.Comm) error {
		var k checker
		p, r := c.Size(), c.Rank()
		v := track(c)
		for _, n := range []int{0, 1, p + 1, 1001} {
			f32, f64, i64, i32 := make([]float32, n), make([]float64, n), make([]int64, n), make([]int32, n)
			o32, o64, oi64, oi32 := make([]float32, n), make([]float64, n), make([]int64, n), make([]int32, n)
			for i := range n {
				x := value(r, i) * sign(r)
				f32[i], f64[i], i64[i], i32[i] = float32(x), x, int64(x), int32(x)
			}
			pairs := [][2]collective.Buf{
				{collective.BufOf(f32), collective.BufOf(o32)},
				{collective.BufOf(f64), collective.BufOf(o64)},
				{collective.BufOf(i64), collective.BufOf(oi64)},
				{collective.BufOf(i32), collective.BufOf(oi32)},
			}
			for _, pr := range pairs {
				if err := c.Allreduce(pr[0], pr[1], op); err != nil {
					return ce(err)
				}
				s, rv := expAllreduce(r, p, n, pr[0].DType().Size())
				v.expect(collective.OpAllreduce, s, rv)
			}
			for i := range n {
				want := reduceRef(op, p, i)
				if float64(o32[i]) != want || o64[i] != want || float64(oi64[i]) != want || float64(oi32[i]) != want {
					k.failf("%s n %d element %d: got %v %v %v %v want %v", op, n, i, o32[i], o64[i], oi64[i], oi32[i], want)
					break
				}
			}
		}
		v.check(&k)
		return k.err
	}
}

// allreduceSmallInts reduces []uint8 and []uint16 with every operator: the
// MPI backend must map them to typed MPI datatypes (MPI_UINT8_T, not
// MPI_BYTE, on which MPICH refuses reductions).
func allreduceSmallInts(c collective.Comm) error {
	var k checker
	p, r := c.Size(), c.Rank()
	v := track(c)
	val := func(rank, i int) int { return (3*rank + i) % 5 }
	for _, op := range []collective.Op{collective.Sum, collective.Max, collective.Min} {
		for _, n := range []int{0, 1, p + 1, 1001} {
			u8, o8 := make([]uint8, n), make([]uint8, n)
			u16, o16 := make([]uint16, n), make([]uint16, n)
			for i := range n {
				u8[i], u16[i] = uint8(val(r, i)), uint16(100*val(r, i)+1)
			}
			for _, pr := range [][2]collective.Buf{{collective.BufOf(u8), collective.BufOf(o8)}, {collective.BufOf(u16), collective.BufOf(o16)}} {
				if err := c.Allreduce(pr[0], pr[1], op); err != nil {
					return ce(err)
				}
				s, rv := expAllreduce(r, p, n, pr[0].DType().Size())
				v.expect(collective.OpAllreduce, s, rv)
			}
			for i := range n {
				w8, w16 := uint8(val(0, i)), uint16(100*val(0, i)+1)
				for q := 1; q < p; q++ {
					x8, x16 := uint8(val(q, i)), uint16(100*val(q, i)+1)
					switch op {
					case collective.Sum:
						w8, w16 = w8+x8, w16+x16
					case collective.Max:
						w8, w16 = max(w8, x8), max(w16, x16)
					case collective.Min:
						w8, w16 = min(w8, x8), min(w16, x16)
					}
				}
				if o8[i] != w8 || o16[i] != w16 {
					k.failf("%s n %d element %d: got %d %d want %d %d", op, n, i, o8[i], o16[i], w8, w16)
					break
				}
			}
		}
	}
	v.check(&k)
	return k.err
}

func allreduceInPlace(c collective.Comm) error {
	var k checker
	p, r := c.Size(), c.Rank()
	x := make([]float64, 17)
	for i := range x {
		x[i] = value(r, i) * sign(r)
	}
	if err := collective.AllreduceSlice(c, x, collective.Sum); err != nil {
		return ce(err)
	}
	for i := range x {
		k.equal(fmt.Sprintf("element %d", i), x[i], reduceRef(collective.Sum, p, i))
	}
	m, err := collective.AllreduceScalar(c, int64(r), collective.Max)
	if err != nil {
		return ce(err)
	}
	k.equal("max rank", m, int64(p-1))
	lo, hi, n := int64(-r), int64(r), int64(1)
	if err := collective.AllreduceVars(c, collective.Max, &lo, &hi); err != nil {
		return ce(err)
	}
	if err := collective.AllreduceVars(c, collective.Sum, &n); err != nil {
		return ce(err)
	}
	k.equal("vars: max of -rank", lo, int64(0))
	k.equal("vars: max rank", hi, int64(p-1))
	k.equal("vars: sum of ones", n, int64(p))
	return k.err
}

func gatherCount(q int) int { return (q * 5) % 7 } // rank 0 sends nothing

func allgathervUneven(c collective.Comm) error {
	var k checker
	p, r := c.Size(), c.Rank()
	counts := make([]int, p)
	total := 0
	for q := range counts {
		counts[q] = gatherCount(q)
		total += counts[q]
	}
	send := make([]int64, counts[r])
	for i := range send {
		send[i] = int64(r*100 + i)
	}
	recv := make([]int64, total)
	v := track(c)
	if err := c.Allgatherv(collective.BufOf(send), collective.BufOf(recv), counts); err != nil {
		return ce(err)
	}
	s, rv := expAllgatherv(r, counts, 8)
	v.expect(collective.OpAllgatherv, s, rv)
	off := 0
	for q, n := range counts {
		for i := 0; i < n; i++ {
			if recv[off+i] != int64(q*100+i) {
				k.failf("element %d of rank %d: got %d want %d", i, q, recv[off+i], q*100+i)
			}
		}
		off += n
	}
	v.check(&k)
	return k.err
}

// a2aCount is the number of elements rank src sends to rank dst; some are 0.
func a2aCount(src, dst int) int { return (src*3 + dst*2) % 5 }

func a2aValue(src, dst, i int) float32 { return float32(src*10000 + dst*100 + i) }

func alltoallvUneven(c collective.Comm) error {
	var k checker
	p, r := c.Size(), c.Rank()
	sc, rc := make([]int, p), make([]int, p)
	var send []float32
	for q := 0; q < p; q++ {
		sc[q] = a2aCount(r, q)
		rc[q] = a2aCount(q, r)
		for i := 0; i < sc[q]; i++ {
			send = append(send, a2aValue(r, q, i))
		}
	}
	v := track(c)
	recv, err := collective.AlltoallvFlat(c, send, sc, rc)
	if err != nil {
		return ce(err)
	}
	s, rv := expAlltoallv(r, sc, rc, 4)
	v.expect(collective.OpAlltoallv, s, rv)
	off := 0
	for q := 0; q < p; q++ {
		for i := 0; i < rc[q]; i++ {
			if recv[off+i] != a2aValue(q, r, i) {
				k.failf("element %d from rank %d: got %v want %v", i, q, recv[off+i], a2aValue(q, r, i))
			}
		}
		off += rc[q]
	}
	v.check(&k)
	return k.err
}

// alltoallvUint16 sends 16-bit words (half-precision features), with
// values that need both bytes, and checks them and the byte counts.
func alltoallvUint16(c collective.Comm) error {
	var k checker
	p, r := c.Size(), c.Rank()
	sc, rc := make([]int, p), make([]int, p)
	word := func(src, dst, i int) uint16 { return uint16(0xA000 + src*0x400 + dst*0x20 + i) }
	var send []uint16
	for q := range p {
		sc[q], rc[q] = a2aCount(r, q)+1, a2aCount(q, r)+1
		for i := range sc[q] {
			send = append(send, word(r, q, i))
		}
	}
	v := track(c)
	recv, err := collective.AlltoallvFlat(c, send, sc, rc)
	if err != nil {
		return ce(err)
	}
	s, rv := expAlltoallv(r, sc, rc, 2)
	v.expect(collective.OpAlltoallv, s, rv)
	off := 0
	for q := range p {
		for i := range rc[q] {
			if recv[off+i] != word(q, r, i) {
				k.failf("word %d from rank %d: got %#x want %#x", i, q, recv[off+i], word(q, r, i))
			}
		}
		off += rc[q]
	}
	v.check(&k)
	return k.err
}

func alltoallvLarge(c collective.Comm) error {
	var k checker
	p, r := c.Size(), c.Rank()
	const n = 1 << 16
	sc, rc := make([]int, p), make([]int, p)
	send := make([]float64, 0, n*p)
	for q := 0; q < p; q++ {
		sc[q], rc[q] = n, n
		for i := 0; i < n; i++ {
			send = append(send, float64(r*n*p+q*n+i))
		}
	}
	recv, err := collective.AlltoallvFlat(c, send, sc, rc)
	if err != nil {
		return ce(err)
	}
	for q := 0; q < p; q++ {
		for i := 0; i < n; i += 4099 {
			k.equal(fmt.Sprintf("element %d from %d", i, q), recv[q*n+i], float64(q*n*p+r*n+i))
		}
	}
	return k.err
}

func helpers(c collective.Comm) error {
	var k checker
	p, r := c.Size(), c.Rank()
	parts := make([][]int32, p)
	for q := range parts {
		for i := 0; i < a2aCount(r, q); i++ {
			parts[q] = append(parts[q], int32(r*100+q*10+i))
		}
	}
	got, err := collective.AlltoallvSlices(c, parts)
	if err != nil {
		return ce(err)
	}
	for q := range got {
		k.equal(fmt.Sprintf("length from %d", q), len(got[q]), a2aCount(q, r))
		for i, x := range got[q] {
			k.equal("value", x, int32(q*100+r*10+i))
		}
	}
	b := []byte("hello")
	if r != 0 {
		b = make([]byte, 5)
	}
	if err := collective.BcastSlice(c, b, 0); err != nil {
		return ce(err)
	}
	k.equal("bcast bytes", string(b), "hello")
	return k.err
}

func sendRecvRing(c collective.Comm) error {
	var k checker
	p, r := c.Size(), c.Rank()
	next, prev := (r+1)%p, (r-1+p)%p
	out := []float64{float64(r), float64(r) + 0.5}
	in := make([]float64, 2)
	v := track(c)
	// Even ranks send first, odd ranks receive first: deadlock-free with
	// synchronous sends for any p ≥ 2.
	var n int
	var err error
	if r%2 == 0 {
		if err = c.Send(collective.BufOf(out), next, 7); err == nil {
			n, err = c.Recv(collective.BufOf(in), prev, 7)
		}
	} else {
		if n, err = c.Recv(collective.BufOf(in), prev, 7); err == nil {
			err = c.Send(collective.BufOf(out), next, 7)
		}
	}
	if err != nil {
		return ce(err)
	}
	v.expect(collective.OpSend, 16, 0)
	v.expect(collective.OpRecv, 0, 16)
	k.equal("received count", n, 2)
	k.equal("received", in, []float64{float64(prev), float64(prev) + 0.5})
	v.check(&k)
	return k.err
}

func sendRecvOrder(c collective.Comm) error {
	var k checker
	r := c.Rank()
	// Rank 0 sends three messages of decreasing length with one tag to rank 1,
	// which receives them in order into a buffer longer than each.
	if r == 0 {
		for i, n := range []int{5, 3, 0} {
			msg := make([]int64, n)
			for j := range msg {
				msg[j] = int64(i*10 + j)
			}
			if err := c.Send(collective.BufOf(msg), 1, 3); err != nil {
				return ce(err)
			}
		}
	} else if r == 1 {
		buf := make([]int64, 8)
		for i, want := range []int{5, 3, 0} {
			n, err := c.Recv(collective.BufOf(buf), 0, 3)
			if err != nil {
				return ce(err)
			}
			k.equal(fmt.Sprintf("message %d length", i), n, want)
			for j := 0; j < n; j++ {
				k.equal("value", buf[j], int64(i*10+j))
			}
		}
	}
	if err := c.Barrier(); err != nil {
		return ce(err)
	}
	return k.err
}

func split(c collective.Comm) error {
	var k checker
	p, r := c.Size(), c.Rank()
	v := track(c)
	// Two colors by parity; reverse order within each by key = -rank.
	sub, err := c.Split(r%2, -r)
	if err != nil {
		return ce(err)
	}
	s, rv := expSplit(p)
	v.expect(collective.OpSplit, s, rv)
	members := []int{}
	for q := p - 1; q >= 0; q-- {
		if q%2 == r%2 {
			members = append(members, q)
		}
	}
	k.equal("sub size", sub.Size(), len(members))
	for i, q := range members {
		if q == r {
			k.equal("sub rank", sub.Rank(), i)
		}
	}
	// The sub-communicator's traffic stays within it and is counted at its size.
	x := []int64{int64(r)}
	if err := collective.AllreduceSlice(sub, x, collective.Sum); err != nil {
		return ce(err)
	}
	as, ar := expAllreduce(sub.Rank(), sub.Size(), 1, 8)
	v.expect(collective.OpAllreduce, as, ar)
	want := int64(0)
	for _, q := range members {
		want += int64(q)
	}
	k.equal("sum over sub", x[0], want)
	v.check(&k)
	if err := collective.Free(sub); err != nil {
		return ce(err)
	}
	return k.err
}

func splitUndefined(c collective.Comm) error {
	var k checker
	r := c.Rank()
	color := 0
	if r == 0 {
		color = collective.Undefined
	}
	sub, err := c.Split(color, 0)
	if err != nil {
		return ce(err)
	}
	if r == 0 {
		if sub != nil {
			k.failf("rank 0 passed Undefined but got a communicator of size %d", sub.Size())
		}
		return k.err
	}
	if sub == nil {
		return fmt.Errorf("rank %d got no communicator", r)
	}
	k.equal("size", sub.Size(), c.Size()-1)
	k.equal("rank", sub.Rank(), r-1)
	n, err := collective.AllreduceScalar(sub, int64(1), collective.Sum)
	if err != nil {
		return ce(err)
	}
	k.equal("members", n, int64(c.Size()-1))
	if err := collective.Free(sub); err != nil {
		return ce(err)
	}
	return k.err
}

// splitNested builds a 2×(p/2) grid from rows and then columns, as the 2D
// algorithms do, and checks row and column reductions.
func splitNested(c collective.Comm) error {
	var k checker
	p, r := c.Size(), c.Rank()
	pc := p / 2
	if r >= 2*pc { // odd p: the last rank sits out
		_, err := c.Split(collective.Undefined, 0)
		if err != nil {
			return ce(err)
		}
		_, err = c.Split(collective.Undefined, 0)
		return ce(err)
	}
	row, col := r/pc, r%pc
	rowComm, err := c.Split(row, col)
	if err != nil {
		return ce(err)
	}
	colComm, err := c.Split(col, row)
	if err != nil {
		return ce(err)
	}
	x := []int64{int64(r)}
	if err := collective.AllreduceSlice(rowComm, x, collective.Sum); err != nil {
		return ce(err)
	}
	wantRow := int64(0)
	for j := 0; j < pc; j++ {
		wantRow += int64(row*pc + j)
	}
	k.equal("row sum", x[0], wantRow)
	y := []int64{int64(r)}
	if err := collective.AllreduceSlice(colComm, y, collective.Sum); err != nil {
		return ce(err)
	}
	k.equal("column sum", y[0], int64(col+pc+col))
	// A further split of a sub-communicator.
	half, err := rowComm.Split(rowComm.Rank()%2, rowComm.Rank())
	if err != nil {
		return ce(err)
	}
	z, err := collective.AllreduceScalar(half, int64(1), collective.Sum)
	if err != nil {
		return ce(err)
	}
	k.equal("half size", z, int64(half.Size()))
	for _, sc := range []collective.Comm{half, colComm, rowComm} {
		if err := collective.Free(sc); err != nil {
			return ce(err)
		}
	}
	return k.err
}

// concurrentComms checks that two goroutines of one rank can be inside
// collectives on two communicators at once: c and its duplicate d
// (collective.Dup). A goroutine on d runs rounds of Alltoallv and a
// goroutine on c rounds of Allreduce, each round on each communicator in
// the same order on every rank, but crossed between the ranks: in every
// round an odd rank enters its Alltoallv on d only after its Allreduce on c
// has completed, while an even rank enters its Alltoallv first and its
// Allreduce (after a short pause) while the Alltoallv is still pending. The
// even rank's Alltoallv completes only after the odd ranks' Allreduce, which
// needs the even rank's, so a backend that runs one collective of a rank at
// a time deadlocks here. Byte counts: d's traffic counts under d's phase
// (metrics.PhaseDup), c's under c's, which d's SetPhase leaves alone.
func concurrentComms(c collective.Comm) error {
	var k checker
	p, r := c.Size(), c.Rank()
	phase := collective.PhaseOf(c)
	v := track(c)
	d, err := collective.Dup(c)
	if err != nil {
		return ce(err)
	}
	k.equal("dup size", d.Size(), p)
	k.equal("dup rank", d.Rank(), r)
	s, rv := expSplit(p)
	v.expect(collective.OpSplit, s, rv)
	before := collective.SnapshotOf(c)
	const rounds = 4
	sc, rc := make([]int, p), make([]int, p)
	for q := range p {
		sc[q], rc[q] = 1000+a2aCount(r, q), 1000+a2aCount(q, r) // past the eager limit of shared memory
	}
	reduced := make(chan struct{}, rounds)  // c's goroutine → d's: round i's Allreduce is done
	entering := make(chan struct{}, rounds) // d's goroutine → c's: about to enter round i's Alltoallv
	var dk checker
	var dErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer collective.SetPhase(d, metrics.PhaseDup)()
		for i := range rounds {
			if r%2 == 1 {
				<-reduced
			} else {
				entering <- struct{}{}
			}
			var send []float32
			for q := range p {
				for j := range sc[q] {
					send = append(send, a2aValue(r, q, j)+float32(i))
				}
			}
			recv, err := collective.AlltoallvFlat(d, send, sc, rc)
			if err != nil {
				dErr = err
				return
			}
			off := 0
			for q := range p {
				for j := range rc[q] {
					if recv[off+j] != a2aValue(q, r, j)+float32(i) {
						dk.failf("round %d: element %d from rank %d: got %v want %v", i, j, q, recv[off+j], a2aValue(q, r, j)+float32(i))
					}
				}
				off += rc[q]
			}
		}
	}()
	var cErr error
	for i := range rounds {
		if r%2 == 0 {
			<-entering
			time.Sleep(20 * time.Millisecond) // let the Alltoallv on d start first
		}
		x := []float64{float64(r + i), 1}
		if cErr = collective.AllreduceSlice(c, x, collective.Sum); cErr != nil {
			break
		}
		k.equal(fmt.Sprintf("round %d sum", i), x, []float64{float64(p*(p-1)/2 + p*i), float64(p)})
		if r%2 == 1 {
			reduced <- struct{}{}
		}
	}
	if cErr != nil && r%2 == 1 {
		close(reduced) // release d's goroutine; its Alltoallv fails or the job is aborted
	}
	<-done
	if cErr != nil {
		return ce(cErr)
	}
	if dErr != nil {
		return ce(dErr)
	}
	if dk.err != nil {
		return dk.err
	}
	k.equal("c's phase after d's", collective.PhaseOf(c), phase)
	as, ar := expAllreduce(r, p, 2, 8)
	var ts, tr int64
	for range rounds {
		v.expect(collective.OpAllreduce, as, ar)
		s, rv := expAlltoallv(r, sc, rc, 4)
		v.expect(collective.OpAlltoallv, s, rv)
		ts, tr = ts+s, tr+rv
	}
	if collective.StatsOf(c) != nil {
		got := collective.SnapshotOf(c).Sub(before).WithoutTime()[metrics.PhaseDup]
		k.equal("d's phase", got, map[string]collective.Count{"alltoallv": {Calls: rounds, SentBytes: ts, RecvBytes: tr}})
	}
	v.check(&k)
	if err := collective.Free(d); err != nil {
		return ce(err)
	}
	return k.err
}

// sharedSum sums float32 vectors through shared memory (collective.SharedSum)
// twice with the same segments, and checks every element against the sum
// in rank order, bit for bit, and the volume against one Allreduce's. A
// communicator whose ranks cannot share memory (collective.ErrNotShared on
// every rank) has nothing to check.
func sharedSum(c collective.Comm) error {
	var k checker
	p, r := c.Size(), c.Rank()
	v := track(c)
	x := func(q, i, round int) float32 { return float32(math.Sin(float64(7*q+i+round))) * float32(1+q) / 3 }
	for _, n := range []int{0, 1, p + 1, 10001} {
		s, err := collective.NewSharedSum(c, n)
		if errors.Is(err, collective.ErrNotShared) {
			return nil
		}
		if err != nil {
			return ce(err)
		}
		for round := range 2 {
			loc := s.Local()
			for i := range loc {
				loc[i] = x(r, i, round)
			}
			if err := s.Sum(); err != nil {
				return ce(err)
			}
			sent, recv := expAllreduce(r, p, n, 4)
			v.expect(collective.OpAllreduce, sent, recv)
			for i, got := range s.Local() {
				want := x(0, i, round)
				for q := 1; q < p; q++ {
					want += x(q, i, round)
				}
				if math.Float32bits(got) != math.Float32bits(want) {
					k.failf("n %d round %d element %d: got %v want %v (rank order)", n, round, i, got, want)
					break
				}
			}
		}
		if err := s.Free(); err != nil {
			return ce(err)
		}
	}
	v.check(&k)
	return k.err
}
