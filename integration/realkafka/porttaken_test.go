package realkafka

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPortTaken: a JVM that could not bind its port is told from one that failed
// otherwise (the text is the one a 3.9.1 worker logged when another process took its port).
func TestPortTaken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	taken := write("taken.log", "ERROR Stopping due to error\n"+
		"Caused by: java.io.IOException: Failed to bind to /127.0.0.1:45351\n"+
		"Caused by: java.net.BindException: Address already in use\n")
	other := write("other.log", "ERROR Stopping due to error\norg.apache.kafka.common.config.ConfigException: Missing required configuration\n")
	if !portTaken(taken) {
		t.Error("portTaken(a log with the BindException) = false")
	}
	if portTaken(other) {
		t.Error("portTaken(a log of another failure) = true")
	}
	if portTaken(filepath.Join(dir, "missing.log")) {
		t.Error("portTaken(no log) = true")
	}
}
