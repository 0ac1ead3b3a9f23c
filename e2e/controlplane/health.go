package main

// Health polling for `up`.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// waitHealthy polls url until it answers 200, the child exits, or timeout.
// The API server is verified against the cluster CA and sees the admin client
// certificate; controller-manager and scheduler serve a self-signed certificate
// of their own, so it is not verified (they allow /healthz anonymously).
func waitHealthy(ctx context.Context, c *child, url, pkiDir string, timeout time.Duration) error {
	client, err := healthClient(pkiDir, c.name == "controller-manager" || c.name == "scheduler")
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	last := "no answer yet"
	for {
		if ok, msg := probe(ctx, client, url); ok {
			return nil
		} else if msg != "" {
			last = msg
		}
		select {
		case <-c.done:
			return c.failure()
		case <-ctx.Done():
			return fmt.Errorf("interrupted while waiting for %s", c.name)
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy after %s (%s); log: %s", c.name, timeout, last, c.logPath)
		}
	}
}

func probe(ctx context.Context, client *http.Client, url string) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode == http.StatusOK {
		return true, ""
	}
	return false, fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
}

func healthClient(pkiDir string, insecure bool) (*http.Client, error) {
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, fileCACert))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	admin, err := tls.LoadX509KeyPair(filepath.Join(pkiDir, "admin.crt"), filepath.Join(pkiDir, "admin.key"))
	if err != nil {
		return nil, err
	}
	tlsConfig := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{admin}, InsecureSkipVerify: insecure}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}, nil
}
