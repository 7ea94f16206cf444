package cuda

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/gpu/internal/cublasdl"
	"gnnmpi/gpu/internal/cudadl"
	"gnnmpi/gpu/kernels"
)

// envReal names the root of an unpacked CUDA toolkit and driver userspace
// (Debian's libcuda1, libnvrtc11.2, libcublas11, libcusparse11 under
// usr/lib/x86_64-linux-gnu): bench/gpu/toolchain-check.sh sets it.
const envReal = "GNNMPI_REAL_CUDA"

// TestRealToolchain checks gnnmpi's bindings against NVIDIA's real
// libraries, without a GPU, when GNNMPI_REAL_CUDA names them: it runs
// TestRealToolchainChild in a child process whose loader path holds the
// real libraries and no fakes.
func TestRealToolchain(t *testing.T) {
	root := os.Getenv(envReal)
	if root == "" || os.Getenv(envChild) != "" {
		t.Skip("set " + envReal + " to an unpacked CUDA (bench/gpu/toolchain-check.sh)")
	}
	lib := filepath.Join(root, "usr/lib/x86_64-linux-gnu")
	out := child(t, "TestRealToolchainChild", envChild+"=real", envDir+"=",
		"LD_LIBRARY_PATH="+filepath.Join(lib, "nvidia/current")+":"+lib)
	t.Log(out)
}

// TestRealToolchainChild is TestRealToolchain's child.
func TestRealToolchainChild(t *testing.T) {
	if os.Getenv(envChild) != "real" {
		t.Skip("run by TestRealToolchain")
	}
	t.Run("Symbols", func(t *testing.T) {
		d, err := cudadl.OpenDriver()
		require.NoError(t, err, "every driver symbol resolves")
		v, err := d.DriverVersion()
		require.NoError(t, err)
		t.Logf("%s: driver API %d", d.Name(), v)
		n, err := cudadl.OpenNVRTC()
		require.NoError(t, err, "every NVRTC symbol resolves")
		t.Logf("%s", n.Name())
		b, err := cublasdl.OpenCUBLAS()
		require.NoError(t, err, "every cuBLAS symbol resolves")
		t.Logf("%s", b.Path())
		s, err := cublasdl.OpenCUSPARSE()
		require.NoError(t, err, "every cuSPARSE symbol resolves")
		t.Logf("%s", s.Path())
	})
	t.Run("NoDevice", func(t *testing.T) {
		n, err := DeviceCount()
		assert.Zero(t, n)
		require.ErrorIs(t, err, ErrNoCUDA)
		var e *cudadl.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "CUDA_ERROR_NO_DEVICE", e.Name, "%v", err)
		_, err = Open(0)
		assert.ErrorIs(t, err, ErrNoCUDA)
	})
	t.Run("Kernels", func(t *testing.T) {
		n, archs, err := loadNVRTC()
		require.NoError(t, err)
		major, minor, err := n.Version()
		require.NoError(t, err)
		t.Logf("NVRTC %d.%d, architectures %v", major, minor, archs)
		require.Contains(t, archs, 90, "NVRTC 11.8 supports sm_90")
		src := kernels.Source()
		for _, arch := range []string{"compute_70", "compute_80", "compute_90", "sm_70", "sm_80", "sm_90"} {
			opt := "--gpu-architecture=" + arch
			p, err := n.CreateProgram(src, "kernels.cu")
			require.NoError(t, err)
			err = n.CompileProgram(p, []string{opt, "-default-device"})
			log, lerr := n.ProgramLog(p)
			require.NoError(t, lerr)
			require.NoError(t, err, "%s:\n%s", arch, log)
			assert.Empty(t, strings.TrimSpace(log), "%s: NVRTC's log", arch)
			require.NoError(t, n.DestroyProgram(p))
			if !strings.HasPrefix(arch, "compute_") {
				// gnnmpi's own path to a CUBIN: an ELF image.
				cubin, err := compile(n, src, "kernels.cu", opt, true)
				require.NoError(t, err, arch)
				require.True(t, strings.HasPrefix(string(cubin), "\x7fELF"), "%s: the CUBIN is no ELF image", arch)
				continue
			}
			ptx, err := compile(n, src, "kernels.cu", opt, false) // gnnmpi's own path
			require.NoError(t, err, arch)
			params := ptxParams(string(ptx))
			for _, name := range kernels.Names {
				var want []string
				for _, p := range kernels.Params[name] {
					want = append(want, p.PTX())
				}
				assert.Equal(t, want, params[name], "%s: .param layout of %s", arch, name)
			}
			assert.Len(t, params, len(kernels.Names), "%s: entries in the PTX", arch)
		}
	})
}

var (
	entryRE = regexp.MustCompile(`(?s)\.entry\s+(\w+)\s*\((.*?)\)`)
	paramRE = regexp.MustCompile(`\.param\s+(\.\w+)\s+\w+`)
)

// ptxParams returns the .param types of every .entry in ptx, by name.
func ptxParams(ptx string) map[string][]string {
	out := map[string][]string{}
	for _, m := range entryRE.FindAllStringSubmatch(ptx, -1) {
		var ps []string
		for _, p := range paramRE.FindAllStringSubmatch(m[2], -1) {
			ps = append(ps, p[1])
		}
		out[m[1]] = ps
	}
	return out
}

// ptxParams reads the parameter list of each entry.
func TestPTXParams(t *testing.T) {
	ptx := ".visible .entry relu_forward(\n\t.param .u64 relu_forward_param_0,\n\t.param .f32 relu_forward_param_1\n)\n{\n}\n" +
		".visible .entry col_sum(\n\t.param .u32 col_sum_param_0\n)\n"
	assert.Equal(t, map[string][]string{"relu_forward": {".u64", ".f32"}, "col_sum": {".u32"}}, ptxParams(ptx))
}
