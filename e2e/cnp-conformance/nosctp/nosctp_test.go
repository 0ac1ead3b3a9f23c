// The ClusterNetworkPolicy conformance profile of sigs.k8s.io/network-policy-api, for a kernel
// without SCTP. On such a kernel the base workloads of the upstream suite cannot start: each
// StatefulSet pod has `agnhost porter` containers that serve SCTP (SERVE_SCTP_PORT_*), porter
// exits when it cannot listen, and the suite's setup waits for every pod to be Ready. This file
// runs the upstream tests (tests.ConformanceTests), the upstream suite and its report, unchanged,
// with two differences, both visible in the report:
//
//   - the base manifest is base/manifests-without-sctp.yaml: the upstream base/manifests.yaml with
//     the SCTP porter containers left out (scripts/build-cnp-conformance.sh writes it from the
//     module's own file; nothing else in it differs);
//   - the four SCTP-only tests are skipped (the report lists them as skipped, and the profile as
//     not passed). SCTP probes inside other tests still run, and fail.
//
// The flags are the upstream suite's (conformance/utils/flags). On a kernel with SCTP run the
// upstream binary instead (cnp-conformance.test: `go test -c` of the upstream package).
package nosctp_test

import (
	"embed"
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/yaml"

	api "sigs.k8s.io/network-policy-api/apis/v1beta1"
	"sigs.k8s.io/network-policy-api/conformance/tests"
	"sigs.k8s.io/network-policy-api/conformance/utils/flags"
	"sigs.k8s.io/network-policy-api/conformance/utils/suite"
)

// base/ is the upstream conformance/base directory plus manifests-without-sctp.yaml, copied in
// by the build script (it is not in the repository).
//
//go:embed base
var manifests embed.FS

const baseWithoutSCTP = "base/manifests-without-sctp.yaml"

// SCTPOnlyTests are the upstream tests that probe nothing but SCTP.
var SCTPOnlyTests = []string{
	"CNPAdminTierEgressSCTP",
	"CNPAdminTierIngressSCTP",
	"CNPBaselineTierEgressSCTP",
	"CNPBaselineTierIngressSCTP",
}

func TestConformanceProfiles(t *testing.T) {
	cfg, err := config.GetConfig()
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	clientSet, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	if err := api.Install(c.Scheme()); err != nil {
		t.Fatalf("scheme: %v", err)
	}
	if err := apiextensionsv1.AddToScheme(c.Scheme()); err != nil {
		t.Fatalf("scheme: %v", err)
	}
	if _, err := manifests.ReadFile(baseWithoutSCTP); err != nil {
		t.Fatalf("%s is not embedded (build with scripts/build-cnp-conformance.sh): %v", baseWithoutSCTP, err)
	}
	profiles := suite.ParseConformanceProfiles(*flags.ConformanceProfiles)
	if profiles.Len() == 0 {
		t.Fatalf("--conformance-profiles is required (ClusterNetworkPolicy)")
	}
	impl, err := suite.ParseImplementation(*flags.ImplementationOrganization, *flags.ImplementationProject,
		*flags.ImplementationURL, *flags.ImplementationVersion, *flags.ImplementationContact,
		*flags.ImplementationAdditionalInformation)
	if err != nil {
		t.Fatalf("implementation: %v", err)
	}
	fs := manifests
	s, err := suite.NewConformanceProfileTestSuite(suite.ConformanceProfileOptions{
		Options: suite.Options{
			Client:                     c,
			ClientSet:                  clientSet,
			KubeConfig:                 *cfg,
			Debug:                      *flags.ShowDebug,
			CleanupBaseResources:       *flags.CleanupBaseResources,
			SupportedFeatures:          suite.ParseSupportedFeatures(*flags.SupportedFeatures),
			ExemptFeatures:             suite.ParseSupportedFeatures(*flags.ExemptFeatures),
			EnableAllSupportedFeatures: *flags.EnableAllSupportedFeatures,
			BaseManifests:              baseWithoutSCTP,
			SkipTests:                  SCTPOnlyTests,
			FS:                         &fs,
		},
		Implementation:      *impl,
		ConformanceProfiles: profiles,
	})
	if err != nil {
		t.Fatalf("suite: %v", err)
	}
	t.Logf("base manifest %s; skipped (SCTP only): %v", baseWithoutSCTP, SCTPOnlyTests)
	s.Setup(t)
	if err := s.Run(t, tests.ConformanceTests); err != nil {
		t.Fatalf("run: %v", err)
	}
	report, err := s.Report()
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	raw, err := yaml.Marshal(report)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	if *flags.ReportOutput != "" {
		if err := os.WriteFile(*flags.ReportOutput, raw, 0o600); err != nil {
			t.Fatalf("report: %v", err)
		}
	}
	t.Logf("Conformance report:\n%s", raw)
}
