package dl

// The libraries gnnmpi loads, one Search each: every CUDA and NCCL
// library is looked for the same way (see Search), in the explicit
// directories first, then the toolkit's, then the Python wheels', then on
// the loader's path. The sonames are those of CUDA 13, 12 and 11, newest
// first, then the unversioned development link.
//
// The wheel directories: CUDA 12 and 11 wheels (nvidia-cublas-cu12, …)
// put each library in its own package (site-packages/nvidia/cublas/lib,
// nvidia/cuda_nvrtc/lib, …); CUDA 13 wheels put all of them in
// nvidia/cu13/lib, except NCCL, which stays in nvidia/nccl/lib.

// Driver returns the search for the CUDA driver, libcuda.so.1: in
// $GNNMPI_CUDA_DRIVER_DIR, then $GNNMPI_CUDA_LIBDIR, then on the loader's
// path. The toolkit's lib64 holds only a stub libcuda.so (in stubs/),
// and the wheels hold none, so neither is searched.
func Driver() Search {
	return Search{
		Env:   []string{CUDADriverDirEnv, CUDALibDirEnv},
		Names: []string{"libcuda.so.1", "libcuda.so"},
	}
}

// NVRTC returns the search for the runtime compiler. NVRTC 11.2 to 11.8
// share the soname libnvrtc.so.11.2 (11.0 and 11.1 had their own); from
// CUDA 12 it is libnvrtc.so.<major>. NVRTC loads its builtins
// (libnvrtc-builtins.so.<major>.<minor>) with dlopen by soname when it
// compiles, and fails with NVRTC_ERROR_BUILTIN_OPERATION_FAILURE when the
// loader cannot find them: they are a Dep, loaded from NVRTC's directory.
func NVRTC() Search {
	return Search{
		Env:      []string{CUDALibDirEnv},
		Toolkit:  true,
		Wheels:   []string{"cu13", "cuda_nvrtc"},
		Names:    []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so.11.1", "libnvrtc.so.11.0", "libnvrtc.so"},
		Deps:     []Dep{{Pattern: "libnvrtc-builtins.so.{major}*"}},
		Fallback: []string{"/usr/local/cuda/lib64"},
	}
}

// CUBLAS returns the search for cuBLAS, whose libcublas.so.<major> needs
// libcublasLt.so.<major> of the same directory.
func CUBLAS() Search {
	return Search{
		Env:      []string{CUDALibDirEnv},
		Toolkit:  true,
		Wheels:   []string{"cu13", "cublas"},
		Names:    []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"},
		Deps:     []Dep{{Pattern: "libcublasLt.so.{major}*"}},
		Fallback: []string{"/usr/local/cuda/lib64"},
	}
}

// CUSPARSE returns the search for cuSPARSE: libcusparse.so.12 (CUDA 12 and
// 13) or libcusparse.so.11. CUDA 12's and 13's need libnvJitLink, which
// CUDA 12's wheels keep in nvidia/nvjitlink/lib.
func CUSPARSE() Search {
	return Search{
		Env:      []string{CUDALibDirEnv},
		Toolkit:  true,
		Wheels:   []string{"cu13", "cusparse"},
		Names:    []string{"libcusparse.so.12", "libcusparse.so.11", "libcusparse.so"},
		Deps:     []Dep{{Pattern: "libnvJitLink.so.*", Wheels: []string{"nvjitlink"}}},
		Fallback: []string{"/usr/local/cuda/lib64"},
	}
}

// NCCL returns the search for NCCL, libnccl.so.2: in $GNNMPI_NCCL_LIBDIR,
// then where the CUDA libraries are looked for (NCCL's wheel is
// nvidia/nccl/lib for CUDA 12 and 13 alike).
func NCCL() Search {
	return Search{
		Env:     []string{NCCLLibDirEnv, CUDALibDirEnv},
		Toolkit: true,
		Wheels:  []string{"nccl"},
		Names:   []string{"libnccl.so.2", "libnccl.so"},
	}
}
