package collective_test

import (
	"fmt"
	"testing"
	"time"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/internal/f16"
)

// BenchmarkAllreduceSum16 sums a 4.3M-element gradient (SAGE on
// coauthor-physics, hidden 256) over 2 in-process ranks as bfloat16,
// beside the float32 Allreduce of the same length: the conversions' cost
// against the bytes saved.
func BenchmarkAllreduceSum16(b *testing.B) {
	const n, p = 4_310_000, 2
	bf16 := collective.Codec16{Decode: f16.DecodeBF16, Encode: f16.EncodeBF16, Add: f16.AddBF16}
	for _, name := range []string{"f32", "bf16"} {
		b.Run(fmt.Sprintf("%s/n=%d/p=%d", name, n, p), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n) * 4)
			err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
				x := make([]float32, n)
				h := make([]uint16, n)
				var acc collective.Scratch16
				for i := range x {
					x[i] = float32(i%1000) * 1e-3
				}
				for range b.N {
					if name == "f32" {
						if err := collective.AllreduceSlice(c, x, collective.Sum); err != nil {
							return err
						}
						continue
					}
					bf16.Encode(h, x)
					if err := collective.AllreduceSum16(c, h, bf16, &acc); err != nil {
						return err
					}
					bf16.Decode(x, h)
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
