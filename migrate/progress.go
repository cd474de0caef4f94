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

func (p *lineProgress) Finish() {}

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

func (p *barProgress) Finish() { _ = p.bar.Finish() }
