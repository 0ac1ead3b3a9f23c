// All of Kubernetes' e2e specs (the packages test/e2e/e2e_test.go imports at the control
// plane's version, unmodified), for the certification run: every [Conformance] spec, the parallel
// ones on several ginkgo processes, then the [Serial] ones alone (e2e/lab/conformance suites
// `conformance` and `conformance-serial`). Not in ./dev setup: a large compile, built on demand by
// scripts/build-conformance-all.sh.
package all

import (
	"testing"

	"flock.local/e2e/conformance/suite"

	_ "k8s.io/kubernetes/test/e2e/apimachinery"
	_ "k8s.io/kubernetes/test/e2e/apps"
	_ "k8s.io/kubernetes/test/e2e/architecture"
	_ "k8s.io/kubernetes/test/e2e/auth"
	_ "k8s.io/kubernetes/test/e2e/autoscaling"
	_ "k8s.io/kubernetes/test/e2e/cloud"
	_ "k8s.io/kubernetes/test/e2e/common"
	_ "k8s.io/kubernetes/test/e2e/dra"
	_ "k8s.io/kubernetes/test/e2e/framework/metrics/init"
	_ "k8s.io/kubernetes/test/e2e/instrumentation"
	_ "k8s.io/kubernetes/test/e2e/kubectl"
	_ "k8s.io/kubernetes/test/e2e/lifecycle"
	_ "k8s.io/kubernetes/test/e2e/lifecycle/bootstrap"
	_ "k8s.io/kubernetes/test/e2e/network"
	_ "k8s.io/kubernetes/test/e2e/node"
	_ "k8s.io/kubernetes/test/e2e/scheduling"
	_ "k8s.io/kubernetes/test/e2e/storage"
	_ "k8s.io/kubernetes/test/e2e/storage/csimock"
	_ "k8s.io/kubernetes/test/e2e/storage/external"
	_ "k8s.io/kubernetes/test/e2e/windows"
)

func TestMain(m *testing.M) { suite.Main(m) }

func TestE2E(t *testing.T) { suite.Run(t, "flock conformance: Kubernetes e2e") }
