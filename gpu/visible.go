package gpu

import (
	"strconv"
	"strings"
)

// BUG(gpu): FilterVisible matches index entries of CUDA_VISIBLE_DEVICES
// against NVML indices, which follow PCI bus order, while the CUDA runtime
// numbers devices fastest-first unless CUDA_DEVICE_ORDER=PCI_BUS_ID is set.
// On nodes with mixed GPU models, set CUDA_DEVICE_ORDER=PCI_BUS_ID or list
// UUIDs.

// FilterVisible returns the devices named by spec, a CUDA_VISIBLE_DEVICES
// value, in the order spec names them; that order is the CUDA device ordinal
// order a process started with that value sees. devices is not modified and
// the caller owns the returned slice.
//
// spec is a comma-separated list. Each entry, with surrounding spaces
// removed, is either a decimal device index, matched against Device.Index,
// or a UUID or UUID prefix starting with "GPU-" (e.g. "GPU-8932f937"),
// matched against Device.UUID; a prefix must match exactly one device. As
// the CUDA runtime does, FilterVisible stops at the first entry that is
// malformed, matches no device, is ambiguous, or names a device already
// listed: "0,2,-1,1" yields devices 0 and 2, and "" or "-1" yields none.
// MIG entries ("MIG-…") are not resolved and end the list.
func FilterVisible(devices []Device, spec string) []Device {
	var visible []Device
	seen := make(map[int]bool)
	for entry := range strings.SplitSeq(spec, ",") {
		i, ok := resolveVisible(devices, strings.TrimSpace(entry))
		if !ok || seen[devices[i].Index] {
			break
		}
		seen[devices[i].Index] = true
		visible = append(visible, devices[i])
	}
	return visible
}

// resolveVisible returns the position in devices of the device that one
// CUDA_VISIBLE_DEVICES entry names.
func resolveVisible(devices []Device, entry string) (int, bool) {
	if strings.HasPrefix(entry, "GPU-") {
		found := -1
		for i, d := range devices {
			if strings.HasPrefix(d.UUID, entry) {
				if found >= 0 {
					return 0, false // ambiguous prefix
				}
				found = i
			}
		}
		return found, found >= 0
	}
	// Digits only: strconv.Atoi alone would accept "+1".
	if entry == "" || strings.Trim(entry, "0123456789") != "" {
		return 0, false
	}
	idx, err := strconv.Atoi(entry)
	if err != nil {
		return 0, false
	}
	for i, d := range devices {
		if d.Index == idx {
			return i, true
		}
	}
	return 0, false
}
