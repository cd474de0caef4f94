package handlers

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/offsetagent/offsetagent/internal/race"
)

// notPlain finds every byte rawPlain does not mark, in every place of a word of plain bytes
// of every kind, and nothing in a word of plain bytes.
func TestNotPlain(t *testing.T) {
	word := func(bg, c byte, at int) uint64 {
		var x uint64
		for i := range 8 {
			b := bg
			if i == at {
				b = c
			}
			x |= uint64(b) << (8 * i)
		}
		return x
	}
	for _, bg := range []byte{' ', '!', '#', '0', '[', ']', 'a', 0x7f, 0x80, 0xbf, 0xc3, 0xef} {
		for c := range 256 {
			for at := range 8 {
				require.Equal(t, !rawPlain[c], notPlain(word(bg, byte(c), at)) != 0, "byte %#x at %d among %#x", c, at, bg)
			}
		}
	}
}

// The reader's guesses (known, strOfLen) read what str reads, or nothing: on strings of
// every kind of byte, at every guessed length, and str's length is always guessed right.
func TestRawReaderGuessesMatchStr(t *testing.T) {
	alphabet := []string{"a", "Z", "0", ":", " ", "/", "\"", "\\", "\x01", "\x1f", "\x7f", "é", "€", "\U0001F600", "\xf0"}
	r := rand.New(rand.NewPCG(18, 18))
	for range race.Rounds(20_000, 10) {
		var text string
		for range r.IntN(30) {
			text += alphabet[r.IntN(len(alphabet))]
		}
		s := `"` + text + `",`
		want := rawReader{s: s}
		wantStr, wantOK := want.str()
		for n := range len(s) + 2 {
			got := rawReader{s: s}
			str, ok := got.strOfLen(n)
			if ok {
				require.True(t, wantOK, "%q: strOfLen(%d) read %q, str nothing", s, n, str)
				require.Equal(t, wantStr, str, "%q", s)
				require.Equal(t, want.i, got.i, "%q", s)
			} else {
				require.False(t, wantOK && n == len(wantStr), "%q: strOfLen(%d) missed %q", s, n, wantStr)
				require.Equal(t, 0, got.i, "%q: a miss moved on", s)
			}
		}
		if wantOK {
			for _, k := range []string{wantStr, "", "a", wantStr + "a"} {
				got := rawReader{s: s}
				str, ok := got.known(k)
				require.Equal(t, k == wantStr, ok, "%q: known(%q)", s, k)
				if ok {
					require.Equal(t, wantStr, str)
					require.Equal(t, want.i, got.i)
				}
			}
		}
	}
}
