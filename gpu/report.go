package gpu

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// gib is the number of bytes in a GiB.
const gib = 1 << 30

// Report writes a human-readable summary of a discovery result to w, as
// printed by "gnnmpi info --gpu". devices and err are what Discover or
// DiscoverSystem returned.
//
// When err is non-nil, or devices is empty, Report writes one line,
// "no GPU: <reason>". Otherwise it writes the device count and a table with
// one row per device: index, name, UUID, PCI bus ID, and total and free
// memory in GiB. Report is for people, not parsers: its layout may change.
// Write errors on w are ignored.
func Report(w io.Writer, devices []Device, err error) {
	if err != nil {
		reason := strings.TrimPrefix(err.Error(), "gpu: ")
		reason = strings.TrimPrefix(reason, "no GPU: ")
		fmt.Fprintf(w, "no GPU: %s\n", reason)
		return
	}
	if len(devices) == 0 {
		fmt.Fprintln(w, "no GPU: no devices")
		return
	}
	plural := "s"
	if len(devices) == 1 {
		plural = ""
	}
	fmt.Fprintf(w, "%d GPU%s\n", len(devices), plural)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INDEX\tNAME\tUUID\tPCI BUS ID\tTOTAL\tFREE")
	for _, d := range devices {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.1f GiB\t%.1f GiB\n",
			d.Index, d.Name, d.UUID, d.PCIBusID,
			float64(d.MemoryTotal)/gib, float64(d.MemoryFree)/gib)
	}
	tw.Flush()
}
