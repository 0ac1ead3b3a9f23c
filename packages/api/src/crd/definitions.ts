// The CustomResourceDefinitions of flock, built from the zod schemas.
import type { z } from 'zod';
import { AddressClaim, AddressClaimSpec, AddressClaimStatus } from '../address-claim.js';
import {
  ADDRESSCLAIM_KIND,
  ADDRESSCLAIM_PLURAL,
  GROUP,
  NODECONFIG_KIND,
  NODECONFIG_PLURAL,
  NODEPEER_KIND,
  NODEPEER_PLURAL,
  PEERSLICE_KIND,
  PEERSLICE_PLURAL,
  POOL_KIND,
  POOL_PLURAL,
  VERSION,
} from '../names.js';
import { NodeConfigSpec, NodeConfigStatus } from '../nodeconfig.js';
import { PeerSliceSpec, PeerSliceStatus } from '../peer-slice.js';
import { NodePeerSpec, NodePeerStatus } from '../node-peer.js';
import { PoolSpec, PoolStatus } from '../pool.js';
import { celValidations } from '../rules.js';
import { structuralSchema, type JsonSchema } from './structural.js';

interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'date' | 'boolean' | 'number';
  jsonPath: string;
  description: string;
  priority?: number;
}

interface CrdInput {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  description: string;
  spec: z.ZodType;
  status: z.ZodType;
  /**
   * The whole object's schema, for its rules on the root (CEL there sees metadata.name and
   * spec together, e.g. a claim's name against its address); absent: no root rules.
   */
  root?: z.ZodType;
  columns: PrinterColumn[];
}

const condition = (type: string) => `.status.conditions[?(@.type=="${type}")].status`;

/** Conditions merge by type under server-side apply; every other list is owned whole. */
function markListTypes(status: JsonSchema): JsonSchema {
  const props = status['properties'] as Record<string, JsonSchema> | undefined;
  const conditions = props?.['conditions'];
  if (conditions) {
    conditions['x-kubernetes-list-type'] = 'map';
    conditions['x-kubernetes-list-map-keys'] = ['type'];
  }
  return status;
}

function crd(input: CrdInput): JsonSchema {
  const spec = structuralSchema(input.spec);
  const status = markListTypes(structuralSchema(input.status));
  const rootRules = input.root ? celValidations(input.root) : [];
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${input.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Cluster',
      names: {
        kind: input.kind,
        listKind: `${input.kind}List`,
        plural: input.plural,
        singular: input.singular,
        shortNames: input.shortNames,
        categories: ['flock'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: input.columns,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: input.description,
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string', description: 'APIVersion of this object.' },
                kind: { type: 'string', description: 'Kind of this object.' },
                metadata: { type: 'object' },
                spec,
                status,
              },
              ...(rootRules.length ? { 'x-kubernetes-validations': rootRules } : {}),
            },
          },
        },
      ],
    },
  };
}

const poolCrd = (): JsonSchema =>
  crd({
    kind: POOL_KIND,
    plural: POOL_PLURAL,
    singular: 'pool',
    shortNames: ['fpool'],
    description:
      'A flock Pool: address ranges and BGP settings for the nodes its nodeSelector selects. The operator turns it into one NodeConfig per node.',
    spec: PoolSpec,
    status: PoolStatus,
    columns: [
      { name: 'IPv6', type: 'string', jsonPath: '.spec.ipv6.cidr', description: 'IPv6 range' },
      { name: 'IPv4', type: 'string', jsonPath: '.spec.ipv4.cidr', description: 'IPv4 range' },
      {
        name: 'ASN',
        type: 'integer',
        jsonPath: '.spec.bgp.asn',
        description: 'BGP ASN of the nodes',
      },
      { name: 'Nodes', type: 'integer', jsonPath: '.status.nodes', description: 'Nodes selected' },
      {
        name: 'Used',
        type: 'integer',
        jsonPath: '.status.ipv6.allocated',
        description: 'IPv6 node prefixes assigned',
      },
      {
        name: 'Free',
        type: 'integer',
        jsonPath: '.status.ipv6.free',
        description: 'IPv6 node prefixes free',
      },
      {
        name: 'Ready',
        type: 'string',
        jsonPath: condition('Ready'),
        description: 'Ready condition',
      },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Age' },
      {
        name: 'Reason',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
        description: 'Why not ready',
        priority: 1,
      },
    ],
  });

