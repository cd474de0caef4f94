package realkafka

import "syscall"

// procAttr puts the JVM in its own process group (stop signals the whole group) and kills it
// when the process that started it dies, even without running its cleanup (a test timeout).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
