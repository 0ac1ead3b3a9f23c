package main

// `up --unix-proxy PATH`: a root-only unix socket that forwards every connection
// to the API server's TCP port. A control plane running in a network namespace
// of its own (the lab's) is reachable from the host through it, without any
// interface or route in the host's namespace: unix sockets live in the file
// system, not in a network namespace. TLS runs end to end through it.

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
)

func serveUnixProxy(ctx context.Context, path, target string) (func(), error) {
	_ = os.Remove(path) // a stale socket of a killed run
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("unix proxy: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("unix proxy: %w", err)
	}
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return // closed
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				forward(ctx, c, target)
			}()
		}
	}()
	return func() { l.Close(); os.Remove(path) }, nil
}

func forward(ctx context.Context, c net.Conn, target string) {
	defer c.Close()
	var d net.Dialer
	up, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		fmt.Fprintf(os.Stderr, "flock-controlplane up: unix proxy: %v\n", err)
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}
