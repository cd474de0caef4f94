package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/offsetagent/offsetagent/migrate/apply"
	"github.com/offsetagent/offsetagent/migrate/cutover"
)

// The progress of a migration as a person follows it: one line per connector for logs and
// pipes, a bar on a terminal, and the lines of the cutover's verification while it waits. The
// library tells typed progress (apply.Progress, cutover.Waiting); the words are here.

// lineProgress writes one line per connector: for logs and pipes.
type lineProgress struct {
	w           io.Writer
	mu          sync.Mutex
	total, done int
}

func (p *lineProgress) Start(total int) { p.total = total }

func (p *lineProgress) Done(e *apply.Entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	line := fmt.Sprintf("[%d/%d] %s -> %s: %s", p.done, p.total, e.Name, e.TargetName, e.Outcome)
	if e.FailedStep != "" {
		line += " at " + e.FailedStep
	}
	if !e.Message.IsZero() {
		line += ": " + oneLine(e.Message.Spell(flagWords), 200)
	}
	fmt.Fprintln(p.w, line)
}

func (p *lineProgress) Waiting(w apply.Wait) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, waitLine(w))
}

func (p *lineProgress) Finish() {}

// waitLine says where the wait for results stands; while none has arrived, it says where
// they are expected from (a --result-topic that B's agents do not write looks just so).
func waitLine(w apply.Wait) string {
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

// barProgress draws a progress bar on w, a terminal.
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

func (p *barProgress) Done(*apply.Entry) { _ = p.bar.Add(1) }

// Waiting writes the line above the bar: the bar itself only moves when results arrive.
func (p *barProgress) Waiting(w apply.Wait) {
	_ = p.bar.Clear()
	fmt.Fprintln(p.w, waitLine(w))
	_ = p.bar.RenderBlank()
}

func (p *barProgress) Finish() { _ = p.bar.Finish() }

// verifyProgress writes to w what the cutover's verification waits for, and for how long,
// when it starts waiting, then the partitions per verdict every while.
func verifyProgress(w io.Writer) func(cutover.Waiting) {
	return func(v cutover.Waiting) {
		if !v.First {
			fmt.Fprintf(w, "cutover verification: %s of %s: %s\n", v.Elapsed.Round(time.Second), v.Timeout, countsText(v.Counts))
			return
		}
		var from []string
		if len(v.OffsetsTopics) > 0 {
			from = append(from, fmt.Sprintf("sources' new offsets in B's topic %s (Connect commits them every offset.flush.interval.ms, 60s by default)",
				oneLine(strings.Join(v.OffsetsTopics, ", "), 80)))
		}
		if len(v.Prefixes) > 0 {
			from = append(from, fmt.Sprintf("Debezium records under topic prefix %s", oneLine(strings.Join(v.Prefixes, ", "), 80)))
		}
		if len(v.Groups) > 0 {
			from = append(from, fmt.Sprintf("sinks' commits in group %s", oneLine(strings.Join(v.Groups, ", "), 80)))
		}
		fmt.Fprintf(w, "verifying the cutover on B: waiting up to %s for %d of %d partitions (%s) to move past the offsets placed: %s; "+
			"now %s; the counts every %s\n", v.Timeout, v.Open, v.Total, oneLine(strings.Join(v.Connectors, ", "), 120), strings.Join(from, "; "),
			countsText(v.Counts), v.Every)
	}
}
