package tier

import (
	"errors"
	"fmt"

	"gnnmpi/alltoall"
	"gnnmpi/gpu/cuda"
	"gnnmpi/gpu/kernels"
	"gnnmpi/metrics"
)

// Tier numbers, as gather_rows reads them.
const (
	Device = 0 // rows resident in device memory, by slot
	Host   = 1 // the other resident rows, in mapped host memory
	Remote = 2 // rows fetched from other ranks for the current gather
)

// Reads counts the rows, and their bytes, that gathers read from each
// tier: the metrics' GPUReads.
type Reads = metrics.GPUReads

// Out is a device buffer that gathers write a minibatch's input matrix
// into (GatherTo), grown as needed and reused. A caller that keeps several
// gathered batches alive at once, such as a loader preparing minibatches
// while an earlier one computes, gives each its own Out.
type Out struct {
	c      *cuda.Context
	ptr    cuda.DevicePtr
	floats int
}

// NewOut returns an empty output buffer on the store's context; it
// allocates on its first gather.
func (s *Store) NewOut() *Out { return &Out{c: s.c} }

// reserve makes o hold at least floats floats.
func (o *Out) reserve(floats int) error { return growDevice(o.c, &o.ptr, &o.floats, floats, 4) }

// growDevice makes the device buffer *p of *n elements of size bytes hold at
// least want: it frees it and allocates max(want, 2·n) elements, so that
// a growing demand reallocates O(log) times. The contents are not kept.
func growDevice(c *cuda.Context, p *cuda.DevicePtr, n *int, want, size int) error {
	if want <= *n {
		return nil
	}
	want = max(want, 2**n)
	if *p != 0 {
		if err := c.Free(*p); err != nil {
			return err
		}
		*p, *n = 0, 0
	}
	q, err := c.Alloc(int64(size * want))
	if err != nil {
		return err
	}
	*p, *n = q, want
	return nil
}

// Free frees the buffer's device memory; a later gather allocates anew.
func (o *Out) Free() error {
	if o.ptr == 0 {
		return nil
	}
	p := o.ptr
	o.ptr, o.floats = 0, 0
	return o.c.Free(p)
}

// Batch is a minibatch's input matrix in device memory.
type Batch struct {
	// Ptr addresses Rows×Cols float32, row-major and contiguous, in the
	// gather's output buffer: valid until the next gather into the same
	// Out (for Gather, the store's own: the next Gather) or its Free.
	Ptr        cuda.DevicePtr
	Rows, Cols int
	// Counts are the store's counts of the fetch (alltoall.Counts).
	Counts alltoall.Counts
	// Reads are the rows each tier served.
	Reads Reads
}

// Store is one rank's tiered device feature store. It is not safe for
// concurrent use.
type Store struct {
	c      *cuda.Context
	fs     *alltoall.Store
	fn     *cuda.Function
	cols   int
	half   bool           // the tiers hold IEEE half rows (an F16 store), m16; else float32 rows, m32
	nDev   int            // rows of the device tier
	dev    cuda.DevicePtr // nDev×cols elements (0 when nDev == 0)
	m32    mapped[float32]
	m16    mapped[uint16]
	done   *cuda.Event    // recorded after each gather's kernel
	busy   bool           // done recorded and not yet waited for
	out    Out            // Gather's output buffer
	idx    cuda.DevicePtr // tier then slot arrays, 2·idxCap int32
	idxCap int            // positions
	tier   []int32        // host staging of the per-row tiers
	slot   []int32        // and slots
	total  Reads          // all gathers so far
}

// mapped holds the two mapped host tiers of a store with rows of T.
type mapped[T cuda.Elem] struct {
	host   *cuda.Mapped[T] // the host tier (nil when empty)
	remote *cuda.Mapped[T] // the remote tier (nil until needed)
}

