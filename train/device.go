package train

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/gpu/cuda"
	"gnnmpi/gpu/gnn"
	"gnnmpi/gpu/tier"
	"gnnmpi/model"
	"gnnmpi/nccl"
	"gnnmpi/sampling"
	"gnnmpi/sparse"
)

// The minibatch step on a GPU (Config.Device DeviceCUDA). Each rank opens,
// with the openers main hands down (Backends), the CUDA device of its
// local rank (round-robin over the devices the
// driver sees: ranks may share one, as CUDA allows) and builds a gpu/gnn
// model from the host model's weights. In train, the device replaces the
// host model's forward, backward and optimizer step: the gradients are
// downloaded, summed over the ranks with the same Allreduce and uploaded
// (or with GradComm nccl summed on the device, below), and Adam runs on the device with the host optimizer's step count. The
// host model and optimizer get the device's weights and moments back at
// the end of every epoch, for checkpoints, and the next epoch uploads them
// again (a resume sets them on the host). Layer-wise inference
// (evaluation, --save-logits) computes each chunk's layer on the device
// (gnn.Model.InferLayer, from the host model's weights): the chunks, their
// exchanges and the assembled layer outputs stay on the host, the input
// layer's rows come from the tier store's gather on the device where a
// chunk fetches them, and the outputs come back to the host for the next
// layer. A layer whose halo is fetched in pieces (inferPieces) sums its
// sources' rows on the host and computes the layer from the sums on the
// device (gnn.Model.InferAggregated).
//
// With dense features, float32 or f16, a rank's feature store also goes
// on the device as a gpu/tier store: the hottest --gpu-frac of its resident rows
// in device memory, the rest in mapped page-locked host memory, and the
// loader builds each minibatch's input matrix on the device
// (tier.Store.GatherTo, where the CPU path calls the feature store's
// Fetch, with the same messages), zero-copy as PyTorch-Direct does: the
// rows of other ranks arrive in a mapped buffer and a kernel gathers from
// the three tiers, so no feature row is gathered or uploaded by the CPU.
// Each loader slot has its own output buffer (loader.go). With f16
// features the tiers hold the half-precision rows (half the device and
// mapped host memory), the rows of other ranks arrive in half precision
// as they travel, and the gather kernel converts them to float32 on the
// device, exactly as the CPU path's Fetch does. Sparse (CSR) features
// stay on the host: the loader fetches each minibatch's CSR rows from the
// feature store as on the CPU path and the device model uploads them, only
// the nonzeros, for the input layer's sparse products
// (gnn.Model.StepSparse).

// With GradComm nccl, the gradients stay on the device: openDevice creates
// an NCCL communicator over the ranks of the world communicator, and each
// step sums the device model's flat gradient buffer (gnn.Model.GradPtr) in
// place with one NCCL Allreduce on the communicator's own stream (after
// the default stream that wrote them is synchronized), then waits for it,
// instead of downloading the gradients, summing them over MPI and
// uploading them. The call is recorded on the world communicator's Stats
// (collective.Record) with the volume of the Allreduce it replaces, so the
// grad phase's bytes and the comm summary are those of GradComm mpi. The
// NCCL communicator is freed with the device.

// validateGradComm checks GradComm: nccl sums device buffers, so it needs
// Device cuda.
func (c *Config) validateGradComm() error {
	if c.GradComm == "" {
		return nil
	}
	g, err := ParseGradComm(string(c.GradComm))
	if err != nil {
		return err
	}
	if g == GradCommNCCL && c.Device != DeviceCUDA {
		return settingErrorf("train: %s %s sums the gradients on the GPU and needs %s %s (got %s %s; use %s %s)",
			SettingGradComm, GradCommNCCL, SettingDevice, DeviceCUDA, SettingDevice, cmp.Or(c.Device, DeviceCPU), SettingGradComm, GradCommMPI)
	}
	return nil
}

// validateDevice checks Device and what runs on it.
func (c *Config) validateDevice() error {
	if c.Device == "" || c.Device == DeviceCPU {
		return nil
	}
	if _, err := ParseDevice(string(c.Device)); err != nil {
		return err
	}
	if err := gnn.Check(c.Model); err != nil {
		// gpu/gnn names model.Config's fields; say which setting it is.
		switch {
		case c.Model.Normalize:
			return settingErrorf("train: %s is %w (use %s %s)", SettingNormalize, gnn.ErrUnsupported, SettingDevice, DeviceCPU)
		}
		return fmt.Errorf("train: %w", err)
	}
	if c.Optimizer != OptimizerAdam {
		return settingErrorf("train: %s %s is %w (the device runs Adam; use %s %s or %s %s)", SettingOptimizer, c.Optimizer, gnn.ErrUnsupported, SettingOptimizer, OptimizerAdam, SettingDevice, DeviceCPU)
	}
	return nil
}

