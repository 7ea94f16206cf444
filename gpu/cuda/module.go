package cuda

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"gnnmpi/gpu/internal/cudadl"
	"gnnmpi/internal/dl"
)

var (
	nvrtcOnce  sync.Once
	nvrtc      *cudadl.NVRTC
	nvrtcArchs []int // the architectures NVRTC compiles for, ascending
	nvrtcErr   error

	imageMu    sync.Mutex
	imageCache = map[string][]byte{} // by source hash and -arch option: compiled once per process
)

// loadNVRTC loads NVRTC and learns the architectures it compiles for,
// once per process.
func loadNVRTC() (*cudadl.NVRTC, []int, error) {
	nvrtcOnce.Do(func() {
		nvrtc, nvrtcErr = cudadl.OpenNVRTC()
		if errors.Is(nvrtcErr, dl.ErrNotFound) {
			nvrtcErr = fmt.Errorf("%w: %w", ErrNoCUDA, nvrtcErr)
		}
		if nvrtcErr == nil {
			nvrtcArchs, nvrtcErr = supportedArchs(nvrtc)
		}
	})
	return nvrtc, nvrtcArchs, nvrtcErr
}

// supportedArchs returns the architectures n compiles for, as
// 10·major + minor in ascending order: nvrtcGetSupportedArchs where n has
// it (NVRTC 11.2 and later), else those of n's release (11.0 and 11.1
// compile for 3.5 to 8.0, 11.1 also 8.6; 10.x for 3.0 to 7.5).
func supportedArchs(n *cudadl.NVRTC) ([]int, error) {
	if n.HasSupportedArchs() {
		a, err := n.SupportedArchs()
		slices.Sort(a)
		return a, err
	}
	major, minor, err := n.Version()
	if err != nil {
		return nil, err
	}
	if major < 11 {
		return []int{30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75}, nil
	}
	a := []int{35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80}
	if major > 11 || minor >= 1 {
		a = append(a, 86)
	}
	return a, nil
}

// target returns the highest of archs (ascending) that is at most cc, and
// false when there is none.
func target(archs []int, cc int) (int, bool) {
	for i := len(archs) - 1; i >= 0; i-- {
		if archs[i] <= cc {
			return archs[i], true
		}
	}
	return 0, false
}

// errNoCUBIN is compile's error when NVRTC gave an empty CUBIN.
var errNoCUBIN = errors.New("NVRTC gave no CUBIN")

// compile returns the image of src that n compiles with opt, -arch=sm_XY
// (cubin true: the CUBIN) or -arch=compute_XY (the PTX), compiling it at
// most once per process.
func compile(n *cudadl.NVRTC, src, name, opt string, cubin bool) ([]byte, error) {
	h := sha256.Sum256([]byte(src))
	key := string(h[:]) + "\x00" + opt
	imageMu.Lock()
	defer imageMu.Unlock()
	if img, ok := imageCache[key]; ok {
		return img, nil
	}
	p, err := n.CreateProgram(src, name)
	if err != nil {
		return nil, err
	}
	defer n.DestroyProgram(p)
	if err := n.CompileProgram(p, []string{opt, "-default-device"}); err != nil {
		log, _ := n.ProgramLog(p)
		return nil, fmt.Errorf("cuda: compiling %s (%s): %w\n%s", name, opt, err, log)
	}
	var img []byte
	if cubin {
		img, err = n.CUBIN(p)
		if err == nil && len(img) == 0 {
			err = errNoCUBIN
		}
	} else {
		img, err = n.PTX(p)
	}
	if err != nil {
		return nil, err
	}
	imageCache[key] = img
	return img, nil
}

// Module is compiled CUDA C loaded into a context.
type Module struct {
	c     *Context
	m     cudadl.Module
	image string
}

// Image says what the module was loaded from: "CUBIN sm_XY", or
// "PTX compute_XY (…)" with the reason no CUBIN was loaded.
func (m *Module) Image() string { return m.image }

// Compile compiles the CUDA C source src (name: its file name in
// messages) with NVRTC and loads it. It compiles for the highest
// architecture NVRTC supports that is at most the device's compute
// capability: to a CUBIN (-arch=sm_XY), which the driver loads as it is,
// when NVRTC can give one (11.1 and later); else, or when the driver
// refuses the CUBIN (its code runs only on devices of the same major
// capability), to PTX (-arch=compute_XY), which the driver compiles for the
// device. Module.Image says which. So neither a driver older than NVRTC
// (which refuses its newer PTX) nor a device newer than NVRTC (whose
// architecture NVRTC refuses) stops the kernels.
//
// Each image is compiled once per process and the module loaded once per
// context; later calls with the same source return the same Module, which
// Close unloads. A compilation error carries NVRTC's log.
func (c *Context) Compile(src, name string) (*Module, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.modules[src]; ok {
		return m, nil
	}
	n, archs, err := loadNVRTC()
	if err != nil {
		return nil, err
	}
	cc := 10*c.major + c.minor
	arch, ok := target(archs, cc)
	if !ok {
		return nil, fmt.Errorf("cuda: %s compiles for none of the architectures up to the device's sm_%d (only %v)", n.Name(), cc, archs)
	}
	m := &Module{c: c}
	var why string // why no CUBIN was loaded
	switch {
	case !n.HasCUBIN():
		why = n.Name() + " has no nvrtcGetCUBIN"
	default:
		img, err := compile(n, src, name, fmt.Sprintf("-arch=sm_%d", arch), true)
		if err == nil {
			if err = c.load(m, img); err == nil {
				m.image = fmt.Sprintf("CUBIN sm_%d", arch)
				c.modules[src] = m
				return m, nil
			}
		} else if !errors.Is(err, errNoCUBIN) {
			return nil, err
		}
		why = fmt.Sprintf("CUBIN sm_%d: %v", arch, err)
	}
	img, err := compile(n, src, name, fmt.Sprintf("-arch=compute_%d", arch), false)
	if err != nil {
		return nil, err
	}
	if err := c.load(m, img); err != nil {
		return nil, fmt.Errorf("cuda: loading PTX compute_%d: %w (no CUBIN: %s)", arch, err, why)
	}
	m.image = fmt.Sprintf("PTX compute_%d (no CUBIN: %s)", arch, why)
	c.modules[src] = m
	return m, nil
}

// load loads img into m.
func (c *Context) load(m *Module, img []byte) error {
	return c.do(func() (err error) { m.m, err = c.d.ModuleLoadData(img); return err })
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
