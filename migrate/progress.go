package migrate

import (
	"fmt"
	"io"
	"sync"

	"github.com/schollz/progressbar/v3"
)

// LineProgress writes one line per connector to w: for logs and pipes.
func LineProgress(w io.Writer) Progress { return &lineProgress{w: w} }

type lineProgress struct {
	w           io.Writer
	mu          sync.Mutex
	total, done int
}

func (p *lineProgress) Start(total int) { p.total = total }

func (p *lineProgress) Done(e *Entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	line := fmt.Sprintf("[%d/%d] %s -> %s: %s", p.done, p.total, e.Name, e.TargetName, e.Outcome)
	if e.FailedStep != "" {
		line += " at " + e.FailedStep
	}
	if e.Message != "" {
		line += ": " + oneLine(e.Message, 200)
	}
	fmt.Fprintln(p.w, line)
}

func (p *lineProgress) Waiting(w Wait) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, waitLine(w))
}

func (p *lineProgress) Finish() {}

// waitLine says where the wait for results stands; while none has arrived, it says where
// they are expected from (a --result-topic that B's agents do not write looks just so).
func waitLine(w Wait) string {
	line := fmt.Sprintf("waiting for results on topic %q: %d of %d in, %d awaited, ", w.Topic, w.In, w.In+w.Awaited, w.Awaited)
	if w.Left > 0 {
		line += w.Left.String() + " left"
	} else {
		line += "no deadline"
	}
	if w.In == 0 {
		line += "; none yet: B's agents must write their results to this topic (their OFFSETAGENT_RESULT_TOPIC)"
	}
	return line
}

// BarProgress draws a progress bar on w, a terminal.
func BarProgress(w io.Writer) Progress { return &barProgress{w: w} }

type barProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (p *barProgress) Start(total int) {
	p.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription("connectors"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionClearOnFinish(),
	)
}

func (p *barProgress) Done(*Entry) { _ = p.bar.Add(1) }

// Waiting writes the line above the bar: the bar itself only moves when results arrive.
func (p *barProgress) Waiting(w Wait) {
	_ = p.bar.Clear()
	fmt.Fprintln(p.w, waitLine(w))
	_ = p.bar.RenderBlank()
}

func (p *barProgress) Finish() { _ = p.bar.Finish() }
