package main

// Kubeconfigs with the CA and client credentials embedded, so a file can be
// copied or handed to kubectl/@kubernetes/client-node on its own.

import (
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const kubeconfigName = "flock" // cluster and context name

func kubeconfigBytes(server string, caPEM []byte, kp *keyPair, user string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[kubeconfigName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.CertPEM, ClientKeyData: kp.KeyPEM}
	cfg.Contexts[kubeconfigName] = &clientcmdapi.Context{Cluster: kubeconfigName, AuthInfo: user}
	cfg.CurrentContext = kubeconfigName
	return clientcmd.Write(*cfg)
}

func writeKubeconfig(path, server string, caPEM []byte, kp *keyPair, user string) error {
	data, err := kubeconfigBytes(server, caPEM, kp, user)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// kubeconfigServer returns the server URL of a kubeconfig's current context.
func kubeconfigServer(path string) (string, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return "", err
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return "", fmt.Errorf("%s: no current context", path)
	}
	cluster, ok := cfg.Clusters[ctx.Cluster]
	if !ok {
		return "", fmt.Errorf("%s: no cluster %q", path, ctx.Cluster)
	}
	return cluster.Server, nil
}
