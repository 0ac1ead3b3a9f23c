package main

// `up`: the whole control plane (or a chosen subset) as child processes of
// this binary, started in dependency order, each waited for until healthy. One
// JSON line on stdout tells the caller where everything is; SIGINT/SIGTERM
// stops the children in reverse order. Any child exiting early stops the rest
// and makes `up` fail, with the end of that child's log on stderr.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

var allComponents = []string{"etcd", "apiserver", "controller-manager", "scheduler"}

type upOptions struct {
	dir        string
	components []string
	etcdPort   int
	apiPort    int
	etcdURL    string // external etcd, when etcd is not among the components
	server     string // external API server, when apiserver is not among the components
	sans       []string
	unixProxy  string // a unix socket forwarding to the API server (see unixproxy.go)
	noFsync    bool
	timeout    time.Duration
	extra      map[string]*[]string // component -> extra upstream args
}

// upState is the JSON line printed on stdout and written to DIR/controlplane.json.
type upState struct {
	Server     string         `json:"server"`
	Etcd       string         `json:"etcd"`
	PKIDir     string         `json:"pkiDir"`
	Kubeconfig string         `json:"kubeconfig"`
	CAFile     string         `json:"caFile"`
	AdminCert  string         `json:"adminCert"`
	AdminKey   string         `json:"adminKey"`
	LogDir     string         `json:"logDir"`
	PIDs       map[string]int `json:"pids"`
}

