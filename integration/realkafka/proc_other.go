//go:build !linux

package realkafka

import "syscall"

// procAttr puts the JVM in its own process group, so that stop signals the whole group.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
