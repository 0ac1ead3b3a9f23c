// Shared by the allocator's test files: a predictable allocator and request builders.
import type { AllocationRequest, AllocationResult, AllocatorOptions } from '../src/allocation.js';
import { AddressAllocator } from '../src/allocator.js';

/** Random bytes that spell `value` (big-endian), for a predictable random start. */
export const bytesOf = (value: bigint) => (count: number) => {
  const out = new Uint8Array(count);
  for (let i = count - 1, v = value; i >= 0; i--, v >>= 8n) out[i] = Number(v & 0xffn);
  return out;
};

export function setup(options: Partial<AllocatorOptions> = {}) {
  const clock = { now: 1_800_000_000_000 };
  const created = AddressAllocator.create({
    cidr6: '2001:db8:0:1::/64',
    cidr4: '192.0.2.16/28',
    now: () => clock.now,
    randomBytes: bytesOf(0x1234n),
    ...options,
  });
  if (!created.ok) throw new Error(created.error);
  return { alloc: created.value, clock };
}

export const req = (owner: string, extra: Partial<AllocationRequest> = {}): AllocationRequest => ({
  owner,
  namespace: 'default',
  name: `pod-${owner}`,
  ...extra,
});

export function ok(result: AllocationResult) {
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
}
