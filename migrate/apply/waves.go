package apply

import (
	"context"
	"sync"
	"time"

	"github.com/offsetagent/offsetagent/migrate/fleet"
)

// With StopSource a migration moves the selection in waves: it stops a wave's connectors on A,
// publishes their requests and awaits their results, then publishes the next wave. The waves'
// stops run ahead, as a pipeline: a wave's stop starts once the wave before it has made its
// calls to A (its stop barriers are in their stable pauses), so that the pauses of a few waves
// overlap each other and the requests of the wave awaited, instead of each wave's pause (at
// least StablePause, 1 s by default, which nothing else would overlap) standing alone between
// two waves' requests. It is bounded: at most wavesAhead waves stop at once beside the wave
// awaited (wave j stops only once wave j-wavesAhead is published), and a connector is published
// only after its own stop barrier. The waves are published as one stream: a wave publishes
// once it is stopped and the wave before it is published (not answered), into the room its
// results leave, at most Concurrency requests in flight across the waves (publisher.window), so
// that B's agents are not left idle while a wave's last results come in. Each wave's stop is
// bounded by Timeout, and its requests' deadline is Timeout after the wave has room to
// publish its first requests: a fleet whose stops take longer than Timeout in all still
// has every connector it stopped published, with a whole Timeout for its request, instead of
// stopped on A and left unpublished once a single deadline for the run has passed. A connector
// stays stopped on A only as long as its own wave and the waves ahead of it, at most
// wavesAhead+1, take.

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
// once with the whole selection and finishes once, one call at a time: the waves being
// published at once each tell theirs.
type waveProgress struct {
	mu *sync.Mutex
	p  Progress
}

func (waveProgress) Start(int) {}
func (waveProgress) Finish()   {}

func (w waveProgress) Done(e *Entry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.p.Done(e)
}

func (w waveProgress) Waiting(wt Wait) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.p.Waiting(wt)
}

// Done is what a run has done after one of its waves: a copy of the entry of every connector
// of the waves done so far, in their order, with its outcome, and how many connectors of the
// selection are in the waves still to come (Unfinished). The run no longer changes the copies,
// nor the entries they were copied from; a wave's copies are made once and are the same in
// every Done after it (the caller may set their wording, not change what they say).
type Done struct {
	Wave, Waves int
	Entries     []*Entry
	Unfinished  int
}

// waveDone tells opts.WaveDone what the waves up to and including waves[i] have done. done
// holds the copies told after the waves before (nil before the first): a wave's entries are
// copied once, when it is done, and the copies of the waves before are told again as they
// are, so that the copies made over a run are one per connector, not one per connector and
// wave after it. It returns the copies told.
func (ap *Applier) waveDone(waves [][]*Entry, i int, done []*Entry) []*Entry {
	if ap.opts.WaveDone == nil {
		return nil
	}
	for _, e := range waves[i] {
		cp := *e
		done = append(done, &cp)
	}
	d := Done{Wave: i + 1, Waves: len(waves), Entries: done[:len(done):len(done)]}
	for _, w := range waves[i+1:] {
		d.Unfinished += len(w)
	}
	ap.opts.WaveDone(d)
	return done
}

// wavesAhead bounds the waves stopping on A at once, beside the wave whose results are
// awaited: wave j starts its stop once the wave before it has made its calls to A (its
// barriers are in their stable pauses) and wave j-wavesAhead is published. A wave's stop takes
// at least a stable pause (1 s by default), its calls to A a fraction of it: the pauses of a
// few waves overlap, as the barriers of one wave do.
const wavesAhead = 3

// waveStart is a wave's stop and build under way: called is closed once its barriers have
// made their calls to A, built once it is stopped and built.
type waveStart struct {
	called, built chan struct{}
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
	wp := waveProgress{mu: &sync.Mutex{}, p: prog}
	opts.Progress = wp
	waves := [][]*Entry{entries}
	if opts.StopSource {
		waves = splitWaves(entries, opts.WaveSize)
	}
	// started[j] is closed once wave j's stop is started (starts[j] set), or will not be
	// (starts[j] nil: the run was interrupted first); published[j] once wave j's requests are
	// all published, or will not be; ran[j] once wave j's outcomes are all known.
	starts := make([]*waveStart, len(waves))
	started, published := make([]chan struct{}, len(waves)), make([]func(), len(waves))
	publishedCh, ran := make([]chan struct{}, len(waves)), make([]chan struct{}, len(waves))
	for j := range waves {
		started[j], publishedCh[j], ran[j] = make(chan struct{}), make(chan struct{}), make(chan struct{})
		published[j] = sync.OnceFunc(func() { close(publishedCh[j]) })
	}
	launched := make(chan struct{})
	defer func() { <-launched }()
	go func() {
		defer close(launched)
		for j := range waves {
			if j > 0 {
				select {
				case <-starts[j-1].called:
				case <-interrupt.Done():
				}
			}
			if j >= wavesAhead {
				select {
				case <-publishedCh[j-wavesAhead]:
				case <-interrupt.Done():
				}
			}
			if interrupt.Err() != nil {
				for _, c := range started[j:] {
					close(c)
				}
				return
			}
			starts[j] = ap.startWave(interrupt, waves[j])
			close(started[j])
		}
	}()
	// The checkpoints, in the waves' order, once each wave's outcomes are known.
	told := make(chan struct{})
	defer func() { <-told }()
	go func() {
		defer close(told)
		var done []*Entry
		for i := range waves {
			<-ran[i]
			done = ap.waveDone(waves, i, done)
		}
	}()
	// Each wave is published once it is stopped and built and the wave before it is
	// published, into the window the waves before it leave (publisher.window).
	win := newWindow(opts.Concurrency)
	var mu sync.Mutex
	for i, wave := range waves {
		<-started[i]
		s := starts[i]
		if i > 0 {
			<-publishedCh[i-1]
		}
		if s == nil {
			for _, e := range wave {
				e.skip(fleet.Textf("not stopped on A nor published: the run was interrupted before its wave (%d of %d)", i+1, len(waves)))
				wp.Done(e)
			}
			published[i]()
			close(ran[i])
			continue
		}
		<-s.built
		p := &publisher{opts: opts, results: ap.results, restB: ap.restB, published: published[i], window: win, timeout: opts.Timeout}
		go func() {
			defer close(ran[i])
			defer published[i]()
			t := p.run(interrupt, wave)
			mu.Lock()
			defer mu.Unlock()
			if !t.IsZero() && (publishing.IsZero() || t.Before(publishing)) {
				publishing = t
			}
		}()
	}
	<-told
	mu.Lock()
	defer mu.Unlock()
	return publishing
}

// startWave stops (with StopSource) and builds wave in a goroutine of its own; the wave's
// entries are born after the moment it is built.
func (ap *Applier) startWave(interrupt context.Context, wave []*Entry) *waveStart {
	s := &waveStart{called: make(chan struct{}), built: make(chan struct{})}
	called := sync.OnceFunc(func() { close(s.called) })
	go func() {
		defer close(s.built)
		defer called()
		ap.buildWave(interrupt, wave, called)
		read := time.Now().UTC()
		for _, e := range wave {
			e.BornAfter = read
		}
	}()
	return s
}

// buildWave stops (with StopSource) and builds the wave's connectors, within Timeout; called
// is build's.
func (ap *Applier) buildWave(interrupt context.Context, wave []*Entry, called func()) {
	ctx := interrupt
	if ap.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(interrupt, ap.opts.Timeout)
		defer cancel()
	}
	ap.build(ctx, wave, called)
	if ap.opts.OffsetsOnly {
		PrepareStrimzi(wave)
	}
}
