package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/gpu/kernels"
)

const envImage = "GNNMPI_CUDA_TEST_IMAGE" // in TestImage's children: the image Compile must load

// oldNVRTC returns a directory holding the fake libcuda.so.1 and a fake
// libnvrtc.so built as NVRTC 11.0 (no nvrtcGetCUBIN, no
// nvrtcGetSupportedArchs).
func oldNVRTC(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	shim, err := filepath.Abs(filepath.Join("testdata", "shim.h"))
	require.NoError(t, err)
	out, err := exec.Command("gcc", "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-DGNNMPI_FAKE_NVRTC_OLD",
		"-DGNNMPI_SHIM=\""+shim+"\"", "-DGNNMPI_FAKE_DIR=\""+dir+"\"",
		"-o", filepath.Join(dir, "libnvrtc.so"), filepath.Join("testdata", "fakenvrtc.c")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.Symlink(filepath.Join(os.Getenv(envDir), "libcuda.so.1"), filepath.Join(dir, "libcuda.so.1")))
	return dir
}

// Compile loads a CUBIN for the highest architecture NVRTC supports up to
// the device's, and PTX for it where NVRTC has no CUBIN or the driver
// refuses it; the kernels then run. Each case runs in a child process on
// the fakes acting as another device (GNNMPI_FAKE_CC), driver
// (GNNMPI_FAKE_DRIVER) and NVRTC (GNNMPI_FAKE_NVRTC; see testdata). The
// PTX the fake NVRTC writes declares its release's PTX ISA, which the fake
// driver refuses when it is newer than its own, and the fake NVRTC refuses
// architectures its release does not know, as the real ones do.
func TestImage(t *testing.T) {
	if want := os.Getenv(envImage); want != "" {
		c := open(t)
		mod, err := c.Compile(kernels.Source(), "kernels.cu")
		require.NoError(t, err)
		require.Equal(t, want, strings.ReplaceAll(mod.Image(), os.Getenv(envDir)+"/", ""))
		return // the child runs TestGatherRows next, on this module
	}
	if os.Getenv(envChild) != "" {
		return
	}
	needFake(t)
	for _, tc := range []struct {
		name string
		env  []string
		old  bool // NVRTC 11.0, without the CUBIN and architecture functions
		want string
	}{
		{"current NVRTC and driver", nil, false, "CUBIN sm_80"},
		{"device newer than NVRTC: sm_121, NVRTC 12.8 knows sm_120",
			[]string{"GNNMPI_FAKE_CC=12.1", "GNNMPI_FAKE_NVRTC=12.8", "GNNMPI_FAKE_DRIVER=12090"}, false, "CUBIN sm_120"},
		{"NVRTC 12.4 newer than an 11.8 driver: its PTX 8.4 is refused",
			[]string{"GNNMPI_FAKE_DRIVER=11080"}, false, "CUBIN sm_80"},
		{"device a major newer than NVRTC: the sm_90 CUBIN does not load on sm_100",
			[]string{"GNNMPI_FAKE_CC=10.0", "GNNMPI_FAKE_DRIVER=12080"}, false,
			"PTX compute_90 (no CUBIN: CUBIN sm_90: libcuda.so.1: cuModuleLoadData: CUDA_ERROR_NO_BINARY_FOR_GPU)"},
		{"NVRTC 11.0 without nvrtcGetCUBIN and nvrtcGetSupportedArchs on sm_86",
			[]string{"GNNMPI_FAKE_CC=8.6"}, true, "PTX compute_80 (no CUBIN: libnvrtc.so has no nvrtcGetCUBIN)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{envChild + "=image", envImage + "=" + tc.want}, tc.env...)
			if tc.old {
				env = append(env, envDir+"="+oldNVRTC(t))
			}
			out := child(t, "(TestImage|TestGatherRows)", env...)
			require.Contains(t, out, "--- PASS: TestGatherRows")
		})
	}
}

// When neither image loads, the error names both refusals.
func TestImageRefused(t *testing.T) {
	if os.Getenv(envChild) == "refused" {
		c := open(t)
		_, err := c.Compile(kernels.Source(), "kernels.cu")
		require.Error(t, err)
		for _, s := range []string{"CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "compute_90"} {
			require.True(t, strings.Contains(err.Error(), s), "%v lacks %s", err, s)
		}
		return
	}
	if os.Getenv(envChild) != "" {
		return
	}
	needFake(t)
	// NVRTC 12.4 (newest sm_90, PTX 8.4) on an sm_100 device whose driver
	// is CUDA 11.8 (PTX 7.8).
	child(t, "TestImageRefused", envChild+"=refused", "GNNMPI_FAKE_CC=10.0", "GNNMPI_FAKE_DRIVER=11080")
}
