package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Signals that switch the running agent's /debug/pprof on and off, so that a stuck replica
// can be profiled without the restart that would unstick it.
const (
	pprofOnSignal  = syscall.SIGUSR1
	pprofOffSignal = syscall.SIGUSR2
)

// pprofSwitch is what the signals switch (*agent.Agent).
type pprofSwitch interface{ SetPprof(on bool) }

// switchPprofOnSignals calls s.SetPprof(true) on SIGUSR1 and s.SetPprof(false) on SIGUSR2
// until ctx ends. It returns once the signals are being caught.
func switchPprofOnSignals(ctx context.Context, s pprofSwitch) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, pprofOnSignal, pprofOffSignal)
	go func() {
		defer signal.Stop(sigs)
		for {
			select {
			case <-ctx.Done():
				return
			case sig := <-sigs:
				s.SetPprof(sig == pprofOnSignal)
			}
		}
	}()
}

const pprofUsage = "usage: offsetagent pprof on|off --pid N"

// cmdPprof switches the agent's /debug/pprof on or off by signalling its process: in the
// container, `kubectl exec <pod> -- /offsetagent pprof on --pid 1` (the agent is PID 1
// there). The PID has no default: outside the container PID 1 is init, which would take the
// signal for something else, or ignore it, while the command said it had worked.
func cmdPprof(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pprof", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pid := fs.Int("pid", 0, "the agent's process id (required; 1 in its container)")
	fs.Usage = func() { fmt.Fprintln(stderr, pprofUsage); fs.PrintDefaults() }
	if len(args) == 0 {
		fs.Usage()
		return 2
	}
	state := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	sig := pprofOnSignal
	switch state {
	case "on":
	case "off":
		sig = pprofOffSignal
	default:
		fs.Usage()
		return 2
	}
	pidSet := false
	fs.Visit(func(f *flag.Flag) { pidSet = pidSet || f.Name == "pid" })
	if !pidSet {
		fmt.Fprintln(stderr, "offsetagent pprof: --pid is required: the agent's process id (1 in its container)")
		fs.Usage()
		return 2
	}
	if fs.NArg() != 0 || *pid < 1 {
		fs.Usage()
		return 2
	}
	if err := syscall.Kill(*pid, sig); err != nil {
		fmt.Fprintf(stderr, "offsetagent: signal process %d: %v\n", *pid, err)
		return 1
	}
	fmt.Fprintf(stdout, "asked process %d to switch /debug/pprof %s\n", *pid, state)
	return 0
}
