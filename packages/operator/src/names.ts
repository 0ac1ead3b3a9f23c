// Names the operator writes into the cluster. Existing clusters depend on them: never rename.
import { GROUP } from '@flock/api';

/**
 * On every NodeConfig the operator writes: holds its deletion (by the garbage collector, a
 * user, or the operator) until the operator has recorded the freed prefixes in the Pool's
 * quarantine — so a prefix is never handed out again early, even across restarts.
 */
export const QUARANTINE_FINALIZER = `${GROUP}/prefix-quarantine`;

/** `reportingController` of the operator's Events. */
export const EVENT_CONTROLLER = `${GROUP}/operator`;

/** Default Lease name and namespace of leader election. */
export const DEFAULT_LEASE_NAME = 'flock-operator';
export const DEFAULT_NAMESPACE = 'flock-system';
