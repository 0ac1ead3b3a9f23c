package main

import (
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "k8s.io/component-base/cli"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "github.com/spf13/cobra"
)

func main() {}
