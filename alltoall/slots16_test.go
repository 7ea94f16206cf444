package alltoall

import (
	"testing"

	"gnnmpi/internal/f16"
)

// FetchSlotsF16 names the same rows as Fetch on an F16 store, with the
// resident and received rows in half precision: decoded, they are Fetch's
// matrix bit for bit, with the same counts. An F32 store is refused
// before communicating.
func TestFetchSlotsF16(t *testing.T) {
	checkFetchSlots(t, 7, F16, F32, ErrNotF16, (*Store).ResidentF16, (*Store).FetchSlotsF16, f16.ToFloat32)
}