// New builds the device feature store of fs on c: the device tier (the
// hottest fs.Tiers()[0].Rows resident rows) in device memory, the rest of
// the resident rows in mapped host memory, both in the store's dtype: an
// F16 store's tiers hold its half-precision rows (half the memory of
// float32), which the gather converts to float32 on the device. It does
// not communicate. It returns an error wrapping alltoall.ErrNotF32 for a
// sparse store, or the CUDA error of an allocation, copy or the kernel's
// compilation.
func New(c *cuda.Context, fs *alltoall.Store) (s *Store, err error) {
	half := fs.DType() == alltoall.F16
	var rows32 []float32
	var rows16 []uint16
	if half {
		rows16, err = fs.ResidentF16()
	} else {
		rows32, err = fs.ResidentF32()
	}
	if err != nil {
		return nil, fmt.Errorf("tier: %w", err)
	}
	cols := fs.Cols()
	if cols <= 0 {
		return nil, fmt.Errorf("tier: a feature store of %d columns", cols)
	}
	mod, err := c.Compile(kernels.Source(), "kernels.cu")
	if err != nil {
		return nil, err
	}
	s = &Store{c: c, fs: fs, cols: cols, half: half, nDev: fs.Tiers()[0].Rows, out: Out{c: c}}
	if s.fn, err = mod.Function(s.kernel()); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		}
	}()
	if s.done, err = c.NewEvent(); err != nil {
		return nil, err
	}
	if half {
		s.dev, err = place(c, &s.m16, rows16, s.nDev*cols)
	} else {
		s.dev, err = place(c, &s.m32, rows32, s.nDev*cols)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// place copies rows[:split] into new device memory, whose address it
// returns (0 when split is 0), and the rest into m's new mapped host tier
// (none when empty).
func place[T cuda.Elem](c *cuda.Context, m *mapped[T], rows []T, split int) (cuda.DevicePtr, error) {
	var dev cuda.DevicePtr
	if split > 0 {
		var err error
		if dev, err = c.Alloc(cuda.Bytes[T](split)); err != nil {
			return 0, err
		}
		if err = cuda.CopyHtoD(c, dev, rows[:split]); err != nil {
			return 0, errors.Join(err, c.Free(dev))
		}
	}
	if len(rows) > split {
		h, err := cuda.HostMapped[T](c, len(rows)-split)
		if err != nil {
			return 0, errors.Join(err, c.Free(dev))
		}
		copy(h.Host, rows[split:])
		m.host = h
	}
	return dev, nil
}

// kernel returns the name of the gather kernel.
func (s *Store) kernel() string {
	if s.half {
		return "gather_rows_f16"
	}
	return "gather_rows"
}

// elemBytes returns the bytes of one feature value in the tiers.
func (s *Store) elemBytes() int64 {
	if s.half {
		return 2
	}
	return 4
}

// Cols returns the number of features per row.
func (s *Store) Cols() int { return s.cols }

// TierRows returns the rows held by the device and the host tier.
func (s *Store) TierRows() (device, host int) {
	return s.nDev, s.fs.OwnRows() + s.fs.CachedRows() - s.nDev
}

// Half reports whether the tiers hold half-precision rows (an F16 feature
// store); the gathered matrix is float32 either way.
func (s *Store) Half() bool { return s.half }

// Reads returns the rows and bytes all gathers so far read from each tier.
func (s *Store) Reads() Reads { return s.total }

// wait waits for the previous gather's kernel, which reads the remote
// tier and the index arrays.
func (s *Store) wait() error {
	if !s.busy {
		return nil
	}
	s.busy = false
	return s.done.Synchronize()
}

// Gather is GatherTo into the store's own output buffer.
func (s *Store) Gather(ids []int64) (Batch, error) { return s.GatherTo(&s.out, ids) }

// GatherTo builds the input matrix of ids (global vertex ids) in device
// memory, in out (from NewOut; grown as needed): row i is vertex ids[i]'s
// features as float32, read by gather_rows (gather_rows_f16, converting
// each half to float32, for an F16 store) from the device tier, the host
// tier or the remote tier, into which the rows of other ranks are fetched
// first, in the store's dtype (FetchSlots or FetchSlotsF16). The kernel
// runs on the default stream; work the caller enqueues after it there
// sees the result.
//
// It is collective over the feature store's communicator, like
// alltoall.Store.Fetch (every rank calls Gather, GatherTo, Fetch or
// FetchSlots the same number of times), with the same messages and
// counts. It returns an error if communication or CUDA fails. It will
// panic if an id is outside [0, n).
func (s *Store) GatherTo(out *Out, ids []int64) (Batch, error) {
	if err := s.wait(); err != nil {
		return Batch{}, err
	}
	n := len(ids)
	s.tier, s.slot = grow(s.tier, n), grow(s.slot, n)
	var remoteErr error
	var cnt alltoall.Counts
	var err error
	if s.half {
		cnt, err = s.fs.FetchSlotsF16(s.slot, ids, remoteBuf(s.c, &s.m16, s.cols, &remoteErr))
	} else {
		cnt, err = s.fs.FetchSlots(s.slot, ids, remoteBuf(s.c, &s.m32, s.cols, &remoteErr))
	}
	if err == nil {
		err = remoteErr
	}
	if err != nil {
		return Batch{}, err
	}
	var r Reads
	for i, sl := range s.slot {
		switch {
		case sl < 0:
			s.tier[i], s.slot[i] = Remote, ^sl
			r.RemoteRows++
		case int(sl) < s.nDev:
			s.tier[i] = Device
			r.DeviceRows++
		default:
			s.tier[i], s.slot[i] = Host, sl-int32(s.nDev)
			r.HostRows++
		}
	}
	rb := s.elemBytes() * int64(s.cols)
	r.DeviceBytes, r.HostBytes, r.RemoteBytes = r.DeviceRows*rb, r.HostRows*rb, r.RemoteRows*rb
	s.total = s.total.Add(r)
	b := Batch{Rows: n, Cols: s.cols, Counts: cnt, Reads: r}
	if n == 0 {
		return b, nil
	}
	if err := s.reserve(n); err != nil {
		return Batch{}, err
	}
	if err := out.reserve(n * s.cols); err != nil {
		return Batch{}, err
	}
	if err := cuda.CopyHtoD(s.c, s.idx, s.tier); err != nil {
		return Batch{}, err
	}
	dSlot := s.idx + cuda.DevicePtr(4*s.idxCap)
	if err := cuda.CopyHtoD(s.c, dSlot, s.slot); err != nil {
		return Batch{}, err
	}
	host, remote := s.m32.devs()
	if s.half {
		host, remote = s.m16.devs()
	}
	const warps = 4 // per block of 128 threads: one warp per row
	grid := uint32(min((n+warps-1)/warps, 1<<16))
	c := int64(s.cols)
	if err := s.fn.Launch([3]uint32{grid, 1, 1}, [3]uint32{32 * warps, 1, 1}, 0, nil,
		out.ptr, s.dev, c, host, c, remote, c, s.idx, dSlot, int32(n), int32(s.cols)); err != nil {
		return Batch{}, fmt.Errorf("tier: %s: %w", s.kernel(), err)
	}
	if err := s.done.Record(nil); err != nil {
		return Batch{}, err
	}
	s.busy = true
	b.Ptr = out.ptr
	return b, nil
}

func grow(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// devs returns the device addresses of the host and the remote tier (0
// for one not allocated).
func (m *mapped[T]) devs() (host, remote cuda.DevicePtr) {
	if m.host != nil {
		host = m.host.Dev
	}
	if m.remote != nil {
		remote = m.remote.Dev
	}
	return host, remote
}

// remoteBuf returns the remote callback of FetchSlots: it grows m's remote
// tier to m rows of cols and returns it; on a CUDA error, which it keeps in
// *errp, it returns a scratch buffer, since the rows still arrive
// (collective), to be dropped.
func remoteBuf[T cuda.Elem](c *cuda.Context, m *mapped[T], cols int, errp *error) func(rows int) []T {
	return func(rows int) []T {
		n := rows * cols
		if n > m.remoteCap() {
			*errp = m.growRemote(c, n)
		}
		if *errp != nil || rows == 0 {
			return make([]T, n)
		}
		return m.remote.Host
	}
}

func (m *mapped[T]) remoteCap() int {
	if m.remote == nil {
		return 0
	}
	return len(m.remote.Host)
}

// growRemote replaces the remote tier by one of at least n elements.
func (m *mapped[T]) growRemote(c *cuda.Context, n int) error {
	n = max(n, 2*m.remoteCap(), 1024)
	if m.remote != nil {
		if err := m.remote.Free(); err != nil {
			return err
		}
		m.remote = nil
	}
	r, err := cuda.HostMapped[T](c, n)
	if err != nil {
		return err
	}
	m.remote = r
	return nil
}

// free frees both mapped tiers.
func (m *mapped[T]) free() error {
	var errs []error
	for _, p := range []**cuda.Mapped[T]{&m.host, &m.remote} {
		if *p != nil {
			errs = append(errs, (*p).Free())
			*p = nil
		}
	}
	return errors.Join(errs...)
}

// reserve makes the index buffers hold n rows (8 bytes a row: a tier and
// a slot).
func (s *Store) reserve(n int) error { return growDevice(s.c, &s.idx, &s.idxCap, n, 8) }

// Close waits for the last gather and frees the store's device and mapped
// memory; the feature store is left as it was.
func (s *Store) Close() error {
	errs := []error{}
	if s.done != nil {
		errs = append(errs, s.wait(), s.done.Destroy())
		s.done = nil
	}
	errs = append(errs, s.out.Free())
	for _, p := range []*cuda.DevicePtr{&s.dev, &s.idx} {
		if *p != 0 {
			errs = append(errs, s.c.Free(*p))
			*p = 0
		}
	}
	errs = append(errs, s.m32.free(), s.m16.free())
	s.idxCap = 0
	return errors.Join(errs...)
}
