package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// child is a child process of this binary (the broker, or the agent of the bulk scenario),
// driven through its stdin and stdout; its stderr is ours.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startChild runs this binary with args; what names the child in errors.
func startChild(what string, args ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s stdin: %w", what, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s stdout: %w", what, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s process: %w", what, err)
	}
	return &child{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}, nil
}

// stop closes the child's stdin, which tells it to finish, and waits for it, killing it after
// wait.
func (c *child) stop(wait time.Duration) {
	_ = c.stdin.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		_ = c.cmd.Process.Kill()
		<-done
	}
}
