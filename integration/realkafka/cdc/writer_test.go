package cdc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// writer changes rows of items at a steady rate in its own goroutine: one transaction every
// interval, of rowsPerTx statements each (an insert of a new row, an update or a delete of an
// existing one), until stopped, maxTx transactions or maxTime. It records every change it
// committed as "txid op id", in commit order.
type writer struct {
	db        string
	rowsPerTx int
	interval  time.Duration

	mu      sync.Mutex
	changes []string
	txs     int
	err     error

	stop chan struct{}
	done chan struct{}
}

const (
	writerMaxTx   = 400
	writerMaxTime = 3 * time.Minute
)

func startWriter(t *testing.T, db string, rowsPerTx int, interval time.Duration) *writer {
	t.Helper()
	w := &writer{db: db, rowsPerTx: rowsPerTx, interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
	go w.loop()
	t.Cleanup(w.halt)
	return w
}

func (w *writer) loop() {
	defer close(w.done)
	rnd := rand.New(rand.NewPCG(1, 2))
	var live []int // ids of existing rows
	next := 1
	deadline := time.Now().Add(writerMaxTime)
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	for tx := 0; tx < writerMaxTx && time.Now().Before(deadline); tx++ {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		var stmts, ops []string
		touched := map[int]bool{}
		for range w.rowsPerTx {
			switch k := rnd.IntN(10); {
			case k < 4 || len(live) < 5:
				stmts = append(stmts, fmt.Sprintf("INSERT INTO items VALUES (%d, 0, 'row %d');", next, next))
				ops = append(ops, fmt.Sprintf("c %d", next))
				live = append(live, next)
				touched[next] = true
				next++
			case k < 8:
				id := live[rnd.IntN(len(live))]
				stmts = append(stmts, fmt.Sprintf("UPDATE items SET v = v + 1, note = 'tx %d' WHERE id = %d;", tx, id))
				ops = append(ops, fmt.Sprintf("u %d", id))
			default:
				i := rnd.IntN(len(live))
				if touched[live[i]] { // a row inserted in this transaction stays: keeps the model simple
					continue
				}
				stmts = append(stmts, fmt.Sprintf("DELETE FROM items WHERE id = %d;", live[i]))
				ops = append(ops, fmt.Sprintf("d %d", live[i]))
				live = append(live[:i], live[i+1:]...)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := env.Postgres.Query(ctx, w.db, "BEGIN;\n"+strings.Join(stmts, "\n")+"\nSELECT pg_current_xact_id();\nCOMMIT;")
		cancel()
		w.mu.Lock()
		if err != nil {
			w.err = err
			w.mu.Unlock()
			return
		}
		for _, op := range ops {
			w.changes = append(w.changes, strings.TrimSpace(out)+" "+op)
		}
		w.txs++
		w.mu.Unlock()
	}
}

// waitTxs waits until the writer has committed n transactions (or ended).
func (w *writer) waitTxs(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		select {
		case <-w.done:
			return true
		default:
		}
		return w.txs >= n
	}, writerMaxTime, 50*time.Millisecond)
}

func (w *writer) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// result returns the changes committed and the writer's error.
func (w *writer) result() ([]string, int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.changes...), w.txs, w.err
}
