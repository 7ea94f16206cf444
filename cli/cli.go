// Package cli implements gnnmpi's subcommands over an already started
// communicator. Package main parses the global flags, starts the backend
// (MPI or in-process ranks), and hands every rank an Env.
//
// # Overview
//
// Every rank runs the same command with the same arguments (SPMD). A command
// prints through Env.Out, which is the terminal on rank 0 and discarded on
// the others, reports progress through Env.Progress (rank 0, standard
// error), and ends with Env.Finish, which gathers every rank's byte counts
// and writes the final metrics object: to standard output as JSON with
// --json, and as the last line of the --metrics JSONL file.
package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/collective"
	"gnnmpi/metrics"
	"gnnmpi/train"
)

// Command is one subcommand.
type Command struct {
	Name    string
	Summary string
	Usage   string // arguments after the name, for the usage line
	// Flags defines the command's flags on fs and returns the function that
	// runs it once the flags are parsed and the backend started.
	Flags func(fs *flag.FlagSet) func(env *Env) error
}

// Commands returns every subcommand, sorted by name.
func Commands() []*Command {
	cmds := []*Command{infoCmd(), selftestCmd(), gpucheckCmd(), genCmd(), convertCmd(), partitionCmd(), trainCmd(), spgemmCmd(), sampleCmd(), fetchCmd(), predictCmd(), exportCmd(), inferCmd()}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	for _, c := range cmds {
		c.Flags = withFlagNamesRun(c.Flags) // train's errors name settings, the user sees flags
	}
	return cmds
}

// Lookup returns the named command, or nil.
func Lookup(name string) *Command {
	for _, c := range Commands() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Help writes the list of commands.
func Help(w io.Writer) {
	fmt.Fprintf(w, "gnnmpi: distributed GNN training\n\n")
	fmt.Fprintf(w, "usage: gnnmpi [--ranks N] [--metrics FILE] COMMAND [flags]\n")
	fmt.Fprintf(w, "       mpirun -np N gnnmpi COMMAND [flags]\n\ncommands:\n")
	for _, c := range Commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "help", "list the commands")
	fmt.Fprintf(w, "\n`gnnmpi COMMAND -h` shows a command's flags.\n")
}

// Env is what a command sees on one rank.
type Env struct {
	Comm    collective.Comm // counted (collective.WithStats)
	Backend string          // "mpi" or "inproc"
	Command string
	Out     io.Writer // rank 0: standard output; others: discarded
	Err     io.Writer // standard error, every rank
	JSON    bool      // print the final metrics object on Out
	Metrics io.Writer // JSONL metrics (rank 0), nil when not requested
	// BLAS does the dense products of training (main picks it: OpenBLAS
	// through gonum's netlib, or gonum's pure Go); nil means pure Go.
	BLAS     blas.Float32Level3
	BLASName string
	// GPU opens the CUDA device and NCCL for training with --device
	// cuda (main picks them); a zero value leaves training to the CPU.
	GPU train.Backends
	// MPI gives access to the MPI communicator beneath Comm, for
	// libraries that communicate themselves (PT-Scotch); main sets it
	// under the MPI backend, nil otherwise.
	MPI      *MPIAccess
	start    time.Time
	warnings []string // rank 0's warnings so far (Warn)
}

// NewEnv returns an Env for rank c.Rank(). metrics may be nil.
func NewEnv(c collective.Comm, backend, command string, stdout, stderr, metrics io.Writer, jsonOut bool) *Env {
	e := &Env{Comm: c, Backend: backend, Command: command, Out: io.Discard, Err: stderr, JSON: jsonOut, start: time.Now()}
	if c.Rank() == 0 {
		e.Out = stdout
		e.Metrics = metrics
	}
	return e
}

// Progress prints a progress line on rank 0's standard error.
func (e *Env) Progress(format string, args ...any) {
	if e.Comm.Rank() == 0 {
		fmt.Fprintf(e.Err, "[%7.2fs] %s\n", time.Since(e.start).Seconds(), fmt.Sprintf(format, args...))
	}
}

// Printf prints on rank 0's standard output unless --json asked for JSON
// only.
func (e *Env) Printf(format string, args ...any) {
	if !e.JSON {
		fmt.Fprintf(e.Out, format, args...)
	}
}

// Record writes one JSONL metrics record (rank 0), such as a
// metrics.Epoch. It is not collective.
func (e *Env) Record(rec any) error {
	if e.Metrics == nil {
		return nil
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.Metrics, "%s\n", b)
	return err
}

// Finish gathers the byte counts of every rank and writes the final metrics
// object: result's fields, then what every command reports (metrics.Run:
// command, backend, ranks, seconds and comm, and the warnings when there
// were any). result is the command's record, embedding metrics.Run. It is
// collective.
func (e *Env) Finish(result metrics.Final) error {
	cs, err := collective.GatherComm(e.Comm)
	if err != nil {
		return err
	}
	if e.Comm.Rank() != 0 {
		return nil
	}
	run := metrics.Run{Command: e.Command, Backend: e.Backend, Ranks: e.Comm.Size(),
		Seconds: time.Since(e.start).Seconds(), Comm: cs, Warnings: e.warnings}
	result.SetRun(run)
	rec := result
	if e.JSON {
		b, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Out, "%s\n", b)
	} else {
		fmt.Fprintf(e.Out, "communication: max per rank sent %s, received %s; total sent %s", human(cs.MaxSentBytes), human(cs.MaxRecvBytes), human(cs.TotalBytes))
		var parts []string
		for _, p := range sortedKeys(cs.ByPhase) {
			parts = append(parts, fmt.Sprintf("%s %s", p, human(cs.ByPhase[p].TotalSent)))
		}
		if len(parts) > 0 {
			fmt.Fprintf(e.Out, " (%s)", strings.Join(parts, ", "))
		}
		fmt.Fprintln(e.Out)
	}
	run.Type = metrics.TypeFinal
	rec.SetRun(run)
	return e.Record(rec)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// human formats a byte count.
func human(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.2f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
