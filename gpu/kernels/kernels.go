// Package kernels holds gnnmpi's CUDA C kernels as source text (the .cu
// files beside this one, embedded), for gpu/cuda to compile at run time
// with NVRTC.
//
// # Overview
//
// gather.cu: gather_rows, the tiered feature gather (device-resident hot
// rows, a zero-copy mapped host tier and a mapped buffer of rows received
// from other ranks) with PyTorch-Direct's aligned warp reads.
// elementwise.cu: relu_forward, relu_backward, add_bias, scale_add,
// softmax_xent, adam_step, mul_mask (dropout) and col_sum (the bias
// gradient) for the device training step. Each kernel is
// extern "C" (its name is its symbol) and is followed by
// GNNMPI_KERNEL(name), which is empty under real NVRTC and registers a CPU
// launcher under the test shim (gpu/cuda/testdata/shim.h), so the same
// source runs on the fake CUDA. The kernels use no shared memory,
// __syncthreads, warp shuffles or atomics: the shim cannot run them.
package kernels

import (
	"embed"
	"sort"
	"strings"
)

//go:embed *.cu
var files embed.FS

// Names lists every kernel that Source defines.
var Names = []string{"gather_rows", "relu_forward", "relu_backward", "add_bias", "scale_add", "softmax_xent", "adam_step", "mul_mask", "col_sum"}

// Source returns every .cu file, in name order, concatenated into one
// compilation unit.
func Source() string {
	ents, err := files.ReadDir(".")
	if err != nil {
		panic("kernels: " + err.Error()) // embedded: cannot fail
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		src, err := files.ReadFile(n)
		if err != nil {
			panic("kernels: " + err.Error())
		}
		b.WriteString("// ---- " + n + "\n")
		b.Write(src)
		b.WriteString("\n")
	}
	return b.String()
}
