package apply

import (
	"context"
	"fmt"
	"time"

	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// With StopSource a migration moves the selection in waves: it stops a wave's connectors on A,
// publishes their requests and awaits their results, then goes on with the next wave. The
// next wave's stop starts as soon as this wave's requests are all published, and runs while
// B's agents carry them out (a wave's stop barriers take at least a stable pause, which
// nothing else would overlap): at most two waves are in flight, the one awaited and the one
// stopped, a wave publishes only once the wave before it has all its results, and a
// connector is published only after its own stop barrier. Each wave's stop is bounded by
// Timeout, and its requests' deadline is Timeout after the wave starts publishing: a fleet
// whose stops take longer than Timeout in all still has every connector it stopped
// published, with a whole Timeout for its request, instead of stopped on A and left
// unpublished once a single deadline for the run has passed. A connector stays stopped on A
// only as long as its own wave and the end of the wave before it take.

// splitWaves cuts entries into waves of at most size entries, in their order, a pipeline (a
// sink that follows its sources, and those sources) always in one wave: the sink on B starts
// at the end of its topics on B read before its sources' requests are published. A pipeline
// larger than size is a wave alone.
func splitWaves(entries []*Entry, size int) [][]*Entry {
	if size <= 0 {
		size = len(entries)
	}
	// unit[i] is the index of the first entry of i's pipeline (i itself when none).
	index := map[*fleet.Connector]int{}
	for i, e := range entries {
		index[e.Connector] = i
	}
	unit := make([]int, len(entries))
	for i := range unit {
		unit[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for unit[i] != i {
			i = unit[i]
		}
		return i
	}
	for i, e := range entries {
		if e.follows() == nil {
			continue
		}
		for _, src := range e.follows().Sources {
			j, ok := index[src]
			if !ok {
				continue
			}
			a, b := find(i), find(j)
			a, b = min(a, b), max(a, b)
			unit[b] = a
		}
	}
	members := map[int][]*Entry{}
	var order []int
	for i, e := range entries {
		r := find(i)
		if _, seen := members[r]; !seen {
			order = append(order, r)
		}
		members[r] = append(members[r], e)
	}
	var waves [][]*Entry
	var cur []*Entry
	for _, r := range order {
		u := members[r]
		if len(cur) > 0 && len(cur)+len(u) > size {
			waves = append(waves, cur)
			cur = nil
		}
		cur = append(cur, u...)
	}
	if len(cur) > 0 {
		waves = append(waves, cur)
	}
	return waves
}

// waveProgress hands each wave's outcomes to the run's Progress, which the run itself starts
// once with the whole selection and finishes once.
type waveProgress struct{ Progress }

func (waveProgress) Start(int) {}
func (waveProgress) Finish()   {}

// Done is what a run has done after one of its waves: a copy of the entry of every connector
// of the waves done so far, in their order, with its outcome, and how many connectors of the
// selection are in the waves still to come (Unfinished). The copies are the caller's: the run
// no longer changes them, nor the entries they were copied from.
type Done struct {
	Wave, Waves int
	Entries     []*Entry
	Unfinished  int
}

// waveDone tells opts.WaveDone what the waves up to and including waves[i] have done.
func (ap *Applier) waveDone(waves [][]*Entry, i int) {
	if ap.opts.WaveDone == nil {
		return
	}
	d := Done{Wave: i + 1, Waves: len(waves)}
	for _, w := range waves[:i+1] {
		for _, e := range w {
			cp := *e
			d.Entries = append(d.Entries, &cp)
		}
	}
	for _, w := range waves[i+1:] {
		d.Unfinished += len(w)
	}
	ap.opts.WaveDone(d)
}

// RunWaves stops (with StopSource), builds and publishes entries, in waves with StopSource
// (waves.go), and returns when the first request was published.
func (ap *Applier) RunWaves(interrupt context.Context, entries []*Entry) (publishing time.Time) {
	opts := ap.opts
	prog := opts.Progress
	if prog == nil {
		prog = noProgress{}
	}
	prog.Start(len(entries))
	defer prog.Finish()
	opts.Progress = waveProgress{prog}
	waves := [][]*Entry{entries}
	if opts.StopSource {
		waves = splitWaves(entries, opts.WaveSize)
	}
	// next is the next wave's stop and build, started once this wave's requests are all
	// published (nil: not started): it runs while B's agents carry this wave's out, and
	// ends before the next wave publishes. At most two waves are in flight, and a wave is
	// stopped only once the wave before it is published.
	var next <-chan struct{}
	for i, wave := range waves {
		built := next
		next = nil
		if built == nil {
			if interrupt.Err() != nil {
				for _, e := range wave {
					e.skip(fmt.Sprintf("not stopped on A nor published: the run was interrupted before its wave (%d of %d)", i+1, len(waves)))
					prog.Done(e)
				}
				continue
			}
			built = ap.startWave(interrupt, wave)
		}
		<-built
		p := &publisher{opts: opts, results: ap.results, restB: ap.restB}
		if opts.Timeout > 0 {
			p.deadline = time.Now().Add(opts.Timeout)
		}
		if i+1 < len(waves) {
			p.published = func() {
				if next == nil && interrupt.Err() == nil {
					next = ap.startWave(interrupt, waves[i+1])
				}
			}
		}
		if t := p.run(interrupt, wave); publishing.IsZero() {
			publishing = t
		}
		ap.waveDone(waves, i)
	}
	return publishing
}

// startWave stops (with StopSource) and builds wave in a goroutine of its own, and closes the
// channel it returns once done; the wave's entries are then born after that moment.
func (ap *Applier) startWave(interrupt context.Context, wave []*Entry) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		ap.buildWave(interrupt, wave)
		read := time.Now().UTC()
		for _, e := range wave {
			e.BornAfter = read
		}
	}()
	return done
}

// buildWave stops (with StopSource) and builds the wave's connectors, within Timeout.
func (ap *Applier) buildWave(interrupt context.Context, wave []*Entry) {
	ctx := interrupt
	if ap.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(interrupt, ap.opts.Timeout)
		defer cancel()
	}
	ap.Build(ctx, wave)
	if ap.opts.OffsetsOnly {
		PrepareStrimzi(wave)
	}
}
