package main

// `apiserver`, `controller-manager`, `scheduler`: the upstream cobra commands
// of k8s.io/kubernetes, each run in its own process (they register global
// flags, metrics and feature gates, so one process per component avoids
// clashes). All upstream flags are accepted unchanged. With --pki-dir the
// wrapper first fills in test defaults for every flag the caller does not pass
// itself (a default is never combined with a caller's value, which matters
// for list flags such as --enable-admission-plugins).

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"

	// The same side-effect imports as the upstream main packages.
	_ "time/tzdata" // CronJob time zones

	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
)

// flagDefault is one upstream flag the wrapper sets unless the caller does.
type flagDefault struct{ name, value string }

type upstreamComponent struct {
	use        string
	short      string
	newCommand func() *cobra.Command
	note       string // appended to the help text
	// defaults for a PKI dir; given holds the flags the caller passed (name -> last value).
	defaults func(pkiDir string, given map[string]string) []flagDefault
}

var upstreamComponents = []upstreamComponent{
	{
		use:        "apiserver",
		short:      "Run kube-apiserver (upstream flags; --pki-dir adds test defaults)",
		newCommand: apiserver.NewAPIServerCommand,
		note:       "--endpoint-reconciler-type defaults to none for a loopback --advertise-address, else lease.\n",
		defaults: func(d string, given map[string]string) []flagDefault {
			return []flagDefault{
				{"bind-address", "127.0.0.1"},
				{"advertise-address", "127.0.0.1"},
				{"endpoint-reconciler-type", endpointReconciler(given)},
				{"secure-port", "6443"},
				{"etcd-servers", "http://127.0.0.1:2379"},
				{"tls-cert-file", filepath.Join(d, fileAPIServerCert)},
				{"tls-private-key-file", filepath.Join(d, fileAPIServerKey)},
				{"client-ca-file", filepath.Join(d, fileCACert)},
				{"authorization-mode", "Node,RBAC"},
				// Added to the default-on plugins (NamespaceLifecycle, ServiceAccount, ...).
				{"enable-admission-plugins", "NodeRestriction"},
				// The flock agent DaemonSet runs privileged with host networking.
				{"allow-privileged", "true"},
				{"service-account-issuer", "https://kubernetes.default.svc.cluster.local"},
				{"service-account-key-file", filepath.Join(d, fileSAPub)},
				{"service-account-signing-key-file", filepath.Join(d, fileSAKey)},
				{"service-cluster-ip-range", "10.96.0.0/12"},
				// Aggregation layer, as kubeadm sets it up.
				{"requestheader-client-ca-file", filepath.Join(d, fileFrontProxyCACert)},
				{"requestheader-allowed-names", frontProxyUser},
				{"requestheader-username-headers", "X-Remote-User"},
				{"requestheader-group-headers", "X-Remote-Group"},
				{"requestheader-extra-headers-prefix", "X-Remote-Extra-"},
				{"proxy-client-cert-file", filepath.Join(d, fileFrontProxyCert)},
				{"proxy-client-key-file", filepath.Join(d, fileFrontProxyKey)},
				// exec, logs and port-forward go to the kubelet with this identity.
				{"kubelet-client-certificate", filepath.Join(d, kubeletClient+".crt")},
				{"kubelet-client-key", filepath.Join(d, kubeletClient+".key")},
			}
		},
	},
	{
		use:        "controller-manager",
		short:      "Run kube-controller-manager (upstream flags; --pki-dir adds test defaults)",
		newCommand: controllermanager.NewControllerManagerCommand,
		defaults: func(d string, _ map[string]string) []flagDefault {
			kc := filepath.Join(d, "controller-manager.kubeconfig")
			return []flagDefault{
				{"kubeconfig", kc},
				{"authentication-kubeconfig", kc},
				{"authorization-kubeconfig", kc},
				{"bind-address", "127.0.0.1"},
				// 0 = no HTTPS endpoint, so parallel control planes never clash on 10257.
				{"secure-port", "0"},
				// A single instance: no lease to wait for after a restart.
				{"leader-elect", "false"},
				{"controllers", "*"},
				{"use-service-account-credentials", "true"},
				{"service-account-private-key-file", filepath.Join(d, fileSAKey)},
				{"root-ca-file", filepath.Join(d, fileCACert)},
				{"cluster-signing-cert-file", filepath.Join(d, fileCACert)},
				{"cluster-signing-key-file", filepath.Join(d, fileCAKey)},
				// Notice dead (simulated) nodes quickly; upstream defaults are 5s / 50s.
				{"node-monitor-period", "2s"},
				{"node-monitor-grace-period", "20s"},
			}
		},
	},
	{
		use:        "scheduler",
		short:      "Run kube-scheduler (upstream flags; --pki-dir adds test defaults)",
		newCommand: func() *cobra.Command { return scheduler.NewSchedulerCommand() },
		defaults: func(d string, _ map[string]string) []flagDefault {
			kc := filepath.Join(d, "scheduler.kubeconfig")
			return []flagDefault{
				{"kubeconfig", kc},
				{"authentication-kubeconfig", kc},
				{"authorization-kubeconfig", kc},
				{"bind-address", "127.0.0.1"},
				{"secure-port", "0"},
				{"leader-elect", "false"},
			}
		},
	},
}

