package main

// Small x509 helpers: a self-signed CA and leaf certificates signed by it.
// ECDSA P-256 everywhere: fast to generate (tests create many identities) and
// accepted by every Kubernetes component, including for service-account tokens (ES256).

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// keyPair is a certificate with its private key, kept both parsed and PEM-encoded.
type keyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// leafSpec describes a certificate to issue.
type leafSpec struct {
	CommonName   string
	Organization []string // for client certs: the Kubernetes groups
	DNSNames     []string
	IPs          []net.IP
	Server       bool // serverAuth usage (else clientAuth only)
	Validity     time.Duration
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// newCA creates a self-signed CA.
func newCA(cn string, validity time.Duration) (*keyPair, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour), // tolerate small clock skew
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	return assemble(der, key)
}

// issue signs a new leaf certificate with the CA.
func (ca *keyPair) issue(s leafSpec) (*keyPair, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	usage := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if s.Server {
		usage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: s.CommonName, Organization: s.Organization},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(s.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usage,
		DNSNames:     s.DNSNames,
		IPAddresses:  s.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, err
	}
	return assemble(der, key)
}

func assemble(der []byte, key crypto.Signer) (*keyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{Cert: cert, Key: key, CertPEM: encodeCert(der), KeyPEM: keyPEM}, nil
}

// write stores the pair as certPath (0644) and keyPath (0600).
func (kp *keyPair) write(certPath, keyPath string) error {
	if err := os.WriteFile(keyPath, kp.KeyPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(certPath, kp.CertPEM, 0o644)
}

// loadKeyPair reads a PEM certificate and PKCS#8 key written by write.
func loadKeyPair(certPath, keyPath string) (*keyPair, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("%s / %s: no PEM data", certPath, keyPath)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certPath, err)
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New(keyPath + ": not a signing key")
	}
	return &keyPair{Cert: cert, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// writeKeyOnly writes a bare key pair (service-account signing key):
// private key as PKCS#8 (0600), public key as PKIX "PUBLIC KEY" PEM.
func writeKeyOnly(privPath, pubPath string) error {
	key, err := newKey()
	if err != nil {
		return err
	}
	privPEM, err := encodeKey(key)
	if err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	if err := os.WriteFile(privPath, privPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644)
}
