package mpitest

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/gpu/cuda"
	"gnnmpi/gpu/gputest"
	"gnnmpi/internal/dl"
	"gnnmpi/nccl"
)

// `train --device cuda` under mpirun at np 2 (both ranks on the one fake
// device) follows the CPU run's loss curve and sends the same bytes by
// phase, with the inputs gathered on the device from the feature tiers at
// every --gpu-frac, with and without --overlap, and reports the tier
// reads; with --feature-dtype f16 it follows the CPU's f16 run the same
// way, its tiers holding half-precision rows (half the bytes a row read);
// without the CUDA libraries every rank exits non-zero with an error
// naming libcuda.
func TestTrainDeviceMPI(t *testing.T) {
	skipUnlessMPI(t)
	gputest.Use(t) // the ranks inherit mpirun's environment
	const np = 2
	dir := t.TempDir()
	args := []string{"train", "--data", "data/cora", "--epochs", "3"}
	mc := filepath.Join(dir, "cpu.jsonl")
	// Dense rows on the CPU too (auto loads Cora's as CSR there, dense on
	// the device), so that the fetch bytes compare.
	r := mpirun(t, 3*time.Minute, np, bin, append(args, "--feature-format", "dense", "--metrics", mc)...)
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
	a, fa := readMetrics(t, mc)
	require.Len(t, a, 3)
	require.Nil(t, fa["gpu_reads"])
	var rowBytes float64 // of a host row read on the device, float32
	for _, overlap := range []bool{false, true} {
		for _, frac := range []string{"0", "0.5", "1"} {
			name := fmt.Sprintf("overlap=%v gpu-frac=%s", overlap, frac)
			mg := filepath.Join(dir, fmt.Sprintf("cuda-%v-%s.jsonl", overlap, frac))
			ga := append(args, "--feature-format", "dense", "--device", "cuda", "--gpu-frac", frac, fmt.Sprintf("--overlap=%v", overlap), "--metrics", mg)
			r = mpirun(t, 5*time.Minute, np, bin, ga...)
			require.Equal(t, 0, r.code, "%s stderr:\n%s", name, r.stderr)
			b, fb := readMetrics(t, mg)
			require.Len(t, b, 3, name)
			for i := range a {
				require.InEpsilon(t, a[i].Loss, b[i].Loss, 1e-4, "%s epoch %d", name, i+1)
			}
			require.Equal(t, "cuda", fb["config"].(map[string]any)["device"], name)
			wantBytes, gotBytes := fa["bytes_per_epoch"].(map[string]any), fb["bytes_per_epoch"].(map[string]any)
			for _, ph := range []string{"sample", "fetch", "grad"} {
				require.Equal(t, wantBytes[ph], gotBytes[ph], "%s: bytes of %s", name, ph)
			}
			reads, ok := fb["gpu_reads"].(map[string]any)
			require.True(t, ok, "%s: no gpu_reads in %v", name, fb)
			dev, host, remote := reads["device_rows"].(float64), reads["host_rows"].(float64), reads["remote_rows"].(float64)
			require.Positive(t, remote, name)
			rowBytes = reads["remote_bytes"].(float64) / remote
			switch frac {
			case "0":
				require.Zero(t, dev, name)
				require.Positive(t, host, name)
			case "1":
				require.Positive(t, dev, name)
				require.Zero(t, host, name)
			default:
				require.Positive(t, dev, name)
				require.Positive(t, host, name)
			}
		}
	}

	// GCN and GAT on dense rows, and GraphSAGE, GCN and GAT on Cora's CSR
	// rows (--feature-format auto), fetched on the host and uploaded for
	// the input layer's sparse products, follow the CPU run's losses.
	for _, tc := range []struct{ model, format string }{{"gcn", "dense"}, {"gat", "dense"}, {"sage", "auto"}, {"gcn", "auto"}, {"gat", "auto"}} {
		name := tc.model + "/" + tc.format
		ca := append(args, "--epochs", "2", "--model", tc.model, "--feature-format", tc.format)
		mc := filepath.Join(dir, tc.model+"-"+tc.format+"-cpu.jsonl")
		mg := filepath.Join(dir, tc.model+"-"+tc.format+"-cuda.jsonl")
		r = mpirun(t, 3*time.Minute, np, bin, append(ca, "--metrics", mc)...)
		require.Equal(t, 0, r.code, "%s stderr:\n%s", name, r.stderr)
		r = mpirun(t, 3*time.Minute, np, bin, append(ca, "--device", "cuda", "--metrics", mg)...)
		require.Equal(t, 0, r.code, "%s stderr:\n%s", name, r.stderr)
		a, _ := readMetrics(t, mc)
		b, fb := readMetrics(t, mg)
		require.Len(t, a, 2, name)
		require.Len(t, b, len(a), name)
		for i := range a {
			require.InEpsilon(t, a[i].Loss, b[i].Loss, 1e-4, "%s epoch %d", name, i+1)
		}
		require.Equal(t, "cuda", fb["config"].(map[string]any)["device"], name)
		if tc.format == "auto" {
			require.Nil(t, fb["gpu_reads"], "%s: CSR rows are not gathered from the tiers", name)
		}
	}

	half := append(args, "--feature-format", "dense", "--feature-dtype", "f16")
	mc = filepath.Join(dir, "cpu-f16.jsonl")
	r = mpirun(t, 3*time.Minute, np, bin, append(half, "--metrics", mc)...)
	require.Equal(t, 0, r.code, "f16 stderr:\n%s", r.stderr)
	a, fa = readMetrics(t, mc)
	mg := filepath.Join(dir, "cuda-f16.jsonl")
	r = mpirun(t, 5*time.Minute, np, bin, append(half, "--device", "cuda", "--gpu-frac", "0.5", "--overlap", "--metrics", mg)...)
	require.Equal(t, 0, r.code, "f16 on the device stderr:\n%s", r.stderr)
	b, fb := readMetrics(t, mg)
	require.Len(t, b, len(a))
	for i := range a {
		require.InEpsilon(t, a[i].Loss, b[i].Loss, 1e-4, "f16 epoch %d", i+1)
	}
	require.Equal(t, fa["bytes_per_epoch"].(map[string]any)["fetch"], fb["bytes_per_epoch"].(map[string]any)["fetch"], "f16: bytes of fetch")
	reads, ok := fb["gpu_reads"].(map[string]any)
	require.True(t, ok, "f16: no gpu_reads in %v", fb)
	for _, tr := range []string{"device", "host", "remote"} {
		rows := reads[tr+"_rows"].(float64)
		require.Positive(t, rows, "f16: %s rows", tr)
		require.Equal(t, rowBytes/2, reads[tr+"_bytes"].(float64)/rows, "f16: bytes a %s row", tr)
	}

	t.Setenv("GNNMPI_CUDA_LIBDIR", t.TempDir())
	if _, err := cuda.DeviceCount(); err == nil {
		t.Skip("a real libcuda is installed: cannot check the error without it")
	}
	r = mpirun(t, time.Minute, np, bin, append(args, "--device", "cuda")...)
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "libcuda")
	require.Contains(t, r.stderr, "--device cuda")
}

