package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scalingCases keeps successful runs by study, workload and network with
// the shm np 1 baseline; the chart is a PNG and the report's cells carry
// seconds, the ratio to the baseline and the busiest rank's MiB.
func TestScaling(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "scaling.csv")
	const header = "study,workload,net,np,hosts,seconds,metric,max_sent_bytes,total_sent_bytes,peak_rss_bytes,test_acc,flops,exit_code,json,commit\n"
	csv := header +
		"strong,train-none,shm,1,1,4,median_epoch_s,0,0,100,0.9,,0,a.json,abc\n" +
		"strong,train-none,shm,2,1,2.5,median_epoch_s,2097152,4194304,100,0.9,,0,a.json,abc\n" +
		"strong,train-none,shm,4,1,1,median_epoch_s,1048576,4194304,100,0.9,,0,a.json,abc\n" +
		"strong,train-none,hosts,2,2,8,median_epoch_s,2097152,4194304,100,0.9,,0,a.json,abc\n" +
		"strong,train-none,hosts,4,4,,median_epoch_s,,,,,,1,a.json,abc\n" +
		"weak,spgemm,shm,1,1,1,spgemm_min_s,0,0,,,10,0,a.json,abc\n" +
		"weak,spgemm,shm,2,1,1.25,spgemm_min_s,10,20,,,25,0,a.json,abc\n"
	if err := os.WriteFile(in, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := readCSV(in)
	if err != nil {
		t.Fatal(err)
	}
	cases := scalingCases(rows)
	if len(cases) != 2 || cases[0].base != 4 || cases[1].base != 1 {
		t.Fatalf("cases %+v, want strong train-none (base 4) and weak spgemm (base 1)", cases)
	}
	if h := cases[0].runs["hosts"]; len(h) != 1 || cases[0].ratio(h[0]) != 0.5 {
		t.Fatalf("hosts runs %+v, want the np 2 run only (np 4 failed), speedup 0.5", h)
	}
	png := filepath.Join(dir, "scaling.png")
	if err := scaling(rows, png); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("%s is not a PNG (%v)", png, err)
	}
	md := filepath.Join(dir, "scaling.md")
	if err := scalingReport(rows, md); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| train-none | shm | 4 s, 1.00× | 2.5 s, 1.60×, 2.0 MiB | 1 s, 4.00×, 1.0 MiB |",
		"| train-none | hosts | | 8 s, 0.50×, 2.0 MiB | |",
		"## weak scaling",
		"| spgemm | shm | 1 s, 1.00× | 1.25 s, 0.80×, 0.0 MiB |",
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if err := scaling(rows[5:], png); err != nil {
		t.Fatal(err)
	}
	// A cluster sweep has no shm: its own np 1 run is the baseline.
	cl, err := readCSVString(t, header+"strong,pipe,cluster,1,1,2,median_epoch_s,0,0,,,,0,a.json,abc\n"+
		"strong,pipe,cluster,2,2,1.6,median_epoch_s,5,10,,,,0,a.json,abc\n")
	if err != nil {
		t.Fatal(err)
	}
	if c := scalingCases(cl); len(c) != 1 || c[0].base != 2 || c[0].ratio(c[0].runs["cluster"][1]) != 1.25 {
		t.Fatalf("cluster cases %+v, want base 2 and speedup 1.25 at np 2", c)
	}
	if err := scaling(cl, png); err != nil {
		t.Fatal(err)
	}
	if err := scaling(rows[1:4], png); err == nil {
		t.Fatal("a CSV without an np 1 run drew a chart")
	}
}

// readCSVString parses CSV text as readCSV does a file.
func readCSVString(t *testing.T, text string) ([]map[string]string, error) {
	p := filepath.Join(t.TempDir(), "in.csv")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		return nil, err
	}
	return readCSV(p)
}
