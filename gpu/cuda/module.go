package cuda

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"gnnmpi/gpu/internal/cudadl"
	"gnnmpi/internal/dl"
)

var (
	nvrtcOnce sync.Once
	nvrtc     *cudadl.NVRTC
	nvrtcErr  error

	ptxMu    sync.Mutex
	ptxCache = map[string][]byte{} // by source hash and arch: compiled once per process
)

func loadNVRTC() (*cudadl.NVRTC, error) {
	nvrtcOnce.Do(func() {
		nvrtc, nvrtcErr = cudadl.OpenNVRTC()
		if errors.Is(nvrtcErr, dl.ErrNotFound) {
			nvrtcErr = fmt.Errorf("%w: %w", ErrNoCUDA, nvrtcErr)
		}
	})
	return nvrtc, nvrtcErr
}

// Arch returns the NVRTC option naming the context's virtual architecture,
// e.g. --gpu-architecture=compute_80.
func (c *Context) Arch() string {
	return fmt.Sprintf("--gpu-architecture=compute_%d%d", c.major, c.minor)
}

// compile returns the PTX of src for arch, compiling it at most once per
// process.
func compile(src, name, arch string) ([]byte, error) {
	h := sha256.Sum256([]byte(src))
	key := string(h[:]) + arch
	ptxMu.Lock()
	defer ptxMu.Unlock()
	if ptx, ok := ptxCache[key]; ok {
		return ptx, nil
	}
	n, err := loadNVRTC()
	if err != nil {
		return nil, err
	}
	p, err := n.CreateProgram(src, name)
	if err != nil {
		return nil, err
	}
	defer n.DestroyProgram(p)
	if err := n.CompileProgram(p, []string{arch, "-default-device"}); err != nil {
		log, _ := n.ProgramLog(p)
		return nil, fmt.Errorf("cuda: compiling %s: %w\n%s", name, err, log)
	}
	ptx, err := n.PTX(p)
	if err != nil {
		return nil, err
	}
	ptxCache[key] = ptx
	return ptx, nil
}

// Module is compiled CUDA C loaded into a context.
type Module struct {
	c *Context
	m cudadl.Module
}

// Compile compiles the CUDA C source src (name: its file name in
// messages) with NVRTC for the device's compute capability and loads it.
// The PTX is compiled once per process and the module loaded once per
// context; later calls with the same source return the same Module, which
// Close unloads. A compilation error carries NVRTC's log.
func (c *Context) Compile(src, name string) (*Module, error) {
	arch := c.Arch()
	key := src + "\x00" + arch
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.modules[key]; ok {
		return m, nil
	}
	ptx, err := compile(src, name, arch)
	if err != nil {
		return nil, err
	}
	m := &Module{c: c}
	if err := c.do(func() (err error) { m.m, err = c.d.ModuleLoadData(ptx); return err }); err != nil {
		return nil, err
	}
	c.modules[key] = m
	return m, nil
}

// Function is a kernel of a Module.
type Function struct {
	c    *Context
	f    cudadl.Function
	name string
}

// Function looks up the extern "C" kernel name.
func (m *Module) Function(name string) (*Function, error) {
	f := &Function{c: m.c, name: name}
	if err := m.c.do(func() (err error) { f.f, err = m.c.d.ModuleGetFunction(m.m, name); return err }); err != nil {
		return nil, err
	}
	return f, nil
}

// Launch runs the kernel on a grid of grid blocks of block threads with
// shared bytes of dynamic shared memory, on s (nil: the default stream).
// Each argument must be a DevicePtr, int32, uint32, float32 or int64,
// matching the kernel's parameter (pointer, int, unsigned, float, long
// long); each is copied into C memory for cuLaunchKernel's kernelParams.
// It will panic on another argument type.
func (f *Function) Launch(grid, block [3]uint32, shared uint32, s *Stream, args ...any) error {
	params := make([][]byte, len(args))
	for i, a := range args {
		var b []byte
		switch v := a.(type) {
		case DevicePtr:
			b = binary.NativeEndian.AppendUint64(nil, uint64(v))
		case int64:
			b = binary.NativeEndian.AppendUint64(nil, uint64(v))
		case int32:
			b = binary.NativeEndian.AppendUint32(nil, uint32(v))
		case uint32:
			b = binary.NativeEndian.AppendUint32(nil, v)
		case float32:
			b = binary.NativeEndian.AppendUint32(nil, math.Float32bits(v))
		default:
			panic(fmt.Sprintf("cuda: kernel argument %d of %s has unsupported type %T", i, f.name, a))
		}
		params[i] = b
	}
	return f.c.do(func() error { return f.c.d.LaunchKernel(f.f, grid, block, shared, s.handle(), params) })
}