// `train --device cuda --grad-comm nccl` under mpirun at np 2 (fake CUDA
// with two devices, one per rank, fake NCCL over MPI, which takes the
// device current on the calling thread and refuses two ranks on one)
// sums the gradients on the device with NCCL and follows the loss curve
// of --grad-comm mpi, with the same bytes by phase in the metrics and the
// same per-rank communication summary; without libnccl the job exits
// non-zero with an error naming it and the flag.
func TestTrainDeviceNCCLMPI(t *testing.T) {
	skipUnlessMPI(t)
	gputest.Use(t) // the ranks inherit mpirun's environment
	t.Setenv(nccl.LibDirEnv, fakeNCCL(t))
	t.Setenv("GNNMPI_FAKE_CUDA_DEVICES", "2")
	const np = 2
	dir := t.TempDir()
	run := func(gc string) ([]epochLine, map[string]any, final) {
		m := filepath.Join(dir, gc+".jsonl")
		r := mpirun(t, 5*time.Minute, np, bin, "--json", "train", "--data", "data/cora", "--epochs", "3", "--device", "cuda", "--grad-comm", gc, "--metrics", m)
		require.Equal(t, 0, r.code, "--grad-comm %s stderr:\n%s", gc, r.stderr)
		e, f := readMetrics(t, m)
		require.Len(t, e, 3, gc)
		require.Equal(t, gc, f["config"].(map[string]any)["grad_comm"])
		return e, f, decode(t, r)
	}
	a, fa, sa := run("mpi")
	b, fb, sb := run("nccl")
	for i := range a {
		require.InEpsilon(t, a[i].Loss, b[i].Loss, 1e-4, "epoch %d", i+1)
	}
	wantBytes, gotBytes := fa["bytes_per_epoch"].(map[string]any), fb["bytes_per_epoch"].(map[string]any)
	require.Positive(t, gotBytes["grad"])
	require.Equal(t, wantBytes, gotBytes)
	require.Len(t, sb.Comm.PerRank, np)
	require.Equal(t, withoutTime(sa.Comm.PerRank), withoutTime(sb.Comm.PerRank))

	if l, err := dl.Open(nccl.LibNames...); err == nil {
		_ = l.Close()
		t.Skip("a real libnccl is installed: cannot check the error without it")
	}
	t.Setenv(nccl.LibDirEnv, t.TempDir())
	r := mpirun(t, time.Minute, np, bin, "train", "--data", "data/cora", "--epochs", "1", "--device", "cuda", "--grad-comm", "nccl")
	require.NotEqual(t, 0, r.code)
	// Every rank fails with the error (collective.Agree); the first to
	// report it ends the job, so one line may be all there is.
	require.Regexp(t, `rank \d: train: --grad-comm nccl: .*libnccl\.so\.2 not found`, r.stderr)
}

// With two ranks on one GPU (the fake CUDA's single device), which NCCL
// refuses, `train --grad-comm nccl` fails on every rank before NCCL is
// initialized, with an error naming the cause and both ways out.
func TestTrainDeviceNCCLSharedGPU(t *testing.T) {
	skipUnlessMPI(t)
	gputest.Use(t) // the ranks inherit mpirun's environment
	t.Setenv(nccl.LibDirEnv, fakeNCCL(t))
	t.Setenv("GNNMPI_FAKE_CUDA_DEVICES", "1")
	r := mpirun(t, 2*time.Minute, 2, bin, "train", "--data", "data/cora", "--epochs", "1", "--device", "cuda", "--grad-comm", "nccl")
	require.NotEqual(t, 0, r.code)
	require.Regexp(t, `rank \d: train: --grad-comm nccl: nccl: two ranks use the same GPU.*ranks 0 and 1 both use .*/0000:01:00\.0; run one rank per GPU .* or use --grad-comm mpi`, r.stderr)
	require.NotContains(t, r.stderr, "Duplicate GPU detected") // refused before NCCL was called
}
