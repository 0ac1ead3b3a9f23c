// Test infrastructure: the settings of an agent that a test starts in its own
// process — every file under the test's directory, no health port.
import { join } from 'node:path';
import { AgentConfig } from '../src/core/config.js';

export function testAgentConfig(dir: string, over: Record<string, unknown> = {}): AgentConfig {
  return AgentConfig.parse({
    nodeName: 'node-a',
    socketPath: join(dir, 'run', 'cni.sock'),
    storePath: join(dir, 'lib', 'allocations.json'),
    birdConfigPath: join(dir, 'bird.conf'),
    healthPort: 0,
    ...over,
  });
}
