// Command goldens writes the repository's golden tables with a real JVM (package oracle, which
// lists them): every set, or the sets named as arguments. java and, for the first download of
// the real Kafka tier's jars, mvn must be on the PATH. Run from the repository's root:
// make goldens (GOLDENS="props regex" for some).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/offsetagent/offsetagent/integration/realkafka"
	"github.com/offsetagent/offsetagent/tools/oracle"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "goldens: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, names []string) error {
	sets, err := oracle.Lookup(names...)
	if err != nil {
		return err
	}
	java, err := realkafka.Java()
	if err != nil {
		return err
	}
	lib, err := realkafka.Jars(ctx, realkafka.JarsConfig{Log: os.Stderr})
	if err != nil {
		return err
	}
	classes, err := os.MkdirTemp("", "oracle-classes-")
	if err != nil {
		return fmt.Errorf("create the classes' folder: %w", err)
	}
	defer os.RemoveAll(classes)
	jvm, err := oracle.NewJVM(ctx, java, lib, ".", classes)
	if err != nil {
		return err
	}
	for _, s := range sets {
		files, err := s.Make(ctx, jvm, ".")
		if err != nil {
			return fmt.Errorf("golden set %s: %w", s.Name, err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.FromSlash(f.Path), f.Data, 0o644); err != nil {
				return fmt.Errorf("golden set %s: %w", s.Name, err)
			}
			fmt.Fprintf(os.Stderr, "goldens: %s: wrote %s\n", s.Name, f.Path)
		}
	}
	return nil
}
