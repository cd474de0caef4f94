package realkafka

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Class-data sharing. A JVM spends most of its start-up CPU loading, parsing and verifying
// classes: a Connect worker about 6 CPU-seconds on this project's machines, a broker about 5.
// The first JVM of each kind (main class and options) on a jar set records the classes it
// loaded in a dynamic CDS archive when it exits (-XX:ArchiveClassesAtExit); every later one maps
// that archive (-XX:SharedArchiveFile) and starts on about 40% of the CPU. The archives live next
// to the jars, in the cache folder's cds/. The JVM checks an archive against its own version and
// the classpath's jars and runs without it, with a warning in its log, when they differ; a JVM
// killed with SIGKILL writes none. OFFSETAGENT_JVM_CDS=off turns it off.

// cdsArchive returns the JVM options that use or create the archive for main with opts on the
// classpath lib/*, and a function to call once the JVM has exited, which moves a newly written
// archive into place when the JVM ended on its own or on SIGTERM (clean: true), and drops it
// otherwise (a JVM killed while writing it leaves part of one).
func cdsArchive(lib, main string, opts []string) (args []string, exited func(clean bool)) {
	if os.Getenv("OFFSETAGENT_JVM_CDS") == "off" {
		return nil, func(bool) {}
	}
	dir := filepath.Join(filepath.Dir(lib), "cds")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, func(bool) {}
	}
	java, _ := Java()
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", java, main)
	for _, o := range opts {
		if !strings.HasPrefix(o, "-D") { // system properties do not change what is archived
			fmt.Fprintln(h, o)
		}
	}
	path := filepath.Join(dir, main+"-"+hex.EncodeToString(h.Sum(nil))[:12]+".jsa")
	if st, err := os.Stat(path); err == nil && st.Size() > 0 {
		return []string{"-XX:SharedArchiveFile=" + path}, func(bool) {}
	}
	// Several JVMs of one kind may start before the first archive exists: each writes its own
	// and the last rename wins; any of them is as good as another.
	tmp, err := os.CreateTemp(dir, main+"-*.jsa.tmp")
	if err != nil {
		return nil, func(bool) {}
	}
	tmp.Close()
	os.Remove(tmp.Name()) // the JVM creates it at exit
	return []string{"-XX:ArchiveClassesAtExit=" + tmp.Name()}, func(clean bool) {
		if st, err := os.Stat(tmp.Name()); clean && err == nil && st.Size() > 0 {
			_ = os.Rename(tmp.Name(), path)
			return
		}
		_ = os.Remove(tmp.Name())
	}
}