const nodeConfigCrd = (): JsonSchema =>
  crd({
    kind: NODECONFIG_KIND,
    plural: NODECONFIG_PLURAL,
    singular: 'nodeconfig',
    shortNames: ['fnc'],
    description:
      "One node's share of a flock Pool: its prefixes and BGP peers (spec, written by the operator) and the agent's view of the node (status).",
    spec: NodeConfigSpec,
    status: NodeConfigStatus,
    columns: [
      { name: 'Pool', type: 'string', jsonPath: '.spec.pool', description: 'Pool of this node' },
      {
        name: 'CIDR6',
        type: 'string',
        jsonPath: '.spec.cidr6',
        description: "The node's IPv6 prefix",
      },
      {
        name: 'CIDR4',
        type: 'string',
        jsonPath: '.spec.cidr4',
        description: "The node's IPv4 slice",
      },
      {
        name: 'Pods',
        type: 'integer',
        jsonPath: '.status.allocations.pods',
        description: 'Pods with addresses',
      },
      {
        name: 'Routes',
        type: 'integer',
        jsonPath: '.status.advertisedRoutes',
        description: 'Prefixes announced',
      },
      {
        name: 'BGP',
        type: 'string',
        jsonPath: condition('BGPEstablished'),
        description: 'All BGP sessions established',
      },
      {
        name: 'Policy',
        type: 'string',
        jsonPath: condition('PolicyApplied'),
        description: 'NetworkPolicy applied',
      },
      { name: 'Ready', type: 'string', jsonPath: condition('Ready'), description: 'Agent ready' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Age' },
      {
        name: 'ASN',
        type: 'integer',
        jsonPath: '.spec.bgp.asn',
        description: 'BGP ASN',
        priority: 1,
      },
      {
        name: 'Reason',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
        description: 'Why not ready',
        priority: 1,
      },
    ],
  });

const addressClaimCrd = (): JsonSchema =>
  crd({
    kind: ADDRESSCLAIM_KIND,
    plural: ADDRESSCLAIM_PLURAL,
    singular: 'addressclaim',
    shortNames: ['fclaim'],
    description:
      'The owner of one floating address (a pinned, anycast or LoadBalancer Service address), named after it: creating the claim is the lock, and it is released by deleting it. Written by the agents (pinned and anycast, at CNI ADD and DEL) and the operator (Service addresses; releasing claims whose pods, nodes or Services are gone).',
    spec: AddressClaimSpec,
    status: AddressClaimStatus,
    root: AddressClaim,
    columns: [
      { name: 'Address', type: 'string', jsonPath: '.spec.address', description: 'The address' },
      { name: 'Kind', type: 'string', jsonPath: '.spec.kind', description: 'Pinned or Anycast' },
      {
        name: 'Namespace',
        type: 'string',
        jsonPath: '.spec.namespace',
        description: 'The owning namespace',
      },
      { name: 'Key', type: 'string', jsonPath: '.spec.key', description: 'The owner key' },
      {
        name: 'Holder',
        type: 'string',
        jsonPath: '.spec.holders[0].pod',
        description: 'Pinned: the pod holding the address',
      },
      {
        name: 'Node',
        type: 'string',
        jsonPath: '.spec.holders[0].node',
        description: 'The (first) node announcing it',
      },
      {
        name: 'Service',
        type: 'string',
        jsonPath: '.spec.services[0]',
        description: 'Service: the (first) Service using it',
      },
      {
        name: 'Released',
        type: 'date',
        jsonPath: '.spec.releasedAt',
        description: 'Service: when its last Service let it go',
        priority: 1,
      },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Age' },
    ],
  });

const peerSliceCrd = (): JsonSchema =>
  crd({
    kind: PEERSLICE_KIND,
    plural: PEERSLICE_PLURAL,
    singular: 'peerslice',
    shortNames: ['fpeers'],
    description:
      'Pods of one namespace as NetworkPolicy peers need them (addresses, labels, named ports), published by the operator for every agent so no agent watches every Pod. Written only by the operator.',
    spec: PeerSliceSpec,
    status: PeerSliceStatus,
    columns: [
      {
        name: 'Namespace',
        type: 'string',
        jsonPath: '.spec.namespace',
        description: 'The namespace of its pods',
      },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Age' },
    ],
  });

const nodePeerCrd = (): JsonSchema =>
  crd({
    kind: NODEPEER_KIND,
    plural: NODEPEER_PLURAL,
    singular: 'nodepeer',
    shortNames: ['fnpeers'],
    description:
      "One Node as ClusterNetworkPolicy `nodes` peers need it (labels, IP addresses), published by the operator for every agent so no agent watches every Node's status. Named after its Node; written only by the operator.",
    spec: NodePeerSpec,
    status: NodePeerStatus,
    columns: [
      {
        name: 'Addresses',
        type: 'string',
        jsonPath: '.spec.addresses',
        description: "The Node's IP addresses",
      },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Age' },
    ],
  });

/** file name -> CRD object, in a stable order. */
export function allCrds(): [string, JsonSchema][] {
  return [
    [`${GROUP}_${ADDRESSCLAIM_PLURAL}.yaml`, addressClaimCrd()],
    [`${GROUP}_${NODECONFIG_PLURAL}.yaml`, nodeConfigCrd()],
    [`${GROUP}_${NODEPEER_PLURAL}.yaml`, nodePeerCrd()],
    [`${GROUP}_${PEERSLICE_PLURAL}.yaml`, peerSliceCrd()],
    [`${GROUP}_${POOL_PLURAL}.yaml`, poolCrd()],
  ];
}
