package dense

// hasAVX2Kernel reports whether the assembly kernels can run here.
func hasAVX2Kernel() bool { return hasAVX2() }

// setAVX2 sets useAVX2 to on and returns the function restoring it.
func setAVX2(on bool) func() {
	old := useAVX2
	useAVX2 = on
	return func() { useAVX2 = old }
}
