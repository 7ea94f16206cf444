package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestThroughputLabel(t *testing.T) {
	for _, c := range []struct {
		row  map[string]string
		want string
	}{
		{map[string]string{"system": "torch", "np": "1"}, "torch"},
		{map[string]string{"system": "torch", "variant": "embedding_bag", "np": "1"}, "torch embedding_bag"},
		{map[string]string{"system": "gnnmpi", "np": "2"}, "gnnmpi np2"},
		{map[string]string{"system": "gnnmpi", "variant": "csr", "np": "4"}, "gnnmpi csr np4"},
	} {
		if got := throughputLabel(c.row); got != c.want {
			t.Errorf("throughputLabel(%v) = %q, want %q", c.row, got, c.want)
		}
	}
}

// TestThroughput draws a chart from a CSV as bench/throughput.sh writes it
// and checks that it is a PNG; a CSV without a successful run is an error.
func TestThroughput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "throughput.csv")
	const header = "dataset,system,variant,np,epochs,steps_per_epoch,median_epoch_s,test_acc,val_acc,peak_rss_per_rank_bytes,rss_source,sample_s,fetch_s,compute_s,grad_s,load_start,load_end,commit,flags\n"
	csv := header +
		"cs,torch,,1,2,11,26.08,0.9136,0.9146,2063880192,ru_maxrss,0.37,1.69,24.0,0,3.06 2.08 1.62,2.89 2.27 1.72,abc,torch 1.13\n" +
		"cs,torch,embedding_bag,1,2,11,6.1,0.9130,0.9140,1063880192,ru_maxrss,0.37,0.09,5.0,0,3.06 2.08 1.62,2.89 2.27 1.72,abc,torch 1.13\n" +
		"cs,gnnmpi,,1,2,11,22.59,0.9106,0.9086,5922992128,ru_maxrss,0.04,1.39,21.1,0.05,2.89 2.27 1.72,2.97 2.41 1.80,abc,\n" +
		"cs,gnnmpi,csr,2,2,11,9.5,0.9110,0.9090,1000000000,vmhwm,0.04,0.3,8.1,0.5,2.89 2.27 1.72,2.97 2.41 1.80,abc,--feature-format csr\n" +
		"sbm20k,gnnmpi,,1,2,12,1.26,0.9978,0.9985,259510272,ru_maxrss,0.06,0.05,1.16,0.001,2.53 2.34 1.81,2.81 2.40 1.83,abc,\n"
	if err := os.WriteFile(in, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := readCSV(in)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "throughput.png")
	if err := throughput(rows, out); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s is not a PNG", out)
	}
	failed := []map[string]string{{"dataset": "cs", "system": "torch", "np": "1", "median_epoch_s": ""}}
	if err := throughput(failed, out); err == nil {
		t.Fatal("throughput of no successful run: no error")
	}
}
