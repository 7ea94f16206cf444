package gpucheck

import (
	"math"
	"math/rand/v2"

	"gnnmpi/gpu"
	"gnnmpi/gpu/cuda"
)

// ZeroCopy is the PyTorch-Direct microbenchmark. It gathers rows random
// rows of width floats from a table of 4·rows rows in mapped host memory
// two ways: gather_rows reading the table zero-copy into device memory,
// and a CPU gather into a host buffer followed by one cuMemcpyHtoD of the
// block. Each is timed with CUDA events (best of iters, after one warm-up
// run). It returns the sizes, times and rates (GB/s) under the names
// rows, width, bytes, zero_copy_ms, cpu_gather_copy_ms, zero_copy_gbps,
// cpu_gather_copy_gbps and link_gbps (the PCIe link's theoretical rate
// from NVML, 0 when unknown), and an error only if the benchmark could
// not run or the two results differ.
//
// ZeroCopy will panic if rows, width or iters is less than 1.
func ZeroCopy(d *Device, r *rand.Rand, rows, width, iters int) (map[string]float64, error) {
	if rows < 1 || width < 1 || iters < 1 {
		panic("gpucheck: rows, width and iters must be positive")
	}
	c := d.Ctx
	table, err := cuda.HostMapped[float32](c, 4*rows*width)
	if err != nil {
		return nil, err
	}
	defer table.Free()
	for k := range table.Host {
		table.Host[k] = float32(k % 1021)
	}
	tier, slot := make([]int32, rows), make([]int32, rows)
	for i := range slot {
		tier[i], slot[i] = 1, int32(r.IntN(4*rows))
	}
	fn, err := d.Kernels.Function("gather_rows")
	if err != nil {
		return nil, err
	}
	bufs := &devBufs{c: c}
	defer bufs.free()
	pt, err := devUpload(bufs, tier)
	if err != nil {
		return nil, err
	}
	ps, err := devUpload(bufs, slot)
	if err != nil {
		return nil, err
	}
	zc, err := c.Alloc(int64(4 * rows * width))
	if err != nil {
		return nil, err
	}
	bufs.ptrs = append(bufs.ptrs, zc)
	cp, err := c.Alloc(int64(4 * rows * width))
	if err != nil {
		return nil, err
	}
	bufs.ptrs = append(bufs.ptrs, cp)
	start, err := c.NewEvent()
	if err != nil {
		return nil, err
	}
	defer start.Destroy()
	end, err := c.NewEvent()
	if err != nil {
		return nil, err
	}
	defer end.Destroy()
	timed := func(f func() error) (float64, error) {
		best := math.Inf(1)
		for range iters + 1 { // the first run warms up
			if err := start.Record(nil); err != nil {
				return 0, err
			}
			if err := f(); err != nil {
				return 0, err
			}
			if err := end.Record(nil); err != nil {
				return 0, err
			}
			if err := end.Synchronize(); err != nil {
				return 0, err
			}
			ms, err := cuda.Elapsed(start, end)
			if err != nil {
				return 0, err
			}
			best = min(best, float64(ms))
		}
		return best, nil
	}
	w := int64(width)
	grid := uint32(min((rows+3)/4, 1<<16))
	zcMS, err := timed(func() error {
		return fn.Launch([3]uint32{grid, 1, 1}, [3]uint32{128, 1, 1}, 0, nil, zc, cuda.DevicePtr(0), w, table.Dev, w,
			cuda.DevicePtr(0), w, pt, ps, int32(rows), int32(width))
	})
	if err != nil {
		return nil, err
	}
	block := make([]float32, rows*width)

	cpMS, err := timed(func() error {
		for i, s := range slot {
			copy(block[i*width:(i+1)*width], table.Host[int(s)*width:][:width])
		}
		return cuda.CopyHtoD(c, cp, block)
	})
	if err != nil {
		return nil, err
	}

	gotZC, err := devDownload[float32](c, zc, rows*width)
	if err != nil {
		return nil, err
	}
	gotCP, err := devDownload[float32](c, cp, rows*width)
	if err != nil {
		return nil, err
	}
	bytes := float64(4 * rows * width)
	nums := map[string]float64{
		"rows": float64(rows), "width": float64(width), "bytes": bytes,
		"zero_copy_ms": zcMS, "cpu_gather_copy_ms": cpMS,
		"zero_copy_gbps": rateGBps(bytes, zcMS), "cpu_gather_copy_gbps": rateGBps(bytes, cpMS),
		"link_gbps": linkGBps(c.Device()),
	}
	if err := closeTo("zero-copy gather vs CPU gather", gotZC, gotCP, 0); err != nil {
		return nums, err
	}
	return nums, nil
}

// rateGBps returns bytes per ms milliseconds in GB/s, or 0 for no time.
func rateGBps(bytes, ms float64) float64 {
	if ms <= 0 {
		return 0
	}
	return bytes / (ms * 1e-3) / 1e9
}

// linkGBps returns the theoretical PCIe bandwidth of CUDA device ordinal
// from NVML, or 0 when NVML does not tell.
func linkGBps(ordinal int) float64 {
	devs, err := gpu.DiscoverSystem()
	if err != nil || ordinal >= len(devs) {
		return 0
	}
	l, err := gpu.LinkSystem(devs[ordinal].Index)
	if err != nil {
		return 0
	}
	return l.GBps()
}
