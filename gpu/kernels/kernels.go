// Package kernels holds gnnmpi's CUDA C kernels as source text (the .cu
// files beside this one, embedded), for gpu/cuda to compile at run time
// with NVRTC.
//
// # Overview
//
// gather.cu: gather_rows, the tiered feature gather (device-resident hot
// rows, a zero-copy mapped host tier and a mapped buffer of rows received
// from other ranks) with PyTorch-Direct's aligned warp reads, and
// gather_rows_f16, the same over tiers of half-precision rows, converted
// to float32 on the device.
// elementwise.cu: relu_forward, relu_backward, add_bias, scale_add,
// softmax_xent, adam_step, dropout_mask and mul_mask (dropout: the mask
// drawn on the device as model.Dropout.Mask draws it, and applied) and col_sum (the bias
// gradient) for the device training step.
// gat.cu: elu_forward and elu_backward, and the GAT layer's attention:
// gat_scores, gat_softmax (the edge softmax), gat_aggregate, and their
// backward passes gat_dalpha, gat_softmax_backward, gat_src_grad and
// diag_blocks (the attention vectors' gradients from one SGEMM). Each kernel is
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
var Names = []string{"gather_rows", "gather_rows_f16", "relu_forward", "relu_backward", "add_bias", "scale_add", "softmax_xent", "adam_step", "mul_mask", "dropout_mask", "col_sum",
	"elu_forward", "elu_backward", "gat_scores", "gat_softmax", "gat_aggregate", "gat_dalpha", "gat_softmax_backward", "gat_src_grad", "diag_blocks"}

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

// Param is the type of a kernel parameter, as the launchers pass it to
// cuda.Function.Launch.
type Param int

// The parameter types: Ptr is a device pointer (cuda.DevicePtr; any T *
// in CUDA C), Int32 is int32 (int), Int64 is int64 (long long) and
// Float32 is float32 (float).
const (
	Ptr Param = iota
	Int32
	Int64
	Float32
)

// PTX returns the type NVRTC gives the parameter in a PTX .param
// declaration: .u64, .u32 or .f32.
func (p Param) PTX() string {
	switch p {
	case Ptr, Int64:
		return ".u64"
	case Int32:
		return ".u32"
	case Float32:
		return ".f32"
	}
	panic("kernels: bad Param")
}

// Params holds each kernel's parameter types in order: what its launchers
// must pass. The tests check it against the CUDA C signatures and, with
// the real NVRTC, against the .param layout of the PTX.
var Params = map[string][]Param{
	"gather_rows":     {Ptr, Ptr, Int64, Ptr, Int64, Ptr, Int64, Ptr, Ptr, Int32, Int32},
	"gather_rows_f16": {Ptr, Ptr, Int64, Ptr, Int64, Ptr, Int64, Ptr, Ptr, Int32, Int32},
	"relu_forward":    {Ptr, Ptr, Int64},
	"relu_backward":   {Ptr, Ptr, Ptr, Int64},
	"add_bias":        {Ptr, Ptr, Int64, Int32},
	"scale_add":       {Ptr, Float32, Ptr, Int64},
	"softmax_xent":    {Ptr, Ptr, Ptr, Ptr, Int32, Int32, Float32},
	"adam_step":       {Ptr, Ptr, Ptr, Ptr, Int64, Float32, Float32, Float32, Float32, Float32, Float32},
	"mul_mask":        {Ptr, Ptr, Ptr, Int64},
	"dropout_mask":    {Ptr, Ptr, Ptr, Int64, Int32, Int64, Int32, Float32, Int32},
	"col_sum":         {Ptr, Ptr, Int64, Int32},

	"elu_forward":          {Ptr, Ptr, Int64},
	"elu_backward":         {Ptr, Ptr, Ptr, Int64},
	"gat_scores":           {Ptr, Ptr, Ptr, Ptr, Ptr, Int32, Int32, Int32, Int32},
	"gat_softmax":          {Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Int32, Int32, Float32},
	"gat_aggregate":        {Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Int32, Int32, Int32, Int32},
	"gat_dalpha":           {Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Int64, Int32, Int32, Int32},
	"gat_softmax_backward": {Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Int32, Int32, Float32},
	"gat_src_grad":         {Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Int32, Int32, Int32, Int32, Int32},
	"diag_blocks":          {Ptr, Ptr, Int32, Int32},
}
