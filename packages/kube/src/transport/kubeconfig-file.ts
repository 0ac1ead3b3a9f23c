// One kubeconfig file: YAML parsed and validated (errors name the file and the field), and what
// flock cannot honour refused by name instead of silently sending no credentials.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { z } from 'zod';
import { ExecConfigSchema } from './credentials.js';

const optString = z.string().nullish();

const Cluster = z.looseObject({
  server: z.string().min(1),
  'certificate-authority': optString,
  'certificate-authority-data': optString,
  'insecure-skip-tls-verify': z.boolean().nullish(),
  'tls-server-name': optString,
  'proxy-url': optString,
});

const User = z.looseObject({
  token: optString,
  tokenFile: optString,
  'client-certificate': optString,
  'client-certificate-data': optString,
  'client-key': optString,
  'client-key-data': optString,
  exec: ExecConfigSchema.nullish(),
  'auth-provider': z.unknown().optional(),
  username: optString,
  password: optString,
  as: optString,
  'as-uid': optString,
  'as-groups': z.unknown().optional(),
  'as-user-extra': z.unknown().optional(),
});

const Context = z.looseObject({
  cluster: z.string().min(1),
  user: optString,
  namespace: optString,
});

const KubeconfigFileSchema = z.looseObject({
  clusters: z.array(z.looseObject({ name: z.string().min(1), cluster: Cluster })).nullish(),
  users: z.array(z.looseObject({ name: z.string().min(1), user: User.nullish() })).nullish(),
  contexts: z.array(z.looseObject({ name: z.string().min(1), context: Context })).nullish(),
  'current-context': optString,
});

type KubeconfigCluster = z.infer<typeof Cluster>;
type KubeconfigUser = z.infer<typeof User>;
type KubeconfigContext = z.infer<typeof Context>;

/** An entry and the file that defined it (relative paths in it resolve against that file). */
interface Defined<T> {
  entry: T;
  file: string;
}

/** A parsed file: its entries by name and its current context. */
export interface KubeconfigFile {
  path: string;
  clusters: Map<string, Defined<KubeconfigCluster>>;
  users: Map<string, Defined<KubeconfigUser>>;
  contexts: Map<string, Defined<KubeconfigContext>>;
  currentContext?: string;
}

/** What loadKubeConfig cannot do, refused with the field that asks for it. */
export function refusal(user: KubeconfigUser): string | undefined {
  if (user['auth-provider'] != null) {
    return 'auth-provider is not supported (use an exec credential plugin)';
  }
  if (user.username != null || user.password != null) {
    return 'username/password (basic auth) is not supported';
  }
  if (user.as != null || user['as-uid'] != null || user['as-groups'] != null) {
    return 'impersonation (as, as-uid, as-groups) is not supported';
  }
  if (user['as-user-extra'] != null) return 'impersonation (as-user-extra) is not supported';
  return undefined;
}

/** Read and validate one kubeconfig file; throws naming the file and the offending field. */
export function readKubeconfigFile(path: string): KubeconfigFile {
  let doc: unknown;
  try {
    doc = parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`kubeconfig ${path}: ${(e as Error).message}`, { cause: e });
  }
  const parsed = KubeconfigFileSchema.safeParse(doc ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.length ? issue.path.join('.') : '(top level)';
    throw new Error(`kubeconfig ${path}: ${field}: ${issue?.message ?? 'invalid'}`);
  }
  const file = parsed.data;
  const defined = <T>(entry: T) => ({ entry, file: path });
  return {
    path,
    clusters: new Map(file.clusters?.map((c) => [c.name, defined(c.cluster)])),
    users: new Map(file.users?.map((u) => [u.name, defined(u.user ?? {})])),
    contexts: new Map(file.contexts?.map((c) => [c.name, defined(c.context)])),
    currentContext: file['current-context'] || undefined,
  };
}
