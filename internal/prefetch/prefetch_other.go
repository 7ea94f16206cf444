//go:build !amd64

package prefetch

import "unsafe"

// Enabled is false off amd64, where Lines must not be called.
const Enabled = false

// Lines panics off amd64: callers check Enabled first.
func Lines(p unsafe.Pointer, n int) { panic("prefetch: no prefetch instructions here") }
