package kafkatest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// Forward listens on a port of 127.0.0.1 of its own and forwards every connection to target:
// another address of the same broker, as a Kubernetes bootstrap Service, a load balancer or a
// second listener is, which the broker never advertises. It returns the address it listens
// on; the listener and its connections close when the test ends.
func Forward(t testing.TB, target string) string {
	t.Helper()
	addr, _ := ForwardCounting(t, target)
	return addr
}

// ForwardCounting is Forward, and the count of the connections it has accepted so far.
func ForwardCounting(t testing.TB, target string) (string, *atomic.Int32) {
	t.Helper()
	var accepted atomic.Int32
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if conns == nil {
			return false // closed
		}
		conns = append(conns, c)
		return true
	}
	conns = []net.Conn{}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		conns = nil
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return // closed at the end of the test, or broken: no more connections
			}
			accepted.Add(1)
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			if !track(in) || !track(out) {
				in.Close()
				out.Close()
				return
			}
			for _, pair := range [][2]net.Conn{{in, out}, {out, in}} {
				wg.Go(func() {
					_, _ = io.Copy(pair[0], pair[1])
					pair[0].Close()
					pair[1].Close()
				})
			}
		}
	})
	return l.Addr().String(), &accepted
}

// ClosedAddr is an address of 127.0.0.1 where nothing listens: a port taken and let go, so a
// dial is refused at once.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}
