// A cached pod as one object. Every agent caches every pod of the cluster, and as plain JSON a
// trimmed pod is six objects (root, metadata, spec, status, the podIPs array and one object per
// address: ≈ 340 bytes of object headers and slots at 150,000 pods ≈ 50 MiB). Here it is one
// object of twelve slots; the nested shape the rest of the agent reads (pod.metadata.name,
// pod.spec.nodeName, pod.status.podIPs) is getters on the prototype: metadata, spec and status
// are the object itself, podIPs is made when read. toJSON gives the plain trimmed pod, so logs,
// Events and test comparisons see the usual shape.
import type { Pod } from '@flock/api';

type Metadata = Pod['metadata'];
type Spec = NonNullable<Pod['spec']>;
type Status = NonNullable<Pod['status']>;
export type Labels = Record<string, string>;
export type Container = NonNullable<Spec['containers']>[number];
export type Owner = NonNullable<Metadata['ownerReferences']>[number];
export type Conditions = NonNullable<Status['conditions']>;

/** The fields most pods do not have, in one object only the pods that do carry. */
export interface RareFields {
  annotations?: Record<string, string>;
  deletionTimestamp?: string;
  hostNetwork?: true;
  /** status.podIP, kept only when podIPs is absent (else it is podIPs[0]). */
  podIP?: string;
  /** podIPs past the second (the API server writes at most one a family). */
  moreIPs?: readonly string[];
}

export interface TrimmedFields {
  name: string;
  namespace: string;
  uid: string | undefined;
  labels: Labels | undefined;
  ownerReferences: Owner[] | undefined;
  nodeName: string | undefined;
  containers: Container[];
  phase: string | undefined;
  conditions: Conditions | undefined;
  /** status.podIPs[0] and [1]. */
  ips: readonly string[];
  rare: RareFields | undefined;
}

class TrimmedPod {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string | undefined;
  readonly labels: Labels | undefined;
  readonly ownerReferences: Owner[] | undefined;
  readonly nodeName: string | undefined;
  readonly containers: Container[];
  readonly phase: string | undefined;
  readonly conditions: Conditions | undefined;
  readonly ip0: string | undefined;
  readonly ip1: string | undefined;
  readonly rare: RareFields | undefined;

  constructor(f: TrimmedFields) {
    this.name = f.name;
    this.namespace = f.namespace;
    this.uid = f.uid;
    this.labels = f.labels;
    this.ownerReferences = f.ownerReferences;
    this.nodeName = f.nodeName;
    this.containers = f.containers;
    this.phase = f.phase;
    this.conditions = f.conditions;
    this.ip0 = f.ips[0];
    this.ip1 = f.ips[1];
    const more = f.ips.slice(2);
    this.rare = more.length ? { ...f.rare, moreIPs: more } : f.rare;
  }

  get apiVersion(): string {
    return 'v1';
  }
  get kind(): string {
    return 'Pod';
  }
  get metadata(): Metadata {
    return this as unknown as Metadata;
  }
  get spec(): Spec {
    return this as unknown as Spec;
  }
  get status(): Status {
    return this as unknown as Status;
  }
  get annotations(): Record<string, string> | undefined {
    return this.rare?.annotations;
  }
  get deletionTimestamp(): string | undefined {
    return this.rare?.deletionTimestamp;
  }
  get hostNetwork(): true | undefined {
    return this.rare?.hostNetwork;
  }
  get podIP(): string | undefined {
    return this.rare?.podIP;
  }
  get podIPs(): { ip: string }[] | undefined {
    return this.ip0 === undefined ? undefined : this.addresses().map((ip) => ({ ip }));
  }

  /** status.podIPs as strings. */
  addresses(): string[] {
    if (this.ip0 === undefined) return [];
    if (this.ip1 === undefined) return [this.ip0];
    return [this.ip0, this.ip1, ...(this.rare?.moreIPs ?? [])];
  }

  fields(): TrimmedFields {
    return {
      name: this.name,
      namespace: this.namespace,
      uid: this.uid,
      labels: this.labels,
      ownerReferences: this.ownerReferences,
      nodeName: this.nodeName,
      containers: this.containers,
      phase: this.phase,
      conditions: this.conditions,
      ips: this.addresses(),
      rare: this.rare,
    };
  }

  /** The plain trimmed pod (what JSON.stringify writes). */
  toJSON(): Pod {
    const rare = this.rare ?? {};
    const defined = <T extends object>(o: T) =>
      Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: defined({
        name: this.name,
        namespace: this.namespace,
        uid: this.uid,
        labels: this.labels,
        annotations: rare.annotations,
        deletionTimestamp: rare.deletionTimestamp,
        ownerReferences: this.ownerReferences,
      }),
      spec: defined({
        nodeName: this.nodeName,
        hostNetwork: rare.hostNetwork,
        containers: this.containers,
      }),
      status: defined({
        phase: this.phase,
        podIPs: this.podIPs,
        podIP: rare.podIP,
        conditions: this.conditions,
      }),
    };
  }
}

/** A cached pod made of its fields. */
export function trimmedPod(fields: TrimmedFields): Pod {
  return new TrimmedPod(fields) as unknown as Pod;
}

/** Has the pod an address in its status? Without building status.podIPs' array for it. */
export function hasPodAddress(pod: Pod): boolean {
  if (pod instanceof TrimmedPod) return pod.ip0 !== undefined || pod.podIP !== undefined;
  return Boolean(pod.status?.podIPs?.length || pod.status?.podIP);
}

/**
 * The same pod with other addresses (a peer with some left out). A pod not made here (a test's
 * plain object) is copied with its status changed.
 */
export function withPodIPs(pod: Pod, ips: readonly string[]): Pod {
  if (pod instanceof TrimmedPod) {
    const fields = pod.fields();
    const { moreIPs: _more, podIP: _ip, ...rest } = fields.rare ?? {};
    const rare = Object.keys(rest).length ? rest : undefined;
    return trimmedPod({ ...fields, ips, rare });
  }
  return { ...pod, status: { ...pod.status, podIP: ips[0], podIPs: ips.map((ip) => ({ ip })) } };
}
