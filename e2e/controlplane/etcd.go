package main

// `etcd`: a single-member etcd (go.etcd.io/etcd/server/v3/embed, the version
// k8s.io/kubernetes pins) over plain HTTP on loopback. It is test storage for
// one API server, so no TLS and no clustering.

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/embed"
)

type etcdOptions struct {
	dataDir   string
	name      string
	clientURL string
	peerURL   string
	logLevel  string
	noFsync   bool
	quota     int64
}

func newEtcdCommand() *cobra.Command {
	o := etcdOptions{}
	cmd := &cobra.Command{
		Use:   "etcd --data-dir DIR --listen-client-url http://127.0.0.1:PORT --listen-peer-url http://127.0.0.1:PORT",
		Short: "Run a single-member embedded etcd",
		Long: `Runs a single-member etcd until SIGINT/SIGTERM. Readiness: GET
<client-url>/health returns {"health":"true"}. An existing data directory is
reopened (the member restarts with its data).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runEtcd(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", "", "data directory (created if missing)")
	f.StringVar(&o.name, "name", "flock", "member name")
	f.StringVar(&o.clientURL, "listen-client-url", "http://127.0.0.1:2379", "client URL (also advertised)")
	f.StringVar(&o.peerURL, "listen-peer-url", "http://127.0.0.1:2380", "peer URL (also advertised; unused by a single member but must be free)")
	f.StringVar(&o.logLevel, "log-level", "warn", "debug, info, warn or error")
	f.BoolVar(&o.noFsync, "unsafe-no-fsync", false, "skip fsync (faster tests; data may be lost on a machine crash)")
	f.Int64Var(&o.quota, "quota-backend-bytes", 2<<30, "backend size quota")
	_ = cmd.MarkFlagRequired("data-dir")
	return cmd
}

func runEtcd(ctx context.Context, o etcdOptions) error {
	client, err := url.Parse(o.clientURL)
	if err != nil {
		return fmt.Errorf("--listen-client-url: %w", err)
	}
	peer, err := url.Parse(o.peerURL)
	if err != nil {
		return fmt.Errorf("--listen-peer-url: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = o.name
	cfg.Dir = o.dataDir
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(o.name)
	cfg.LogLevel = o.logLevel
	cfg.UnsafeNoFsync = o.noFsync
	cfg.QuotaBackendBytes = o.quota
	// No auto-compaction: the API server compacts etcd itself (--etcd-compaction-interval).

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()

	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintf(os.Stderr, "flock-controlplane etcd: ready, serving %s\n", o.clientURL)
	case <-time.After(60 * time.Second):
		return fmt.Errorf("etcd did not become ready within 60s")
	case <-ctx.Done():
		return nil
	}

	select {
	case err := <-e.Err():
		return err
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "flock-controlplane etcd: stopping")
		return nil
	}
}