func (c upstreamComponent) command() *cobra.Command {
	var help strings.Builder
	fmt.Fprintf(&help, "%s\n\nAll upstream flags are accepted (see `flock-controlplane %s --help`).\n", c.short, c.use)
	fmt.Fprintf(&help, "With --pki-dir DIR (a `pki` directory) these defaults are added for flags not given:\n\n")
	for _, d := range c.defaults("DIR", nil) {
		fmt.Fprintf(&help, "  --%s=%s\n", d.name, d.value)
	}
	help.WriteString(c.note)
	return &cobra.Command{
		Use:                c.use + " [--pki-dir DIR] [upstream flags]",
		Short:              c.short,
		Long:               help.String(),
		DisableFlagParsing: true, // everything goes to the upstream command
		Run:                func(_ *cobra.Command, args []string) { c.run(args) },
	}
}

// run executes the upstream command with args (plus defaults) and exits.
func (c upstreamComponent) run(args []string) {
	pkiDir, rest := extractFlag(args, "pki-dir")
	final := rest
	if pkiDir != "" {
		given := givenFlags(rest)
		final = withDefaults(c.defaults(pkiDir, given), given, rest)
	}
	fmt.Fprintf(os.Stderr, "flock-controlplane %s: args %s\n", c.use, strings.Join(final, " "))
	cmd := c.newCommand()
	cmd.SetArgs(final)
	os.Exit(cli.Run(cmd))
}

// extractFlag removes --name=value / --name value from args and returns value.
func extractFlag(args []string, name string) (string, []string) {
	var value string
	rest := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "--"+name+"="):
			value = strings.TrimPrefix(a, "--"+name+"=")
		case a == "--"+name && i+1 < len(args):
			value = args[i+1]
			i++
		default:
			rest = append(rest, a)
		}
	}
	return value, rest
}

// givenFlags maps each --name[=value] in args to its (last) value.
func givenFlags(args []string) map[string]string {
	given := map[string]string{}
	for i, a := range args {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			value = args[i+1]
		}
		given[name] = value
	}
	return given
}

// withDefaults prepends a --name=value for each default whose flag is not given.
func withDefaults(defaults []flagDefault, given map[string]string, args []string) []string {
	var out []string
	for _, d := range defaults {
		if _, ok := given[d.name]; !ok {
			out = append(out, "--"+d.name+"="+d.value)
		}
	}
	return append(out, args...)
}

// endpointReconciler picks "none" for a loopback advertise address: the
// `kubernetes` Endpoints may not hold a loopback IP, and the default "lease"
// reconciler would log that error every 10s. A routable --advertise-address
// (e.g. a veth address reachable from lab nodes) keeps the upstream "lease".
func endpointReconciler(given map[string]string) string {
	addr, ok := given["advertise-address"]
	if !ok {
		return "none" // our default advertise address is 127.0.0.1
	}
	if ip := net.ParseIP(addr); ip != nil && ip.IsLoopback() {
		return "none"
	}
	return "lease"
}
