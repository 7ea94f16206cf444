package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParamZeroGrad checks the mark of ZeroGrad: every way to the values
// sees zeros after it, whatever the storage held, and only a gradient
// that is not marked is copied or kept.
func TestParamZeroGrad(t *testing.T) {
	stale := []float32{1, -2, 3, 4}
	tests := []struct {
		name string
		mark bool
		do   func(p *Param) []float32 // returns the values a reader sees
		want []float32
	}{
		{"Grad without mark", false, (*Param).Grad, stale},
		{"Grad clears a mark", true, (*Param).Grad, []float32{0, 0, 0, 0}},
		{"Grad clears once", true, func(p *Param) []float32 {
			p.Grad()[1] = 5 // written after the clear: kept
			return p.Grad()
		}, []float32{0, 5, 0, 0}},
		{"BindGrad copies", false, func(p *Param) []float32 {
			p.BindGrad(make([]float32, 4))
			return p.Grad()
		}, stale},
		{"BindGrad keeps the mark", true, func(p *Param) []float32 {
			p.BindGrad([]float32{7, 7, 7, 7})
			return p.Grad()
		}, []float32{0, 0, 0, 0}},
		{"gemmDst overwrites a mark", true, func(p *Param) []float32 {
			g, beta := p.gemmDst()
			assert.Zero(t, beta)
			copy(g, []float32{9, 8, 7, 6})
			return p.Grad()
		}, []float32{9, 8, 7, 6}},
		{"gemmDst adds without mark", false, func(p *Param) []float32 {
			_, beta := p.gemmDst()
			assert.Equal(t, float32(1), beta)
			return p.Grad()
		}, stale},
		{"gradTerm is fresh under a mark", true, func(p *Param) []float32 {
			assert.True(t, gradTerm(p, nil, 0).fresh)
			assert.False(t, gradTerm(p, nil, 0).fresh, "the mark is taken off")
			return p.g
		}, stale},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewParam("w", 2, 2)
			copy(p.Grad(), stale)
			if tc.mark {
				p.ZeroGrad()
			}
			assert.Equal(t, tc.want, tc.do(p))
		})
	}
	p := NewParam("w", 2, 2)
	assert.Panics(t, func() { p.BindGrad(make([]float32, 3)) })
}