// Backends are the GPU libraries that training opens with Config.Device
// DeviceCUDA and Config.GradComm GradCommNCCL. Only main picks concrete
// backends (STYLE.md §2): it hands down cuda.DeviceCount, cuda.Open and
// nccl.New, through cli, in Config.Backends, and train opens nothing of
// its own. Tests pass the same functions, which load the fake libraries
// of gpu/gputest and nccl/nccltest when pointed at them. A field left nil
// makes the run that needs it fail on every rank.
type Backends struct {
	// CUDADeviceCount returns the number of CUDA devices the driver sees,
	// or the error of loading the driver (cuda.DeviceCount's names
	// libcuda.so.1).
	CUDADeviceCount func() (int, error)
	// OpenCUDA opens CUDA device i, 0 ≤ i < CUDADeviceCount(), and returns
	// its context, which the caller closes (cuda.Open).
	OpenCUDA func(i int) (*cuda.Context, error)
	// NewNCCL creates an NCCL communicator over the ranks of world whose
	// buffers live in dev, which the caller frees (nccl.New). It is
	// collective over world; every rank gets the same error.
	NewNCCL func(world collective.Comm, dev nccl.DeviceMemory) (*nccl.Comm, error)
}

// device is a rank's GPU state.
type device struct {
	ctx  *cuda.Context
	m    *gnn.Model
	tier *tier.Store // the feature rows on the device (dense features)
	adam *model.Adam // the host optimizer: step count, hyperparameters, moments between epochs
	w    []float32   // host staging of the weights
	nccl *nccl.Comm  // the gradient Allreduce with GradComm nccl, else nil
}

// openDevice opens this rank's device and builds the device model, when
// Config.Device is DeviceCUDA. It is collective over t.c: a rank that
// cannot (no libcuda, no cuBLAS) makes every rank fail.
func (t *trainer) openDevice() error {
	if t.cfg.Device != DeviceCUDA {
		return nil
	}
	local, _, err := collective.LocalRank(t.c)
	if err != nil {
		return err
	}
	err = t.newDevice(local)
	if err := collective.Agree(t.c, err); err != nil {
		return errors.Join(err, t.closeDevice())
	}
	if t.cfg.GradComm == GradCommNCCL {
		return t.openNCCL()
	}
	return nil
}

// openNCCL creates the NCCL communicator that sums the device gradients,
// over the ranks of t.c. It is collective: when libnccl is missing or the
// communicator cannot be made on any rank, every rank fails with the
// error. Its setup traffic goes over t.c undecorated, uncounted, as
// nccl.New's does.
func (t *trainer) openNCCL() error {
	var nc *nccl.Comm
	err := errors.New("no NCCL backend was handed down (Config.Backends.NewNCCL is nil)")
	if open := t.cfg.Backends.NewNCCL; open != nil {
		// ncclCommInitRank takes the calling thread's current device:
		// inside Do, this rank's.
		err = t.dev.ctx.Do(func() (err error) {
			nc, err = open(t.c, cuda.Memory{Ctx: t.dev.ctx})
			return err
		})
	}
	// nccl.New refuses ranks sharing a GPU on every rank alike, before
	// NCCL is called.
	shared := errors.Is(err, nccl.ErrSharedDevice)
	err = collective.Agree(collective.Unwrap(t.c), err)
	if err != nil {
		if nc != nil {
			err = errors.Join(err, nc.Free())
		}
		serr := settingErrorf("train: %s %s: %w", SettingGradComm, GradCommNCCL, err)
		if shared {
			serr = settingErrorf("train: %s %s: %w; run one rank per GPU (at most as many ranks per node as it has GPUs) or use %s %s",
				SettingGradComm, GradCommNCCL, err, SettingGradComm, GradCommMPI)
		}
		return errors.Join(serr, t.closeDevice())
	}
	t.dev.nccl = nc
	return nil
}

// allreduceDevice sums the device gradients over the ranks with NCCL, in
// place, and waits for the sum; the call is counted on t.c's Stats under
// its current phase as the Allreduce of the same gradients on t.c.
func (t *trainer) allreduceDevice() error {
	start := time.Now()
	n := t.dev.m.NumParams()
	// The gradients are written on the default stream and summed on the
	// NCCL communicator's own stream, which does not wait for it.
	err := t.dev.ctx.Synchronize()
	if err == nil {
		err = t.dev.nccl.AllreduceDevice(uintptr(t.dev.m.GradPtr()), n, collective.Float32, collective.Sum)
	}
	if err == nil {
		err = t.dev.nccl.Sync()
	}
	sent, recv := collective.AllreduceVolume(t.c.Rank(), t.c.Size(), n, collective.Float32.Size())
	collective.Record(t.c, collective.OpAllreduce, sent, recv, time.Since(start))
	return err
}

