// Command flock-controlplane runs a real Kubernetes control plane for flock's
// cluster and lab tests: embedded etcd, kube-apiserver, kube-controller-manager
// and kube-scheduler built from the pinned k8s.io/kubernetes release, plus the
// certificates and kubeconfigs they need. Each component runs as its own
// process (a subcommand of this one binary); `up` supervises a whole set.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/component-base/version"
)

func main() {
	// Upstream components get their argv untouched, exactly as in their own binaries.
	if len(os.Args) > 1 {
		for _, c := range upstreamComponents {
			if os.Args[1] == c.use {
				c.run(os.Args[2:])
			}
		}
	}
	// Kubernetes packages register flags (e.g. --version) on pflag.CommandLine,
	// which cobra merges into every command; they mean nothing for ours.
	pflag.CommandLine.VisitAll(func(f *pflag.Flag) { f.Hidden = true })

	root := &cobra.Command{
		Use:   "flock-controlplane",
		Short: "Test control plane for flock (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)",
		Long: `Test control plane for flock, built from k8s.io/kubernetes ` + version.Get().GitVersion + `.

Typical use:
  flock-controlplane up --dir /tmp/cp          # everything, on free ports; prints a JSON line
Or piece by piece (each a long-running process):
  flock-controlplane pki --dir D/pki --server https://127.0.0.1:6443
  flock-controlplane etcd --data-dir D/etcd --listen-client-url http://127.0.0.1:2379 --listen-peer-url http://127.0.0.1:2380
  flock-controlplane apiserver --pki-dir D/pki --secure-port=6443 --etcd-servers=http://127.0.0.1:2379
  flock-controlplane controller-manager --pki-dir D/pki
  flock-controlplane scheduler --pki-dir D/pki`,
		SilenceUsage: true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newPKICommand(), newMintCertCommand(), newEtcdCommand(), newUpCommand(), newVersionCommand())
	for _, c := range upstreamComponents {
		root.AddCommand(c.command())
	}
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the Kubernetes version info (as the API server's /version reports it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := json.MarshalIndent(version.Get(), "", "  ")
			fmt.Fprintln(cmd.OutOrStdout(), string(data))
			return err
		},
	}
}
