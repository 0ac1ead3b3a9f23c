// What every flock build of Kubernetes' e2e specs shares, as test/e2e/e2e.go does it for the
// upstream suite, kept to what a lab needs: flags, the per-process cluster IP family and node
// count, waiting for schedulable nodes, the suite's ginkgo configuration. The spec packages are
// chosen by the test package that calls Main and Run (e2e/conformance: sig-network and
// sig-api-machinery; e2e/conformance/all: all of test/e2e, the certification run).
package suite

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
	conformancetestdata "k8s.io/kubernetes/test/conformance/testdata"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	e2enode "k8s.io/kubernetes/test/e2e/framework/node"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
	testfixtures "k8s.io/kubernetes/test/fixtures"
	utilnet "k8s.io/utils/net"

	// Freeze the feature and environment constants before the specs use them.
	_ "k8s.io/kubernetes/test/e2e/feature"

	// Framework extensions the full suite loads too: debug dumps on failure, and the check after
	// each spec that every node is still Ready.
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/kubernetes/test/utils/format"
)

// Main parses the e2e framework's flags and runs the tests (a test package's TestMain).
func Main(m *testing.M) {
	versionFlag := flag.CommandLine.Bool("version", false, "Displays version information.")
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if *versionFlag {
		fmt.Println(version.Get())
		os.Exit(0)
	}
	if flag.CommandLine.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown additional command line arguments: %s\n", flag.CommandLine.Args())
		os.Exit(1)
	}
	// The files specs read (manifests, kubectl's fixtures, the conformance test data), embedded as
	// upstream's e2e.test embeds them: no checkout of the repository is needed.
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	testfiles.AddFileSource(testfixtures.GetTestFixturesFS())
	testfiles.AddFileSource(conformancetestdata.GetConformanceTestdataFS())
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

var _ = ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) []byte {
	c, err := framework.LoadClientset()
	framework.ExpectNoError(err, "loading the client")
	timeouts := framework.NewTimeoutContext()
	framework.ExpectNoError(e2enode.WaitForAllNodesSchedulable(ctx, c, timeouts.NodeSchedulable))
	framework.Logf("e2e test version: %s", version.Get().GitVersion)
	if v, err := c.Discovery().ServerVersion(); err == nil {
		framework.Logf("kube-apiserver version: %s", v.GitVersion)
	}
	return nil
}, func(ctx context.Context, _ []byte) {
	// Every ginkgo process (each has its own TestContext): the node count the specs' "at least N
	// nodes" checks read (upstream's runner passes --num-nodes), and the cluster's primary family,
	// that of the kubernetes Service.
	c, err := framework.LoadClientset()
	framework.ExpectNoError(err, "loading the client")
	if framework.TestContext.CloudConfig.NumNodes == framework.DefaultNumNodes {
		nodes, err := e2enode.GetReadySchedulableNodes(ctx, c)
		framework.ExpectNoError(err)
		framework.TestContext.CloudConfig.NumNodes = len(nodes.Items)
	}
	framework.Logf("Ready schedulable nodes: %d", framework.TestContext.CloudConfig.NumNodes)
	svc, err := c.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	framework.ExpectNoError(err, "the kubernetes Service")
	framework.TestContext.IPFamily = "ipv4"
	if utilnet.IsIPv6String(svc.Spec.ClusterIP) {
		framework.TestContext.IPFamily = "ipv6"
	}
	framework.Logf("Cluster IP family: %s", framework.TestContext.IPFamily)
})

// Run runs the specs the test binary holds as one ginkgo suite called name (its TestE2E).
func Run(t *testing.T, name string) {
	logs.InitLogs()
	defer logs.FlushLogs()
	klog.EnableContextualLogging(true)
	gomega.RegisterFailHandler(framework.Fail)
	suiteConfig, reporterConfig := framework.CreateGinkgoConfig()
	ginkgo.RunSpecs(t, name, suiteConfig, reporterConfig)
}
