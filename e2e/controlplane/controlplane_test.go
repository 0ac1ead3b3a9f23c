package main

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestWritePKI(t *testing.T) {
	dir := t.TempDir()
	if err := writePKI(dir, "https://127.0.0.1:1234", []string{"10.0.0.7", "lab.example"}); err != nil {
		t.Fatal(err)
	}
	ca, err := loadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	verify := func(stem string, usage x509.ExtKeyUsage) *x509.Certificate {
		t.Helper()
		kp, err := loadKeyPair(filepath.Join(dir, stem+".crt"), filepath.Join(dir, stem+".key"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kp.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Fatalf("%s: %v", stem, err)
		}
		return kp.Cert
	}
	srv := verify("apiserver", x509.ExtKeyUsageServerAuth)
	if err := srv.VerifyHostname("10.0.0.7"); err != nil {
		t.Error(err)
	}
	if err := srv.VerifyHostname("kubernetes.default.svc"); err != nil {
		t.Error(err)
	}
	admin := verify("admin", x509.ExtKeyUsageClientAuth)
	if admin.Subject.CommonName != adminUser || !slices.Equal(admin.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("admin subject %v", admin.Subject)
	}
	if cm := verify("controller-manager", x509.ExtKeyUsageClientAuth); cm.Subject.CommonName != "system:kube-controller-manager" {
		t.Errorf("controller-manager subject %v", cm.Subject)
	}
	for _, f := range []string{fileSAKey, fileSAPub, fileFrontProxyCert, "scheduler.kubeconfig"} {
		if !exists(filepath.Join(dir, f)) {
			t.Errorf("%s missing", f)
		}
	}
	if server, err := kubeconfigServer(filepath.Join(dir, "admin.kubeconfig")); err != nil || server != "https://127.0.0.1:1234" {
		t.Errorf("server %q, %v", server, err)
	}

	// A second run keeps the CA and rewrites the kubeconfigs.
	caBefore, _ := os.ReadFile(filepath.Join(dir, fileCACert))
	if err := writePKI(dir, "https://127.0.0.1:999", nil); err != nil {
		t.Fatal(err)
	}
	caAfter, _ := os.ReadFile(filepath.Join(dir, fileCACert))
	if string(caBefore) != string(caAfter) {
		t.Error("CA regenerated")
	}
	if server, _ := kubeconfigServer(filepath.Join(dir, "scheduler.kubeconfig")); server != "https://127.0.0.1:999" {
		t.Errorf("server not rewritten: %q", server)
	}
}

func TestDefaults(t *testing.T) {
	defaults := []flagDefault{{"a", "1"}, {"b", "2"}, {"c", "3"}}
	args := []string{"--b=x", "--c", "y", "--v=2"}
	got := withDefaults(defaults, givenFlags(args), args)
	want := []string{"--a=1", "--b=x", "--c", "y", "--v=2"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}

	dir, rest := extractFlag([]string{"--x", "--pki-dir", "/p", "--y"}, "pki-dir")
	if dir != "/p" || !slices.Equal(rest, []string{"--x", "--y"}) {
		t.Errorf("extractFlag: %q %v", dir, rest)
	}

	for addr, want := range map[string]string{"": "none", "127.0.0.1": "none", "::1": "none", "10.1.2.3": "lease"} {
		given := map[string]string{}
		if addr != "" {
			given["advertise-address"] = addr
		}
		if got := endpointReconciler(given); got != want {
			t.Errorf("endpointReconciler(%q) = %s, want %s", addr, got, want)
		}
	}
}