// newDevice opens the device of local rank local and the model on it.
func (t *trainer) newDevice(local int) error {
	adam, ok := t.opt.(*model.Adam)
	if !ok {
		return fmt.Errorf("train: the device runs Adam, not %T", t.opt)
	}
	be := t.cfg.Backends
	if be.CUDADeviceCount == nil || be.OpenCUDA == nil {
		return settingErrorf("train: %s %s: no CUDA backend was handed down (Config.Backends.CUDADeviceCount or OpenCUDA is nil)", SettingDevice, DeviceCUDA)
	}
	n, err := be.CUDADeviceCount()
	if err != nil {
		return settingErrorf("train: %s %s: %w", SettingDevice, DeviceCUDA, err)
	}
	if n < 1 {
		return settingErrorf("train: %s %s: the CUDA driver sees no device", SettingDevice, DeviceCUDA)
	}
	ctx, err := be.OpenCUDA(local % n)
	if err != nil {
		return settingErrorf("train: %s %s: %w", SettingDevice, DeviceCUDA, err)
	}
	t.dev = &device{ctx: ctx, adam: adam}
	mc := t.m.Config()
	if t.dev.m, err = gnn.New(ctx, mc); err != nil {
		return settingErrorf("train: %s %s: %w", SettingDevice, DeviceCUDA, err)
	}
	if !t.store.Sparse() {
		if t.dev.tier, err = tier.New(ctx, t.store); err != nil {
			return settingErrorf("train: %s %s: the feature tiers: %w", SettingDevice, DeviceCUDA, err)
		}
	}
	return nil
}

// closeDevice frees the device model and context, if any.
func (t *trainer) closeDevice() error {
	d := t.dev
	if d == nil {
		return nil
	}
	t.dev = nil
	var errs []error
	for _, s := range t.slots {
		if s.out != nil {
			errs = append(errs, s.out.Free())
			s.out, s.x.gpu = nil, tier.Batch{}
		}
	}
	if d.tier != nil {
		errs = append(errs, d.tier.Close())
	}
	if d.nccl != nil {
		errs = append(errs, d.nccl.Free())
	}
	if d.m != nil {
		errs = append(errs, d.m.Close())
	}
	return errors.Join(append(errs, d.ctx.Close())...)
}

// upload copies the host model's weights and optimizer moments to the
// device (at the start of an epoch).
func (d *device) upload(m *model.Model) error {
	return errors.Join(d.loadWeights(m), d.m.LoadAdam(d.adam))
}

// download copies the device's weights and moments into the host model
// and optimizer (at the end of an epoch).
func (d *device) download(m *model.Model) error {
	d.w = dense.Grow(d.w, d.m.NumParams())
	if err := errors.Join(d.m.StoreWeights(d.w), d.m.StoreAdam(d.adam)); err != nil {
		return err
	}
	m.SetWeights(d.w)
	return nil
}

// loadWeights copies the host model's weights to the device (upload, and
// before inference on it).
func (d *device) loadWeights(m *model.Model) error {
	d.w = m.FlattenWeights(d.w[:0])
	return d.m.LoadWeights(d.w)
}

// inferLayer computes layer l of layer-wise inference over a chunk's
// adjacency a on the device (gnn.Model.InferLayer) and returns the chunk's
// output rows on the host. Its input rows are those the tier store
// gathered on the device (xg, when set), the input layer's sparse rows
// (xs, when not nil), or else the host rows x.
func (d *device) inferLayer(l int, a *sparse.CSR, x *dense.Matrix, xs *sparse.Matrix[float32], xg tier.Batch) (*dense.Matrix, error) {
	switch {
	case xg.Ptr != 0:
		return d.m.InferLayerDevice(l, a, xg.Ptr, xg.Rows)
	case xs != nil:
		return d.m.InferLayerSparse(a, xs)
	default:
		return d.m.InferLayer(l, a, x)
	}
}

// deviceBackward is backward on the device: it leaves the gradients of
// minibatch i of epoch on the device and adds its loss and accuracy to ep,
// with the same dropout stream, labels and scale as backward. The input
// rows are those the tier store gathered on the device (x.gpu), the sparse
// host rows x.csr (uploaded in CSR form), or without a tier store the host
// rows x.dense, uploaded.
func (t *trainer) deviceBackward(ep *epochState, epoch, i int, seeds []int64, mb *sampling.MiniBatch, x inputs) error {
	if len(seeds) == 0 {
		return t.dev.m.ZeroGrad()
	}
	drops := dropStream(t.cfg.Seed, epoch, i)
	labels := make([]int32, len(seeds))
	for k, g := range seeds {
		labels[k] = t.d.Label(g)
	}
	scale := float32(float64(len(seeds)) / float64(t.sched.sizes[i]))
	var res gnn.Result
	var err error
	switch {
	case t.dev.tier != nil:
		res, err = t.dev.m.StepDevice(t.blocks(mb, x.deg), dropIDs(mb), x.gpu.Ptr, x.gpu.Rows, labels, scale, drops)
	case x.csr != nil:
		res, err = t.dev.m.StepSparse(t.blocks(mb, x.deg), dropIDs(mb), x.csr, labels, scale, drops)
	default:
		res, err = t.dev.m.Step(t.blocks(mb, x.deg), dropIDs(mb), x.dense, labels, scale, drops)
	}
	if err != nil {
		return err
	}
	ep.count(res.Loss, model.Correct(res.Logits, labels), len(seeds))
	return nil
}
