package main

// Child processes for `up`: this same binary re-run with a subcommand, output
// appended to a log file, in its own process group (a terminal's Ctrl-C reaches
// only `up`, which then stops the children in order) and killed by the kernel
// if `up` itself dies (Pdeathsig), so no component outlives its supervisor.

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

type child struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	err     error         // exit status; valid after done is closed
}

func startChild(name, logPath string, args ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// Exec through /proc/self/exe: it still works when a rebuild has replaced or
	// pruned the binary file since `up` started. argv[0] keeps the real path for ps.
	path := self
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		path = "/proc/self/exe"
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	// Logs are appended across runs in the same directory; mark where this one starts.
	fmt.Fprintf(logFile, "=== %s flock-controlplane %s\n", time.Now().Format(time.RFC3339), strings.Join(args, " "))
	cmd := exec.Command(path, args...)
	cmd.Args[0] = self
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &child{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		logFile.Close()
		close(c.done)
	}()
	return c, nil
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM (graceful shutdown in every component) and SIGKILL after grace.
func (c *child) stop(grace time.Duration) {
	if c.exited() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// failure describes an unexpected exit, with the end of the child's log.
func (c *child) failure() error {
	return fmt.Errorf("%s exited (%v); last lines of %s:\n%s", c.name, c.err, c.logPath, tail(c.logPath, 25))
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
