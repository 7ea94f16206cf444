package gpu

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFilterVisible(t *testing.T) {
	// Four devices with UUIDs that share prefixes, to test ambiguity:
	// "GPU-aa" matches devices 0 and 1, "GPU-aa1" only device 0.
	devices := []Device{
		{Index: 0, UUID: "GPU-aa11-0000"},
		{Index: 1, UUID: "GPU-aa22-0000"},
		{Index: 2, UUID: "GPU-bb33-0000"},
		{Index: 3, UUID: "GPU-cc44-0000"},
	}
	for _, tc := range []struct {
		spec string
		want []int // expected Device.Index values, in order
	}{
		{spec: "0,1,2,3", want: []int{0, 1, 2, 3}},
		{spec: "2", want: []int{2}},
		{spec: "3,1", want: []int{3, 1}},
		{spec: " 1 , 0 ", want: []int{1, 0}},
		{spec: "", want: nil},
		{spec: "-1", want: nil},
		// CUDA stops at the first invalid entry.
		{spec: "0,2,-1,1", want: []int{0, 2}},
		{spec: "1,7,2", want: []int{1}},
		{spec: "1,,2", want: []int{1}},
		{spec: "1,x,2", want: []int{1}},
		{spec: "+1", want: nil},
		{spec: "1,1,2", want: []int{1}},
		// UUIDs and unique UUID prefixes.
		{spec: "GPU-cc44-0000", want: []int{3}},
		{spec: "GPU-bb,0", want: []int{2, 0}},
		{spec: "GPU-aa1,GPU-aa2", want: []int{0, 1}},
		{spec: "GPU-aa", want: nil},
		{spec: "GPU-dd", want: nil},
		{spec: "2,GPU-bb", want: []int{2}},
		{spec: "GPU-", want: nil},
		{spec: "aa11", want: nil},
		{spec: "MIG-GPU-aa11-0000/1/0", want: nil},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			var got []int
			for _, d := range FilterVisible(devices, tc.spec) {
				got = append(got, d.Index)
			}
			assert.Equal(t, tc.want, got, "got: %v want: %v", got, tc.want)
		})
	}
}

func TestFilterVisibleKeepsInput(t *testing.T) {
	devices := []Device{{Index: 0, Name: "a"}, {Index: 1, Name: "b"}}
	got := FilterVisible(devices, "1,0")
	got[0].Name = "changed"
	assert.Equal(t, []Device{{Index: 0, Name: "a"}, {Index: 1, Name: "b"}}, devices)
}
