package cuda

// NeedFake is needFake for the external tests of package cuda_test.
var NeedFake = needFake
