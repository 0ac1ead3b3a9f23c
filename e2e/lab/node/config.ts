// The configuration files of a lab node's containerd, kubelet and kube-proxy. Each setting that
// differs from upstream's default is there because these machines need it (docs/lab.md says
// why for each): cgroup v1 hybrid, no CAP_SYS_RESOURCE, several nodes on one kernel.
import { stringify } from 'yaml';
import type { PrimaryFamily } from '../core/plan.js';

/** containerd 2.x (config version 3): CRI with runc, CNI from the node's standard directories. */
export function containerdConfig(o: {
  pauseImage: string;
  runc: string;
  primary?: PrimaryFamily;
  /** Where registry hosts are configured (certs.d/HOST/hosts.toml): the conformance registry. */
  registryHosts: string;
}): string {
  return `version = 3
root = '/var/lib/containerd'
state = '/run/containerd'
# Nothing from the host's /etc/containerd.
imports = []

[grpc]
  address = '/run/containerd/containerd.sock'
[ttrpc]
  address = '/run/containerd/containerd.sock.ttrpc'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      # Imported from an archive; never pulled (no registry is reachable).
      sandbox = '${o.pauseImage}'
    [plugins.'io.containerd.cri.v1.images'.registry]
      # Empty unless a suite serves images (conformance/registry.ts): hosts.toml per registry.
      config_path = '${o.registryHosts}'
  [plugins.'io.containerd.cri.v1.runtime']
    # Root here lacks CAP_SYS_RESOURCE: lowering oom_score_adj fails and so would every
    # sandbox ("can't get final child's PID from pipe: EOF").
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = '${o.runc}'
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/opt/cni/bin']
      conf_dir = '/etc/cni/net.d'
      max_conf_num = 1
      # The sandbox's primary address is of the cluster's first family (flock is IPv6 first;
      # the kubelet then orders podIPs by the node's primary family, the same: --node-ip).
      ip_pref = '${(o.primary ?? 'IPv6').toLowerCase()}'
      # The pod's lo comes up inside containerd; no loopback plugin binary is needed.
      use_internal_loopback = true
  [plugins.'io.containerd.grpc.v1.cri']
    # exec, attach and port-forward streams: the kubelet proxies them from loopback.
    stream_server_address = '127.0.0.1'
`;
}

export interface KubeletOptions {
  cgroupRoot: string;
  clientCaFile: string;
  maxPods: number;
  clusterDomain: string;
  /** The cluster DNS Service's addresses (one per family), written into pods' resolv.conf. */
  clusterDns: readonly string[];
}

/** KubeletConfiguration (kubelet.config.k8s.io/v1beta1). */
export function kubeletConfig(o: KubeletOptions): string {
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // This kernel mounts cgroup v1 (hybrid); kubelet 1.36 refuses v1 unless told.
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    // One tree per node, under the lab's own cgroup (node/cgroup.ts).
    cgroupRoot: o.cgroupRoot,
    failSwapOn: false,
    containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
    // The API server reaches the kubelet here (exec, logs, port-forward) at the node's
    // InternalIP; it authenticates with its client certificate, authorized by webhook.
    address: '::',
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: o.clientCaFile },
    },
    authorization: { mode: 'Webhook' },
    // Pods (dnsPolicy ClusterFirst) get the cluster DNS, CoreDNS, with the search domains of
    // their namespace (NS.svc.DOMAIN svc.DOMAIN DOMAIN) and ndots 5, as on any cluster.
    clusterDomain: o.clusterDomain,
    clusterDNS: o.clusterDns,
    // Nothing from the host's resolv.conf: the lab is offline, no upstream resolver is reachable
    // from a node, so no nameserver or search domain of the machine goes into pods (nor into
    // pods with dnsPolicy Default, such as CoreDNS itself, whose Corefile forwards nowhere).
    resolvConf: '',
    podLogsDir: '/var/log/pods',
    maxPods: o.maxPods,
    // Several nodes share one disk and one memory: evict only when really short.
    evictionHard: {
      'memory.available': '100Mi',
      'nodefs.available': '1%',
      'imagefs.available': '1%',
      'nodefs.inodesFree': '1%',
    },
    // The images come from archives and cannot be pulled again: never collect them.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    // Quicker than upstream's defaults, so tests see changes within seconds.
    nodeStatusUpdateFrequency: '4s',
    nodeStatusReportFrequency: '10s',
    syncFrequency: '10s',
    fileCheckFrequency: '5s',
    shutdownGracePeriod: '0s',
  });
}

/** KubeProxyConfiguration (kubeproxy.config.k8s.io/v1alpha1) in nftables mode. */
export function kubeProxyConfig(o: {
  kubeconfig: string;
  hostname: string;
  clusterCidrs: string[];
}): string {
  return stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'nftables',
    clientConnection: { kubeconfig: o.kubeconfig },
    hostnameOverride: o.hostname,
    // Pod addresses: traffic from elsewhere to a Service is masqueraded, as on a real node.
    clusterCIDR: o.clusterCidrs.join(','),
    detectLocalMode: 'ClusterCIDR',
    metricsBindAddress: '127.0.0.1:10249',
    healthzBindAddress: '127.0.0.1:10256',
    // conntrack's table size and timeouts are one per kernel, not per network namespace:
    // leave them as the machine has them.
    conntrack: {
      maxPerCore: 0,
      min: 0,
      tcpEstablishedTimeout: '0s',
      tcpCloseWaitTimeout: '0s',
      udpTimeout: '0s',
      udpStreamTimeout: '0s',
    },
  });
}
