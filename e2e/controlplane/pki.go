package main

// `pki`: the certificates, keys and kubeconfigs a test control plane needs.
// Everything is written into one directory whose layout the other
// subcommands (apiserver/controller-manager/scheduler --pki-dir, up,
// mint-cert) rely on.

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
)

// File names inside the PKI directory.
const (
	fileCACert        = "ca.crt"
	fileCAKey         = "ca.key"
	fileAPIServerCert = "apiserver.crt"
	fileAPIServerKey  = "apiserver.key"
	fileSAKey         = "sa.key" // service-account token signing key (private)
	fileSAPub         = "sa.pub" // service-account token verification key (public)
	// The aggregation layer's own CA and the client cert the API server presents to
	// aggregated API servers. Without a requestheader CA, controller-manager and
	// scheduler log an error about extension-apiserver-authentication every few seconds.
	fileFrontProxyCACert = "front-proxy-ca.crt"
	fileFrontProxyCAKey  = "front-proxy-ca.key"
	fileFrontProxyCert   = "front-proxy-client.crt"
	fileFrontProxyKey    = "front-proxy-client.key"
	frontProxyUser       = "front-proxy-client"
)

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	// AdminUser is the CN of the admin client certificate (group system:masters).
	adminUser = "flock-admin"
)

// identity is a client certificate + kubeconfig written by `pki`.
type identity struct {
	name   string // file stem: NAME.crt, NAME.key, NAME.kubeconfig
	user   string
	groups []string
}

var identities = []identity{
	{"admin", adminUser, []string{"system:masters"}},
	{"controller-manager", "system:kube-controller-manager", nil},
	{"scheduler", "system:kube-scheduler", nil},
	// The API server's client certificate towards kubelets (exec, logs, port-forward).
	{kubeletClient, "kube-apiserver-kubelet-client", []string{"system:masters"}},
}

// kubeletClient is the file stem of the API server's client certificate for kubelets.
const kubeletClient = "apiserver-kubelet-client"

func newPKICommand() *cobra.Command {
	var dir, server string
	var sans []string
	cmd := &cobra.Command{
		Use:   "pki --dir DIR --server https://127.0.0.1:PORT",
		Short: "Create the CA, serving/client certificates, service-account keys and kubeconfigs",
		Long: `Creates (or completes) a PKI directory:

  ca.crt ca.key                     cluster CA (signs everything below; also the --client-ca-file)
  apiserver.crt apiserver.key       API server serving cert (127.0.0.1, ::1, localhost,
                                    kubernetes.default.svc..., 10.96.0.1, plus --san)
  sa.key sa.pub                     service-account token signing / verification keys
  front-proxy-ca.{crt,key}          aggregation-layer CA (--requestheader-client-ca-file)
  front-proxy-client.{crt,key}      CN=front-proxy-client, the API server's proxy client cert
  admin.{crt,key,kubeconfig}        CN=flock-admin, O=system:masters
  controller-manager.{crt,key,kubeconfig}  CN=system:kube-controller-manager
  scheduler.{crt,key,kubeconfig}           CN=system:kube-scheduler
  apiserver-kubelet-client.{crt,key}       CN=kube-apiserver-kubelet-client, O=system:masters
                                           (the API server's client cert towards kubelets)

Existing keys and certificates are kept (so it is safe to run again); the
kubeconfigs are always rewritten to point at --server. Delete the directory to
start from scratch.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writePKI(dir, server, sans)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "PKI directory (created if missing)")
	cmd.Flags().StringVar(&server, "server", "", "API server URL written into the kubeconfigs, e.g. https://127.0.0.1:6443")
	cmd.Flags().StringSliceVar(&sans, "san", nil, "extra subject alternative name (IP or DNS) for the API server certificate; repeatable")
	_ = cmd.MarkFlagRequired("dir")
	_ = cmd.MarkFlagRequired("server")
	return cmd
}

func writePKI(dir, server string, sans []string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	p := func(name string) string { return filepath.Join(dir, name) }

	ca, err := loadOrCreateCA(p(fileCACert), p(fileCAKey), "flock-test-ca")
	if err != nil {
		return err
	}
	frontProxyCA, err := loadOrCreateCA(p(fileFrontProxyCACert), p(fileFrontProxyCAKey), "flock-test-front-proxy-ca")
	if err != nil {
		return err
	}
	if _, err := loadOrIssueClient(frontProxyCA, p(fileFrontProxyCert), p(fileFrontProxyKey), frontProxyUser, nil); err != nil {
		return err
	}

	if !exists(p(fileAPIServerCert)) {
		spec := leafSpec{
			CommonName: "kube-apiserver",
			Server:     true,
			Validity:   leafValidity,
			DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc.cluster.local"},
			// 10.96.0.1: the `kubernetes` Service IP with the default --service-cluster-ip-range.
			IPs: []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback, net.ParseIP("10.96.0.1")},
		}
		for _, s := range sans {
			if ip := net.ParseIP(s); ip != nil {
				spec.IPs = append(spec.IPs, ip)
			} else {
				spec.DNSNames = append(spec.DNSNames, s)
			}
		}
		kp, err := ca.issue(spec)
		if err != nil {
			return err
		}
		if err := kp.write(p(fileAPIServerCert), p(fileAPIServerKey)); err != nil {
			return err
		}
	}

	if !exists(p(fileSAKey)) {
		if err := writeKeyOnly(p(fileSAKey), p(fileSAPub)); err != nil {
			return err
		}
	}

	for _, id := range identities {
		kp, err := loadOrIssueClient(ca, p(id.name+".crt"), p(id.name+".key"), id.user, id.groups)
		if err != nil {
			return err
		}
		if err := writeKubeconfig(p(id.name+".kubeconfig"), server, ca.CertPEM, kp, id.user); err != nil {
			return err
		}
	}
	return nil
}

func loadOrCreateCA(certPath, keyPath, cn string) (*keyPair, error) {
	if exists(certPath) {
		return loadKeyPair(certPath, keyPath)
	}
	ca, err := newCA(cn, caValidity)
	if err != nil {
		return nil, err
	}
	return ca, ca.write(certPath, keyPath)
}

// loadCA reads the CA of an existing PKI directory.
func loadCA(dir string) (*keyPair, error) {
	ca, err := loadKeyPair(filepath.Join(dir, fileCACert), filepath.Join(dir, fileCAKey))
	if err != nil {
		return nil, fmt.Errorf("reading CA (run `flock-controlplane pki` first): %w", err)
	}
	return ca, nil
}

func loadOrIssueClient(ca *keyPair, certPath, keyPath, user string, groups []string) (*keyPair, error) {
	if exists(certPath) {
		return loadKeyPair(certPath, keyPath)
	}
	kp, err := ca.issue(leafSpec{CommonName: user, Organization: groups, Validity: leafValidity})
	if err != nil {
		return nil, err
	}
	return kp, kp.write(certPath, keyPath)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
