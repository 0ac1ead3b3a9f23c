// Kubernetes' own networking e2e specs, unmodified, compiled into one test binary at the control
// plane's version: the NetworkPolicy suite (test/e2e/network/netpol), the rest of sig-network
// (test/e2e/network), the granular pod networking checks (test/e2e/common/network) and
// sig-api-machinery's (test/e2e/apimachinery: the API server calling webhooks served by pods).
// Only these packages are imported (what they import brings some other SIGs' specs along: focus
// picks). The whole suite is e2e/conformance/all. Build: scripts/build-conformance.sh; run:
// e2e/lab/conformance (npm run test:conformance).
package conformance

import (
	"testing"

	"flock.local/e2e/conformance/suite"

	// The specs: sig-network's (test/e2e/network, its netpol suite, and the [Conformance]
	// "Networking Granular Checks" that live in test/e2e/common/network).
	_ "k8s.io/kubernetes/test/e2e/common/network"
	_ "k8s.io/kubernetes/test/e2e/network"
	_ "k8s.io/kubernetes/test/e2e/network/netpol"
	// sig-api-machinery's: the admission webhooks (the API server, off the nodes, calling a
	// webhook Service's pods through flock's ClusterIP announcement) and the rest of it.
	_ "k8s.io/kubernetes/test/e2e/apimachinery"
)

func TestMain(m *testing.M) { suite.Main(m) }

func TestE2E(t *testing.T) { suite.Run(t, "flock conformance: Kubernetes sig-network e2e") }
