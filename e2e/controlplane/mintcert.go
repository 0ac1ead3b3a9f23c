package main

// `mint-cert`: a client certificate for an arbitrary user and groups, signed by
// the PKI directory's CA, delivered as a self-contained kubeconfig. Tests use it
// to act as a restricted identity (RBAC checks) or as a node
// (user system:node:NAME, group system:nodes) for the Node authorizer.

import (
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
)

func newMintCertCommand() *cobra.Command {
	var dir, user, server, out string
	var groups []string
	var validity time.Duration
	cmd := &cobra.Command{
		Use:   "mint-cert --dir DIR --user USER [--group GROUP]... [--out FILE]",
		Short: "Issue a client certificate for a user/groups and emit a kubeconfig",
		Long: `Issues a client certificate CN=USER, O=GROUP... signed by DIR/ca.key and
writes a kubeconfig (credentials embedded) to --out, or to stdout when --out is
"-" (the default). The server URL defaults to the one in DIR/admin.kubeconfig.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ca, err := loadCA(dir)
			if err != nil {
				return err
			}
			if server == "" {
				if server, err = kubeconfigServer(filepath.Join(dir, "admin.kubeconfig")); err != nil {
					return err
				}
			}
			kp, err := ca.issue(leafSpec{CommonName: user, Organization: groups, Validity: validity})
			if err != nil {
				return err
			}
			data, err := kubeconfigBytes(server, ca.CertPEM, kp, user)
			if err != nil {
				return err
			}
			if out == "-" {
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			return os.WriteFile(out, data, 0o600)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "PKI directory created by `pki`")
	f.StringVar(&user, "user", "", "user name (certificate CN)")
	f.StringArrayVar(&groups, "group", nil, "group (certificate O); repeatable")
	f.StringVar(&server, "server", "", "API server URL (default: the one in DIR/admin.kubeconfig)")
	f.StringVar(&out, "out", "-", `kubeconfig file to write ("-" = stdout)`)
	f.DurationVar(&validity, "validity", leafValidity, "certificate lifetime")
	_ = cmd.MarkFlagRequired("dir")
	_ = cmd.MarkFlagRequired("user")
	return cmd
}
