package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scaleoutRuns reduces a run to its largest rank; scaleout draws a PNG and
// refuses a CSV without a 1.5d run.
func TestScaleout(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "scaleout.csv")
	const header = "graph,command,topology,np,rank,peak_rss_bytes,topology_bytes,features_bytes,cache_bytes,model_bytes,median_epoch_s,sample_s,test_acc,bytes_fetch,bytes_sample,bytes_spgemm,bytes_grad,bytes_eval,load_start,load_end,commit\n"
	csv := header +
		"g,train,1.5d,1,0,1000,100,100,0,10,2,,0.9,0,0,0,0,0,1 1 1,1 1 1,abc\n" +
		"g,train,1.5d,2,0,600,50,50,0,10,2,,0.9,1,1,1,1,1,1 1 1,1 1 1,abc\n" +
		"g,train,1.5d,2,1,640,60,50,0,10,2,,0.9,1,1,1,1,1,1 1 1,1 1 1,abc\n" +
		"g,sample,1.5d,1,0,500,,,,,,1.5,,0,0,0,0,0,1 1 1,1 1 1,abc\n" +
		"g,sample,1.5d,2,0,300,,,,,,1.5,,0,0,0,0,0,1 1 1,1 1 1,abc\n" +
		"g,train,replicated,2,0,900,100,50,0,10,2,,0.9,0,0,0,0,0,1 1 1,1 1 1,abc\n"
	if err := os.WriteFile(in, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := readCSV(in)
	if err != nil {
		t.Fatal(err)
	}
	runs := scaleoutRuns(rows)
	if got := runs["g train"]; len(got) != 2 || got[1].peak != 640 || got[1].state != 120 {
		t.Fatalf("train runs %+v, want np 2 reduced to its largest rank (peak 640, state 120)", got)
	}
	out := filepath.Join(dir, "scaleout.png")
	if err := scaleout(rows, out); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s is not a PNG", out)
	}
	if err := scaleout(rows[5:], out); err == nil {
		t.Fatal("scaleout of replicated runs only: no error")
	}
	if err := scaleout(rows[1:3], out); err == nil || !strings.Contains(err.Error(), "np 1") {
		t.Fatalf("scaleout without an np 1 run: %v, want an error naming it", err)
	}
}
