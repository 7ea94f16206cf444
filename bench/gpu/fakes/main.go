// Command fakes builds the fake CUDA, NVRTC, cuBLAS and cuSPARSE libraries
// of gnnmpi's tests (gpu/gputest.Build) into a directory, for
// bench/gpu/run.sh --fake: the GPU script then runs here, on the fakes,
// exactly as it runs on a GPU machine.
//
//	go run ./bench/gpu/fakes DIR
package main

import (
	"fmt"
	"os"

	"gnnmpi/gpu/gputest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: fakes DIR")
		os.Exit(2)
	}
	if err := os.MkdirAll(os.Args[1], 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "fakes:", err)
		os.Exit(1)
	}
	if err := gputest.Build(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "fakes:", err)
		os.Exit(1)
	}
}
