package npy_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"gnnmpi/npy"
)

// Example writes an archive of two arrays and reads rows 1 and 2 of one
// of them back, as float64.
func Example() {
	var buf bytes.Buffer
	aw := npy.NewArchiveWriter(&buf, false)
	if err := npy.Add(aw, "feat", []int64{3, 2}, []float32{0, 0.5, 1, 1.5, 2, 2.5}); err != nil {
		panic(err)
	}
	if err := npy.Add(aw, "ids", []int64{3}, []int64{7, 8, 9}); err != nil {
		panic(err)
	}
	if err := aw.Close(); err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "npy")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "data.npz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		panic(err)
	}

	z, err := npy.OpenArchive(path)
	if err != nil {
		panic(err)
	}
	defer z.Close()
	a, err := z.Open("feat")
	if err != nil {
		panic(err)
	}
	defer a.Close()
	rows := make([]float64, 2*a.RowLen())
	if err := npy.ReadRows(a, rows, 1, 3); err != nil {
		panic(err)
	}
	fmt.Println(z.Names(), a.DType, npy.ShapeString(a.Shape), a.Mapped(), rows)
	// Output: [feat ids] <f4 (3, 2) true [1 1.5 2 2.5]
}
