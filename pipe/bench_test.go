package pipe

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/model"
	"gnnmpi/partition"
)

// BenchmarkEpoch trains a 32-layer model of width 16 (the depth of the
// GCNII paper, the width of the 1M-vertex SBM runs) on a 50,000-vertex SBM
// (average degree 10) on one rank, the part in one chunk (exact full-graph
// training) or four, and reports the time per epoch and the heap during one
// epoch, sampled every millisecond: peak-heap-B is the largest heap of
// objects (live and not yet swept), peak-live-B the largest live heap a
// collection found. Each is measured on an epoch of its own before the
// timed ones, as is one warm-up epoch.
func BenchmarkEpoch(b *testing.B) {
	p := graph.DefaultSBM(50000)
	d, err := graph.SBM(p)
	if err != nil {
		b.Fatal(err)
	}
	train := make([]bool, d.NumNodes)
	for _, v := range d.Splits["random"].Train {
		train[v] = true
	}
	for _, kind := range []model.Kind{model.ConvGCNII, model.ConvResGCN} {
		for _, chunks := range []int{1, 4} {
			b.Run(fmt.Sprintf("kind=%s/n=%d/layers=32/w=16/chunks=%d", kind, p.Nodes, chunks), func(b *testing.B) {
				book := partition.Block(d.NumNodes, 1)
				chunk, err := graph.SubPartition(d.Adj, book, chunks, "metis", 1)
				if err != nil {
					b.Fatal(err)
				}
				plan, err := NewPlan(d.Adj, book.Part, chunk, 1, chunks)
				if err != nil {
					b.Fatal(err)
				}
				mc := model.DefaultDeep(kind)
				mc.Hidden, mc.In, mc.Out = 16, d.Feat.Cols, d.NumClasses
				cfg := Config{Model: mc, Layout: Layout{1, 1}, ShuffleChunks: true, ClearGrads: true,
					Optimizer: "adam", LR: 0.01, Seed: 3}
				err = inproc.Run(1, inproc.Options{Timeout: time.Hour}, func(c collective.Comm) error {
					tr, err := New(c, cfg, Data{Plan: plan.PartPlan(0), Feat: d.Feat, Labels: d.Labels, Train: train, Val: train, Test: train})
					if err != nil {
						return err
					}
					epoch := 0
					run := func() error {
						epoch++
						_, err := tr.Epoch(epoch)
						return err
					}
					if err := run(); err != nil {
						return err
					}
					heap, live := peakHeap(run)
					cpu := cpuTime()
					for b.Loop() {
						if err := run(); err != nil {
							return err
						}
					}
					b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
					b.ReportMetric(float64(heap), "peak-heap-B")
					b.ReportMetric(float64(live), "peak-live-B")
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// peakHeap runs fn after a collection and returns the largest heap of
// objects and the largest live heap seen while it ran, sampled every
// millisecond.
func peakHeap(fn func() error) (heap, live uint64) {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	sample := func() {
		metrics.Read(s)
		heap = max(heap, s[0].Value.Uint64())
		live = max(live, s[1].Value.Uint64())
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	err := fn()
	close(done)
	wg.Wait()
	sample()
	if err != nil {
		panic(err)
	}
	return heap, live
}

// cpuTime returns the CPU time (user and system) this process has used, for
// timings on a machine shared with other jobs, where the wall clock
// measures the sharing.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
