package collective_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/internal/f16"
)

// AllreduceSum16 gives every rank the float32 sum of the ranks' decoded
// words, added in rank order and rounded once, for both 16-bit formats, on
// uneven blocks (n mod p ≠ 0, and n < p); and it sends exactly the
// allreduce volume of 2-byte elements, half of float32's.
func TestAllreduceSum16(t *testing.T) {
	codecs := map[string]collective.Codec16{
		"bf16":        {Decode: f16.DecodeBF16, Encode: f16.EncodeBF16, Add: f16.AddBF16},
		"f16":         {Decode: f16.Decode, Encode: f16.Encode, Add: f16.Add},
		"bf16/no Add": {Decode: f16.DecodeBF16, Encode: f16.EncodeBF16},
	}
	for name, codec := range codecs {
		for _, p := range []int{1, 2, 3, 4} {
			for _, n := range []int{0, 2, 37, 1000} {
				// Every rank's input, drawn from one seeded stream: rank r's
				// words are in[r].
				in := make([][]uint16, p)
				r := rand.New(rand.NewPCG(uint64(p), uint64(n)))
				for q := range in {
					v := make([]float32, n)
					for i := range v {
						v[i] = float32(r.NormFloat64())
					}
					in[q] = make([]uint16, n)
					codec.Encode(in[q], v)
				}
				want := make([]uint16, n)
				for i := range want {
					var s float32
					for q := range p {
						d := []float32{0}
						codec.Decode(d, in[q][i:i+1])
						if q == 0 {
							s = d[0]
						} else {
							s += d[0]
						}
					}
					codec.Encode(want[i:i+1], []float32{s})
				}
				if p == 1 {
					copy(want, in[0])
				}
				err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(raw collective.Comm) error {
					s := collective.NewStats()
					c := collective.WithStats(raw, s)
					x := append(make([]uint16, 0, n), in[c.Rank()]...)
					var sc collective.Scratch16
					if err := collective.AllreduceSum16(c, x, codec, &sc); err != nil {
						return err
					}
					require.Equal(t, want, x, "%s p=%d n=%d rank %d", name, p, n, c.Rank())
					sent, recv := collective.AllreduceVolume(c.Rank(), p, n, 2)
					f32, _ := collective.AllreduceVolume(c.Rank(), p, n, 4)
					tot := s.Snapshot().Total()
					require.Equal(t, sent, tot.SentBytes, "%s p=%d n=%d rank %d: sent", name, p, n, c.Rank())
					require.Equal(t, recv, tot.RecvBytes, "%s p=%d n=%d rank %d: received", name, p, n, c.Rank())
					require.Equal(t, f32, 2*tot.SentBytes, "half of float32's bytes")
					// Again with the first call's scratch: the same sums.
					y := append(make([]uint16, 0, n), in[c.Rank()]...)
					if err := collective.AllreduceSum16(c, y, codec, &sc); err != nil {
						return err
					}
					require.Equal(t, x, y, "reused scratch")
					return nil
				})
				require.NoError(t, err)
			}
		}
	}
}