func newUpCommand() *cobra.Command {
	o := upOptions{extra: map[string]*[]string{}}
	cmd := &cobra.Command{
		Use:   "up --dir DIR [--components etcd,apiserver,controller-manager,scheduler]",
		Short: "Run the control plane (or a subset) as supervised child processes",
		Long: `Creates DIR/pki (see pki), DIR/etcd (data), DIR/logs/<component>.log, starts the
chosen components on free loopback ports (or the ports given), waits until each
is healthy, then prints one JSON line (also written to DIR/controlplane.json):

  {"server":"https://127.0.0.1:PORT","etcd":"http://127.0.0.1:PORT","pkiDir":...,
   "kubeconfig":"DIR/pki/admin.kubeconfig","caFile":...,"adminCert":...,"adminKey":...,
   "logDir":...,"pids":{"etcd":N,...}}

Runs until SIGINT/SIGTERM, then stops the components in reverse order and exits 0.
If a component exits on its own, the others are stopped and up exits 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runUp(ctx, o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "working directory (created if missing)")
	f.StringSliceVar(&o.components, "components", allComponents, "components to run, in any order")
	f.IntVar(&o.etcdPort, "etcd-port", 0, "etcd client port (0 = pick a free one)")
	f.IntVar(&o.apiPort, "apiserver-port", 0, "API server port (0 = pick a free one)")
	f.StringVar(&o.etcdURL, "etcd-url", "", "existing etcd to use when etcd is not among --components")
	f.StringVar(&o.server, "server", "", "existing API server when apiserver is not among --components")
	f.StringSliceVar(&o.sans, "san", nil, "extra IP/DNS name for the API server certificate (see pki); repeatable")
	f.StringVar(&o.unixProxy, "unix-proxy", "", "also serve the API server on this unix socket (0600), forwarded to its TCP port")
	f.BoolVar(&o.noFsync, "etcd-unsafe-no-fsync", false, "run etcd without fsync (faster tests)")
	f.DurationVar(&o.timeout, "ready-timeout", 2*time.Minute, "how long each component may take to become healthy")
	for _, c := range allComponents[1:] {
		o.extra[c] = f.StringArray(c+"-arg", nil, "extra upstream flag for "+c+", e.g. --"+c+"-arg=--v=2; repeatable")
	}
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}

func runUp(ctx context.Context, o upOptions, stdout io.Writer) error {
	for _, c := range o.components {
		if !slices.Contains(allComponents, c) {
			return fmt.Errorf("unknown component %q (want some of %v)", c, allComponents)
		}
	}
	has := func(c string) bool { return slices.Contains(o.components, c) }
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	pkiDir, logDir := filepath.Join(dir, "pki"), filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}

	// Ports: chosen up front, because the kubeconfigs written by pki name the server.
	ports := map[string]int{"etcd": o.etcdPort, "apiserver": o.apiPort}
	var unset []string
	for _, name := range []string{"etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler"} {
		if ports[name] == 0 {
			unset = append(unset, name)
		}
	}
	free, err := freePorts(len(unset))
	if err != nil {
		return err
	}
	for i, name := range unset {
		ports[name] = free[i]
	}
	if has("etcd") {
		o.etcdURL = loopbackURL("http", ports["etcd"])
	} else if o.etcdURL == "" && has("apiserver") {
		return fmt.Errorf("--etcd-url is required when etcd is not among --components")
	}
	if has("apiserver") {
		o.server = loopbackURL("https", ports["apiserver"])
	} else if o.server == "" {
		return fmt.Errorf("--server is required when apiserver is not among --components")
	}
	if err := writePKI(pkiDir, o.server, o.sans); err != nil {
		return fmt.Errorf("pki: %w", err)
	}

	var children []*child
	defer func() { // reverse order: dependents first
		for i := len(children) - 1; i >= 0; i-- {
			fmt.Fprintf(os.Stderr, "flock-controlplane up: stopping %s\n", children[i].name)
			children[i].stop(20 * time.Second)
		}
	}()
	for _, name := range allComponents { // dependency order
		if !has(name) {
			continue
		}
		var health string
		var args []string
		switch name {
		case "etcd":
			health = o.etcdURL + "/health"
			args = []string{"etcd", "--data-dir", filepath.Join(dir, "etcd"), "--listen-client-url", o.etcdURL,
				"--listen-peer-url", loopbackURL("http", ports["etcd-peer"]),
				"--unsafe-no-fsync=" + strconv.FormatBool(o.noFsync)}
		case "apiserver":
			health = o.server + "/readyz"
			args = []string{"apiserver", "--pki-dir", pkiDir, "--secure-port=" + strconv.Itoa(ports[name]),
				"--etcd-servers=" + o.etcdURL}
		default: // controller-manager, scheduler: serve /healthz on a free port
			health = loopbackURL("https", ports[name]) + "/healthz"
			args = []string{name, "--pki-dir", pkiDir, "--secure-port=" + strconv.Itoa(ports[name])}
		}
		if name != "etcd" {
			args = append(args, *o.extra[name]...)
		}
		c, err := startChild(name, filepath.Join(logDir, name+".log"), args...)
		if err != nil {
			return err
		}
		children = append(children, c)
		fmt.Fprintf(os.Stderr, "flock-controlplane up: started %s (pid %d), waiting for %s\n", name, c.cmd.Process.Pid, health)
		if err := waitHealthy(ctx, c, health, pkiDir, o.timeout); err != nil {
			return err
		}
	}

	if o.unixProxy != "" && has("apiserver") {
		closeProxy, err := serveUnixProxy(ctx, o.unixProxy, "127.0.0.1:"+strconv.Itoa(ports["apiserver"]))
		if err != nil {
			return err
		}
		defer closeProxy()
	}

	state := upState{
		Server: o.server, Etcd: o.etcdURL, PKIDir: pkiDir, Kubeconfig: filepath.Join(pkiDir, "admin.kubeconfig"),
		CAFile: filepath.Join(pkiDir, fileCACert), AdminCert: filepath.Join(pkiDir, "admin.crt"),
		AdminKey: filepath.Join(pkiDir, "admin.key"), LogDir: logDir, PIDs: map[string]int{},
	}
	for _, c := range children {
		state.PIDs[c.name] = c.cmd.Process.Pid
	}
	line, _ := json.Marshal(state)
	statePath := filepath.Join(dir, "controlplane.json")
	if err := os.WriteFile(statePath, append(line, '\n'), 0o644); err != nil {
		return err
	}
	defer os.Remove(statePath)
	fmt.Fprintf(stdout, "%s\n", line)
	fmt.Fprintln(os.Stderr, "flock-controlplane up: ready")

	// Run until a signal or until any child dies.
	exited := make(chan *child, len(children))
	for _, c := range children {
		go func() { <-c.done; exited <- c }()
	}
	select {
	case <-ctx.Done():
		return nil
	case c := <-exited:
		return c.failure()
	}
}

func loopbackURL(scheme string, port int) string {
	return scheme + "://127.0.0.1:" + strconv.Itoa(port)
}

// freePorts asks the kernel for n distinct unused loopback ports (all listeners
// are held open until every port is known). Another process could still take
// one before the component binds it; on a test machine that is rare.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
